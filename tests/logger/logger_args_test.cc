// logger arguments (issue 37): std containers, optionals and types that are
// not trivially copyable are formatted at the call, each line what
// fmt::format gives; named arguments are copied, not their references, and
// become keys of a JSON line.
#include "support/printers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sluice/log_file/log_writable.h"
#include "sluice/logger/logger.h"
#include "support/shell.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::sh;
using sluice::test::slurp;
using sluice::test::temp_dir;
using namespace std::chrono_literals;
using namespace std::string_literals;

namespace {

// A user type that is not trivially copyable, with a formatter that takes
// a string's specs.
struct tagged {
  std::string tag;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// What python's json module reads back from `path`: a line per object, each
// key as key=value (json.dumps's), NUL-ended, in the object's order.
std::string json_read_back(const std::string& path) {
  const std::string cmd =
      "python3 -c 'import json,sys\n"
      "for l in open(sys.argv[1], encoding=\"utf-8\"):\n"
      "  o = json.loads(l)\n"
      "  for k, v in o.items(): sys.stdout.write(k + \"=\" + json.dumps(v) + \"\\0\")\n"
      "  sys.stdout.write(\"\\n\")\n"
      "' " + path;
  return sh(cmd);
}

}  // namespace

static_assert(!std::is_trivially_copyable_v<tagged>);

template <>
struct fmt::formatter<tagged> : fmt::formatter<std::string_view> {
  auto format(const tagged& t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format("<" + t.tag + ">", ctx);
  }
};

TEST_CASE("arguments: containers, optionals and types that are not trivially copyable are what fmt::format gives") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  std::string expected;
  const std::vector<int> ints{1, -2, 3};
  const std::vector<std::string> strings{"a", "bb", "quote\""};
  const std::map<std::string, int> map{{"one", 1}, {"two", 2}};
  const std::optional<int> some = 42, none;
  const std::optional<std::string> some_string = "x";
  const std::optional<char> some_char = 'c';
  const std::array<int, 3> array{7, 8, 9};
  const int c_array[] = {4, 5};
  const std::span<const int> span(ints);
  const tagged user{"alice"};
  {
    logger lg([&] { return make_log_writable(path); }, {.pattern = "{message}"});
#define BOTH(f, ...)                              \
  do {                                            \
    CHECK(lg.print(f "\n", __VA_ARGS__));         \
    expected += fmt::format(f "\n", __VA_ARGS__); \
    SLUICE_LOG_INFO(lg, f, __VA_ARGS__);          \
    expected += fmt::format(f "\n", __VA_ARGS__); \
  } while (0)
    BOTH("ints {} {:n} {::+}", ints, ints, ints);
    BOTH("strings {} {::>5} {:n:<3}|", strings, strings, strings);
    BOTH("map {} and {}", map, std::map<int, std::vector<int>>{{1, {2, 3}}});
    BOTH("optional {} {} {:>5}", some, none, some);
    BOTH("optional string {} {:>4} char {}", some_string, some_string, some_char);
    BOTH("array {} c array {} span {}", array, c_array, span);
    BOTH("user {} [{:>9}] [{:<8}]", user, user, user);
    BOTH("mixed {} {:.2f} {} {}", 1, 2.5, strings, std::string("by content"));
    BOTH("{}", std::vector<std::optional<int>>{1, std::nullopt});
#undef BOTH
  }
  CHECK(slurp(path) == expected);
  CHECK(lines_of(expected).size() == 18);
  CHECK(expected.find("optional(42) none optional(   42)") != std::string::npos);
  CHECK(expected.find("optional string optional(\"x\")") != std::string::npos);
}

