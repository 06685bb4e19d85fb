// attach: a sluice loop run by a Boost.Asio io_context, so that a server that
// already runs one needs no second event loop for its streams.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <boost/asio/io_context.hpp>

#include "sluice/loop.h"

namespace sluice::asio {

namespace detail {
class engine;
}  // namespace detail

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

}  // namespace sluice::asio
