// syslog_send_bench: issue 12's sending benchmark. N RFC 5424 messages
// ("<134>1 TIMESTAMP bench-host send PID - - BODY", BODY of --size bytes)
// over loopback TCP through three senders, one after the other, alternated
// run by run, best of R:
//   sluice   sluice::syslog_writable (octet-counted), write() until it says
//            stop, again at 'drain', then end();
//   writev   a bare blocking writev() loop of the same frames (made by the
//            same formatter, one clock_gettime() a batch), IOV_MAX frames a
//            call: the ceiling;
//   spdlog   spdlog's tcp_sink (blocking, one send() a message, LF framing)
//            under a synchronous logger whose pattern makes the same header.
// The receiver is a drain (a child process that reads and discards; the run
// ends at its EOF, so all bytes arrived) or, with --port, a receiver already
// listening there (rsyslogd in send-compare.sh; the run ends when the sender
// is done, or when its --file holds every message).
// CPU is the sending process's (user + system, getrusage): the drain runs in
// its own process.
//
//   syslog_send_bench [--messages N] [--size B] [--runs R] [--port PORT [--file FILE]] [--only NAME]
//
// --file: the external receiver writes each message as a line there; a run
// ends once FILE has grown by every line (rsyslog's throughput, not just the
// kernel's buffers filling).
//
// Prints one line per run and a table: messages/s and CPU us per message,
// each sender's ratio to writev and to spdlog.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>
#include <spdlog/sinks/tcp_sink.h>

#include "sluice/loop/loop.h"
#include "sluice/syslog/syslog_format.h"
#include "sluice/syslog/syslog_writable.h"

namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "syslog_send_bench: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double cpu_now() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

const sluice::syslog_header header{.facility = 16, .severity = 6, .hostname = "bench-host", .app_name = "send",
                                   .procid = "12345", .msgid = ""};

// ---- the drain: a child process that reads each connection to EOF and
// reports its bytes on a pipe.

struct drain {
  pid_t pid = -1;
  int port = 0;
  int report = -1;  // read end: one std::size_t per connection

  void start() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) die("drain: listen");
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    int p[2];
    if (::pipe(p) != 0) die("pipe");
    pid = ::fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      ::close(p[0]);
      std::vector<char> buf(1 << 20);
      for (;;) {
        const int c = ::accept(fd, nullptr, nullptr);
        if (c < 0) _exit(0);
        std::size_t total = 0;
        for (;;) {
          const ssize_t r = ::read(c, buf.data(), buf.size());
          if (r <= 0) break;
          total += static_cast<std::size_t>(r);
        }
        ::close(c);
        if (::write(p[1], &total, sizeof total) != sizeof total) _exit(1);
      }
    }
    ::close(fd);
    ::close(p[1]);
    report = p[0];
  }
  std::size_t wait_connection() const {
    std::size_t n = 0;
    if (::read(report, &n, sizeof n) != sizeof n) die("drain report");
    return n;
  }
  void stop() {
    if (pid > 0) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
  }
};

struct result {
  double seconds = 0;
  double cpu = 0;
};

struct setup {
  std::size_t n;
  std::string body;
  int port;
  const drain* d;  // null: an external receiver
  std::string file;  // the external receiver's file: one line a message
  std::size_t line_size;
};

off_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// What the receiver's file must hold once the current run is through.
off_t expected = 0;

// Ends the clock: at the drain's EOF; once the receiver's file has every
// message's line (or has not grown for 5 s: then the loss is reported); or,
// without either, now.
result finish(const setup& s, clock_type::time_point t0, double c0) {
  const double cpu = cpu_now() - c0;
  if (s.d) {
    const std::size_t got = s.d->wait_connection();
    (void)got;
  } else if (!s.file.empty()) {
    expected += static_cast<off_t>(s.n * s.line_size);
    off_t have = -1;
    auto grew = clock_type::now();
    for (;;) {
      const off_t now = file_size(s.file);
      if (now != have) have = now, grew = clock_type::now();
      if (have >= expected) break;
      if (clock_type::now() - grew > std::chrono::seconds(5)) {
        std::fprintf(stderr, "syslog_send_bench: %s has %lld of %lld bytes: %lld messages lost\n", s.file.c_str(),
                     static_cast<long long>(have), static_cast<long long>(expected),
                     static_cast<long long>((expected - have) / static_cast<off_t>(s.line_size)));
        expected = have;
        break;
      }
      ::usleep(2000);
    }
  }
  return {std::chrono::duration<double>(clock_type::now() - t0).count(), cpu};
}

int connect_blocking(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
  return fd;
}

// ---- the three senders

result run_writev(const setup& s) {
  const int fd = connect_blocking(s.port);
  sluice::detail::syslog_formatter format(header, sluice::syslog_framing::octet_counting);
  std::string buf;
  std::vector<std::size_t> ends;
  std::vector<iovec> iov;
  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  for (std::size_t done = 0; done < s.n;) {
    const std::size_t batch = std::min<std::size_t>(IOV_MAX, s.n - done);
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    buf.clear();
    ends.clear();
    for (std::size_t i = 0; i < batch; ++i) {
      format.append(buf, s.body, now);
      ends.push_back(buf.size());
    }
    iov.clear();
    for (std::size_t i = 0, from = 0; i < batch; from = ends[i], ++i)
      iov.push_back({buf.data() + from, ends[i] - from});
    // Partial writes: skip what the kernel took and go on.
    iovec* v = iov.data();
    int cnt = static_cast<int>(iov.size());
    while (cnt > 0) {
      ssize_t w = ::writev(fd, v, cnt);
      if (w < 0) {
        if (errno == EINTR) continue;
        die("writev");
      }
      while (cnt > 0 && static_cast<std::size_t>(w) >= v->iov_len) w -= static_cast<ssize_t>(v->iov_len), ++v, --cnt;
      if (cnt > 0) v->iov_base = static_cast<char*>(v->iov_base) + w, v->iov_len -= static_cast<std::size_t>(w);
    }
    done += batch;
  }
  ::close(fd);
  return finish(s, t0, c0);
}

