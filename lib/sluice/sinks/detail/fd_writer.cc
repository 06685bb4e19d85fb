// fd_writer: the syscalls, for fd_sink on its loop and for file_worker's
// thread alike.
#include "sluice/sinks/detail/fd_writer.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "sluice/base/detail/syscalls.h"

namespace sluice {

namespace {
#ifdef IOV_MAX
constexpr std::size_t iov_max = IOV_MAX;
#else
constexpr std::size_t iov_max = 1024;
#endif

// The iovecs of one writev are scratch: filled and used within one
// write_some(), on one thread. One array per thread serves every fd_writer
// on it, where one per writer cost each stream 16 KiB (IOV_MAX iovecs): a
// server holds a writer per connection.
iovec* scratch_iov() noexcept {
  thread_local std::array<iovec, iov_max> iov;
  return iov.data();
}
}  // namespace

namespace detail {

fd_writer::kind fd_writer::kind_of(int fd) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (S_ISFIFO(st.st_mode)) return kind::pipe;
    if (S_ISSOCK(st.st_mode)) return kind::socket;
    if (S_ISREG(st.st_mode)) return kind::regular;
  }
  return kind::other;
}

void fd_writer::reset(int fd) noexcept {
  fd_ = fd;
  kind_ = kind_of(fd);
}

fd_writer::fd_writer(int fd) : fd_(fd), kind_(kind_of(fd)) {
  struct sigaction sa {};
  if (::sigaction(SIGPIPE, nullptr, &sa) == 0) ignore_sigpipe_ = sa.sa_handler == SIG_IGN;
}

void fd_writer::start(std::string_view chunk) noexcept {
  single_ = chunk;
  single_call_ = true;
  chunks_ = chunks_left_ = 1;
  pos_offset_ = 0;
}

void fd_writer::start(const write_batch& batch) noexcept {
  single_call_ = false;
  pos_ = batch.begin();
  chunks_ = chunks_left_ = batch.size();
  pos_offset_ = 0;
}

// Fills `iov` from the current position, a run of chunks (write_batch::
// iterator::run()) at a time, merging runs that are adjacent in memory, up
// to IOV_MAX entries. Returns the bytes it covers, and leaves in fill_end_
// the position just past them, for a write that takes them all.
std::size_t fd_writer::fill_iov(iovec* iov, std::size_t& count) noexcept {
  std::size_t total = 0;
  count = 0;
  if (chunks_left_ == 0) return 0;
  if (single_call_) {
    const std::string_view c = single_.substr(pos_offset_);
    iov[0] = {const_cast<char*>(c.data()), c.size()};
    count = c.empty() ? 0 : 1;
    fill_end_ = {pos_, 0, 0};
    return c.size();
  }
  // The first chunk may be partly written already; the others are whole.
  // A call over part of a batch (start(first, count)) ends inside the run
  // it ends in: runs are bounded by the chunks left in the call.
  auto it = pos_;
  std::size_t left = chunks_left_;
  std::size_t run = std::min(it.run_chunks(), left);
  std::string_view c = it.run(run);
  c.remove_prefix(pos_offset_);
  iovec* const first = iov;
  std::size_t used = 0;      // iovecs filled; first[used - 1] is being extended
  const char* cur_end = nullptr;
  for (;;) {
    if (!c.empty()) {
      if (c.data() == cur_end) {
        first[used - 1].iov_len += c.size();  // adjacent in memory: one buffer
      } else {
        if (used == iov_max) break;
        first[used++] = {const_cast<char*>(c.data()), c.size()};
      }
      cur_end = c.data() + c.size();
      total += c.size();
    }
    left -= run;
    if (left == 0) break;
    it.next_run();
    run = std::min(it.run_chunks(), left);
    c = it.run(run);
  }
  count = used;
  fill_end_ = {it, 0, left};
  return total;
}

// Moves the position past n written bytes.
void fd_writer::advance(std::size_t n, std::size_t filled) noexcept {
  bytes_written_ += n;
  if (n == filled) {  // the whole fill was taken: the usual case
    pos_ = fill_end_.pos;
    pos_offset_ = fill_end_.offset;
    chunks_left_ = fill_end_.left;
    return;
  }
  if (single_call_) {
    pos_offset_ += n;
    return;
  }
  while (chunks_left_ > 0) {
    const std::size_t avail = (*pos_).size() - pos_offset_;
    if (n < avail) {
      pos_offset_ += n;
      return;
    }
    n -= avail;
    pos_offset_ = 0;
    if (--chunks_left_ > 0) ++pos_;
  }
}

bool fd_writer::write_some(std::error_code& error) noexcept {
  for (;;) {
    iovec* const iov = scratch_iov();
    std::size_t count = 0;
    const std::size_t want = fill_iov(iov, count);
    if (want == 0) {
      // Nothing left (or only empty chunks): the call is done.
      chunks_left_ = 0;
      return true;
    }
    const ssize_t n = write_iov(iov, static_cast<int>(count));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      error = {errno, std::system_category()};
      cut_torn_chunk();
      return true;
    }
    advance(static_cast<std::size_t>(n), want);
  }
}

// After a failed write that stopped inside a chunk: on a regular file, cuts
// that chunk's bytes off again, so that the file ends on a chunk boundary.
// Only when the file still ends where this write left it: bytes another
// process appended since then are not ours to cut.
void fd_writer::cut_torn_chunk() noexcept {
  if (pos_offset_ == 0 || kind_ != kind::regular) return;
  const off_t end = ::lseek(fd_, 0, SEEK_CUR);
  struct stat st {};
  if (end < 0 || ::fstat(fd_, &st) != 0 || st.st_size != end) return;
  const off_t whole = end - static_cast<off_t>(pos_offset_);
  if (sys.ftruncate(fd_, whole) != 0) return;
  ::lseek(fd_, whole, SEEK_SET);  // a file without O_APPEND goes on from there
  bytes_written_ -= pos_offset_;
  pos_offset_ = 0;
}

ssize_t fd_writer::write_iov(const iovec* iov, int n) noexcept {
  ++syscalls_;
  if (kind_ == kind::socket) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<std::size_t>(n);
    return sys.sendmsg(fd_, &msg, MSG_NOSIGNAL);
  }
  if (kind_ != kind::pipe || ignore_sigpipe_) return sys.writev(fd_, iov, n);

  // A pipe whose reader is gone raises SIGPIPE, which would kill the
  // process: the guard takes it, after EPIPE or a short write alike.
  sigpipe_block guard;
  return sys.writev(fd_, iov, n);
}

std::error_code fd_writer::write_all() noexcept {
  std::error_code error;
  while (!write_some(error)) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return {errno, std::system_category()};
  }
  return error;
}

}  // namespace detail

}  // namespace sluice
