// logger_bench: the cost of a log line at the caller, and how many lines a
// second reach the file, for sluice::logger against sluice's print() into a
// log writable, spdlog's async logger (when found) and Quill (when built
// with -Dquill_include=DIR).
//
// - hot path: Quill's own workload (benchmarks/hot_path_latency): bursts of
//   20 calls "iteration {} message {} double {}" with two uint64 and a
//   double, 2-2.2 ms apart (a busy wait), each call timed with rdtsc;
//   p50/p99/p99.9 over every call of every thread.
// - back to back: 2M lines as fast as the producers go, split over the
//   threads, timed until all are in the file; the file is then checked
//   (one thread: byte for byte what fmt::format gives; more: the line
//   count and bytes).
//
// Each variant runs in a child process of its own, 1 and 4 producer
// threads. Files go to --dir (default /tmp).
//
//   build/perf/logger_bench [--iterations 2000] [--messages 2000000] [--dir /tmp] [--only NAME[,NAME...]] [--runs N]
//
// With --runs N the variants run N times, interleaved (every other run in
// reverse order), then the median and range of each figure and of
// sluice::logger's ratio to the reference (Quill, else spdlog) per run.
// --timestamps 1 adds sluice::logger with each log_timestamp (coarse,
// precise: the TSC, realtime) and first times a read of each clock.
// LOGGER_BENCH_BY_INDEX=1 prints, on stderr, the hot path's latencies by
// the call's place in its burst (the first call after the wait is the
// cold one: it makes the tail). LOGGER_BENCH_POLL_MS and LOGGER_BENCH_RING
// set sluice::logger's poll_interval and ring_size.
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "sluice/log_file/log_writable.h"
#include "sluice/logger/logger.h"
#include "sluice/loop/loop.h"

#if LOGGER_BENCH_HAVE_SPDLOG
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#endif

#if LOGGER_BENCH_HAVE_QUILL
#include "quill/Backend.h"
#include "quill/Frontend.h"
#include "quill/LogMacros.h"
#include "quill/sinks/FileSink.h"
#endif

