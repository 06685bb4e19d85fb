// crash_points: each durable path runs a workload in a child process over
// the crash model's syscall table (tests/support/crash_points.h), which
// ends the child right before or right after its durable step k, for every
// k of the workload's trace, as a process crash and as a power loss (what
// was not synced is dropped). A second child then restarts on the same
// directory and checks the path's invariants:
// - a log with size rotation and gzip'd rotated files (log_file_sink,
//   fsync after every write): no line reported written is lost, none is
//   there twice or out of order; no plain rotated file is gone while its
//   compressed copy is not whole (before and after recovery); a torn line
//   is at most the last of a file;
// - the spool (spool_sync::batch, two runs on the directory, the first
//   destroyed): every record the spool accepted is sent after recovery (or
//   was acknowledged before the crash), in order; again only what the
//   crashed run had sent;
// - sluice-logd --fsync ack: its file_worker with the options --fsync ack
//   sets (every_bytes, 0) and --max-size rotation: every message whose
//   write callback came (when sluice-logd answers RELP's rsp 200) is in
//   FILE or its rotated files.
// It prints "crash points: N tried, V violated", and each violation with
// its crash point, the step's syscall and path, and the invariant.
// SLUICE_CRASH_SCALE=K makes each workload K times as long (a deep run);
// SLUICE_CRASH_PATH=log (spool, logd) runs one path only.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#ifdef SLUICE_TEST_HAS_ZLIB
#include <zlib.h>
#endif

#include "sluice/sluice.h"
#include "sluice/log_file/detail/log_rotation.h"
#include "sluice/spool/spool_writable.h"
#include "support/crash_points.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

constexpr int max_lines = 8192;
constexpr std::size_t line_size = 32;

// What a workload child tells the parent and the recovery child: which
// lines it handed over, which were reported written (accepted), which the
// spool's downstream was sent and acknowledged.
struct ledger {
  crash_report report;
  int submitted;
  unsigned char accepted[max_lines];
  int sent_n;
  int sent[max_lines];
  unsigned char down_acked[max_lines];
};

int scale() {
  static const int s = [] {
    const char* e = std::getenv("SLUICE_CRASH_SCALE");
    const int v = e ? std::atoi(e) : 1;
    return v < 1 ? 1 : v > 20 ? 20 : v;
  }();
  return s;
}

std::string line(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "L%05d ", i);
  std::string s(b);
  s.resize(line_size - 1, 'x');
  s += '\n';
  return s;
}

// The number of a whole line (its LF included), or -1.
int parse_line(std::string_view s) {
  if (s.size() != line_size || s[0] != 'L' || s[6] != ' ' || s.back() != '\n') return -1;
  int n = 0;
  for (int i = 1; i <= 5; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    n = n * 10 + (s[i] - '0');
  }
  for (std::size_t i = 7; i + 1 < s.size(); ++i)
    if (s[i] != 'x') return -1;
  return n;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// A gzip file's content; false when it is not a whole gzip stream.
bool gunzip(const std::string& data, std::string& out) {
#ifdef SLUICE_TEST_HAS_ZLIB
  out.clear();
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return false;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  char buf[65536];
  int r;
  do {
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof buf;
    r = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof buf - s.avail_out);
  } while (r == Z_OK);
  const bool whole = r == Z_STREAM_END && s.avail_in == 0;
  inflateEnd(&s);
  return whole;
#else
  (void)data;
  (void)out;
  return false;
#endif
}

using violations = std::vector<std::string>;

// The lines of one file, checked: only its last line may be torn.
void take_lines(const std::string& name, const std::string& data, std::vector<int>& all, violations& v) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    const std::size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) break;  // the last, unterminated: torn, allowed
    const int n = parse_line(std::string_view(data).substr(pos, nl + 1 - pos));
    if (n < 0) v.push_back("a torn or foreign line in the middle of " + name + " at byte " + std::to_string(pos));
    else all.push_back(n);
    pos = nl + 1;
  }
}

