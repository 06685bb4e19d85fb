// close_stdout: the tools' last check of what they printed, the one
// coreutils make at exit (gnulib's close_stdout): a full disk or a closed
// standard output must not pass for success.
#pragma once

#include <fcntl.h>
#include <stdio_ext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sluice_tools {

/// Opens /dev/null on each of fds 0, 1 and 2 that is closed, in the mode
/// that makes using it fail with EBADF (as gnulib's stdopen() does). Without
/// it the first file a tool opens would become its standard output: a
/// summary printed there would land in that file (or vanish into /dev/null)
/// instead of failing. Call it first in main().
inline void reserve_std_fds() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // The lowest free fd is `fd` itself: 0 to fd - 1 are open by now.
    const int got = ::open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_NOCTTY);
    if (got >= 0 && got != fd) ::close(got);
  }
}

/// Flushes and closes standard output. Returns false, after printing
/// "TOOL: write error: REASON" on standard error, when something printed to
/// it did not land. A closed standard output that nothing was printed to is
/// no error, as in coreutils. `known_errno` is the reason to print when the
/// failure is already in the past (a tool that stopped at a failed write
/// saw its errno; fclose() may no longer). Only the first call checks; later
/// ones return its answer.
inline bool close_stdout(const char* tool, int known_errno = 0) noexcept {
  static int answer = -1;
  if (answer >= 0) return answer != 0;
  const bool pending = ::__fpending(stdout) != 0;
  const bool failed_before = std::ferror(stdout) != 0;
  errno = 0;
  const bool close_failed = std::fclose(stdout) != 0;
  const int err = close_failed && errno ? errno : known_errno;
  const bool ok = !failed_before && !(close_failed && (pending || err != EBADF));
  if (!ok) {
    if (err)
      std::fprintf(stderr, "%s: write error: %s\n", tool, std::strerror(err));
    else
      std::fprintf(stderr, "%s: write error\n", tool);
  }
  answer = ok ? 1 : 0;
  return ok;
}

namespace detail {
inline const char* close_stdout_tool = "";
}  // namespace detail

/// Runs close_stdout(tool) at exit() (and so after main() returns): when it
/// fails, the exit status becomes 1.
inline void close_stdout_at_exit(const char* tool) {
  detail::close_stdout_tool = tool;
  std::atexit([] {
    if (!close_stdout(detail::close_stdout_tool)) std::_Exit(1);
  });
}

}  // namespace sluice_tools