namespace {

using clock_type = std::chrono::steady_clock;

struct config {
  std::size_t iterations = 2000;
  std::size_t messages = 2'000'000;
  std::string dir = "/tmp";
  std::string only;
};

double ns_per_tick() {
  const auto t0 = clock_type::now();
  const std::uint64_t c0 = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::uint64_t c1 = __rdtsc();
  const auto t1 = clock_type::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(c1 - c0);
}

// Quill's wait between bursts: a busy wait of 2-2.2 ms.
void wait_between_bursts(std::uint64_t seed) {
  const auto until = clock_type::now() + std::chrono::microseconds(2000 + seed % 200);
  while (clock_type::now() < until) {
  }
}

// One logger under test: made once per run; per thread, a call to log one
// line, and what the thread does once it is done; then finish() returns
// once every line is in the file.
struct variant {
  std::string name;
  std::function<void(const std::string& path, int threads)> start;
  std::function<void(std::uint64_t, std::uint64_t, double)> log;
  std::function<void()> thread_done = [] {};
  std::function<void()> finish;
  bool newline_added = false;  // the logger adds the newline (spdlog's and Quill's patterns)
  bool one_stream_per_thread = false;
  std::size_t stamp_bytes = 0;  // each line starts with a timestamp this long
  // Each line starts with a pattern's prefix (time, level, file:line) of one
  // length, read from the file's first line.
  bool prefixed = false;
};

// ---- sluice::logger
std::unique_ptr<sluice::logger> sl;
variant sluice_logger(sluice::log_timestamp stamp = sluice::log_timestamp::none, std::string name = "sluice::logger") {
  variant v;
  v.name = std::move(name);
  v.stamp_bytes = stamp == sluice::log_timestamp::none ? 0 : stamp == sluice::log_timestamp::coarse ? 25 : 28;
  v.start = [stamp](const std::string& path, int) {
    sluice::logger_options o;
    o.timestamp = stamp;
    if (const char* e = std::getenv("LOGGER_BENCH_POLL_MS")) o.poll_interval = std::chrono::milliseconds(std::atoi(e));
    if (const char* e = std::getenv("LOGGER_BENCH_RING")) o.ring_size = std::stoul(e);
    sl = std::make_unique<sluice::logger>([path] { return sluice::make_log_writable(path); }, o);
  };
  v.log = [](std::uint64_t it, std::uint64_t i, double d) { sl->print("iteration {} message {} double {}\n", it, i, d); };
  v.finish = [] { sl.reset(); };
  return v;
}

// ---- sluice::logger's macros, with the default pattern: time (precise),
// level, file:line, as a team would log
variant sluice_macros() {
  variant v;
  v.name = "sluice::logger SLUICE_LOG_INFO";
  v.newline_added = true;
  v.prefixed = true;
  v.start = [](const std::string& path, int) {
    sluice::logger_options o;
    if (const char* e = std::getenv("LOGGER_BENCH_POLL_MS")) o.poll_interval = std::chrono::milliseconds(std::atoi(e));
    if (const char* e = std::getenv("LOGGER_BENCH_RING")) o.ring_size = std::stoul(e);
    sl = std::make_unique<sluice::logger>([path] { return sluice::make_log_writable(path); }, o);
  };
  v.log = [](std::uint64_t it, std::uint64_t i, double d) {
    SLUICE_LOG_INFO(*sl, "iteration {} message {} double {}", it, i, d);
  };
  v.finish = [] { sl.reset(); };
  return v;
}

// ---- sluice print() into a log writable: one per thread (a stream belongs to
// its thread), its own file; the thread's loop runs between bursts and
// whenever print() pushes back.
std::string print_path;
std::atomic<int> print_files{0};
thread_local std::unique_ptr<sluice::log_writable> print_stream;
variant sluice_print() {
  variant v;
  v.name = "sluice print() into a log writable";
  v.one_stream_per_thread = true;
  v.start = [](const std::string& path, int) {
    print_path = path;
    print_files = 0;
  };
  v.log = [](std::uint64_t it, std::uint64_t i, double d) {
    if (!print_stream) [[unlikely]] {
      const int n = print_files.fetch_add(1);
      print_stream = sluice::make_log_writable(n == 0 ? print_path : fmt::format("{}.{}", print_path, n));
    }
    if (!print_stream->print("iteration {} message {} double {}\n", it, i, d)) sluice::loop::current().run_until_idle();
  };
  v.thread_done = [] {
    if (!print_stream) return;
    print_stream->end();
    sluice::loop::current().run();
    print_stream.reset();
  };
  v.finish = [] {};
  return v;
}

#if LOGGER_BENCH_HAVE_SPDLOG
std::shared_ptr<spdlog::async_logger> spd;
variant spdlog_async() {
  variant v;
  v.name = "spdlog async";
  v.newline_added = true;
  v.start = [](const std::string& path, int) {
    spdlog::init_thread_pool(8192, 1);
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, true);
    spd = std::make_shared<spdlog::async_logger>("bench", sink, spdlog::thread_pool(),
                                                 spdlog::async_overflow_policy::block);
    spd->set_pattern("%v");
  };
  v.log = [](std::uint64_t it, std::uint64_t i, double d) { spd->info("iteration {} message {} double {}", it, i, d); };
  v.finish = [] {
    spd.reset();
    spdlog::shutdown();  // joins the pool, which writes what it holds
  };
  return v;
}
#endif