// Every line of a rotated log, oldest file first (base.K ... base.1, base),
// each number in its compressed form when whole, else its plain one.
std::vector<int> log_lines(const std::string& dir, const std::string& base, unsigned keep, violations& v) {
  std::vector<int> all;
  for (unsigned n = keep; n >= 1; --n) {
    const std::string plain = dir + "/" + base + "." + std::to_string(n);
    const std::string gz = plain + ".gz";
    std::string text;
    if (exists(gz) && gunzip(slurp(gz), text)) {
      take_lines(base + "." + std::to_string(n) + ".gz", text, all, v);
    } else if (exists(plain)) {
      take_lines(base + "." + std::to_string(n), slurp(plain), all, v);
    } else if (exists(gz)) {
      v.push_back(base + "." + std::to_string(n) + ".gz is not whole and its plain file is gone");
    }
  }
  take_lines(base, slurp(dir + "/" + base), all, v);
  return all;
}

// The log's invariants over `all`: each line reported written is there,
// once, in order; nothing that was never written.
void check_lines(const std::vector<int>& all, const ledger& l, violations& v) {
  std::vector<int> seen(max_lines, 0);
  int last = -1;
  for (const int n : all) {
    if (n >= l.submitted) {
      v.push_back("line " + std::to_string(n) + " is there but was never written");
      continue;
    }
    // A line twice loses nothing, and is no invariant of the issue's; it is
    // counted apart (see run_path), and said.
    if (++seen[static_cast<std::size_t>(n)] == 2) v.push_back("duplicate: line " + std::to_string(n) + " is there twice");
    else if (n < last) v.push_back("line " + std::to_string(n) + " comes after line " + std::to_string(last));
    last = std::max(last, n);
  }
  for (int n = 0; n < l.submitted; ++n)
    if (l.accepted[n] && !seen[static_cast<std::size_t>(n)])
      v.push_back("line " + std::to_string(n) + " was reported written and is lost");
}

// ---- the log file: rotation by size, gzip'd rotated files, fsync after each write

constexpr unsigned log_keep = 64;

log_options log_opts() {
  log_options o;
  o.max_size = 8 * line_size;
  o.keep = log_keep;
#ifdef SLUICE_TEST_HAS_ZLIB
  o.compress = log_options::compression::gzip;
  o.compress_level = 1;
#endif
  o.fsync = log_options::fsync_policy::every_bytes;
  o.fsync_bytes = 0;
  return o;
}

void log_workload(const std::string& root, ledger& l) {
  loop& lp = loop::current();
  auto log = make_log_writable(root + "/app.log", log_opts());
  const int lines = 80 * scale();
  for (int i = 0; i < lines; ++i) {
    l.submitted = i + 1;
    log->write(line(i), [&l, i](std::error_code ec) {
      if (!ec) l.accepted[i] = 1;
    });
    lp.run();
  }
  log->end();
  lp.run();
}

void log_check(const std::string& root, const ledger& l, violations& v) {
  // What the crash left: a plain rotated file is gone only once its
  // compressed copy is whole.
  for (unsigned n = 1; n <= log_keep; ++n) {
    const std::string plain = root + "/app.log." + std::to_string(n);
    std::string text;
    if (exists(plain + ".gz") && !exists(plain) && !gunzip(slurp(plain + ".gz"), text))
      v.push_back("app.log." + std::to_string(n) + " is gone while app.log." + std::to_string(n) +
                  ".gz is not whole (before recovery)");
  }
  try {
    detail::log_rotation restart(root + "/app.log", log_opts());  // recovers, compresses what is queued
  } catch (const std::exception& e) {
    v.push_back(std::string("the log cannot be opened again: ") + e.what());
    return;
  }
  check_lines(log_lines(root, "app.log", log_keep, v), l, v);
}

// ---- the spool: sync per batch; a first run destroyed, a second ended

// The downstream: records each record sent, acknowledges it a turn later
// (unless `hold` says to leave it unacknowledged for good).
class recording_sink : public sink {
 public:
  recording_sink(std::function<void(int)> sent, std::function<void(int)> acked, std::function<bool(int)> hold)
      : sink({}), sent_(std::move(sent)), acked_(std::move(acked)), hold_(std::move(hold)) {}
  ~recording_sink() override {
    if (loop_) loop_->cancel(this);
  }
  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override {
    const int n = parse_line(chunk);
    sent_(n);
    if (hold_ && hold_(n)) return;
    loop_->set_immediate([this, done, n] {
      acked_(n);
      done();
    }, this);
  }

