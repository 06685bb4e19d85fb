// log_bench: a logger's workload — N formatted log lines into a file — through
// sluice and the usual C++ ways of doing it, side by side in one run.
//
// Every line looks like
//
//   2026-11-30T00:00:00.123456Z INFO request id=12345 path=/api/v1/items status=200 took_us=345
//
// with the time, id, path, status and duration varying per line (make_line),
// so formatting is real work. Each variant runs in a process of its own (this
// program again, with --child NAME), so its peak RSS is its own; the rounds
// interleave the variants and each keeps its best time, because the machines
// are shared and noisy. Every file is checked byte for byte against the
// expected lines (so all variants wrote the same lines), then deleted. Node
// (log_bench.js) runs as one more child when --node-script is given;
// perf/log-compare.sh passes it.
//
//   log_bench [--lines N] [--reps R] [--dir D] [--only a,b] [--node P] [--node-script F] [--strict]
//
// Time runs from the first line to the moment the data is in the kernel and
// the file is closed (no fsync); setup (opening, making threads) is not
// timed. For the two asynchronous variants the producer's own time (until
// its last log call returns) gets a row of its own.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/os.h>

#if LOG_BENCH_HAVE_SPDLOG
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#endif

#include "bench.h"
#include "sluice/factories.h"
#include "sluice/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/stream/print_compiled.h"
#include "sluice/stream/writable.h"

extern char** environ;

namespace {

// ---- the lines

// The fmt/spdlog format (spdlog adds the newline itself), the printf one, and
// the arguments; all variants format the same fields.
#define LINE_BODY "2026-11-30T{:02}:{:02}:{:02}.{:06}Z INFO request id={} path={} status={} took_us={}"
#define LINE_PRINTF "2026-11-30T%02u:%02u:%02u.%06uZ INFO request id=%u path=%s status=%u took_us=%u\n"
#define LINE_ARGS(l) l.hh, l.mm, l.ss, l.us, l.id, l.path, l.status, l.took

struct line {
  unsigned hh, mm, ss, us, id, status, took;
  std::string_view path;
  const char* cpath;
};

constexpr const char* paths[4] = {"/api/v1/items", "/api/v1/items/42", "/api/v1/users", "/healthz"};
constexpr std::string_view path_views[4] = {"/api/v1/items", "/api/v1/items/42", "/api/v1/users", "/healthz"};
constexpr unsigned statuses[8] = {200, 200, 200, 201, 204, 304, 404, 500};

// Line i's fields. 32-bit arithmetic only, so that log_bench.js computes the
// same values with Math.imul: any change here must be made there too.
inline line make_line(std::uint64_t i) noexcept {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  const std::uint64_t t = i * 997 + (x & 255);  // microseconds since midnight
  line l;
  l.hh = static_cast<unsigned>((t / 3600000000u) % 24);
  l.mm = static_cast<unsigned>((t / 60000000u) % 60);
  l.ss = static_cast<unsigned>((t / 1000000u) % 60);
  l.us = static_cast<unsigned>(t % 1000000u);
  l.id = x % 1000000u;
  l.status = statuses[(x >> 20) & 7];
  l.took = (x >> 8) % 100000u;
  l.path = path_views[x >> 30];
  l.cpath = paths[x >> 30];
  return l;
}

// ---- small helpers

using clock_type = std::chrono::steady_clock;

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "log_bench: %s\n", msg.c_str());
  std::exit(1);
}

std::size_t current_rss_bytes() {
  long total = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &total, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// VmHWM, not getrusage's ru_maxrss: posix_spawn starts the child on the
// parent's memory (vfork), and exec folds that peak into ru_maxrss; VmHWM
// belongs to the program's own address space.
std::size_t peak_rss_bytes() {
  std::size_t kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f))
      if (std::sscanf(buf, "VmHWM: %zu kB", &kib) == 1) break;
    std::fclose(f);
  }
  return kib * 1024;
}

// CPU time, user + system: of the whole process (all threads, finished
// ones included), or of the calling thread only (RUSAGE_THREAD).
double cpu_seconds(int who = RUSAGE_SELF) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// write(2) calls and bytes of the whole process, all threads (/proc/self/io).
struct io_counts {
  std::uint64_t syscw = 0, wchar = 0;
};
io_counts read_io() {
  io_counts c;
  if (FILE* f = std::fopen("/proc/self/io", "r")) {
    char key[64];
    unsigned long long v;
    while (std::fscanf(f, "%63[^:]: %llu\n", key, &v) == 2) {
      if (std::strcmp(key, "syscw") == 0) c.syscw = v;
      if (std::strcmp(key, "wchar") == 0) c.wchar = v;
    }
    std::fclose(f);
  }
  return c;
}

