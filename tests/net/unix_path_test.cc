// net::server's Unix paths in the file system (sluice/net/detail/unix_path.h): a
// socket file left by a listener that died is taken over; anything else at
// the path is left alone (EADDRINUSE); unix_mode and unix_group are set
// before the server accepts. Real sockets in a temporary directory.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "sluice/net/detail/unix_path.h"
#include "support/net_world.h"
#include "support/spin.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

sockaddr_un unix_addr(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof a.sun_path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// A listening Unix socket on `path`, as plain fds (another process's, say).
int raw_listener(const std::string& path, int backlog = 16) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  const sockaddr_un a = unix_addr(path);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, backlog) == 0);
  return fd;
}

// What a killed listener leaves: the socket file, nobody accepting on it.
void leave_stale_socket(const std::string& path) {
  ::close(raw_listener(path));
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  REQUIRE(S_ISSOCK(st.st_mode));
}

using world = sluice::test::net_world;

// listen(path) on `srv`, then its outcome: "listening" or the error's name.
std::string listen_outcome(world& w, net::server& srv, const std::string& path) {
  std::string outcome;
  srv.on(event::listening, [&] { outcome = "listening"; });
  srv.on(event::error, [&](std::error_code ec) { outcome = code_name(ec); });
  srv.listen(path);
  REQUIRE(spin(w.loop, [&] { return !outcome.empty(); }));
  return outcome;
}

TEST_CASE("a socket file nobody accepts on (a listener that was killed) is removed and listened on again") {
  world w;
  temp_dir dir;
  const std::string path = dir.file("s.sock");
  leave_stale_socket(path);
  CHECK(net::detail::is_stale_socket([&] {
    net::detail::sockaddr_any at;
    REQUIRE_FALSE(net::detail::unix_address(path, at));
    return at;
  }()));
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, path) == "listening");
  CHECK(echoes(w, srv, net::connect(path, w.socket_opts())));
  srv.close();
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a regular file at the path is EADDRINUSE and stays as it was") {
  world w;
  temp_dir dir;
  const std::string path = dir.file("not-a-socket");
  spit(path, "precious\n");
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, path) == "EADDRINUSE");
  CHECK(slurp(path) == "precious\n");
  CHECK_FALSE(srv.listening());
}

TEST_CASE("a directory, or a symlink to a stale socket, is EADDRINUSE and stays") {
  world w;
  temp_dir dir;
  const std::string target = dir.file("stale.sock");
  leave_stale_socket(target);
  const std::string link = dir.file("link.sock");
  std::filesystem::create_symlink(target, link);
  const std::string sub = dir.file("subdir");
  std::filesystem::create_directory(sub);
  {
    net::server srv(w.server_opts());
    CHECK(listen_outcome(w, srv, link) == "EADDRINUSE");
  }
  {
    net::server srv(w.server_opts());
    CHECK(listen_outcome(w, srv, sub) == "EADDRINUSE");
  }
  CHECK(std::filesystem::is_symlink(link));
  CHECK(std::filesystem::is_socket(target));  // nothing followed the link
  CHECK(std::filesystem::is_directory(sub));
}

TEST_CASE("a socket somebody accepts on is EADDRINUSE, and that listener keeps its path") {
  world w;
  temp_dir dir;
  const std::string path = dir.file("live.sock");
  const int live = raw_listener(path);
  struct stat before{};
  REQUIRE(::lstat(path.c_str(), &before) == 0);
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, path) == "EADDRINUSE");
  struct stat after{};
  REQUIRE(::lstat(path.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  // It still takes connections.
  const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un a = unix_addr(path);
  CHECK(::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  ::close(c);
  ::close(live);
}

TEST_CASE("a live listener whose backlog is full (connect: EAGAIN) is not taken for a dead one") {
  world w;
  temp_dir dir;
  const std::string path = dir.file("busy.sock");
  const int live = raw_listener(path, 0);
  std::vector<int> waiting;
  const sockaddr_un a = unix_addr(path);
  for (int i = 0; i < 64; ++i) {  // fill the backlog, never accepted
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int r = ::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    waiting.push_back(c);
    if (r != 0) {
      REQUIRE(errno == EAGAIN);
      break;
    }
  }
  net::server srv(w.server_opts());
  CHECK(listen_outcome(w, srv, path) == "EADDRINUSE");
  CHECK(std::filesystem::is_socket(path));
  for (const int c : waiting) ::close(c);
  ::close(live);
}

TEST_CASE("unix_mode and unix_group are the socket's before listen() returns, so before any connection") {
  world w;
  temp_dir dir;
  for (const mode_t mode : {mode_t{0600}, mode_t{0660}, mode_t{0666}, mode_t{0640}}) {
    CAPTURE(mode);
    const std::string path = dir.file("m.sock");
    auto opts = w.server_opts();
    opts.unix_mode = mode;
    opts.unix_group = ::getgid();
    net::server srv(opts);
    srv.listen(path);
    REQUIRE(srv.listening());
    struct stat st{};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == mode);
    CHECK(st.st_gid == ::getgid());
    CHECK(echoes(w, srv, net::connect(path, w.socket_opts())));
    srv.close();
  }
}

TEST_CASE("without unix_mode the umask decides, as before") {
  world w;
  temp_dir dir;
  const std::string path = dir.file("u.sock");
  const mode_t old = ::umask(027);
  net::server srv(w.server_opts());
  srv.listen(path);
  ::umask(old);
  REQUIRE(srv.listening());
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0777 & ~027));
}

TEST_CASE("a group the process may not give is 'error' EPERM, and the path is removed again") {
  if (::geteuid() == 0) {
    MESSAGE("skipped: root may give any group");
    return;
  }
  world w;
  temp_dir dir;
  const std::string path = dir.file("g.sock");
  auto opts = w.server_opts();
  opts.unix_group = 0;  // root's group: not ours unless we are root
  std::vector<gid_t> groups(256);
  const int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
  for (int i = 0; i < n; ++i)
    if (groups[static_cast<std::size_t>(i)] == 0) return;  // a member of group 0: nothing to refuse
  net::server srv(opts);
  CHECK(listen_outcome(w, srv, path) == "EPERM");
  CHECK_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace sluice::test
