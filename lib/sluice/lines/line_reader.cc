#include "sluice/lines/line_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace sluice {

line_reader::line_reader(int fd, const line_options& options)
    : fd_(fd),
      buffer_size_(options.buffer_size == 0 ? line_options{}.buffer_size : options.buffer_size),
      buffer_(std::make_unique_for_overwrite<char[]>(buffer_size_)),
      splitter_(options.max_line_length) {
  // A hint for files (read-ahead); pipes and sockets refuse it, harmlessly.
  (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

line_reader::~line_reader() = default;

// Reads the next block into the splitter. False at the end of the data (eof_
// set) or on an error (error_ and ec set).
bool line_reader::fill(std::error_code& ec) {
  for (;;) {
    ++syscalls_;
    const ssize_t n = ::read(fd_, buffer_.get(), buffer_size_);
    if (n > 0) {
      bytes_read_ += static_cast<std::size_t>(n);
      splitter_.feed(std::string_view(buffer_.get(), static_cast<std::size_t>(n)));
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd_, POLLIN, 0};
      while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
      continue;  // readable, at the end, or in error: read() will say which
    }
    ec = error_ = std::error_code(errno, std::system_category());
    return false;
  }
}

std::optional<std::string_view> line_reader::next_slow(std::error_code& ec) {
  for (;;) {
    if (done_) {
      if (error_) ec = error_;
      return std::nullopt;
    }
    if (splitter_.failed()) {
      ec = error_ = make_error_code(errc::line_too_long);
      done_ = true;
      return std::nullopt;
    }
    if (!fill(ec)) {
      done_ = true;
      if (!eof_) return std::nullopt;
      auto last = splitter_.finish(ec);
      if (splitter_.failed()) error_ = ec;
      if (last) ++lines_;
      return last;
    }
    if (auto line = splitter_.next(ec)) {
      ++lines_;
      return line;
    }
  }
}

void line_reader::iterator::advance() {
  std::error_code ec;
  if (auto line = reader_->next(ec)) {
    line_ = *line;
  } else {
    reader_ = nullptr;
  }
}

}  // namespace sluice