int open_log(const char* path) {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) die(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  return fd;
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      die(fmt::format("write: {}", std::strerror(errno)));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// ---- the variants, each run in a child process

struct timing {
  double total_s = 0;     // first line until all is in the file
  double producer_s = 0;  // first line until the last log call returned
};

// How a sluice variant makes its lines.
enum class how {
  print,           // print("...", args): fmt parses the format string per line
  print_compiled,  // print(FMT_COMPILE("..."), args): no parsing at run time
  // A reference: the line formatted with FMT_COMPILE into a stack buffer,
  // then write() copies it into the stream (what print_compiled saves).
  write_compiled,
};

// sluice print() into an fd writable, driven by the loop like a real
// program: up to `batch` lines per turn; when print() returns false, wait for
// 'drain' (unless `respect_drain` is off: then write on, a batch per turn).
struct sluice_producer {
  sluice_producer(sluice::writable& o, sluice::loop& l, std::uint64_t count) : out(o), loop(l), n(count) {}

  sluice::writable& out;
  sluice::loop& loop;
  std::uint64_t n;
  std::size_t batch = 1000;
  bool respect_drain = true;
  how mode = how::print;
  std::uint64_t i = 0;
  std::uint64_t drains = 0;
  clock_type::time_point last_print;
  sluice::task when_done;

  void step() {
    const std::uint64_t end = std::min(n, i + batch);
    while (i < end) {
      const line l = make_line(i++);
      bool ok;
      if (mode == how::print_compiled) {
        ok = out.print(FMT_COMPILE(LINE_BODY "\n"), LINE_ARGS(l));
      } else if (mode == how::write_compiled) {
        // Unbounded format_to into a char*: fmt 9's format_to_n copies byte by
        // byte through a truncating iterator. A line is at most ~120 bytes.
        char tmp[512];
        char* const end = fmt::format_to(tmp, FMT_COMPILE(LINE_BODY "\n"), LINE_ARGS(l));
        ok = out.write(std::string_view(tmp, static_cast<std::size_t>(end - tmp)));
      } else {
        ok = out.print(LINE_BODY "\n", LINE_ARGS(l));
      }
      if (!ok && respect_drain && i < n) {
        if (out.errored()) die(fmt::format("sluice stream failed: {}", out.errored().message()));
        if (out.writable_need_drain()) {
          ++drains;
          out.once(sluice::event::drain, [this] { step(); });
          return;
        }
      }
    }
    if (i == n) {
      last_print = clock_type::now();
      when_done();
      return;
    }
    loop.set_immediate([this] { step(); });
  }
};

timing run_sluice_fd(const char* path, std::uint64_t n, bool respect_drain, std::optional<std::size_t> hwm,
                     how mode = how::print) {
  auto& loop = sluice::loop::current();
  sluice::writable_options wo;
  wo.high_water_mark = hwm;
  auto out = sluice::make_fd_writable(open_log(path), true, wo);
  std::error_code err;
  bool finished = false;
  out->on(sluice::event::error, [&err](std::error_code ec) { err = ec; });
  sluice_producer p(*out, loop, n);
  p.respect_drain = respect_drain;
  p.mode = mode;
  p.when_done = [&] { out->end([&](std::error_code ec) { finished = !ec; if (ec) err = ec; }); };
  const auto t0 = clock_type::now();
  loop.set_immediate([&p] { p.step(); });
  loop.run();  // returns when the stream has finished and closed the fd
  const auto t1 = clock_type::now();
  if (err || !finished) die(fmt::format("sluice fd stream: {}", err ? err.message() : "did not finish"));
  const auto* sink = static_cast<const sluice::fd_sink*>(&out->get_sink());
  std::fprintf(stderr, "log_bench:   sluice fd: %zu syscalls, %" PRIu64 " drains\n", sink->syscalls(), p.drains);
  return {seconds_between(t0, t1), seconds_between(t0, p.last_print)};
}

timing run_sluice_worker(const char* path, std::uint64_t n, bool respect_drain, std::optional<std::size_t> hwm,
                         how mode = how::print) {
  auto& loop = sluice::loop::current();
  sluice::file_worker worker(open_log(path), true);
  sluice::writable_options wo;
  wo.high_water_mark = hwm;
  auto out = sluice::make_worker_writable(worker, wo);
  std::error_code err;
  out->on(sluice::event::error, [&err](std::error_code ec) { err = ec; });
  sluice_producer p(*out, loop, n);
  p.respect_drain = respect_drain;
  p.mode = mode;
  clock_type::time_point flushed;
  // flush_sync from a turn of its own: not from inside a 'drain' listener,
  // which runs inside the stream's write completion (flush_sync then waits
  // for the batch in flight only).
  p.when_done = [&] {
    loop.set_immediate([&] {
      if (auto ec = sluice::flush_sync(*out)) err = ec;
      flushed = clock_type::now();
      out->end();
    });
  };
  const auto t0 = clock_type::now();
  loop.set_immediate([&p] { p.step(); });
  loop.run();
  const std::error_code close_err = worker.close();
  if (err || close_err) die(fmt::format("sluice worker: {}", (err ? err : close_err).message()));
  std::fprintf(stderr, "log_bench:   sluice worker: %zu batches, %zu syscalls, %" PRIu64 " drains\n",
               worker.batches(), worker.syscalls(), p.drains);
  return {seconds_between(t0, flushed), seconds_between(t0, p.last_print)};
}

timing run_fmt_output_file(const char* path, std::uint64_t n) {
  auto out = fmt::output_file(path, fmt::file::WRONLY | fmt::file::CREATE | fmt::file::TRUNC | fmt::file::APPEND);
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    out.print(LINE_BODY "\n", LINE_ARGS(l));
  }
  out.close();
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

// fmt::ostream's buffer is private, so a compiled format reaches it through
// a stack buffer and print("{}"), which fmt 9 takes without parsing (its
// vformat_to has a fast path for exactly "{}"): one copy of the line more.
timing run_fmt_output_file_compiled(const char* path, std::uint64_t n) {
  auto out = fmt::output_file(path, fmt::file::WRONLY | fmt::file::CREATE | fmt::file::TRUNC | fmt::file::APPEND);
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    char tmp[512];
    char* const end = fmt::format_to(tmp, FMT_COMPILE(LINE_BODY "\n"), LINE_ARGS(l));
    out.print("{}", std::string_view(tmp, static_cast<std::size_t>(end - tmp)));
  }
  out.close();
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

FILE* fopen_log(const char* path) {
  ::close(open_log(path));  // create and truncate, then append like the others
  FILE* f = std::fopen(path, "a");
  if (!f) die(fmt::format("cannot fopen {}: {}", path, std::strerror(errno)));
  return f;
}

timing run_fmt_buffer_fwrite(const char* path, std::uint64_t n) {
  FILE* f = fopen_log(path);
  fmt::memory_buffer buf;
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    buf.clear();
    fmt::format_to(std::back_inserter(buf), LINE_BODY "\n", LINE_ARGS(l));
    std::fwrite(buf.data(), 1, buf.size(), f);
  }
  if (std::fclose(f) != 0) die("fclose failed");
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

timing run_fmt_buffer_fwrite_compiled(const char* path, std::uint64_t n) {
  FILE* f = fopen_log(path);
  fmt::memory_buffer buf;
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    buf.clear();
    fmt::format_to(std::back_inserter(buf), FMT_COMPILE(LINE_BODY "\n"), LINE_ARGS(l));
    std::fwrite(buf.data(), 1, buf.size(), f);
  }
  if (std::fclose(f) != 0) die("fclose failed");
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

timing run_fprintf(const char* path, std::uint64_t n) {
  FILE* f = fopen_log(path);
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    std::fprintf(f, LINE_PRINTF, l.hh, l.mm, l.ss, l.us, l.id, l.cpath, l.status, l.took);
  }
  if (std::fclose(f) != 0) die("fclose failed");
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

timing run_ofstream(const char* path, std::uint64_t n) {
  ::close(open_log(path));
  std::ofstream os(path, std::ios::out | std::ios::app | std::ios::binary);
  if (!os) die(fmt::format("cannot open {} with ofstream", path));
  os << std::setfill('0');
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    os << "2026-11-30T" << std::setw(2) << l.hh << ':' << std::setw(2) << l.mm << ':' << std::setw(2) << l.ss << '.'
       << std::setw(6) << l.us << "Z INFO request id=" << l.id << " path=" << l.path << " status=" << l.status
       << " took_us=" << l.took << '\n';
  }
  os.close();
  if (!os) die("ofstream failed");
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

#if LOG_BENCH_HAVE_SPDLOG
timing run_spdlog_sync(const char* path, std::uint64_t n, bool mt) {
  auto logger = mt ? spdlog::basic_logger_mt("sync", path, true) : spdlog::basic_logger_st("sync", path, true);
  logger->set_pattern("%v");  // the message and the newline, nothing else
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    logger->info(LINE_BODY, LINE_ARGS(l));
  }
  logger->flush();
  spdlog::drop_all();
  logger.reset();  // the last owner: closes the file
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

timing run_spdlog_async(const char* path, std::uint64_t n) {
  // async_factory: the global pool, queue of 8192, one thread, policy block.
  auto logger = spdlog::basic_logger_mt<spdlog::async_factory>("async", path, true);
  logger->set_pattern("%v");
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    logger->info(LINE_BODY, LINE_ARGS(l));
  }
  const auto t_prod = clock_type::now();
  logger->flush();   // queued behind the lines: the sink fflush()es after them
  logger.reset();
  spdlog::shutdown();  // drops the logger, joins the pool after it emptied the queue; the file closes
  const auto t1 = clock_type::now();
  return {seconds_between(t0, t1), seconds_between(t0, t_prod)};
}
#endif

