// sluice::tls against itself, Node's tls and the openssl programs, over
// loopback, with a PKI that tests/tls/make_ca.sh makes for the run. Every
// wait is bounded (spin()).
#include <utility>  // before Asio: g++ 12 with C++20 coroutines

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/asio/attach.h"
#include "sluice/asio/chunks.h"
#include "sluice/asio/writer.h"
#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/tls/server.h"
#include "sluice/syslog/syslog_writable.h"
#include "sluice/tls/socket.h"
#include "sluice/syslog/syslog_tls.h"
#include "sluice/tls/tls_error.h"
#include "support/free_port.h"
#include "support/must_call.h"
#include "support/net_world.h"
#include "support/spin.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::spin;
using sluice::test::port_of;

namespace {

// The PKI, made once for the whole run.
const std::string& pki() {
  static sluice::test::temp_dir dir;  // removed at exit
  static const std::string path = [] {
    const std::string script = std::filesystem::path(SLUICE_TLS_MJS).parent_path() / "make_ca.sh";
    const std::string cmd = "sh '" + script + "' '" + dir.path.string() + "'";
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, sluice::test::slurp(dir.file("make_ca.log")));
    return dir.path.string();
  }();
  return path;
}
// Node is the reference peer where it is installed; CI may run without it
// (as the rest of the suite does), and then those cases say so and pass.
bool have_node() {
  static const bool found = std::system("node --version >/dev/null 2>&1") == 0;
  if (!found) MESSAGE("node not found: Node's tls peer skipped");
  return found;
}

std::string pki_file(const std::string& name) { return pki() + "/" + name; }

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + 3) % 251);
  return s;
}

// A program run beside the loop: its stdout is read without blocking.
struct child {
  pid_t pid = -1;
  int out = -1;
  int in = -1;
  std::string output;
  explicit child(const std::vector<std::string>& argv, const std::string& stdin_file = "") {
    int o[2], i[2];
    REQUIRE(::pipe(o) == 0);
    REQUIRE(::pipe(i) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(o[1], 1);
      if (stdin_file.empty()) {
        ::dup2(i[0], 0);
      } else {
        const int f = ::open(stdin_file.c_str(), O_RDONLY);
        ::dup2(f, 0);
      }
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 2);
      ::close(o[0]);
      ::close(i[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(o[1]);
    ::close(i[0]);
    out = o[0];
    in = i[1];
    ::fcntl(out, F_SETFL, O_NONBLOCK);
  }
  ~child() {
    if (in >= 0) ::close(in);
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    ::close(out);
  }
  // What it has printed so far.
  const std::string& read() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(out, buf, sizeof buf);
      if (n <= 0) break;
      output.append(buf, static_cast<std::size_t>(n));
    }
    return output;
  }
  bool has(const std::string& s) { return read().find(s) != std::string::npos; }
  // Waits for the child's exit; its status, or -1 if still running.
  int exited() {
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    }
    return pid < 0 ? exit_status : -1;
  }
  int exit_status = -1;
};

struct world : sluice::test::net_world {
  tls::server_options server_opts(bool mutual = false) {
    tls::server_options o;
    o.context.key_file = pki_file("server.key");
    o.context.cert_file = pki_file("server.crt");
    if (mutual) {
      o.context.ca_file = pki_file("ca.crt");
      o.request_cert = true;
    }
    o.listener.event_loop = &loop;
    o.connection.event_loop = &loop;
    return o;
  }
  tls::socket_options client_opts(const std::string& ca = "ca.crt") {
    tls::socket_options o;
    o.context.ca_file = pki_file(ca);
    o.socket.event_loop = &loop;
    return o;
  }
  void record(tls::socket& s, const std::string& who) {
    s.on(event::secure_connect, [this, who] { events.push_back(who + " secureConnect"); });
    s.on(event::secure, [this, who] { events.push_back(who + " secure"); });
    s.on(event::end, [this, who] { events.push_back(who + " end"); });
    s.on(event::error, [this, who](std::error_code ec) { events.push_back(who + " error " + code_name(ec)); });
    s.on(event::close, [this, who] { events.push_back(who + " close"); });
  }
  void record(tls::server& srv) {
    srv.on(event::tls_client_error, [this](const event_arg& a) {
      events.push_back("server tlsClientError " + code_name(a.error) + " (" + a.error.message() + ")");
    });
  }
};

// A server whose connections echo what they read and count it.
struct echo_server {
  tls::server srv;
  std::string received;
  std::vector<tls::socket*> secured;
  echo_server(world& w, bool mutual = false) : srv(w.server_opts(mutual)) { init(w); }
  echo_server(world& w, const tls::server_options& o) : srv(o) { init(w); }
  void init(world& w) {
    w.record(srv);
    srv.on_secure_connection([this, &w](tls::socket& s) {
      secured.push_back(&s);
      w.record(s, "server");
      s.on(event::data, [this, &s](std::string_view c) {
        received += c;
        s.write(c);
      });
    });
    srv.listen(0, "127.0.0.1");
  }
};

}  // namespace

TEST_CASE("a client and a server: echo both ways, verified, with the peer's certificate, SNI and ALPN") {
  world w;
  auto so = w.server_opts(true);
  so.alpn_protocols = {"syslog", "h2"};
  echo_server es(w, so);
  auto o = w.client_opts();
  o.context.key_file = pki_file("client.key");
  o.context.cert_file = pki_file("client.crt");
  o.servername = "localhost";
  o.alpn_protocols = {"h2", "syslog"};
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
  w.record(*c, "client");
  const std::string sent = pattern(300000);
  std::string got;
  sluice::test::must_call written;
  c->on(event::data, [&](std::string_view d) { got += d; });
  c->on(event::secure_connect, [&] {
    CHECK(c->authorized());
    CHECK_FALSE(c->authorization_error());
    c->end(sent, written.cb());
  });
  // Written before the handshake: it waits for it.
  REQUIRE(spin(w.loop, [&] { return w.has("client close"); }));
  CHECK(got == sent);
  CHECK(es.received == sent);
  CHECK(w.has("client secureConnect"));
  CHECK(w.has("client end"));
  CHECK_FALSE(w.has_prefix("client error"));
  REQUIRE(es.secured.size() == 1);
  // The server's side, before it was deleted: checked in its 'secure'.
  written.check();
  CHECK(written.error() == std::error_code{});
}

