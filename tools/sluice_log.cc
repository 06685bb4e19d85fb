// sluice-log: appends the lines of standard input to a log file, rotated by
// size, like Apache's rotatelogs or daemontools' multilog. Standard input is
// a readable over an fd_source split by for_each_line(); each line (with its
// optional timestamp and its "\n") is one print() into the worker-backed log
// writable: a file_worker made with log_options (the worker I/O thread
// rotates, reopens and syncs the file), and a worker_sink writable on this
// thread's loop. A line is one chunk, and the worker rotates only between
// chunks, so a line is never torn or split across two files. Signals arrive
// through the loop (sluice/signals.h): SIGHUP asks the worker to reopen;
// SIGTERM and SIGINT stop the reading (fd_source::stop()), which makes what
// was read the whole input; its end end()s the writable, and once it has
// finished (every line handed over is written) the worker is closed, which
// syncs (per --fsync) and closes the file.
//
// The loop's thread only reads and splits: a slow disk holds the worker,
// whose completions then come late, so 'drain' holds the reading back.
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>

#include "close_stdout.h"
#include "nonblocking_stdin.h"
#include "log_args.h"
#include "shutdown_signals.h"
#include "sluice/sluice.h"

namespace {

using sluice_tools::parse_fsync;
using sluice_tools::parse_size;

constexpr const char* usage_text = R"(usage: sluice-log [OPTION]... FILE
Appends the lines of standard input to FILE, rotating it by size, like
rotatelogs or multilog.

Options:
  --max-size SIZE   rotate before a line that would take FILE past SIZE bytes:
                    FILE -> FILE.1, FILE.1 -> FILE.2, ..., then a fresh FILE.
                    SIZE is a byte count with an optional suffix K, M or G
                    (1024-based: 64K = 65536 bytes). 0, the default: never
                    rotate. A line is never split across two files; a line
                    longer than SIZE goes whole into a file of its own.
                    Only a regular file is rotated: a FIFO, a device, a
                    socket or a symbolic link (to anything) is written
                    without rotation, with a note on standard error. Several
                    sluice-log processes may write and rotate one FILE: a
                    lock (flock) on FILE orders their writes and rotations,
                    and each follows the others' rotations, so that every
                    line lands once and no file passes SIZE.
  --keep N          rotated files to keep (FILE.1, the newest, to FILE.N;
                    older ones are removed). Default 5; 0 keeps none.
  --timestamp       start each line with the time it was read, RFC 3339 in
                    UTC with microseconds and a space:
                    2026-11-30T00:00:00.123456Z <line>
  --fsync POLICY    when to fsync FILE:
                      never      leave it to the kernel (the default)
                      end        each file once, before it is closed (at
                                 rotation, on SIGHUP and at exit)
                      bytes=SIZE after every SIZE bytes written (SIZE as
                                 above; bytes=0: after every write), and
                                 before each file is closed
                      ms=T       at most T milliseconds (1 or more) after a
                                 write, and before each file is closed
  --max-line-length N
                    the longest line accepted, in bytes (default 1048576)
  --stats           at exit, print 'sluice-log: N lines, B bytes, R rotations,
                    H reopens' on standard error (N: lines written, B: bytes
                    written, timestamps and newlines included; a line the
                    file refused is not counted)
  --json            with --stats: print them as one JSON object instead:
                    {"lines":N,"bytes":B,"rotations":R,"reopens":H}
  -h, --help        show this help

Lines: a line ends at "\n" or "\r\n" and is written with "\n" (so "\r\n"
becomes "\n"); a last line without a newline is written with one. A line
longer than the maximum is an error: the lines before it are written, then
sluice-log stops with a message and exit status 1.

Signals: SIGHUP closes and reopens FILE (after an external rename, as
logrotate does). SIGTERM and SIGINT stop the reading: every line read so far
is written, then sluice-log exits 0, as at the end of the input. Once the
shutdown has begun, SIGHUP, SIGTERM and SIGINT are caught and ignored to the
end: the last sync and close of FILE are not cut short.

