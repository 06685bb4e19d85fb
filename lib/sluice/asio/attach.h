// attach: a sluice loop run by a Boost.Asio io_context, so that a server that
// already runs one needs no second event loop for its streams.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <poll.h>
#include <sys/stat.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "sluice/loop.h"

// Header-only, as Asio is: only the programs that attach a loop compile
// (and load) Asio's code; the library and its tools stay without it.

namespace sluice::asio::detail {

// The loop_driver over an io_context. Its handlers can outlive the
// attachment (an aborted wait still completes, later), so each holds a ref;
// the engine frees itself when the attachment has gone and the last ref goes.
class engine final : public loop_driver {
 public:
  engine(boost::asio::io_context& ctx, loop& l) : ctx_(ctx), loop_(&l), timer_(std::in_place, ctx) {}

  void schedule() override {
    boost::asio::post(ctx_, [r = ref(this)] {
      if (r.e->loop_) r.e->loop_->run_turn();
    });
  }

  void watch(int fd, short events) override {
    fd_state& s = slot(fd);
    // A registration kept from an earlier watch serves this one only if the
    // fd is still the same open file: between watches its owner may have
    // closed it (nothing tells the driver of that, as no watch was left to
    // cancel) and the number may now be another file's.
    if (s.desc && !s.confirmed && !s.same_file(fd)) let_go(s);
    if (!s.desc) {
      // The fd stays the caller's: let_go() releases it, never closes it.
      boost::system::error_code ec;
      s.desc.emplace(ctx_);
      s.desc->assign(fd, ec);
      ++s.gen;
      if (ec) {
        // Not an fd epoll takes (closed: EBADF): poll() would say POLLNVAL.
        s.desc.reset();
        boost::asio::post(ctx_, [r = ref(this), fd] {
          if (r.e->loop_) r.e->loop_->on_ready(fd, POLLNVAL);
        });
        return;
      }
      s.remember_file(fd);
    }
    s.confirmed = true;
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

  boost::asio::io_context& context() const noexcept { return ctx_; }
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
    std::optional<boost::asio::posix::stream_descriptor> desc;
    std::uint32_t gen = 0;  // bumped per registration: stale completions are ignored
    bool waiting[2] = {false, false};  // POLLIN, POLLOUT
    // False once a watch has fired and until the next: the fd may have
    // been closed in between, and its number given to another file.
    bool confirmed = false;
    // Which open file the registration is for (a socket's inode is its own).
    dev_t dev = 0;
    ino_t ino = 0;

    void remember_file(int fd) noexcept {
      struct stat st {};
      if (::fstat(fd, &st) == 0) {
        dev = st.st_dev;
        ino = st.st_ino;
      }
    }
    bool same_file(int fd) const noexcept {
      struct stat st {};
      return ::fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
    }
  };

  fd_state& slot(int fd) {
    const auto i = static_cast<std::size_t>(fd);
    if (i >= fds_.size()) fds_.resize(i + 1);
    return fds_[i];
  }

