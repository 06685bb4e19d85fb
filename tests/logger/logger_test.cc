// logger: print() on the caller's thread, formatting on the backend's. The
// output must be what fmt::format gives, each thread's lines in order; the
// full-ring policies, flush(), and what reaches the file at a crash or a
// SIGTERM (child processes that die of them).
#include "support/printers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "sluice/log_file/log_writable.h"
#include "sluice/fs/write_stream.h"
#include "sluice/logger/logger.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::slurp;
using sluice::test::temp_dir;
using namespace std::chrono_literals;

namespace {

// A trivially copyable type of the user's, with its own formatter.
struct point {
  int x, y;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A pipe whose reader the test controls: the logger's stream pushes back
// while nobody reads (the pipe holds 4 KiB).
struct slow_pipe {
  int fds[2];
  std::string got;
  std::thread reader;
  slow_pipe() {
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    ::fcntl(fds[1], F_SETPIPE_SZ, 4096);
  }
  // Reads everything until the logger's stream closes its end.
  void start_reading() {
    reader = std::thread([this] {
      char buf[65536];
      for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
    });
  }
  void join() {
    if (reader.joinable()) reader.join();
    ::close(fds[0]);
  }
  std::function<std::unique_ptr<writable>()> factory() {
    const int fd = fds[1];
    return [fd] { return make_fd_writable(fd, true); };
  }
};

}  // namespace

template <>
struct fmt::formatter<point> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  auto format(const point& p, fmt::format_context& ctx) const { return fmt::format_to(ctx.out(), "({}, {})", p.x, p.y); }
};

TEST_CASE("logger: every line is what fmt::format gives, for every type and spec") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  std::string expected;
  {
    logger lg([&] { return make_log_writable(path); });
#define BOTH(...)                                  \
  do {                                             \
    CHECK(lg.print(__VA_ARGS__));                  \
    expected += fmt::format(__VA_ARGS__);          \
  } while (0)
    const std::int8_t i8 = -8;
    const std::uint16_t u16 = 65535;
    const long long ll = -9223372036854775807LL - 1;
    const unsigned long long ull = 18446744073709551615ULL;
    BOTH("ints {} {} {} {} {} {}\n", 0, -1, i8, u16, ll, ull);
    BOTH("hex {:#x} {:08X} {:o} {:b} {:+d} {:<6}| {:^7}|\n", 255, 48879, 8, 5, 42, 3, -4);
    BOTH("doubles {} {} {} {} {}\n", 0.1, -2.5e-300, 1e300, 3.0, 1.0 / 3);
    BOTH("specs {:.3f} {:10.2e} {:g} {:08.2f} {:+.1f} {:a}\n", 3.14159, 12345.678, 1e-5, -2.5, 9.99, 1.0);
    BOTH("float {} long double {}\n", 1.5f, 2.25L);
    BOTH("special {} {} {}\n", std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
         std::numeric_limits<double>::quiet_NaN());
    BOTH("bools {} {} {:d}\n", true, false, true);
    BOTH("chars {} {:>3} {:d}\n", 'a', 'b', 'c');
    int target = 0;
    const void* vp = &target;
    void* np = nullptr;
    BOTH("pointers {} {} {:>20}\n", vp, np, vp);
    BOTH("strings {} [{:>8}] [{:<8}] [{:^9}] [{:.3}]\n", std::string("str"), std::string_view("view"),
         "literal", static_cast<const char*>("c-str"), std::string("truncated"));
    char array[] = "array";
    char* mutable_c = array;
    BOTH("arrays {} {}\n", array, mutable_c);
    BOTH("empty [{}] [{}]\n", std::string(), std::string_view());
    BOTH("escapes {{}} {}%\n", 100);
    BOTH("positional {1} {0} {1}\n", "a", "b");
    BOTH("custom {}\n", point{3, -4});
    BOTH("no arguments\n");
    BOTH("{}", "no newline, then a long one\n");
    const std::string long_string(10000, 'x');
    BOTH("long {}\n", long_string);
    BOTH("dynamic [{:{}}] [{:.{}f}]\n", 7, 5, 2.0 / 3, 4);
    for (int i = 0; i < 1000; ++i) BOTH("iteration {} message {} double {}\n", std::uint64_t(i), std::uint64_t(i * 7), i * 0.25);
#undef BOTH
  }
  CHECK(slurp(path) == expected);
}

