// line_counter: how many lines, by line_splitter's rules, without splitting
// them: the job of wc -l, where no line is ever looked at.
#pragma once

#include <cstddef>
#include <string_view>
#include <system_error>

#include "sluice/lines/line_splitter.h"

namespace sluice {

/// The number of "\n" bytes in `bytes`: a vector loop (AVX2 where the CPU
/// has it, chosen at run time, else SSE2; a memchr() chain elsewhere).
std::size_t count_newlines(std::string_view bytes) noexcept;

namespace detail {
/// One of count_newlines()'s loops, by name, for the tests: "memchr" (any
/// CPU), "sse2" and "avx2" (x86-64; "avx2" only on a CPU that has it).
using newline_counter = std::size_t (*)(const char*, std::size_t) noexcept;
newline_counter newline_counter_named(std::string_view name) noexcept;
}  // namespace detail

/// Counts the lines of chunks fed one after the other, as line_splitter
/// would return them (a last line without "\n" counts; a line longer than
/// max_line_length, without its "\n" or "\r\n", is errc::line_too_long and
/// ends the count, found as soon as the line is known to be too long), but
/// with no line split out: a chunk costs one count of its newlines and a
/// look at the line that crosses into it.
///
///     sluice::line_counter c;
///     std::error_code ec;
///     while (... && c.feed(chunk, ec)) {}
///     if (!ec) c.finish(ec);
///     // c.lines(): the lines, or after line_too_long those before the long one
class line_counter {
 public:
  explicit line_counter(std::size_t max_line_length = line_options{}.max_line_length) noexcept
      : max_(max_line_length) {}

  /// Counts the lines that end in `chunk`. False, with `ec` set to
  /// errc::line_too_long, when a line is too long; it then stays failed.
  bool feed(std::string_view chunk, std::error_code& ec) noexcept;
  /// At the end of the data: counts a last line without "\n". False, `ec`
  /// set, when it (or an earlier line) was too long.
  bool finish(std::error_code& ec) noexcept;

  /// Lines counted so far; after errc::line_too_long, the long line is
  /// number lines() + 1.
  std::size_t lines() const noexcept { return lines_; }
  bool failed() const noexcept { return failed_; }

 private:
  bool fits(std::size_t gap, char before_newline) const noexcept;
  bool count_inside(const char* from, const char* last, std::error_code& ec) noexcept;
  bool fail(std::error_code& ec) noexcept;

  std::size_t max_;
  std::size_t lines_ = 0;
  std::size_t open_ = 0;  // bytes of the line not ended yet
  char last_byte_ = 0;    // the last byte fed, for a "\r" before a chunk's first "\n"
  bool failed_ = false;
};

/// Counts the lines of an fd from where it is to its end, reading blocks of
/// options.buffer_size bytes (EINTR retried; EAGAIN waits in poll(), as
/// line_reader does). Returns the count; on an error `ec` is set
/// (errc::line_too_long, or read()'s errno) and the count is that of the
/// lines before the error. The fd is not closed.
std::size_t count_lines(int fd, std::error_code& ec, const line_options& options = {});

/// count_lines(), but a regular file of at least 1 MiB past the fd's offset
/// is mapped 4 MiB at a time instead of read, and its bytes are counted
/// where the page cache holds them: no copy into a buffer, which is most of
/// what a read() costs. The mapped bytes go to the count in pieces of
/// options.max_line_length bytes (at most 4 MiB, at least
/// options.buffer_size), as reads would. Anything else (a pipe, a small
/// file, a file that cannot be mapped) is read as count_lines() does, and
/// so is whatever a mapped file has past the size it had at the start.
///
/// A file truncated under the mapping (or a page that cannot be read in)
/// raises SIGBUS: while it counts mapped bytes, this function catches it
/// (it installs a handler for SIGBUS for the time of each 4 MiB window, and
/// puts the previous one back), forgets that window's count, and reads the
/// rest instead, so a file that shrinks is counted as read() sees it.
///
/// At the end the fd's offset is at the end of what was counted, as after
/// count_lines().
///
///     std::error_code ec;
///     const std::size_t n = sluice::count_lines_mapped(fd, ec, {.buffer_size = 64 * 1024});
std::size_t count_lines_mapped(int fd, std::error_code& ec, const line_options& options = {});

namespace detail {
enum class mapped_feed {
  ok,       // every byte counted
  failed,   // line_counter::feed() failed (errc::line_too_long), ec set
  faulted,  // reading the bytes raised SIGBUS; the counter is as it was
};
/// count_lines_mapped()'s step, for the tests: feeds `bytes` (a mapping of
/// a file) to `counter` in pieces of `piece` bytes, catching SIGBUS.
mapped_feed feed_mapped(line_counter& counter, std::string_view bytes, std::size_t piece, std::error_code& ec) noexcept;
}  // namespace detail

}  // namespace sluice
