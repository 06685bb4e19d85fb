// libFuzzer harness: the TLS record path of a server's side: bytes from the
// network through tls::socket's record BIO (record_bio.cc) into OpenSSL,
// and the records it writes back out (socket.cc), as a tls::server on a
// Unix socket in a temp directory runs it. The server's key and
// self-signed certificate (P-256) are made once, in memory, at start; the
// server echoes what it reads. No network: one connection at a time, to
// the Unix socket, from this process.
//
// Input: [mode] then the rest.
//   mode bit 0 clear, "raw": the rest is what the client sends, in writes
//     cut at sizes from mode's other bits (a ClientHello, garbage, records
//     that can't decrypt), then the client's FIN: the server must close the
//     connection (refused, or its end), within a bound of turns.
//   mode bit 0 set, "ops": a real client (OpenSSL, in the harness; bit 1:
//     TLS 1.2 only, else 1.3) does the handshake, then the rest is a list of
//     operations: 0 LEN BYTES: application data, which must come back whole,
//     in order; 1 LEN BYTES: raw bytes into the stream (after them nothing
//     is checked but the close); 2: a key update (1.3) or a renegotiation
//     (1.2); 3: close_notify; 4: the FIN. Then the client closes, and the
//     server must have closed the connection within a bound of turns.
//
// With TLS_FUZZ_SEEDS=DIR set, the harness writes seeds there instead: the
// ClientHello of sluice's own tls::socket client (a raw seed) and a few
// operation lists.
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_dir.h"
#include "sluice/loop/loop.h"
#include "sluice/net/socket.h"
#include "sluice/tls/server.h"
#include "sluice/tls/socket.h"

namespace {

namespace fs = std::filesystem;
namespace tls = sluice::tls;

void check(bool c) {
  if (!c) std::abort();
}

struct pem_pair {
  std::string key, cert;
};

std::string bio_string(BIO* b) {
  char* p = nullptr;
  const long n = BIO_get_mem_data(b, &p);
  return std::string(p, static_cast<std::size_t>(n));
}

// A P-256 key and a self-signed certificate for "localhost", as PEM.
pem_pair make_pem() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  check(key != nullptr);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_set_pubkey(x, key);
  check(X509_sign(x, key, EVP_sha256()) > 0);
  BIO* kb = BIO_new(BIO_s_mem());
  BIO* cb = BIO_new(BIO_s_mem());
  check(PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
  check(PEM_write_bio_X509(cb, x) == 1);
  pem_pair p{bio_string(kb), bio_string(cb)};
  BIO_free(kb);
  BIO_free(cb);
  X509_free(x);
  EVP_PKEY_free(key);
  return p;
}

const std::string& root() { return sluice::fuzz::fuzz_dir("tls-fuzz"); }

// One turn: the loop's ready work, then a wait of at most `ms` for its fds.
void turn(sluice::loop& l, int ms) {
  l.run_until_idle();
  l.run_once(std::chrono::milliseconds(ms));
  l.run_until_idle();
}

struct world {
  sluice::loop loop;
  pem_pair pem = make_pem();
  std::string path = root() + "/tls.sock";
  std::unique_ptr<tls::server> srv;
  SSL_CTX* client13 = nullptr;
  SSL_CTX* client12 = nullptr;

  world() {
    ::signal(SIGPIPE, SIG_IGN);
    tls::server_options o;
    o.context.key = pem.key;
    o.context.cert = pem.cert;
    o.handshake_timeout = std::chrono::milliseconds(5000);
    o.listener.event_loop = &loop;
    o.connection.event_loop = &loop;
    srv = std::make_unique<tls::server>(o);
    srv->on_secure_connection([](tls::socket& s) {
      s.on(sluice::event::data, [&s](std::string_view c) { s.write(c); });
      s.on(sluice::event::error, [](std::error_code) {});
    });
    srv->on(sluice::event::tls_client_error, [](const sluice::event_arg&) {});
    srv->on(sluice::event::error, [](std::error_code) { std::abort(); });
    srv->listen(path);
    client13 = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(client13, TLS1_3_VERSION);
    client12 = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(client12, TLS1_2_VERSION);
    for (SSL_CTX* c : {client13, client12}) SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
  }

  int connect_client() {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    check(fd >= 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    check(path.size() < sizeof a.sun_path);
    std::memcpy(a.sun_path, path.data(), path.size());
    check(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return fd;
  }

  // Until the server has no connection (its side closed), a bounded wait.
  void wait_closed(int fd) {
    char buf[16 * 1024];
    bool eof = false;
    for (int i = 0; i < 2000 && (srv->connections() != 0 || !eof); ++i) {
      turn(loop, 1);
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) continue;
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) eof = true;
        break;
      }
    }
    check(srv->connections() == 0);
    check(eof);
  }
};

world& the_world() {
  static world* w = new world;  // never destroyed: libFuzzer exits from anywhere
  return *w;
}

// Writes all of `bytes` to the nonblocking client fd, turning the loop
// while the socket buffer is full; false if the server went away.
bool send_all(world& w, int fd, std::string_view bytes) {
  for (int i = 0; !bytes.empty() && i < 2000; ++i) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    turn(w.loop, 1);
  }
  return bytes.empty();
}

void raw(world& w, unsigned mode, std::string_view data) {
  const int fd = w.connect_client();
  std::uint32_t x = mode * 2654435761u + 1;
  bool up = true;
  while (up && !data.empty()) {
    x = x * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>(1 + (x >> 16) % 600, data.size());
    up = send_all(w, fd, data.substr(0, n));
    data.remove_prefix(n);
    turn(w.loop, 0);
  }
  ::shutdown(fd, SHUT_WR);
  w.wait_closed(fd);
  ::close(fd);
}

