// net::lookup() and the sockets that connect to names, on real names: those
// that /etc/hosts gives every machine ("localhost", 127.0.0.1) and one under
// .invalid (RFC 6761), which never resolves. Loopback only; every wait is
// bounded (spin()).
#include <doctest/doctest.h>

#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/lookup.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "sluice/syslog/syslog_writable.h"
#include "support/free_port.h"
#include "support/must_call.h"
#include "support/net_world.h"
#include "support/spin.h"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

std::string nowhere() { return "sluice-test-" + std::to_string(::getpid()) + ".invalid"; }

struct world : sluice::test::net_world {
  void record(net::socket& s) {
    s.on(event::lookup, [this](const event_arg& a) {
      const auto* e = static_cast<const net::lookup_event*>(a.source);
      events.push_back("lookup " + (a.error ? code_name(a.error) : std::string("ok")) + " " + std::string(a.chunk) +
                       " " + std::to_string(e->family) + " " + std::string(e->host));
    });
    s.on(event::connect, [this] { events.push_back("connect"); });
    s.on(event::error, [this](std::error_code ec) { events.push_back("error " + code_name(ec) + " " + ec.message()); });
    s.on(event::close, [this](const event_arg& a) { events.push_back(std::string("close ") + (a.error ? "true" : "false")); });
  }
};

// A server on 127.0.0.1 that counts its connections and what they send.
struct listener {
  net::server srv;
  int connections = 0;
  std::string got;
  std::vector<net::socket*> open;
  explicit listener(world& w) : srv(w.server_opts()) {
    srv.on_connection([this](net::socket& s) {
      ++connections;
      open.push_back(&s);
      s.on(event::data, [this](std::string_view c) { got += c; });
      s.on(event::close, [this, &s] { std::erase(open, &s); });
    });
    srv.listen(0, "127.0.0.1");
  }
  std::uint16_t port() const { return srv.address()->port; }
};

TEST_CASE("lookup gives localhost's addresses on the loop, later, with 127.0.0.1 among them") {
  world w;
  bool called = false;
  std::vector<net::lookup_address> found;
  net::lookup("localhost", {.event_loop = &w.loop}, [&](std::error_code ec, std::span<const net::lookup_address> a) {
    CHECK_FALSE(ec);
    called = true;
    found.assign(a.begin(), a.end());
  });
  CHECK_FALSE(called);  // never inside the call
  CHECK(w.loop.alive());  // the loop waits for the answer
  REQUIRE(spin(w.loop, [&] { return called; }));
  CHECK(std::count(found.begin(), found.end(), net::lookup_address{"127.0.0.1", 4}) == 1);
  CHECK_FALSE(w.loop.alive());
}

TEST_CASE("lookup of an IP literal gives it back, and family 6 gives only IPv6") {
  world w;
  std::vector<net::lookup_address> v4, v6;
  int calls = 0;
  net::lookup("127.0.0.1", {.event_loop = &w.loop}, [&](std::error_code, std::span<const net::lookup_address> a) {
    ++calls, v4.assign(a.begin(), a.end());
  });
  net::lookup("::1", {.family = 6, .event_loop = &w.loop}, [&](std::error_code, std::span<const net::lookup_address> a) {
    ++calls, v6.assign(a.begin(), a.end());
  });
  REQUIRE(spin(w.loop, [&] { return calls == 2; }));
  CHECK(v4 == std::vector<net::lookup_address>{{"127.0.0.1", 4}});
  CHECK(v6 == std::vector<net::lookup_address>{{"::1", 6}});
}

