// net::server::listen(handle), Node's server.listen({fd}): a server serves a
// stream socket made by someone else (systemd's socket activation passes
// them so), TCP or Unix, listening or only bound; what is not a stream
// socket is 'error'. Real sockets on 127.0.0.1 and in a temporary directory.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>
#include <chrono>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "support/net_world.h"
#include "support/spin.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

// A TCP socket bound to 127.0.0.1 on a free port, listening when `listening`:
// what a service manager hands down, as a plain fd.
int tcp_socket(bool listening) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  if (listening) REQUIRE(::listen(fd, 16) == 0);
  return fd;
}

int unix_listener(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof a.sun_path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 16) == 0);
  return fd;
}

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// listen(handle) on `srv`, then its outcome: "listening" or the error's name.
std::string listen_outcome(net_world& w, net::server& srv, int fd) {
  std::string outcome;
  srv.on(event::listening, [&] { outcome = "listening"; });
  srv.on(event::error, [&](std::error_code ec) { outcome = code_name(ec); });
  srv.listen(net::handle{fd});
  REQUIRE(spin(w.loop, [&] { return !outcome.empty(); }));
  return outcome;
}

TEST_CASE("a listening TCP socket passed as a handle is served, and close() closes its fd") {
  net_world w;
  const int fd = tcp_socket(true);
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, fd) == "listening");
  REQUIRE(srv.address());
  CHECK(srv.address()->family == "IPv4");
  const std::uint16_t port = port_of(srv);
  CHECK(port != 0);
  CHECK((::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(echoes(w, srv, net::connect(port, "127.0.0.1", w.socket_opts())));
  srv.close();
  CHECK_FALSE(srv.listening());
  CHECK_FALSE(fd_open(fd));
}

TEST_CASE("a TCP socket that is bound but not listening is made to listen, as libuv's uv_listen() does") {
  net_world w;
  const int fd = tcp_socket(false);
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, fd) == "listening");
  const std::uint16_t port = port_of(srv);
  CHECK(echoes(w, srv, net::connect(port, "127.0.0.1", w.socket_opts())));
}

TEST_CASE("a listening Unix socket passed as a handle is served, and close() leaves its path to its owner") {
  net_world w;
  temp_dir dir;
  const std::string path = dir.file("passed.sock");
  const int fd = unix_listener(path);
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, fd) == "listening");
  REQUIRE(srv.address());
  CHECK(srv.address()->family == "unix");
  CHECK(srv.address()->address == path);
  CHECK(echoes(w, srv, net::connect(path, w.socket_opts())));
  srv.close();
  CHECK_FALSE(fd_open(fd));
  CHECK(std::filesystem::is_socket(path));
}

TEST_CASE("what is not a stream socket is 'error': EPROTOTYPE, ENOTSOCK, EBADF") {
  net_world w;
  temp_dir dir;
  SUBCASE("a datagram socket") {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    net::server srv(w.server_opts());
    CHECK(listen_outcome(w, srv, fd) == "EPROTOTYPE");
    CHECK_FALSE(srv.listening());
    CHECK_FALSE(fd_open(fd));  // the server owned it
  }
  SUBCASE("a regular file") {
    spit(dir.file("plain"), "x");
    const int fd = ::open(dir.file("plain").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    net::server srv(w.server_opts());
    CHECK(listen_outcome(w, srv, fd) == "ENOTSOCK");
    CHECK_FALSE(fd_open(fd));
  }
  SUBCASE("no fd at all") {
    net::server srv(w.server_opts());
    CHECK(listen_outcome(w, srv, -1) == "EBADF");
  }
}

// An accept error that is not one connection's (here EINVAL: the listening
// socket was shut down behind the server's back) would come again at once:
// the server says it and pauses for accept_retry, as for EMFILE, instead of
// calling accept() in a loop that never gives the event loop back.
TEST_CASE("a persistent accept error (EINVAL) is 'error' once per accept_retry, not a busy loop") {
  net_world w;
  const int fd = tcp_socket(true);
  auto opts = w.server_opts();
  opts.accept_retry = std::chrono::milliseconds(20);
  net::server srv(opts);
  std::vector<std::string> errors;
  srv.on(event::error, [&](std::error_code ec) {
    errors.push_back(code_name(ec));
    if (errors.size() == 1000) srv.close();  // the busy loop's way out, so the test fails instead of hanging
  });
  srv.listen(net::handle{fd});
  REQUIRE(spin(w.loop, [&] { return srv.listening(); }));
  REQUIRE(::shutdown(fd, SHUT_RDWR) == 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  spin(w.loop, [&] { return std::chrono::steady_clock::now() >= until; });
  REQUIRE_FALSE(errors.empty());
  CHECK(errors.front() == "EINVAL");
  CHECK(errors.size() <= 300 / 20 + 2);
  CHECK(srv.accept_errors() == errors.size());
  CHECK(srv.listening());
  srv.close();
  CHECK_FALSE(fd_open(fd));
}

}  // namespace
}  // namespace sluice::test
