// net::socket and net::server on real sockets: loopback TCP and Unix paths,
// no mocks. Every wait is bounded (spin() gives up after a number of turns)
// and asserts on events, never on elapsed time.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "sluice/stream/async_iterator.h"
#include "support/free_port.h"
#include "support/must_call.h"
#include "support/net_world.h"
#include "support/temp_dir.h"
#include "support/spin.h"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;
using net::server;
using net::socket;

using sluice::test::spin;
using sluice::test::port_of;

struct net_world : sluice::test::net_world {
  // Records a socket's events as "<who> <event>[ <detail>]".
  void record(socket& s, const std::string& who) {
    s.on(event::connect, [this, who] { events.push_back(who + " connect"); });
    s.on(event::ready, [this, who] { events.push_back(who + " ready"); });
    s.on(event::end, [this, who] { events.push_back(who + " end"); });
    s.on(event::finish, [this, who] { events.push_back(who + " finish"); });
    s.on(event::timeout, [this, who] { events.push_back(who + " timeout"); });
    s.on(event::error, [this, who](std::error_code ec) { events.push_back(who + " error " + code_name(ec)); });
    s.on(event::close, [this, who](const event_arg& a) {
      events.push_back(who + " close " + (a.error ? "true" : "false"));
    });
  }
};

