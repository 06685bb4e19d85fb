// nonblocking_stdin: the tools' standard input made non-blocking while they
// read it through the loop, and put back as it was at the end.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice_tools {

/// A pipe or socket is read without blocking, so that a quiet writer does
/// not keep the loop (and its signals) waiting in read(). A terminal or file
/// is left alone: a terminal's flags are shared with the shell, and the
/// loop's fd source waits for POLLIN before reading it anyway.
class nonblocking_stdin {
 public:
  void set() noexcept {
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return;
    const int flags = ::fcntl(STDIN_FILENO, F_GETFL);
    if (flags < 0 || (flags & O_NONBLOCK)) return;
    if (::fcntl(STDIN_FILENO, F_SETFL, flags | O_NONBLOCK) == 0) saved_ = flags;
  }
  void restore() noexcept {
    if (saved_ >= 0) ::fcntl(STDIN_FILENO, F_SETFL, saved_);
    saved_ = -1;
  }

 private:
  int saved_ = -1;  // the flags before set(), when it changed them
};

}  // namespace sluice_tools
