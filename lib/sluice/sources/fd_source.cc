#include "sluice/sources/fd_source.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice {

fd_source::fd_source(int fd, bool close_fd, std::size_t chunk_size)
    : fd_(fd), close_fd_(close_fd), chunk_size_(chunk_size == 0 ? default_chunk_size : chunk_size) {}

fd_source::~fd_source() {
  if (loop_) loop_->cancel(this);
  close_fd();
}

std::error_code fd_source::close_fd() noexcept {
  if (!close_fd_ || fd_ < 0) return {};
  close_fd_ = false;
  if (loop_) loop_->forget_fd(fd_);
  // close() is not retried on EINTR: on Linux the fd is gone either way.
  if (detail::sys.close(fd_) != 0) return {errno, std::system_category()};
  return {};
}

// Node: ReadStream.prototype._read(n). The read itself waits for the loop's
// next turn, as Node's fs.read() completes in a later turn: a push from
// outside the readable's read() can go straight out as 'data' (no copy into
// the buffer), and an endless fd in flowing mode cannot starve the loop.
// Differs from Node: fs.ReadStream reads `n` (the high-water mark) bytes;
// here the chunk size decides, so that a readable with a small or zero mark
// still reads in big blocks. make_fd_readable() gives both the same value.
// A pipe, a socket or a terminal is read once the loop's poll says it is
// readable: a blocking one (a tool's stdin) never blocks the loop in read(2),
// where a SIGTERM's watch would wait for the next line (a tool hung on exit).
// While the kernel moves the bytes (move_to()), the read is only noted:
// the moves answer it with the end, or the normal path when they stop.
void fd_source::read(std::size_t /*n*/) {
  if (over_) return;
  read_wanted_ = true;
  if (!moving()) schedule_read();
}

void fd_source::schedule_read() noexcept {
  if (wait_first_)
    wait_readable();
  else
    loop_->set_immediate([this] { read_now(); }, this);
}

void fd_source::attach(loop& l) {
  loop_ = &l;
  struct stat st;
  wait_first_ = ::fstat(fd_, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
}

// Memory that runs out (the buffer here, or the copy of a chunk the stream
// buffers) is the stream's error (ENOMEM), not std::terminate from this
// noexcept path: a read that runs out of memory must not abort the program.
void fd_source::read_now() noexcept {
  if (!buffer_) {
    buffer_.reset(new (std::nothrow) char[chunk_size_]);
    if (!buffer_) return out_of_memory();
  }
  for (;;) {
    ++syscalls_;
    const ssize_t n = detail::sys.read(fd_, buffer_.get(), chunk_size_);
    if (n > 0) {
      bytes_read_ += static_cast<std::size_t>(n);
      read_wanted_ = false;
      // Touch nothing after push(): a 'data' listener may have destroyed the
      // stream, and with it this source. A push that throws has not: the
      // stream's own code threw, after its listeners returned.
      try {
        push(std::string_view(buffer_.get(), static_cast<std::size_t>(n)));
      } catch (const std::bad_alloc&) {
        out_of_memory();
      }
      return;
    }
    if (n == 0) {
      over_ = true;
      read_wanted_ = false;
      push_eof();
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_readable();
      return;
    }
    over_ = true;
    report_error(std::error_code(errno, std::system_category()));
    return;
  }
}

// The bytes already read are in the stream (pushed as they were read); only
// the next read is dropped. Without push_eof() here, stopping meant
// destroy(), which threw away the stream's buffer: lines already read were lost.
void fd_source::stop() noexcept {
  if (over_) return;
  over_ = true;
  move_ = move_call::none;
  may_move_ = nullptr;
  if (loop_) loop_->cancel(this);
  push_eof();
}

void fd_source::out_of_memory() noexcept {
  over_ = true;
  report_error(std::make_error_code(std::errc::not_enough_memory));
}

void fd_source::wait_readable() noexcept {
  // POLLHUP and POLLERR wake the watch too: the read() that follows then
  // sees the end (0) or the error.
  loop_->watch(fd_, POLLIN, [this](short) { read_now(); }, this);
}

// Node: ReadStream.prototype._destroy(): stop reading and close the fd.
std::error_code fd_source::destroy(std::error_code err) noexcept {
  over_ = true;
  move_ = move_call::none;
  may_move_ = nullptr;
  if (loop_) loop_->cancel(this);
  const std::error_code closed = close_fd();
  return err ? err : closed;
}

}  // namespace sluice