TEST_CASE("logger: strings are copied by content at the call") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  {
    logger lg([&] { return make_file_writable(path); }, {.poll_interval = 200ms});
    std::string s = "before";
    char buf[16] = "c before";
    lg.print("{} {} {}\n", s, std::string_view(s), static_cast<const char*>(buf));
    s = "AFTER!";
    std::memcpy(buf, "c AFTER!", 9);
  }
  CHECK(slurp(path) == "before before c before\n");
}

TEST_CASE("logger: several producer threads, each thread's lines in order") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  constexpr int threads = 4, per_thread = 20000;
  {
    logger lg([&] { return make_log_writable(path); }, {.ring_size = 16 * 1024});
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&lg, t] {
        for (int i = 0; i < per_thread; ++i) REQUIRE(lg.print("thread {} line {} {}\n", t, i, std::string(i % 40, 'z')));
      });
    for (auto& t : ts) t.join();
    CHECK(lg.dropped() == 0);
  }
  std::map<int, int> next;
  std::size_t n = 0;
  for (const std::string& l : lines_of(slurp(path))) {
    int t = -1, i = -1;
    REQUIRE(std::sscanf(l.c_str(), "thread %d line %d", &t, &i) == 2);
    CHECK(i == next[t]);
    CHECK(l == fmt::format("thread {} line {} {}", t, i, std::string(i % 40, 'z')));
    next[t] = i + 1;
    ++n;
  }
  CHECK(n == std::size_t{threads} * per_thread);
}

TEST_CASE("logger: threads that exit leave their lines, and their rings to new threads") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  logger lg([&] { return make_file_writable(path); }, {.poll_interval = 100ms});
  std::string expected;
  for (int round = 0; round < 3; ++round) {
    std::thread([&lg, round] {
      for (int i = 0; i < 100; ++i) lg.print("round {} line {}\n", round, i);
    }).join();
    for (int i = 0; i < 100; ++i) expected += fmt::format("round {} line {}\n", round, i);
  }
  CHECK(!lg.flush());
  CHECK(slurp(path) == expected);
}

TEST_CASE("logger: flush() returns once every line printed before it is in the file") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  // A long poll interval: without flush() the lines would wait for it.
  logger lg([&] { return make_log_writable(path); }, {.poll_interval = std::chrono::milliseconds(60000)});
  std::string expected;
  for (int i = 0; i < 500; ++i) {
    lg.print("main {}\n", i);
    expected += fmt::format("main {}\n", i);
  }
  std::thread([&] {
    for (int i = 0; i < 500; ++i) lg.print("other {}\n", i);
  }).join();
  for (int i = 0; i < 500; ++i) expected += fmt::format("other {}\n", i);
  CHECK(!lg.flush());
  const std::string got = slurp(path);
  CHECK(got.size() == expected.size());
  // Two threads: each one's lines in order, the two runs in either order.
  std::vector<std::string> l = lines_of(got);
  std::sort(l.begin(), l.end());
  std::vector<std::string> e = lines_of(expected);
  std::sort(e.begin(), e.end());
  CHECK(l == e);
  CHECK(!lg.flush());  // nothing printed since: at once
}

