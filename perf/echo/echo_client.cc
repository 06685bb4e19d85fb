// The load for perf/echo/echo-compare.sh: CONNECTIONS clients over loopback,
// each sending a SIZE-byte message and waiting for all of it to come back
// before sending the next (ping-pong), until ROUND_TRIPS in total. One
// thread on epoll, so the client costs as little as a client can; the server
// under test is measured by its own CPU time, not by this program's.
//
//   echo_client PORT [--connections N] [--size B] [--round-trips R]
//
// Prints one JSON line: {"round_trips":R,"seconds":S,"connections":N,"size":B}.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "echo_client: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

struct connection {
  int fd = -1;
  std::size_t received = 0;  // of the current round trip's reply
};

long number(const char* text, const char* name) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v <= 0) {
    std::fprintf(stderr, "echo_client: %s must be a positive number, not '%s'\n", name, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: echo_client PORT [--connections N] [--size B] [--round-trips R]\n");
    return 2;
  }
  const long port = number(argv[1], "PORT");
  long connections = 100, size = 128, round_trips = 200000;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string opt = argv[i];
    if (opt == "--connections") connections = number(argv[i + 1], "--connections");
    else if (opt == "--size") size = number(argv[i + 1], "--size");
    else if (opt == "--round-trips") round_trips = number(argv[i + 1], "--round-trips");
    else {
      std::fprintf(stderr, "echo_client: unknown option %s\n", argv[i]);
      return 2;
    }
  }

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");
  std::vector<connection> conns(static_cast<std::size_t>(connections));
  std::vector<char> message(static_cast<std::size_t>(size), 'x');
  std::vector<char> reply(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < conns.size(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[i].fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  }

  long started = 0, done = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (auto& c : conns) {
    if (started == round_trips) break;
    if (send(c.fd, message.data(), message.size(), MSG_NOSIGNAL) != size) die("send");
    ++started;
  }
  std::vector<epoll_event> events(conns.size());
  while (done < round_trips) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10000);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("epoll_wait (the server stopped answering?)");
    for (int k = 0; k < n; ++k) {
      connection& c = conns[events[k].data.u64];
      ssize_t got = recv(c.fd, reply.data(), reply.size() - c.received, 0);
      if (got == 0) {
        errno = ECONNRESET;
        die("recv (the server closed the connection)");
      }
      if (got < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        die("recv");
      }
      c.received += static_cast<std::size_t>(got);
      if (c.received < reply.size()) continue;
      c.received = 0;
      ++done;
      if (started < round_trips) {
        if (send(c.fd, message.data(), message.size(), MSG_NOSIGNAL) != size) die("send");
        ++started;
      }
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"round_trips\":%ld,\"seconds\":%.6f,\"connections\":%ld,\"size\":%ld}\n", done,
              seconds, connections, size);
  for (auto& c : conns) close(c.fd);
  return 0;
}
