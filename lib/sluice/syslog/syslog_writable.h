// syslog_writable: a writable whose chunks are syslog messages, sent as RFC
// 5424 over TCP or a Unix stream socket (a net::socket), reconnecting while
// the receiver is away.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "sluice/stream/typed_stream.h"
#include "sluice/syslog/syslog_format.h"

namespace sluice {

class duplex;
namespace net {
class socket;
}
namespace detail {
class syslog_sink;
}
class syslog_writable;

struct syslog_options {
  /// The receiver: a TCP host (a name, looked up at every connection, or an
  /// IP literal) and port, or, when `unix_path` is set, a Unix stream socket.
  std::string host = "127.0.0.1";
  std::uint16_t port = 514;
  std::string unix_path;
  syslog_framing framing = syslog_framing::octet_counting;
  /// PRI (facility, severity), HOSTNAME, APP-NAME, PROCID and MSGID.
  syslog_header header{};
  /// After a failed connect or a lost connection, the next attempt waits
  /// reconnect_min, then twice as long each time, up to reconnect_max. A
  /// connection resets it.
  std::chrono::milliseconds reconnect_min{100};
  std::chrono::milliseconds reconnect_max{5000};
  /// The bound on waiting: a message that has waited this long for a
  /// connection fails, with the last connection error (ECONNREFUSED, ...):
  /// its callback, and those of every message after it, say so, they are
  /// counted in dropped(), and the stream is destroyed with that error.
  /// Unset (the default): messages wait as long as it takes, and the
  /// producer is held back by write() returning false (see below).
  std::optional<std::chrono::milliseconds> give_up_after{};
  /// The longest message, header included, as a receiver counts it (octet
  /// counting's LEN; sluice-logd's and rsyslog's maximum message size): a
  /// longer message is sent cut to fit, at a UTF-8 character boundary, and
  /// counted in truncated(). 0 (the default): no limit.
  std::size_t max_message = 0;
  /// Called when the receiver closed or reset a connection (or a write on it
  /// failed) while messages written on it were not known to have arrived:
  /// `at_risk` of them (see maybe_lost()), `ec` the error, empty for the
  /// receiver's FIN. The writable reconnects and goes on, as before.
  std::function<void(std::error_code ec, std::size_t at_risk)> on_connection_lost{};
  /// Set: each connection's socket, connecting, is handed to it, and the
  /// messages go to the stream it returns over that socket (a TLS client:
  /// tls::use_tls() sets it, for RFC 5425); a connection is up at that
  /// stream's 'secureConnect'. See "Over TLS" below for what a break can lose.
  std::function<std::unique_ptr<duplex>(std::unique_ptr<net::socket>)> wrap{};
  /// Whether `ec`, the error a connection ended with, is one no reconnect
  /// would mend (a receiver's certificate that does not verify): then the
  /// stream is destroyed with it, every message not sent failing with it,
  /// instead of trying again. Unset: every error is retried.
  std::function<bool(std::error_code ec)> fatal_error{};
  /// The stream's options. Chunks are messages: the stream is in object
  /// mode, and the high-water mark counts messages (1024 unless set).
  writable_options stream{};
};

/// A new syslog_writable (see below). Throws stream_error (EINVAL) for a
/// header it cannot format: a facility past 23, a severity past 7.
std::unique_ptr<syslog_writable> make_syslog_writable(const syslog_options& options = {});
/// The non-throwing twin: null, and `ec` says why.
std::unique_ptr<syslog_writable> make_syslog_writable(const syslog_options& options, std::error_code& ec) noexcept;

/// A writable that sends each chunk as one RFC 5424 message:
/// "<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG", TIMESTAMP in UTC
/// with microseconds, framed by octet counting ("LEN SP MSG", RFC 6587) or by
/// LF. It connects at once, and the caller's thread never waits for the
/// network: the socket is non-blocking and every step runs on the loop.
///
///     auto log = sluice::make_syslog_writable({.port = 6514, .header = {.app_name = "api"}});
///     if (!log->write("user 42 logged in")) log->once(sluice::event::drain, [&] { go_on(); });
///     log->end([](std::error_code ec) { ... });  // every message sent, or ec says why not
///     sluice::loop::current().run();
///
/// Unreachable receiver (refused, reset, closed by the peer): the writable
/// reconnects with capped exponential backoff (reconnect_min ..
/// reconnect_max). Meanwhile messages wait in the stream: past the
/// high-water mark write() returns false, and 'drain' comes once they are
/// sent on the new connection. That is the policy: the producer is held back
/// by backpressure, nothing is dropped, unless give_up_after is set, which
/// bounds the wait (see syslog_options). Memory is bounded only if the
/// producer honours write() == false (or writable_options::max_buffered caps
/// the stream, where the library has it).
///
/// A write's callback succeeds once its message is in the kernel's socket
/// buffer. That is not delivery: plain TCP has a loss window. When a
/// connection breaks, what sat in our socket's send buffer, in flight, and in
/// the receiver's receive buffer (not yet read by it) is lost, and no error
/// says which messages: at most about SO_SNDBUF + the peer's SO_RCVBUF bytes
/// (a few hundred KiB on Linux loopback) of messages whose callbacks said
/// success. A message the kernel had not fully taken when the connection
/// broke is sent again, whole, on the next connection (the receiver drops the
/// torn frame). Messages are stamped when the writable frames them, which is
/// when they are written while connected, but the reconnection's time for
/// messages that waited for one.
///
/// What it can tell of that loss: the messages written on a connection since
/// its last quiet moment are "at risk" (a quiet moment: nothing written for
/// quiet_time, and the socket's send queue empty, SIOCOUTQ 0: every byte
/// acknowledged by the receiver's host over TCP, read by the receiver over a
/// Unix socket). A connection that the receiver closes (its FIN before our
/// end()) or resets (ECONNRESET, EPIPE: at any time, during end() too) turns
/// its messages at risk into maybe_lost(), and on_connection_lost says so.
/// For TCP that is an upper bound only for a receiver that reads what its
/// host acknowledged before it closes (one that keeps bytes read but not yet
/// written somewhere can lose more); a receiver that reads every byte and
/// our FIN and then closes looks like success. Only acknowledgements from
/// the receiver itself (RELP) know more.
///
/// Over TLS (syslog_options::wrap): a write's callback succeeds once its
/// message's records are handed to the TCP socket below (in its buffer, below
/// its high-water mark, or in the kernel's), so the loss window is that much
/// larger; a connection is quiet once the TCP socket's own buffer is empty
/// too. The bytes the kernel took are records, not messages: a batch whose
/// write fails is sent again whole on the next connection, so the receiver
/// may hold the messages of that batch that got through twice (a batch: what
/// the stream held when its write began; about the high-water mark for a
/// producer that honours write() == false). With
/// TLS 1.3 the handshake is done for the client before the receiver has
/// checked the client's certificate: a receiver that then refuses it closes
/// the connection after the first batch was written, which counts as a
/// break (and, by fatal_error, as no reason to retry).
///
/// end(): the callback comes once every message is in the kernel and the
/// connection is closed (FIN); or with the error that stopped it, each
/// unsent message's callback then saying why (ERR_STREAM_DESTROYED for
/// messages still queued).
///
/// A typed handle (stream/typed_stream.h): the counters below are its
/// sink's, reached without a cast.
class syslog_writable : public typed_writable<detail::syslog_sink> {
 public:
  ~syslog_writable();