// The floor of the work: formatting alone, into a stack buffer; no file.
timing run_format_only(std::uint64_t n) {
  char tmp[256];
  std::size_t bytes = 0;
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    bytes += fmt::format_to_n(tmp, sizeof tmp, LINE_BODY "\n", LINE_ARGS(l)).size;
    bench::do_not_optimize(tmp);
  }
  bench::do_not_optimize(bytes);
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

// The ceiling with I/O: fmt into one memory_buffer, a write(2) per 64 KiB.
timing run_buffer_write64k(const char* path, std::uint64_t n) {
  const int fd = open_log(path);
  fmt::memory_buffer buf;
  buf.reserve(64 * 1024 + 1024);
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    fmt::format_to(std::back_inserter(buf), LINE_BODY "\n", LINE_ARGS(l));
    if (buf.size() >= 64 * 1024) {
      write_all(fd, buf.data(), buf.size());
      buf.clear();
    }
  }
  write_all(fd, buf.data(), buf.size());
  ::close(fd);
  const double s = seconds_between(t0, clock_type::now());
  return {s, s};
}

// ---- the table of variants

enum class kind { cxx, node, reference_no_file };

struct variant {
  const char* name;          // for --only and --child
  const char* label;         // in the table
  const char* producer_label;  // a second row for the producer's time, or null
  kind k;
  const char* child_env = nullptr;  // one more NAME=VALUE for the child
};

