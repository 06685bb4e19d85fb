// The signal set-up sluice-log and sluice-logd share: SIGTERM, SIGINT and
// SIGHUP come to the loop's watches, and stay caught after them.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace sluice_tools {

// Until the loop's watches are in place the signals are held back (blocked,
// never lost), and a worker thread started meanwhile keeps them blocked for
// good, so that they all come to the loop's thread. Under the watches lies a
// handler that does nothing: once the watches are reset (to let the loop
// end), the signals stay caught through the last sync and close, instead of
// falling back to SIG_DFL, which kills. Returns the mask to restore once the
// worker has started.
inline sigset_t hold_shutdown_signals() noexcept {
  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  ::pthread_sigmask(SIG_BLOCK, &handled, &old_mask);
  struct sigaction ignore_quietly {};
  ignore_quietly.sa_handler = [](int) {};
  ignore_quietly.sa_flags = SA_RESTART;
  sigemptyset(&ignore_quietly.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &ignore_quietly, nullptr);
  return old_mask;
}

}  // namespace sluice_tools