  /// Messages handed to the kernel on some connection (callbacks that said
  /// success).
  std::size_t sent() const noexcept;
  /// Messages whose callbacks said they were not sent (give_up_after, an
  /// error, destroy()).
  std::size_t dropped() const noexcept;
  /// Connections made after the first.
  std::size_t reconnects() const noexcept;
  /// Whether a connection is up now.
  bool connected() const noexcept;
  /// Messages sent (counted in sent()) on connections the receiver closed or
  /// reset while they were at risk: they may be lost (see above).
  std::size_t maybe_lost() const noexcept;
  /// Connections lost with messages at risk.
  std::size_t connections_lost() const noexcept;
  /// Messages cut to max_message.
  std::size_t truncated() const noexcept;
  /// A connection is quiet once nothing was written on it for this long
  /// and its send queue is empty.
  static constexpr std::chrono::milliseconds quiet_time{1000};

 private:
  friend std::unique_ptr<syslog_writable> make_syslog_writable(const syslog_options& options);
  friend std::unique_ptr<syslog_writable> make_syslog_writable(const syslog_options& options,
                                                               std::error_code& ec) noexcept;
  syslog_writable(std::unique_ptr<detail::syslog_sink> s, const syslog_options& options);
  void destroy_io(std::error_code err, destroy_done done) noexcept override;

  std::size_t dropped_ = 0;
};

}  // namespace sluice
