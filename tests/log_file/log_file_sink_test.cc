// log_file_sink: append, rotation by size without splitting a line, keep N,
// reopen (directly, while a write is in flight, on SIGHUP), fsync policies,
// and failures, each write called back exactly once.
#include "support/printers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/log_file/log_writable.h"
#include "sluice/loop/loop.h"
#include "sluice/loop/signals.h"
#include "sluice/log_file/log_file_sink.h"
#include "sluice/stream/writable.h"
#include "support/loop_turn.h"
#include "support/must_call.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"
#include "support/writable_events.h"

using namespace sluice;
using sluice::test::turn;
using namespace std::string_view_literals;
using sluice::test::must_call;
using sluice::test::temp_dir;
using sluice::test::slurp;
using sluice::test::spit;
using sluice::test::events;
using sluice::test::on;
namespace fs = std::filesystem;
using fsync_policy = log_options::fsync_policy;

namespace {

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }



log_file_sink& sink_of(writable& w) { return dynamic_cast<log_file_sink&>(w.get_sink()); }

// Numbered lines of varied lengths: a torn, lost or reordered line shows.
std::string line(int i) { return "line " + std::to_string(i) + " " + std::string(static_cast<std::size_t>(i % 13), '.') + "\n"; }

// The log's files oldest first (app.log.N ... app.log.1, then app.log),
// as the rotated files a reader would concatenate.
std::vector<std::string> files_oldest_first(const std::string& path) {
  std::vector<std::string> out;
  int n = 1;
  while (exists(path + "." + std::to_string(n))) ++n;
  for (int i = n - 1; i >= 1; --i) out.push_back(path + "." + std::to_string(i));
  out.push_back(path);
  return out;
}

// Checks that the files hold lines first..first+count-1, each whole and in order.
void check_all_lines(const std::vector<std::string>& files, int first, int count) {
  std::string all;
  for (const auto& f : files) {
    const std::string s = slurp(f);
    if (!s.empty()) CHECK_MESSAGE(s.back() == '\n', f << " ends inside a line");
    all += s;
  }
  std::string expected;
  for (int i = first; i < first + count; ++i) expected += line(i);
  CHECK(all.size() == expected.size());
  CHECK(all == expected);
}

// Writes lines [from, to) with one callback each, in one turn.
void write_lines(writable& w, must_call& cb, int from, int to) {
  for (int i = from; i < to; ++i) w.write(line(i), cb.cb());
}

// A FIFO with a non-blocking reader, and a log sink writing into it with a
// non-blocking fd, so that a large write waits for POLLOUT.
struct fifo {
  temp_dir dir;
  std::string path = dir.file("fifo.log");
  int r = -1;
  fifo() {
    REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
    r = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(r >= 0);
  }
  ~fifo() { ::close(r); }
  std::size_t drain() {
    std::size_t total = 0;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(r, buf, sizeof buf)) > 0) total += static_cast<std::size_t>(n);
    return total;
  }
};

void set_nonblocking(int fd) { REQUIRE(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) == 0); }

}  // namespace

// ---- opening

TEST_CASE("a log file is opened for append, created with mode 0644, close-on-exec") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  must_call wrote(2);
  {
    auto w = make_log_writable(path, {}, on(l));
    const int fd = sink_of(*w).fd();
    CHECK((::fcntl(fd, F_GETFL) & O_APPEND) != 0);
    CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    w->write("one\n"sv, wrote.cb());
    w->end();
    l.run();
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0644 & ~mask));
  {
    auto w = make_log_writable(path, {}, on(l));
    CHECK(sink_of(*w).size() == 4);  // the size it found
    w->write("two\n"sv, wrote.cb());
    w->end();
    l.run();
  }
  CHECK(slurp(path) == "one\ntwo\n");
}

