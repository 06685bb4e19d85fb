// server: Node v20's tls.Server (tls.createServer): a net::server whose
// connections become tls::sockets once their handshake is done.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sluice/loop/emitter.h"
#include "sluice/net/server.h"
#include "sluice/tls/context.h"
#include "sluice/tls/socket.h"

namespace sluice::tls {

/// Node's tls.createServer() options.
struct server_options {
  /// The server's key and certificate (required), and with request_cert the
  /// CAs a client's certificate must chain to.
  context_options context{};
  /// Node's requestCert: ask each client for a certificate.
  bool request_cert = false;
  /// Node's rejectUnauthorized, with request_cert: a client without a
  /// certificate, or with one that does not verify, is cut off before
  /// anything it sent is delivered. False: it is let in with authorized()
  /// false and authorization_error() saying why.
  bool reject_unauthorized = true;
  /// Node's ALPNProtocols: the server's, in its order of preference. A client
  /// that offers none of them is refused (no_application_protocol), as in Node.
  std::vector<std::string> alpn_protocols;
  /// Node's handshakeTimeout (120 s): a client that has not finished its
  /// handshake by then is cut off ('tlsClientError', ERR_TLS_HANDSHAKE_TIMEOUT).
  /// A server open to the world wants it short (sluice-logd and
  /// sluice-fanout use 10 s): the handshake of an honest client takes a
  /// few round trips.
  std::chrono::milliseconds handshake_timeout{120000};
  /// sluice's own: the most connections in their handshake at once (or
  /// refused and being closed, see below). One more cuts off the oldest of
  /// them ('tlsClientError', ERR_SLUICE_TLS_TOO_MANY_HANDSHAKES), so that
  /// connections that never finish a handshake (bare TCP connects) cannot
  /// keep a client that does out: it is in as soon as its handshake is done,
  /// unless that many newer connections came meanwhile. Unset: as many as
  /// listener.max_connections, or no bound when that is unset too.
  std::optional<std::size_t> max_handshakes{};
  /// The plaintext side of each connection (high-water marks, max_buffered,
  /// allow_half_open) and its TCP socket's write deadline.
  net::socket_options connection{};
  /// The listener's own options (backlog, max_connections, a Unix socket's
  /// mode); its `connection` is made from the field above.
  ///
  /// Differs from Node, whose maxConnections counts every TCP connection:
  /// listener.max_connections counts the secure connections (handshake
  /// done) only, so that connections in their handshake, which anyone can
  /// open, never take the places of established clients (they are bounded
  /// by max_handshakes instead). A connection that arrives while that many
  /// are secure is closed at once, and one whose handshake ends while that
  /// many are is closed then, without 'secureConnection'; both are counted
  /// in dropped().
  net::server_options listener{};
};

/// Node's tls.Server. Events: 'listening', 'secureConnection' (event_arg's
/// source is the tls::socket*, its handshake done; on_secure_connection()
/// takes a socket&), 'tlsClientError' (a connection refused before it was
/// secure: error is the reason, source the tls::socket*), 'error', 'close'.
///
/// An 'error' with no 'error' listener (a port already taken, an accept
/// error) ends the program as net::server's does: "sluice: unhandled
/// 'error' event on tls::server: <message>" on stderr, exit status 1.
///
/// Differs from Node: a client refused because its certificate does not
/// verify (request_cert and reject_unauthorized) is refused in the handshake
/// with an alert and reported through 'tlsClientError' with the reason; Node
/// lets the handshake end and destroys it silently. A connection refused in
/// the handshake is closed gracefully (the alert, a FIN, then what the client
/// still sends dropped until its FIN, for at most 1 s) so that no RST
/// overtakes the alert; it counts in connections() and handshakes() until
/// then (and, as the oldest, may be cut off for a new connection).
///
///     sluice::tls::server srv({.context = {.key_file = "server.key", .cert_file = "server.crt"}});
///     srv.on_secure_connection([](sluice::tls::socket& s) { s.pipe(s); });  // echo
///     srv.listen(6514, "127.0.0.1");
///     sluice::loop::current().run();
///
/// The server owns the tls::sockets (as net::server its sockets): each is
/// deleted in the turn after its 'close'.
class server : public emitter {
 public:
  /// Throws sluice::stream_error when the key or certificate cannot be loaded.
  explicit server(const server_options& options);
  ~server();

  server& listen(std::uint16_t port, std::string_view host = "0.0.0.0");
  server& listen(std::string_view path);
  /// Node: server.listen({fd}): a stream socket already open (see
  /// net::server::listen(handle)).
  server& listen(net::handle h);
  /// Node: server.close(): stops accepting; 'close' once every connection closed.
  server& close();

  template <class F>
  listener_id on_secure_connection(F&& f) {
    static_assert(std::is_invocable_v<std::decay_t<F>&, socket&>, "on_secure_connection takes a tls::socket&");
    return on(event::secure_connection, [g = std::decay_t<F>(std::forward<F>(f))](const event_arg& a) mutable {
      g(*static_cast<socket*>(a.source));
    });
  }

  std::optional<net::address_info> address() const { return tcp_.address(); }
  bool listening() const noexcept { return tcp_.listening(); }
  /// The connections not yet closed, secure or not.
  std::size_t connections() const noexcept { return sockets_.size(); }
  /// sluice's own: the connections in their handshake (or refused and
  /// being closed): what max_handshakes bounds.
  std::size_t handshakes() const noexcept { return handshaking_.size(); }
  /// sluice's own: connections refused before they were secure.
  std::size_t client_errors() const noexcept { return client_errors_; }
  /// sluice's own: connections closed because max_connections were secure
  /// (see server_options::listener), and handshakes cut off for newer ones
  /// (max_handshakes; these are client_errors() too).
  std::size_t dropped() const noexcept { return dropped_; }
  std::size_t displaced() const noexcept { return displaced_; }
  const std::shared_ptr<context>& secure_context() const noexcept { return context_; }
  net::server& tcp() noexcept { return tcp_; }
  loop& event_loop() const noexcept { return tcp_.event_loop(); }

 private:
  friend class socket;
  static net::server_options listener_options(const server_options& o);
  void on_tcp_connection(net::socket& s);
  void client_error(socket& s, std::error_code ec) noexcept;
  // The handshake of `s` is done: false when max_connections are secure
  // already (`s` is to be closed).
  bool admit(socket& s) noexcept;
  void displace(socket& s) noexcept;
  void secured(socket& s) noexcept;
  void closed(socket& s) noexcept;
  void forget(socket& s) noexcept;
  void emit_error(std::error_code ec) noexcept;

  // A connection and, until its handshake is done, its place among those
  // in their handshake.
  struct connection {
    std::unique_ptr<socket> owned;
    std::list<socket*>::iterator in_handshake;
    bool handshaking = true;
    bool secure = false;
  };

  server_options options_;
  std::shared_ptr<context> context_;
  std::vector<unsigned char> alpn_wire_;
  net::server tcp_;
  std::unordered_map<socket*, connection> sockets_;
  std::list<socket*> handshaking_;  // oldest first
  std::size_t secure_ = 0;          // secure, not yet closed
  std::size_t client_errors_ = 0;
  std::size_t dropped_ = 0;
  std::size_t displaced_ = 0;
  char tag_ = 0;
};

}  // namespace sluice::tls
