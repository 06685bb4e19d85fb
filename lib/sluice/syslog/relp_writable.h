// relp_writable: a writable whose chunks are syslog messages, sent over RELP
// (the Reliable Event Logging Protocol of rsyslog and librelp): each message
// is a transaction the receiver answers, so a write's callback says the
// receiver has it, and a lost connection loses nothing already written.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/stream/typed_stream.h"
#include "sluice/syslog/syslog_format.h"

namespace sluice {

class duplex;
namespace net {
class socket;
}
namespace detail {
class relp_sink;
}
class relp_writable;

struct relp_options {
  /// The receiver (rsyslog's imrelp, ...): a name (looked up at every
  /// connection) or an IP literal, and its port (RELP has no registered port; 2514 is usual).
  std::string host = "127.0.0.1";
  std::uint16_t port = 2514;
  /// Further receivers (host, port), tried in turn when one is down: a
  /// connection that fails before its session is open moves the next
  /// attempt to the next one (after the last, `host` again); a session
  /// that was open and broke is tried on the same receiver first. The
  /// unanswered messages go to whichever opens next.
  std::vector<std::pair<std::string, std::uint16_t>> alternates{};
  /// Each chunk is already a syslog message (a relay sending on what it
  /// received): sent as it is, with no header of this writable's (`header`
  /// is not used); a longer one than max_message is cut as others are.
  bool as_is = false;
  /// PRI (facility, severity), HOSTNAME, APP-NAME, PROCID and MSGID of the
  /// RFC 5424 message each chunk becomes.
  syslog_header header{};
  /// The most messages taken from the stream and not yet answered (sent,
  /// or waiting for a session to be sent on). It bounds what is sent again
  /// after a reconnect (the duplicates a receiver may see). The window
  /// slides: each answer lets the next message go at once, while older ones
  /// are still unanswered. librelp's own default is 128; with a receiver
  /// that answers a batch after an fsync, the rate is about window / fsync
  /// time.
  std::size_t window = 1024;
  /// After a failed connect or a lost session, the next attempt waits
  /// reconnect_min, then twice as long each time, up to reconnect_max. An
  /// open session resets it.
  std::chrono::milliseconds reconnect_min{100};
  std::chrono::milliseconds reconnect_max{5000};
  /// The bound on waiting for a session: once messages have waited this
  /// long without one, every unanswered message fails with the last
  /// connection error (ECONNREFUSED, ..., or "RELP: the receiver closed the
  /// connection before answering the open"), counted in dropped(), and the
  /// stream is destroyed with it (what it still holds fails too). Unset
  /// (the default): they wait as long as it takes, the producer held back
  /// by write() == false.
  std::optional<std::chrono::milliseconds> give_up_after{};
  /// The bound on waiting for an answer: a session on which transactions
  /// are unanswered and nothing has been answered for this long (the open
  /// handshake included) is treated as lost, as a reset connection is: it
  /// is closed, counted in answer_timeouts(), and the unanswered messages
  /// go again on the next session. librelp's client waits 90 s. Unset: no
  /// bound (a receiver that stops answering but keeps the connection holds
  /// the window forever).
  std::optional<std::chrono::milliseconds> answer_timeout{std::chrono::seconds(90)};
  /// The largest frame the receiver takes, as librelp counts it (its
  /// default is 128 KiB): a longer message is cut to fit, at a UTF-8
  /// character boundary, and counted in truncated().
  std::size_t max_message = 128 * 1024 - 64;
  /// The stream's options. Chunks are messages: object mode, the
  /// high-water mark counts messages (`window` unless set): what the stream
  /// holds while the window is full.
  /// Set: each connection's socket is handed to it, and the session runs
  /// over the stream it returns (a TLS client: tls::use_tls() sets it, as
  /// for syslog_options); a connection is up at that stream's
  /// 'secureConnect'. What is answered is what counts, as without it.
  std::function<std::unique_ptr<duplex>(std::unique_ptr<net::socket>)> wrap{};
  /// Whether `ec`, the error a connection ended with, is one no reconnect
  /// would mend (a certificate refused): then every unanswered message
  /// fails with it and the stream is destroyed with it. Unset: retried.
  std::function<bool(std::error_code ec)> fatal_error{};
  writable_options stream{};
};

/// A new relp_writable (see below). Throws stream_error (EINVAL) for a
/// header it cannot format: a facility past 23, a severity past 7.
std::unique_ptr<relp_writable> make_relp_writable(const relp_options& options = {});
/// The non-throwing twin: null, and `ec` says why.
std::unique_ptr<relp_writable> make_relp_writable(const relp_options& options, std::error_code& ec) noexcept;

/// A writable that sends each chunk as one RFC 5424 message in a RELP
/// `syslog` transaction. It connects at once and opens the session
/// (`open` with relp_version=0, commands=syslog, answered 200) before any
/// message; the caller's thread never waits for the network.
///
///     auto log = sluice::make_relp_writable({.port = 2514, .header = {.app_name = "api"}});
///     log->write("user 42 logged in", [](std::error_code ec) { /* !ec: the receiver answered 200 */ });
///     log->end([](std::error_code ec) { /* !ec: every message answered, session closed */ });
///     sluice::loop::current().run();
///
/// What it guarantees: a write's callback hears success only once the
/// receiver answered its transaction `rsp 200` (what that means on the
/// receiver's side, a queue or a disk, is the receiver's setting).
///
/// The window slides: a message is sent as soon as it is written, while up
/// to `window` older ones are still unanswered, and each answer makes room
/// for the next. Callbacks come in the order of the answers (librelp's
/// receivers answer in order). A full window holds the next write, the
/// stream holds the rest: write() returns false past the high-water mark,
/// and 'drain' comes as answers make room. So the producer is held back
/// only by the window, never by a round trip per batch.
///
/// When a session breaks (refused, reset, closed, `serverclose`, no answer
/// for answer_timeout), the writable reconnects with capped exponential
/// backoff, opens a new session and sends every unanswered message again,
/// in order, with new transaction numbers, before any newer one: at least
/// once, never lost while the writable lives. A receiver that had them
/// before it broke may store them twice (counted in resent(), at most
/// `window` a break).
///
/// A message answered with another code (`rsp 500 ...`): that message's
/// callback alone hears user_error("RELP: the receiver refused a message:
/// rsp CODE TEXT"), counted in refused() and dropped(); the stream goes on
/// (no 'error'), and the messages around it are delivered. What that means
/// for order: the receiver's log has a gap where the refused message was,
/// and a caller that writes it again gets it after the messages written
/// since (RELP has no way to put it back in its place). A receiver that
/// sends garbage (see relp_frame_reader) has its session closed and treated
/// as lost.
///
/// What it does not do (yet): keep messages past the life of the process.
/// What the stream holds, and the unanswered window, are in memory only:
/// a crash or a destroy() loses them (their callbacks, for destroy(), hear
/// ERR_STREAM_DESTROYED). Put it behind a spool_writable
/// (sluice/spool/spool_writable.h) to keep them on disk until answered.
///
/// end(): once every message is answered (the window too, reconnecting as
/// needed), sends `close`, waits for its answer, and closes the
/// connection; then the callback.
///
/// A typed handle (stream/typed_stream.h): the counters below are its
/// sink's, reached without a cast.
class relp_writable : public typed_writable<detail::relp_sink> {
 public:
  ~relp_writable();

