#include "sluice/base/detail/syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

namespace sluice::detail {

namespace {
// open() is variadic: a function of fixed arguments to point at.
int open_call(const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); }
}  // namespace

constexpr syscall_table real_syscalls{
    ::writev, ::sendmsg, ::read, open_call, ::close, ::fsync, ::rename, ::unlink, ::ftruncate, ::write, ::pwrite, ::fdatasync, ::mkdir, ::splice, ::copy_file_range, ::sendfile, ::recv,
};
constinit syscall_table sys = real_syscalls;

syscall_table swap_syscalls(const syscall_table& table) noexcept {
  const syscall_table old = sys;
  sys = table;
  return old;
}

namespace {
sigset_t sigpipe_set() noexcept {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  return s;
}
}  // namespace

sigpipe_block::sigpipe_block() noexcept {
  const sigset_t pipe_set = sigpipe_set();
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask_);
  sigset_t pending;
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
}

// Whatever the call returned: Linux raises SIGPIPE on a write that the
// reader's leaving cuts short, and that write returns the bytes it wrote.
// Unblocked, that SIGPIPE would kill the process.
sigpipe_block::~sigpipe_block() {
  swallow();
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void sigpipe_block::swallow() noexcept {
  if (was_pending_) return;
  const int saved = errno;
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const sigset_t pipe_set = sigpipe_set();
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  errno = saved;
}

}  // namespace sluice::detail