TEST_CASE("the server's side knows the client's certificate, SNI and ALPN; the client the server's") {
  world w;
  auto so = w.server_opts(true);
  so.alpn_protocols = {"syslog", "h2"};
  tls::server srv(so);
  std::string seen;
  srv.on_secure_connection([&](tls::socket& s) {
    auto cert = s.peer_certificate();
    REQUIRE(cert);
    seen = std::string(s.authorized() ? "authorized" : "unauthorized") + " sni=" + s.servername() +
           " alpn=" + s.alpn_protocol() + " subject=" + cert->subject + " issuer=" + cert->issuer;
    s.end();
  });
  srv.listen(0, "127.0.0.1");
  auto o = w.client_opts();
  o.context.key_file = pki_file("client.key");
  o.context.cert_file = pki_file("client.crt");
  o.servername = "localhost";
  o.alpn_protocols = {"h2", "syslog"};
  auto c = tls::connect(port_of(srv), "127.0.0.1", o);
  std::optional<tls::certificate> server_cert;
  c->on(event::secure_connect, [&] {
    server_cert = c->peer_certificate();
    CHECK(c->alpn_protocol() == "syslog");  // the server's preference
    CHECK(c->protocol() == "TLSv1.3");
  });
  c->resume();
  bool closed = false;
  c->on(event::close, [&] { closed = true; });
  REQUIRE(spin(w.loop, [&] { return closed; }));
  CHECK(seen == "authorized sni=localhost alpn=syslog subject=CN=client one,O=sluice test issuer=CN=sluice test CA,O=sluice test");
  REQUIRE(server_cert);
  CHECK(server_cert->subject == "CN=localhost,O=sluice test");
  CHECK(server_cert->subjectaltname == "DNS:localhost, IP Address:127.0.0.1");
  // The fingerprint the openssl program computes.
  child fp({"openssl", "x509", "-in", pki_file("server.crt"), "-noout", "-fingerprint", "-sha256"});
  REQUIRE(spin(w.loop, [&] { return fp.exited() >= 0; }));
  CHECK(fp.read() == "sha256 Fingerprint=" + server_cert->fingerprint256 + "\n");
}

TEST_CASE("refused, with the reason, nothing delivered: another CA, expired, wrong name, self-signed") {
  struct refusal {
    const char* what;
    const char* cert;
    const char* name;
    const char* code;
    const char* message;
  };
  const refusal cases[] = {
      {"a certificate of another CA", "other-server", "", "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
       "unable to verify the first certificate"},
      {"an expired certificate", "expired", "", "CERT_HAS_EXPIRED", "certificate has expired"},
      {"a wrong name", "server", "wrong.example", "ERR_TLS_CERT_ALTNAME_INVALID",
       "Hostname/IP does not match certificate's altnames"},
      {"a self-signed certificate", "self", "", "DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"},
  };
  for (const refusal& r : cases) {
    CAPTURE(r.what);
    world w;
    auto so = w.server_opts();
    so.context.key_file = pki_file(std::string(r.cert) + ".key");
    so.context.cert_file = pki_file(std::string(r.cert) + ".crt");
    echo_server es(w, so);
    auto o = w.client_opts();
    o.servername = r.name;
    auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
    w.record(*c, "client");
    std::error_code err;
    c->on(event::error, [&](std::error_code ec) { err = ec; });
    sluice::test::must_call written;
    c->write("must not be delivered", written.cb());
    REQUIRE(spin(w.loop, [&] { return w.has("client close"); }));
    CHECK(code_name(err) == r.code);
    CHECK(err.message() == r.message);
    CHECK_FALSE(w.has("client secureConnect"));
    CHECK(es.received.empty());
    written.check();
    CHECK(written.error() == err);
    // Let the server see the connection go.
    spin(w.loop, [&] { return es.srv.connections() == 0; });
  }
}

TEST_CASE("reject_unauthorized false: the connection goes on, authorized false, the reason kept") {
  world w;
  auto so = w.server_opts();
  so.context.key_file = pki_file("other-server.key");
  so.context.cert_file = pki_file("other-server.crt");
  echo_server es(w, so);
  auto o = w.client_opts();
  o.reject_unauthorized = false;
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
  std::string got;
  c->on(event::data, [&](std::string_view d) { got += d; });
  c->on(event::secure_connect, [&] { c->end("hello"); });
  bool closed = false;
  c->on(event::close, [&] { closed = true; });
  REQUIRE(spin(w.loop, [&] { return closed; }));
  CHECK(got == "hello");
  CHECK_FALSE(c->authorized());
  CHECK(code_name(c->authorization_error()) == "UNABLE_TO_VERIFY_LEAF_SIGNATURE");
}

TEST_CASE("mutual TLS: a client without a certificate, or with one of another CA, is cut off before anything it sent is delivered") {
  for (const char* client_cert : {"", "other-client"}) {
    CAPTURE(client_cert);
    world w;
    echo_server es(w, true);
    auto o = w.client_opts();
    if (*client_cert) {
      o.context.key_file = pki_file(std::string(client_cert) + ".key");
      o.context.cert_file = pki_file(std::string(client_cert) + ".crt");
    }
    auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
    w.record(*c, "client");
    sluice::test::must_call written;
    c->on(event::secure_connect, [&] { c->write("must not be delivered", written.cb()); });
    c->resume();
    REQUIRE(spin(w.loop, [&] { return w.has("client close") && es.srv.connections() == 0; }));
    INFO(w.all());
    CHECK(es.received.empty());
    CHECK(es.secured.empty());
    CHECK(es.srv.client_errors() == 1);
    if (*client_cert) {
      CHECK(w.has("server tlsClientError UNABLE_TO_VERIFY_LEAF_SIGNATURE (unable to verify the first certificate)"));
      // Refused in the handshake: the client is told why by the alert.
      CHECK(w.has("client error ERR_SSL_TLSV1_ALERT_UNKNOWN_CA"));
    } else {
      CHECK(w.has("server tlsClientError ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE (peer did not return a certificate)"));
      // TLS 1.3: the client's handshake was done when the server refused it.
      CHECK(w.has("client error ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED"));
    }
  }
}

TEST_CASE("mutual TLS 1.3: a refused client that keeps writing still reads the alert, not a reset; the server lets go") {
  for (const char* client_cert : {"", "other-client"}) {
    CAPTURE(client_cert);
    world w;
    echo_server es(w, true);
    auto o = w.client_opts();
    if (*client_cert) {
      o.context.key_file = pki_file(std::string(client_cert) + ".key");
      o.context.cert_file = pki_file(std::string(client_cert) + ".crt");
    }
    auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
    w.record(*c, "client");
    // Its handshake done, the client writes on: records the refusing server
    // never reads. Closed at once, the server would reset the connection
    // with them unread, and the client would see ECONNRESET or EPIPE.
    const std::string chunk(64 * 1024, 'x');
    int callbacks = 0;  // each write's callback, once (handed over, or told why not)
    c->on(event::secure_connect, [&] {
      for (int i = 0; i < 16; ++i) c->write(chunk, [&](std::error_code) { ++callbacks; });
    });
    c->resume();
    REQUIRE(spin(w.loop, [&] { return w.has("client close") && es.srv.connections() == 0 && callbacks == 16; }));
    INFO(w.all());
    CHECK(es.received.empty());
    CHECK(es.srv.client_errors() == 1);
    CHECK(w.has(*client_cert ? "client error ERR_SSL_TLSV1_ALERT_UNKNOWN_CA"
                             : "client error ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED"));
    CHECK_FALSE(w.has("client error ECONNRESET"));
    CHECK_FALSE(w.has("client error EPIPE"));
  }
}

