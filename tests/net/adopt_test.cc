// net::server::adopt() and server_options::hand_off: one loop accepts and
// another serves (the round-robin primary of Node's cluster module, inside
// one process), which is how sluice-logd --threads spreads a Unix socket's
// connections over its loops. Real sockets: socketpair() and 127.0.0.1.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "support/net_world.h"
#include "support/spin.h"

namespace sluice::test {
namespace {

TEST_CASE("a server adopts a connection accepted elsewhere and serves it as one of its own") {
  net_world w;
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  net::server srv(w.server_opts());
  int connections = 0;
  srv.on_connection([&](net::socket& s) {
    ++connections;
    s.on(event::data, [&s](std::string_view c) { s.write(c); });
    s.on(event::end, [&s] { s.end(); });
  });
  srv.adopt(fds[0]);
  // 'connection' before adopt() returns, as in an accept's turn.
  CHECK(connections == 1);
  CHECK(srv.connections() == 1);
  CHECK(srv.accepted() == 1);
  CHECK_FALSE(srv.listening());
  net::socket client(fds[1], w.socket_opts());
  std::string got;
  bool closed = false;
  client.on(event::data, [&](std::string_view d) { got += d; });
  client.on(event::close, [&] { closed = true; });
  client.end("ping");
  REQUIRE(spin(w.loop, [&] { return closed && srv.connections() == 0; }));
  CHECK(got == "ping");
}

TEST_CASE("a connection adopted past max_connections is closed and counted as dropped") {
  net_world w;
  auto o = w.server_opts();
  o.max_connections = 1;
  net::server srv(o);
  int connections = 0;
  srv.on_connection([&](net::socket&) { ++connections; });
  int a[2], b[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b) == 0);
  srv.adopt(a[0]);
  srv.adopt(b[0]);
  CHECK(connections == 1);
  CHECK(srv.dropped() == 1);
  CHECK(::fcntl(b[0], F_GETFD) == -1);  // closed: the server owned it
  char c;
  CHECK(::read(b[1], &c, 1) == 0);  // the peer sees the close
  ::close(a[1]);
  ::close(b[1]);
}

TEST_CASE("with hand_off, each connection accepted is served by a server on another loop, on its thread") {
  net_world w;
  std::atomic<loop*> other{nullptr};
  net::server* adopter = nullptr;  // published by `other`
  std::thread::id served_on;
  std::thread t([&] {
    loop l;
    net::server_options o;
    o.event_loop = &l;
    net::server b(o);
    b.on_connection([&](net::socket& s) {
      served_on = std::this_thread::get_id();
      s.on(event::data, [&s](std::string_view c) { s.write(c); });
      s.on(event::end, [&s] { s.end(); });
    });
    // Nothing to wait for but the posts, until the test lets go.
    l.hold();
    adopter = &b;
    other = &l;
    l.run();
  });
  REQUIRE(spin(w.loop, [&] { return other.load() != nullptr; }));
  auto o = w.server_opts();
  o.hand_off = [&](int fd) { other.load()->post([b = adopter, fd] { b->adopt(fd); }); };
  net::server acceptor(o);
  acceptor.listen(0, "127.0.0.1");
  auto client = net::connect(port_of(acceptor), "127.0.0.1", w.socket_opts());
  std::string got;
  bool closed = false;
  client->on(event::data, [&](std::string_view d) { got += d; });
  client->on(event::close, [&] { closed = true; });
  client->end("ping");
  const bool echoed = spin(w.loop, [&] { return closed; });
  other.load()->post([&] { adopter->close(); other.load()->release(); });
  const std::thread::id served_thread = t.get_id();
  t.join();
  CHECK(echoed);
  CHECK(got == "ping");
  CHECK(served_on == served_thread);
  CHECK(acceptor.accepted() == 0);
  CHECK(acceptor.connections() == 0);
}

}  // namespace
}  // namespace sluice::test