#if LOGGER_BENCH_HAVE_QUILL
quill::Logger* ql = nullptr;
variant quill_logger() {
  variant v;
  v.name = "Quill";
  v.newline_added = true;
  v.start = [](const std::string& path, int) {
    quill::BackendOptions o;
    o.error_notifier = [](const std::string&) {};  // its notes on growing queues, on stdout
    quill::Backend::start(o);
    auto sink = quill::Frontend::create_or_get_sink<quill::FileSink>(path, [] {
      quill::FileSinkConfig cfg;
      cfg.set_open_mode('w');
      return cfg;
    }());
    ql = quill::Frontend::create_or_get_logger("bench", std::move(sink), quill::PatternFormatterOptions{"%(message)"});
  };
  v.log = [](std::uint64_t it, std::uint64_t i, double d) { LOG_INFO(ql, "iteration {} message {} double {}", it, i, d); };
  v.finish = [] {
    ql->flush_log();
    quill::Backend::stop();
  };
  return v;
}

// Quill with the same kind of line as sluice_macros(): time to the
// microsecond (UTC), level, file:line.
variant quill_pattern() {
  variant v = quill_logger();
  v.name = "Quill time level file:line";
  v.prefixed = true;
  v.start = [](const std::string& path, int) {
    quill::BackendOptions o;
    o.error_notifier = [](const std::string&) {};
    quill::Backend::start(o);
    auto sink = quill::Frontend::create_or_get_sink<quill::FileSink>(path, [] {
      quill::FileSinkConfig cfg;
      cfg.set_open_mode('w');
      return cfg;
    }());
    ql = quill::Frontend::create_or_get_logger(
        "bench", std::move(sink),
        quill::PatternFormatterOptions{"%(time) %(log_level:<8) %(file_name):%(line_number) %(message)",
                                       "%Y-%m-%dT%H:%M:%S.%QusZ", quill::Timezone::GmtTime});
  };
  return v;
}
#endif

struct result {
  double p50 = 0, p99 = 0, p999 = 0;
  double msgs_per_s = 0;
  bool verified = false;
  std::string note;
};

std::uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// The hot path: each call of each burst timed.
void hot_path(variant& v, const config& c, int threads, double tick_ns, result& r, const std::string& path) {
  v.start(path, threads);
  std::vector<std::vector<std::uint64_t>> lat(static_cast<std::size_t>(threads));
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      auto& l = lat[static_cast<std::size_t>(t)];
      l.reserve(c.iterations * 20);
      v.log(0, 0, 0.0);  // warm-up: the thread's ring, stream or queue
      ready.fetch_add(1);
      while (ready.load() != threads) {
      }
      for (std::size_t it = 0; it < c.iterations; ++it) {
        const double d = static_cast<double>(it) + 0.1 * static_cast<double>(it);
        for (std::uint64_t i = 0; i < 20; ++i) {
          const std::uint64_t t0 = __rdtsc();
          v.log(it, i, d);
          const std::uint64_t t1 = __rdtsc();
          l.push_back(t1 - t0);
        }
        if (v.one_stream_per_thread) sluice::loop::current().run_until_idle();
        wait_between_bursts(it * 7919 + static_cast<std::uint64_t>(t));
      }
      v.thread_done();
    });
  for (auto& t : ts) t.join();
  v.finish();
  std::vector<std::uint64_t> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  if (std::getenv("LOGGER_BENCH_BY_INDEX")) {
    for (int k : {0, 1, 2, 10, 19}) {
      std::vector<std::uint64_t> x;
      for (auto& l : lat) for (std::size_t j = static_cast<std::size_t>(k); j < l.size(); j += 20) x.push_back(l[j]);
      std::sort(x.begin(), x.end());
      std::fprintf(stderr, "  [%s %d threads] call %2d: p50 %.0f p90 %.0f p99 %.0f max %.0f\n", v.name.c_str(), threads, k,
                   x[x.size() / 2] * tick_ns, x[x.size() * 9 / 10] * tick_ns, x[x.size() * 99 / 100] * tick_ns, x.back() * tick_ns);
    }
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return static_cast<double>(all[static_cast<std::size_t>(p * static_cast<double>(all.size() - 1))]) * tick_ns; };
  r.p50 = pct(0.50);
  r.p99 = pct(0.99);
  r.p999 = pct(0.999);
}