TEST_CASE("a name that does not resolve is ENOTFOUND, 'getaddrinfo ENOTFOUND <name>', with the resolver's reason") {
  world w;
  std::error_code err;
  bool called = false;
  net::lookup(nowhere(), {.event_loop = &w.loop}, [&](std::error_code ec, std::span<const net::lookup_address> a) {
    called = true, err = ec;
    CHECK(a.empty());
  });
  REQUIRE(spin(w.loop, [&] { return called; }));
  REQUIRE(err);
  CHECK(err.category() == net::lookup_category());
  CHECK(code_name(err) == "ENOTFOUND");
  CHECK(err.message() == "getaddrinfo ENOTFOUND " + nowhere());
  CHECK_FALSE(net::lookup_reason(err).empty());
  CHECK(net::lookup_error(EAI_AGAIN, "x").message() == "getaddrinfo EAI_AGAIN x");
  CHECK(net::lookup_error(EAI_NONAME, nowhere()) == err);  // interned: equal failures, equal codes
}

TEST_CASE("a cancelled lookup never calls back, and the loop does not wait for it") {
  world w;
  bool called = false;
  auto req = net::lookup("localhost", {.event_loop = &w.loop},
                         [&](std::error_code, std::span<const net::lookup_address>) { called = true; });
  CHECK(req.pending());
  req.cancel();
  CHECK_FALSE(req.pending());
  CHECK_FALSE(w.loop.alive());
  // Whatever the resolver thread does meanwhile, nothing comes.
  spin(w.loop, [] { return false; }, 40);
  CHECK_FALSE(called);
}

TEST_CASE("a loop destroyed while a lookup is on its way is never called into") {
  bool called = false;
  {
    sluice::loop l;
    net::lookup("localhost", {.event_loop = &l}, [&](std::error_code, std::span<const net::lookup_address>) { called = true; });
  }
  // Let the resolver answer a loop that is gone (ASan sees any touch).
  world w;
  bool other = false;
  net::lookup("localhost", {.event_loop = &w.loop}, [&](std::error_code, std::span<const net::lookup_address>) { other = true; });
  REQUIRE(spin(w.loop, [&] { return other; }));
  CHECK_FALSE(called);
}

TEST_CASE("many lookups at once are each called back once, on at most four resolver threads") {
  world w;
  const int n = 64;
  int ok = 0, calls = 0;
  for (int i = 0; i < n; ++i) {
    const std::string host = i % 2 ? "localhost" : nowhere();
    net::lookup(host, {.event_loop = &w.loop}, [&, i](std::error_code ec, std::span<const net::lookup_address>) {
      ++calls;
      ok += (i % 2 == 1) == !ec;
    });
  }
  REQUIRE(spin(w.loop, [&] { return calls == n; }));
  spin(w.loop, [] { return false; }, 5);
  CHECK(calls == n);
  CHECK(ok == n);
  const auto usage = net::detail::resolver_usage();
  CHECK(usage.max_threads == 4);
  CHECK(usage.peak_threads >= 1);
  CHECK(usage.peak_threads <= usage.max_threads);
}

TEST_CASE("connect to localhost looks it up: 'lookup' (null, 127.0.0.1, 4, localhost) before 'connect'") {
  world w;
  listener srv(w);
  REQUIRE(spin(w.loop, [&] { return srv.srv.listening(); }));
  must_call write(1);
  auto c = net::connect(srv.port(), "localhost", w.socket_opts());
  w.record(*c);
  CHECK(c->connecting());
  c->write("hello", write.cb());  // waits for the lookup and the connection
  REQUIRE(spin(w.loop, [&] { return w.has("connect") && srv.got == "hello"; }));
  CHECK(w.index("lookup ok 127.0.0.1 4 localhost") < w.index("connect"));
  CHECK(c->remote_address() == "127.0.0.1");
  CHECK(c->remote_port() == srv.port());
  c->destroy();
  REQUIRE(spin(w.loop, [&] { return w.has("close false"); }));
  write.check();
  CHECK_FALSE(write.error());
  srv.srv.close();
}

TEST_CASE("an IP literal is not looked up: no 'lookup'") {
  world w;
  listener srv(w);
  REQUIRE(spin(w.loop, [&] { return srv.srv.listening(); }));
  auto c = net::connect(srv.port(), "127.0.0.1", w.socket_opts());
  w.record(*c);
  REQUIRE(spin(w.loop, [&] { return w.has("connect"); }));
  CHECK(w.events == std::vector<std::string>{"connect"});
  c->destroy();
  srv.srv.close();
  REQUIRE(spin(w.loop, [&] { return w.has("close false"); }));
}

