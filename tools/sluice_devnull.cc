// sluice-devnull: the classic stream-overhead benchmark. Writes small chunks
// to /dev/null (or any file) as fast as a sluice fd writable clears them,
// printing progress once a second and a summary at the end.
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tool.h"
#include "sluice/sluice.h"

namespace {

constexpr const char* usage_text = R"(usage: sluice-devnull [OPTION]...
Writes batches of small chunks through a sluice fd writable as fast as it
clears them, then ends the stream and waits for every write callback.

Default workload: batches of 1000 writes of a 56-byte chunk ('a' x 55 and a
newline), each with a callback, to /dev/null, yielding to the loop between
batches, for 3 seconds. When write() has returned false, the next batch waits
for 'drain', so memory stays bounded however slow the target is.

Options:
  --chunk-size N   bytes per write (default 56; 1 to 1073741824)
  --batch N        writes per turn of the loop (default 1000; 1 to 1000000);
                   a batch may be buffered whole, so N times the chunk size
                   may be at most 1073741824 bytes (1 GiB)
  --duration S     issue writes for S seconds (default 3; decimals allowed)
  --count N        issue exactly N writes instead of running for a duration
  --no-callback    write without callbacks
  --cork           cork() before and uncork() after each batch
  --hwm N          the stream's high-water mark in bytes (default 16384)
  --target PATH    write to PATH instead of /dev/null ('-' is standard output,
                   and the summary then goes to standard error); a regular
                   file is created or truncated
  --json           print the summary as one JSON object on standard output
  --quiet          no progress lines
  -h, --help       show this help

Progress goes to standard error once a second. Exit status: 0 when every
write landed, 1 on an I/O error (the message names it; a file past the size
limit of 'ulimit -f' is one: EFBIG, not death by SIGXFSZ) or when the summary
cannot be written, 2 on bad usage.

Example: sluice-devnull --duration 10 --chunk-size 100 --json
)";

constexpr sluice_tools::tool this_tool{"sluice-devnull", usage_text};

// The largest batch of chunks, in bytes: a batch may sit in memory whole.
constexpr std::uint64_t max_batch_bytes = std::uint64_t{1} << 30;

std::uint64_t parse_count(const std::string& opt, const char* s, std::uint64_t min,
                          std::uint64_t max = UINT64_MAX) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end != '\0' || s[0] == '-' || v < min || v > max) {
    if (max == UINT64_MAX)
      this_tool.usage_error(fmt::format("{} wants a whole number of at least {}, got '{}'", opt, min, s));
    this_tool.usage_error(fmt::format("{} wants a whole number from {} to {}, got '{}'", opt, min, max, s));
  }
  return v;
}

double parse_seconds(const std::string& opt, const char* s) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (errno || end == s || *end != '\0' || !(v > 0) || v > 1e6)
    this_tool.usage_error(fmt::format("{} wants a positive number of seconds, got '{}'", opt, s));
  return v;
}

struct options {
  std::size_t chunk_size = 56;
  std::size_t batch = 1000;
  double duration = 3.0;
  std::optional<std::uint64_t> count;
  bool callback = true;
  bool cork = false;
  std::optional<std::size_t> hwm;
  std::string target = "/dev/null";
  bool json = false;
  bool quiet = false;
};