 private:
  std::function<void(int)> sent_, acked_;
  std::function<bool(int)> hold_;
  loop* loop_ = nullptr;
};

spool_options spool_opts(const std::string& root) {
  spool_options o;
  o.dir = root + "/spool";
  o.segment_bytes = 6 * (line_size + 16);
  o.sync = spool_sync::batch;
  return o;
}

std::unique_ptr<writable> downstream(std::function<void(int)> sent, std::function<void(int)> acked,
                                     std::function<bool(int)> hold = {}) {
  writable_options w;
  w.object_mode = true;
  return std::make_unique<writable>(
      std::make_unique<recording_sink>(std::move(sent), std::move(acked), std::move(hold)), w);
}

void spool_workload(const std::string& root, ledger& l) {
  loop& lp = loop::current();
  const int half = 50 * scale();
  int i = 0;
  for (int run = 0; run < 2; ++run) {
    auto sp = make_spool_writable(
        downstream([&l](int n) { if (l.sent_n < max_lines) l.sent[l.sent_n++] = n; },
                   [&l](int n) { if (n >= 0 && n < max_lines) l.down_acked[n] = 1; }),
        spool_opts(root));
    for (int k = 0; k < half; ++k, ++i) {
      l.submitted = i + 1;
      sp->write(line(i), [&l, i](std::error_code ec) {
        if (!ec) l.accepted[i] = 1;
      });
      lp.run_until_idle();
    }
    if (run == 0) sp->destroy();  // a stop without end(): the second run sends what is left
    else sp->end();
    lp.run_until_idle();
  }
}

// Two restarts: the first sends what the crash left and takes a few new
// records that its downstream never acknowledges, then is destroyed; the
// second must send those too (a position left stale by the crash must not
// skip them).
constexpr int spool_new = 3;

void spool_check(const std::string& root, const ledger& l, violations& v) {
  loop& lp = loop::current();
  const int first_new = l.submitted;
  std::vector<int> got1, got2;
  std::vector<unsigned char> new_accepted(spool_new, 0);
  try {
    auto sp = make_spool_writable(
        downstream([&got1](int n) { got1.push_back(n); }, [](int) {}, [first_new](int n) { return n >= first_new; }),
        spool_opts(root));
    lp.run_until_idle();
    for (int i = 0; i < spool_new; ++i)
      sp->write(line(first_new + i), [&new_accepted, i](std::error_code ec) {
        if (!ec) new_accepted[static_cast<std::size_t>(i)] = 1;
      });
    lp.run_until_idle();
    sp->destroy();
    lp.run_until_idle();
  } catch (const std::exception& e) {
    v.push_back(std::string("the spool cannot be opened again: ") + e.what());
    return;
  }
  bool ended = false;
  std::error_code end_ec;
  try {
    auto sp = make_spool_writable(downstream([&got2](int n) { got2.push_back(n); }, [](int) {}),
                                               spool_opts(root));
    sp->end([&](std::error_code ec) {
      ended = true;
      end_ec = ec;
    });
    lp.run_until_idle();
    if (!ended) v.push_back("the spool's end() did not finish after the second restart");
    else if (end_ec) v.push_back("the spool's end() failed after the second restart: " + end_ec.message());
  } catch (const std::exception& e) {
    v.push_back(std::string("the spool cannot be opened a second time: ") + e.what());
    return;
  }
  // In order within each run, and nothing that was never written. The
  // position of the acknowledgements is saved lazily (at most every 100 ms,
  // at destroy(), never synced), so what an earlier run sent may be sent
  // again.
  std::vector<int> again(max_lines + spool_new, 0);
  for (const std::vector<int>* got : {&got1, &got2}) {
    int last = -1;
    for (const int n : *got) {
      if (n < 0 || n >= first_new + spool_new) {
        v.push_back("a record sent after recovery was never written");
        continue;
      }
      if (n <= last) v.push_back("line " + std::to_string(n) + " sent after line " + std::to_string(last) +
                                 (got == &got1 ? " after the first restart" : " after the second restart"));
      last = std::max(last, n);
      again[static_cast<std::size_t>(n)] = 1;
    }
  }
  for (int n = 0; n < l.submitted; ++n)
    if (l.accepted[n] && !l.down_acked[n] && !again[static_cast<std::size_t>(n)])
      v.push_back("line " + std::to_string(n) + " was accepted by the spool and is not sent after recovery");
  for (int i = 0; i < spool_new; ++i)
    if (new_accepted[static_cast<std::size_t>(i)] &&
        std::find(got2.begin(), got2.end(), first_new + i) == got2.end())
      v.push_back("line " + std::to_string(first_new + i) +
                  ", accepted after the first restart and never acknowledged, is not sent after the second");
}

