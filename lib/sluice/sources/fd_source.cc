#include "sluice/sources/fd_source.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "sluice/errors.h"
#include "sluice/loop.h"

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
  // close() is not retried on EINTR: on Linux the fd is gone either way.
  if (::close(fd_) != 0) return {errno, std::system_category()};
  return {};
}

// Node: ReadStream.prototype._read(n). The read itself waits for the loop's
// next turn, as Node's fs.read() completes in a later turn: a push from
// outside the readable's read() can go straight out as 'data' (no copy into
// the buffer), and an endless fd in flowing mode cannot starve the loop.
// Differs from Node: fs.ReadStream reads `n` (the high-water mark) bytes;
// here the chunk size decides, so that a readable with a small or zero mark
// still reads in big blocks. make_fd_readable() gives both the same value.
void fd_source::read(std::size_t /*n*/) { loop_->set_immediate([this] { read_now(); }, this); }

void fd_source::read_now() noexcept {
  if (!buffer_) buffer_ = std::make_unique_for_overwrite<char[]>(chunk_size_);
  for (;;) {
    ++syscalls_;
    const ssize_t n = ::read(fd_, buffer_.get(), chunk_size_);
    if (n > 0) {
      bytes_read_ += static_cast<std::size_t>(n);
      // Touch nothing after push(): a 'data' listener may have destroyed the
      // stream, and with it this source.
      stream().push(std::string_view(buffer_.get(), static_cast<std::size_t>(n)));
      return;
    }
    if (n == 0) {
      stream().push_eof();
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_readable();
      return;
    }
    stream().destroy(std::error_code(errno, std::system_category()));
    return;
  }
}

void fd_source::wait_readable() noexcept {
  // POLLHUP and POLLERR wake the watch too: the read() that follows then
  // sees the end (0) or the error.
  loop_->watch(fd_, POLLIN, [this](short) { read_now(); }, this);
}

// Node: ReadStream.prototype._destroy(): stop reading and close the fd.
std::error_code fd_source::destroy(std::error_code err) noexcept {
  if (loop_) loop_->cancel(this);
  const std::error_code closed = close_fd();
  return err ? err : closed;
}

std::unique_ptr<readable> make_fd_readable(int fd, bool close_fd, const readable_options& options) {
  readable_options o = options;
  if (!o.high_water_mark) o.high_water_mark = fd_source::default_chunk_size;
  return std::make_unique<readable>(std::make_unique<fd_source>(fd, close_fd), o);
}

namespace {
int open_for_reading(const std::string& path) noexcept {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return fd;
}
}  // namespace

std::unique_ptr<readable> make_file_readable(const std::string& path, const readable_options& options) {
  const int fd = open_for_reading(path);
  if (fd < 0) throw stream_error(errno, std::system_category(), "cannot open " + path);
  return make_fd_readable(fd, true, options);
}

std::unique_ptr<readable> make_file_readable(const std::string& path, std::error_code& ec,
                                             const readable_options& options) noexcept {
  ec.clear();
  const int fd = open_for_reading(path);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  return make_fd_readable(fd, true, options);
}

}  // namespace sluice
