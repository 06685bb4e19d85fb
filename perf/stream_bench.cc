// stream_bench: 100-byte writes to one consumer over loopback TCP, through a
// sluice net::socket (every write a separate write() call, backpressure by
// 'drain') and through a bare writev() loop of IOV_MAX 100-byte buffers on a
// blocking socket: the ceiling. The consumer is a child process that reads
// and discards. Prints bytes/s of each, their ratio, and the chunks per
// sendmsg() the socket achieved (its own counters).
//
// A rate on loopback is the slower of two processes sharing the machine's
// cores: the sender's and the consumer's, whose reads copy every byte once
// more. So each run also prints the CPU time (user + system) the sender and
// the consumer spent per 100 bytes: the sender's is what sluice can change,
// and a consumer near 100% of a core says the rate was the consumer's.
//
//   stream_bench [--seconds S] [--chunk B] [--runs N] [--quick] [--only sluice|raw|contiguous]
//
// --only runs one case, for a profiler (callgrind: user-space instructions
// per chunk are its Ir over the chunks it prints).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"

namespace {

struct listener {
  int fd = -1;
  std::uint16_t port = 0;
};

listener listen_any() {
  listener l;
  l.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (l.fd < 0 || ::bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l.fd, 8) != 0 ||
      ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("stream_bench: listen");
    std::exit(1);
  }
  l.port = ntohs(a.sin_port);
  return l;
}

// The consumer: accepts one connection at a time, reads it to EOF, and
// exits when the listener is closed by the parent (accept fails).
pid_t start_consumer(const listener& l) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int c = ::accept(l.fd, nullptr, nullptr);
    if (c < 0) ::_exit(0);
    while (::read(c, buf.data(), buf.size()) > 0) {
    }
    ::close(c);
  }
}

struct result {
  double bytes_per_s = 0;
  double chunks_per_syscall = 0;
  double bytes = 0;
  double seconds = 0;
  double sender_cpu = 0;    // s, user + system, this process
  double consumer_cpu = 0;  // s, user + system, the consumer child
};

double own_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// utime + stime of `pid` from /proc/PID/stat (fields 14 and 15, in clock
// ticks); the command name in parentheses may hold spaces, so parse after it.
double cpu_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  const char* p = line.c_str() + close + 2;  // field 3, the state
  for (int field = 3; field < 14; ++field) p = std::strchr(p, ' ') + 1;
  char* end = nullptr;
  const double ut = std::strtod(p, &end);
  const double st = std::strtod(end, nullptr);
  return (ut + st) / double(::sysconf(_SC_CLK_TCK));
}

// Runs one case and fills in the CPU both processes spent on it.
template <class Run>
result measured(pid_t consumer, Run run) {
  const double s0 = own_cpu(), c0 = cpu_of(consumer);
  result r = run();
  // The consumer may still be reading the last bytes: wait until its CPU
  // time stops moving (it blocks in read() once the connection is drained).
  double c1 = cpu_of(consumer);
  for (int i = 0; i < 50; ++i) {
    ::usleep(20000);
    const double c = cpu_of(consumer);
    if (c == c1) break;
    c1 = c;
  }
  r.sender_cpu = own_cpu() - s0;
  r.consumer_cpu = c1 - c0;
  return r;
}

// sluice: write() 100-byte chunks until false, go on at 'drain', for S seconds.
result run_sluice(std::uint16_t port, double seconds, std::size_t chunk_size) {
  sluice::loop l;
  sluice::net::socket_options o;
  o.event_loop = &l;
  auto s = sluice::net::connect(port, "127.0.0.1", o);
  const std::string chunk(chunk_size, 'x');
  std::size_t bytes = 0;
  bench::clock::time_point t0;
  bool done = false;
  std::function<void()> pump = [&] {
    for (;;) {
      if (bench::seconds_since(t0) >= seconds) {
        done = true;
        s->end();
        return;
      }
      for (int i = 0; i < 256; ++i) {
        bytes += chunk.size();
        if (!s->write(chunk)) {
          s->once(sluice::event::drain, [&] { pump(); });
          return;
        }
      }
    }
  };
  s->on(sluice::event::connect, [&] {
    t0 = bench::clock::now();
    pump();
  });
  s->on(sluice::event::error, [](std::error_code ec) {
    std::fprintf(stderr, "stream_bench: sluice socket: %s\n", ec.message().c_str());
    std::exit(1);
  });
  s->resume();
  l.run();
  const double took = bench::seconds_since(t0);
  result r;
  r.bytes = static_cast<double>(bytes);
  r.seconds = took;
  r.bytes_per_s = static_cast<double>(bytes) / took;
  r.chunks_per_syscall = s->write_syscalls() ? double(s->chunks_written()) / double(s->write_syscalls()) : 0;
  (void)done;
  return r;
}

