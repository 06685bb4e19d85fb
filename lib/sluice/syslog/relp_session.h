// relp_session: the receiving side of one RELP session (rsyslog's imrelp,
// librelp's server), as a state machine over bytes: it checks the
// commands and their transaction numbers and writes the answers; the
// caller owns the socket and says when each message is stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/syslog/relp_frames.h"

namespace sluice {

/// One RELP session as a receiver keeps it. The peer must send `open`
/// first (answered at once: 200 OK and the offers relp_version=0,
/// commands=syslog), then `syslog` transactions, each numbered one past the
/// one before (999999999 is followed by 1), then `close`. Anything else (a
/// malformed frame, a frame longer than `max_data`, a wrong number, no
/// `open` first, a second `open`, a command not offered, a frame after
/// `close`) is a protocol error: feed() returns false and error() says why;
/// the caller closes the connection.
///
/// A `syslog` transaction is answered only when the caller says it is
/// stored: ack_next() answers the oldest unanswered one (they are stored in
/// the order they came, so the unanswered ones are always a run of
/// consecutive numbers). `close` is answered once every message before it
/// is: close_due() tells when.
///
///     sluice::relp_session s;
///     std::string out;
///     bool ok = s.feed(bytes, out, [&](std::string_view msg) { store(msg); });
///     // ... once the oldest stored message is on disk:
///     s.ack_next(out);
///     if (s.close_due()) s.answer_close(out);   // then close the connection
class relp_session {
 public:
  /// `max_data`: the largest DATALEN taken (librelp's default is 128 KiB).
  explicit relp_session(std::size_t max_data = 128 * 1024) : frames_(max_data) {}

  /// Takes the next bytes. Appends to `out` what is answered at once (the
  /// `open`) and calls `on_message(std::string_view)` with each `syslog`
  /// transaction's message. False at the first protocol error.
  template <class F>
  bool feed(std::string_view bytes, std::string& out, F&& on_message) {
    if (!error_.empty()) return false;
    const bool ok = frames_.feed(bytes, [&](const relp_frame& f) {
      if (!error_.empty()) return;
      if (check(f, out)) on_message(std::string_view(f.data));
    });
    if (!ok && error_.empty()) error_ = frames_.error();
    return error_.empty();
  }

  /// Answers the oldest unanswered `syslog` transaction: "TXNR rsp 6 200 OK".
  void ack_next(std::string& out);
  /// Answers it with an error instead: "TXNR rsp N 500 TEXT" (the message
  /// was refused, e.g. by a relay's next hop; the sender drops it).
  void refuse_next(std::string& out, std::string_view text);
  /// Syslog transactions taken and not answered yet.
  std::size_t unanswered() const noexcept { return unanswered_; }
  /// Whether `close` came and everything before it is answered: then
  /// answer_close() and close the connection.
  bool close_due() const noexcept { return close_txnr_ != 0 && unanswered_ == 0 && !closed_; }
  /// Whether the `close` is answered.
  bool close_answered() const noexcept { return closed_; }
  /// Whether `close` came (answered or not).
  bool close_asked() const noexcept { return close_txnr_ != 0; }
  /// Answers the `close`.
  void answer_close(std::string& out);
  /// Whether `open` was answered.
  bool open() const noexcept { return open_; }
  /// Whether a frame is partly read.
  bool mid_frame() const noexcept { return frames_.mid_frame(); }
  /// Why the session is bad; empty while it is good.
  const std::string& error() const noexcept { return error_; }

  /// A receiver's unsolicited "0 serverclose 0": it is going away (the
  /// sender reconnects and sends its unanswered messages again).
  static void append_serverclose(std::string& out);

 private:
  bool check(const relp_frame& f, std::string& out);

  relp_frame_reader frames_;
  std::string error_;
  std::uint32_t last_txnr_ = 0;     // the last transaction taken
  std::uint32_t next_ack_ = 0;      // the oldest unanswered syslog transaction
  std::uint32_t close_txnr_ = 0;    // the close's, once it came
  std::size_t unanswered_ = 0;
  bool open_ = false;
  bool closed_ = false;             // the close is answered
};

}  // namespace sluice