TEST_CASE("a name that does not resolve: 'lookup' with ENOTFOUND, then 'error' ENOTFOUND, close(true); a waiting write hears why") {
  world w;
  must_call write(1);
  auto c = net::connect(80, nowhere(), w.socket_opts());
  w.record(*c);
  c->write("lost", write.cb());
  REQUIRE(spin(w.loop, [&] { return w.has("close true"); }));
  CHECK(w.events == std::vector<std::string>{"lookup ENOTFOUND  0 " + nowhere(),
                                             "error ENOTFOUND getaddrinfo ENOTFOUND " + nowhere(), "close true"});
  write.check();
  CHECK(write.error() == make_error_code(errc::socket_closed_before_connection));
}

TEST_CASE("destroy() while the lookup is on its way: 'close' (false) only, nothing connects, the loop goes idle") {
  world w;
  listener srv(w);
  REQUIRE(spin(w.loop, [&] { return srv.srv.listening(); }));
  must_call write(1);
  auto c = net::connect(srv.port(), "localhost", w.socket_opts());
  w.record(*c);
  c->write("never", write.cb());
  c->destroy();  // the lookup is on its way: a later turn might have its answer already
  CHECK(w.loop.alive());  // 'close' is still to come
  REQUIRE(spin(w.loop, [&] { return w.has("close false"); }));
  spin(w.loop, [] { return false; }, 40);  // the resolver's answer, if any, is dropped
  CHECK(w.events == std::vector<std::string>{"close false"});
  CHECK(srv.connections == 0);
  write.check();
  CHECK(write.error() == make_error_code(errc::socket_closed_before_connection));
  srv.srv.close();
  REQUIRE(spin(w.loop, [&] { return !w.loop.alive(); }));
}

TEST_CASE("a socket deleted while its lookup is on its way is never called into") {
  world w;
  {
    auto c = net::connect(free_port(), "localhost", w.socket_opts());
    w.record(*c);
  }
  spin(w.loop, [] { return false; }, 40);
  CHECK(w.events.empty());
  CHECK_FALSE(w.loop.alive());
}

TEST_CASE("where localhost has addresses of both families, each is tried in turn until one connects") {
  world w;
  std::vector<net::lookup_address> found;
  bool called = false;
  net::lookup("localhost", {.hints = AI_ADDRCONFIG, .event_loop = &w.loop},
              [&](std::error_code, std::span<const net::lookup_address> a) { called = true, found.assign(a.begin(), a.end()); });
  REQUIRE(spin(w.loop, [&] { return called; }));
  const bool both = std::any_of(found.begin(), found.end(), [](auto& a) { return a.family == 4; }) &&
                    std::any_of(found.begin(), found.end(), [](auto& a) { return a.family == 6; });
  if (!both) {
    MESSAGE("localhost has one family here: the fallback is not exercised");
    return;
  }
  // Listen on the family tried second only: the first attempt is refused.
  const net::lookup_address second = *std::find_if(found.begin(), found.end(), [&](auto& a) { return a.family != found[0].family; });
  net::server srv(w.server_opts());
  srv.on_connection([](net::socket& s) { s.end(); });
  srv.listen(0, second.address);
  REQUIRE(spin(w.loop, [&] { return srv.listening(); }));
  auto c = net::connect(srv.address()->port, "localhost", w.socket_opts());
  w.record(*c);
  REQUIRE(spin(w.loop, [&] { return w.has("connect") || w.has("close true"); }));
  CHECK(w.has("connect"));
  CHECK(c->remote_address() == second.address);
  c->destroy();
  srv.close();
  REQUIRE(spin(w.loop, [&] { return w.has("close false"); }));
}