// Back to back: the time from the first call to every line in the file.
void back_to_back(variant& v, const config& c, int threads, result& r, const std::string& path) {
  v.start(path, threads);
  const std::size_t per_thread = c.messages / static_cast<std::size_t>(threads);
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() != threads) {
      }
      const std::uint64_t first = static_cast<std::uint64_t>(t) * per_thread;
      for (std::uint64_t i = first; i < first + per_thread; ++i) v.log(i, i * 2, static_cast<double>(i) / 2);
      v.thread_done();
    });
  while (ready.load() != threads) {
  }
  const auto t0 = clock_type::now();
  for (auto& t : ts) t.join();
  v.finish();
  const auto t1 = clock_type::now();
  r.msgs_per_s = static_cast<double>(per_thread * static_cast<std::size_t>(threads)) /
                 std::chrono::duration<double>(t1 - t0).count();

  // Every line in the file(s), byte for byte for one thread.
  std::vector<std::string> files{path};
  if (v.one_stream_per_thread)
    for (int t = 1; t < threads; ++t) files.push_back(fmt::format("{}.{}", path, t));
  std::size_t prefix = v.stamp_bytes;
  if (v.prefixed) {
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    prefix = std::min(first.find("iteration "), first.size());
  }
  std::uint64_t expected_bytes = 0;
  for (std::uint64_t i = 0; i < per_thread * static_cast<std::size_t>(threads); ++i)
    expected_bytes +=
        prefix + fmt::formatted_size("iteration {} message {} double {}\n", i, i * 2, static_cast<double>(i) / 2);
  std::uint64_t got_bytes = 0;
  for (const auto& f : files) got_bytes += file_bytes(f);
  r.verified = got_bytes == expected_bytes;
  if (r.verified && threads == 1) {
    std::ifstream in(path);
    std::string line;
    for (std::uint64_t i = 0; i < per_thread && r.verified; ++i)
      r.verified = std::getline(in, line) && line.size() >= prefix &&
                   line.substr(prefix) == fmt::format("iteration {} message {} double {}", i, i * 2, static_cast<double>(i) / 2);
  }
  if (!r.verified) r.note = fmt::format("file has {} bytes, {} expected", got_bytes, expected_bytes);
  for (const auto& f : files) ::unlink(f.c_str());
}

// Runs `fn` in a child process; the child sends the result back in a pipe.
result in_child(const std::function<void(result&)>& fn) {
  int p[2];
  if (::pipe(p) != 0) std::abort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    result r;
    fn(r);
    const std::string s = fmt::format("{} {} {} {} {} {}", r.p50, r.p99, r.p999, r.msgs_per_s, r.verified ? 1 : 0, r.note);
    if (::write(p[1], s.data(), s.size()) < 0) std::_Exit(2);
    std::_Exit(0);
  }
  ::close(p[1]);
  std::string s;
  char buf[512];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) s.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result r;
  int verified = 0;
  char note[256] = "";
  if (std::sscanf(s.c_str(), "%lf %lf %lf %lf %d %255[^\n]", &r.p50, &r.p99, &r.p999, &r.msgs_per_s, &verified, note) < 5)
    r.note = fmt::format("child failed (status {})", status);
  else
    r.note = note;
  r.verified = verified != 0;
  return r;
}