TEST_CASE("opening a log file that cannot be opened throws stream_error with the errno; the twins set ec") {
  temp_dir dir;
  const std::string path = dir.file("no/such/dir/app.log");
  loop l;
  try {
    make_log_writable(path, {}, on(l));
    FAIL("no throw");
  } catch (const stream_error& e) {
    CHECK(e.code() == std::errc::no_such_file_or_directory);
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  CHECK_THROWS_AS(log_file_sink{path}, stream_error);
  std::error_code ec;
  CHECK(make_log_writable(path, {}, on(l), ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
  CHECK(log_file_sink::open(path, {}, ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
  ec.clear();
  CHECK(make_log_writable(path, {}, ec) == nullptr);  // the twin without stream options
  CHECK(ec == std::errc::no_such_file_or_directory);
  auto ok = make_log_writable(dir.file("fine.log"), {}, on(l), ec);
  REQUIRE(ok != nullptr);
  CHECK_FALSE(bool(ec));
  // The handle knows its sink's type: no cast to reach it.
  CHECK(ok->get_sink().path() == dir.file("fine.log"));
  const writable& as_writable = *ok;
  CHECK(&ok->get_sink() == &as_writable.get_sink());
}

// ---- rotation

namespace {
// Each boundary, with one write per turn (write()) and with all writes in one
// turn (one writev, split at the chunk boundary).
void rotation_boundaries(bool one_batch) {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  auto write_all = [&](writable& w, must_call& cb, std::vector<std::string> chunks) {
    for (auto& c : chunks) {
      w.write(std::string_view(c), cb.cb());
      if (!one_batch) l.run_until_idle();
    }
    l.run_until_idle();
  };

  SUBCASE("a chunk that fills the file exactly to max_size does not rotate") {
    must_call cb(3);
    auto w = make_log_writable(path, {.max_size = 10}, on(l));
    write_all(*w, cb, {"aaaa\n", "bbbb\n"});
    CHECK(sink_of(*w).rotations() == 0);
    CHECK(slurp(path) == "aaaa\nbbbb\n");
    SUBCASE("and the next byte does") {
      write_all(*w, cb, {"c"});
      CHECK(sink_of(*w).rotations() == 1);
      CHECK(slurp(path + ".1") == "aaaa\nbbbb\n");
      CHECK(slurp(path) == "c");
    }
    SUBCASE("an empty chunk does not") {
      write_all(*w, cb, {""});
      CHECK(sink_of(*w).rotations() == 0);
      CHECK_FALSE(exists(path + ".1"));
    }
  }
  SUBCASE("a chunk one byte over max_size goes to a fresh file") {
    must_call cb(2);
    auto w = make_log_writable(path, {.max_size = 9}, on(l));
    write_all(*w, cb, {"aaaa\n", "bbbb\n"});
    CHECK(sink_of(*w).rotations() == 1);
    CHECK(slurp(path + ".1") == "aaaa\n");
    CHECK(slurp(path) == "bbbb\n");
  }
  SUBCASE("a chunk larger than max_size goes whole into a fresh file") {
    must_call cb(4);
    const std::string big(25, 'B');
    auto w = make_log_writable(path, {.max_size = 10}, on(l));
    write_all(*w, cb, {"x\n", big, "", "y\n"});  // an empty chunk pushes nothing past max_size
    CHECK(sink_of(*w).rotations() == 2);
    CHECK(slurp(path + ".2") == "x\n");
    CHECK(slurp(path + ".1") == big);
    CHECK(slurp(path) == "y\n");
  }
  SUBCASE("a chunk larger than max_size into an empty file does not rotate") {
    must_call cb(1);
    auto w = make_log_writable(path, {.max_size = 10}, on(l));
    write_all(*w, cb, {std::string(25, 'B')});
    CHECK(sink_of(*w).rotations() == 0);
    CHECK(slurp(path).size() == 25);
  }
  SUBCASE("a file that is already past max_size when opened rotates before the first write") {
    spit(path, "0123456789ABC");
    must_call cb(1);
    auto w = make_log_writable(path, {.max_size = 10}, on(l));
    write_all(*w, cb, {"new\n"});
    CHECK(sink_of(*w).rotations() == 1);
    CHECK(slurp(path + ".1") == "0123456789ABC");
    CHECK(slurp(path) == "new\n");
  }
}
}  // namespace

TEST_CASE("rotation boundaries, one write per turn") { rotation_boundaries(false); }
TEST_CASE("rotation boundaries, one batch") { rotation_boundaries(true); }

TEST_CASE("many small lines over several rotations: every line whole, in order, no file over max_size") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  constexpr std::uint64_t max = 2000;
  constexpr int n = 3000;  // more lines in one turn than IOV_MAX
  int per_turn = 1;
  SUBCASE("one line per turn") { per_turn = 1; }
  SUBCASE("7 lines per turn") { per_turn = 7; }
  SUBCASE("all in one turn") { per_turn = n; }
  CAPTURE(per_turn);
  must_call cb(n);
  auto w = make_log_writable(path, {.max_size = max, .keep = 1000}, on(l));
  for (int i = 0; i < n; i += per_turn) {
    write_lines(*w, cb, i, std::min(n, i + per_turn));
    l.run_until_idle();
  }
  must_call ended;
  w->end(ended.cb());
  l.run();
  CHECK(ended.error() == std::error_code{});
  const auto files = files_oldest_first(path);
  CHECK(files.size() == sink_of(*w).rotations() + 1);
  CHECK(files.size() > 15);
  check_all_lines(files, 0, n);
  // Each file is as full as it could be: the first line of the next would
  // not have fit.
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string s = slurp(files[f]);
    CHECK(s.size() <= max);
    if (f + 1 < files.size()) {
      const std::string next = slurp(files[f + 1]);
      CHECK(s.size() + next.find('\n') + 1 > max);
    }
  }
}

TEST_CASE("no line is split across files, with random line lengths and batches") {
  for (unsigned seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    temp_dir dir;
    const std::string path = dir.file("app.log");
    loop l;
    std::vector<std::string> lines;
    int calls = 0;
    auto w = make_log_writable(path, {.max_size = 4000 + rng() % 8000, .keep = 10000}, on(l));
    for (int i = 0; i < 1500; ++i) {
      std::string s = std::to_string(i) + ":" + std::string(rng() % 300, static_cast<char>('a' + i % 26)) + "\n";
      lines.push_back(s);
      if (rng() % 2)
        w->write(std::string_view(s), [&calls](std::error_code ec) { calls += ec ? 1000000 : 1; });
      else
        w->write(std::move(s), [&calls](std::error_code ec) { calls += ec ? 1000000 : 1; });
      if (rng() % 10 == 0) l.run_until_idle();
    }
    w->end();
    l.run();
    CHECK(calls == 1500);
    std::string all, expected;
    for (const auto& f : files_oldest_first(path)) {
      const std::string s = slurp(f);
      REQUIRE_FALSE(s.empty());
      CHECK(s.back() == '\n');
      all += s;
    }
    for (const auto& s : lines) expected += s;
    CHECK(all == expected);
  }
}

TEST_CASE("two writers rotating one log: every line once, in each one's order, no file over max_size") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  constexpr std::uint64_t max = 500;
  constexpr int n = 400;
  must_call cb_a(n), cb_b(n), ended_a, ended_b;
  // Two sinks, two open files on one path: as two processes would have.
  auto a = make_log_writable(path, {.max_size = max, .keep = 1000}, on(l));
  auto b = make_log_writable(path, {.max_size = max, .keep = 1000}, on(l));
  auto tagged = [](char who, int i) { return std::string(1, who) + " " + line(i); };
  for (int i = 0; i < n; i += 3) {
    for (int j = i; j < std::min(n, i + 3); ++j) a->write(tagged('a', j), cb_a.cb());
    l.run_until_idle();
    for (int j = i; j < std::min(n, i + 3); ++j) b->write(tagged('b', j), cb_b.cb());
    l.run_until_idle();
  }
  a->end(ended_a.cb());
  b->end(ended_b.cb());
  l.run();
  CHECK(ended_a.error() == std::error_code{});
  CHECK(ended_b.error() == std::error_code{});
  CHECK(sink_of(*a).rotations() + sink_of(*b).rotations() + 1 == files_oldest_first(path).size());
  int next_a = 0, next_b = 0;
  bool whole = true, in_order = true;
  for (const auto& f : files_oldest_first(path)) {
    const std::string s = slurp(f);
    CHECK_MESSAGE(s.size() <= max, f << ": " << s.size() << " bytes");
    whole = whole && (s.empty() || s.back() == '\n');
    std::istringstream in(s);
    for (std::string got; std::getline(in, got);) {
      int& next = got[0] == 'a' ? next_a : next_b;
      in_order = in_order && got + "\n" == tagged(got[0], next);
      ++next;
    }
  }
  CHECK(whole);
  CHECK(in_order);
  CHECK(next_a == n);
  CHECK(next_b == n);
}

TEST_CASE("what is not a regular file is written without rotation: a FIFO") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  must_call cb(100), ended;
  std::string expected;
  for (int i = 0; i < 100; ++i) expected += line(i);
  // 100 lines through a log of 200 bytes at most: no rotation, no file renamed.
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  auto w = make_log_writable(path, {.max_size = 200, .keep = 2}, on(l));
  write_lines(*w, cb, 0, 100);  // 100 short lines fit in the pipe
  w->end(ended.cb());
  l.run();
  CHECK(sink_of(*w).rotations() == 0);
  CHECK_FALSE(exists(path + ".1"));
  std::string got(expected.size() + 1, '\0');
  CHECK(::read(reader, got.data(), got.size()) == static_cast<ssize_t>(expected.size()));
  got.resize(expected.size());
  CHECK(got == expected);
  CHECK(fs::is_fifo(path));
  ::close(reader);
  CHECK(ended.error() == std::error_code{});
}

// ---- symbolic links (issue 19, item 11): never followed

TEST_CASE("a log path that is a symbolic link is refused at open, with ELOOP; its target is untouched") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  spit(dir.file("target"), "mine\n");
  SUBCASE("to a file") { REQUIRE(::symlink("target", path.c_str()) == 0); }
  SUBCASE("to a missing file") {
    fs::remove(dir.file("target"));
    REQUIRE(::symlink("target", path.c_str()) == 0);
  }
  SUBCASE("to /dev/null") { REQUIRE(::symlink("/dev/null", path.c_str()) == 0); }
  try {
    make_log_writable(path, {.max_size = 200}, on(l));
    FAIL("no throw");
  } catch (const stream_error& e) {
    CHECK(e.code() == std::errc::too_many_symbolic_link_levels);
  }
  std::error_code ec;
  CHECK(make_log_writable(path, {}, on(l), ec) == nullptr);
  CHECK(ec == std::errc::too_many_symbolic_link_levels);
  CHECK(fs::is_symlink(path));
  if (fs::exists(dir.file("target"))) CHECK(slurp(dir.file("target")) == "mine\n");
  else CHECK_FALSE(fs::exists(dir.file("target")));
}

