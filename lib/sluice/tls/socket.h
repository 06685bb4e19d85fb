// socket: Node v20's tls.TLSSocket (lib/_tls_wrap.js): a duplex of plaintext
// over a net::socket that carries the TLS records.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/loop/emitter.h"
#include "sluice/net/socket.h"
#include "sluice/stream/duplex.h"
#include "sluice/tls/certificate.h"
#include "sluice/tls/context.h"

struct ssl_st;

namespace sluice::tls {

class server;
namespace detail {
class tls_sink;
class tls_source;
struct record_buffers;
}  // namespace detail

/// Node's tls.connect() options.
struct socket_options {
  /// The certificate to present (a client certificate), the CAs to trust
  /// (none: the system's store). Ignored when `secure_context` is set.
  context_options context{};
  /// Node's secureContext: one loaded context shared by many connections.
  std::shared_ptr<tls::context> secure_context{};
  /// Node's servername: sent as SNI and the name the server's certificate
  /// must carry. Empty: the host given to connect() (no SNI for an IP address,
  /// as in Node; the address must then be in the certificate's IP SANs).
  std::string servername;
  /// Node's rejectUnauthorized: a server whose certificate does not verify
  /// (or does not carry the name) is cut off with the reason; false lets the
  /// connection go on with authorized() false and authorization_error() set.
  bool reject_unauthorized = true;
  /// Node's ALPNProtocols, in preference order ("h2", "http/1.1", "syslog").
  std::vector<std::string> alpn_protocols;
  /// sluice's own for a client (Node has handshakeTimeout on the server
  /// only): the handshake must be done within this, or the socket is destroyed
  /// with ERR_TLS_HANDSHAKE_TIMEOUT. Zero: no limit.
  std::chrono::milliseconds handshake_timeout{0};
  /// The connection's options. The high-water marks, max_buffered and
  /// allow_half_open are the plaintext side's; the write deadline and
  /// read_chunk_size the TCP socket's (a deadline counts the records that
  /// wait for the kernel).
  net::socket_options socket{};
};

/// Node's tls.TLSSocket: what is written is encrypted into records for the
/// net::socket below, what that socket reads is decrypted and pushed.
/// Events: 'connect' (TCP is up), 'secureConnect' (a client's handshake is
/// done and, unless reject_unauthorized is false, the server verified),
/// 'secure' (the same on a server's side, before the server's
/// 'secureConnection'), 'data', 'end' (the peer's close_notify, or its FIN),
/// 'drain', 'finish', 'error', 'close'. Errors keep OpenSSL's reason and
/// Node's code (code_name()): "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
/// "CERT_HAS_EXPIRED", "ERR_TLS_CERT_ALTNAME_INVALID",
/// "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED", ECONNRESET.
///
///     auto s = sluice::tls::connect(6514, "127.0.0.1", {.context = {.ca_file = "ca.crt"}});
///     s->on(sluice::event::secure_connect, [&] { s->end("hello\n"); });
///     s->on(sluice::event::error, [](const sluice::event_arg& a) { fprintf(stderr, "%s\n", a.error.message().c_str()); });
///     sluice::loop::current().run();
///
/// Writes made before the handshake is done wait for it. What is written in
/// one turn of the loop goes into as few records as it fills (16 KiB each),
/// and those records to the kernel in one sendmsg(). write() returns false,
/// and 'drain' follows, while the records wait for a peer that reads slowly.
/// end() sends close_notify, then the FIN.
class socket : public duplex {
 public:
  /// A client over `tcp` (connected or connecting; the handshake starts at
  /// its 'connect'), which this socket then owns. `host` is the name the
  /// server is verified against when options.servername is empty.
  socket(std::unique_ptr<net::socket> tcp, std::string_view host, const socket_options& options = {});
  ~socket();