  void start_wait(int fd, fd_state& s, int dir) {
    if (s.waiting[dir]) return;
    s.waiting[dir] = true;
    s.desc->async_wait(dir ? boost::asio::posix::descriptor_base::wait_write : boost::asio::posix::descriptor_base::wait_read,
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
    s.confirmed = false;
    ++s.gen;
  }

  void on_wait(int fd, std::uint32_t gen, int dir, boost::system::error_code ec) {
    if (!loop_) return;
    const auto i = static_cast<std::size_t>(fd);
    if (i >= fds_.size() || fds_[i].gen != gen || !fds_[i].desc) return;
    short revents = dir ? POLLOUT : POLLIN;
    // A regular file cannot be waited on (epoll refuses it): it is always ready.
    if (ec && ec != boost::asio::error::operation_not_supported) revents |= POLLERR;
    // The registration stays for the next watch: the reactor's epoll is
    // edge-triggered and a watch level-triggered (as poll(): the callbacks
    // may leave data unread and watch again), but each async_wait on a
    // registered fd is an epoll_ctl MOD, which makes the kernel report the
    // fd at once if it is still ready. One MOD per wait, where ending the
    // registration at each readiness cost a DEL and an ADD.
    fd_state& s = fds_[i];
    s.waiting[dir] = false;
    s.confirmed = false;
    loop* l = loop_;
    l->on_ready(fd, revents);
    if (loop_ != l) return;
    // Watches the callbacks left in place (another direction's) wait on.
    if (const short left = l->watched_events(fd)) watch(fd, left);
  }

  boost::asio::io_context& ctx_;
  loop* loop_;
  std::optional<boost::asio::steady_timer> timer_;
  std::uint64_t timer_gen_ = 0;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::vector<fd_state> fds_;  // by fd number
  std::atomic<int> outstanding_{0};  // handlers in the io_context (post() may add from any thread)
  bool released_ = false;
};

}  // namespace sluice::asio::detail

namespace sluice::asio {

/// A loop attached to an io_context; detaches when destroyed. Destroy it
/// before the io_context (declare it after), and detach before destroying the
/// loop or let the loop go first: either order is safe.
class [[nodiscard]] attachment {
 public:
  attachment() noexcept = default;
  attachment(attachment&& o) noexcept : engine_(std::exchange(o.engine_, nullptr)) {}
  attachment& operator=(attachment&& o) noexcept;
  attachment(const attachment&) = delete;
  attachment& operator=(const attachment&) = delete;
  ~attachment() { detach(); }

  /// Hands the loop back to its own poll() (loop::run()); work queued stays
  /// queued. A no-op if already detached.
  void detach() noexcept;
  explicit operator bool() const noexcept { return engine_ != nullptr; }

 private:
  friend attachment attach(boost::asio::io_context& ctx, loop& l);
  explicit attachment(detail::engine* e) noexcept : engine_(e) {}
  detail::engine* engine_ = nullptr;
};

/// Runs `l` (by default this thread's loop) on `ctx`: from now on
/// `ctx.run()` runs the streams, and loop::run() is not needed (called, it
/// runs `ctx` until the loop has nothing left).
///
///     boost::asio::io_context ctx;
///     auto on_asio = sluice::asio::attach(ctx);   // this thread's loop
///     auto out = sluice::make_fd_writable(1);
///     out->write("hello\n");
///     out->end();
///     ctx.run();  // returns when the streams (and ctx's other work) are done
///
/// The sluice loop keeps Node's nextTick and setImmediate queues and their
/// order; fd readiness (a posix::stream_descriptor's async_wait on the fd,
/// which it does not own or close), timers (one steady_timer, for the
/// earliest), post() from other threads (asio::post) and hold() (a work guard)
/// go to `ctx`. Each turn of immediates is one handler posted to `ctx`, so a
/// stream that always has more to do (a flowing readable over /dev/zero)
/// takes turns with ctx's other handlers instead of starving them.
///
/// One loop belongs to one thread: run `ctx` on the loop's thread only (a
/// multi-core server runs one io_context and one loop per thread). Attaching
/// a loop already attached replaces the old attachment, which then detaches
/// nothing.
attachment attach(boost::asio::io_context& ctx, loop& l = loop::current());

/// The io_context `l` is attached to, or null.
boost::asio::io_context* context_of(const loop& l) noexcept;


inline attachment& attachment::operator=(attachment&& o) noexcept {
  if (this != &o) {
    detach();
    engine_ = std::exchange(o.engine_, nullptr);
  }
  return *this;
}

inline void attachment::detach() noexcept {
  if (engine_) std::exchange(engine_, nullptr)->release();
}

inline attachment attach(boost::asio::io_context& ctx, loop& l) {
  auto* e = new detail::engine(ctx, l);
  l.attach(e);
  return attachment(e);
}

inline boost::asio::io_context* context_of(const loop& l) noexcept {
  auto* e = dynamic_cast<detail::engine*>(l.driver());
  return e && e->attached_to(l) ? &e->context() : nullptr;
}

}  // namespace sluice::asio