// The attack: the log's directory is writable by someone else, who moves the
// log away and puts a symbolic link to a file of the writer's in its place.
TEST_CASE("a symbolic link swapped in for the log is never written through: rotation's check, reopen()") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  const std::string target = dir.file("precious");
  spit(target, "precious\n");
  loop l;
  events ev;
  must_call first(2), after;
  SUBCASE("with max_size: the next write's 'was the file moved?' check opens the path again") {
    auto w = make_log_writable(path, {.max_size = 1 << 20, .keep = 2}, on(l));
    ev.attach(*w);
    write_lines(*w, first, 0, 2);
    l.run_until_idle();
    REQUIRE(::rename(path.c_str(), dir.file("moved").c_str()) == 0);
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
    w->write(line(2), after.cb());
    l.run();
    CHECK(after.error() == std::errc::too_many_symbolic_link_levels);
    CHECK(ev.str() == "error ELOOP; close");
  }
  SUBCASE("reopen() (SIGHUP)") {
    auto w = make_log_writable(path, {}, on(l));
    ev.attach(*w);
    write_lines(*w, first, 0, 2);
    l.run_until_idle();
    REQUIRE(::rename(path.c_str(), dir.file("moved").c_str()) == 0);
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
    CHECK(sink_of(*w).reopen() == std::errc::too_many_symbolic_link_levels);
    l.run();
    CHECK(ev.str() == "error ELOOP; close");
    w->write(line(2), after.cb());
    l.run();
    CHECK(after.error() == errc::destroyed);
  }
  SUBCASE("rotation: the fresh file's name is a symbolic link by then") {
    // Every line rotates (max_size 8); a link put in the way of the fresh
    // file between two rotations is refused when it is opened.
    auto w = make_log_writable(path, {.max_size = 8, .keep = 2}, on(l));
    ev.attach(*w);
    write_lines(*w, first, 0, 2);
    l.run_until_idle();
    REQUIRE(::unlink(path.c_str()) == 0);
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
    w->write(line(2), after.cb());
    l.run();
    CHECK(after.error() == std::errc::too_many_symbolic_link_levels);
    CHECK(ev.str() == "error ELOOP; close");
  }
  CHECK(first.error() == std::error_code{});
  CHECK(slurp(target) == "precious\n");
  CHECK(fs::is_symlink(path));
}