  /// Node: tlsSocket.authorized: the peer's certificate verified (and, for a
  /// client, carries the name).
  bool authorized() const noexcept { return authorized_; }
  /// Node: tlsSocket.authorizationError: why not, or none.
  std::error_code authorization_error() const noexcept { return authorization_error_; }
  /// Node: getPeerCertificate(): nothing when the peer sent none (or before
  /// the handshake).
  std::optional<certificate> peer_certificate() const;
  /// Node: tlsSocket.servername: the SNI name a client sent (a server's
  /// side), or the one this client sent.
  std::string servername() const;
  /// Node: tlsSocket.alpnProtocol: the protocol agreed, or empty (Node: false).
  std::string alpn_protocol() const;
  /// Node: getProtocol(): "TLSv1.3", "TLSv1.2"; empty before the handshake.
  std::string protocol() const;
  /// Node: getCipher().name (OpenSSL's name: "TLS_AES_256_GCM_SHA384").
  std::string cipher() const;
  /// Node: tlsSocket.encrypted, always true.
  bool encrypted() const noexcept { return true; }

  /// The TCP socket below: its addresses, counters (write_syscalls()), timeouts.
  net::socket& tcp() noexcept { return *tcp_; }
  const net::socket& tcp() const noexcept { return *tcp_; }
  /// sluice's own: the TLS records this socket has written (the records a
  /// turn's writes made: see the class comment).
  std::size_t records_written() const noexcept;

  /// OpenSSL's SSL, for what this class does not offer.
  ssl_st* native() const noexcept { return ssl_; }

 private:
  friend class detail::tls_sink;
  friend class detail::tls_source;
  friend class server;

  struct server_side {};
  // A server's side over `tcp`, which `srv`'s net::server owns.
  socket(server_side, net::socket& tcp, server& srv);
  socket(std::unique_ptr<net::socket>&& owned, net::socket& tcp, const socket_options& options, bool is_server);
  static socket_options server_side_options(const server& srv);
  void init_client(std::string_view host, const socket_options& options);
  void watch_tcp();
  void start_handshake() noexcept;
  // Feeds ciphertext read by the TCP socket to OpenSSL and moves things on.
  void on_tcp_data(std::string_view chunk) noexcept;
  void on_tcp_end() noexcept;
  void on_tcp_close(std::error_code err) noexcept;
  // Runs the handshake, or decrypts what arrived while the readable wants it.
  void cycle() noexcept;
  void handshake_done() noexcept;
  std::error_code verify_peer() const noexcept;
  // Moves the records OpenSSL made to the TCP socket; false when it is full.
  bool flush_records() noexcept;
  void fail(std::error_code ec) noexcept;
  // A server's side refusing a client in the handshake: the alert, then a
  // graceful close (see socket.cc).
  void refuse() noexcept;
  // A client's TCP socket is closing after a reset: reads the peer's last
  // records from the kernel's buffer (see socket.cc).
  void read_last_words(int fd, std::error_code err) noexcept;
  static bool is_reset(std::error_code ec) noexcept;
  void arm_handshake_timeout(std::chrono::milliseconds ms);
  void cancel_handshake_timer() noexcept;
  const void* tag() const noexcept { return &tag_; }

  std::unique_ptr<net::socket> owned_;  // a client's TCP socket
  net::socket* tcp_;
  server* server_ = nullptr;            // a server's side: the tls::server
  std::shared_ptr<context> context_;
  ssl_st* ssl_ = nullptr;
  detail::tls_sink* sink_ = nullptr;
  detail::tls_source* source_ = nullptr;
  std::string host_;  // the name the peer must carry (a client)
  bool is_server_ = false;
  bool reject_unauthorized_ = true;
  bool request_cert_ = false;
  bool secure_ = false;
  bool authorized_ = false;
  bool tcp_ended_ = false;
  bool tcp_gone_ = false;
  bool in_cycle_ = false;
  bool refusing_ = false;  // a server's side: alert sent, waiting for the peer's FIN
  char tag_ = 0;
  std::error_code authorization_error_;
  std::error_code peer_alert_;  // the peer's alert, read after a reset
  std::vector<unsigned char> alpn_wire_;  // a server's ALPN list, in wire form
  std::chrono::milliseconds handshake_timeout_{0};
  timer_id handshake_timer_ = 0;
  std::unique_ptr<detail::record_buffers> records_;  // the ciphertext both ways (tls/detail/record_bio.h)
  listener_id tcp_listeners_[8] = {};
};

/// Node: tls.connect(port, host, options): a TCP connection and its TLS
/// handshake. `host` is an IP address or "localhost" (see net::connect).
std::unique_ptr<socket> connect(std::uint16_t port, std::string_view host = "localhost",
                                const socket_options& options = {});

}  // namespace sluice::tls