TEST_CASE("a server that resets after its alert: the client that was writing, not reading, still reports the alert") {
  world w;
  echo_server es(w, true);
  // A receiver less careful than tls::server: its alert, then an RST.
  es.srv.on(event::tls_client_error, [&](const event_arg& a) {
    auto* s = static_cast<tls::socket*>(a.source);
    w.loop.set_timeout(std::chrono::milliseconds(20), [s] { s->tcp().reset_and_destroy(); });
  });
  auto o = w.client_opts();
  o.context.key_file = pki_file("other-client.key");
  o.context.cert_file = pki_file("other-client.crt");
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
  w.record(*c, "client");
  // Paused: the client does not read, so the alert waits in the kernel's
  // buffer while the client writes on until the reset breaks a write.
  c->pause();
  const std::string chunk(64 * 1024, 'x');
  int writes = 0, callbacks = 0;
  std::function<void()> write_more = [&] {
    if (writes == 4096) return;
    ++writes;
    c->write(chunk, [&](std::error_code ec) {
      ++callbacks;
      if (!ec) write_more();
    });
  };
  c->on(event::secure_connect, [&] { write_more(); });
  REQUIRE(spin(w.loop, [&] { return w.has("client close") && es.srv.connections() == 0 && callbacks == writes; }, 20000));
  INFO(w.all());
  CHECK(w.has("client error ERR_SSL_TLSV1_ALERT_UNKNOWN_CA"));
  CHECK(writes < 4096);
}

TEST_CASE("a refused client that never closes is cut off after the server's bounded wait for its FIN") {
  world w;
  echo_server es(w, true);
  std::chrono::steady_clock::time_point refused{};
  es.srv.on(event::tls_client_error, [&] { refused = std::chrono::steady_clock::now(); });
  auto o = w.client_opts();
  o.context.key_file = pki_file("other-client.key");
  o.context.cert_file = pki_file("other-client.crt");
  o.socket.allow_half_open = true;
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
  w.record(*c, "client");
  c->pause();  // never reads the alert, never ends: its TCP stays open
  REQUIRE(spin(w.loop, [&] { return es.srv.client_errors() == 1; }));
  CHECK(es.srv.connections() == 1);  // waiting for the client's FIN
  REQUIRE(spin(w.loop, [&] { return es.srv.connections() == 0; }, 20000));
  const auto waited = std::chrono::steady_clock::now() - refused;
  INFO(w.all());
  CHECK(waited >= std::chrono::milliseconds(900));
  CHECK(waited <= std::chrono::milliseconds(1000 + 2000 * sluice::test::time_scale()));
  CHECK_FALSE(w.has("client close"));
  c->destroy();
}

TEST_CASE("ALPN with no protocol in common: refused on both sides, with Node's codes") {
  world w;
  auto so = w.server_opts();
  so.alpn_protocols = {"syslog"};
  echo_server es(w, so);
  auto o = w.client_opts();
  o.alpn_protocols = {"h2"};
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
  w.record(*c, "client");
  c->resume();
  REQUIRE(spin(w.loop, [&] { return w.has("client close") && es.srv.connections() == 0; }));
  INFO(w.all());
  // What Node v20 reports, both ends Node's.
  CHECK(w.has_prefix("server tlsClientError ERR_SSL_NO_APPLICATION_PROTOCOL"));
  CHECK(w.has("client error ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL"));
  CHECK(es.secured.empty());
}

TEST_CASE("a client that sends no handshake is cut off at the handshake timeout; a plaintext one with the reason") {
  world w;
  auto so = w.server_opts();
  so.handshake_timeout = std::chrono::milliseconds(100 * sluice::test::time_scale());
  echo_server es(w, so);
  net::socket_options plain;
  plain.event_loop = &w.loop;
  auto silent = net::connect(port_of(es.srv), "127.0.0.1", plain);
  auto chatty = net::connect(port_of(es.srv), "127.0.0.1", plain);
  chatty->write("<13>1 - - - - - - plaintext\n");
  bool silent_closed = false, chatty_closed = false;
  silent->on(event::close, [&] { silent_closed = true; });
  chatty->on(event::close, [&] { chatty_closed = true; });
  silent->resume();
  chatty->resume();
  REQUIRE(spin(w.loop, [&] { return silent_closed && chatty_closed; }));
  INFO(w.all());
  CHECK(w.has("server tlsClientError ERR_TLS_HANDSHAKE_TIMEOUT (TLS handshake timeout)"));
  CHECK(w.has_prefix("server tlsClientError ERR_SSL_WRONG_VERSION_NUMBER"));  // or http request
  CHECK(es.received.empty());
}

TEST_CASE("backpressure through both layers: a peer that does not read holds write() false until it reads, then 'drain'") {
  world w;
  tls::server srv(w.server_opts());
  tls::socket* peer = nullptr;
  std::size_t peer_got = 0;
  srv.on_secure_connection([&](tls::socket& s) {
    peer = &s;
    s.pause();  // reads nothing: its TCP socket stops reading, the kernel's buffers fill
    s.on(event::data, [&](std::string_view d) { peer_got += d.size(); });
    s.pause();
  });
  srv.listen(0, "127.0.0.1");
  auto c = tls::connect(port_of(srv), "127.0.0.1", w.client_opts());
  bool secure = false;
  c->on(event::secure_connect, [&] { secure = true; });
  REQUIRE(spin(w.loop, [&] { return secure && peer; }));
  const std::string chunk(16 * 1024, 'x');
  std::size_t written = 0, callbacks = 0;
  int drains = 0;
  c->on(event::drain, [&] { ++drains; });
  // Write while write() says go on, turn after turn, as a producer would,
  // until the kernel's buffers on both ends are full and the writes stay
  // held for 20 turns.
  int stuck = 0;
  for (int turn = 0; turn < 20000 && stuck < 20; ++turn) {
    if (c->writable_need_drain()) {
      ++stuck;
    } else {
      stuck = 0;
      while (c->write(chunk, [&](std::error_code ec) {
        CHECK_FALSE(ec);
        ++callbacks;
      }))
        written += chunk.size();
      written += chunk.size();
    }
    spin(w.loop, [] { return false; }, 1);
  }
  REQUIRE(stuck == 20);
  const int drains_before = drains;
  // Stays full while the peer reads nothing.
  spin(w.loop, [] { return false; }, 50);
  CHECK(drains == drains_before);
  CHECK(c->writable_need_drain());
  CHECK(c->writable_length() > 0);
  CHECK(peer_got == 0);
  // The peer reads: everything lands, 'drain' comes, every callback.
  peer->resume();
  REQUIRE(spin(w.loop, [&] { return peer_got == written && drains > drains_before && callbacks * chunk.size() == written; }));
  CHECK(c->writable_length() == 0);
}

// A client as Python's ssl unwrap() is one: blocking OpenSSL in a thread of
// its own, so that it can send while the test keeps the server's loop still.
// It sends its bytes when told to, then its close_notify, and waits for the
// server's without closing TCP: the server's only sign of the end is the
// close_notify record, never a FIN.
struct unwrapping_client {
  std::atomic<bool> connected{false}, go{false}, sent{false}, done{false};
  bool got_close_notify = false;  // read after join()
  std::thread thread;

  unwrapping_client(std::uint16_t port, std::string data) {
    thread = std::thread([this, port, data = std::move(data)] {
      run(port, data);
      done = true;
    });
  }
  ~unwrapping_client() {
    go = true;
    if (thread.joinable()) thread.join();
  }
  void join() { thread.join(); }

