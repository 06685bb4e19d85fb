#include "sluice/asio/attach.h"

#include <poll.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <optional>
#include <vector>

namespace sluice::asio::detail {

namespace net = boost::asio;

// The loop_driver over an io_context. Its handlers can outlive the
// attachment (an aborted wait still completes, later), so each holds a ref;
// the engine frees itself when the attachment has gone and the last ref goes.
class engine final : public loop_driver {
 public:
  engine(net::io_context& ctx, loop& l) : ctx_(ctx), loop_(&l), timer_(std::in_place, ctx) {}

  void schedule() override {
    net::post(ctx_, [r = ref(this)] {
      if (r.e->loop_) r.e->loop_->run_turn();
    });
  }

  void watch(int fd, short events) override {
    fd_state& s = slot(fd);
    if (!s.desc) {
      // The fd stays the caller's: let_go() releases it, never closes it.
      s.desc.emplace(ctx_, fd);
      ++s.gen;
    }
    if (events & POLLIN) start_wait(fd, s, 0);
    if (events & POLLOUT) start_wait(fd, s, 1);
  }

  void unwatch(int fd) noexcept override {
    if (static_cast<std::size_t>(fd) < fds_.size()) let_go(fds_[static_cast<std::size_t>(fd)]);
  }

  void arm_timer(std::chrono::steady_clock::time_point due) override {
    timer_->expires_at(due);  // aborts the wait for a later time, if any
    timer_->async_wait([r = ref(this), gen = ++timer_gen_](boost::system::error_code ec) {
      engine* e = r.e;
      if (!ec && e->loop_ && gen == e->timer_gen_) e->loop_->on_timer();
    });
  }

  void hold(bool held) override {
    if (held)
      guard_.emplace(ctx_.get_executor());
    else
      guard_.reset();
  }

  void run(loop& l) override {
    if (ctx_.stopped()) ctx_.restart();
    while (l.alive() && ctx_.run_one() > 0) {
    }
  }

  void detached() noexcept override {
    loop_ = nullptr;
    for (auto& s : fds_) let_go(s);
    ++timer_gen_;
    if (timer_) timer_->cancel();
    guard_.reset();
  }

  net::io_context& context() const noexcept { return ctx_; }
  bool attached_to(const loop& l) const noexcept { return loop_ == &l; }

  // From the attachment: detaches, drops every Asio object now (the
  // io_context may go right after), and frees the engine when no handler
  // is left to run.
  void release() noexcept {
    if (loop_) loop_->attach(nullptr);  // calls detached()
    fds_.clear();
    timer_.reset();
    released_ = true;
    if (outstanding_.load(std::memory_order_acquire) == 0) delete this;
  }

 private:
  ~engine() = default;

  struct ref {
    engine* e;
    explicit ref(engine* en) noexcept : e(en) { e->outstanding_.fetch_add(1, std::memory_order_relaxed); }
    ref(ref&& o) noexcept : e(std::exchange(o.e, nullptr)) {}
    ref(const ref&) = delete;
    ref& operator=(const ref&) = delete;
    ~ref() {
      if (e && e->outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1 && e->released_) delete e;
    }
  };

  struct fd_state {
    std::optional<net::posix::stream_descriptor> desc;
    std::uint32_t gen = 0;  // bumped per registration: stale completions are ignored
    bool waiting[2] = {false, false};  // POLLIN, POLLOUT
  };

  fd_state& slot(int fd) {
    const auto i = static_cast<std::size_t>(fd);
    if (i >= fds_.size()) fds_.resize(i + 1);
    return fds_[i];
  }

  void start_wait(int fd, fd_state& s, int dir) {
    if (s.waiting[dir]) return;
    s.waiting[dir] = true;
    s.desc->async_wait(dir ? net::posix::descriptor_base::wait_write : net::posix::descriptor_base::wait_read,
                       [r = ref(this), fd, gen = s.gen, dir](boost::system::error_code ec) {
                         r.e->on_wait(fd, gen, dir, ec);
                       });
  }

  // Releases the fd from the reactor (epoll_ctl DEL); pending waits end as
  // aborted, and find their generation gone.
  static void let_go(fd_state& s) noexcept {
    if (!s.desc) return;
    s.desc->release();
    s.desc.reset();
    s.waiting[0] = s.waiting[1] = false;
    ++s.gen;
  }

  void on_wait(int fd, std::uint32_t gen, int dir, boost::system::error_code ec) {
    if (!loop_) return;
    const auto i = static_cast<std::size_t>(fd);
    if (i >= fds_.size() || fds_[i].gen != gen || !fds_[i].desc) return;
    short revents = dir ? POLLOUT : POLLIN;
    // A regular file cannot be waited on (epoll refuses it): it is always ready.
    if (ec && ec != net::error::operation_not_supported) revents |= POLLERR;
    // The reactor's epoll is edge-triggered, and a watch is level-triggered
    // (as poll()): the callbacks may leave data unread and watch again. So
    // each readiness ends the registration, and a new watch registers anew,
    // which makes the kernel report the fd at once if it is still ready.
    let_go(fds_[i]);
    loop* l = loop_;
    l->on_ready(fd, revents);
    if (loop_ != l) return;
    // Watches the callbacks left in place (another direction's) wait again.
    if (const short left = l->watched_events(fd)) watch(fd, left);
  }

  net::io_context& ctx_;
  loop* loop_;
  std::optional<net::steady_timer> timer_;
  std::uint64_t timer_gen_ = 0;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard_;
  std::vector<fd_state> fds_;  // by fd number
  std::atomic<int> outstanding_{0};  // handlers in the io_context (post() may add from any thread)
  bool released_ = false;
};

}  // namespace sluice::asio::detail

namespace sluice::asio {

attachment& attachment::operator=(attachment&& o) noexcept {
  if (this != &o) {
    detach();
    engine_ = std::exchange(o.engine_, nullptr);
  }
  return *this;
}

void attachment::detach() noexcept {
  if (engine_) std::exchange(engine_, nullptr)->release();
}

attachment attach(boost::asio::io_context& ctx, loop& l) {
  auto* e = new detail::engine(ctx, l);
  l.attach(e);
  return attachment(e);
}

boost::asio::io_context* context_of(const loop& l) noexcept {
  auto* e = dynamic_cast<detail::engine*>(l.driver());
  return e && e->attached_to(l) ? &e->context() : nullptr;
}

}  // namespace sluice::asio