// A client that connects and never reads: plain fds, small buffers.
int stalled_client(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// A server whose connections echo what they read.
void echo(server& srv) {
  srv.on_connection([](socket& s) { s.on(event::data, [&s](std::string_view c) { s.write(c); }); });
}

TEST_CASE("a client connects, writes, ends, and reads the echo back; both sides close without error") {
  net_world w;
  server srv(w.server_opts());
  echo(srv);
  srv.listen(0, "127.0.0.1");
  bool listening = false;
  srv.on(event::listening, [&] { listening = true; });
  REQUIRE(spin(w.loop, [&] { return listening; }));
  CHECK(srv.address()->family == "IPv4");
  CHECK(srv.address()->address == "127.0.0.1");

  must_call writes(2);
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  std::string got;
  c->on(event::data, [&](std::string_view d) { got += d; });
  c->write("hello ", writes.cb());  // before the connection: waits for it
  c->on(event::connect, [&] {
    CHECK(c->remote_port() == port_of(srv));
    CHECK(c->remote_address() == "127.0.0.1");
    CHECK(c->local_port() != 0);
    c->end("world", writes.cb());
  });
  REQUIRE(spin(w.loop, [&] { return w.has("client close false"); }));
  CHECK(got == "hello world");
  CHECK(w.events == std::vector<std::string>{"client connect", "client ready", "client finish", "client end",
                                             "client close false"});
  CHECK(c->bytes_written() == 11);
  CHECK(c->bytes_read() == 11);
  CHECK(writes.calls() == 2);
  CHECK_FALSE(writes.error(0));
  CHECK_FALSE(writes.error(1));
  bool closed = false;
  srv.on(event::close, [&] { closed = true; });
  srv.close();
  REQUIRE(spin(w.loop, [&] { return closed; }));
  CHECK(srv.accepted() == 1);
}

TEST_CASE("connecting to a port nobody listens on is ECONNREFUSED, then close(true); a waiting write hears why") {
  net_world w;
  must_call write(1);
  auto c = net::connect(free_port(), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  CHECK(c->connecting());
  c->write("lost", write.cb());
  REQUIRE(spin(w.loop, [&] { return w.has("client close true"); }));
  CHECK(w.events == std::vector<std::string>{"client error ECONNREFUSED", "client close true"});
  write.check();
  CHECK(write.error() == make_error_code(errc::socket_closed_before_connection));
  CHECK(code_name(write.error()) == "ERR_SOCKET_CLOSED_BEFORE_CONNECTION");
}

TEST_CASE("a host name that does not resolve is ENOTFOUND, then close(true)") {
  net_world w;
  auto c = net::connect(80, "example.invalid", w.socket_opts());
  w.record(*c, "client");
  REQUIRE(spin(w.loop, [&] { return w.has("client close true"); }));
  CHECK(w.events == std::vector<std::string>{"client error ENOTFOUND", "client close true"});
}

TEST_CASE("a Unix path nobody listens on is refused too (ENOENT)") {
  net_world w;
  temp_dir dir;
  auto c = net::connect((dir.path / "none.sock").string(), w.socket_opts());
  w.record(*c, "client");
  REQUIRE(spin(w.loop, [&] { return w.has("client close true"); }));
  CHECK(w.events == std::vector<std::string>{"client error ENOENT", "client close true"});
}

TEST_CASE("a peer that resets (SO_LINGER 0) gives the reader ECONNRESET, then close(true)") {
  net_world w;
  server srv(w.server_opts());
  srv.on_connection([](socket& s) {
    s.on(event::data, [&s](std::string_view) { s.reset_and_destroy(); });
  });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  c->on(event::data, [](std::string_view) {});
  c->write("x");
  REQUIRE(spin(w.loop, [&] { return w.has("client close true"); }));
  CHECK(w.events == std::vector<std::string>{"client connect", "client ready", "client error ECONNRESET",
                                             "client close true"});
  srv.close();
  CHECK(spin(w.loop, [&] { return srv.connections() == 0; }));
}

TEST_CASE("half-close: with allow_half_open the server answers after the client's FIN, then ends") {
  net_world w;
  auto opts = w.server_opts();
  opts.connection.allow_half_open = true;
  server srv(opts);
  srv.on_connection([&](socket& s) {
    w.record(s, "server");
    auto got = std::make_shared<std::string>();
    s.on(event::data, [got](std::string_view d) { *got += d; });
    s.on(event::end, [&s, got] {
      CHECK(s.is_writable());  // our side stays open
      s.end("got " + *got);
    });
  });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  std::string got;
  c->on(event::data, [&](std::string_view d) { got += d; });
  c->end("ping");
  REQUIRE(spin(w.loop, [&] { return w.has("client close false") && w.has("server close false"); }));
  CHECK(got == "got ping");
  CHECK(w.index("server end") < w.index("server finish"));
  CHECK(w.index("client finish") < w.index("client end"));
  srv.close();
}

TEST_CASE("half-close the other way: the server ends first, a half-open client goes on writing") {
  net_world w;
  server srv(w.server_opts());
  std::string server_got;
  srv.on_connection([&](socket& s) {
    w.record(s, "server");
    s.on(event::data, [&](std::string_view d) { server_got += d; });
    s.end("bye");
  });
  srv.listen(0, "127.0.0.1");
  auto o = w.socket_opts();
  o.allow_half_open = true;
  auto c = net::connect(port_of(srv), "127.0.0.1", o);
  w.record(*c, "client");
  c->on(event::data, [](std::string_view) {});
  c->on(event::end, [&] {
    CHECK(c->is_writable());
    c->write("after");
    c->end("-fin");
  });
  REQUIRE(spin(w.loop, [&] { return w.has("client close false") && w.has("server close false"); }));
  CHECK(server_got == "after-fin");
  srv.close();
}

TEST_CASE("without allow_half_open (Node's default) the peer's FIN ends our side too") {
  net_world w;
  server srv(w.server_opts());
  srv.on_connection([&](socket& s) {
    w.record(s, "server");
    s.on(event::data, [](std::string_view) {});
  });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  c->on(event::data, [](std::string_view) {});
  c->on(event::connect, [&] { c->end(); });
  REQUIRE(spin(w.loop, [&] { return w.has("client close false") && w.has("server close false"); }));
  // The server never called end(): its 'finish' came from the client's FIN.
  CHECK(w.index("server end") < w.index("server finish"));
  CHECK(w.has("client end"));
  srv.close();
}

TEST_CASE("writing to a peer that has gone is EPIPE or ECONNRESET, then close(true); never SIGPIPE") {
  net_world w;
  auto opts = w.server_opts();
  opts.connection.allow_half_open = true;
  server srv(opts);
  int writes = 0, errors = 0;
  std::function<void(std::error_code)> again;
  srv.on_connection([&](socket& s) {
    w.record(s, "server");
    // Once the peer has closed, write until the kernel says it is gone; a
    // SIGPIPE would end this test process.
    again = [&, &s = s](std::error_code ec) {
      if (ec) {
        ++errors;
        return;
      }
      if (++writes < 1000) s.write("more", [&again](std::error_code e) { again(e); });
    };
    s.on(event::end, [&again] { again({}); });
  });
  srv.listen(0, "127.0.0.1");
  const int fd = stalled_client(port_of(srv));
  ::close(fd);
  REQUIRE(spin(w.loop, [&] { return w.has("server close true"); }));
  CHECK(writes < 1000);
  CHECK(errors == 1);
  REQUIRE(w.events.size() == 3);
  CHECK(w.events[0] == "server end");
  CHECK((w.events[1] == "server error EPIPE" || w.events[1] == "server error ECONNRESET"));
  CHECK(w.events[2] == "server close true");
  srv.close();
}

TEST_CASE("set_no_delay and set_keep_alive set the socket options, before and after the connection") {
  net_world w;
  server srv(w.server_opts());
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  c->set_no_delay();  // kept until connected, as Node does
  c->set_keep_alive(true, 5000ms);
  REQUIRE(spin(w.loop, [&] { return !c->connecting(); }));
  int v = 0;
  socklen_t len = sizeof v;
  REQUIRE(::getsockopt(c->fd(), IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
  CHECK(v == 1);
  REQUIRE(::getsockopt(c->fd(), SOL_SOCKET, SO_KEEPALIVE, &v, &len) == 0);
  CHECK(v == 1);
  REQUIRE(::getsockopt(c->fd(), IPPROTO_TCP, TCP_KEEPIDLE, &v, &len) == 0);
  CHECK(v == 5);
  c->set_no_delay(false);
  REQUIRE(::getsockopt(c->fd(), IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
  CHECK(v == 0);
  c->end();
  REQUIRE(spin(w.loop, [&] { return c->closed(); }));
  srv.close();
}

TEST_CASE("server.close() stops accepting; open connections go on; 'close' comes after the last one") {
  net_world w;
  server srv(w.server_opts());
  socket* conn = nullptr;
  srv.on_connection([&](socket& s) {
    conn = &s;
    s.on(event::data, [&s](std::string_view c) { s.write(c); });
  });
  bool server_closed = false;
  srv.on(event::close, [&] { server_closed = true; });
  srv.listen(0, "127.0.0.1");
  const auto port = port_of(srv);
  auto c = net::connect(port, "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  std::string got;
  c->on(event::data, [&](std::string_view d) { got += d; });
  REQUIRE(spin(w.loop, [&] { return conn != nullptr; }));
  srv.close();
  CHECK_FALSE(srv.listening());
  CHECK_FALSE(srv.address());

  auto late = net::connect(port, "127.0.0.1", w.socket_opts());
  w.record(*late, "late");
  c->write("still here");
  REQUIRE(spin(w.loop, [&] { return got == "still here" && w.has("late close true"); }));
  CHECK(w.has("late error ECONNREFUSED"));
  CHECK_FALSE(server_closed);
  CHECK(srv.connections() == 1);
  c->end();
  REQUIRE(spin(w.loop, [&] { return server_closed; }));
  CHECK(srv.connections() == 0);
}

TEST_CASE("past max_connections a connection is closed at once, the others are served") {
  net_world w;
  auto opts = w.server_opts();
  opts.max_connections = 1;
  server srv(opts);
  echo(srv);
  srv.listen(0, "127.0.0.1");
  auto first = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  std::string got;
  first->on(event::data, [&](std::string_view d) { got += d; });
  first->write("one");
  REQUIRE(spin(w.loop, [&] { return got == "one"; }));
  auto second = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*second, "second");
  second->on(event::data, [](std::string_view) {});
  REQUIRE(spin(w.loop, [&] { return w.has("second close false") || w.has("second close true"); }));
  CHECK(srv.dropped() == 1);
  CHECK(srv.accepted() == 1);
  CHECK(srv.connections() == 1);
  first->end();
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  srv.close();
}

TEST_CASE("set_max_connections() while listening: a connection past the new limit is closed, lifting it serves again") {
  net_world w;
  server srv(w.server_opts());
  echo(srv);
  srv.listen(0, "127.0.0.1");
  auto first = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  std::string got;
  first->on(event::data, [&](std::string_view d) { got += d; });
  first->write("one");
  REQUIRE(spin(w.loop, [&] { return got == "one"; }));
  srv.set_max_connections(1);  // Node: server.maxConnections = 1, at any time
  auto second = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*second, "second");
  second->on(event::data, [](std::string_view) {});
  REQUIRE(spin(w.loop, [&] { return w.has("second close false") || w.has("second close true"); }));
  CHECK(srv.dropped() == 1);
  srv.set_max_connections(std::nullopt);
  auto third = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  std::string third_got;
  third->on(event::data, [&](std::string_view d) { third_got += d; });
  third->write("three");
  REQUIRE(spin(w.loop, [&] { return third_got == "three"; }));
  CHECK(srv.dropped() == 1);
  CHECK(srv.accepted() == 2);
  first->end();
  third->end();
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  srv.close();
}

TEST_CASE("1000 connections at once, each echoed") {
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  // Each connection costs two fds here (both ends are in this process).
  const std::size_t n = std::min<std::size_t>(1000, (lim.rlim_cur - 64) / 2);
  INFO("ulimit -n allows " << n << " connections");
  CHECK(n >= 100);
  net_world w;
  server srv(w.server_opts());
  echo(srv);
  srv.listen(0, "127.0.0.1");
  std::vector<std::unique_ptr<socket>> clients;
  std::size_t echoed = 0, closed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
    auto* raw = c.get();
    c->on(event::data, [raw, &echoed](std::string_view d) {
      CHECK(d == "x");
      ++echoed;
      raw->end();
    });
    c->on(event::close, [&closed](const event_arg& a) {
      CHECK_FALSE(a.error);
      ++closed;
    });
    c->write("x");
    clients.push_back(std::move(c));
  }
  REQUIRE(spin(w.loop, [&] { return closed == n; }, 20000));
  CHECK(echoed == n);
  CHECK(srv.accepted() == n);
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  srv.close();
}

TEST_CASE("a client that never reads: write() returns false, then the write deadline cuts it off") {
  net_world w;
  auto opts = w.server_opts();
  opts.connection.write_deadline = 100ms;
  server srv(opts);
  std::vector<int> calls;  // per write: how often its callback ran
  bool refused = false;
  srv.on_connection([&](socket& s) {
    w.record(s, "server");
    // A producer that honours backpressure: it writes until write() says
    // stop, and goes on at each 'drain', until the one that never comes.
    auto fill = [&s, &calls, &refused] {
      refused = false;
      while (!refused && calls.size() < 100000) {
        const std::size_t i = calls.size();
        calls.push_back(0);
        refused = !s.write(std::string(16384, 'z'), [&calls, i](std::error_code) { ++calls[i]; });
      }
    };
    s.on(event::drain, fill);
    fill();
  });
  srv.listen(0, "127.0.0.1");
  const int fd = stalled_client(port_of(srv));
  REQUIRE(spin(w.loop, [&] { return w.has("server close true"); }));
  CHECK(refused);
  CHECK(calls.size() < 100000);
  CHECK(w.events == std::vector<std::string>{"server error ERR_SLUICE_WRITE_TIMEOUT", "server close true"});
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  for (std::size_t i = 0; i < calls.size(); ++i) CHECK_MESSAGE(calls[i] == 1, "write " << i);
  ::close(fd);
  srv.close();
}

TEST_CASE("the write deadline counts the bytes it cut off and every callback is called once with an error") {
  net_world w;
  auto opts = w.server_opts();
  opts.connection.write_deadline = 50ms;
  server srv(opts);
  must_call writes(4);
  std::size_t cut = 0, written = 0;
  srv.on_connection([&](socket& s) {
    const std::string chunk(1 << 20, 'z');
    for (int i = 0; i < 4; ++i) s.write(chunk, writes.cb());
    s.on(event::error, [](std::error_code) {});
    s.on(event::close, [&s, &cut, &written] {
      cut = s.bytes_cut_off();
      written = s.bytes_written();
    });
  });
  srv.listen(0, "127.0.0.1");
  const int fd = stalled_client(port_of(srv));
  REQUIRE(spin(w.loop, [&] { return cut != 0; }));
  CHECK(cut + written == 4u << 20);
  writes.check();
  for (std::size_t i = 0; i < 4; ++i) CHECK(writes.error(i));
  ::close(fd);
  srv.close();
  spin(w.loop, [&] { return srv.connections() == 0; });
}

TEST_CASE("a reader that keeps up is never cut off by the write deadline") {
  net_world w;
  auto opts = w.server_opts();
  opts.connection.write_deadline = 1000ms * time_scale();  // progress, on a loaded machine too
  server srv(opts);
  // Writes 64 chunks of 64 KiB, waiting for 'drain' whenever write() says so.
  struct producer {
    socket& s;
    int left = 64;
    void run() {
      while (left > 0) {
        --left;
        if (!s.write(std::string(65536, 'y'))) {
          s.once(event::drain, [this] { run(); });
          return;
        }
      }
      s.end();
    }
  };
  std::unique_ptr<producer> p;
  srv.on_connection([&](socket& s) {
    w.record(s, "server");
    p = std::make_unique<producer>(producer{s});
    p->run();
  });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  std::size_t got = 0;
  c->on(event::data, [&](std::string_view d) { got += d.size(); });
  REQUIRE(spin(w.loop, [&] { return w.has("server close false"); }, 20000));
  CHECK(got == 64u * 65536);
  CHECK_FALSE(w.has("server error ERR_SLUICE_WRITE_TIMEOUT"));
  srv.close();
}

TEST_CASE("set_timeout: an idle socket gets 'timeout' and stays open; activity moves the timer") {
  net_world w;
  server srv(w.server_opts());
  echo(srv);
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  int timeouts = 0;
  c->on(event::data, [](std::string_view) {});
  c->on(event::timeout, [&] {
    ++timeouts;
    CHECK_FALSE(c->destroyed());
    c->set_timeout(0ms);
    c->end();
  });
  c->set_timeout(30ms);
  c->write("a");
  REQUIRE(spin(w.loop, [&] { return w.has("client close false"); }));
  CHECK(timeouts == 1);
  CHECK(w.index("client timeout") < w.index("client finish"));
  srv.close();
}

TEST_CASE("a server on a Unix path: address() is the path, close() removes it") {
  net_world w;
  temp_dir dir;
  const std::string path = (dir.path / "s.sock").string();
  server srv(w.server_opts());
  echo(srv);
  srv.listen(path);
  REQUIRE(srv.address());
  CHECK(srv.address()->address == path);
  CHECK(srv.address()->family == "unix");
  auto c = net::connect(path, w.socket_opts());
  w.record(*c, "client");
  std::string got;
  c->on(event::data, [&](std::string_view d) { got += d; });
  c->end("over unix");
  REQUIRE(spin(w.loop, [&] { return w.has("client close false"); }));
  CHECK(got == "over unix");
  srv.close();
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("listening on a port in use is 'error' EADDRINUSE on the next tick") {
  net_world w;
  server a(w.server_opts());
  a.listen(0, "127.0.0.1");
  server b(w.server_opts());
  std::error_code err;
  b.on(event::error, [&](std::error_code ec) { err = ec; });
  b.listen(port_of(a), "127.0.0.1");
  CHECK_FALSE(err);
  REQUIRE(spin(w.loop, [&] { return bool(err); }));
  CHECK(code_name(err) == "EADDRINUSE");
  a.close();
}

TEST_CASE("out of fds (EMFILE), the server reports the accept error, pauses, and accepts once fds are back") {
  net_world w;
  auto opts = w.server_opts();
  opts.accept_retry = 20ms;
  server srv(opts);
  std::string got;
  srv.on_connection([&](socket& s) { s.on(event::data, [&](std::string_view d) { got += d; }); });
  std::vector<std::string> errors;
  srv.on(event::error, [&](std::error_code ec) { errors.push_back(code_name(ec)); });
  srv.listen(0, "127.0.0.1");
  REQUIRE(spin(w.loop, [&] { return srv.listening(); }));
  // The kernel completes the connection in the backlog; accept() then
  // finds no fd left.
  const int client = stalled_client(port_of(srv));
  REQUIRE(::write(client, "late", 4) == 4);
  std::vector<int> hogs;
  for (;;) {
    const int fd = ::dup(0);
    if (fd < 0) break;
    hogs.push_back(fd);
  }
  const bool twice = spin(w.loop, [&] { return errors.size() >= 2; });
  for (int fd : hogs) ::close(fd);
  REQUIRE(twice);
  CHECK(errors.front() == "EMFILE");
  CHECK(srv.listening());
  CHECK(srv.accepted() == 0);
  REQUIRE(spin(w.loop, [&] { return got == "late"; }));
  CHECK(srv.accepted() == 1);
  CHECK(srv.accept_errors() == errors.size());
  ::close(client);
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  srv.close();
}

TEST_CASE("a turn's small writes go out together: many chunks per sendmsg") {
  net_world w;
  server srv(w.server_opts());
  std::size_t got = 0;
  srv.on_connection([&](socket& s) { s.on(event::data, [&](std::string_view d) { got += d.size(); }); });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  must_call writes(1000);
  c->on(event::connect, [&] {
    for (int i = 0; i < 1000; ++i) c->write(std::string(100, 'c'), writes.cb());
  });
  REQUIRE(spin(w.loop, [&] { return got == 100000; }));
  CHECK(c->chunks_written() == 1000);
  INFO("syscalls: " << c->write_syscalls());
  CHECK(c->chunks_written() >= 16 * c->write_syscalls());
  c->end();
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  writes.check();
  srv.close();
}

// Issue 26, item 5 (docs/differences-from-node.md): the turn's writes wait
// for one sendmsg, so write() cannot know that the kernel would have taken
// the first at once, as Node's does (true, true, no 'drain').
TEST_CASE("write() in one turn counts everything the turn wrote: 16383 + 1 bytes is false, then 'drain'") {
  net_world w;
  server srv(w.server_opts());
  std::size_t got = 0;
  srv.on_connection([&](socket& s) { s.on(event::data, [&](std::string_view d) { got += d.size(); }); });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  must_call writes(2);
  int drains = 0;
  c->on(event::drain, [&] { ++drains; });
  std::vector<bool> returned;
  std::size_t length = 0;
  c->on(event::connect, [&] {
    returned.push_back(c->write(std::string(16383, 'a'), writes.cb()));
    returned.push_back(c->write("b", writes.cb()));
    length = c->writable_length();
  });
  REQUIRE(spin(w.loop, [&] { return got == 16384 && writes.calls() == 2; }));
  CHECK(returned == std::vector<bool>{true, false});
  CHECK(length == 16384);
  CHECK(drains == 1);
  CHECK(c->write_syscalls() == 1);
  CHECK_FALSE(writes.error(0));
  CHECK_FALSE(writes.error(1));
  c->end();
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  srv.close();
}

// socket_options::coalesce false (tls::socket's TCP socket): each write goes
// to the kernel inside write(), as in Node: true, true, no 'drain'.
TEST_CASE("coalesce false: a write goes to the kernel at once, as in Node's: 16383 + 1 bytes is true, true") {
  net_world w;
  server srv(w.server_opts());
  std::size_t got = 0;
  srv.on_connection([&](socket& s) { s.on(event::data, [&](std::string_view d) { got += d.size(); }); });
  srv.listen(0, "127.0.0.1");
  net::socket_options o = w.socket_opts();
  o.coalesce = false;
  auto c = net::connect(port_of(srv), "127.0.0.1", o);
  must_call writes(2);
  int drains = 0;
  c->on(event::drain, [&] { ++drains; });
  std::vector<bool> returned;
  std::size_t syscalls_in_write = 0;
  c->on(event::connect, [&] {
    returned.push_back(c->write(std::string(16383, 'a'), writes.cb()));
    syscalls_in_write = c->write_syscalls();
    returned.push_back(c->write("b", writes.cb()));
  });
  REQUIRE(spin(w.loop, [&] { return got == 16384 && writes.calls() == 2; }));
  CHECK(returned == std::vector<bool>{true, true});
  CHECK(syscalls_in_write == 1);
  CHECK(c->write_syscalls() == 2);
  CHECK(drains == 0);
  CHECK_FALSE(writes.error(0));
  CHECK_FALSE(writes.error(1));
  c->end();
  REQUIRE(spin(w.loop, [&] { return srv.connections() == 0; }));
  srv.close();
}

// Issue 26, item 5 (docs/differences-from-node.md): the write waits for the
// turn's sendmsg, so write() to a peer that has reset returns true; the
// reset comes as the callback's error and 'error' at the end of the turn.
// Node writes inside write(), sees it, and returns false.
TEST_CASE("write() to a peer that has reset returns true; the callback and 'error' hear the reset") {
  net_world w;
  server srv(w.server_opts());
  // It resets once it has read from the client, so the client has
  // connected before the RST comes.
  srv.on_connection([](socket& s) { s.on(event::data, [&s](std::string_view) { s.reset_and_destroy(); }); });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  c->pause();  // reads nothing, so the RST is met by the write
  must_call first(1);
  c->on(event::connect, [&] { c->write("a", first.cb()); });
  REQUIRE(spin(w.loop, [&] { return first.calls() == 1 && srv.accepted() == 1 && srv.connections() == 0; }));
  CHECK_FALSE(first.error());
  // The RST is on its way over loopback: wait until the kernel has it.
  REQUIRE(spin(w.loop, [&] {
    pollfd p{c->fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLIN));
  }));
  must_call write(1);
  CHECK(c->write("x", write.cb()));
  REQUIRE(spin(w.loop, [&] { return w.has("client close true"); }));
  write.check();
  const std::string why = code_name(write.error());
  CHECK((why == "ECONNRESET" || why == "EPIPE"));
  CHECK(w.has("client error " + why));
  srv.close();
}

// Issue 34, item 18: destroyed with an error while a write waits for the
// kernel, Node emits 'error' (next tick) before the write callbacks, which
// come as the handle closes, then 'close' (tests/net: destroy-error-inflight,
// from Node v20). sluice called the callbacks on the tick before 'error'.
TEST_CASE("destroy(err) with a write in flight: 'error', then the write callbacks, then 'close', as in Node") {
  net_world w;
  server srv(w.server_opts());
  srv.on_connection([&](socket& s) {
    s.on(event::data, [](std::string_view) {});
    s.on(event::error, [](std::error_code) {});
  });
  srv.listen(0, "127.0.0.1");
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  must_call w1(1), w2(1), w3(1);
  const auto note = [&w](const char* who) {
    return [&w, who](std::error_code ec) { w.events.push_back(std::string(who) + " " + (ec ? code_name(ec) : "ok")); };
  };
  const std::error_code boom(EPIPE, std::system_category());
  c->on(event::connect, [&] {
    // More than the kernel takes at once: the first write waits for POLLOUT.
    c->write(std::string(8 << 20, 'a'), w1.cb(note("w1")));
    // A later turn, so that these wait behind it (a turn's writes leave
    // together: these would be in flight with it).
    w.loop.set_immediate([&] {
      CHECK(c->writable_length() > 0);  // the first write is still in flight
      c->write("b", w2.cb(note("w2")));
      c->write("c", w3.cb(note("w3")));
      w.loop.next_tick([&] { w.events.push_back("tick after destroy"); });
      c->destroy(boom);
    });
  });
  REQUIRE(spin(w.loop, [&] { return w.has("client close true"); }));
  w1.check();
  w2.check();
  w3.check();
  // Node's w1 hears success (its cancelled request); sluice's the destroy
  // (docs/differences-from-node.md). The order is Node's.
  const std::vector<std::string> expected{
      "client connect", "client ready", "tick after destroy", "client error EPIPE",
      "w1 ERR_STREAM_DESTROYED", "w2 EPIPE", "w3 EPIPE", "client close true"};
  CHECK(w.events == expected);
  srv.close();
  spin(w.loop, [&] { return srv.connections() == 0; });
}

// Issue 26, item 6: end(cb) after destroy(), with nothing in flight: Node's
// Writable keeps the callback and never calls it; sluice keeps it while the
// loop runs too, and the socket's destructor calls it with
// ERR_STREAM_DESTROYED, as it does every callback a stream still owes
// (docs/differences-from-node.md). The differential scenarios
// end-after-destroy-* pin the cases with a write in flight.
TEST_CASE("end(cb) after destroy() with nothing in flight: not called by the loop, then by the destructor") {
  net_world w;
  must_call owed(1);
  {
    socket idle(w.socket_opts());
    w.record(idle, "idle");
    idle.destroy();
    idle.end(owed.cb());
    REQUIRE(spin(w.loop, [&] { return w.has("idle close false"); }));
    w.loop.run();
    CHECK(owed.calls() == 0);
    CHECK(idle.writable_ended());
  }
  owed.check();
  CHECK(owed.error() == make_error_code(errc::destroyed));
}

// Issue 26, item 1: a write made in 'connect' and a destroy() right after:
// the bytes reach the peer and the callback hears success, as in Node.
TEST_CASE("a write then destroy() in 'connect' lands; the callback hears success; 'ready' still comes") {
  net_world w;
  server srv(w.server_opts());
  std::string got;
  bool ended = false;
  srv.on_connection([&](socket& s) {
    s.on(event::data, [&](std::string_view d) { got += d; });
    s.on(event::end, [&] { ended = true; });
  });
  srv.listen(0, "127.0.0.1");
  must_call write(1);
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  w.record(*c, "client");
  c->on(event::connect, [&] {
    c->write("a", write.cb());
    c->destroy();
  });
  REQUIRE(spin(w.loop, [&] { return ended && w.has("client close false"); }));
  CHECK(got == "a");
  CHECK(w.events == std::vector<std::string>{"client connect", "client ready", "client close false"});
  write.check();
  CHECK_FALSE(write.error());
  srv.close();
}

TEST_CASE("net::is_ip, is_ipv4, is_ipv6 follow Node's net.isIP") {
  CHECK(net::is_ip("127.0.0.1") == 4);
  CHECK(net::is_ip("255.255.255.255") == 4);
  CHECK(net::is_ip("256.0.0.1") == 0);
  CHECK(net::is_ip("01.2.3.4") == 0);
  CHECK(net::is_ip("::1") == 6);
  CHECK(net::is_ip("::ffff:127.0.0.1") == 6);
  CHECK(net::is_ip("fe80::1%eth0") == 6);
  CHECK(net::is_ip("fe80::1%") == 0);
  CHECK(net::is_ip("fe80::1%e th0") == 0);
  CHECK(net::is_ip("localhost") == 0);
  CHECK(net::is_ip(std::string(100, '1')) == 0);
  CHECK(net::is_ipv4("10.0.0.1"));
  CHECK_FALSE(net::is_ipv4("::1"));
  CHECK(net::is_ipv6("2001:db8::"));
  CHECK_FALSE(net::is_ipv6("10.0.0.1"));
}

TEST_CASE("an unref'd listening server lets loop::run() return; ref() makes it hold the loop again") {
  net_world w;
  server srv(w.server_opts());
  srv.listen(0, "127.0.0.1");
  srv.unref();
  w.loop.run_until_idle();  // 'listening'
  REQUIRE_FALSE(w.loop.alive());  // (else run() below would wait forever)
  w.loop.run();  // returns: only the unref'd listener is left
  CHECK(srv.listening());
  srv.ref();
  CHECK(w.loop.alive());
  bool connected = false;
  srv.on_connection([&](socket& s) {
    connected = true;
    s.destroy();
  });
  auto c = net::connect(port_of(srv), "127.0.0.1", w.socket_opts());
  REQUIRE(spin(w.loop, [&] { return connected; }));
  srv.close();
  c->destroy();
  w.loop.run();  // returns once both have closed
  CHECK_FALSE(w.loop.alive());
}

TEST_CASE("a paused socket whose consumer stops reading stops reading at the high-water mark") {
  // The engine of `for await` and of asio::chunks: a consumer waits in
  // read() for one chunk, gets it, and reads no more. The peer then writes
  // up to 4 MiB, as fast as the kernel takes it: the socket reads until its
  // buffer holds the high-water mark (16 KiB) or more, then stops, so the
  // peer's bytes wait in the kernel (whose buffers may take all 4 MiB on
  // loopback) instead of piling up in the process.
  net_world w;
  server srv(w.server_opts());
  socket* conn = nullptr;
  std::shared_ptr<async_iterator> it;
  std::string first;
  srv.on_connection([&](socket& s) {
    conn = &s;
    it = async_iterator::create(s, {.destroy_on_return = false});
    REQUIRE(it->next().kind == async_iterator::step::pending);
    it->wait([&] {
      async_iterator::step st = it->next();
      REQUIRE(st.kind == async_iterator::step::chunk);
      first = std::move(st.value);
    });
  });
  srv.listen(0, "127.0.0.1");
  const int fd = stalled_client(port_of(srv));
  REQUIRE(::write(fd, "hello", 5) == 5);
  REQUIRE(spin(w.loop, [&] { return first == "hello"; }));
  REQUIRE(::fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
  const std::string block(65536, 'x');
  std::size_t sent = 0;
  int stalls = 0;
  // Writes until the kernel has refused more for 20 turns in a row.
  spin(w.loop, [&] {
    const ssize_t n = ::write(fd, block.data(), block.size());
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      stalls = 0;
    } else {
      ++stalls;
    }
    return stalls == 20 || sent >= 4u << 20;
  });
  CHECK(sent >= 1u << 20);
  const std::size_t held = conn->readable_length();
  CHECK(held >= 16384);
  CHECK(held < 16384 + 65536);  // at most one read (64 KiB) past the mark
  CHECK(conn->bytes_read() == 5 + held);
  CHECK(it->next().value.size() == held);  // all of it, in one read()
  it->close();
  ::close(fd);
  srv.close();
}

}  // namespace
}  // namespace sluice::test