// What each clock a timestamp can come from costs a read, in a loop (the
// best of 5 rounds of 2M reads).
void clock_costs() {
  auto cost = [](auto read) {
    double best = 1e9;
    for (int round = 0; round < 5; ++round) {
      std::uint64_t sink = 0;
      const auto t0 = clock_type::now();
      for (int i = 0; i < 2'000'000; ++i) sink += read();
      const auto t1 = clock_type::now();
      asm volatile("" : : "r"(sink));
      best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / 2e6);
    }
    return best;
  };
  auto gettime = [](clockid_t id) {
    timespec ts;
    ::clock_gettime(id, &ts);
    return static_cast<std::uint64_t>(ts.tv_nsec);
  };
  std::printf("a clock read, in a loop: rdtsc %.1f ns, CLOCK_REALTIME_COARSE %.1f ns, CLOCK_REALTIME %.1f ns\n\n",
              cost([] { return __rdtsc(); }), cost([&] { return gettime(CLOCK_REALTIME_COARSE); }),
              cost([&] { return gettime(CLOCK_REALTIME); }));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool selected(const config& c, const std::string& name) {
  if (c.only.empty()) return true;
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = c.only.find(',', from);
    const std::string part = c.only.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    if (comma == std::string::npos) return false;
    from = comma + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  int runs = 1;
  bool timestamps = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--iterations")
      c.iterations = std::stoul(argv[i + 1]);
    else if (a == "--messages")
      c.messages = std::stoul(argv[i + 1]);
    else if (a == "--dir")
      c.dir = argv[i + 1];
    else if (a == "--only")
      c.only = argv[i + 1];
    else if (a == "--runs")
      runs = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--timestamps")
      timestamps = std::string(argv[i + 1]) == "1";
    else {
      std::fprintf(stderr, "usage: %s [--iterations N] [--messages N] [--dir DIR] [--only NAME[,NAME...]] [--runs N] [--timestamps 1]\n",
                   argv[0]);
      return 2;
    }
  }
  if (std::getenv("SLUICE_BENCH_QUICK")) {
    c.iterations = 200;
    c.messages = 200'000;
  }
  const double tick_ns = ns_per_tick();
  std::vector<variant> variants;
  std::vector<variant> all{sluice_logger(), sluice_macros(), sluice_print()};
  if (timestamps) {
    all.push_back(sluice_logger(sluice::log_timestamp::coarse, "sluice::logger, coarse stamp"));
    all.push_back(sluice_logger(sluice::log_timestamp::precise, "sluice::logger, precise stamp (TSC)"));
    all.push_back(sluice_logger(sluice::log_timestamp::realtime, "sluice::logger, realtime stamp"));
  }
  for (variant& v : all)
    if (selected(c, v.name)) variants.push_back(std::move(v));
#if LOGGER_BENCH_HAVE_SPDLOG
  if (selected(c, "spdlog async")) variants.push_back(spdlog_async());
#endif
#if LOGGER_BENCH_HAVE_QUILL
  if (selected(c, "Quill")) variants.push_back(quill_logger());
  if (selected(c, "Quill time level file:line")) variants.push_back(quill_pattern());