// The client's SSL over the fd: a step of `f` until it is done (true) or
// fails (false), turning the loop meanwhile.
bool client_step(world& w, SSL* ssl, int fd, const std::function<int()>& f) {
  for (int i = 0; i < 2000; ++i) {
    const int r = f();
    if (r > 0) return true;
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return false;
    turn(w.loop, 1);
  }
  return false;
}

void ops(world& w, unsigned mode, std::string_view rest) {
  const int fd = w.connect_client();
  const bool v12 = mode & 2;
  SSL* ssl = SSL_new(v12 ? w.client12 : w.client13);
  SSL_set_fd(ssl, fd);
  SSL_set_connect_state(ssl);
  ERR_clear_error();
  check(client_step(w, ssl, fd, [&] { return SSL_do_handshake(ssl); }));
  std::string sent, echoed;
  bool clean = true;  // nothing but what a good client sends, so far
  bool writing = true;
  const auto read_echo = [&] {
    char buf[16 * 1024];
    for (;;) {
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) break;
      echoed.append(buf, static_cast<std::size_t>(n));
    }
    ERR_clear_error();
  };
  while (!rest.empty()) {
    const unsigned op = static_cast<unsigned char>(rest[0]) % 5;
    rest.remove_prefix(1);
    if (op == 0 || op == 1) {
      if (rest.empty()) break;
      const std::size_t len = std::min<std::size_t>(static_cast<unsigned char>(rest[0]), rest.size() - 1);
      const std::string_view bytes = rest.substr(1, len);
      rest.remove_prefix(1 + len);
      if (!writing) continue;
      if (op == 0 && clean) {
        if (bytes.empty()) continue;
        check(client_step(w, ssl, fd, [&] { return SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())); }));
        sent += bytes;
        for (int i = 0; i < 2000 && echoed.size() < sent.size(); ++i) {
          turn(w.loop, 1);
          read_echo();
        }
        check(echoed == sent);
      } else {
        clean = false;
        if (!send_all(w, fd, bytes)) writing = false;
      }
    } else if (op == 2) {
      if (!writing || !clean) continue;
      if (v12) {
        if (SSL_renegotiate(ssl) != 1) continue;
        // The server may refuse (no_renegotiation): the connection is then
        // the server's to close, and nothing more is checked.
        if (!client_step(w, ssl, fd, [&] { return SSL_do_handshake(ssl); })) {
          clean = false;
          ERR_clear_error();
        }
      } else {
        check(SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) == 1);
        if (!client_step(w, ssl, fd, [&] { return SSL_do_handshake(ssl); })) clean = false;
      }
    } else if (op == 3) {
      if (!writing) continue;
      (void)SSL_shutdown(ssl);
      writing = false;
    } else {
      ::shutdown(fd, SHUT_WR);
      writing = false;
    }
    turn(w.loop, 0);
  }
  ERR_clear_error();
  SSL_free(ssl);
  ::shutdown(fd, SHUT_WR);
  w.wait_closed(fd);
  ::close(fd);
}

void spit(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(f.good());
}

// The ClientHello that sluice's own client sends (TLS 1.2 and 1.3 offered,
// SNI "localhost"), read from the other end of a socketpair.
std::string client_hello(const std::vector<std::string>& alpn) {
  sluice::loop l;
  int sv[2];
  check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  check(::fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
  sluice::net::socket_options so;
  so.event_loop = &l;
  tls::socket_options o;
  o.reject_unauthorized = false;
  o.alpn_protocols = alpn;
  o.socket.event_loop = &l;
  std::string hello;
  {
    tls::socket c(std::make_unique<sluice::net::socket>(sv[0], so), "localhost", o);
    c.on(sluice::event::error, [](std::error_code) {});
    char buf[4096];
    for (int i = 0; i < 200 && hello.empty(); ++i) {
      turn(l, 5);
      const ssize_t n = ::read(sv[1], buf, sizeof buf);
      if (n > 0) hello.append(buf, static_cast<std::size_t>(n));
    }
    c.destroy();
    l.run_until_idle();
  }
  ::close(sv[1]);
  check(!hello.empty());
  return hello;
}

void write_seeds(const std::string& out) {
  spit(out + "/client-hello", std::string(1, '\0') + client_hello({}));
  spit(out + "/client-hello-alpn", std::string(1, '\4') + client_hello({"syslog", "http/1.1"}));
  const auto data = [](std::string_view s) { return std::string(1, '\0') + char(s.size()) + std::string(s); };
  const auto junk = [](std::string_view s) { return std::string(1, '\1') + char(s.size()) + std::string(s); };
  spit(out + "/ops-13-echo", "\1" + data("hello") + data(std::string(200, 'x')) + "\3");
  spit(out + "/ops-12-echo", "\3" + data("hello") + "\2" + data("again") + "\4");
  spit(out + "/ops-13-key-update", "\1" + data("one") + "\2" + data("two") + "\3");
  // A record header that promises more than a record may hold, then junk.
  spit(out + "/ops-13-junk", "\1" + data("ok") + junk(std::string("\x17\x03\x03\x48\x00", 5) + "zzzz"));
  spit(out + "/ops-12-fin", "\3" + data("last words") + "\4");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("TLS_FUZZ_SEEDS")) {
    write_seeds(out);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 1) return 0;
  world& w = the_world();
  const unsigned mode = bytes[0];
  const std::string_view rest(reinterpret_cast<const char*>(bytes + 1), size - 1);
  if (mode & 1)
    ops(w, mode, rest);
  else
    raw(w, mode, rest);
  return 0;
}