// glibc serves aligned_alloc(64 KiB, 64 KiB) (a byte_arena block) with mmap,
// and never adapts its threshold to it, so a stream that cycles through more
// blocks than the arena keeps munmaps and page-faults them every time. With
// the threshold above the request, blocks come from the heap: this variant
// shows what the worker costs without that churn.
constexpr const char* heap_blocks_env = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576";

const std::vector<variant>& variants() {
  static const std::vector<variant> v = {
      {"sluice-print", "sluice print, fd, wait for drain", nullptr, kind::cxx},
      {"sluice-print-nobp", "sluice print, fd, ignore false", nullptr, kind::cxx},
      {"sluice-print-hwm64k", "sluice print, fd, drain, hwm 64K", nullptr, kind::cxx},
      {"sluice-worker", "sluice worker, until flush_sync", "sluice worker, producer", kind::cxx},
      {"sluice-print-compiled", "sluice print FMT_COMPILE, fd", nullptr, kind::cxx},
      {"sluice-worker-compiled", "sluice worker COMPILE, until flush", "sluice worker COMPILE, producer", kind::cxx},
      {"sluice-worker-hwm16k", "sluice worker hwm 16K, until flush", "sluice worker hwm 16K, producer", kind::cxx},
      {"sluice-worker-nobp", "sluice worker nobp, until flush", "sluice worker nobp, producer", kind::cxx},
      {"fmt-output-file", "fmt::output_file", nullptr, kind::cxx},
      {"fmt-buffer-fwrite", "fmt::format_to buffer + fwrite", nullptr, kind::cxx},
      {"fmt-output-file-compiled", "fmt::output_file, FMT_COMPILE", nullptr, kind::cxx},
      {"fmt-buffer-fwrite-compiled", "fmt FMT_COMPILE buffer + fwrite", nullptr, kind::cxx},
      {"fprintf", "fprintf", nullptr, kind::cxx},
      {"ofstream", "std::ofstream <<", nullptr, kind::cxx},
#if LOG_BENCH_HAVE_SPDLOG
      {"spdlog-sync", "spdlog sync basic_file_sink_mt", nullptr, kind::cxx},
      {"spdlog-sync-st", "spdlog sync basic_file_sink_st", nullptr, kind::cxx},
      {"spdlog-async", "spdlog async, until shutdown", "spdlog async, producer", kind::cxx},
#endif
      {"node", "node createWriteStream", nullptr, kind::node},
      {"ref-format-only", "(ref) fmt format_to_n, no I/O", nullptr, kind::reference_no_file},
      {"ref-buffer-write64k", "(ref) fmt buffer, write per 64K", nullptr, kind::cxx},
      {"ref-sluice-compiled", "(ref) FMT_COMPILE to stack, write", nullptr, kind::cxx},
      {"ref-worker-hwm1m-heap", "(ref) worker hwm 1M, heap blocks", "(ref) worker hwm 1M heap, producer", kind::cxx,
       heap_blocks_env},
  };
  return v;
}

timing run_variant(std::string_view name, const char* path, std::uint64_t n) {
  if (name == "sluice-print") return run_sluice_fd(path, n, true, std::nullopt);
  if (name == "sluice-print-nobp") return run_sluice_fd(path, n, false, std::nullopt);
  if (name == "sluice-print-hwm64k") return run_sluice_fd(path, n, true, 64 * 1024);
  if (name == "sluice-worker") return run_sluice_worker(path, n, true, std::nullopt);
  if (name == "sluice-worker-hwm16k") return run_sluice_worker(path, n, true, 16 * 1024);
  if (name == "ref-worker-hwm1m-heap") return run_sluice_worker(path, n, true, 1024 * 1024);
  if (name == "ref-sluice-compiled") return run_sluice_fd(path, n, true, std::nullopt, how::write_compiled);
  if (name == "sluice-print-compiled") return run_sluice_fd(path, n, true, std::nullopt, how::print_compiled);
  if (name == "sluice-worker-compiled") return run_sluice_worker(path, n, true, std::nullopt, how::print_compiled);
  if (name == "sluice-worker-nobp") return run_sluice_worker(path, n, false, std::nullopt);
  if (name == "fmt-output-file") return run_fmt_output_file(path, n);
  if (name == "fmt-buffer-fwrite") return run_fmt_buffer_fwrite(path, n);
  if (name == "fmt-output-file-compiled") return run_fmt_output_file_compiled(path, n);
  if (name == "fmt-buffer-fwrite-compiled") return run_fmt_buffer_fwrite_compiled(path, n);
  if (name == "fprintf") return run_fprintf(path, n);
  if (name == "ofstream") return run_ofstream(path, n);
#if LOG_BENCH_HAVE_SPDLOG
  if (name == "spdlog-sync") return run_spdlog_sync(path, n, true);
  if (name == "spdlog-sync-st") return run_spdlog_sync(path, n, false);
  if (name == "spdlog-async") return run_spdlog_async(path, n);
#endif
  if (name == "ref-format-only") return run_format_only(n);
  if (name == "ref-buffer-write64k") return run_buffer_write64k(path, n);
  die(fmt::format("unknown variant '{}'", name));
}