TEST_CASE("keep N: app.log.1 is the newest, files beyond N are deleted") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  // Every line is 8 bytes and max_size is 8: each line after the first rotates.
  auto fixed = [](int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "line %02d\n", i);
    return std::string(buf);
  };
  SUBCASE("keep 3") {
    must_call cb(10);
    auto w = make_log_writable(path, {.max_size = 8, .keep = 3}, on(l));
    for (int i = 0; i < 10; ++i) w->write(fixed(i), cb.cb());
    w->end();
    l.run();
    CHECK(sink_of(*w).rotations() == 9);
    CHECK(slurp(path) == fixed(9));
    CHECK(slurp(path + ".1") == fixed(8));
    CHECK(slurp(path + ".2") == fixed(7));
    CHECK(slurp(path + ".3") == fixed(6));
    CHECK_FALSE(exists(path + ".4"));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 4);
  }
  SUBCASE("keep 0 keeps only the current file") {
    must_call cb(3);
    auto w = make_log_writable(path, {.max_size = 8, .keep = 0}, on(l));
    for (int i = 0; i < 3; ++i) w->write(fixed(i), cb.cb());
    w->end();
    l.run();
    CHECK(sink_of(*w).rotations() == 2);
    CHECK(slurp(path) == fixed(2));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  }
  SUBCASE("gaps in the numbering are skipped and never make more than N files") {
    spit(path + ".3", "old three\n");
    must_call cb(4);
    auto w = make_log_writable(path, {.max_size = 8, .keep = 3}, on(l));
    for (int i = 0; i < 4; ++i) w->write(fixed(i), cb.cb());
    w->end();
    l.run();
    CHECK(slurp(path) == fixed(3));
    CHECK(slurp(path + ".1") == fixed(2));
    CHECK(slurp(path + ".2") == fixed(1));
    CHECK(slurp(path + ".3") == fixed(0));  // replaced the old one
    CHECK_FALSE(exists(path + ".4"));
  }
}

