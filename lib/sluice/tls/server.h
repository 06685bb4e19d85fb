// server: Node v20's tls.Server (tls.createServer): a net::server whose
// connections become tls::sockets once their handshake is done.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sluice/emitter.h"
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
  std::chrono::milliseconds handshake_timeout{120000};
  /// The plaintext side of each connection (high-water marks, max_buffered,
  /// allow_half_open) and its TCP socket's write deadline.
  net::socket_options connection{};
  /// The listener's own options (backlog, max_connections, a Unix socket's
  /// mode); its `connection` is made from the field above.
  net::server_options listener{};
};

/// Node's tls.Server. Events: 'listening', 'secureConnection' (event_arg's
/// source is the tls::socket*, its handshake done; on_secure_connection()
/// takes a socket&), 'tlsClientError' (a connection refused before it was
/// secure: error is the reason, source the tls::socket*), 'error', 'close'.
///
/// Differs from Node: a client refused because its certificate does not
/// verify (request_cert and reject_unauthorized) is refused in the handshake
/// with an alert and reported through 'tlsClientError' with the reason; Node
/// lets the handshake end and destroys it silently. A connection refused in
/// the handshake is closed gracefully (the alert, a FIN, then what the client
/// still sends dropped until its FIN, for at most 1 s) so that no RST
/// overtakes the alert; it counts in connections() until then.
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
  /// sluice's own: connections refused before they were secure.
  std::size_t client_errors() const noexcept { return client_errors_; }
  const std::shared_ptr<context>& secure_context() const noexcept { return context_; }
  net::server& tcp() noexcept { return tcp_; }
  loop& event_loop() const noexcept { return tcp_.event_loop(); }

 private:
  friend class socket;
  static net::server_options listener_options(const server_options& o);
  void on_tcp_connection(net::socket& s);
  void client_error(socket& s, std::error_code ec) noexcept;
  void secured(socket& s) noexcept;
  void forget(socket& s) noexcept;

  server_options options_;
  std::shared_ptr<context> context_;
  std::vector<unsigned char> alpn_wire_;
  net::server tcp_;
  std::unordered_map<socket*, std::unique_ptr<socket>> sockets_;
  std::size_t client_errors_ = 0;
  char tag_ = 0;
};

/// Node: tls.createServer(options).
inline std::unique_ptr<server> create_server(const server_options& options) {
  return std::make_unique<server>(options);
}

}  // namespace sluice::tls
