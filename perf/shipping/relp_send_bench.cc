// relp_send_bench: the RELP writable's sending rate. N messages ("bench
// message NNNNNNN" padded to --size bytes) through sluice::relp_writable:
// write() until it says stop, again at 'drain', then end(); the run ends at
// end()'s callback, every message answered 200.
//
// The receiver is, without --port, one in this process on its own thread
// (blocking sockets): it reads what has come, waits --delay-ms (a receiver
// that makes a batch durable before it answers, as an fsync does), then
// answers every transaction of that read. With --port, a receiver already
// listening there (rsyslogd's imrelp: relp-send-compare.sh).
//
//   relp_send_bench [--messages N] [--size B] [--window W] [--delay-ms D] [--runs R] [--port PORT]
//
// Prints one line per run: messages/s and the sender thread's CPU per
// message (getrusage RUSAGE_THREAD: the loop's thread only), then the best.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/syslog/relp_frames.h"
#include "sluice/syslog/relp_writable.h"

namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "relp_send_bench: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double thread_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The in-process receiver: one connection at a time, each read answered
// as a batch after `delay`.
class receiver {
 public:
  explicit receiver(std::chrono::milliseconds delay) : delay_(delay) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) die("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) die("bind/listen");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~receiver() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }

 private:
  void run() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      serve(c);
      ::close(c);
    }
  }
  void serve(int c) {
    sluice::relp_frame_reader reader;
    std::vector<char> buf(256 * 1024);
    std::string out;
    bool closing = false;
    while (!closing) {
      const ssize_t n = ::read(c, buf.data(), buf.size());
      if (n <= 0) return;
      out.clear();
      std::size_t messages = 0;
      reader.feed(std::string_view(buf.data(), std::size_t(n)), [&](const sluice::relp_frame& f) {
        if (f.command == "open") {
          sluice::append_relp_frame(out, f.txnr, "rsp", "200 OK\nrelp_version=0\ncommands=syslog");
        } else {
          if (f.command == "close") closing = true;
          ++messages;
          sluice::append_relp_frame(out, f.txnr, "rsp", "200 OK");
        }
      });
      if (messages > 0 && delay_.count() > 0) std::this_thread::sleep_for(delay_);
      for (std::size_t off = 0; off < out.size();) {
        const ssize_t w = ::write(c, out.data() + off, out.size() - off);
        if (w <= 0) return;
        off += std::size_t(w);
      }
    }
  }
  std::chrono::milliseconds delay_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct result {
  double rate, cpu_us;
};

result run_once(std::uint16_t port, std::size_t n, std::size_t size, std::size_t window) {
  sluice::loop l;
  sluice::relp_options o;
  o.port = port;
  o.header = {.facility = 16, .severity = 6, .hostname = "bench-host", .app_name = "relp-bench", .procid = "-", .msgid = "-"};
  o.window = window;
  o.stream.event_loop = &l;
  std::vector<std::string> bodies(1024);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    bodies[i] = "bench message " + std::to_string(i) + " ";
    bodies[i].resize(std::max(size, bodies[i].size()), 'x');
  }
  auto w = sluice::make_relp_writable(o);
  std::size_t next = 0, errors = 0;
  bool ended = false;
  std::error_code end_ec;
  const auto t0 = clock_type::now();
  const double c0 = thread_cpu_s();
  auto pump = [&] {
    while (next < n) {
      const bool more = w->write(bodies[next % bodies.size()], [&](std::error_code ec) { errors += bool(ec); });
      ++next;
      if (!more) return;
    }
    w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
  };
  w->on(sluice::event::drain, pump);
  pump();
  l.run();
  const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  const double cpu = thread_cpu_s() - c0;
  if (!ended || end_ec || errors != 0 || w->acked() != n) {
    std::fprintf(stderr, "relp_send_bench: run failed: ended %d (%s), %zu errors, %zu acked of %zu\n", ended,
                 end_ec.message().c_str(), errors, w->acked(), n);
    std::exit(1);
  }
  return {double(n) / secs, cpu * 1e6 / double(n)};
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 200000, size = 100, window = 1024, runs = 3;
  long delay_ms = 0, port = 0;
  if (std::getenv("SLUICE_BENCH_QUICK")) n = 20000, runs = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (a == "--messages") n = std::size_t(v);
    else if (a == "--size") size = std::size_t(v);
    else if (a == "--window") window = std::size_t(v);
    else if (a == "--delay-ms") delay_ms = v;
    else if (a == "--runs") runs = std::size_t(v);
    else if (a == "--port") port = v;
    else {
      std::fprintf(stderr, "usage: relp_send_bench [--messages N] [--size B] [--window W] [--delay-ms D] [--runs R] [--port PORT]\n");
      return 2;
    }
  }
  std::unique_ptr<receiver> rx;
  if (port == 0) {
    rx = std::make_unique<receiver>(std::chrono::milliseconds(delay_ms));
    port = rx->port();
  }
  result best{0, 0};
  for (std::size_t r = 0; r < runs; ++r) {
    const result x = run_once(std::uint16_t(port), n, size, window);
    std::printf("relp-send messages=%zu size=%zu window=%zu receiver=%s delay_ms=%ld run=%zu rate=%.0f/s cpu=%.2fus/msg\n",
                n, size, window, rx ? "in-process" : "external", delay_ms, r + 1, x.rate, x.cpu_us);
    if (x.rate > best.rate) best = x;
  }
  std::printf("relp-send best: %.0f messages/s, %.2f us CPU/message (sender thread)\n", best.rate, best.cpu_us);
  return 0;
}
