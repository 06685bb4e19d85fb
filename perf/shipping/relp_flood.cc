// The load for perf/shipping/relp-compare.sh: SENDERS sluice::relp_writable
// streams (one loop, one thread) into a RELP receiver on loopback, each
// writing MESSAGES messages of SIZE bytes (the MSG part) as fast as its
// window lets it (write() == false: wait for 'drain'). A run ends when every
// write's callback came, i.e. when the receiver answered every message
// (with sluice-logd --fsync ack: once it was on disk). Each message carries
// its sender and sequence number, so a lost or repeated one shows in the
// receiver's file.
//
// The receiver is measured: with --pid, its CPU time (all threads, from
// /proc/PID/stat) over the run; this program's own CPU time too.
//
//   relp_flood PORT [--senders N] [--messages M] [--size B] [--window W] [--pid PID]
//
// Prints one JSON line: {"messages":N*M,"seconds":S,"cpu_seconds":C,
// "sender_cpu_seconds":C2,"acked":A,"resent":R,"failed":F}.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "sluice/sluice.h"
#include "sluice/syslog/relp_writable.h"

namespace {

long number(const char* text, const char* name) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < 0) {
    std::fprintf(stderr, "relp_flood: %s must be a number, not '%s'\n", name, text);
    std::exit(2);
  }
  return v;
}

double cpu_seconds(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis: utime is field 14, stime 15.
  std::size_t i = s.rfind(')');
  if (i == std::string::npos) return 0;
  i += 2;
  std::vector<std::string> f;
  while (i < s.size()) {
    const std::size_t sp = s.find(' ', i);
    f.push_back(s.substr(i, sp - i));
    if (sp == std::string::npos) break;
    i = sp + 1;
  }
  if (f.size() < 13) return 0;
  return static_cast<double>(std::stol(f[11]) + std::stol(f[12])) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double own_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// One sender: writes its messages while the window has room, ends after
// the last.
struct sender {
  std::unique_ptr<sluice::relp_writable> out;
  int id = 0;
  long next = 0, total = 0, failed = 0;
  std::string body;
  std::size_t seq_at = 0;
  bool done = false;

  void pump() {
    while (next < total) {
      // The 10 digits in place (no terminating NUL over the filler).
      long v = next;
      for (std::size_t d = 10; d-- > 0; v /= 10) body[seq_at + d] = static_cast<char>('0' + v % 10);
      ++next;
      const bool more = out->write(std::string_view(body), [this](std::error_code ec) { failed += bool(ec); });
      if (!more) return;  // 'drain' calls again
    }
    out->end([this](std::error_code ec) {
      failed += bool(ec);
      done = true;
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: relp_flood PORT [--senders N] [--messages M] [--size B] [--window W] [--pid PID]\n");
    return 2;
  }
  const long port = number(argv[1], "PORT");
  long senders = 1, messages = 500000, size = 120, window = 1024, pid = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--senders") senders = number(argv[i + 1], "--senders");
    else if (opt == "--messages") messages = number(argv[i + 1], "--messages");
    else if (opt == "--size") size = number(argv[i + 1], "--size");
    else if (opt == "--window") window = number(argv[i + 1], "--window");
    else if (opt == "--pid") pid = number(argv[i + 1], "--pid");
    else {
      std::fprintf(stderr, "relp_flood: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }

  std::vector<sender> all(static_cast<std::size_t>(senders));
  const double cpu0 = pid ? cpu_seconds(pid) : 0, own0 = own_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < senders; ++s) {
    sender& x = all[static_cast<std::size_t>(s)];
    x.id = static_cast<int>(s);
    x.total = messages;
    // "sender N seq 0000000000 " then filler up to SIZE bytes.
    x.body = "sender " + std::to_string(s) + " seq ";
    x.seq_at = x.body.size();
    x.body += "0000000000 ";
    if (x.body.size() < static_cast<std::size_t>(size)) x.body.append(static_cast<std::size_t>(size) - x.body.size(), 'x');
    x.out = sluice::make_relp_writable(sluice::relp_options{
        .host = "127.0.0.1",
        .port = static_cast<std::uint16_t>(port),
        .header = {.hostname = "bench-host", .app_name = "flood", .procid = std::to_string(1000 + s)},
        .window = static_cast<std::size_t>(window)});
    x.out->on(sluice::event::drain, [&x] { x.pump(); });
    x.out->on(sluice::event::error, [](std::error_code ec) {
      std::fprintf(stderr, "relp_flood: %s\n", ec.message().c_str());
    });
    x.pump();
  }
  sluice::loop::current().run();
  const auto t1 = std::chrono::steady_clock::now();
  const double cpu = pid ? cpu_seconds(pid) - cpu0 : 0, own = own_cpu_seconds() - own0;
  std::size_t acked = 0, resent = 0;
  long failed = 0;
  for (auto& x : all) {
    acked += x.out->acked();
    resent += x.out->resent();
    failed += x.failed + (x.done ? 0 : 1);
  }
  std::printf("{\"messages\":%ld,\"seconds\":%.4f,\"cpu_seconds\":%.3f,\"sender_cpu_seconds\":%.3f,\"acked\":%zu,"
              "\"resent\":%zu,\"failed\":%ld}\n",
              senders * messages, std::chrono::duration<double>(t1 - t0).count(), cpu, own, acked, resent, failed);
  return failed == 0 ? 0 : 1;
}
