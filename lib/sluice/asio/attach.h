// attach: a sluice loop run by a Boost.Asio io_context, so that a server that
// already runs one needs no second event loop for its streams.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <system_error>
#include <vector>

#include "sluice/loop/loop.h"

// Header-only, as Asio is: only the programs that attach a loop compile
// (and load) Asio's code; the library and its tools stay without it.

namespace sluice::asio::detail {

// The loop_driver over an io_context. Its handlers can outlive the
// attachment (an aborted wait still completes, later), so each holds a ref;
// the engine frees itself when the attachment has gone and the last ref goes.
//
// The loop's fds wait in an epoll set of the engine's own, level-triggered
// as poll() is, and only that set's fd is in Asio's reactor (as libuv's
// uv_backend_fd() lets a host loop embed libuv's). Asio's reactor is
// edge-triggered and each async_wait on an fd is an epoll_ctl(MOD) there:
// one per watch, per round trip of a busy socket. Here a watch that the
// fd's callback renews costs no epoll_ctl at all, and one wait of Asio's
// serves every fd that became ready meanwhile.
//
// A callback that renews its fd's watch may have closed the fd and opened
// another file under its number (the loop's contract asks for forget_fd()
// first, which lets go of the registration, but a raw fd may skip it): the
// set holds the old file, not the new one. Checking with fstat() after each
// callback cost a syscall per wake-up of every busy fd (360 ns of CPU each
// on the VM of docs/benchmarks.md, 5% of an echo round trip). So a renewed
// fd is only marked: if epoll reports it again, the registration is alive
// (a closed file leaves the set), and that is the proof; one that stays
// quiet through a whole sweep period is checked with fstat() then. A file
// opened under the number of one closed without forget_fd() in its own
// callback is thus heard up to two periods late, never lost.
class engine final : public loop_driver {
 public:
  /// How often the renewed fds that epoll has not reported since are checked.
  static constexpr std::chrono::milliseconds sweep_period{10};

  engine(boost::asio::io_context& ctx, loop& l)
      : ctx_(ctx), loop_(&l), timer_(std::in_place, ctx), sweep_timer_(std::in_place, ctx) {
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) throw std::system_error(errno, std::system_category(), "sluice::asio::attach: epoll_create1");
    try {
      ready_.emplace(ctx_, ep);  // owns ep from here on: closes it when reset
    } catch (...) {
      ::close(ep);
      throw;
    }
    epfd_ = ep;
  }

  void schedule() override {
    boost::asio::post(ctx_, [r = ref(this)] {
      if (r.e->loop_) r.e->loop_->run_turn();
    });
  }

  void watch(int fd, short events) override {
    fd_state& s = slot(fd);
    // A watch renewed by the fd's own callback is checked after it returns
    // (on_epoll_ready()): the callback may have closed the fd meanwhile.
    if (fd == dispatching_) return;
    if (s.file) {
      post_ready(fd, s, static_cast<short>(events & (POLLIN | POLLOUT)));
      return;
    }
    update(fd, s, wanted(fd));
  }

  void unwatch(int fd) noexcept override {
    // The fd may be closed as soon as this returns, and its number reused.
    if (static_cast<std::size_t>(fd) < fds_.size()) leave(fd, fds_[static_cast<std::size_t>(fd)]);
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
    fds_.clear();
    registered_ = 0;
    ++ready_gen_;
    ready_.reset();  // closes the epoll set: every registration goes with it
    ++timer_gen_;
    if (timer_) timer_->cancel();
    unchecked_.clear();
    ++sweep_gen_;
    sweeping_ = false;
    if (sweep_timer_) sweep_timer_->cancel();
    guard_.reset();
  }

  boost::asio::io_context& context() const noexcept { return ctx_; }
  bool attached_to(const loop& l) const noexcept { return loop_ == &l; }

  // From the attachment: detaches, drops every Asio object now (the
  // io_context may go right after), and frees the engine when no handler
  // is left to run.
  void release() noexcept {
    if (loop_) loop_->attach(nullptr);  // calls detached()
    ready_.reset();
    timer_.reset();
    sweep_timer_.reset();
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
    std::uint32_t events = 0;  // in the epoll set for these (0: not in it)
    std::uint32_t gen = 0;     // bumped when it leaves: readiness read before is stale
    bool file = false;         // epoll refuses it (a regular file): always ready, as poll() says
    // Renewed by its callback, not reported by epoll since: the sweep
    // period it was marked in (0: proven, or never renewed so).
    std::uint32_t unchecked_since = 0;
    bool listed = false;  // in unchecked_
    // Which open file the registration is for (a socket's inode is its own).
    dev_t dev = 0;
    ino_t ino = 0;
  };