result run_sluice(const setup& s) {
  sluice::loop& l = sluice::loop::current();
  sluice::syslog_options o;
  o.port = static_cast<std::uint16_t>(s.port);
  o.header = header;
  auto out = sluice::make_syslog_writable(o);
  std::size_t written = 0, ok = 0;
  auto pump = [&] {
    while (written < s.n) {
      ++written;
      if (!out->write(s.body, [&ok](std::error_code ec) { ok += !ec; })) return;
    }
    out->end();
  };
  out->on(sluice::event::drain, pump);
  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  pump();
  l.run();
  if (ok != s.n) {
    std::fprintf(stderr, "syslog_send_bench: sluice: %zu of %zu callbacks succeeded\n", ok, s.n);
    std::exit(1);
  }
  return finish(s, t0, c0);
}

result run_spdlog(const setup& s) {
  spdlog::sinks::tcp_sink_config cfg("127.0.0.1", s.port);
  auto sink = std::make_shared<spdlog::sinks::tcp_sink_st>(cfg);
  spdlog::logger log("send", sink);
  log.set_pattern("<134>1 %Y-%m-%dT%H:%M:%S.%fZ bench-host send 12345 - - %v", spdlog::pattern_time_type::utc);
  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  for (std::size_t i = 0; i < s.n; ++i) log.info(std::string_view(s.body));
  log.flush();
  sink.reset();
  log.sinks().clear();  // the last reference: the socket closes here
  return finish(s, t0, c0);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = std::getenv("SLUICE_BENCH_QUICK") != nullptr;
  std::size_t n = quick ? 100000 : 1000000, size = 64;
  int runs = quick ? 1 : 3, port = 0;
  std::string only, file;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--messages") n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (opt == "--size") size = std::strtoull(argv[i + 1], nullptr, 10);
    else if (opt == "--runs") runs = std::atoi(argv[i + 1]);
    else if (opt == "--port") port = std::atoi(argv[i + 1]);
    else if (opt == "--only") only = argv[i + 1];
    else if (opt == "--file") file = argv[i + 1];
    else {
      std::fprintf(stderr, "syslog_send_bench: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  drain d;
  if (port == 0) {
    d.start();
    port = d.port;
  }
  std::string probe;
  sluice::detail::syslog_formatter(header, sluice::syslog_framing::lf).append(probe, std::string(size, 'm'), timespec{});
  const setup s{n, std::string(size, 'm'), port, port == d.port ? &d : nullptr, file, probe.size()};

  using runner = result (*)(const setup&);
  const std::vector<std::pair<std::string, runner>> senders = {
      {"sluice", run_sluice}, {"writev", run_writev}, {"spdlog", run_spdlog}};
  if (!file.empty()) expected = file_size(file);
  // Warm-up, untimed: a tenth of the messages through each.
  for (const auto& [name, fn] : senders)
    if (only.empty() || name == only) fn({n / 10 + 1, s.body, s.port, s.d, s.file, s.line_size});
  std::map<std::string, result> best;
  for (int r = 1; r <= runs; ++r) {
    for (const auto& [name, fn] : senders) {
      if (!only.empty() && name != only) continue;
      const result x = fn(s);
      std::printf("run %d: %-7s %10.0f msg/s %7.3f us CPU/msg\n", r, name.c_str(), n / x.seconds, x.cpu * 1e6 / n);
      std::fflush(stdout);
      auto [it, fresh] = best.try_emplace(name, x);
      if (!fresh) {
        it->second.seconds = std::min(it->second.seconds, x.seconds);
        it->second.cpu = std::min(it->second.cpu, x.cpu);
      }
    }
  }
  d.stop();

  std::printf("sending: %zu messages of %zu bytes (body %zu B), receiver %s, best of %d\n", n, probe.size() - 1, size,
              s.d ? "drain" : ("port " + std::to_string(port) + (file.empty() ? "" : ", until " + file + " has them")).c_str(),
              runs);
  std::printf("%-8s %12s %14s %14s %14s\n", "sender", "msgs/s", "CPU us / msg", "vs writev", "vs spdlog");
  auto ratio = [&](const std::string& a, const std::string& b, bool rate) -> std::string {
    if (!best.count(a) || !best.count(b)) return "n/a";
    char out[32];
    // Rate: a's messages/s over b's. CPU: a's CPU per message over b's.
    const double v = rate ? best[b].seconds / best[a].seconds : best[a].cpu / best[b].cpu;
    std::snprintf(out, sizeof out, "%.2fx", v);
    return out;
  };
  for (const auto& [name, fn] : senders) {
    if (!best.count(name)) continue;
    const result& x = best[name];
    std::printf("%-8s %12.0f %14.3f %14s %14s\n", name.c_str(), n / x.seconds, x.cpu * 1e6 / n,
                (ratio(name, "writev", true) + " / " + ratio(name, "writev", false)).c_str(),
                (ratio(name, "spdlog", true) + " / " + ratio(name, "spdlog", false)).c_str());
  }
  std::printf("(vs: the rate's ratio / CPU per message's ratio)\n");
  return 0;
}