// ---- sluice-logd --fsync ack: its file_worker, every_bytes 0, --max-size rotation

constexpr unsigned logd_keep = 64;

log_options logd_opts() {
  log_options o;
  o.max_size = 8 * line_size;
  o.keep = logd_keep;
  o.fsync = log_options::fsync_policy::every_bytes;  // what --fsync ack sets
  o.fsync_bytes = 0;
  return o;
}

void logd_workload(const std::string& root, ledger& l) {
  loop& lp = loop::current();
  log_worker worker(root + "/FILE", logd_opts());
  auto out = make_worker_writable(worker);
  const int lines = 110 * scale();
  for (int i = 0; i < lines; ++i) {
    l.submitted = i + 1;
    out->write(line(i), [&l, i](std::error_code ec) {
      if (!ec) l.accepted[i] = 1;  // sluice-logd answers rsp 200 here
    });
    lp.run();
  }
  out->end();
  lp.run();
  out.reset();
  worker.close();
}

void logd_check(const std::string& root, const ledger& l, violations& v) {
  try {
    log_worker restart(root + "/FILE", logd_opts());
    restart.close();
  } catch (const std::exception& e) {
    v.push_back(std::string("FILE cannot be opened again: ") + e.what());
    return;
  }
  check_lines(log_lines(root, "FILE", logd_keep, v), l, v);
}

// ---- the same with log_options::sync_behind, as sluice-logd --fsync ack
// runs it: the write callbacks say written, and a line is acknowledged
// (accepted) once synced() reaches its round's position. Lines go in
// groups of three a turn, so that a round holds several and syncs overlap
// the writes.

void logd_behind_workload(const std::string& root, ledger& l) {
  loop& lp = loop::current();
  log_options o = logd_opts();
  o.sync_behind = true;
  log_worker worker(root + "/FILE", o);
  auto out = make_worker_writable(worker);
  worker_sink& sink = out->get_sink();
  const int lines = 110 * scale();
  std::vector<std::uint64_t> position(static_cast<std::size_t>(lines));
  int written = 0, acked = 0;
  bool held = false;
  const auto answer = [&](std::uint64_t synced) {
    while (acked < written && position[acked] <= synced) l.accepted[acked++] = 1;
  };
  auto watch = worker.watch_syncs(lp, [&](std::uint64_t synced, std::error_code ec) {
    if (!ec) answer(synced);
    if (held && (acked == written || ec)) {
      held = false;
      lp.release();
    }
  });
  for (int i = 0; i < lines;) {
    for (int k = 0; k < 3 && i < lines; ++k, ++i) {
      l.submitted = i + 1;
      out->write(line(i), [&, i](std::error_code ec) {
        if (ec) return;
        position[i] = sink.position();
        written = i + 1;
        answer(worker.synced());  // the sync may have been told before this callback came
      });
    }
    lp.run();
    if (acked < written) {
      held = true;
      lp.hold();
      lp.run();
    }
  }
  out->end();
  lp.run();
  watch.reset();
  out.reset();
  worker.close();
}

// ---- the driver

struct durable_path {
  const char* name;
  void (*workload)(const std::string& root, ledger& l);
  void (*check)(const std::string& root, const ledger& l, violations& v);
};

struct tally {
  long tried = 0, violated = 0, duplicated = 0, ran_out = 0;
};

