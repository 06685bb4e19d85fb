// syslog_frames: takes a stream of RFC 6587 frames apart (octet counting,
// LF framing, or either, told apart per connection as rsyslog does).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/base/function.h"

namespace sluice {

/// Splits what one connection sends into syslog messages.
///
///     sluice::syslog_frame_reader frames(sluice::syslog_frame_reader::mode::automatic, 64 * 1024);
///     if (!frames.feed(chunk, [&](std::string_view msg) { store(msg); }))
///       close_connection(frames.error());
///
/// Octet counting: "LEN SP MSG", LEN a decimal number from 1 to the maximum
/// with no leading zero. LF framing: MSG ends at LF (a CR before it stays,
/// and an empty line is no message). Automatic: the connection's first byte
/// decides, a digit for octet counting, '<' (a PRI) for LF framing.
///
/// A message longer than the maximum is a malformed frame, or, made with
/// `truncate` true, delivered cut to the maximum (cut() tells, inside
/// on_message) and its rest skipped: its end is known (the length, or the
/// LF), so the connection's stream goes on. Either way no more than the
/// maximum is ever held, and what is held is given back once the message is
/// out (a connection between messages holds no buffer).
class syslog_frame_reader {
 public:
  enum class mode { automatic, octet_counting, lf };
  using message_fn = inline_function<void(std::string_view), 32>;

  syslog_frame_reader(mode m, std::size_t max_message, bool truncate = false)
      : mode_(m),
        max_(max_message),
        // Cutting, a longer length is taken too (up to 10 digits), to be skipped.
        max_digits_(truncate && std::to_string(max_message).size() < 10 ? 10 : std::to_string(max_message).size()),
        truncate_(truncate) {}

  /// Calls `on_message` for every message `data` completes. Returns false
  /// at a malformed frame (see error()): the connection's stream is lost, and
  /// nothing after it is taken. The messages before it were delivered.
  bool feed(std::string_view data, const message_fn& on_message);
  /// Why feed() failed: "bad frame length '...'", "message longer than N
  /// bytes", "neither octet counting nor LF framing (first byte 0x..)".
  const std::string& error() const noexcept { return error_; }
  /// Whether a frame has begun and is not complete: a sender that stops here
  /// has torn it.
  bool mid_frame() const noexcept { return !partial_.empty() || state_ != state::start || skip_line_; }
  /// Inside on_message: the message was longer than the maximum, and this
  /// is its first `max_message` bytes (made with `truncate`).
  bool cut() const noexcept { return cut_; }
  /// The bytes held for a message not yet complete (its capacity).
  std::size_t buffered() const noexcept { return partial_.capacity(); }
  /// The framing the connection turned out to use (automatic until known).
  mode framing() const noexcept { return mode_; }

 private:
  enum class state { start, length, body, skip };
  bool fail(std::string why);
  // Octet counting: one step over `data` from `i`; false on error.
  bool octet(std::string_view data, std::size_t& i, const message_fn& on_message);
  void octet_run(std::string_view data, std::size_t& i, const message_fn& on_message);
  bool lf(std::string_view data, std::size_t& i, const message_fn& on_message);
  void deliver_partial(const message_fn& on_message);
  void grow(std::size_t need, std::size_t limit);

  mode mode_;
  std::size_t max_;
  std::size_t max_digits_;  // a length has at most as many digits as max_
  state state_ = state::start;
  std::size_t want_ = 0;  // the body's length, summed as its digits come
  std::string partial_;   // a length's digits, or a body (or line) so far
  std::string error_;
  bool failed_ = false;
  bool truncate_ = false;
  bool cut_ = false;        // the message being delivered was cut
  bool skip_line_ = false;  // LF: the rest of a cut line, up to its LF
  std::size_t skip_ = 0;    // octet: the rest of a cut body
};

}  // namespace sluice
