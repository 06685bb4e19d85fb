// syslog_format: RFC 5424 messages and their RFC 6587 framing, as the syslog
// writable sends them and sluice-logd takes them apart. No I/O here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace sluice {

/// How messages are delimited on a stream transport (RFC 6587).
enum class syslog_framing {
  /// RFC 6587 3.4.1 octet counting: "LEN SP MSG". A newline inside MSG stays
  /// inside it. What rsyslog's imptcp and syslog-ng take by default.
  octet_counting,
  /// RFC 6587 3.4.2 non-transparent framing: "MSG LF", for old receivers.
  /// A LF inside MSG would end the message there, so the writable sends it
  /// as a space (documented loss of fidelity; use octet counting instead).
  lf,
};

/// The fixed fields of an RFC 5424 header.
struct syslog_header {
  /// 0 (kern) to 23 (local7); 1 is "user".
  unsigned facility = 1;
  /// 0 (emerg) to 7 (debug); 6 is "info".
  unsigned severity = 6;
  /// HOSTNAME; empty: gethostname(). At most 255 printable ASCII characters.
  std::string hostname;
  /// APP-NAME; "-" is the nil value. At most 48 characters.
  std::string app_name = "-";
  /// PROCID; empty: this process's pid. At most 128 characters.
  std::string procid;
  /// MSGID; at most 32 characters.
  std::string msgid = "-";
};

namespace detail {

/// Why no message can have header `h` (a facility past 23, a severity past
/// 7), or null: what the writables' factories check before they make one.
const char* syslog_header_problem(const syslog_header& h) noexcept;

/// Formats RFC 5424 messages with one header:
/// "<PRI>1 2026-12-01T13:53:10.123456Z HOST APP PROCID MSGID - MSG", the
/// timestamp in UTC with microseconds (RFC 3339), STRUCTURED-DATA nil. The
/// header fields are checked once, here: a field's characters outside
/// PRINTUSASCII (33 to 126) become '_', and a field is cut at its RFC length
/// (an empty one becomes "-"). Throws std::invalid_argument for a facility
/// past 23 or a severity past 7 (syslog_header_problem()).
class syslog_formatter {
 public:
  explicit syslog_formatter(const syslog_header& h, syslog_framing framing = syslog_framing::octet_counting);

  /// Appends one framed message stamped with `now` (CLOCK_REALTIME).
  void append(std::string& out, std::string_view msg, const timespec& now);
  /// The size append() adds for `msg`, at most (for reserving).
  std::size_t framed_size_max(std::size_t msg_size) const noexcept { return fixed_.size() + 48 + msg_size; }
  /// The size of a message's header, before MSG (the timestamp's 27
  /// characters included): a message is header_size() + MSG's size long.
  std::size_t header_size() const noexcept { return pri_.size() + 27 + fixed_.size(); }

 private:
  std::string_view stamp(const timespec& now);

  syslog_framing framing_;
  std::string pri_;    // "<PRI>1 "
  std::string fixed_;  // " HOST APP PROCID MSGID - "
  time_t last_sec_ = -1;
  char stamp_[40] = {};  // "YYYY-MM-DDTHH:MM:SS." once a second, then "uuuuuuZ"
  std::size_t stamp_len_ = 0;
};

}  // namespace detail
}  // namespace sluice