TEST_CASE("a rotation that cannot rename fails the write with the errno, and every callback once") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  // A directory where app.log.1 must go: rename() fails with EISDIR, as root too.
  REQUIRE(::mkdir((path + ".1").c_str(), 0755) == 0);
  loop l;
  must_call first, batch(4), later;
  events ev;
  auto w = make_log_writable(path, {.max_size = 20, .keep = 1}, on(l));
  ev.attach(*w);
  w->write("0123456789\n"sv, first.cb());
  l.run_until_idle();
  CHECK(first.error() == std::error_code{});
  // One batch: the first line fits, the second needs a rotation.
  for (const char* s : {"aaaa\n", "bbbbbbbbbbbbbbb\n", "c\n", "d\n"}) w->write(std::string_view(s), batch.cb());
  l.run();
  // The line before the rotation landed, and its callback says so (issue 10, defect 4).
  CHECK(batch.error(0) == std::error_code{});
  for (int i = 1; i < 4; ++i) CHECK(batch.error(static_cast<std::size_t>(i)) == std::errc::is_a_directory);
  CHECK(code_name(batch.error(1)) == "EISDIR");
  CHECK(ev.str() == "error EISDIR; close");
  CHECK(w->errored() == std::errc::is_a_directory);
  CHECK(slurp(path) == "0123456789\naaaa\n");  // the part before the rotation landed
  CHECK(sink_of(*w).rotations() == 0);
  w->write("more"sv, later.cb());
  l.run();
  CHECK(later.error() == errc::destroyed);
}

TEST_CASE("a rotation whose directory was removed fails with ENOENT") {
  temp_dir dir;
  const std::string sub = dir.file("logs");
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  const std::string path = sub + "/app.log";
  loop l;
  must_call first, second;
  events ev;
  auto w = make_log_writable(path, {.max_size = 10}, on(l));
  ev.attach(*w);
  w->write("0123456789"sv, first.cb());
  l.run_until_idle();
  fs::remove_all(sub);
  w->write("x\n"sv, second.cb());
  l.run();
  CHECK(first.error() == std::error_code{});
  CHECK(second.error() == std::errc::no_such_file_or_directory);
  CHECK(ev.str() == "error ENOENT; close");
}

// ---- the handle

