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

// The loop of write_fully(), over the call that writes: writev, or write
// for one buffer (the table's entries stay those the callers made before).
template <class Call>
std::error_code write_loop(iovec* iov, int count, Call call) noexcept {
  while (count > 0 && iov->iov_len == 0) {
    ++iov;
    --count;
  }
  while (count > 0) {
    const ssize_t n = call(iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return last_error();
    }
    if (n == 0) return std::make_error_code(std::errc::io_error);
    auto m = static_cast<std::size_t>(n);
    while (count > 0 && m >= iov->iov_len) {
      m -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + m;
      iov->iov_len -= m;
    }
  }
  return {};
}

}  // namespace

std::error_code write_fully(int fd, iovec* iov, int count) noexcept {
  return write_loop(iov, count, [fd](const iovec* v, int c) { return sys.writev(fd, v, c); });
}

std::error_code write_fully(int fd, const void* data, std::size_t size) noexcept {
  iovec one{const_cast<void*>(data), size};
  return write_loop(&one, 1, [fd](const iovec* v, int) { return sys.write(fd, v->iov_base, v->iov_len); });
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
