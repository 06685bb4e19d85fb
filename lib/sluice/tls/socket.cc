// Node's TLSSocket (lib/_tls_wrap.js) over a BIO of its own
// (tls/detail/record_bio.h): the TCP socket's 'data' goes into OpenSSL, the
// records OpenSSL makes go to the TCP socket's write(), so both layers keep
// Node's backpressure and the TCP socket keeps its write deadline and its one
// sendmsg() per turn. Its writable side (_write, _writev, _final) is
// detail/tls_sink.cc, its readable side detail/tls_source.cc, and the peer's
// certificate as Node's strings detail/certificate_of.cc.
#include "sluice/tls/socket.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "sluice/base/errors.h"
#include "sluice/tls/detail/certificate_of.h"
#include "sluice/tls/detail/record_bio.h"
#include "sluice/tls/detail/tls_sink.h"
#include "sluice/tls/detail/tls_source.h"
#include "sluice/tls/server.h"
#include "sluice/tls/tls_error.h"

namespace sluice::tls {

namespace {

// A TCP write of up to this is copied into the writable's arena
// (byte_arena::max_chunk); a larger one is kept as the string it is.
constexpr std::size_t small_records = 4096;

readable_options plain_readable(const net::socket_options& o, loop& l) {
  readable_options r;
  r.high_water_mark = o.readable_high_water_mark;
  r.event_loop = &l;
  return r;
}
writable_options plain_writable(const net::socket_options& o, loop& l) {
  writable_options w = o.writable;
  w.event_loop = &l;
  w.object_mode = false;
  return w;
}

// The TCP socket under a TLS one: half-open, because the plaintext side
// decides when to end (after close_notify); no max_buffered, because a
// record refused there would break the TLS stream (the cap is the
// plaintext side's); no coalescing, because the plaintext side's writes
// of a turn come as one batch of records already (see
// net::socket_options::coalesce).
net::socket_options tcp_options(net::socket_options o) {
  o.allow_half_open = true;
  o.coalesce = false;
  o.writable = {};
  o.readable_high_water_mark.reset();
  return o;
}

bool is_ip(std::string_view host) {
  const std::string h(host);
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

std::vector<unsigned char> alpn_wire(const std::vector<std::string>& protocols) {
  std::vector<unsigned char> w;
  for (const std::string& p : protocols) {
    if (p.empty() || p.size() > 255) continue;
    w.push_back(static_cast<unsigned char>(p.size()));
    w.insert(w.end(), p.begin(), p.end());
  }
  return w;
}

// OpenSSL's error queue is per thread and must be empty before a call
// whose SSL_get_error() is asked. Clearing it walks all its slots: only
// when something is there (another socket's failure is taken whole, so it
// seldom is).
void clear_errors() noexcept {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

// The SSL of one connection over `records`: read-ahead, so that a record
// comes from the BIO in one read, not its header and then its body.
void set_record_bio(SSL* ssl, detail::record_buffers& records) {
  BIO* bio = detail::make_record_bio(records);
  SSL_set_bio(ssl, bio, bio);  // one BIO both ways: one reference
  SSL_set_read_ahead(ssl, 1);
}

// Node's verify callback (crypto_tls.cc): accept here, judge after the
// handshake, so that authorized and authorizationError can be told.
int accept_for_now(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }
}  // namespace

socket_options socket::server_side_options(const server& srv) {
  socket_options o;
  o.socket = srv.options_.connection;
  return o;
}

socket::socket(std::unique_ptr<net::socket>&& owned, net::socket& tcp, const socket_options& options, bool is_server)
    : duplex(std::make_unique<detail::tls_source>(*this), std::make_unique<detail::tls_sink>(*this),
             plain_readable(options.socket, tcp.event_loop()), plain_writable(options.socket, tcp.event_loop()),
             options.socket.allow_half_open),
      owned_(std::move(owned)),
      tcp_(&tcp),
      is_server_(is_server),
      records_(std::make_unique<detail::record_buffers>()) {
  sink_ = static_cast<detail::tls_sink*>(&get_sink());
  source_ = static_cast<detail::tls_source*>(&get_source());
  reject_unauthorized_ = options.reject_unauthorized;
  handshake_timeout_ = options.handshake_timeout;
}

socket::socket(std::unique_ptr<net::socket> tcp, std::string_view host, const socket_options& options)
    : socket(std::move(tcp), *tcp, options, false) {
  init_client(host, options);
}

void socket::init_client(std::string_view host, const socket_options& options) {
  context_ = options.secure_context;
  std::error_code ec;
  if (!context_) context_ = context::make(options.context, false, ec);
  if (ec) {
    // Node throws from tls.connect() here; a socket made with a bad context
    // reports it as its error instead, on the next tick.
    tcp_->destroy();
    destroy(ec);
    return;
  }
  ssl_ = SSL_new(context_->native());
  SSL_set_connect_state(ssl_);
  // Node's client: the handshake never fails on the server's certificate;
  // its verification runs to the end (so that the last error is the one
  // reported, "unable to verify the first certificate") and is judged after.
  SSL_set_verify(ssl_, SSL_VERIFY_NONE, accept_for_now);
  set_record_bio(ssl_, *records_);
  host_ = options.servername.empty() ? std::string(host) : options.servername;
  // Node: SNI for a name, not for an IP address.
  if (!host_.empty() && !is_ip(host_)) SSL_set_tlsext_host_name(ssl_, host_.c_str());
  if (!options.alpn_protocols.empty()) {
    const auto w = alpn_wire(options.alpn_protocols);
    SSL_set_alpn_protos(ssl_, w.data(), static_cast<unsigned>(w.size()));
  }
  watch_tcp();
  if (handshake_timeout_.count() > 0) arm_handshake_timeout(handshake_timeout_);
  if (!tcp_->connecting() && tcp_->fd() >= 0)
    event_loop().next_tick([this] { start_handshake(); }, tag());
}

socket::socket(server_side, net::socket& tcp, server& srv)
    : socket(nullptr, tcp, server_side_options(srv), true) {
  server_ = &srv;
  context_ = srv.context_;
  reject_unauthorized_ = srv.options_.reject_unauthorized;
  request_cert_ = srv.options_.request_cert;
  ssl_ = SSL_new(context_->native());
  SSL_set_accept_state(ssl_);
  set_record_bio(ssl_, *records_);
  if (request_cert_) {
    // Node: requestCert asks; rejectUnauthorized also refuses a client that
    // sends none, in the handshake.
    // With rejectUnauthorized the server's context also refuses, in the
    // handshake, a certificate that does not verify (server.cc).
    int mode = SSL_VERIFY_PEER;
    if (reject_unauthorized_) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_set_verify(ssl_, mode, accept_for_now);
  }
  watch_tcp();
  if (srv.options_.handshake_timeout.count() > 0) arm_handshake_timeout(srv.options_.handshake_timeout);
}

socket::~socket() {
  event_loop().cancel(tag());
  sink_->detach();
  source_->detach();
  if (!tcp_gone_) {
    tcp_->before_error_close(nullptr);
    static constexpr event evs[] = {event::data,  event::end,   event::drain,   event::finish,
                                    event::error, event::close, event::connect, event::timeout};
    for (int i = 0; i < 8; ++i)
      if (tcp_listeners_[i]) tcp_->off(evs[i], tcp_listeners_[i]);
    if (!tcp_->destroyed()) tcp_->destroy();
  }
  if (ssl_) SSL_free(ssl_);
}

void socket::watch_tcp() {
  net::socket& t = *tcp_;
  tcp_listeners_[0] = t.on(event::data, [this](std::string_view c) { on_tcp_data(c); });
  tcp_listeners_[1] = t.on(event::end, [this] { on_tcp_end(); });
  tcp_listeners_[2] = t.on(event::drain, [this] { sink_->on_tcp_drain(); });
  tcp_listeners_[3] = t.on(event::finish, [this] { sink_->on_tcp_finish(); });
  tcp_listeners_[4] = t.on(event::error, [this](const event_arg& a) { fail(a.error); });
  tcp_listeners_[5] = t.on(event::close, [this](const event_arg& a) { on_tcp_close(a.error); });
  if (!is_server_) {
    t.before_error_close([this](int fd, std::error_code err) { read_last_words(fd, err); });
    tcp_listeners_[6] = t.on(event::connect, [this] {
      emit(event::connect);
      start_handshake();
    });
  }
  // The order of evs[] in ~socket().
  tcp_listeners_[7] = t.on(event::timeout, [this] { emit(event::timeout); });
}

void socket::arm_handshake_timeout(std::chrono::milliseconds ms) {
  handshake_timer_ = event_loop().set_timeout(ms, [this] {
    handshake_timer_ = 0;
    if (!secure_) fail(make_error_code(errc::tls_handshake_timeout));
  }, tag());
}

void socket::cancel_handshake_timer() noexcept {
  if (handshake_timer_) event_loop().clear_timeout(handshake_timer_);
  handshake_timer_ = 0;
}

// A client's ClientHello, once TCP is up.
void socket::start_handshake() noexcept {
  if (writable::destroyed() || secure_) return;
  cycle();
}

// The chunk is read by OpenSSL where it lies; only what it leaves (a
// reader that wants no more) is copied.
void socket::on_tcp_data(std::string_view chunk) noexcept {
  if (refusing_) return;  // what a refused client still sends is dropped
  if (!ssl_ || writable::destroyed()) return;
  records_->feed(chunk);
  cycle();
  records_->keep_unread();
}

std::size_t socket::records_written() const noexcept { return records_->records; }

void socket::on_tcp_end() noexcept {
  tcp_ended_ = true;
  if (writable::destroyed()) return;
  if (refusing_) {
    destroy();  // the refused client has closed: nothing unread, no RST
    return;
  }
  if (!secure_) {
    // Node: "Client network socket disconnected before secure TLS
    // connection was established", code ECONNRESET.
    fail(std::error_code(ECONNRESET, std::system_category()));
    return;
  }
  cycle();
}

// The TCP socket is closed (and, on a server, about to be deleted): never
// touch it again.
void socket::on_tcp_close(std::error_code err) noexcept {
  tcp_gone_ = true;
  for (listener_id& id : tcp_listeners_) id = 0;
  if (writable::destroyed() && readable::destroyed()) return;
  if (!secure_ && !err) err = std::error_code(ECONNRESET, std::system_category());
  fail(err);
}

// Node: TLSWrap's ClearOut/EncOut: the handshake while it lasts, then
// decryption for as long as the readable wants data.
void socket::cycle() noexcept {
  if (in_cycle_ || !ssl_) return;
  in_cycle_ = true;
  if (!secure_) {
    clear_errors();
    const int r = SSL_do_handshake(ssl_);
    if (r != 1) {
      const int e = SSL_get_error(ssl_, r);
      std::error_code ec = e == SSL_ERROR_WANT_READ ? std::error_code{}
                                                    : take_openssl_error(std::error_code(EPROTO, std::system_category()));
      // A server that refused the client's certificate: the verification's
      // reason ("unable to get local issuer certificate"), not OpenSSL's
      // "certificate verify failed".
      if (ec && is_server_ && SSL_get_verify_result(ssl_) != X509_V_OK)
        ec = make_verify_error(SSL_get_verify_result(ssl_));
      flush_records();  // the alert, if any, goes out before the FIN
      in_cycle_ = false;
      if (ec) fail(ec);
      return;
    }
    flush_records();
    in_cycle_ = false;
    handshake_done();
    if (readable::destroyed()) return;
    in_cycle_ = true;
  }
  char buf[64 * 1024];
  bool cleared = false;  // the error queue, before the first SSL_read()
  while (source_->wanted() && !readable::destroyed()) {
    std::size_t got = 0;
    int e = SSL_ERROR_NONE;
    while (got + 16 * 1024 <= sizeof buf) {
      // Nothing read and nothing held: SSL_read() would only say so (the
      // reader's read() after each push comes here with nothing).
      if (records_->in_empty() && !SSL_has_pending(ssl_)) {
        e = SSL_ERROR_WANT_READ;
        break;
      }
      if (!cleared) {
        clear_errors();
        cleared = true;
      }
      const int n = SSL_read(ssl_, buf + got, static_cast<int>(sizeof buf - got));
      if (n <= 0) {
        e = SSL_get_error(ssl_, n);
        break;
      }
      got += static_cast<std::size_t>(n);
    }
    const bool more = got == 0 || source_->give(std::string_view(buf, got));
    if (readable::destroyed()) break;
    // What SSL_read() said after the plaintext is acted on even when the
    // readable wants no more for now (it is paused, or full): OpenSSL has
    // consumed it and says it once, and a later cycle would find nothing
    // left to read. The end goes in after the plaintext (the readable
    // delivers its buffered bytes first, then 'end'). Breaking out on a full
    // readable here used to drop the close_notify: a peer that waits for
    // ours without closing TCP (Python's unwrap()) sent nothing more to wake
    // us, and both sides waited for ever.
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_WANT_READ && tcp_ended_)) {
      source_->give_eof();  // the peer's close_notify, or its FIN without one
      break;
    }
    if (e == SSL_ERROR_WANT_READ) break;
    if (e == SSL_ERROR_NONE) {
      if (more) continue;
      break;  // a full buffer: the readable's next read() goes on from here
    }
    const std::error_code ec = take_openssl_error(std::error_code(EPROTO, std::system_category()));
    in_cycle_ = false;
    fail(ec);
    return;
  }
  in_cycle_ = false;
  if (readable::destroyed() || tcp_gone_) return;
  flush_records();  // what reading made (TLS 1.3 tickets, key updates)
  // A slow reader holds the peer back: the TCP socket stops reading.
  if (!source_->wanted() && !source_->eof())
    tcp_->pause();
  else if (tcp_->is_paused())
    tcp_->resume();
}

// Node: onConnectSecure() for a client (verifyError, then
// checkServerIdentity), onServerSocketSecure() for a server.
void socket::handshake_done() noexcept {
  secure_ = true;
  sink_->secured();
  cancel_handshake_timer();
  const std::error_code err = verify_peer();
  if (!is_server_ || request_cert_) {
    authorized_ = !err;
    authorization_error_ = err;
    if (err && reject_unauthorized_) {
      fail(err);
      return;
    }
  }
  // A server's max_connections: a client whose handshake ends while that
  // many are secure is closed (server.h).
  if (server_ && !server_->admit(*this)) {
    destroy();
    return;
  }
  emit(is_server_ ? event::secure : event::secure_connect);
  if (writable::destroyed()) return;
  if (server_) server_->secured(*this);
  if (writable::destroyed()) return;
  sink_->on_secure();
  // Node: a socket reads from the start, up to its high-water mark.
  if (!readable::destroyed() && !is_paused()) read(0);
}

std::error_code socket::verify_peer() const noexcept {
  X509* cert = SSL_get1_peer_certificate(ssl_);
  // Node's verifyError() for a peer that sent no certificate.
  if (!cert) return make_verify_error(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT);
  std::error_code ec = make_verify_error(SSL_get_verify_result(ssl_));
  if (!ec && !is_server_) {
    // Node: checkServerIdentity(hostname, cert), after the chain verified.
    const bool ok = is_ip(host_) ? X509_check_ip_asc(cert, host_.c_str(), 0) == 1
                                 : X509_check_host(cert, host_.data(), host_.size(), 0, nullptr) == 1;
    if (!ok) ec = make_error_code(errc::tls_cert_altname_invalid);
  }
  X509_free(cert);
  return ec;
}

// The records a turn made go to the TCP socket in one write(): a large
// batch as the string itself (the writable keeps it, no copy), a small one
// copied (the writable packs it with others) and the string kept for the
// next turn.
bool socket::flush_records() noexcept {
  if (tcp_gone_) return false;
  std::string& out = records_->out;
  if (out.empty()) return !tcp_->writable_need_drain();
  if (out.size() > small_records) {
    const bool room = tcp_->write(std::move(out));
    out.clear();  // moved from: empty, and so said
    return room;
  }
  const bool room = tcp_->write(std::string_view(out));
  out.clear();
  return room;
}

// A write that fails with EPIPE or ECONNRESET may hide why the peer left: in
// TLS 1.3 a server refuses the client's certificate after the client's
// handshake is done, and a server that closes with the client's records
// unread resets the connection. Its alert may still be unread: in the TCP
// socket's buffer (paused while nobody reads the plaintext) or the kernel's.
// It is read and decrypted here, before the fd is closed, and its error, if
// any, becomes the socket's error in place of the reset (fail()).
void socket::read_last_words(int fd, std::error_code err) noexcept {
  if (!ssl_ || !is_reset(err) || in_cycle_) return;
  char buf[16 * 1024];
  std::string got;
  // What the TCP socket read already and holds while it is paused, then
  // what the kernel holds. Bounded: the last few records, not a stream.
  while (got.size() < 64 * 1024) {
    std::optional<std::string> c = tcp_->read();
    if (!c) break;
    got += *c;
  }
  while (got.size() < 64 * 1024) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  if (got.empty() && records_->in_empty()) return;
  records_->feed(got);
  clear_errors();
  int e = SSL_ERROR_NONE;
  for (int i = 0; i < 64 && e == SSL_ERROR_NONE; ++i) {
    const int n = SSL_read(ssl_, buf, sizeof buf);  // plaintext dropped: the stream is failing
    if (n <= 0) e = SSL_get_error(ssl_, n);
  }
  if (e == SSL_ERROR_SSL) peer_alert_ = take_openssl_error(std::error_code(EPROTO, std::system_category()));
  records_->keep_unread();
  records_->out.clear();  // nothing goes out any more
}

bool socket::is_reset(std::error_code ec) noexcept {
  return ec == std::error_code(EPIPE, std::system_category()) || ec == std::error_code(ECONNRESET, std::system_category());
}

// Before the handshake is done on a server's side the error goes to the
// server's 'tlsClientError', as in Node (the socket emits none); else it is
// the socket's 'error'.
void socket::fail(std::error_code ec) noexcept {
  if (writable::destroyed() && readable::destroyed()) return;
  if (peer_alert_ && is_reset(ec)) ec = peer_alert_;  // why the peer reset
  if (refusing_) {
    destroy();  // the refused client reset, or the TCP socket went
    return;
  }
  if (server_ && !secure_) {
    server_->client_error(*this, ec);
    refuse();
    return;
  }
  if (server_ && secure_ && ec == authorization_error_ && reject_unauthorized_ && ec) {
    server_->client_error(*this, ec);
    destroy();
    return;
  }
  destroy(ec);
}

// In TLS 1.3 the client's handshake is over before the server has checked
// the client's certificate, and the client may be writing already. Closing
// now, with its records unread in the receive buffer, would send an RST,
// which can reach the client before the alert and discard it there (the
// client then sees only EPIPE or ECONNRESET). So, as a careful TLS server
// does: the alert, then the FIN once the alert is out (end()), then what the
// client still sends is read and dropped until its own FIN, for at most
// refuse_linger; then the close. The connection keeps counting against the
// server's max_connections meanwhile, so a flood of refused clients is held
// to that limit, each for a bounded time.
void socket::refuse() noexcept {
  static constexpr std::chrono::milliseconds refuse_linger{1000};
  cancel_handshake_timer();
  if (tcp_gone_ || tcp_ended_ || tcp_->destroyed()) {
    destroy();
    return;
  }
  refusing_ = true;
  flush_records();
  tcp_->end();
  if (tcp_->is_paused()) tcp_->resume();
  event_loop().set_timeout(refuse_linger, [this] { destroy(); }, tag());
}

std::optional<certificate> socket::peer_certificate() const {
  if (!ssl_) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(ssl_);
  if (!cert) return std::nullopt;
  certificate c = detail::certificate_of(cert);
  X509_free(cert);
  return c;
}

std::string socket::servername() const {
  if (!ssl_) return {};
  const char* n = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name);
  return n ? n : "";
}

std::string socket::alpn_protocol() const {
  if (!ssl_) return {};
  const unsigned char* p = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return p ? std::string(reinterpret_cast<const char*>(p), len) : std::string();
}

std::string socket::protocol() const { return ssl_ && secure_ ? SSL_get_version(ssl_) : ""; }

std::string socket::cipher() const {
  if (!ssl_) return {};
  const SSL_CIPHER* c = SSL_get_current_cipher(ssl_);
  return c ? SSL_CIPHER_get_name(c) : "";
}

std::unique_ptr<socket> connect(std::uint16_t port, std::string_view host, const socket_options& options) {
  auto tcp = net::connect(port, host, tcp_options(options.socket));
  return std::make_unique<socket>(std::move(tcp), host, options);
}

}  // namespace sluice::tls