TEST_CASE("make_log_writable() gives a log_writable: its sink by type, the counters, and a plain writable too") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  must_call cb(3), ended;
  auto w = make_log_writable(path, {.max_size = 8, .keep = 2}, on(l));
  CHECK(&w->get_sink() == &w->writable::get_sink());  // the same object, typed
  CHECK(w->get_sink().path() == path);
  w->write("12345\n"sv, cb.cb());
  w->write("67890\n"sv, cb.cb());  // past max_size: a rotation
  w->write("abcde\n"sv, cb.cb());
  l.run_until_idle();
  CHECK(w->rotations() == 2);
  CHECK(w->rotations() == w->get_sink().rotations());
  CHECK(w->bytes_written() == 18);
  CHECK(w->fsyncs() == w->get_sink().fsyncs());
  std::unique_ptr<writable> plain = std::move(w);  // the old call sites' type still takes it
  plain->end(ended.cb());
  l.run();
  CHECK(ended.error() == std::error_code{});
  CHECK(slurp(path) == "abcde\n");
  CHECK(slurp(path + ".1") == "67890\n");
  CHECK(slurp(path + ".2") == "12345\n");
}

// ---- reopen

TEST_CASE("reopen() after the file was renamed away: old lines in the old file, later ones in the new") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  must_call cb(20), ended;
  auto w = make_log_writable(path, {}, on(l));  // a log_writable: reopen() without a cast
  write_lines(*w, cb, 0, 10);
  l.run_until_idle();
  REQUIRE(::rename(path.c_str(), (path + ".old").c_str()) == 0);
  SUBCASE("reopen between turns") {
    w->write(line(10), cb.cb());
    l.run_until_idle();  // still into the renamed file: nobody said otherwise
    CHECK(w->reopen() == std::error_code{});
    write_lines(*w, cb, 11, 20);
    w->end(ended.cb());
    l.run();
    CHECK(w->reopens() == 1);
    CHECK(w->get_sink().reopens() == 1);
    check_all_lines({path + ".old"}, 0, 11);
    check_all_lines({path}, 11, 9);
  }
  SUBCASE("reopen with lines written but not yet handed to the file") {
    write_lines(*w, cb, 10, 15);
    CHECK(w->reopen() == std::error_code{});  // nothing in flight: now
    write_lines(*w, cb, 15, 20);
    w->end(ended.cb());
    l.run();
    check_all_lines({path + ".old"}, 0, 10);
    check_all_lines({path}, 10, 10);
  }
  CHECK(ended.error() == std::error_code{});
}

TEST_CASE("reopen() that cannot open the path becomes the stream's error") {
  temp_dir dir;
  const std::string sub = dir.file("logs");
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  loop l;
  must_call cb, later;
  events ev;
  auto w = make_log_writable(sub + "/app.log", {}, on(l));
  ev.attach(*w);
  w->write("x\n"sv, cb.cb());
  l.run_until_idle();
  fs::remove_all(sub);
  CHECK(sink_of(*w).reopen() == std::errc::no_such_file_or_directory);
  l.run();
  CHECK(ev.str() == "error ENOENT; close");
  w->write("y\n"sv, later.cb());
  l.run();
  CHECK(later.error() == errc::destroyed);
}

TEST_CASE("a reopen asked for while a write is in flight happens after it completes, before the next") {
  fifo f;
  loop l;
  must_call big, small;
  auto w = make_log_writable(f.path, {}, on(l));
  auto& sink = sink_of(*w);
  set_nonblocking(sink.fd());
  const int old_fd = sink.fd();
  std::size_t reopens_at_callback = 99;
  w->write(std::string(300000, 'z'), big.cb([&](std::error_code) { reopens_at_callback = sink.reopens(); }));
  l.run_until_idle();
  REQUIRE((l.watched_events(sink.fd()) & POLLOUT) != 0);  // waiting for POLLOUT
  CHECK(sink.reopen() == std::error_code{});
  CHECK(sink.reopens() == 0);
  CHECK(sink.fd() == old_fd);
  std::size_t got = 0;
  for (int guard = 0; guard < 10000 && big.calls() == 0; ++guard) {
    got += f.drain();
    turn(l, 10);
  }
  CHECK(big.calls() == 1);
  CHECK(big.error() == std::error_code{});
  CHECK(reopens_at_callback == 1);
  got += f.drain();
  CHECK(got == 300000);
  w->write("after\n"sv, small.cb());
  w->end();
  l.run();
  CHECK(small.error() == std::error_code{});
  CHECK(f.drain() == 6);
}