Writing waits for the disk: when the file cannot keep up, standard input is
not read until it can, so memory stays bounded.

Exit status: 0 at the end of the input or on SIGTERM/SIGINT, with every line
read in the file; 1 when FILE cannot be opened or written (reported as
'sluice-log: FILE: <reason>'), when standard input cannot be read, or on a
line too long; 2 on bad usage.

Example: my-server 2>&1 | sluice-log --max-size 100M --keep 5 --timestamp server.log
)";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "sluice-log: %s\nTry 'sluice-log --help' for more information.\n", msg.c_str());
  std::exit(2);
}

struct options {
  std::string file;
  sluice::log_options log;
  bool timestamp = false;
  bool stats = false;
  bool json = false;
  std::size_t max_line_length = sluice::line_options{}.max_line_length;
};

options parse_args(int argc, char** argv) {
  options o;
  enum { max_size = 256, keep, timestamp, fsync, max_line_length, stats, json };
  static const option long_options[] = {
      {"max-size", required_argument, nullptr, max_size},
      {"keep", required_argument, nullptr, keep},
      {"timestamp", no_argument, nullptr, timestamp},
      {"fsync", required_argument, nullptr, fsync},
      {"max-line-length", required_argument, nullptr, max_line_length},
      {"stats", no_argument, nullptr, stats},
      {"json", no_argument, nullptr, json},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;  // the messages below say more
  int c;
  std::uint64_t v = 0;
  while ((c = ::getopt_long(argc, argv, ":h", long_options, nullptr)) != -1) {
    switch (c) {
      case max_size:
        if (!parse_size(optarg, true, UINT64_MAX >> 1, v))
          usage_error(std::string("--max-size wants a number of bytes, with K, M or G or none, got '") + optarg + "'");
        o.log.max_size = v;
        break;
      case keep:
        if (!parse_size(optarg, false, 100'000, v))
          usage_error(std::string("--keep wants a whole number from 0 to 100000, got '") + optarg + "'");
        o.log.keep = static_cast<unsigned>(v);
        break;
      case timestamp:
        o.timestamp = true;
        break;
      case fsync:
        if (!parse_fsync(optarg, o.log))
          usage_error(std::string("--fsync wants never, end, bytes=SIZE or ms=T (1 to 86400000), got '") + optarg + "'");
        break;
      case max_line_length:
        if (!parse_size(optarg, false, 1ull << 30, v) || v < 1)
          usage_error(std::string("--max-line-length wants a whole number of bytes from 1 to 1073741824, got '") +
                      optarg + "'");
        o.max_line_length = static_cast<std::size_t>(v);
        break;
      case stats:
        o.stats = true;
        break;
      case json:
        o.json = true;
        break;
      case 'h':
        std::fputs(usage_text, stdout);
        std::exit(0);
      case ':':
        usage_error(std::string("option '") + argv[optind - 1] + "' needs a value");
      default:
        if (optopt > 0 && optopt < 256)
          usage_error(std::string("unknown option '-") + static_cast<char>(optopt) + "'");
        usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  if (o.json && !o.stats) usage_error("--json goes with --stats");
  if (optind == argc) usage_error("missing FILE");
  if (argc - optind > 1) usage_error(std::string("one FILE only, got also '") + argv[optind + 1] + "'");
  o.file = argv[optind];
  if (o.file.empty()) usage_error("FILE is empty");
  return o;
}

// "2026-11-30T00:00:00.123456Z ": the date and time are formatted once a
// second, the microseconds for every line.
class clock_stamp {
 public:
  // The stamp of now: the part to the second, and the microseconds.
  std::string_view seconds(long& usec) {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    usec = ts.tv_nsec / 1000;
    if (ts.tv_sec != last_) {
      last_ = ts.tv_sec;
      tm t{};
      ::gmtime_r(&ts.tv_sec, &t);
      len_ = std::strftime(buf_, sizeof buf_, "%Y-%m-%dT%H:%M:%S", &t);
    }
    return {buf_, len_};
  }

 private:
  time_t last_ = -1;
  char buf_[32] = {};
  std::size_t len_ = 0;
};

class log_tool {
 public:
  explicit log_tool(const options& o) : o_(o) {}

  int run() {
    auto& loop = sluice::loop::current();
    // The signals come to the loop: their tasks never run inside a line
    // (see hold_shutdown_signals()).
    const sigset_t old_mask = sluice_tools::hold_shutdown_signals();
    // Each watch takes an fd (an eventfd): with none left, say so and stop.
    std::error_code ec;
    term_ = sluice::on_signal(loop, SIGTERM, [this] { stop_reading(); }, ec);
    if (!ec) int_ = sluice::on_signal(loop, SIGINT, [this] { stop_reading(); }, ec);
    if (!ec) hup_ = sluice::on_signal(loop, SIGHUP, [this] { worker_->request_reopen(); }, ec);
    if (ec) {
      std::fprintf(stderr, "sluice-log: cannot handle signals: %s\n", ec.message().c_str());
      return 1;
    }

    worker_ = sluice::file_worker::open_log(o_.file, o_.log, ec);
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (!worker_) {
      std::fprintf(stderr, "sluice-log: %s: %s\n", o_.file.c_str(), ec.message().c_str());
      return 1;
    }
    if (o_.log.max_size != 0) note_if_not_rotated();
    out_ = sluice::make_worker_writable(*worker_, {.high_water_mark = 64 * 1024});
    out_->on(sluice::event::error, [this](std::error_code e) { output_failed(e); });
    out_->on(sluice::event::drain, [this] {
      if (!waiting_ || !in_ || stopping_) return;
      waiting_ = false;
      in_->resume();
    });

    stdin_.set();
    in_ = sluice::make_fd_readable(STDIN_FILENO, false);
    in_->on(sluice::event::error, [this](std::error_code e) { read_error_ = e; });
    sluice::for_each_line(
        *in_, [this](std::string_view line) { return on_line(line); },
        [this](std::error_code e) { lines_done(e); },
        {.max_line_length = o_.max_line_length});
    loop.run();
    stdin_.restore();
    // Every line is written (or the file failed): the last sync and the close.
    if (const std::error_code closed = worker_->close(); closed && !failed_) output_failed(closed);
    if (!failed_ && !finished_) {
      // Nothing left to do and the file never finished: a bug, not a state to hide.
      std::fprintf(stderr, "sluice-log: %s: the log did not finish\n", o_.file.c_str());
      status_ = 1;
    }
    if (o_.stats) print_stats();
    return status_;
  }

 private:
  void print_stats() const {
    const auto bytes = static_cast<unsigned long long>(worker_->bytes_written());
    if (o_.json)
      std::fprintf(stderr, "{\"lines\":%zu,\"bytes\":%llu,\"rotations\":%zu,\"reopens\":%zu}\n", written_, bytes,
                   worker_->rotations(), worker_->reopens());
    else
      std::fprintf(stderr, "sluice-log: %zu lines, %llu bytes, %zu rotations, %zu reopens\n", written_, bytes,
                   worker_->rotations(), worker_->reopens());
  }

  // The library rotates a regular file only (log_file.h); say so when
  // --max-size will not apply, once.
  void note_if_not_rotated() const {
    struct stat st {};
    if (::lstat(o_.file.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
    const char* kind = S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    std::fprintf(stderr, "sluice-log: %s: %s: written without rotation\n", o_.file.c_str(), kind);
  }

  // One line: one chunk, so that rotation never splits it.
  bool on_line(std::string_view line) {
    if (stopping_) return false;
    ++lines_;
    // --stats counts what landed: a line the file refused is not written.
    auto landed = [this](std::error_code ec) {
      if (!ec) ++written_;
    };
    bool more;
    if (o_.timestamp) {
      long usec = 0;
      const std::string_view secs = stamp_.seconds(usec);
      more = out_->vprint("{}.{:06}Z {}\n", fmt::make_format_args(secs, usec, line), landed);
    } else {
      more = out_->vprint("{}\n", fmt::make_format_args(line), landed);
    }
    if (!more && !waiting_ && !out_->errored()) {
      // Backpressure: no more input until 'drain'. The rest of the chunk in
      // hand is still split and written (at most a read's worth).
      waiting_ = true;
      in_->pause();
    }
    return true;
  }

  void lines_done(std::error_code ec) {
    if (stopping_ || failed_) return;  // the reading was stopped on purpose
    if (ec == sluice::errc::line_too_long) {
      std::fprintf(stderr, "sluice-log: standard input: line %zu is longer than %zu bytes (%s)\n", lines_ + 1,
                   o_.max_line_length, sluice::code_name(ec).c_str());
      status_ = 1;
    } else if (ec == std::errc::not_enough_memory) {
      // The lines before are written; the rest of the input is not read.
      std::fprintf(stderr, "sluice-log: out of memory at line %zu of standard input\n", lines_ + 1);
      status_ = 1;
    } else if (ec) {
      std::fprintf(stderr, "sluice-log: standard input: %s\n", (read_error_ ? read_error_ : ec).message().c_str());
      status_ = 1;
    }
    finish_output();
  }

  // SIGTERM, SIGINT: nothing more is read, and what was read is written,
  // as at the end of the input: the stream's read-ahead, then the
  // splitter's unfinished line as a last line; then lines_done() ends the
  // output. Destroying the stream here would drop both (issue 10, defect 1).
  void stop_reading() {
    if (!in_ || input_stopped_ || stopping_ || failed_) return;
    input_stopped_ = true;
    static_cast<sluice::fd_source&>(in_->get_source()).stop();
  }

  void finish_output() {
    stopping_ = true;
    if (in_ && !in_->destroyed()) in_->destroy();
    out_->end([this](std::error_code ec) {
      if (ec) return output_failed(ec);
      finished_ = true;
      quit();
    });
  }

  void output_failed(std::error_code ec) {
    if (failed_) return;
    failed_ = true;
    stopping_ = true;
    status_ = 1;
    std::fprintf(stderr, "sluice-log: %s: %s\n", o_.file.c_str(), ec.message().c_str());
    // Nothing more can be written: stop reading too.
    if (in_ && !in_->destroyed()) in_->destroy();
    quit();
  }

  // The signal watches keep the loop running; without them it ends.
  void quit() {
    term_.reset();
    int_.reset();
    hup_.reset();
  }


  const options& o_;
  std::unique_ptr<sluice::file_worker> worker_;
  std::unique_ptr<sluice::writable> out_;  // its sink may outlive worker_
  std::unique_ptr<sluice::readable> in_;
  sluice::signal_watch term_, int_, hup_;
  clock_stamp stamp_;
  std::size_t lines_ = 0;    // read and handed to the file
  std::size_t written_ = 0;  // of those, written
  sluice_tools::nonblocking_stdin stdin_;
  int status_ = 0;
  bool waiting_ = false;   // paused until 'drain'
  bool input_stopped_ = false;  // SIGTERM or SIGINT: the input ends where the reading stopped
  bool stopping_ = false;  // end of input, or an error: no more lines
  bool finished_ = false;  // every line is in the file
  bool failed_ = false;    // the file failed
  std::error_code read_error_;
};

}  // namespace

int main(int argc, char** argv) {
  sluice_tools::reserve_std_fds();
  sluice_tools::close_stdout_at_exit("sluice-log");
  const options o = parse_args(argc, argv);
  // FILE may be a pipe (or /dev/stdout on one): a reader that goes away, or a file past `ulimit -f`, is
  // an error to report, not a reason to die.
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
  // Resources that run out where the streams cannot turn it into an error
  // of their own (building them, the loop's poll): a message and exit 1,
  // never std::terminate (issue 10, defect 7).
  try {
    return log_tool(o).run();
  } catch (const std::bad_alloc&) {
    std::fputs("sluice-log: out of memory\n", stderr);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "sluice-log: %s\n", e.what());
  }
  return 1;
}