// Runs the workload in a child, crashing at `k` (-1: never). The child's
// exit status.
int run_workload(const durable_path& p, const std::string& root, ledger& l, long k, crash_when w, crash_kind c) {
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  std::filesystem::create_directory(root);
  std::memset(static_cast<void*>(&l), 0, sizeof l);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    {
      crash_model model(root, k, w, c, l.report);
      p.workload(root, l);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// Restarts on `root` in a child and checks the invariants; what it found.
violations recover_and_check(const durable_path& p, const std::string& root, const ledger& l) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    violations v;
    p.check(root, l, v);
    std::string text;
    for (const std::string& s : v) text += s + "\n";
    std::size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = ::write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  violations v;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t nl = text.find('\n', pos);
    v.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    v.push_back("the recovery child died (status " + std::to_string(status) + ")");
  return v;
}

void run_path(const durable_path& p, const std::string& root, ledger& l, tally& t) {
  const int status = run_workload(p, root, l, -1, crash_when::before, crash_kind::process);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), p.name << ": the workload failed uncrashed");
  const long steps = l.report.steps;
  {
    const violations v = recover_and_check(p, root, l);
    for (const std::string& s : v) std::printf("crash points: %s: with no crash: %s\n", p.name, s.c_str());
    CHECK(v.empty());
  }
  long tried = 0, violated = 0, printed = 0;
  for (long k = 0; k < steps; ++k) {
    for (const crash_when w : {crash_when::before, crash_when::after}) {
      for (const crash_kind c : {crash_kind::process, crash_kind::power}) {
        const int st = run_workload(p, root, l, k, w, c);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
          ++t.ran_out;  // this run had fewer steps (the threads' order differs)
          continue;
        }
        ++tried;
        violations v;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != crashed_status || !l.report.crashed)
          v.push_back("the workload died by itself (status " + std::to_string(st) + ")");
        else
          v = recover_and_check(p, root, l);
        if (v.empty()) continue;
        const bool only_duplicates =
            std::all_of(v.begin(), v.end(), [](const std::string& s) { return s.starts_with("duplicate: "); });
        if (only_duplicates) {
          ++t.duplicated;
          if (printed++ < 12)
            std::printf("crash points: %s: step %ld of %ld, %s crash %s: %s (and %zu more lines twice)\n", p.name, k,
                        steps, c == crash_kind::power ? "power" : "process", l.report.what, v.front().c_str(),
                        v.size() - 1);
          continue;
        }
        ++violated;
        if (printed++ < 12)
          for (const std::string& s : v)
            std::printf("crash points: %s: step %ld of %ld, %s crash %s: %s\n", p.name, k, steps,
                        c == crash_kind::power ? "power" : "process", l.report.what, s.c_str());
      }
    }
  }
  std::printf("crash points: %s: %ld steps, %ld tried, %ld violated\n", p.name, steps, tried, violated);
  std::fflush(stdout);
  t.tried += tried;
  t.violated += violated;
}

TEST_CASE("every crash point of the log, the spool and sluice-logd --fsync ack keeps their invariants") {
  temp_dir tmp;
  const std::string root = std::filesystem::canonical(tmp.path).string() + "/d";
  void* mem = ::mmap(nullptr, sizeof(ledger), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  ledger& l = *static_cast<ledger*>(mem);
  const durable_path paths[] = {
      {"log", log_workload, log_check},
      {"spool", spool_workload, spool_check},
      {"logd --fsync ack", logd_workload, logd_check},
      {"logd --fsync ack, synced behind", logd_behind_workload, logd_check},
  };
  // SLUICE_CRASH_PATH=NAME: only the paths whose name begins so (a local run).
  const char* only = std::getenv("SLUICE_CRASH_PATH");
  tally t;
  for (const durable_path& p : paths)
    if (!only || std::string_view(p.name) == only || std::string_view(p.name).starts_with(std::string(only) + " "))
      run_path(p, root, l, t);
  std::printf("crash points: %ld tried, %ld violated\n", t.tried, t.violated);
  if (t.duplicated) std::printf("crash points: %ld crashes left lines twice (none lost)\n", t.duplicated);
  if (t.ran_out) std::printf("crash points: %ld runs ended before their crash point\n", t.ran_out);
  std::fflush(stdout);
  ::munmap(mem, sizeof(ledger));
  CHECK(t.tried > 0);
  CHECK(t.violated == 0);
}

}  // namespace
}  // namespace sluice::test