// One variant's measurement, as the child prints it on one line:
//   result total_s=.. producer_s=.. rss_before=.. peak_rss=.. syscw=.. wchar=.. cpu_s=.. thread_cpu_s=..
// cpu_s is the whole process's CPU time, thread_cpu_s the producing (main)
// thread's: the same for the synchronous variants; for the worker and spdlog
// async, the producer's share (it also runs the completions, for sluice).
struct measurement {
  double total_s = 0, producer_s = 0, cpu_s = 0, thread_cpu_s = 0;
  std::uint64_t rss_before = 0, peak_rss = 0, syscw = 0, wchar = 0;
};

std::optional<measurement> parse_result(const std::string& out) {
  const auto pos = out.rfind("result ");
  if (pos == std::string::npos) return std::nullopt;
  measurement m;
  unsigned long long rb, pr, sc, wc;
  if (std::sscanf(out.c_str() + pos,
                  "result total_s=%lf producer_s=%lf rss_before=%llu peak_rss=%llu syscw=%llu wchar=%llu cpu_s=%lf "
                  "thread_cpu_s=%lf",
                  &m.total_s, &m.producer_s, &rb, &pr, &sc, &wc, &m.cpu_s, &m.thread_cpu_s) != 8)
    return std::nullopt;
  m.rss_before = rb;
  m.peak_rss = pr;
  m.syscw = sc;
  m.wchar = wc;
  return m;
}

int child_main(std::string_view name, const char* path, std::uint64_t n) {
  const std::size_t rss_before = current_rss_bytes();
  const io_counts io0 = read_io();
  const double cpu0 = cpu_seconds(), thread_cpu0 = cpu_seconds(RUSAGE_THREAD);
  const timing t = run_variant(name, path, n);
  const double cpu1 = cpu_seconds(), thread_cpu1 = cpu_seconds(RUSAGE_THREAD);
  const io_counts io1 = read_io();
  std::printf("result total_s=%.9f producer_s=%.9f rss_before=%zu peak_rss=%zu syscw=%" PRIu64 " wchar=%" PRIu64
              " cpu_s=%.6f thread_cpu_s=%.6f\n",
              t.total_s, t.producer_s, rss_before, peak_rss_bytes(), io1.syscw - io0.syscw, io1.wchar - io0.wchar,
              cpu1 - cpu0, thread_cpu1 - thread_cpu0);
  return 0;
}

// ---- the parent: spawning, verifying, the table

struct spawned {
  bool ok = false;
  std::string out;
};

