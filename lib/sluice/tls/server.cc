// Node's tls.Server (lib/_tls_wrap.js): tlsConnectionListener makes a
// TLSSocket of each connection; 'secureConnection' once it is secure,
// 'tlsClientError' when it fails before.
#include "sluice/tls/server.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <limits>

#include "sluice/base/errors.h"

namespace sluice::tls {
namespace {

// Node's SelectALPNCallback: the server's preference among the client's
// offers; none in common is a fatal no_application_protocol alert.
int select_alpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
  const auto* mine = static_cast<const std::vector<unsigned char>*>(arg);
  unsigned char* chosen = nullptr;
  const int r = SSL_select_next_proto(&chosen, outlen, mine->data(), static_cast<unsigned>(mine->size()), in, inlen);
  if (r != OPENSSL_NPN_NEGOTIATED) return SSL_TLSEXT_ERR_ALERT_FATAL;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// The chain is verified to its end (accept_for_now in socket.cc keeps it
// going), so that the reason is the one Node reports ("unable to verify the
// first certificate"), and then a chain with an error fails the handshake:
// OpenSSL sends the client the alert for it (unknown CA, bad certificate).
int verify_then_refuse(X509_STORE_CTX* ctx, void* /*arg*/) {
  X509_verify_cert(ctx);
  return X509_STORE_CTX_get_error(ctx) == X509_V_OK ? 1 : 0;
}

}  // namespace

net::server_options server::listener_options(const server_options& o) {
  net::server_options l = o.listener;
  l.connection = o.connection;
  // As a client's: the plaintext side decides when TCP ends, and caps.
  l.connection.allow_half_open = true;
  l.connection.coalesce = false;
  l.connection.writable = {};
  l.connection.readable_high_water_mark.reset();
  // Counted here, secure connections apart from handshakes (server.h).
  l.max_connections.reset();
  return l;
}

server::server(const server_options& options)
    : options_(options), context_(context::make(options.context, true)), tcp_(listener_options(options)) {
  for (const std::string& p : options_.alpn_protocols) {
    if (p.empty() || p.size() > 255) continue;
    alpn_wire_.push_back(static_cast<unsigned char>(p.size()));
    alpn_wire_.insert(alpn_wire_.end(), p.begin(), p.end());
  }
  if (!alpn_wire_.empty()) SSL_CTX_set_alpn_select_cb(context_->native(), select_alpn, &alpn_wire_);
  // Differs from Node, which lets the handshake finish and then destroys the
  // socket: a client whose certificate does not verify is refused in the
  // handshake, so that it is told why by an alert, where Node's client gets
  // only a closed connection (in TLS 1.3, after its own handshake is done).
  if (options_.request_cert && options_.reject_unauthorized)
    SSL_CTX_set_cert_verify_callback(context_->native(), verify_then_refuse, nullptr);
  tcp_.on_connection([this](net::socket& s) { on_tcp_connection(s); });
  tcp_.on(event::listening, [this] { emit(event::listening); });
  tcp_.on(event::error, [this](const event_arg& a) { emit_error(a.error); });
  tcp_.on(event::close, [this] { emit(event::close); });
}

server::~server() {
  event_loop().cancel(&tag_);
  // The tls sockets go first: they let go of the TCP sockets tcp_ owns.
  handshaking_.clear();
  sockets_.clear();
}

// As net::server's (Node's uncaught 'error'): a server nobody hears fail
// must not look like one that serves.
void server::emit_error(std::error_code ec) noexcept {
  if (listener_count(event::error) == 0) sluice::detail::unhandled_server_error("tls::server", ec);
  event_arg a;
  a.error = ec;
  emit(event::error, a);
}

server& server::listen(std::uint16_t port, std::string_view host) {
  tcp_.listen(port, host);
  return *this;
}

server& server::listen(std::string_view path) {
  tcp_.listen(path);
  return *this;
}

server& server::listen(net::handle h) {
  tcp_.listen(h);
  return *this;
}

server& server::close() {
  tcp_.close();
  return *this;
}

// Node: tlsConnectionListener(): a TLSSocket over the raw socket, which
// waits for the ClientHello. Differs from Node: the limits of server.h,
// max_connections on the secure ones, max_handshakes on the others, the
// oldest of which makes room for the newest. Anyone can open connections
// that never send a ClientHello; each is then held for at most
// handshake_timeout, or until max_handshakes newer ones came, and never
// keeps out a client whose handshake is done.
void server::on_tcp_connection(net::socket& s) {
  const std::optional<std::size_t>& max = options_.listener.max_connections;
  if (max && secure_ >= *max) {
    ++dropped_;
    s.destroy();
    return;
  }
  const std::optional<std::size_t>& bound = options_.max_handshakes ? options_.max_handshakes : max;
  const std::size_t most = bound ? std::max<std::size_t>(*bound, 1) : std::numeric_limits<std::size_t>::max();
  while (handshaking_.size() >= most) displace(*handshaking_.front());
  auto tls = std::unique_ptr<socket>(new socket(socket::server_side{}, s, *this));
  socket* raw = tls.get();
  connection& c = sockets_[raw];
  c.owned = std::move(tls);
  c.in_handshake = handshaking_.insert(handshaking_.end(), raw);
  raw->on(event::close, [this, raw] {
    closed(*raw);
    event_loop().set_immediate([this, raw] { forget(*raw); }, &tag_);
  });
}

// The oldest connection in its handshake makes room: cut off now (no
// graceful close, which would keep it a while longer), and reported as a
// refused client unless it was one already (being closed after an alert).
void server::displace(socket& s) noexcept {
  connection& c = sockets_.at(&s);
  handshaking_.erase(c.in_handshake);
  c.handshaking = false;
  ++displaced_;
  if (!s.refusing_) client_error(s, make_error_code(errc::tls_too_many_handshakes));
  s.destroy();
}

void server::client_error(socket& s, std::error_code ec) noexcept {
  ++client_errors_;
  event_arg a;
  a.error = ec;
  a.source = &s;
  emit(event::tls_client_error, a);
}

bool server::admit(socket& s) noexcept {
  const auto it = sockets_.find(&s);
  if (it == sockets_.end()) return true;
  connection& c = it->second;
  if (c.handshaking) {
    handshaking_.erase(c.in_handshake);
    c.handshaking = false;
  }
  const std::optional<std::size_t>& max = options_.listener.max_connections;
  if (max && secure_ >= *max) {
    ++dropped_;
    return false;
  }
  c.secure = true;
  ++secure_;
  return true;
}

void server::closed(socket& s) noexcept {
  const auto it = sockets_.find(&s);
  if (it == sockets_.end()) return;
  connection& c = it->second;
  if (c.handshaking) handshaking_.erase(c.in_handshake);
  if (c.secure) --secure_;
  c.handshaking = c.secure = false;
}

void server::secured(socket& s) noexcept {
  event_arg a;
  a.source = &s;
  emit(event::secure_connection, a);
}

void server::forget(socket& s) noexcept { sockets_.erase(&s); }

}  // namespace sluice::tls