// Before issue 37, a named argument's bytes were copied: its reference to
// the caller's value, which the backend read after the call had returned.
TEST_CASE("arguments: a named argument's value is the one at the call, strings by content") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  {
    // Long enough that the backend formats these lines after the changes.
    logger lg([&] { return make_log_writable(path); }, {.pattern = "{message}", .poll_interval = 200ms});
    std::string name = "alice";
    char buffer[16] = "buffer before";
    int count = 1;
    std::vector<std::string> tags{"a"};
    lg.print("print {user} {buffer} {count}\n", fmt::arg("user", name), fmt::arg("buffer", buffer),
             fmt::arg("count", count));
    SLUICE_LOG_INFO(lg, "macro {user} {buffer} {count}", fmt::arg("user", name), fmt::arg("buffer", buffer),
                    fmt::arg("count", count));
    SLUICE_LOG_INFO(lg, "spec [{user:>7}] [{count:<3}]", fmt::arg("user", name), fmt::arg("count", count));
    SLUICE_LOG_INFO(lg, "at the call {user} {tags}", fmt::arg("user", name), fmt::arg("tags", tags));
    name.assign("MALLORY, long enough to be on the heap, not in the small string");
    std::memcpy(buffer, "buffer AFTER!", 14);
    count = 2;
    tags[0] = "changed";
  }
  CHECK(slurp(path) ==
        "print alice buffer before 1\n"
        "macro alice buffer before 1\n"
        "spec [  alice] [1  ]\n"
        "at the call alice [\"a\"]\n");
}

TEST_CASE("json: named arguments are keys after the message, escaped; numbers and bools bare") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  const auto tid = static_cast<std::uint32_t>(::gettid());
  const std::string function = __builtin_FUNCTION();
  std::uint32_t line = 0;
  {
    logger lg([&] { return make_log_writable(path); }, {.name = "app", .pattern = "{message}", .format = log_format::json});
    const std::string name = "alice";
    const char* ip = "10.0.0.1";
    line = __LINE__ + 1;
    SLUICE_LOG_INFO(lg, "user {user} from {ip}", fmt::arg("user", name), fmt::arg("ip", ip));
    SLUICE_LOG_WARN(lg, "{n} {x} {ok} {c} {nan} {big}", fmt::arg("n", -7), fmt::arg("x", 0.25), fmt::arg("ok", true),
                    fmt::arg("c", 'q'), fmt::arg("nan", std::numeric_limits<double>::quiet_NaN()),
                    fmt::arg("big", std::uint64_t{18446744073709551615ULL}));
    // A name fmt's format cannot refer to (not an identifier): a key only.
    SLUICE_LOG_ERROR(lg, "{} [{v:>4}]", 1, fmt::arg("v", "a\nb"), fmt::arg("we\"ird", 2));
    SLUICE_LOG_INFO(lg, "tags {tags} {n}", fmt::arg("tags", std::vector<std::string>{"a", "b"}), fmt::arg("n", 3));
    SLUICE_LOG_INFO(lg, "no names {}", 5);
  }
  const auto at = [&](const char* level, std::uint32_t offset) {
    return fmt::format(R"("level":"{}","logger":"app","file":"logger_args_test.cc","line":{},"function":"{}","thread":{},)",
                       level, line + offset, function, tid);
  };
  const std::vector<std::string> l = lines_of(slurp(path));
  REQUIRE(l.size() == 5);
  // Each line from its "level": a JSON line is always stamped, at the call.
  const auto from_level = [&](std::size_t i) {
    CHECK(l[i].starts_with("{\"time\":\""));
    return l[i].substr(std::min(l[i].find("\"level\""), l[i].size()));
  };
  CHECK(from_level(0) == at("info", 0) + R"("message":"user alice from 10.0.0.1","user":"alice","ip":"10.0.0.1"})");
  CHECK(from_level(1) == at("warn", 1) +
                    R"("message":"-7 0.25 true q nan 18446744073709551615","n":-7,"x":0.25,"ok":true,"c":"q",)"
                    R"("nan":"nan","big":18446744073709551615})");
  CHECK(from_level(2) == at("error", 5) + R"("message":"1 [ a\nb]","v":"a\nb","we\"ird":2})");
  CHECK(from_level(3) == at("info", 6) + R"("message":"tags [\"a\", \"b\"] 3","tags":"[\"a\", \"b\"]","n":3})");
  CHECK(from_level(4) == at("info", 7) + R"("message":"no names 5"})");
  // And a JSON parser reads them back so.
  const std::string got = json_read_back(path);
  const std::vector<std::string> parsed = lines_of(got);
  REQUIRE(parsed.size() == 5);
  const auto fields = [&](std::size_t i) {
    const std::string& s = parsed[i];
    return s.substr(std::min(s.find("message="), s.size()));
  };
  CHECK(fields(0) == "message=\"user alice from 10.0.0.1\"\0user=\"alice\"\0ip=\"10.0.0.1\"\0"s);
  CHECK(fields(1).find("n=-7\0x=0.25\0ok=true\0c=\"q\"\0nan=\"nan\"\0big=18446744073709551615\0"s) !=
        std::string::npos);
  CHECK(fields(2).find("v=\"a\\nb\"\0we\"ird=2\0"s) != std::string::npos);
  CHECK(fields(3).find("tags=\"[\\\"a\\\", \\\"b\\\"]\"\0n=3\0"s) != std::string::npos);
}