 private:
  void run(std::uint16_t port, const std::string& data) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return;
    // Every blocking read is bounded: a server that never answers fails the
    // test instead of hanging it.
    timeval tv{10 * sluice::test::time_scale(), 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    // Every record is in the server's receive queue once sent is set: Nagle
    // would hold the second back for the first's delayed ACK.
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, pki_file("ca.crt").c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && SSL_connect(ssl) == 1) {
      connected = true;
      for (int i = 0; i < 10000 * sluice::test::time_scale() && !go; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::size_t n = 0;
      if (SSL_write_ex(ssl, data.data(), data.size(), &n) == 1 && n == data.size() && SSL_shutdown(ssl) >= 0) {
        sent = true;
        // What the server sends (TLS 1.3 tickets) until its close_notify.
        char buf[4096];
        int r;
        while ((r = SSL_read(ssl, buf, sizeof buf)) > 0) {
        }
        got_close_notify = SSL_get_error(ssl, r) == SSL_ERROR_ZERO_RETURN;
      }
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ::close(fd);
  }
};

// The plaintext of the last records and the close_notify come in one TCP
// read while the readable is paused, more of it than its high-water mark:
// the readable is full when the close_notify is read. The 'end' used to be
// dropped there (and with it the server's close_notify): a sender that waits
// for it without closing TCP waited for ever, and what it would have sent
// next was lost when it was killed.
TEST_CASE("a paused server given data then the peer's close_notify, no FIN: every byte once it resumes, then 'end' and its close_notify back") {
  world w;
  auto o = w.server_opts();
  o.connection.readable_high_water_mark = 4096;  // below what one read decrypts
  tls::server srv(o);
  tls::socket* peer = nullptr;
  std::string got;
  std::size_t got_at_end = 0;
  bool ended = false;
  srv.on_secure_connection([&](tls::socket& s) {
    peer = &s;
    s.on(event::data, [&](std::string_view d) { got += d; });
    s.on(event::end, [&] {
      ended = true;
      got_at_end = got.size();
    });
  });
  srv.listen(0, "127.0.0.1");
  std::size_t size = 0;
  // More than one 16 KiB record, less than one TCP read of the server's:
  // the close_notify comes in the read that fills the readable.
  SUBCASE("in one TCP read") { size = 40000; }
  // Many reads and cycles, after the resume, from what the TCP socket, the
  // record BIO and OpenSSL hold: no readiness of the socket comes any more.
  SUBCASE("in many") { size = 300000; }
  const std::string data = pattern(size);
  unwrapping_client c(port_of(srv), data);
  REQUIRE(spin(w.loop, [&] { return peer && c.connected; }));
  // Backpressure, as sluice-logd's while its FILE is behind.
  peer->pause();
  c.go = true;
  // The loop stays still while the client sends: the server reads the
  // records and the close_notify in one go. The larger case may fill the
  // kernel's buffers first (their size is the system's): it goes on then,
  // and the rest comes after the resume.
  for (int i = 0; i < 2000 * sluice::test::time_scale() && !c.sent && !c.done; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (size < 64 * 1024) REQUIRE(c.sent);
  spin(w.loop, [] { return false; }, 20);
  CHECK(got.empty());
  CHECK_FALSE(ended);
  peer->resume();
  CHECK(spin(w.loop, [&] { return ended; }, 1000));
  CHECK(got_at_end == data.size());
  CHECK((got == data));  // not printed: 300 KB
  // The server's close_notify goes back (its writable ends with its
  // readable), and the client's wait is over.
  REQUIRE(spin(w.loop, [&] { return c.done.load(); }, 1000));
  c.join();
  CHECK(c.got_close_notify);
}

// The writable packs small writes end to end, which go to SSL_write() where
// they lie; a batch with a large write (a string of its own) is gathered.
// Both, while the peer reads nothing: the TCP socket's queue fills in the
// middle of a record, and every byte still arrives once, in order.
TEST_CASE("a turn's writes of every size while the TCP queue fills mid-record: every byte once, in order, each callback once") {
  world w;
  tls::server srv(w.server_opts());
  tls::socket* peer = nullptr;
  std::string got;
  srv.on_secure_connection([&](tls::socket& s) {
    peer = &s;
    s.on(event::data, [&](std::string_view d) { got += d; });
    s.pause();
  });
  srv.listen(0, "127.0.0.1");
  auto c = tls::connect(port_of(srv), "127.0.0.1", w.client_opts());
  bool secure = false;
  c->on(event::secure_connect, [&] { secure = true; });
  REQUIRE(spin(w.loop, [&] { return secure && peer; }));
  // Sizes that fall across record bounds: small ones (packed together),
  // one byte, a record's plaintext exactly, one over, and large ones.
  static constexpr std::size_t sizes[] = {100, 1, 3000, 16384, 17, 16385, 90000, 5, 40000, 700};
  const std::string source = pattern(1 << 20);
  std::string sent;
  std::vector<int> calls;
  std::vector<std::error_code> errors;
  std::size_t at = 0;
  auto piece = [&](std::size_t n) {
    const std::string_view p = std::string_view(source).substr(at % (source.size() - n), n);
    at += n * 7 + 1;
    return p;
  };
  // Turn after turn, whether write() says go on or not (the writable holds
  // what the TCP socket cannot take), until the kernel's buffers are full:
  // some turns of small writes only, some with large ones.
  for (int turn = 0; turn < 60; ++turn) {
    const bool small_only = turn % 3 == 0;
    for (int i = 0; i < 12; ++i) {
      const std::size_t n = small_only ? 1 + (static_cast<std::size_t>(i) * 37) % 300 : sizes[(turn + i) % std::size(sizes)];
      const std::string_view p = piece(n);
      sent += p;
      const std::size_t k = calls.size();
      calls.push_back(0);
      errors.emplace_back();
      c->write(std::string(p), [&, k](std::error_code ec) {
        ++calls[k];
        errors[k] = ec;
      });
    }
    spin(w.loop, [] { return false; }, 1);
  }
  spin(w.loop, [] { return false; }, 20);
  CHECK(c->writable_need_drain());
  CHECK(got.empty());
  peer->resume();
  REQUIRE(spin(w.loop, [&] { return got.size() == sent.size(); }));
  REQUIRE(spin(w.loop, [&] { return c->writable_length() == 0; }));
  CHECK(got == sent);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    INFO("write " << k);
    CHECK(calls[k] == 1);
    CHECK_FALSE(errors[k]);
  }
  c->destroy();
  spin(w.loop, [] { return false; }, 5);
}

TEST_CASE("a turn's writes go into as few records as they fill (16 KiB each) and one sendmsg()") {
  world w;
  echo_server es(w);
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", w.client_opts());
  bool secure = false;
  c->on(event::secure_connect, [&] { secure = true; });
  c->resume();
  REQUIRE(spin(w.loop, [&] { return secure && !es.secured.empty(); }));
  spin(w.loop, [] { return false; }, 5);
  const std::size_t records = c->records_written();
  const std::size_t syscalls = c->tcp().write_syscalls();
  // 1000 writes of 100 bytes in one turn: 100,000 bytes, 7 records (6 full).
  const std::string line(100, 'y');
  sluice::test::must_call done(1000);
  for (int i = 0; i < 1000; ++i) c->write(line, done.cb());
  REQUIRE(spin(w.loop, [&] { return es.received.size() == 100000; }));
  CHECK(c->records_written() - records == 7);
  CHECK(c->tcp().write_syscalls() - syscalls == 1);
  // One small write, one record.
  c->write("z");
  REQUIRE(spin(w.loop, [&] { return es.received.size() == 100001; }));
  CHECK(c->records_written() - records == 8);
  // Writes that lie apart in memory (a large one is kept as its own
  // string, small ones are packed together), in one turn: 76,544 bytes,
  // still 5 records (one SSL_write() a write would make 10).
  static constexpr std::size_t sizes[] = {100, 20000, 50, 40000, 3, 16384, 7};
  const std::string source = pattern(40000);
  std::string sent;
  sluice::test::must_call apart(static_cast<int>(std::size(sizes)));
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    const std::string piece = source.substr(i, sizes[i]);
    sent += piece;
    c->write(piece, apart.cb());
  }
  REQUIRE(spin(w.loop, [&] { return es.received.size() == 100001 + sent.size(); }));
  CHECK(es.received.substr(100001) == sent);
  CHECK(c->records_written() - records == 8 + 5);
  c->destroy();
  spin(w.loop, [] { return false; }, 5);
}

