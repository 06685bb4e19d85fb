// Fault injection (issue 10): the file syscalls of the sinks and sources fail
// at random points (tests/support/fault_injection.h), schedule after
// schedule, each from a seed. Whatever happens: every callback exactly once,
// the bytes whose callbacks heard success are exactly the file's, no torn
// line, no crash (and nothing for ASan/UBSan to report).
//
// CI runs SLUICE_FAULT_SCHEDULES (default 300) schedules from
// SLUICE_FAULT_SEED (default 1); a failure prints the seed of its schedule,
// which SLUICE_FAULT_SEED=<seed> SLUICE_FAULT_SCHEDULES=1 replays alone.
#include "support/printers.h"

#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/log_file/log_worker.h"
#include "sluice/log_file/log_writable.h"
#include "sluice/fs/read_stream.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/fault_injection.h"
#include "support/temp_dir.h"
#include "support/write_ledger.h"
#include "support/writable_events.h"

using namespace sluice;
using sluice::test::fault;
using sluice::test::fault_injector;
using sluice::test::on;
using sluice::test::slurp;
using sluice::test::sys_call;
using sluice::test::temp_dir;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

enum class target { file, append_file, log, log_rotating, worker, log_worker, count_ };
const char* name_of(target t) {
  static const char* const names[] = {"file", "append_file", "log", "log_rotating", "worker", "log_worker"};
  return names[static_cast<int>(t)];
}

// What one schedule did, for its report.
struct schedule_result {
  std::size_t writes = 0, landed = 0, faults = 0;
  bool failed = false;
};

using ledger = sluice::test::write_ledger;

// The log's files, oldest first: app.log.<N> ... app.log.1, app.log.
std::string log_contents(const std::string& path) {
  std::string all;
  for (int i = 1000; i >= 1; --i) all += slurp(path + "." + std::to_string(i));
  return all + slurp(path);
}

// Every callback once; successes first (after an error the stream is
// destroyed, so nothing later lands); the file holds exactly the successes,
// followed only by whole lines of the failed call when a sync failed after
// the bytes were written (their callbacks rightly hear the error: the bytes
// may not stay), or by a torn line only when the cut itself (ftruncate) failed.
void check(const ledger& g, const std::string& content, bool sync_failed, bool cut_failed, schedule_result& res) {
  std::string landed;
  bool failed = false;
  std::size_t first_failed = g.lines.size();
  for (std::size_t i = 0; i < g.lines.size(); ++i) {
    INFO("write " << i << " of " << g.lines.size());
    REQUIRE(g.calls[i] == 1);
    if (g.errors[i]) {
      if (!failed) first_failed = i;
      failed = true;
    } else {
      REQUIRE_FALSE(failed);
      landed += g.lines[i];
      ++res.landed;
    }
  }
  res.writes = g.lines.size();
  res.failed = failed;
  REQUIRE(content.size() >= landed.size());
  REQUIRE(content.compare(0, landed.size(), landed) == 0);
  std::string rest = content.substr(landed.size());
  if (rest.empty()) return;
  INFO("the file holds " << rest.size() << " bytes past the lines that landed");
  REQUIRE((sync_failed || cut_failed));
  std::string failed_lines;
  for (std::size_t i = first_failed; i < g.lines.size() && failed_lines.size() < rest.size(); ++i)
    failed_lines += g.lines[i];
  REQUIRE(failed_lines.compare(0, rest.size(), rest) == 0);
  if (!cut_failed) REQUIRE(rest.back() == '\n');
}