TEST_CASE("destroy while a log write waits for the fd calls it back once with ERR_STREAM_DESTROYED") {
  fifo f;
  loop l;
  must_call big;
  auto w = make_log_writable(f.path, {}, on(l));
  const int fd = sink_of(*w).fd();
  set_nonblocking(fd);
  w->write(std::string(300000, 'z'), big.cb());
  l.run_until_idle();
  REQUIRE((l.watched_events(fd) & POLLOUT) != 0);
  w->destroy();
  l.run_until_idle();
  CHECK(big.calls() == 1);
  CHECK(big.error() == errc::destroyed);
  CHECK(l.watched_events(fd) == 0);
  CHECK_FALSE(l.alive());
}

TEST_CASE("SIGHUP reopens the log through the loop") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  must_call cb(10);
  auto w = make_log_writable(path, {}, on(l));
  auto hup = on_signal(l, SIGHUP, [&w] { w->reopen(); });  // as signals.h shows it
  write_lines(*w, cb, 0, 5);
  l.run_until_idle();
  REQUIRE(::rename(path.c_str(), (path + ".1").c_str()) == 0);  // as logrotate does
  ::raise(SIGHUP);
  CHECK(w->reopens() == 0);  // not in the handler: on the loop
  for (int guard = 0; guard < 100 && w->reopens() == 0; ++guard) turn(l, 100);
  CHECK(w->reopens() == 1);
  write_lines(*w, cb, 5, 10);
  w->end();
  hup.reset();  // or run() would wait for the next SIGHUP
  l.run();
  check_all_lines({path + ".1"}, 0, 5);
  check_all_lines({path}, 5, 5);
}

// ---- fsync

TEST_CASE("fsync policies sync as configured") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  loop l;
  must_call ended;
  const std::string hundred(99, 'x');
  auto write_turns = [&](writable& w, must_call& cb, int turns) {
    for (int i = 0; i < turns; ++i) {
      w.write(hundred + "\n", cb.cb());
      l.run_until_idle();
    }
  };
  SUBCASE("never") {
    must_call cb(10);
    auto w = make_log_writable(path, {.max_size = 250, .fsync = fsync_policy::never}, on(l));
    write_turns(*w, cb, 10);
    w->end(ended.cb());
    l.run();
    CHECK(sink_of(*w).rotations() == 4);
    CHECK(sink_of(*w).fsyncs() == 0);
  }
  SUBCASE("at end") {
    must_call cb(10);
    auto w = make_log_writable(path, {.fsync = fsync_policy::at_end}, on(l));
    write_turns(*w, cb, 10);
    CHECK(sink_of(*w).fsyncs() == 0);
    w->end(ended.cb());
    l.run();
    CHECK(sink_of(*w).fsyncs() == 1);
  }
  SUBCASE("at end of each file: before rotation, reopen and end") {
    must_call cb(10);
    auto w = make_log_writable(path, {.max_size = 250, .fsync = fsync_policy::at_end}, on(l));
    write_turns(*w, cb, 10);  // files of 2, 2, 2, 2, 2 lines
    CHECK(sink_of(*w).fsyncs() == 4);
    sink_of(*w).reopen();
    CHECK(sink_of(*w).fsyncs() == 5);
    w->end(ended.cb());
    l.run();
    CHECK(sink_of(*w).fsyncs() == 5);  // nothing written since the reopen
  }
  SUBCASE("every N bytes") {
    must_call cb(10);
    auto w = make_log_writable(path, {.fsync = fsync_policy::every_bytes, .fsync_bytes = 250}, on(l));
    write_turns(*w, cb, 2);
    CHECK(sink_of(*w).fsyncs() == 0);
    write_turns(*w, cb, 1);  // 300 unsynced
    CHECK(sink_of(*w).fsyncs() == 1);
    write_turns(*w, cb, 7);  // at 6 and 9
    CHECK(sink_of(*w).fsyncs() == 3);
    w->end(ended.cb());
    l.run();
    CHECK(sink_of(*w).fsyncs() == 4);  // the last 100 bytes, at end
  }
  SUBCASE("every N bytes counts a batch as one write") {
    must_call cb(10);
    auto w = make_log_writable(path, {.fsync = fsync_policy::every_bytes, .fsync_bytes = 250}, on(l));
    for (int i = 0; i < 10; ++i) w->write(hundred + "\n", cb.cb());
    l.run_until_idle();
    CHECK(sink_of(*w).fsyncs() == 1);
    w->end(ended.cb());
    l.run();
    CHECK(sink_of(*w).fsyncs() == 1);
  }
  SUBCASE("every T ms: an idle file is synced T ms after its write") {
    using clock = std::chrono::steady_clock;
    must_call cb(3);
    auto w = make_log_writable(path, {.fsync = fsync_policy::every_ms, .fsync_interval = std::chrono::milliseconds(40)},
                               on(l));
    auto& sink = sink_of(*w);
    const auto start = clock::now();
    write_turns(*w, cb, 2);
    CHECK(sink.fsyncs() == 0);
    l.run();  // returns once the timer has fired
    const auto waited = clock::now() - start;
    CHECK(sink.fsyncs() == 1);
    CHECK(waited >= std::chrono::milliseconds(40));
    CHECK(waited < std::chrono::seconds(5) * sluice::test::time_scale());
    write_turns(*w, cb, 1);
    w->end(ended.cb());  // the unsynced line is synced at end, the timer dropped
    l.run();
    CHECK(sink.fsyncs() == 2);
    CHECK_FALSE(l.alive());
  }
  CHECK(ended.error() == std::error_code{});
}

