// fd_source's move mode (move_to()): the kernel moves the bytes from the
// source's fd to another fd, and nothing passes through user space.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sluice/loop/loop.h"
#include "sluice/sources/fd_source.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice {

namespace {

bool seekable(const struct stat& st) { return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode); }

// The errnos of a kernel that cannot do this call for these two fds (a file
// system without copy_file_range, two file systems, an O_APPEND output, a
// kernel without the call), rather than of a read or a write that failed.
bool refused(int err) {
  return err == EINVAL || err == EXDEV || err == ENOSYS || err == EOPNOTSUPP || err == ENOTSUP || err == EBADF ||
         err == ESPIPE;
}

}  // namespace

bool fd_source::move_to(int out_fd, inline_function<bool(), 32> may_move) {
  if (over_ || !loop_ || moving()) return false;
  struct stat in {}, out {};
  if (::fstat(fd_, &in) != 0 || ::fstat(out_fd, &out) != 0) return false;
  if (S_ISFIFO(in.st_mode) || S_ISFIFO(out.st_mode))
    move_ = move_call::splice;
  else if (seekable(in) && S_ISREG(out.st_mode))
    move_ = move_call::copy_file_range;
  else if (seekable(in))
    move_ = move_call::sendfile;
  else
    return false;
  struct sigaction sa {};
  guard_sigpipe_ = (S_ISFIFO(out.st_mode) || S_ISSOCK(out.st_mode)) && ::sigaction(SIGPIPE, nullptr, &sa) == 0 &&
                   sa.sa_handler != SIG_IGN;
  move_fd_ = out_fd;
  may_move_ = std::move(may_move);
  // A read already waiting on the loop is the moves' to answer now.
  loop_->cancel(this);
  loop_->set_immediate([this] { move_now(); }, this);
  return true;
}

// The call of the mode, once, up to move_size bytes.
ssize_t fd_source::move_once() noexcept {
  switch (move_) {
    case move_call::splice:
      return detail::sys.splice(fd_, nullptr, move_fd_, nullptr, move_size, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    case move_call::copy_file_range:
      return detail::sys.copy_file_range(fd_, nullptr, move_fd_, nullptr, move_size, 0);
    case move_call::sendfile:
      return detail::sys.sendfile(move_fd_, fd_, nullptr, move_size);
    case move_call::none:
      break;
  }
  errno = EINVAL;
  return -1;
}

// One call per turn, as read_now() makes one read: the loop's other work
// (a signal's watch, the other streams) runs between the moves.
void fd_source::move_now() noexcept {
  for (;;) {
    if (!may_move_()) return stop_moving();
    ssize_t n;
    if (guard_sigpipe_) {
      // A pipe or socket whose reader is gone raises SIGPIPE, as a write does.
      detail::sigpipe_block guard;
      n = move_once();
      if (n < 0 && errno == EPIPE) guard.swallow();
    } else {
      n = move_once();
    }
    if (n > 0) {
      bytes_moved_ += static_cast<std::size_t>(n);
      loop_->set_immediate([this] { move_now(); }, this);
      return;
    }
    if (n == 0) {
      // Some files (procfs, sysfs) answer 0 to these calls though read()
      // finds bytes: before the first byte moved, the normal read decides.
      if (bytes_moved_ == 0) return stop_moving();
      move_ = move_call::none;
      may_move_ = nullptr;
      over_ = true;
      read_wanted_ = false;
      push_eof();
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return wait_movable();
    if (refused(errno) && move_ == move_call::copy_file_range) {
      // The bytes moved so far stay moved: both fds' offsets have advanced.
      move_ = move_call::sendfile;
      continue;
    }
    // Refused, or an error: the normal read and write take over, and meet
    // the error again on the side it belongs to.
    return stop_moving();
  }
}

// EAGAIN does not say which side is not ready: poll() does. A side that is
// ready while the call still says EAGAIN (it would spin) ends the moves.
void fd_source::wait_movable() noexcept {
  pollfd p[2] = {{fd_, POLLIN, 0}, {move_fd_, POLLOUT, 0}};
  int r;
  do {
    r = ::poll(p, 2, 0);
  } while (r < 0 && errno == EINTR);
  if (r >= 0 && p[1].revents == 0)
    loop_->watch(move_fd_, POLLOUT, [this](short) { move_now(); }, this);
  else if (r >= 0 && p[0].revents == 0)
    loop_->watch(fd_, POLLIN, [this](short) { move_now(); }, this);
  else
    stop_moving();
}

// Back to the normal path, and the read the stream asked for meanwhile.
void fd_source::stop_moving() noexcept {
  move_ = move_call::none;
  may_move_ = nullptr;
  if (read_wanted_) schedule_read();
}

}  // namespace sluice