  /// Messages the receiver answered with 200.
  std::size_t acked() const noexcept;
  /// Messages sent again on a new session (they were unanswered when the
  /// last one broke): the most the receiver may hold twice.
  std::size_t resent() const noexcept;
  /// Transactions sent on the current session and not yet answered.
  std::size_t in_flight() const noexcept;
  /// Messages whose callbacks said they were not delivered (give_up_after,
  /// a refusal, an error, destroy()).
  std::size_t dropped() const noexcept;
  /// Messages answered with a code other than 200.
  std::size_t refused() const noexcept;
  /// Whether `ec`, a write callback's error, is a refusal (the receiver
  /// answered that message other than 200): only that message failed, and
  /// the stream goes on. A relay answers its own sender with an error for
  /// it, where any other error (a give-up, destroy()) means the stream is
  /// gone.
  ///
  ///     out->write(msg, [](std::error_code ec) {
  ///       if (sluice::relp_writable::is_refusal(ec)) { /* dropped by the receiver */ }
  ///     });
  static bool is_refusal(std::error_code ec) noexcept;
  /// Sessions opened after the first.
  std::size_t reconnects() const noexcept;
  /// Sessions given up on because the receiver stopped answering.
  std::size_t answer_timeouts() const noexcept;
  /// Messages cut to max_message.
  std::size_t truncated() const noexcept;
  /// Whether a session is open now.
  bool connected() const noexcept;

 private:
  friend std::unique_ptr<relp_writable> make_relp_writable(const relp_options& options);
  friend std::unique_ptr<relp_writable> make_relp_writable(const relp_options& options, std::error_code& ec) noexcept;
  relp_writable(std::unique_ptr<detail::relp_sink> s, const relp_options& options);
  void destroy_io(std::error_code err, destroy_done done) noexcept override;

  std::size_t dropped_ = 0;
};

}  // namespace sluice