TEST_CASE("fsync errors become the stream's error") {
  // fsync() on /dev/null fails with EINVAL.
  loop l;
  events ev;
  SUBCASE("at end: end's callback") {
    must_call wrote, ended;
    auto w = make_log_writable("/dev/null", {.fsync = fsync_policy::at_end}, on(l));
    ev.attach(*w);
    w->write("x\n"sv, wrote.cb());
    w->end(ended.cb());
    l.run();
    CHECK(wrote.error() == std::error_code{});
    CHECK(ended.error() == std::errc::invalid_argument);
  }
  SUBCASE("every N bytes: the write's callback") {
    must_call wrote;
    auto w = make_log_writable("/dev/null", {.fsync = fsync_policy::every_bytes, .fsync_bytes = 1}, on(l));
    ev.attach(*w);
    w->write("x\n"sv, wrote.cb());
    l.run();
    CHECK(wrote.error() == std::errc::invalid_argument);
  }
  SUBCASE("every T ms: from the timer, with no write in flight") {
    must_call wrote;
    auto w = make_log_writable("/dev/null", {.fsync = fsync_policy::every_ms, .fsync_interval = std::chrono::milliseconds(1)},
                               on(l));
    ev.attach(*w);
    w->write("x\n"sv, wrote.cb());
    l.run();
    CHECK(wrote.error() == std::error_code{});
    CHECK(w->destroyed());
  }
  SUBCASE("every T ms, unbound: the next write hears it") {
    must_call wrote, next;
    auto s = std::make_unique<log_file_sink>("/dev/null",
                                             log_options{.fsync = fsync_policy::every_ms, .fsync_interval = std::chrono::milliseconds(1)});
    writable w(std::move(s), on(l));
    ev.attach(w);
    w.write("x\n"sv, wrote.cb());
    l.run();
    CHECK(wrote.error() == std::error_code{});
    CHECK(ev.str().empty());
    w.write("y\n"sv, next.cb());
    l.run();
    CHECK(next.error() == std::errc::invalid_argument);
  }
  CHECK(ev.str() == "error EINVAL; close");
}

// ---- failures

TEST_CASE("/dev/full as a log gives ENOSPC to every callback and to 'error'") {
  loop l;
  must_call done(3), ended, later;
  events ev;
  auto w = make_log_writable("/dev/full", {}, on(l));
  ev.attach(*w);
  for (const char* s : {"a\n", "b\n", "c\n"}) w->write(std::string_view(s), done.cb());
  w->end(ended.cb());
  l.run();
  for (std::size_t i = 0; i < 3; ++i) CHECK(done.error(i) == std::errc::no_space_on_device);
  CHECK(ended.error() == std::errc::no_space_on_device);
  CHECK(ev.str() == "error ENOSPC; close");
  w->write("d\n"sv, later.cb());
  l.run();
  CHECK(later.error() == errc::write_after_end);  // ended before it was destroyed
}
