// line_reader: the lines of a file descriptor, pulled one at a time, for
// tools and other code that reads one input from start to end.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "sluice/lines/line_splitter.h"

namespace sluice {

/// Reads an fd in big blocks (256 KiB unless told otherwise) and returns its
/// lines as views, following line_splitter's rules ("\n" or "\r\n" ends a
/// line; a last line without "\n" counts; a line longer than
/// max_line_length is errc::line_too_long). A line inside one block is a
/// view into the block, never copied; a line may be copied only when it
/// straddles two blocks. There is no waiting between lines: a read() happens
/// only when the block runs out. EINTR is retried; on a non-blocking fd,
/// EAGAIN waits in poll() for POLLIN, since a pull reader has nothing else
/// to do. The fd is not closed by the reader.
///
///     sluice::line_reader r(fd);
///     std::error_code ec;
///     while (auto line = r.next(ec)) count += line->find("ERROR") != line->npos;
///     if (ec) report(ec);
///
/// or as a range:
///
///     for (std::string_view line : r) ...;
///     if (r.error()) report(r.error());
///
/// A line returned is valid until the next call of next() (or ++ on the
/// range's iterator).
class line_reader {
 public:
  explicit line_reader(int fd, const line_options& options = {});
  ~line_reader();
  line_reader(const line_reader&) = delete;
  line_reader& operator=(const line_reader&) = delete;

  /// The next line, or nothing at the end of the data or on an error (then
  /// `ec` is set: errc::line_too_long, or the errno of read()). After the
  /// first nothing, every call returns nothing (and the same error).
  std::optional<std::string_view> next(std::error_code& ec) {
    if (auto line = splitter_.next(ec)) [[likely]] {
      ++lines_;
      return line;
    }
    return next_slow(ec);
  }

  /// The error that ended the lines, if any (for the range form).
  std::error_code error() const noexcept { return error_; }
  /// Lines returned so far. After errc::line_too_long, the long line is
  /// number lines() + 1.
  std::size_t lines() const noexcept { return lines_; }
  /// Bytes read from the fd so far.
  std::size_t bytes_read() const noexcept { return bytes_read_; }
  /// read() calls made so far.
  std::size_t syscalls() const noexcept { return syscalls_; }
  /// The splitter, for its counters (copied_lines()).
  const line_splitter& splitter() const noexcept { return splitter_; }

  /// An input iterator over the lines; it ends at the end of the data or at
  /// the first error (see error()).
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = const std::string_view&;

    iterator() = default;
    reference operator*() const noexcept { return line_; }
    pointer operator->() const noexcept { return &line_; }
    iterator& operator++() {
      advance();
      return *this;
    }
    void operator++(int) { advance(); }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return it.reader_ == nullptr; }

   private:
    friend class line_reader;
    explicit iterator(line_reader* r) : reader_(r) { advance(); }
    void advance();
    line_reader* reader_ = nullptr;
    std::string_view line_;
  };

  /// Starts reading; call it once.
  iterator begin() { return iterator(this); }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  std::optional<std::string_view> next_slow(std::error_code& ec);
  bool fill(std::error_code& ec);

  int fd_;
  std::size_t buffer_size_;
  std::unique_ptr<char[]> buffer_;
  line_splitter splitter_;
  bool eof_ = false;
  bool done_ = false;
  std::error_code error_;
  std::size_t lines_ = 0;
  std::size_t bytes_read_ = 0;
  std::size_t syscalls_ = 0;
};

}  // namespace sluice