TEST_CASE("the write deadline still cuts a peer that does not read; max_buffered still refuses") {
  world w;
  tls::server srv(w.server_opts());
  srv.on_secure_connection([&](tls::socket& s) { s.pause(); });
  srv.listen(0, "127.0.0.1");
  auto o = w.client_opts();
  o.socket.write_deadline = std::chrono::milliseconds(200 * sluice::test::time_scale());
  o.socket.writable.max_buffered = 1 << 20;
  auto c = tls::connect(port_of(srv), "127.0.0.1", o);
  std::error_code err;
  c->on(event::error, [&](std::error_code ec) { err = ec; });
  bool secure = false;
  c->on(event::secure_connect, [&] { secure = true; });
  REQUIRE(spin(w.loop, [&] { return secure; }));
  const std::string chunk(64 * 1024, 'x');
  int refused = 0, failed = 0, landed = 0, writes = 0;
  // A producer that never stops: past 1 MiB of plaintext held, writes are
  // refused; once the kernel's buffers are full, the deadline cuts.
  for (int turn = 0; turn < 20000 && !err; ++turn) {
    ++writes;
    c->write(chunk, [&](std::error_code ec) {
      if (ec == errc::buffer_full)
        ++refused;
      else if (ec)
        ++failed;
      else
        ++landed;
    });
    spin(w.loop, [] { return false; }, 1);
  }
  REQUIRE(err);
  CHECK(code_name(err) == "ERR_SLUICE_WRITE_TIMEOUT");
  REQUIRE(spin(w.loop, [&] { return refused + failed + landed == writes; }));
  CHECK(refused > 0);
  CHECK(failed > 0);
  CHECK(c->writable_length() <= (1u << 20));
}

TEST_CASE("Node's tls client against sluice's server, mutual TLS, 1 MiB byte-exact both ways") {
  if (!have_node()) return;
  world w;
  auto so = w.server_opts(true);
  so.alpn_protocols = {"syslog"};
  echo_server es(w, so);
  child node({"node", SLUICE_TLS_MJS, "client", std::to_string(port_of(es.srv)), pki(), "1048576"});
  REQUIRE(spin(w.loop, [&] { return node.exited() >= 0; }, 4000));
  CHECK(node.read() == "ok 1048576 true syslog\n");
  CHECK(es.received == pattern(1048576));
  REQUIRE(es.secured.size() == 1);
}

TEST_CASE("sluice's client against Node's tls server, mutual TLS, 1 MiB byte-exact both ways") {
  if (!have_node()) return;
  world w;
  child node({"node", SLUICE_TLS_MJS, "server", pki()});
  REQUIRE(spin(w.loop, [&] { return node.has("\n"); }));
  const std::string line = node.read();
  REQUIRE(line.rfind("port ", 0) == 0);
  const auto port = static_cast<std::uint16_t>(std::stoi(line.substr(5)));
  auto o = w.client_opts();
  o.context.key_file = pki_file("client.key");
  o.context.cert_file = pki_file("client.crt");
  o.alpn_protocols = {"syslog"};
  o.servername = "localhost";
  auto c = tls::connect(port, "127.0.0.1", o);
  w.record(*c, "client");
  const std::string sent = pattern(1048576);
  std::string got;
  c->on(event::data, [&](std::string_view d) { got += d; });
  c->on(event::secure_connect, [&] {
    CHECK(c->alpn_protocol() == "syslog");
    for (std::size_t off = 0; off < sent.size(); off += 65536) c->write(std::string_view(sent).substr(off, 65536));
    c->end();
  });
  REQUIRE(spin(w.loop, [&] { return w.has("client close") && node.has("done"); }));
  CHECK(got == sent);
  CHECK(node.read().find("done 1048576 true syslog localhost") != std::string::npos);
  CHECK_FALSE(w.has_prefix("client error"));
}

TEST_CASE("openssl s_client against sluice's server, and sluice's client against openssl s_server") {
  SUBCASE("s_client") {
    world w;
    tls::server srv(w.server_opts());
    std::string got;
    srv.on_secure_connection([&](tls::socket& s) {
      s.on(event::data, [&](std::string_view d) {
        got += d;
        if (got.find('\n') != std::string::npos) s.end("sluice says: " + got);
      });
    });
    srv.listen(0, "127.0.0.1");
    sluice::test::temp_file input("hello from s_client\n");
    child sc({"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port_of(srv)), "-CAfile",
              pki_file("ca.crt"), "-verify_return_error", "-verify_hostname", "localhost", "-quiet"},
             input.path.string());
    REQUIRE(spin(w.loop, [&] { return sc.exited() >= 0; }));
    CHECK(got == "hello from s_client\n");
    CHECK(sc.read() == "sluice says: hello from s_client\n");
  }
  SUBCASE("s_server") {
    world w;
    const std::uint16_t port = sluice::test::free_port();
    child ss({"openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port), "-cert", pki_file("server.crt"),
              "-key", pki_file("server.key"), "-naccept", "1", "-rev", "-quiet"});
    std::string got;
    std::unique_ptr<tls::socket> c;
    std::error_code err;
    bool closed = false;  // outlives every attempt's socket
    // s_server needs a moment to listen: connect until it takes the connection.
    for (int attempt = 0; attempt < 50 * sluice::test::time_scale() && got.empty(); ++attempt) {
      c = tls::connect(port, "127.0.0.1", w.client_opts());
      err.clear();
      c->on(event::error, [&](std::error_code ec) { err = ec; });
      c->on(event::data, [&](std::string_view d) {
        got += d;
        if (got.find('\n') != std::string::npos) c->end();
      });
      c->on(event::secure_connect, [&] { c->write("hello sluice\n"); });
      closed = false;
      c->on(event::close, [&] { closed = true; });
      REQUIRE(spin(w.loop, [&] { return closed || !got.empty(); }));
      if (got.empty()) usleep(20000);
    }
    REQUIRE(spin(w.loop, [&] { return c->closed(); }));
    CHECK(got == "eciuls olleh\n");
    CHECK_FALSE(err);
  }
}

