// The two ends of perf/fanout/fanout-compare.sh, in one program.
//
//   fanout_client feed --rate LINES_PER_S --seconds S [--size B]
//     writes numbered lines of B bytes to standard output at the rate, for S
//     seconds, then exits (the server's standard input).
//
//   fanout_client subscribe PORT --subscribers N --stalled K --stall-seconds T --seconds S
//     connects N subscribers over loopback; K of them read nothing for the
//     first T seconds, the others read all the time. After S seconds (or
//     when every connection has ended) it prints one JSON line:
//       healthy_mb_per_s   what a reading subscriber received per second
//                          while the stalled ones stalled (average)
//       healthy_min_mb_per_s  the slowest reading subscriber's
//       healthy_max_gap_ms the longest a reading subscriber went without data
//                          during the stall (a stall of the healthy ones)
//       stalled_mb         what the stalled ones received in all (average)
// Whether and when the server cut a stalled one off, the server says (a
// closed socket's FIN waits behind the data a stalled reader has not read).
// One thread on epoll.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fanout_client: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double arg_number(int argc, char** argv, const char* name, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atof(argv[i + 1]);
  return fallback;
}

int feed(int argc, char** argv) {
  const double rate = arg_number(argc, argv, "--rate", 10000);
  const double seconds = arg_number(argc, argv, "--seconds", 10);
  const auto size = static_cast<std::size_t>(arg_number(argc, argv, "--size", 100));
  const auto t0 = clock_type::now();
  std::string batch;
  unsigned long long n = 0;
  // Every millisecond, the lines due by then: a steady rate, not bursts.
  while (since(t0) < seconds) {
    const auto due = static_cast<unsigned long long>(since(t0) * rate);
    batch.clear();
    for (; n < due; ++n) {
      std::string line = std::to_string(n);
      line.resize(size - 1, '.');
      batch += line;
      batch += '\n';
    }
    std::size_t off = 0;
    while (off < batch.size()) {
      const ssize_t w = ::write(STDOUT_FILENO, batch.data() + off, batch.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return errno == EPIPE ? 0 : (die("write"), 1);
      }
      off += static_cast<std::size_t>(w);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 0;
}

struct sub {
  int fd = -1;
  bool stalled = false;
  bool open = true;
  std::size_t bytes_in_stall = 0;  // received during the stall window
  double last_data = 0;            // seconds since start
  double max_gap = 0;              // during the stall window
  std::size_t bytes = 0;
};

int subscribe(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fanout_client subscribe PORT [--subscribers N] [--stalled K] [--stall-seconds T] [--seconds S]\n");
    return 2;
  }
  const int port = std::atoi(argv[2]);
  const int n = static_cast<int>(arg_number(argc, argv, "--subscribers", 100));
  const int stalled = static_cast<int>(arg_number(argc, argv, "--stalled", 10));
  const double stall = arg_number(argc, argv, "--stall-seconds", 20);
  const double seconds = arg_number(argc, argv, "--seconds", stall + 2);

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<sub> subs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    sub& s = subs[static_cast<std::size_t>(i)];
    s.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s.fd < 0) die("socket");
    if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) die("connect");
    s.stalled = i < stalled;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    // A stalled subscriber is not watched until the stall is over.
    if (!s.stalled && epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev) != 0) die("epoll_ctl");
  }
  const auto t0 = clock_type::now();
  std::vector<char> buf(1 << 16);
  std::vector<epoll_event> events(static_cast<std::size_t>(n));
  bool resumed = false;
  int open = n;
  while (open > 0 && since(t0) < seconds) {
    if (!resumed && since(t0) >= stall) {
      resumed = true;
      for (auto& s : subs)
        if (s.stalled && s.open) {
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.u32 = static_cast<uint32_t>(&s - subs.data());
          if (epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev) != 0) die("epoll_ctl");
        }
    }
    const int k = epoll_wait(ep, events.data(), n, 50);
    const double now = since(t0);
    for (int e = 0; e < k; ++e) {
      sub& s = subs[events[e].data.u32];
      if (!s.open) continue;
      bool closed = false;
      for (;;) {
        const ssize_t r = ::recv(s.fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (r > 0) {
          s.bytes += static_cast<std::size_t>(r);
          if (now < stall && !s.stalled) {
            s.bytes_in_stall += static_cast<std::size_t>(r);
            s.max_gap = std::max(s.max_gap, now - s.last_data);
          }
          s.last_data = now;
          continue;
        }
        if (r < 0 && errno == EAGAIN) break;
        closed = true;
        break;
      }
      if (closed) {
        s.open = false;
        epoll_ctl(ep, EPOLL_CTL_DEL, s.fd, nullptr);
        ::close(s.fd);
        --open;
      }
    }
  }
  double total = 0, min_rate = 1e18, max_gap = 0, stalled_total = 0;
  int healthy = 0;
  const double window = std::min(stall, since(t0));
  for (auto& s : subs) {
    if (s.stalled) {
      stalled_total += static_cast<double>(s.bytes) / 1e6;
      continue;
    }
    ++healthy;
    // A reader that got nothing since some point of the stall waited until its end.
    s.max_gap = std::max(s.max_gap, window - std::min(s.last_data, window));
    const double rate = static_cast<double>(s.bytes_in_stall) / window / 1e6;
    total += rate;
    min_rate = std::min(min_rate, rate);
    max_gap = std::max(max_gap, s.max_gap);
  }
  std::printf("{\"healthy_mb_per_s\":%.3f,\"healthy_min_mb_per_s\":%.3f,\"healthy_max_gap_ms\":%.0f,\"stalled_mb\":%.3f}\n",
              healthy ? total / healthy : 0, healthy ? min_rate : 0, max_gap * 1000,
              stalled ? stalled_total / stalled : 0);
  for (auto& s : subs)
    if (s.open) ::close(s.fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "feed") == 0) return feed(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "subscribe") == 0) return subscribe(argc, argv);
  std::fprintf(stderr, "usage: fanout_client feed|subscribe ...\n");
  return 2;
}
