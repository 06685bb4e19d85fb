#include "variants.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <optional>
#include <string>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/os.h>

#if LOG_BENCH_HAVE_SPDLOG
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/spdlog.h>
#endif

#include "../bench.h"
#include "lines.h"
#include "support.h"
#include "sluice/fs/flush_sync.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/stream/print_compiled.h"
#include "sluice/stream/writable.h"

namespace log_bench {

namespace {

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

// spdlog's rotating file logger, as a service logs: it counts every line's
// bytes against max_size. The limit is above the run's output (5M lines are
// ~550 MB), so the file is never rotated and the check reads one file.
timing run_spdlog_rotating(const char* path, std::uint64_t n) {
  ::close(open_log(path));  // the rotating sink appends: start from an empty file
  auto logger = spdlog::rotating_logger_mt("rotating", path, std::size_t{1} << 40, 1);
  logger->set_pattern("%v");
  const auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    const line l = make_line(i);
    logger->info(LINE_BODY, LINE_ARGS(l));
  }
  logger->flush();
  spdlog::drop_all();
  logger.reset();
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

}  // namespace

const std::vector<variant>& variants() {
  static const std::vector<variant> v = {
      {"sluice-print", "sluice print, fd, wait for drain", nullptr, kind::cxx},
      {"sluice-print-nobp", "sluice print, fd, ignore false", nullptr, kind::cxx},
      {"sluice-print-hwm64k", "sluice print, fd, drain, hwm 64K", nullptr, kind::cxx},
      // The mark of every fd writable before file_high_water_mark (Node v20's).
      {"sluice-print-hwm16k", "sluice print, fd, drain, hwm 16K", nullptr, kind::cxx},
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
      {"spdlog-rotating", "spdlog sync rotating_file_sink_mt", nullptr, kind::cxx},
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
  if (name == "sluice-print-hwm16k") return run_sluice_fd(path, n, true, 16 * 1024);
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
  if (name == "spdlog-rotating") return run_spdlog_rotating(path, n);
  if (name == "spdlog-async") return run_spdlog_async(path, n);
#endif
  if (name == "ref-format-only") return run_format_only(n);
  if (name == "ref-buffer-write64k") return run_buffer_write64k(path, n);
  die(fmt::format("unknown variant '{}'", name));
}

}  // namespace log_bench