// Runs argv (posix_spawn: no copy of this process's memory, so the child's
// peak RSS is its own), capturing its standard output.
spawned spawn_capture(const std::vector<std::string>& argv, bool search_path, const char* extra_env = nullptr) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) die("pipe2 failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  if (extra_env) env.push_back(const_cast<char*>(extra_env));
  env.push_back(nullptr);
  pid_t pid;
  const int rc = search_path ? posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), env.data())
                             : posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  spawned r;
  if (rc != 0) {
    ::close(p[0]);
    std::fprintf(stderr, "log_bench: cannot run %s: %s\n", args[0], std::strerror(rc));
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(p[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.out.append(buf, static_cast<std::size_t>(got));
  }
  ::close(p[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!r.ok) std::fprintf(stderr, "log_bench: %s exited with status %d\n", argv[0].c_str(), status);
  return r;
}

// The expected content, chunk by chunk.
struct expected_lines {
  explicit expected_lines(std::uint64_t count) : n(count) {}
  std::uint64_t n, i = 0;
  fmt::memory_buffer buf;
  // The next up-to-`lines` lines; empty at the end.
  std::string_view next(std::uint64_t lines) {
    buf.clear();
    const std::uint64_t end = std::min(n, i + lines);
    for (; i < end; ++i) {
      const line l = make_line(i);
      fmt::format_to(std::back_inserter(buf), LINE_BODY "\n", LINE_ARGS(l));
    }
    return {buf.data(), buf.size()};
  }
};

std::uint64_t expected_size(std::uint64_t n) {
  expected_lines e(n);
  std::uint64_t total = 0;
  for (auto s = e.next(65536); !s.empty(); s = e.next(65536)) total += s.size();
  return total;
}

// Reads exactly `want` bytes (fewer only at EOF).
std::size_t read_full(int fd, char* p, std::size_t want) {
  std::size_t got = 0;
  while (got < want) {
    const ssize_t r = ::read(fd, p + got, want - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

// Checks `path` against the expected lines: same bytes, so the same line
// count and size. Returns an empty string when it matches, else what differs.
std::string verify(const char* path, std::uint64_t n, std::uint64_t want_bytes) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open: {}", std::strerror(errno));
  struct stat st{};
  ::fstat(fd, &st);
  expected_lines e(n);
  std::vector<char> got(8192 * 128);
  std::uint64_t newlines = 0, offset = 0, line_no = 0;
  std::string problem;
  for (auto want = e.next(8192); !want.empty(); want = e.next(8192)) {
    if (got.size() < want.size()) got.resize(want.size());
    const std::size_t r = read_full(fd, got.data(), want.size());
    for (const char* p = got.data(); (p = static_cast<const char*>(std::memchr(p, '\n', got.data() + r - p)));
         ++p)
      ++newlines;
    if (r != want.size() || std::memcmp(got.data(), want.data(), r) != 0) {
      std::size_t k = 0;
      while (k < r && k < want.size() && got[k] == want[k]) ++k;
      const auto ln = line_no + static_cast<std::uint64_t>(std::count(want.data(), want.data() + k, '\n')) + 1;
      problem = r < want.size() && k == r ? fmt::format("short: ends at byte {} (line {})", offset + r, ln)
                                          : fmt::format("differs at byte {} (line {})", offset + k, ln);
      break;
    }
    offset += r;
    line_no += static_cast<std::uint64_t>(std::count(want.data(), want.data() + want.size(), '\n'));
  }
  if (problem.empty()) {
    char extra;
    if (read_full(fd, &extra, 1) != 0) problem = "longer than expected";
  }
  ::close(fd);
  if (problem.empty() && (static_cast<std::uint64_t>(st.st_size) != want_bytes || newlines != n))
    problem = fmt::format("{} lines, {} bytes; want {} lines, {} bytes", newlines, st.st_size, n, want_bytes);
  if (!problem.empty()) problem += fmt::format(" (file has {} bytes)", st.st_size);
  return problem;
}

struct stats {
  int runs = 0;
  double best_total = std::numeric_limits<double>::infinity();
  double best_producer = std::numeric_limits<double>::infinity();
  double best_cpu = std::numeric_limits<double>::infinity();
  double best_thread_cpu = std::numeric_limits<double>::infinity();
  std::uint64_t peak_rss = 0, growth = 0, syscw = 0, wchar = 0;
};

std::string fs_type(const std::string& dir) {
  struct statfs s{};
  if (::statfs(dir.c_str(), &s) != 0) return "?";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53: return "ext2/3/4";
    case 0x01021994: return "tmpfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794c7630: return "overlayfs";
    default: return fmt::format("f_type {:#x}", static_cast<unsigned long>(s.f_type));
  }
}

std::string human_rate(double v) {
  if (v >= 999.5e3) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

constexpr const char* usage_text = R"(usage: log_bench [OPTION]...
Writes N log lines into a file through sluice and its peers, each variant in
a child process of its own, and prints one table with ratios and goals.

  --lines N         lines per variant (default 5000000)
  --reps R          rounds over all variants; each keeps its best time
                    (default 3; SLUICE_BENCH_QUICK=1 or --quick: 200000 lines, 1 round)
  --dir D           make the temporary directory inside D (default $TMPDIR or /tmp)
  --only A,B        run only these variants (names as in the table's first column)
  --node P          the node binary (default: node on PATH)
  --node-script F   log_bench.js; without it Node is skipped
  --strict          exit 1 when a goal is missed
  --list            print the variants' names
  --verify PATH     check PATH against the expected --lines lines, and exit
  --child NAME --file PATH   (internal) run one variant in this process; for
                    valgrind/perf: log_bench --child sluice-print --lines 200000 --file /tmp/x.log
)";

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t lines = 5'000'000;
  int reps = 3;
  bool quick = false, strict = false, lines_given = false, reps_given = false;
  std::string dir_parent, only, node = "node", node_script, child, child_file, verify_file;
  if (const char* q = std::getenv("SLUICE_BENCH_QUICK"); q && *q && std::strcmp(q, "0") != 0) quick = true;
  if (const char* t = std::getenv("TMPDIR"); t && *t) dir_parent = t;
  if (const char* nb = std::getenv("NODE"); nb && *nb) node = nb;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die(fmt::format("{} needs a value", a));
      return argv[++i];
    };
    if (a == "--lines") {
      char* end = nullptr;
      const char* v = value();
      lines = std::strtoull(v, &end, 10);
      if (*end != '\0' || lines == 0 || v[0] == '-') die(fmt::format("--lines wants a positive count, got '{}'", v));
      lines_given = true;
    } else if (a == "--reps") {
      reps = std::atoi(value());
      if (reps < 1) die("--reps wants at least 1");
      reps_given = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--dir") {
      dir_parent = value();
    } else if (a == "--only") {
      only = value();
    } else if (a == "--node") {
      node = value();
    } else if (a == "--node-script") {
      node_script = value();
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--child") {
      child = value();
    } else if (a == "--file") {
      child_file = value();
    } else if (a == "--verify") {
      verify_file = value();
    } else if (a == "--list") {
      for (const auto& v : variants()) std::printf("%s\n", v.name);
      return 0;
    } else if (a == "--help" || a == "-h") {
      std::fputs(usage_text, stdout);
      return 0;
    } else {
      die(fmt::format("unknown argument '{}' (try --help)", a));
    }
  }
  if (quick) {
    if (!lines_given) lines = 200'000;
    if (!reps_given) reps = 1;
  }
  if (!verify_file.empty()) {
    const std::string problem = verify(verify_file.c_str(), lines, expected_size(lines));
    std::printf("%s: %s\n", verify_file.c_str(), problem.empty() ? "as expected" : problem.c_str());
    return problem.empty() ? 0 : 1;
  }
  if (!child.empty()) {
    if (child_file.empty() && child != "ref-format-only") die("--child needs --file");
    return child_main(child, child_file.c_str(), lines);
  }

  // Which variants.
  std::vector<const variant*> chosen;
  for (const auto& v : variants()) {
    if (!only.empty()) {
      const std::string list = "," + only + ",";
      if (list.find(std::string(",") + v.name + ",") == std::string::npos) continue;
    }
    chosen.push_back(&v);
  }
  if (chosen.empty()) die("--only selected no variant (try --list)");

  bool node_ok = false;
  for (const auto* v : chosen) {
    if (v->k != kind::node) continue;
    if (node_script.empty()) {
      std::fprintf(stderr, "log_bench: no --node-script given: skipping Node (perf/log-compare.sh passes it)\n");
    } else {
      const spawned probe = spawn_capture({node, "--version"}, true);
      if (!probe.ok)
        std::fprintf(stderr, "log_bench: node not found as '%s' (set NODE or --node): skipping Node\n", node.c_str());
      else
        node_ok = true;
    }
  }

  char self[4096];
  const ssize_t self_len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (self_len <= 0) die("cannot read /proc/self/exe");
  self[self_len] = '\0';

  if (dir_parent.empty()) dir_parent = "/tmp";
  std::string dir = dir_parent + "/log_bench.XXXXXX";
  if (!::mkdtemp(dir.data())) die(fmt::format("cannot make a directory in {}: {}", dir_parent, std::strerror(errno)));

  const std::uint64_t want_bytes = expected_size(lines);
  std::fprintf(stderr, "log_bench: %" PRIu64 " lines, %" PRIu64 " bytes per variant, in %s (%s), %d round(s)\n", lines,
               want_bytes, dir.c_str(), fs_type(dir).c_str(), reps);

  std::vector<stats> st(chosen.size());
  bool failed = false;
  for (int r = 0; r < reps; ++r) {
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      const variant& v = *chosen[k];
      if (v.k == kind::node && !node_ok) continue;
      const std::string file = dir + "/" + v.name + ".log";
      ::unlink(file.c_str());
      std::fprintf(stderr, "log_bench: round %d/%d: %s\n", r + 1, reps, v.name);
      spawned s;
      if (v.k == kind::node)
        s = spawn_capture({node, node_script, "--lines", std::to_string(lines), "--file", file}, true);
      else
        s = spawn_capture({self, "--child", v.name, "--lines", std::to_string(lines), "--file", file}, false,
                          v.child_env);
      const auto m = s.ok ? parse_result(s.out) : std::nullopt;
      if (!m) {
        std::fprintf(stderr, "log_bench: %s failed%s\n", v.name, s.ok ? " (no result line)" : "");
        failed = true;
        ::unlink(file.c_str());
        continue;
      }
      if (v.k != kind::reference_no_file) {
        const std::string problem = verify(file.c_str(), lines, want_bytes);
        if (!problem.empty()) {
          std::fprintf(stderr, "log_bench: %s wrote a wrong file: %s\n", v.name, problem.c_str());
          failed = true;
        }
      }
      ::unlink(file.c_str());
      auto& x = st[k];
      ++x.runs;
      x.best_total = std::min(x.best_total, m->total_s);
      x.best_producer = std::min(x.best_producer, m->producer_s);
      x.best_cpu = std::min(x.best_cpu, m->cpu_s);
      x.best_thread_cpu = std::min(x.best_thread_cpu, m->thread_cpu_s);
      x.peak_rss = std::max(x.peak_rss, m->peak_rss);
      x.growth = std::max(x.growth, m->peak_rss > m->rss_before ? m->peak_rss - m->rss_before : 0);
      x.syscw = m->syscw;
      x.wchar = m->wchar;
    }
  }
  ::rmdir(dir.c_str());

  // The table.
  auto find = [&](std::string_view name) -> const stats* {
    for (std::size_t k = 0; k < chosen.size(); ++k)
      if (chosen[k]->name == name && st[k].runs > 0) return &st[k];
    return nullptr;
  };
  const stats* base = find("sluice-print");
  const double mb = static_cast<double>(want_bytes) / 1e6;
  std::printf("\nlog_bench: %" PRIu64 " lines, %.1f MB per variant, one file per variant in %s (%s), best of %d\n\n",
              lines, mb, dir_parent.c_str(), fs_type(dir_parent).c_str(), reps);
  std::printf("%-34s %9s %7s %7s %7s %9s %8s %8s %8s %8s\n", "variant", "lines/s", "MB/s", "time s", "cpu s",
              "write(2)s", "peak RSS", "RSS grow", "sluice/", "sluice/");
  std::printf("%-34s %9s %7s %7s %7s %9s %8s %8s %8s %8s\n", "", "", "", "", "", "", "MiB", "MiB", "this", "this");
  std::printf("%-34s %9s %7s %7s %7s %9s %8s %8s %8s %8s\n", "", "", "", "", "", "", "", "", "(wall)", "(cpu)");
  auto ratio_s = [](double base_value, double value) {
    return value > 0 ? fmt::format("{:.2f}x", base_value / value) : std::string("-");
  };
  auto row = [&](const char* label, double secs, double cpu, const stats& x, bool producer_row) {
    const double rate = static_cast<double>(lines) / secs;
    const std::string wall_ratio = base ? ratio_s(secs, base->best_total) : "-";
    const std::string cpu_ratio = base ? ratio_s(cpu, base->best_cpu) : "-";
    const std::string sys = producer_row ? "" : fmt::format("{}", x.syscw);
    std::printf("%-34s %9s %7.1f %7.3f %7.3f %9s %8.1f %8.1f %8s %8s\n", label, human_rate(rate).c_str(), mb / secs,
                secs, cpu, sys.c_str(), static_cast<double>(x.peak_rss) / 1048576.0,
                static_cast<double>(x.growth) / 1048576.0, wall_ratio.c_str(), cpu_ratio.c_str());
  };
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const variant& v = *chosen[k];
    const stats& x = st[k];
    if (x.runs == 0) {
      std::printf("%-34s %9s\n", v.label, "skipped");
      continue;
    }
    if (v.producer_label) row(v.producer_label, x.best_producer, x.best_thread_cpu, x, true);
    row(v.label, x.best_total, x.best_cpu, x, false);
  }
  std::printf("\n(MB = 10^6 bytes. time s: the best wall time of the rounds; cpu s: the best user+sys time,\n"
              " of the whole process on the rows that run to the end, of the producing thread on the\n"
              " producer rows (Node: its whole process). sluice/this: how many times faster sluice print\n"
              " is, by wall time and by CPU time; CPU time moves less when the machine is busy.\n"
              " RSS grow: peak RSS (VmHWM) minus the RSS just before the first line. write(2)s: the\n"
              " process's write syscalls during the variant, all threads (/proc/self/io).)\n");

  // The goals, on wall time (the goals' own measure), then the same ratios
  // on CPU time for comparison.
  int missed = 0, skipped = 0;
  const stats* spd_sync = find("spdlog-sync");
  const stats* fmt_file = find("fmt-output-file");
  const stats* worker = find("sluice-worker");
  const stats* spd_async = find("spdlog-async");
  std::printf("\n%-46s %7s %7s   %-8s %s\n", "goal", "wall", "(cpu)", "want", "result");
  // goal(label, a, b, wall_a, wall_b, cpu_a, cpu_b, at_least, want): the
  // ratio a/b, judged on wall time.
  auto goal = [&](const char* label, const stats* a, const stats* b, auto value, bool at_least, double want) {
    const std::string want_s = fmt::format("{} {}x", at_least ? ">=" : "<=", want);
    if (!a || !b) {
      std::printf("%-46s %7s %7s   %-8s %s\n", label, "n/a", "", want_s.c_str(), "SKIP");
      ++skipped;
      return;
    }
    const auto [wall, cpu] = value(*a, *b);
    const bool ok = at_least ? wall >= want : wall <= want;
    if (!ok) ++missed;
    const std::string cpu_s = cpu > 0 ? fmt::format("({:.2f}x)", cpu) : std::string("");
    std::printf("%-46s %6.2fx %7s   %-8s %s\n", label, wall, cpu_s.c_str(), want_s.c_str(), ok ? "PASS" : "MISS");
  };
  // Speed ratios: the other's time over sluice's.
  auto faster = [](const stats& a, const stats& b) {
    return std::pair{b.best_total / a.best_total, b.best_cpu / a.best_cpu};
  };
  auto faster_producer = [](const stats& a, const stats& b) {
    return std::pair{b.best_producer / a.best_producer, b.best_thread_cpu / a.best_thread_cpu};
  };
  auto rss = [](const stats& a, const stats& b) {
    return std::pair{static_cast<double>(a.peak_rss) / static_cast<double>(b.peak_rss), 0.0};
  };
  goal("sluice print vs spdlog sync (_mt), speed", base, spd_sync, faster, true, 1.5);
  goal("sluice print vs fmt::output_file, speed", base, fmt_file, faster, true, 1.0);
  goal("worker producer vs spdlog async producer", worker, spd_async, faster_producer, true, 4.0);
  goal("sluice print / fmt::output_file, peak RSS", base, fmt_file, rss, false, 2.0);
  // The same goals with compiled formats on both sides where the peer takes
  // them (spdlog's loggers take runtime formats only).
  const stats* base_c = find("sluice-print-compiled");
  const stats* fmt_file_c = find("fmt-output-file-compiled");
  const stats* worker_c = find("sluice-worker-compiled");
  std::printf("%s\n", "with FMT_COMPILE:");
  goal("print FMT_COMPILE vs spdlog sync (_mt), speed", base_c, spd_sync, faster, true, 1.5);
  goal("print FMT_COMPILE vs output_file FMT_COMPILE", base_c, fmt_file_c, faster, true, 1.0);
  goal("print FMT_COMPILE vs output_file (runtime)", base_c, fmt_file, faster, true, 1.0);
  goal("worker FMT_COMPILE producer vs spdlog async", worker_c, spd_async, faster_producer, true, 4.0);
  goal("print FMT_COMPILE / output_file, peak RSS", base_c, fmt_file, rss, false, 2.0);
  if (worker && spd_async)
    std::printf("%-46s %6.2fx %7s   (for reference)\n", "worker until flush_sync vs spdlog async until shut",
                spd_async->best_total / worker->best_total,
                fmt::format("({:.2f}x)", spd_async->best_cpu / worker->best_cpu).c_str());
  std::printf("\ngoals: %d missed, %d skipped\n", missed, skipped);
  std::fflush(stdout);

  if (failed) return 1;
  if (strict && missed > 0) return 1;
  return 0;
}
