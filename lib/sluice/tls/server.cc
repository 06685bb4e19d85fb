// Node's tls.Server (lib/_tls_wrap.js): tlsConnectionListener makes a
// TLSSocket of each connection; 'secureConnection' once it is secure,
// 'tlsClientError' when it fails before.
#include "sluice/tls/server.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "sluice/errors.h"

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
  l.connection.writable = {};
  l.connection.readable_high_water_mark.reset();
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
  tcp_.on(event::error, [this](const event_arg& a) { emit(event::error, a); });
  tcp_.on(event::close, [this] { emit(event::close); });
}

server::~server() {
  event_loop().cancel(&tag_);
  // The tls sockets go first: they let go of the TCP sockets tcp_ owns.
  sockets_.clear();
}

server& server::listen(std::uint16_t port, std::string_view host) {
  tcp_.listen(port, host);
  return *this;
}

server& server::listen(std::string_view path) {
  tcp_.listen(path);
  return *this;
}

server& server::close() {
  tcp_.close();
  return *this;
}

// Node: tlsConnectionListener(): a TLSSocket over the raw socket, which
// waits for the ClientHello.
void server::on_tcp_connection(net::socket& s) {
  auto tls = std::unique_ptr<socket>(new socket(socket::server_side{}, s, *this));
  socket* raw = tls.get();
  sockets_.emplace(raw, std::move(tls));
  raw->on(event::close, [this, raw] {
    event_loop().set_immediate([this, raw] { forget(*raw); }, &tag_);
  });
}

void server::client_error(socket& s, std::error_code ec) noexcept {
  ++client_errors_;
  event_arg a;
  a.error = ec;
  a.source = &s;
  emit(event::tls_client_error, a);
}

void server::secured(socket& s) noexcept {
  event_arg a;
  a.source = &s;
  emit(event::secure_connection, a);
}

void server::forget(socket& s) noexcept { sockets_.erase(&s); }

}  // namespace sluice::tls