// A name of two addresses needs /etc/hosts: as root (CI's containers), the
// test adds one under .invalid for its own run and takes it out again.
class hosts_entry {
 public:
  explicit hosts_entry(std::string name) : name_(std::move(name)) {
    if (::geteuid() != 0 || ::access("/etc/hosts", W_OK) != 0) return;
    std::ofstream f("/etc/hosts", std::ios::app);
    f << "127.0.0.1 " << name_ << "\n127.0.0.2 " << name_ << "\n";
    ok_ = bool(f);
  }
  ~hosts_entry() {
    if (!ok_) return;
    std::ifstream in("/etc/hosts");
    std::string kept, line;
    while (std::getline(in, line))
      if (line.find(" " + name_) == std::string::npos) kept += line + "\n";
    in.close();
    std::ofstream("/etc/hosts", std::ios::trunc) << kept;  // in place: /etc/hosts may be a bind mount
  }
  bool ok() const noexcept { return ok_; }

 private:
  std::string name_;
  bool ok_ = false;
};

TEST_CASE("a name of two addresses: each is tried in turn until one connects; when none does, the first one's error") {
  const std::string name = "sluice-two-" + std::to_string(::getpid()) + ".invalid";
  hosts_entry entry(name);
  if (!entry.ok()) {
    MESSAGE("not root: /etc/hosts cannot have a name of two addresses, the fallback is not exercised");
    return;
  }
  world w;
  net::server srv(w.server_opts());
  srv.on_connection([](net::socket& s) { s.end(); });
  srv.listen(0, "127.0.0.2");  // the second address only: the first is refused
  REQUIRE(spin(w.loop, [&] { return srv.listening(); }));
  const std::uint16_t port = srv.address()->port;

  SUBCASE("the second address connects") {
    auto c = net::connect(port, name, w.socket_opts());
    w.record(*c);
    REQUIRE(spin(w.loop, [&] { return w.has("connect") || w.has("close true"); }));
    CHECK(w.events == std::vector<std::string>{"lookup ok 127.0.0.1 4 " + name, "lookup ok 127.0.0.2 4 " + name, "connect"});
    CHECK(c->remote_address() == "127.0.0.2");
    c->destroy();
    REQUIRE(spin(w.loop, [&] { return w.has("close false"); }));
  }
  SUBCASE("neither connects") {
    srv.close();
    REQUIRE(spin(w.loop, [&] { return !srv.listening(); }));
    auto c = net::connect(port, name, w.socket_opts());
    w.record(*c);
    REQUIRE(spin(w.loop, [&] { return w.has("close true"); }));
    CHECK(w.events == std::vector<std::string>{"lookup ok 127.0.0.1 4 " + name, "lookup ok 127.0.0.2 4 " + name,
                                               "error ECONNREFUSED Connection refused", "close true"});
  }
  srv.close();
}

TEST_CASE("a syslog writable to localhost looks it up at every reconnect") {
  world w;
  listener srv(w);
  REQUIRE(spin(w.loop, [&] { return srv.srv.listening(); }));
  syslog_options o;
  o.host = "localhost";
  o.port = srv.port();
  o.reconnect_min = 5ms;
  o.reconnect_max = 40ms;
  o.stream.event_loop = &w.loop;
  auto out = make_syslog_writable(o);
  must_call writes(2);
  out->write("one", writes.cb());
  REQUIRE(spin(w.loop, [&] { return srv.got.find("one") != std::string::npos && srv.open.size() == 1; }));
  srv.open[0]->destroy();  // the receiver drops the connection
  REQUIRE(spin(w.loop, [&] { return !out->connected(); }));
  out->write("two", writes.cb());
  REQUIRE(spin(w.loop, [&] { return srv.got.find("two") != std::string::npos; }));
  CHECK(out->reconnects() == 1);
  CHECK(srv.connections == 2);
  bool ended = false;
  out->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(w.loop, [&] { return ended; }));
  writes.check();
  CHECK_FALSE(writes.error(0));
  CHECK_FALSE(writes.error(1));
  srv.srv.close();
}

}  // namespace
}  // namespace sluice::test