// The ceiling: writev() of IOV_MAX chunk-sized buffers on a blocking socket.
// With `contiguous`, the same bytes as one buffer (one iovec): what the
// socket hands the kernel, whose fd_writer merges chunks that lie side by
// side in its arena; the kernel copies an iovec at a time, so 1024 small
// ones cost it more than one large one.
result run_raw(std::uint16_t port, double seconds, std::size_t chunk_size, bool contiguous = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("stream_bench: connect");
    std::exit(1);
  }
  std::vector<std::string> chunks(IOV_MAX, std::string(chunk_size, 'x'));
  std::vector<iovec> iov(IOV_MAX);
  for (std::size_t i = 0; i < iov.size(); ++i) iov[i] = {chunks[i].data(), chunk_size};
  std::string all(IOV_MAX * chunk_size, 'x');
  if (contiguous) iov.assign(1, iovec{all.data(), all.size()});
  std::size_t bytes = 0, calls = 0;
  const auto t0 = bench::clock::now();
  while (bench::seconds_since(t0) < seconds) {
    const ssize_t n = ::writev(fd, iov.data(), static_cast<int>(iov.size()));
    if (n < 0) {
      std::perror("stream_bench: writev");
      std::exit(1);
    }
    // A short writev is counted as what it wrote; the next starts afresh
    // (the consumer discards the bytes, their order does not matter here).
    bytes += static_cast<std::size_t>(n);
    ++calls;
  }
  const double took = bench::seconds_since(t0);
  ::close(fd);
  result r;
  r.bytes_per_s = static_cast<double>(bytes) / took;
  r.chunks_per_syscall = double(IOV_MAX);
  r.bytes = static_cast<double>(bytes);
  r.seconds = took;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2;
  std::size_t chunk = 100;
  int runs = 3;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      seconds = 0.3;
      runs = 1;
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--chunk" && i + 1 < argc) {
      chunk = static_cast<std::size_t>(std::atol(argv[++i]));
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: stream_bench [--seconds S] [--chunk B] [--runs N] [--quick] [--only sluice|raw|contiguous]\n");
      return 2;
    }
  }
  if (std::getenv("SLUICE_BENCH_QUICK")) {
    seconds = 0.3;
    runs = 1;
  }
  const listener l = listen_any();
  const pid_t consumer = start_consumer(l);
  if (!only.empty()) {
    const result x = only == "raw"          ? run_raw(l.port, seconds, chunk)
                     : only == "contiguous" ? run_raw(l.port, seconds, chunk, true)
                                            : run_sluice(l.port, seconds, chunk);
    ::shutdown(l.fd, SHUT_RDWR);
    ::close(l.fd);
    ::kill(consumer, SIGTERM);
    ::waitpid(consumer, nullptr, 0);
    std::printf("%s: %.0f chunks of %zu bytes, %.1f chunks a syscall\n", only.c_str(),
                x.bytes / double(chunk), chunk, x.chunks_per_syscall);
    return 0;
  }
  result best_sluice, best_raw;
  // CPU ns per chunk, and the share of the wall time each process was on a
  // CPU; a consumer near 1.00 was the bound.
  const auto show = [&](const char* name, const result& x) {
    const double chunks = x.bytes / double(chunk);
    std::printf("    %-7s %8.1f MB/s  sender %5.1f ns CPU a chunk (%.2f of the wall), consumer %5.1f ns (%.2f)\n",
                name, x.bytes_per_s / 1e6, x.sender_cpu * 1e9 / chunks, x.sender_cpu / x.seconds,
                x.consumer_cpu * 1e9 / chunks, x.consumer_cpu / x.seconds);
  };
  std::vector<double> rate_ratios, cpu_ratios;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  for (int r = 0; r < runs; ++r) {  // interleaved: a noisy second hurts both
    const result s = measured(consumer, [&] { return run_sluice(l.port, seconds, chunk); });
    const result w = measured(consumer, [&] { return run_raw(l.port, seconds, chunk); });
    const result c = measured(consumer, [&] { return run_raw(l.port, seconds, chunk, true); });
    rate_ratios.push_back(s.bytes_per_s / w.bytes_per_s);
    cpu_ratios.push_back((s.sender_cpu / s.bytes) / (w.sender_cpu / w.bytes));
    std::printf("  run %d: sluice / raw %.2fx in rate, %.2fx in sender CPU a chunk\n", r + 1, rate_ratios.back(),
                cpu_ratios.back());
    show("sluice", s);
    show("raw", w);
    show("raw1", c);
    if (s.bytes_per_s > best_sluice.bytes_per_s) best_sluice = s;
    if (w.bytes_per_s > best_raw.bytes_per_s) best_raw = w;
  }
  ::shutdown(l.fd, SHUT_RDWR);
  ::close(l.fd);
  ::kill(consumer, SIGTERM);
  ::waitpid(consumer, nullptr, 0);
  std::printf("streaming %zu-byte writes over loopback TCP, best of %d x %.1f s\n", chunk, runs, seconds);
  std::printf("  sluice net::socket  %8.1f MB/s  %6.1f chunks per sendmsg\n", best_sluice.bytes_per_s / 1e6,
              best_sluice.chunks_per_syscall);
  std::printf("  raw writev loop     %8.1f MB/s  %6.1f chunks per writev (IOV_MAX)\n", best_raw.bytes_per_s / 1e6,
              best_raw.chunks_per_syscall);
  std::printf("  sluice / raw        %8.2fx  (goal >= 0.8x; chunks per sendmsg goal >= 16)\n",
              best_sluice.bytes_per_s / best_raw.bytes_per_s);
  std::printf("  median of the runs' own ratios: %.2fx in rate, %.2fx in sender CPU a chunk (raw1: one %zu-byte\n"
              "  iovec a writev, the same bytes)\n",
              median(rate_ratios), median(cpu_ratios), std::size_t(IOV_MAX) * chunk);
  return 0;
}
