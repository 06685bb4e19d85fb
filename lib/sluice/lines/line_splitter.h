// line_splitter: the line rules, in one place. Both ways of iterating lines
// (line_reader over an fd, for_each_line over a readable) feed it chunks.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/base/errors.h"

namespace sluice {

struct line_options {
  /// The longest line accepted, in bytes, without its "\n" or "\r\n". A
  /// longer line is an error (errc::line_too_long), found as soon as the
  /// line is known to be too long; memory stays bounded by this limit.
  std::size_t max_line_length = 1024 * 1024;
  /// line_reader and count_lines() only: the size of each read() (and of
  /// its buffer).
  std::size_t buffer_size = 256 * 1024;
};

/// Splits a stream of chunks into lines. The rules:
///
/// - A line ends at "\n"; "\r\n" ends it too. Neither is part of the line.
///   A "\r" elsewhere (even last in the data) is an ordinary byte.
///   (Differs from Node: readline also ends a line at a lone "\r"; sluice
///   counts lines as wc -l and grep do, so its counts agree with theirs.)
/// - The bytes after the last "\n", if any, are a last line (finish()).
///   So "a\nb" is two lines, "a\n" one, "" none, "\n" one empty line.
/// - Bytes are bytes: NULs and invalid UTF-8 pass through untouched.
/// - A line longer than max_line_length is an error; the splitter then
///   yields nothing more.
///
/// A line that lies inside one chunk is returned as a view into that chunk,
/// with no copy. Only a line that straddles chunks is copied (into a buffer
/// the splitter keeps, at most max_line_length + 1 bytes).
///
///     sluice::line_splitter s;
///     std::error_code ec;
///     s.feed(chunk);  // then drain it:
///     while (auto line = s.next(ec)) use(*line);
///     // ... more chunks; at the end of the data:
///     if (auto last = s.finish(ec)) use(*last);
///
/// A line returned is valid until the next call of next(), feed(), finish()
/// or reset() (and, if it is a view into the chunk, while the chunk lives).
class line_splitter {
 public:
  explicit line_splitter(std::size_t max_line_length = line_options{}.max_line_length) noexcept
      : max_(max_line_length) {}

  /// Hands the splitter the next chunk, which must stay valid until next()
  /// has returned nothing. Only after next() has returned nothing.
  void feed(std::string_view chunk) noexcept {
    assert(rest_.empty());
    rest_ = chunk;
  }

  /// The next complete line of the chunks fed so far, or nothing when the
  /// splitter needs the next chunk (it has then kept the unfinished line,
  /// and no longer refers to the chunk), or on error (`ec` set).
  std::optional<std::string_view> next(std::error_code& ec) {
    if (!slow_ && !rest_.empty()) {
      // The common case: a whole line inside the chunk.
      if (const void* nl = std::memchr(rest_.data(), '\n', rest_.size())) {
        const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - rest_.data());
        std::string_view line(rest_.data(), len);
        rest_.remove_prefix(len + 1);
        if (len != 0 && line[len - 1] == '\r') line.remove_suffix(1);
        if (line.size() > max_) [[unlikely]]
          return fail(ec);
        return line;
      }
    }
    return next_slow(ec);
  }

  /// At the end of the data: the last line, if the data did not end with
  /// "\n", else nothing. Call it once, after next() has returned nothing.
  std::optional<std::string_view> finish(std::error_code& ec);

  /// Forgets everything (the error, the unfinished line), for new data.
  void reset() noexcept;

  /// Whether an error stopped the splitter.
  bool failed() const noexcept { return failed_; }
  /// Lines that straddled chunks and were copied: a measure of the copies.
  std::size_t copied_lines() const noexcept { return copied_lines_; }
  std::size_t max_line_length() const noexcept { return max_; }

 private:
  std::optional<std::string_view> next_slow(std::error_code& ec);
  std::optional<std::string_view> fail(std::error_code& ec) noexcept;
  void update_slow() noexcept { slow_ = failed_ || carry_used_ || !carry_.empty(); }

  std::size_t max_;
  std::string_view rest_;  // the part of the current chunk not yet split
  std::string carry_;      // the start of a line that straddles chunks
  bool carry_used_ = false;  // carry_ holds the line just returned: clear it next time
  bool failed_ = false;
  bool slow_ = false;  // any of the three above: the fast path does not apply
  std::size_t copied_lines_ = 0;
};

}  // namespace sluice