// Issue 34, item 12: a line whose runtime format fmt rejects lost the
// callback that tells the run has landed, and flush() waited for ever.
TEST_CASE("logger: a line with a bad runtime format is reported, and flush() returns") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  logger lg([&] { return make_log_writable(path); }, {.poll_interval = std::chrono::milliseconds(60000)});
  lg.print("before\n");
  lg.print(fmt::runtime("bad {} {}\n"), 1);  // two fields, one argument
  auto flushed = std::async(std::launch::async, [&] { return lg.flush(); });
  const bool in_time = flushed.wait_for(std::chrono::seconds(10 * sluice::test::time_scale())) ==
                       std::future_status::ready;
  CHECK(in_time);
  if (!in_time) {
    // Unsticks it, so that a failing test ends: a later line lands the run.
    lg.print("unstick\n");
    lg.flush();
  }
  CHECK(!flushed.get());
  lg.print("after\n");
  CHECK(!lg.flush());
  const std::vector<std::string> l = lines_of(slurp(path));
  REQUIRE(l.size() >= 3);
  CHECK(l[0] == "before");
  CHECK(l[1].starts_with("sluice::logger: format error: "));
  CHECK(l[1].ends_with(": bad {} {}"));
  CHECK(l.back() == "after");
}

TEST_CASE("logger: a slow stream fills the ring, and print() blocks until it drains") {
  slow_pipe pipe;
  std::atomic<int> printed{0};
  {
    logger lg(pipe.factory(), {.ring_size = 4096});
    auto producer = std::async(std::launch::async, [&] {
      for (int i = 0; i < 3000; ++i) {
        CHECK(lg.print("blocked line {} {}\n", i, 0.5 * i));
        printed.fetch_add(1);
      }
    });
    // The pipe (4 KiB), the stream (16 KiB) and the ring (4 KiB) hold a
    // few hundred lines: the producer waits.
    std::this_thread::sleep_for(200ms * sluice::test::time_scale());
    CHECK(printed.load() < 3000);
    CHECK(producer.wait_for(0s) == std::future_status::timeout);
    pipe.start_reading();
    producer.get();
    CHECK(lg.dropped() == 0);
  }
  pipe.join();
  std::string expected;
  for (int i = 0; i < 3000; ++i) expected += fmt::format("blocked line {} {}\n", i, 0.5 * i);
  CHECK(pipe.got == expected);
}

TEST_CASE("logger: drop counts what a full ring refused, and says so before the thread's next line") {
  slow_pipe pipe;
  std::vector<std::pair<std::string, bool>> printed;  // each line, and whether print() took it
  std::uint64_t dropped = 0;
  {
    logger lg(pipe.factory(), {.ring_size = 4096, .on_full = full_policy::drop});
    for (int i = 0; i < 3000; ++i) printed.emplace_back(fmt::format("drop line {}\n", i), lg.print("drop line {}\n", i));
    dropped = lg.dropped();
    CHECK(dropped > 0);
    pipe.start_reading();
    // Once the pipe is read, the ring has room again.
    bool taken = false;
    for (int i = 0; i < 10000 && !taken; ++i) {
      taken = lg.print("last line\n");
      printed.emplace_back("last line\n", taken);
      if (!taken) std::this_thread::sleep_for(1ms);
    }
    CHECK(taken);
    // Dropped with no line after them: the count comes at the end.
    CHECK(!lg.print("{}\n", std::string(8192, 'x')));
    printed.emplace_back("", false);
    CHECK(lg.dropped() == static_cast<std::uint64_t>(std::count_if(printed.begin(), printed.end(), [](auto& p) { return !p.second; })));
  }
  pipe.join();
  // The lines kept, in order; before each, the count of those dropped
  // since the previous one.
  std::string expected;
  int run = 0;
  for (const auto& [text, kept] : printed) {
    if (!kept) {
      ++run;
      continue;
    }
    if (run) expected += fmt::format("sluice::logger: {} lines dropped\n", run);
    run = 0;
    expected += text;
  }
  if (run) expected += fmt::format("sluice::logger: {} lines dropped\n", run);
  CHECK(pipe.got == expected);
}

