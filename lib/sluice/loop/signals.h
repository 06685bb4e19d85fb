// on_signal: a POSIX signal, handled on a loop's thread.
#pragma once

#include <memory>
#include <system_error>

#include "sluice/loop/loop.h"

namespace sluice {

namespace detail {
struct signal_state;
}  // namespace detail

/// Keeps a signal handler installed by on_signal(); destroying it (or
/// reset()) restores the disposition the signal had before. Move-only.
class signal_watch {
 public:
  signal_watch() noexcept;
  signal_watch(signal_watch&& o) noexcept;
  signal_watch& operator=(signal_watch&& o) noexcept;
  ~signal_watch();

  /// Uninstalls the handler now. May be called from the watch's own task.
  void reset() noexcept;
  explicit operator bool() const noexcept { return state_ != nullptr; }

 private:
  friend signal_watch on_signal(loop& l, int signo, task t, std::error_code& ec) noexcept;
  explicit signal_watch(detail::signal_state* s) noexcept : state_(s) {}
  detail::signal_state* state_ = nullptr;
};

/// Runs `t` on `l`'s thread, from the loop, after `signo` arrives: the
/// handler itself only writes to an eventfd (async-signal-safe), and a loop
/// watch on it calls `t`. Signals that arrive before the loop gets to them
/// are coalesced into one call. For reopening log files on SIGHUP:
///
///     auto log = sluice::make_log_writable("app.log");  // a log_writable
///     auto hup = sluice::on_signal(sluice::loop::current(), SIGHUP, [&log] { log->reopen(); });
///
/// - One handler per signal per process: a second on_signal() for a signal
///   that is already watched fails with EBUSY, until the first watch is reset.
/// - The previous handler is not chained; it is restored by reset().
/// - While the watch lives, it keeps loop::run() from returning, so reset it
///   at shutdown. Differs from Node: Node unrefs its signal handles, and this
///   loop has no unref yet. The watch must not outlive its loop.
/// - Installed with SA_RESTART. The signal is not blocked in any thread.
///
/// Throws std::system_error (EINVAL for a signal that cannot be caught,
/// EBUSY, or the errno of eventfd/sigaction).
signal_watch on_signal(loop& l, int signo, task t);
/// The non-throwing twin: an empty watch and `ec` set on failure.
signal_watch on_signal(loop& l, int signo, task t, std::error_code& ec) noexcept;

}  // namespace sluice