TEST_CASE("pattern: named arguments add nothing to a pattern line") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  {
    logger lg([&] { return make_log_writable(path); }, {.pattern = "{level} {message}"});
    SLUICE_LOG_INFO(lg, "user {user} from {ip}", fmt::arg("user", "alice"), fmt::arg("ip", "10.0.0.1"));
    SLUICE_LOG_INFO(lg, "tags {tags}", fmt::arg("tags", std::vector<int>{1, 2}));
  }
  CHECK(slurp(path) == "info user alice from 10.0.0.1\ninfo tags [1, 2]\n");
}

// The lines formatted at the call land as the others do: flush(), which
// waits for each line's write callback, returns without the poll interval.
TEST_CASE("arguments: lines formatted at the call are written and land; flush() returns") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  logger lg([&] { return make_log_writable(path); }, {.pattern = "{message}", .poll_interval = 60000ms});
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    lg.print("print {} {}\n", i, std::vector<int>{i, i});
    SLUICE_LOG_INFO(lg, "macro {} {}", i, std::optional<std::string>("s"));
    lg.print("deferred {}\n", i);
    expected += fmt::format("print {} [{}, {}]\nmacro {} optional(\"s\")\ndeferred {}\n", i, i, i, i, i);
  }
  auto flushed = std::async(std::launch::async, [&] { return lg.flush(); });
  REQUIRE(flushed.wait_for(std::chrono::seconds(10 * sluice::test::time_scale())) == std::future_status::ready);
  CHECK(!flushed.get());
  CHECK(slurp(path) == expected);
}

// The crash handler decodes the ring itself (crash_handler.cc, into a
// buffer on its stack): a line formatted at the call is its text, copied
// as it is, after the level for a macro line.
TEST_CASE("arguments: at a crash, lines formatted at the call are written as they were formatted") {
  temp_dir dir;
  const std::string path = dir.file("crash.log");
  std::fflush(stdout);  // or the child's exit writes it again
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGSEGV, SIG_DFL);
    // A long poll interval: after the first flush the backend sleeps, and
    // the lines are still in the ring when the signal comes.
    auto* lg = new logger([&] { return make_log_writable(path); },
                          {.poll_interval = 60000ms, .crash_handler = true, .crash_path = path});
    lg->flush();
    logger& l = *lg;
    for (int i = 0; i < 3; ++i) {
      l.print("print {} {}\n", i, std::vector<int>{i, i + 1});
      SLUICE_LOG_WARN(l, "macro {} {}", i, std::optional<std::string>("s"));
      SLUICE_LOG_ERROR(l, "user {}", tagged{"bob"});
    }
    ::raise(SIGSEGV);
    ::_exit(3);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSEGV);
  std::string expected;
  for (int i = 0; i < 3; ++i)
    expected += fmt::format("print {} [{}, {}]\nwarn macro {} optional(\"s\")\nerror user <bob>\n", i, i, i + 1, i);
  // A macro line carries its stamp: the handler writes it before the level.
  std::string got;
  for (const std::string& l : lines_of(slurp(path))) {
    const std::size_t level = l.find_first_of("abcdefghijklmnopqrstuvwxyz");
    got += (l.rfind("print ", 0) == 0 ? l : l.substr(level)) + "\n";
  }
  CHECK(got == expected);
}