TEST_CASE("logger: grow takes a bigger ring instead of blocking, up to the maximum") {
  slow_pipe pipe;
  std::string expected;
  {
    logger lg(pipe.factory(), {.ring_size = 4096, .on_full = full_policy::grow, .max_ring_size = 1 << 20});
    // Nobody reads: only growing lets these through.
    auto producer = std::async(std::launch::async, [&] {
      for (int i = 0; i < 5000; ++i) CHECK(lg.print("grown line {} {}\n", i, std::string(i % 17, 'g')));
    });
    CHECK(producer.wait_for(10s * sluice::test::time_scale()) == std::future_status::ready);
    pipe.start_reading();
    producer.get();
    CHECK(lg.dropped() == 0);
  }
  pipe.join();
  for (int i = 0; i < 5000; ++i) expected += fmt::format("grown line {} {}\n", i, std::string(i % 17, 'g'));
  CHECK(pipe.got == expected);
}

TEST_CASE("logger: a line larger than the ring is dropped and counted") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  {
    logger lg([&] { return make_file_writable(path); }, {.ring_size = 4096});
    CHECK(!lg.print("{}\n", std::string(5000, 'x')));
    CHECK(lg.dropped() == 1);
    CHECK(lg.print("small\n"));
  }
  CHECK(slurp(path) == "sluice::logger: 1 lines dropped\nsmall\n");
}

TEST_CASE("logger: timestamps taken at the call") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  const auto before = std::chrono::system_clock::now();
  {
    logger lg([&] { return make_file_writable(path); }, {.timestamp = log_timestamp::precise});
    lg.print("stamped {}\n", 1);
  }
  const std::string got = slurp(path);
  REQUIRE(got.size() == 28 + 10);
  CHECK(got.substr(28) == "stamped 1\n");
  CHECK(got[10] == 'T');
  CHECK(got.substr(26, 2) == "Z ");
  // The date and time, to the minute, of now (unless the minute just turned).
  const std::time_t t = std::chrono::system_clock::to_time_t(before);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char want[32];
  std::strftime(want, sizeof want, "%Y-%m-%dT%H:", &tm);
  CHECK(got.substr(0, 14) == want);
}