TEST_CASE("errors carry OpenSSL's reason and Node's code; a bad key file is an error at once") {
  CHECK(code_name(tls::make_verify_error(10)) == "CERT_HAS_EXPIRED");
  std::error_code ec;
  tls::context_options mismatched;
  mismatched.key_file = pki_file("ca.key");
  mismatched.cert_file = pki_file("server.crt");
  auto ctx = tls::context::make(mismatched, true, ec);
  CHECK_FALSE(ctx);
  CHECK(ec.message().ends_with(": key values mismatch"));
  CHECK(code_name(ec) == "ERR_OSSL_X509_KEY_VALUES_MISMATCH");  // as Node names it
  tls::context_options missing;
  missing.cert_file = "/nonexistent/server.crt";
  ctx = tls::context::make(missing, true, ec);
  CHECK_FALSE(ctx);
  CHECK(code_name(ec) == "ENOENT");
  tls::server_options bad;
  bad.context.cert = "not a pem";
  CHECK_THROWS_AS(tls::server{bad}, sluice::stream_error);
}

TEST_CASE("a context's errors name the file: missing, not PEM, a key of another certificate; the code stays the error's") {
  std::error_code ec;
  tls::context_options missing;
  missing.ca_file = "/nonexistent/ca.crt";
  CHECK_FALSE(tls::context::make(missing, false, ec));
  CHECK(ec.message() == "ca_file /nonexistent/ca.crt: No such file or directory");
  CHECK(code_name(ec) == "ENOENT");
  CHECK(ec == std::errc::no_such_file_or_directory);
  try {
    tls::context::make(missing, false);
    FAIL("no throw");
  } catch (const sluice::stream_error& e) {
    CHECK(std::string(e.what()) == "tls::context: ca_file /nonexistent/ca.crt: No such file or directory");
  }
  tls::context_options not_pem;
  not_pem.cert_file = SLUICE_TLS_MJS;  // a file, but no PEM in it
  CHECK_FALSE(tls::context::make(not_pem, true, ec));
  CHECK(ec.message() == std::string("cert_file ") + SLUICE_TLS_MJS + ": no start line");
  CHECK(code_name(ec) == "ERR_OSSL_PEM_NO_START_LINE");
  tls::context_options mismatched;
  mismatched.key_file = pki_file("ca.key");
  mismatched.cert_file = pki_file("server.crt");
  CHECK_FALSE(tls::context::make(mismatched, true, ec));
  CHECK(ec.message() == "key_file " + pki_file("ca.key") + " (with cert_file " + pki_file("server.crt") +
                            "): key values mismatch");
  CHECK(code_name(ec) == "ERR_OSSL_X509_KEY_VALUES_MISMATCH");
  // The same error twice is the same code.
  std::error_code again;
  tls::context::make(mismatched, true, again);
  CHECK(again == ec);
}

TEST_CASE("a client whose ca_file is missing: its 'error' names the file") {
  world w;
  echo_server es(w);
  auto o = w.client_opts();
  o.context.ca_file = pki() + "/nothing.crt";
  auto c = tls::connect(port_of(es.srv), "127.0.0.1", o);
  std::error_code err;
  bool closed = false;
  c->on(event::error, [&](std::error_code ec) { err = ec; });
  c->on(event::close, [&] { closed = true; });
  REQUIRE(spin(w.loop, [&] { return closed; }));
  CHECK(err.message() == "ca_file " + pki() + "/nothing.crt: No such file or directory");
  CHECK(code_name(err) == "ENOENT");
}

TEST_CASE("a FIFO as a context's file is refused at once, not waited on ('not a regular file')") {
  const std::string fifo = pki() + "/fifo.crt";
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // In a child with an alarm: an open that blocks fails the test instead
  // of hanging it. (Flushed first: the child must not write the parent's
  // buffered output again.)
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(static_cast<unsigned>(5 * sluice::test::time_scale()));
    std::error_code ec;
    tls::context_options o;
    o.ca_file = fifo;
    const bool refused = !tls::context::make(o, false, ec) && ec.message() == "ca_file " + fifo + ": not a regular file" &&
                         ec == std::errc::invalid_argument;
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_MESSAGE(WIFEXITED(status), "the child hung on the FIFO (killed by its alarm)");
  CHECK(WIFEXITED(status));
  if (WIFEXITED(status)) CHECK(WEXITSTATUS(status) == 0);
  ::unlink(fifo.c_str());
}