#endif
  std::printf("logger_bench: hot path %zu bursts of 20 calls 2-2.2 ms apart (each call timed, rdtsc %.3f ns/tick); "
              "back to back %zu lines into %s; %d run%s, the variants interleaved (each in a child process)\n\n",
              c.iterations, tick_ns, c.messages, c.dir.c_str(), runs, runs > 1 ? "s" : "");
  if (timestamps) clock_costs();
  // results[threads][variant][run]
  std::map<int, std::map<std::string, std::vector<result>>> results;
  for (int run = 0; run < runs; ++run) {
    if (runs > 1) std::printf("run %d of %d\n", run + 1, runs);
    // Every other run in reverse order: neither side always goes first
    // after the other's child has warmed (or cooled) the machine.
    std::vector<variant*> order;
    for (variant& v : variants) order.push_back(&v);
    if (run % 2) std::reverse(order.begin(), order.end());
    for (int threads : {1, 4}) {
      std::printf("%d producer thread%s\n", threads, threads > 1 ? "s" : "");
      std::printf("  %-36s %9s %9s %9s %14s  %s\n", "", "p50 ns", "p99 ns", "p99.9 ns", "back to back", "file");
      for (variant* vp : order) {
        variant& v = *vp;
        const std::string path = fmt::format("{}/logger_bench.{}.log", c.dir, ::getpid());
        result hot = in_child([&](result& r) {
          hot_path(v, c, threads, tick_ns, r, path);
          ::unlink(path.c_str());
          for (int t = 1; t < threads; ++t) ::unlink(fmt::format("{}.{}", path, t).c_str());
        });
        result b2b = in_child([&](result& r) { back_to_back(v, c, threads, r, path); });
        hot.msgs_per_s = b2b.msgs_per_s;
        hot.verified = b2b.verified;
        hot.note = b2b.note;
        results[threads][v.name].push_back(hot);
        std::printf("  %-36s %9.0f %9.0f %9.0f %10.2fM/s  %s %s\n", v.name.c_str(), hot.p50, hot.p99, hot.p999,
                    hot.msgs_per_s / 1e6, hot.verified ? "ok" : "WRONG", hot.note.c_str());
        std::fflush(stdout);
      }
      // Ratios against the reference: Quill when built with it, else spdlog.
      for (const char* ref : {"Quill", "spdlog async"}) {
        auto& byname = results[threads];
        if (!byname.contains(ref) || !byname.contains("sluice::logger")) continue;
        const result& q = byname[ref].back();
        const result& s = byname["sluice::logger"].back();
        std::printf("  sluice::logger / %s: p50 %.2fx, p99 %.2fx, p99.9 %.2fx (lower is better), back to back %.2fx (higher is better)\n",
                    ref, s.p50 / q.p50, s.p99 / q.p99, s.p999 / q.p999, s.msgs_per_s / q.msgs_per_s);
        break;
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (runs > 1) {
    std::printf("median of %d runs [min-max]\n", runs);
    for (auto& [threads, byname] : results) {
      std::printf("%d producer thread%s\n", threads, threads > 1 ? "s" : "");
      auto line = [&](const std::string& name, const std::vector<double>& p50, const std::vector<double>& p99,
                      const std::vector<double>& p999, const std::vector<double>& rate, bool ratio) {
        auto f = [&](const std::vector<double>& x, double scale, const char* unit) {
          return fmt::format("{:.{}f}{} [{:.{}f}-{:.{}f}]", median(x) * scale, ratio ? 2 : (scale < 1 ? 2 : 0), unit,
                             *std::min_element(x.begin(), x.end()) * scale, ratio ? 2 : (scale < 1 ? 2 : 0),
                             *std::max_element(x.begin(), x.end()) * scale, ratio ? 2 : (scale < 1 ? 2 : 0));
        };
        const char* u = ratio ? "x" : "";
        std::printf("  %-30s p50 %s  p99 %s  p99.9 %s  back to back %s\n", name.c_str(), f(p50, 1, u).c_str(),
                    f(p99, 1, u).c_str(), f(p999, 1, u).c_str(), f(rate, ratio ? 1 : 1e-6, ratio ? "x" : "M/s").c_str());
      };
      for (auto& [name, rs] : byname) {
        std::vector<double> a, b, d, e;
        for (const result& r : rs) {
          a.push_back(r.p50);
          b.push_back(r.p99);
          d.push_back(r.p999);
          e.push_back(r.msgs_per_s);
        }
        line(name, a, b, d, e, false);
      }
      for (const char* ref : {"Quill", "spdlog async"}) {
        if (!byname.contains(ref) || !byname.contains("sluice::logger")) continue;
        std::vector<double> a, b, d, e;
        const auto& q = byname[ref];
        const auto& s = byname["sluice::logger"];
        int met = 0;
        for (std::size_t i = 0; i < q.size() && i < s.size(); ++i) {
          a.push_back(s[i].p50 / q[i].p50);
          b.push_back(s[i].p99 / q[i].p99);
          d.push_back(s[i].p999 / q[i].p999);
          e.push_back(s[i].msgs_per_s / q[i].msgs_per_s);
          met += s[i].p50 <= q[i].p50 && s[i].p999 <= q[i].p999 && e.back() >= 1.5;
        }
        line(fmt::format("sluice::logger / {}", ref), a, b, d, e, true);
        std::printf("  %-30s runs meeting every goal (p50 and p99.9 <= 1x, back to back >= 1.5x): %d of %zu\n", "",
                    met, a.size());
        break;
      }
    }
  }
  return 0;
}