  fd_state& slot(int fd) {
    const auto i = static_cast<std::size_t>(fd);
    if (i >= fds_.size()) fds_.resize(i + 1);
    return fds_[i];
  }

  // POLLIN and POLLOUT are EPOLLIN and EPOLLOUT; the set always reports
  // EPOLLERR and EPOLLHUP, which are POLLERR and POLLHUP.
  std::uint32_t wanted(int fd) const noexcept {
    return static_cast<std::uint32_t>(loop_->watched_events(fd)) & (EPOLLIN | EPOLLOUT);
  }

  // Brings the fd's registration to `want`: added at its first watch,
  // changed when the watches ask for another direction, removed when none
  // is left (so that a level-triggered set never reports an unwatched fd).
  void update(int fd, fd_state& s, std::uint32_t want) {
    if (want == s.events) return;
    if (want == 0) return leave(fd, s);
    epoll_event ev{};
    ev.events = want;
    ev.data.fd = fd;
    if (s.events != 0) {
      if (::epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0) {
        s.events = want;
        return;
      }
      forget(s);  // ENOENT: its file left the set when it was closed; the number is another's
    }
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0) {
      s.events = want;
      remember_file(fd, s);
      registered(+1);
      return;
    }
    // Not an fd epoll takes: a regular file is always ready (poll() says
    // so); a closed one gets POLLNVAL and anything else POLLERR, once.
    const int err = errno;
    if (err == EPERM) {
      s.file = true;
      post_ready(fd, s, static_cast<short>(want));
    } else {
      post_ready(fd, s, err == EBADF ? POLLNVAL : POLLERR);
    }
  }

  // Takes the fd out of the set (an error means it is gone already: closed).
  void leave(int fd, fd_state& s) noexcept {
    if (s.events) {
      epoll_event ev{};
      ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, &ev);
    }
    forget(s);
  }

  // The fd is no longer in the set: readiness read before is stale.
  void forget(fd_state& s) noexcept {
    if (s.events) registered(-1);
    s = fd_state{.gen = s.gen + 1};
  }

  static void remember_file(int fd, fd_state& s) noexcept {
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      s.dev = st.st_dev;
      s.ino = st.st_ino;
    }
  }
  static bool same_file(int fd, const fd_state& s) noexcept {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino;
  }

  void post_ready(int fd, const fd_state& s, short revents) {
    boost::asio::post(ctx_, [r = ref(this), fd, gen = s.gen, revents] {
      engine* e = r.e;
      if (!e->loop_ || static_cast<std::size_t>(fd) >= e->fds_.size() || e->fds_[static_cast<std::size_t>(fd)].gen != gen)
        return;
      e->loop_->on_ready(fd, revents);
    });
  }

  // Asio waits on the set while anything is in it, and not otherwise, so
  // that io_context::run() returns once the loop watches nothing. Only an
  // fd added arms the wait (which allocates): one that leaves, from
  // unwatch() among others, only cancels it when it was the last.
  void registered(int delta) {
    registered_ += delta;
    if (delta > 0) {
      arm();
    } else if (registered_ == 0 && waiting_) {
      waiting_ = false;
      ++ready_gen_;  // the aborted wait's handler finds its gen gone
      boost::system::error_code ignored;
      ready_->cancel(ignored);
    }
  }

  void arm() {
    if (waiting_) return;
    waiting_ = true;
    ready_->async_wait(boost::asio::posix::descriptor_base::wait_read,
                       [r = ref(this), gen = ready_gen_](boost::system::error_code ec) {
                         if (gen == r.e->ready_gen_) r.e->on_epoll_ready(ec);
                       });
  }

  // The set is ready: runs the callbacks of up to 64 ready fds, each fd's
  // once, then waits again (Asio's next report comes at once if more are
  // ready, after its other handlers had their turn).
  void on_epoll_ready(boost::system::error_code ec) {
    waiting_ = false;
    if (!loop_ || ec) return;
    epoll_event evs[64];
    int n;
    do {
      n = ::epoll_wait(epfd_, evs, 64, 0);
    } while (n < 0 && errno == EINTR);
    struct ready_fd {
      int fd;
      std::uint32_t gen;
      short revents;
    } ready[64];
    // The callbacks may close fds and reuse their numbers: an fd that left
    // the set after epoll_wait() (its gen moved on) is not run.
    for (int i = 0; i < n; ++i) {
      const int fd = evs[i].data.fd;
      fd_state& s = fds_[static_cast<std::size_t>(fd)];
      s.unchecked_since = 0;  // reported: still in the set, so not closed since
      ready[i] = {fd, s.gen, static_cast<short>(evs[i].events)};
    }
    loop* l = loop_;
    for (int i = 0; i < n; ++i) {
      const int fd = ready[i].fd;
      if (fds_[static_cast<std::size_t>(fd)].gen != ready[i].gen) continue;
      dispatching_ = fd;
      l->on_ready(fd, ready[i].revents);
      dispatching_ = -1;
      if (loop_ != l) return;
      fd_state& s = fds_[static_cast<std::size_t>(fd)];
      if (s.gen != ready[i].gen) continue;  // let go of by a callback (loop::forget_fd())
      const std::uint32_t want = wanted(fd);
      if (want != 0 && want == s.events) {
        // Watched again as it is registered: the callback may have closed
        // the fd and opened another file under its number, which the set
        // does not hold. Proven by epoll's next report, or swept.
        unchecked(fd, s);
        continue;
      }
      // Another direction: the registration changes, on this file.
      if (want != 0 && s.events != 0 && !same_file(fd, s)) forget(s);
      update(fd, s, want);
    }
    if (registered_ > 0) arm();
  }

  void unchecked(int fd, fd_state& s) {
    if (s.unchecked_since == 0) s.unchecked_since = sweep_round_;
    if (!s.listed) {
      s.listed = true;
      unchecked_.push_back({fd, s.gen});
    }
    if (!sweeping_) {
      sweeping_ = true;
      sweep_timer_->expires_after(sweep_period);
      sweep_timer_->async_wait([r = ref(this), gen = sweep_gen_](boost::system::error_code ec) {
        engine* e = r.e;
        if (!ec && e->loop_ && gen == e->sweep_gen_) e->sweep();
      });
    }
  }

  // Every sweep_period while fds wait for proof: an fd marked in an earlier
  // round and not reported since is checked with fstat(); if its number is
  // another file's now, that file is registered in its place (and reported
  // at once if ready: the set is level-triggered).
  void sweep() {
    sweeping_ = false;
    ++sweep_round_;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < unchecked_.size(); ++i) {
      const auto [fd, gen] = unchecked_[i];
      fd_state& s = fds_[static_cast<std::size_t>(fd)];
      if (s.gen != gen) continue;  // left the set since: its entry went with it
      if (s.unchecked_since != 0 && s.unchecked_since + 1 < sweep_round_) {
        s.unchecked_since = 0;
        if (!same_file(fd, s)) {
          forget(s);
          update(fd, s, wanted(fd));
          continue;
        }
      }
      if (s.unchecked_since == 0) {
        s.listed = false;
        continue;
      }
      unchecked_[kept++] = unchecked_[i];
    }
    unchecked_.resize(kept);
    if (!unchecked_.empty() && loop_) {
      sweeping_ = true;
      sweep_timer_->expires_after(sweep_period);
      sweep_timer_->async_wait([r = ref(this), gen = sweep_gen_](boost::system::error_code ec) {
        engine* e = r.e;
        if (!ec && e->loop_ && gen == e->sweep_gen_) e->sweep();
      });
    }
  }

  boost::asio::io_context& ctx_;
  loop* loop_;
  int epfd_ = -1;
  std::optional<boost::asio::posix::stream_descriptor> ready_;  // epfd_ in Asio's reactor
  bool waiting_ = false;       // an async_wait on ready_ is pending
  std::uint64_t ready_gen_ = 0;  // bumped when that wait is cancelled
  int registered_ = 0;         // fds in the epoll set
  int dispatching_ = -1;       // the fd whose callbacks run now
  std::optional<boost::asio::steady_timer> timer_;
  std::uint64_t timer_gen_ = 0;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::vector<fd_state> fds_;  // by fd number
  struct unchecked_fd {
    int fd;
    std::uint32_t gen;  // fds_[fd].gen when listed: a later one is another registration
  };
  std::vector<unchecked_fd> unchecked_;  // renewed fds waiting for epoll's report or the sweep
  std::optional<boost::asio::steady_timer> sweep_timer_;
  std::uint32_t sweep_round_ = 1;
  std::uint64_t sweep_gen_ = 0;  // bumped when detached: a sweep on its way does nothing
  bool sweeping_ = false;        // the sweep timer waits
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
/// order; fd readiness (an epoll set of the attachment's own, level-triggered,
/// whose fd is the one `ctx` waits on: the loop's fds are never in Asio's
/// reactor, and never owned or closed by it), timers (one steady_timer, for
/// the earliest), post() from other threads (asio::post) and hold() (a work
/// guard) go to `ctx`. Each turn of immediates is one handler posted to `ctx`, so a
/// stream that always has more to do (a flowing readable over /dev/zero)
/// takes turns with ctx's other handlers instead of starving them.
///
/// Close a watched fd as the loop asks (cancel(owner), then
/// loop::forget_fd(), as every sluice stream does): an fd closed without it
/// inside its own watch's callback, with another file opened and watched
/// under its number there, is heard only at the attachment's next check of
/// quiet fds (within 20 ms), not at once.
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