TEST_CASE("a server with no 'error' listener on a port already taken ends the program, exit 1, as net::server does") {
  world w;
  echo_server taken(w);
  const std::uint16_t port = port_of(taken.srv);
  // server: "net" or "tls"; what the child printed on stderr, and its status.
  const auto run = [&](bool tls_server, std::string& said) {
    int err[2];
    REQUIRE(::pipe(err) == 0);
    std::fflush(nullptr);  // the child's exit flushes what it inherited
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(err[1], 2);
      ::alarm(static_cast<unsigned>(10 * sluice::test::time_scale()));
      sluice::loop l;
      if (tls_server) {
        tls::server_options o = w.server_opts();
        o.listener.event_loop = &l;
        o.connection.event_loop = &l;
        tls::server s(o);
        s.listen(port, "127.0.0.1");
        l.run();
      } else {
        net::server_options o;
        o.event_loop = &l;
        net::server s(o);
        s.listen(port, "127.0.0.1");
        l.run();
      }
      ::_exit(0);  // run() returned: the error was not fatal
    }
    ::close(err[1]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    char buf[512];
    for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<std::size_t>(n));
    ::close(err[0]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  std::string said;
  CHECK(run(false, said) == 1);
  CHECK(said == "sluice: unhandled 'error' event on net::server: Address already in use\n");
  said.clear();
  CHECK(run(true, said) == 1);
  CHECK(said == "sluice: unhandled 'error' event on tls::server: Address already in use\n");
}

TEST_CASE("connections that never send a ClientHello keep no client out: max_connections counts the secure, the oldest handshake makes room") {
  world w;
  auto so = w.server_opts();
  so.listener.max_connections = 2;
  // Long: only the rule on handshakes can let a client in before it.
  so.handshake_timeout = std::chrono::seconds(60);
  echo_server es(w, so);
  net::socket_options plain;
  plain.event_loop = &w.loop;
  std::vector<std::unique_ptr<net::socket>> bare;
  std::size_t bare_closed = 0;
  const auto connect_bare = [&] {
    bare.push_back(net::connect(port_of(es.srv), "127.0.0.1", plain));
    bare.back()->on(event::error, [](std::error_code) {});
    bare.back()->on(event::close, [&] { ++bare_closed; });
    bare.back()->resume();
  };
  connect_bare();
  connect_bare();
  REQUIRE(spin(w.loop, [&] { return es.srv.handshakes() == 2; }));
  std::vector<std::unique_ptr<tls::socket>> clients;
  // A real client: it gets in past them (the oldest makes room), and gets
  // its echo.
  const auto client_in = [&](int i) {
    clients.push_back(tls::connect(port_of(es.srv), "127.0.0.1", w.client_opts()));
    tls::socket* c = clients.back().get();
    const std::string who = "client" + std::to_string(i);
    w.record(*c, who);
    auto echoed = std::make_shared<std::string>();
    c->on(event::data, [echoed](std::string_view d) { *echoed += d; });
    c->write(who + "\n");
    REQUIRE_MESSAGE(spin(w.loop, [&] { return *echoed == who + "\n"; }), w.all());
  };
  const auto settle = [&](std::size_t handshakes, std::size_t closed) {
    REQUIRE_MESSAGE(spin(w.loop, [&] { return es.srv.handshakes() == handshakes && bare_closed == closed; }),
                    "handshakes " << es.srv.handshakes() << ", bare closed " << bare_closed << " of " << bare.size());
  };
  client_in(0);
  settle(1, 1);  // bare0 made room
  connect_bare();
  connect_bare();
  settle(2, 2);  // bare1 made room for bare3
  client_in(1);
  settle(1, 3);  // bare2 made room
  INFO(w.all());
  CHECK(es.secured.size() == 2);
  CHECK(es.srv.displaced() == 3);
  CHECK(w.has("server tlsClientError ERR_SLUICE_TLS_TOO_MANY_HANDSHAKES (TLS handshake cut off: too many connections in "
              "their handshake, this one the oldest)"));
  // Two are secure: a bare connect, and a third client, are closed at once,
  // and counted.
  connect_bare();
  settle(1, 4);
  clients.push_back(tls::connect(port_of(es.srv), "127.0.0.1", w.client_opts()));
  w.record(*clients.back(), "client2");
  clients.back()->resume();
  REQUIRE(spin(w.loop, [&] { return w.has("client2 close"); }));
  CHECK_FALSE(w.has("client2 secureConnect"));
  CHECK(es.srv.dropped() == 2);
  CHECK(es.secured.size() == 2);
  // A secure one goes: its place is free again.
  clients[0]->end();
  REQUIRE(spin(w.loop, [&] { return w.has("client0 close") && es.srv.connections() == 2; }));
  client_in(3);
  CHECK(es.secured.size() == 3);
  for (auto& b : bare) b->destroy();
  for (auto& c : clients) c->destroy();
  REQUIRE(spin(w.loop, [&] { return es.srv.connections() == 0; }));
}

TEST_CASE("syslog over TLS with its receiver down: once it gave up, nothing is left to keep the loop (no handshake timer)") {
  world w;
  syslog_options o;
  o.host = "127.0.0.1";
  o.port = sluice::test::free_port();
  o.reconnect_min = std::chrono::milliseconds(10);
  o.give_up_after = std::chrono::milliseconds(200);
  o.stream.event_loop = &w.loop;
  tls::socket_options t = w.client_opts();
  t.handshake_timeout = std::chrono::seconds(30);  // as sluice-log's
  tls::use_tls(o, t);
  auto log = make_syslog_writable(o);
  log->on(event::error, [](std::error_code) {});
  sluice::test::must_call written;
  log->write("m", written.cb());
  REQUIRE(spin(w.loop, [&] { return written.calls() == 1; }));
  CHECK(code_name(written.error()) == "ECONNREFUSED");
  // The give-up is done; a loop with nothing to wait for is not alive().
  CHECK(spin(w.loop, [&] { return !w.loop.alive(); }, 400));
}

TEST_CASE("on an attached io_context: a server's echo and a client's co_await, 1 MiB") {
  boost::asio::io_context ctx;
  sluice::loop loop;
  auto on_asio = sluice::asio::attach(ctx, loop);
  tls::server_options so;
  so.context.key_file = pki_file("server.key");
  so.context.cert_file = pki_file("server.crt");
  so.listener.event_loop = &loop;
  so.connection.event_loop = &loop;
  tls::server srv(so);
  srv.on_secure_connection([](tls::socket& s) { s.pipe(s); });
  srv.listen(0, "127.0.0.1");
  tls::socket_options o;
  o.context.ca_file = pki_file("ca.crt");
  o.socket.event_loop = &loop;
  auto c = tls::connect(port_of(srv), "127.0.0.1", o);
  const std::string sent = pattern(1 << 20);
  std::string got;
  std::exception_ptr writer_threw, reader_threw;
  using boost::asio::use_awaitable;
  boost::asio::co_spawn(ctx, [&]() -> boost::asio::awaitable<void> {
    sluice::asio::writer w(*c);
    for (std::size_t off = 0; off < sent.size(); off += 10000) {
      c->write(std::string_view(sent).substr(off, 10000));
      co_await w.async_room(use_awaitable);
    }
    co_await w.async_end(use_awaitable);
  }, [&](std::exception_ptr e) { writer_threw = e; });
  bool read_done = false;
  boost::asio::co_spawn(ctx, [&]() -> boost::asio::awaitable<void> {
    sluice::asio::chunks in(*c);
    while (auto chunk = co_await in.async_next(use_awaitable)) got += *chunk;
  }, [&](std::exception_ptr e) {
    reader_threw = e;
    read_done = true;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20 * sluice::test::time_scale());
  while (!read_done && std::chrono::steady_clock::now() < until) ctx.run_for(std::chrono::milliseconds(50));
  REQUIRE(read_done);
  CHECK_FALSE(writer_threw);
  CHECK_FALSE(reader_threw);
  CHECK(got == sent);
  CHECK(c->authorized());
}

// ---- syslog over TLS (RFC 5425): the syslog writable with tls::use_tls()

namespace {

// The MSG of each whole octet-counted frame in `bytes` ("LEN SP <PRI>1 ... MSG");
// a torn frame at the end (a connection cut mid-frame) is dropped.
std::vector<std::string> frames_of(std::string_view bytes) {
  std::vector<std::string> out;
  while (!bytes.empty()) {
    const std::size_t sp = bytes.find(' ');
    if (sp == std::string_view::npos) break;
    const std::size_t len = std::stoul(std::string(bytes.substr(0, sp)));
    if (bytes.size() < sp + 1 + len) break;
    const std::string_view msg = bytes.substr(sp + 1, len);
    out.emplace_back(msg.substr(msg.rfind(' ') + 1));
    bytes.remove_prefix(sp + 1 + len);
  }
  return out;
}

// A TLS syslog receiver: what each connection read, in order of connection;
// with cut_after set, the first connection stops reading once it has read
// that many bytes, and is destroyed 300 ms later (so that the sender's
// buffers are full and a write of its is waiting when it breaks).
struct syslog_receiver {
  tls::server srv;
  std::vector<std::string> conns;
  std::size_t tcp_connections = 0;
  std::size_t cut_after = 0;
  bool cutting = false;
  syslog_receiver(world& w, bool mutual) : srv(w.server_opts(mutual)) {
    srv.tcp().on_connection([this](net::socket&) { ++tcp_connections; });
    srv.on_secure_connection([this, &w](tls::socket& s) {
      const std::size_t i = conns.size();
      conns.emplace_back();
      // A client that refused this server goes away mid-handshake (EPIPE).
      s.on(event::error, [](std::error_code) {});
      s.on(event::data, [this, &s, &w, i](std::string_view c) {
        conns[i] += c;
        if (i != 0 || cut_after == 0 || conns[i].size() < cut_after || cutting) return;
        cutting = true;
        s.pause();
        w.loop.set_timeout(std::chrono::milliseconds(300), [&s] {
          if (!s.destroyed()) s.destroy();
        });
      });
    });
    srv.listen(0, "127.0.0.1");
  }
  // Every message received, connection after connection.
  std::vector<std::string> messages() const {
    std::vector<std::string> all;
    for (const auto& c : conns)
      for (auto& m : frames_of(c)) all.push_back(std::move(m));
    return all;
  }
};

syslog_options tls_syslog_options(world& w, std::uint16_t port, const std::string& ca) {
  syslog_options o;
  o.host = "127.0.0.1";
  o.port = port;
  o.header.hostname = "h";
  o.reconnect_min = std::chrono::milliseconds(10);
  o.stream.event_loop = &w.loop;
  tls::socket_options t = w.client_opts(ca);
  t.context.key_file = pki_file("client.key");
  t.context.cert_file = pki_file("client.crt");
  tls::use_tls(o, t);
  return o;
}

std::string msg_no(std::size_t i) { return "m" + std::to_string(1000000 + i); }
// A longer one: the same number after 100 bytes of padding.
std::string long_msg_no(std::size_t i) { return std::string(100, 'x') + " " + msg_no(i); }

}  // namespace

TEST_CASE("syslog over TLS: every message once, in order, octet-counted, into a mutual-TLS receiver") {
  world w;
  syslog_receiver r(w, true);
  constexpr std::size_t n = 20000;
  sluice::test::must_call each(static_cast<int>(n));
  sluice::test::must_call ended;
  auto log = make_syslog_writable(tls_syslog_options(w, port_of(r.srv), "ca.crt"));
  std::size_t ok = 0;
  for (std::size_t i = 0; i < n; ++i) log->write(msg_no(i), each.cb([&](std::error_code ec) { ok += !ec; }));
  log->end(ended.cb());
  REQUIRE(spin(w.loop, [&] { return ended.calls() == 1; }));
  REQUIRE(spin(w.loop, [&] { return r.messages().size() >= n; }));
  each.check();
  CHECK(ok == n);
  CHECK(ended.error() == std::error_code{});
  const auto got = r.messages();
  REQUIRE(got.size() == n);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(got[i] == msg_no(i));
  CHECK(log->sent() == n);
  CHECK(log->maybe_lost() == 0);
  CHECK(r.tcp_connections == 1);
}

TEST_CASE("syslog over TLS: a receiver of another CA is not retried; every callback says why, once") {
  world w;
  syslog_receiver r(w, false);
  constexpr std::size_t n = 100;
  sluice::test::must_call each(static_cast<int>(n));
  auto log = make_syslog_writable(tls_syslog_options(w, port_of(r.srv), "other-ca.crt"));
  std::vector<std::string> events;
  log->on(event::error, [&](std::error_code ec) { events.push_back("error " + code_name(ec)); });
  std::vector<std::error_code> errors;
  for (std::size_t i = 0; i < n; ++i) log->write(msg_no(i), each.cb([&](std::error_code ec) { errors.push_back(ec); }));
  REQUIRE(spin(w.loop, [&] { return errors.size() == n; }));
  // Time for a reconnect (10 ms backoff) that must not come.
  spin(w.loop, [] { return false; }, 40);
  each.check();
  for (const auto& ec : errors) {
    REQUIRE(ec);
    CHECK(tls::is_certificate_error(ec));
  }
  CHECK(errors.front().message() == "unable to verify the first certificate");
  CHECK(events == std::vector<std::string>{"error UNABLE_TO_VERIFY_LEAF_SIGNATURE"});
  // One connection, on which nothing came (in TLS 1.3 the server's side of
  // the handshake may finish before the client judges the certificate).
  CHECK(r.tcp_connections == 1);
  CHECK(r.conns.size() <= 1);
  CHECK(r.messages().empty());
  CHECK(log->sent() == 0);
  CHECK(log->dropped() == n);
  // Not certificate errors: retried.
  CHECK_FALSE(tls::is_certificate_error(std::error_code(ECONNRESET, std::system_category())));
  CHECK_FALSE(tls::is_certificate_error(make_error_code(errc::tls_handshake_timeout)));
}

TEST_CASE("syslog over TLS: a connection cut mid-stream; the batch in flight goes again whole on the next") {
  world w;
  syslog_receiver r(w, true);
  r.cut_after = 300000;
  std::size_t lost_calls = 0;
  syslog_options o = tls_syslog_options(w, port_of(r.srv), "ca.crt");
  o.on_connection_lost = [&](std::error_code, std::size_t) { ++lost_calls; };
  // More than loopback's socket buffers hold (a few MiB): the cut comes
  // while batches are still being written.
  constexpr std::size_t n = 200000;
  sluice::test::must_call each(static_cast<int>(n));
  sluice::test::must_call ended;
  auto log = make_syslog_writable(o);
  std::vector<std::string> stream_errors;
  log->on(event::error, [&](std::error_code ec) { stream_errors.push_back(code_name(ec)); });
  std::size_t ok = 0;
  // Which messages were sent (called back with success) on the first
  // connection.
  std::vector<char> on_first(n, 0);
  // A producer that honours write() == false, as sluice-log does: a batch
  // is then at most the high-water mark's 1024 messages.
  std::size_t next_msg = 0;
  std::function<void()> pump = [&] {
    while (next_msg < n) {
      const std::size_t i = next_msg++;
      // (must_call's `then` is one for all its callbacks: this one is each message's.)
      if (!log->write(long_msg_no(i), [&, i, counted = each.cb()](std::error_code ec) {
            counted(ec);
            ok += !ec;
            if (!ec && log->reconnects() == 0) on_first[i] = 1;
          }))
        return;
    }
    log->end(ended.cb());
  };
  log->on(event::drain, [&] { pump(); });
  pump();
  REQUIRE(spin(w.loop, [&] { return ended.calls() == 1; }, 8000));
  each.check();
  CHECK(ok == n);  // every message was sent on some connection
  CHECK(ended.error() == std::error_code{});
  CHECK(stream_errors.empty());
  REQUIRE(r.conns.size() >= 2);
  CHECK(log->reconnects() == r.conns.size() - 1);
  REQUIRE(spin(w.loop, [&] { return r.messages().size() >= n - log->maybe_lost(); }));
  const auto got = r.messages();
  // In order but for the batch sent again: each message's first arrival
  // comes after the one before it, a message missing is counted maybe
  // lost, and a message twice is one of the batch that went again (at most
  // a batch: the high-water mark's 1024, one more that write() refused).
  std::vector<int> seen(n, 0);
  std::size_t next = 0, dups = 0;
  for (const auto& m : got) {
    const std::size_t i = std::stoul(m.substr(1)) - 1000000;
    REQUIRE(i < n);
    if (seen[i]++) {
      ++dups;
      continue;
    }
    CHECK(i >= next);
    next = i + 1;
  }
  // What is missing was sent on the first connection, and counted maybe
  // lost: everything sent on it was at risk (it was never quiet), and the
  // batch whose write failed when it broke was sent again, not counted sent.
  std::size_t missing = 0, missing_not_first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    missing += seen[i] == 0;
    missing_not_first += seen[i] == 0 && !on_first[i];
  }
  const auto sent_on_first = static_cast<std::size_t>(std::count(on_first.begin(), on_first.end(), 1));
  CHECK(missing_not_first == 0);
  CHECK(missing <= log->maybe_lost());
  CHECK(log->maybe_lost() == sent_on_first);
  CHECK(dups <= 1025);
  CHECK(lost_calls == log->connections_lost());
  MESSAGE("connections " << r.conns.size() << ", missing " << missing << ", maybe lost " << log->maybe_lost()
                         << " (on " << log->connections_lost() << ")"
                         << ", twice " << dups);
}