options parse_args(int argc, char** argv) {
  options o;
  enum { chunk_size = 256, batch, duration, count, no_callback, cork, hwm, target, json, quiet };
  static const option long_options[] = {
      {"chunk-size", required_argument, nullptr, chunk_size},
      {"batch", required_argument, nullptr, batch},
      {"duration", required_argument, nullptr, duration},
      {"count", required_argument, nullptr, count},
      {"no-callback", no_argument, nullptr, no_callback},
      {"cork", no_argument, nullptr, cork},
      {"hwm", required_argument, nullptr, hwm},
      {"target", required_argument, nullptr, target},
      {"json", no_argument, nullptr, json},
      {"quiet", no_argument, nullptr, quiet},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;
  int c;
  while ((c = ::getopt_long(argc, argv, ":h", long_options, nullptr)) != -1) {
    switch (c) {
      case chunk_size: o.chunk_size = parse_count("--chunk-size", optarg, 1, max_batch_bytes); break;
      case batch: o.batch = parse_count("--batch", optarg, 1, 1'000'000); break;
      case duration: o.duration = parse_seconds("--duration", optarg); break;
      case count: o.count = parse_count("--count", optarg, 1); break;
      case no_callback: o.callback = false; break;
      case cork: o.cork = true; break;
      case hwm: o.hwm = parse_count("--hwm", optarg, 0); break;
      case target:
        o.target = optarg;
        if (o.target.empty()) this_tool.usage_error("--target wants a path");
        break;
      case json: o.json = true; break;
      case quiet: o.quiet = true; break;
      case 'h':
        this_tool.help();
      default:
        this_tool.bad_option(c, argv, ":h");
    }
  }
  if (optind != argc) this_tool.usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (std::uint64_t{o.chunk_size} * o.batch > max_batch_bytes)
    this_tool.usage_error(fmt::format("--chunk-size {} times --batch {} is more than {} bytes: lower --batch", o.chunk_size, o.batch,
                            max_batch_bytes));
  return o;
}

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::size_t current_rss_bytes() {
  long pages_total = 0, pages_resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
    std::fclose(f);
  }
  return static_cast<std::size_t>(pages_resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

std::size_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The run: one writable, one batch per turn, counters for the summary.
class bench {
 public:
  explicit bench(const options& o) : o_(o), chunk_(o.chunk_size, 'a') {
    chunk_.back() = '\n';
  }

  int run() {
    int fd;
    bool close_fd = false;
    if (o_.target == "-") {
      fd = STDOUT_FILENO;
    } else {
      fd = ::open(o_.target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        std::fprintf(stderr, "sluice-devnull: cannot open %s: %s\n", o_.target.c_str(), std::strerror(errno));
        return 1;
      }
      close_fd = true;
    }
    sluice::writable_options wo;
    wo.high_water_mark = o_.hwm;
    auto sink = std::make_unique<sluice::fd_sink>(fd, close_fd);
    sink_ = sink.get();
    stream_ = std::make_unique<sluice::writable>(std::move(sink), wo);
    stream_->on(sluice::event::drain, [this] {
      ++drains_;
      if (waiting_for_drain_) {
        waiting_for_drain_ = false;
        schedule();
      }
    });
    stream_->on(sluice::event::error, [this](std::error_code ec) {
      if (!error_) error_ = ec;
    });
    stream_->on(sluice::event::finish, [this] { finished_ = true; });

    auto& loop = sluice::loop::current();
    t0_ = clock_type::now();
    next_progress_ = 1.0;
    schedule();
    loop.run();
    elapsed_ = seconds_since(t0_);
    report();
    return error_ || summary_failed_ ? 1 : 0;
  }

 private:
  void schedule() {
    sluice::loop::current().set_immediate([this] { batch(); });
  }

  bool done_issuing() {
    if (error_) return true;
    if (o_.count) return issued_ >= *o_.count;
    return seconds_since(t0_) >= o_.duration;
  }

  void batch() {
    if (done_issuing()) {
      stream_->end([this](std::error_code ec) {
        if (ec && !error_) error_ = ec;
      });
      return;
    }
    std::size_t n = o_.batch;
    if (o_.count) n = static_cast<std::size_t>(std::min<std::uint64_t>(n, *o_.count - issued_));
    if (o_.cork) stream_->cork();
    bool ok = true;
    // Locals, not members: the stream's byte copies may alias any member,
    // which the loop would then read again after every write.
    sluice::writable& out = *stream_;
    const std::string_view chunk = chunk_;
    if (o_.callback) {
      // One callback for every write, passed by reference, as Node code
      // passes one function: nothing is made or destroyed per write.
      for (std::size_t i = n; i > 0; --i) ok = out.write(chunk, on_written_);
    } else {
      for (std::size_t i = n; i > 0; --i) ok = out.write(chunk);
    }
    issued_ += n;
    if (stream_->writable_length() > max_buffered_) max_buffered_ = stream_->writable_length();
    if (o_.cork) stream_->uncork();
    progress();
    // Node's contract: after a false, wait for 'drain'. An errored stream
    // never drains, so it goes straight to end().
    if (!ok && !stream_->errored() && stream_->writable_need_drain())
      waiting_for_drain_ = true;
    else
      schedule();
  }

  std::uint64_t cleared() const {
    return o_.callback ? cleared_ : sink_->bytes_written() / chunk_.size();
  }

  void progress() {
    if (o_.quiet) return;
    const double t = seconds_since(t0_);
    if (t < next_progress_) return;
    const std::uint64_t c = cleared();
    const double dt = t - last_t_;
    const double rate = static_cast<double>(c - last_cleared_) / dt;
    std::fprintf(stderr, "sluice-devnull: %5.1fs %10.2fM writes/s %9.1f MB/s  buffered %zu B  rss %.1f MiB\n", t,
                 rate / 1e6, rate * static_cast<double>(chunk_.size()) / 1e6, stream_->writable_length(),
                 static_cast<double>(current_rss_bytes()) / (1024.0 * 1024.0));
    last_t_ = t;
    last_cleared_ = c;
    next_progress_ = t + 1.0;
  }

  void report() {
    const std::uint64_t c = cleared();
    const double rate = static_cast<double>(c) / elapsed_;
    const double mb = rate * static_cast<double>(chunk_.size()) / 1e6;
    const std::size_t rss = peak_rss_bytes();
    const std::string err = error_ ? fmt::format("{} ({})", error_.message(), sluice::code_name(error_)) : "";
    // The summary goes to standard output, unless that is where the chunks went.
    FILE* out = o_.target == "-" ? stderr : stdout;
    if (o_.json) {
      std::fprintf(out,
          "{\"name\":\"sluice\",\"target\":%s,\"chunk_size\":%zu,\"batch\":%zu,\"callback\":%s,\"cork\":%s,"
          "\"issued\":%llu,\"cleared\":%llu,\"failed\":%llu,\"elapsed_s\":%.6f,\"cleared_per_s\":%.0f,"
          "\"mb_per_s\":%.2f,\"peak_rss_bytes\":%zu,\"max_buffered_bytes\":%zu,\"drains\":%llu,"
          "\"syscalls\":%zu,\"error\":%s}\n",
          json_string(o_.target).c_str(), chunk_.size(), o_.batch, o_.callback ? "true" : "false",
          o_.cork ? "true" : "false", static_cast<unsigned long long>(issued_), static_cast<unsigned long long>(c),
          static_cast<unsigned long long>(failed_), elapsed_, rate, mb, rss, max_buffered_,
          static_cast<unsigned long long>(drains_), sink_->syscalls(), error_ ? json_string(err).c_str() : "null");
    } else {
      std::fprintf(out,
          "issued %llu writes of %zu bytes to %s in %.3f s\n"
          "cleared %llu (%.2fM writes/s, %.1f MB/s)\n"
          "peak RSS %.1f MiB, largest buffered %zu bytes, %llu drains, %zu syscalls\n",
          static_cast<unsigned long long>(issued_), chunk_.size(), o_.target.c_str(), elapsed_,
          static_cast<unsigned long long>(c), rate / 1e6, mb, static_cast<double>(rss) / (1024.0 * 1024.0),
          max_buffered_, static_cast<unsigned long long>(drains_), sink_->syscalls());
    }
    // Standard output has nothing more to print: check now that the summary
    // landed, so that its write error comes before the messages below.
    if (out == stdout)
      summary_failed_ = !sluice_tools::close_stdout("sluice-devnull");
    else
      std::fflush(out);
    if (error_) {
      std::fprintf(stderr, "sluice-devnull: write to %s failed: %s; %llu writes did not land\n", o_.target.c_str(),
                   err.c_str(), static_cast<unsigned long long>(issued_ - c));
    } else if (!finished_) {
      std::fprintf(stderr, "sluice-devnull: the stream did not finish\n");
      error_ = sluice::make_error_code(sluice::errc::premature_close);
    }
  }

  const options& o_;
  std::string chunk_;
  // Every write's callback (see batch()).
  const sluice::write_cb on_written_ = [this](std::error_code ec) {
    if (ec) {
      ++failed_;
      if (!error_) error_ = ec;
    } else {
      ++cleared_;
    }
  };
  sluice::fd_sink* sink_ = nullptr;
  std::unique_ptr<sluice::writable> stream_;
  clock_type::time_point t0_;
  std::uint64_t issued_ = 0, cleared_ = 0, failed_ = 0, drains_ = 0;
  std::size_t max_buffered_ = 0;
  bool waiting_for_drain_ = false, finished_ = false, summary_failed_ = false;
  std::error_code error_;
  double elapsed_ = 0, next_progress_ = 1.0, last_t_ = 0;
  std::uint64_t last_cleared_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, [](const options& o) { return bench(o).run(); });
}