void run_write_schedule(std::uint64_t seed, schedule_result& res) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const auto t = static_cast<target>(pick(static_cast<std::size_t>(target::count_)));
  CAPTURE(name_of(t));
  temp_dir dir;
  const std::string path = dir.file("out.log");
  ledger g;
  bool sync_failed = false, cut_failed = false;
  {
    loop l;
    std::unique_ptr<file_worker> worker;
    std::unique_ptr<writable> w;
    log_options lo;
    lo.keep = 1000;
    if (chance(0.5)) {
      lo.fsync = log_options::fsync_policy::every_bytes;
      lo.fsync_bytes = 1 + pick(2000);
    }
    if (t == target::log_rotating || (t == target::log_worker && chance(0.5))) lo.max_size = 200 + pick(3000);
    switch (t) {
      case target::file: w = make_file_writable(path, {.fsync_at_end = chance(0.5)}, on(l)); break;
      case target::append_file:
        w = make_file_writable(path, {.mode = file_options::open_mode::append, .fsync_at_end = chance(0.5)}, on(l));
        break;
      case target::log:
      case target::log_rotating: w = make_log_writable(path, lo, on(l)); break;
      case target::worker:
        worker = std::make_unique<file_worker>(path, file_options{.fsync_at_end = chance(0.5)});
        w = make_worker_writable(*worker, on(l));
        break;
      case target::log_worker:
        worker = std::make_unique<log_worker>(path, lo);
        w = make_worker_writable(*worker, on(l));
        break;
      default: break;
    }
    w->on(event::error, [](std::error_code) {});  // the callbacks tell

    // The faults of this schedule: soft ones often, hard ones rarely.
    fault_injector inj(seed);
    const double soft = chance(0.2) ? 0 : 0.1 + 0.6 * std::uniform_real_distribution<double>(0, 1)(rng);
    const double hard = chance(0.3) ? 0 : 0.005 + 0.05 * std::uniform_real_distribution<double>(0, 1)(rng);
    std::vector<fault> wf{fault::eintr, fault::eagain, fault::short_io, fault::short_io};
    if (hard > 0) {
      // One hard fault among soft ones in the proportion hard:soft.
      const std::size_t n = soft > 0 ? std::max<std::size_t>(1, static_cast<std::size_t>(4 * hard / soft)) : 1;
      if (soft == 0) wf.clear();
      for (std::size_t i = 0; i < n; ++i) wf.push_back(i % 3 == 0 ? fault::enospc : i % 3 == 1 ? fault::eio : fault::epipe);
    }
    inj.set_rate(sys_call::writev, soft + hard, wf);
    if (chance(0.2)) inj.set_rate(sys_call::fsync, 0.2, {fault::eio, fault::eintr});
    if (chance(0.2)) inj.set_rate(sys_call::close, 0.3, {fault::eio});
    if (chance(0.2)) inj.set_rate(sys_call::rename, 0.1, {fault::eio, fault::enospc});
    if (chance(0.1)) inj.set_rate(sys_call::open, 0.1, {fault::emfile, fault::enospc});
    if (chance(0.1)) inj.set_rate(sys_call::ftruncate, 0.5, {fault::eio});

    const std::size_t turns = 1 + pick(30);
    std::size_t n = 0;
    for (std::size_t turn = 0; turn < turns; ++turn) {
      const std::size_t lines = 1 + pick(40);
      for (std::size_t i = 0; i < lines; ++i, ++n) {
        std::string s = std::to_string(seed) + ":" + std::to_string(n) + " ";
        s.append(pick(chance(0.05) ? 5000 : 120), static_cast<char>('a' + n % 26));
        s += '\n';
        w->write(s, g.cb(s));
      }
      l.run();
    }
    bool ended = false;
    w->end([&](std::error_code) { ended = true; });
    l.run();
    CHECK(ended);
    w.reset();
    if (worker) worker->close();
    sync_failed = inj.injected(sys_call::fsync, fault::eio) > 0;
    cut_failed = inj.injected(sys_call::ftruncate, fault::eio) > 0;
    res.faults = 0;
    for (int f = 1; f < static_cast<int>(fault::count_); ++f) res.faults += inj.injected(static_cast<fault>(f));
  }
  const std::string content = t == target::log_rotating || t == target::log_worker ? log_contents(path) : slurp(path);
  check(g, content, sync_failed, cut_failed, res);
}

// A file read through an fd_source with faulty reads: the bytes seen are the
// file's, in order, up to the error if one came; 'end' or 'error', once.
void run_read_schedule(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  temp_dir dir;
  const std::string path = dir.file("in");
  std::string in(pick(300000), '\0');
  for (char& c : in) c = static_cast<char>(rng());
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(in.data(), 1, in.size(), f) == in.size());
    std::fclose(f);
  }
  loop l;
  readable_options o;
  o.event_loop = &l;
  o.high_water_mark = 1 + pick(70000);
  auto r = make_file_readable(path, o);
  fault_injector inj(seed);
  const bool hard = pick(3) == 0;
  std::vector<fault> rf{fault::eintr, fault::eagain, fault::short_io};
  if (hard) rf.push_back(fault::eio);
  inj.set_rate(sys_call::read, 0.3, rf);
  if (pick(4) == 0) inj.set_rate(sys_call::close, 0.5, {fault::eio});
  std::string got;
  int ends = 0, errors = 0, closes = 0;
  r->on(event::data, [&](std::string_view c) { got.append(c); });
  r->on(event::end, [&] { ++ends; });
  r->on(event::error, [&](std::error_code) { ++errors; });
  r->on(event::close, [&] { ++closes; });
  l.run();
  CHECK(closes == 1);
  // After 'end', a close() that fails is an 'error' still, as in Node
  // (fs.ReadStream's _destroy passes close's error on).
  const bool close_failed = inj.injected(sys_call::close, fault::eio) > 0;
  CAPTURE(ends);
  CAPTURE(errors);
  CAPTURE(close_failed);
  CHECK(ends <= 1);
  CHECK(errors <= 1);
  CHECK((ends + errors == 1 || (close_failed && ends == 1 && errors == 1)));
  REQUIRE(got.size() <= in.size());
  CHECK(in.compare(0, got.size(), got) == 0);
  if (ends == 1) CHECK(got.size() == in.size());
  if (inj.injected(fault::eio) == 0) CHECK(ends == 1);
}

}  // namespace