namespace {

std::uint64_t clock_ns(clockid_t id) {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}
std::uint64_t wall_ns() { return clock_ns(CLOCK_REALTIME); }
// How far the wall clock is from the counter's own time (CLOCK_MONOTONIC_RAW):
// a wall clock stepped or steered meanwhile (a VM's agent was seen stepping
// it 500 us every 100 ms) changes it by as much.
std::int64_t wall_minus_raw_ns() {
  return static_cast<std::int64_t>(wall_ns() - clock_ns(CLOCK_MONOTONIC_RAW));
}

// "2026-12-02T01:19:04.123456Z " (or to the millisecond) as ns since the
// epoch; sets `rest` to what follows it.
std::uint64_t parse_stamp(const std::string& line, std::string& rest) {
  std::tm tm{};
  const char* end = ::strptime(line.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  REQUIRE(end != nullptr);
  REQUIRE(*end == '.');
  const char* frac = ++end;
  while (*end >= '0' && *end <= '9') ++end;
  const std::string digits(frac, end);
  REQUIRE((digits.size() == 3 || digits.size() == 6));
  REQUIRE(std::string_view(end, 2) == "Z ");
  rest = end + 2;
  std::uint64_t ns = std::stoull(digits) * (digits.size() == 3 ? 1'000'000u : 1'000u);
  return static_cast<std::uint64_t>(::timegm(&tm)) * 1'000'000'000u + ns;
}

}  // namespace

TEST_CASE("logger: each thread's timestamps go forward, within a bound of the wall clock at the call") {
  // Several refits of the TSC's line (50 ms, then 100, 200...) happen while
  // the threads print.
  constexpr int threads = 3, lines = 300;
  for (log_timestamp ts : {log_timestamp::coarse, log_timestamp::precise, log_timestamp::realtime}) {
    CAPTURE(static_cast<int>(ts));
    temp_dir dir;
    const std::string path = dir.file("app.log");
    // The wall clock just before and just after each call.
    std::vector<std::vector<std::uint64_t>> before(threads, std::vector<std::uint64_t>(lines)), after = before;
    const std::int64_t wall_at_start = wall_minus_raw_ns();
    {
      logger lg([&] { return make_file_writable(path); }, {.timestamp = ts});
      std::vector<std::thread> ts_threads;
      for (int t = 0; t < threads; ++t)
        ts_threads.emplace_back([&, t] {
          for (int i = 0; i < lines; ++i) {
            before[t][i] = wall_ns();
            lg.print("{} {}\n", t, i);
            after[t][i] = wall_ns();
            if (i % 3 == 0) std::this_thread::sleep_for(2ms);
          }
        });
      for (auto& th : ts_threads) th.join();
    }
    // The coarse clock is the kernel's last tick (8 ms old was seen: a
    // tickless kernel), written to the millisecond; the precise ones to
    // the microsecond, and the TSC's line is within a few microseconds of
    // the wall clock (the bound leaves room for a loaded machine).
    // The TSC's line follows the wall clock, so a wall clock moved under the
    // run by more than NTP's slew (500 ppm: 100 us over the run) may put its
    // stamps that much further off: the bound grows by what it moved.
    const std::int64_t moved = wall_minus_raw_ns() - wall_at_start;
    const std::uint64_t steered = ts == log_timestamp::precise ? static_cast<std::uint64_t>(std::llabs(moved)) : 0;
    if (steered > 100'000) MESSAGE("the wall clock moved " << moved << " ns against CLOCK_MONOTONIC_RAW during the run");
    const std::uint64_t early =
        ts == log_timestamp::coarse ? 20'000'000 : ts == log_timestamp::precise ? 201'000 + steered : 1'000;
    const std::uint64_t late = ts == log_timestamp::precise ? 200'000 + steered : 0;
    std::vector<std::uint64_t> last(threads, 0);
    std::vector<int> next(threads, 0);
    std::int64_t worst = 0;
    const auto got = lines_of(slurp(path));
    REQUIRE(got.size() == threads * lines);
    for (const std::string& line : got) {
      std::string rest;
      const std::uint64_t stamp = parse_stamp(line, rest);
      int t = -1, i = -1;
      REQUIRE(std::sscanf(rest.c_str(), "%d %d", &t, &i) == 2);
      REQUIRE((t >= 0 && t < threads));
      REQUIRE(i == next[t]);
      ++next[t];
      CHECK(stamp >= last[t]);
      last[t] = stamp;
      CHECK(stamp + early >= before[t][i]);
      CHECK(stamp <= after[t][i] + late);
      if (stamp < before[t][i]) worst = std::max(worst, static_cast<std::int64_t>(before[t][i] - stamp));
      if (stamp > after[t][i]) worst = std::max(worst, static_cast<std::int64_t>(stamp - after[t][i]));
    }
    MESSAGE("timestamp mode " << static_cast<int>(ts) << ": furthest outside the call " << worst << " ns");
  }
}

namespace {

// Forks a child that prints `lines` lines (flushing the first `flushed`),
// then dies as `die` does; returns how it died and the file.
struct child_result {
  int status = 0;
  std::string file;
};
template <class Die>
child_result run_child(const logger_options& options, int lines, int flushed, Die die) {
  temp_dir dir;
  const std::string path = dir.file("crash.log");
  std::fflush(stdout);  // or the child's exit writes it again
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child starts as a program does: doctest's own handlers (for the
    // test that is running) are not the child's.
    for (int signo : {SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE, SIGTERM, SIGINT}) ::signal(signo, SIG_DFL);
    logger_options o = options;
    o.crash_path = path;
    auto* lg = new logger([&] { return make_log_writable(path); }, o);
    // The backend's first pass is over (and the next one a poll interval
    // away): the lines stay in the ring, and the handler is the only writer.
    // (A pass running at the crash may write lines the handler writes too:
    // see docs/shutdown.md.)
    lg->flush();
    for (int i = 0; i < lines; ++i) {
      lg->print("child line {} of {} {}\n", i, lines, std::string_view("payload"));
      if (i + 1 == flushed) lg->flush();
    }
    die();
    ::_exit(3);
  }
  child_result r;
  REQUIRE(::waitpid(pid, &r.status, 0) == pid);
  r.file = slurp(path);
  return r;
}

std::string child_lines(int lines) {
  std::string s;
  for (int i = 0; i < lines; ++i) s += fmt::format("child line {} of {} {}\n", i, lines, "payload");
  return s;
}

}  // namespace

TEST_CASE("logger: the crash handler writes what the rings hold, then the signal kills") {
  // A long poll interval: the lines are still in the ring at the crash.
  const logger_options o{.poll_interval = std::chrono::milliseconds(60000), .crash_handler = true};
  SUBCASE("SIGSEGV") {
    auto r = run_child(o, 200, 0, [] { ::raise(SIGSEGV); });
    CHECK(WIFSIGNALED(r.status));
    CHECK(WTERMSIG(r.status) == SIGSEGV);
    CHECK(r.file == child_lines(200));
  }
  SUBCASE("a real fault") {
    // A page with no access (not a null pointer, which UBSan would catch
    // before the CPU faults).
    auto r = run_child(o, 200, 0, [] {
      void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      REQUIRE(page != MAP_FAILED);
      *static_cast<volatile int*>(page) = 1;
    });
    CHECK(WIFSIGNALED(r.status));
    CHECK(WTERMSIG(r.status) == SIGSEGV);
    CHECK(r.file == child_lines(200));
  }
  SUBCASE("abort(), after a flush of the first half: nothing twice") {
    auto r = run_child(o, 300, 150, [] { std::abort(); });
    CHECK(WIFSIGNALED(r.status));
    CHECK(WTERMSIG(r.status) == SIGABRT);
    CHECK(r.file == child_lines(300));
  }
  SUBCASE("SIGBUS") {
    auto r = run_child(o, 10, 0, [] { ::raise(SIGBUS); });
    CHECK(WIFSIGNALED(r.status));
    CHECK(WTERMSIG(r.status) == SIGBUS);
    CHECK(r.file == child_lines(10));
  }
  SUBCASE("without the handler, the ring is lost") {
    logger_options off = o;
    off.crash_handler = false;
    auto r = run_child(off, 10, 0, [] { ::raise(SIGSEGV); });
    CHECK(WTERMSIG(r.status) == SIGSEGV);
    CHECK(r.file.empty());
  }
}

TEST_CASE("logger: SIGTERM and SIGINT write everything printed, then the signal's default action") {
  const logger_options o{.poll_interval = std::chrono::milliseconds(60000), .handle_term_signals = true};
  for (int signo : {SIGTERM, SIGINT}) {
    CAPTURE(signo);
    auto r = run_child(o, 500, 0, [signo] {
      ::kill(::getpid(), signo);
      for (;;) ::pause();
    });
    CHECK(WIFSIGNALED(r.status));
    CHECK(WTERMSIG(r.status) == signo);
    CHECK(r.file == child_lines(500));
  }
}

TEST_CASE("logger: the stream is made on the backend thread; a factory that throws throws from the constructor") {
  std::thread::id made_on;
  temp_dir dir;
  {
    logger lg([&] {
      made_on = std::this_thread::get_id();
      return make_file_writable(dir.file("a.log"));
    });
    CHECK(made_on != std::this_thread::get_id());
  }
  CHECK_THROWS_AS(logger([] { return make_file_writable("/nonexistent-dir/x/a.log"); }), std::system_error);
}