TEST_CASE("random faults in writes: every callback once, the file holds exactly what landed, no torn line") {
  const std::uint64_t first = env_or("SLUICE_FAULT_SEED", 1);
  const std::uint64_t count = env_or("SLUICE_FAULT_SCHEDULES", 300);
  std::size_t writes = 0, landed = 0, faults = 0, failed = 0;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    CAPTURE(seed);
    schedule_result res;
    run_write_schedule(seed, res);
    writes += res.writes;
    landed += res.landed;
    faults += res.faults;
    failed += res.failed ? 1 : 0;
  }
  MESSAGE(count << " write schedules from seed " << first << ": " << writes << " writes, " << landed
                << " landed, " << faults << " faults injected, " << failed << " streams failed");
}

TEST_CASE("random faults in reads: the bytes read are the file's, in order; 'end' or 'error' once") {
  const std::uint64_t first = env_or("SLUICE_FAULT_SEED", 1);
  const std::uint64_t count = env_or("SLUICE_FAULT_SCHEDULES", 300) / 3 + 1;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    CAPTURE(seed);
    run_read_schedule(seed);
  }
}

// ---- chosen points

TEST_CASE("a short write, then ENOSPC: the lines before land, the torn one is cut off, each callback tells") {
  temp_dir dir;
  const std::string path = dir.file("out.log");
  loop l;
  ledger g;
  auto w = make_file_writable(path, {}, on(l));
  w->on(event::error, [](std::error_code) {});
  fault_injector inj;
  inj.set_rate(sys_call::writev, 0, {});
  inj.fail_at(sys_call::writev, 0, fault::short_io);
  inj.fail_at(sys_call::writev, 1, fault::enospc);
  for (int i = 0; i < 20; ++i) {
    std::string s = "line " + std::to_string(i) + " of the batch\n";
    w->write(s, g.cb(s));
  }
  l.run();
  schedule_result res;
  check(g, slurp(path), false, false, res);
  CHECK(res.failed);
  CHECK(inj.injected(fault::enospc) == 1);
}

TEST_CASE("a rename that fails inside the rotation chain fails that batch's unwritten lines; no line is lost or doubled") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  ledger g;
  auto w = make_log_writable(path, {.max_size = 100, .keep = 5}, on(l));
  w->on(event::error, [](std::error_code) {});
  fault_injector inj;
  for (int turn = 0; turn < 6; ++turn) {
    // The fourth rotation's first rename (app.log.2 -> app.log.3) fails.
    if (turn == 4) inj.fail_at(sys_call::rename, 0, fault::eio);
    for (int i = 0; i < 3; ++i) {
      std::string s = "turn " + std::to_string(turn) + " line " + std::to_string(i) + " ..........\n";
      w->write(s, g.cb(s));
    }
    l.run();
  }
  CHECK(inj.injected(sys_call::rename, fault::eio) == 1);
  schedule_result res;
  check(g, log_contents(path), false, false, res);
  CHECK(res.failed);
}

TEST_CASE("EIO from close() at end reaches end()'s callback; the writes before it landed") {
  temp_dir dir;
  const std::string path = dir.file("out.log");
  loop l;
  ledger g;
  std::error_code end_error;
  int ends = 0;
  {
    auto w = make_file_writable(path, {}, on(l));
    w->on(event::error, [](std::error_code) {});
    fault_injector inj;
    inj.fail_at(sys_call::close, 0, fault::eio);
    w->write("one\n", g.cb("one\n"));
    w->end([&](std::error_code ec) {
      ++ends;
      end_error = ec;
    });
    l.run();
  }
  CHECK(ends == 1);
  CHECK(code_name(end_error) == "EIO");
  REQUIRE(g.calls[0] == 1);
  CHECK_FALSE(g.errors[0]);
  CHECK(slurp(path) == "one\n");
}
