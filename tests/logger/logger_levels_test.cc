// logger levels, the SLUICE_LOG_* macros and the pattern: a line below the
// level is not written and its arguments not evaluated; set_level() from
// another thread takes; each pattern field is what the call site was; print()
// lines are written as they were.
#include "support/printers.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "sluice/log_file/log_writable.h"
#include "sluice/logger/logger.h"
#include "support/shell.h"
#include "support/temp_dir.h"

using namespace sluice;
using sluice::test::slurp;
using sluice::test::temp_dir;

namespace {

// What a logger over `path` wrote once it is gone, with these options.
struct logged {
  temp_dir dir;
  std::string path = dir.file("app.log");
  std::string text() const { return slurp(path); }
};

int evaluations = 0;
int counted() { return ++evaluations; }

}  // namespace

TEST_CASE("levels: a line below the logger's level is not written, nor its arguments evaluated") {
  logged out;
  evaluations = 0;
  {
    logger lg([&] { return make_log_writable(out.path); }, {.pattern = "{level} {message}"});
    CHECK(lg.level() == log_level::info);  // the default
    SLUICE_LOG_TRACE(lg, "trace {}", counted());
    SLUICE_LOG_DEBUG(lg, "debug {}", counted());
    SLUICE_LOG_INFO(lg, "info {}", counted());
    SLUICE_LOG_WARN(lg, "warn {}", counted());
    SLUICE_LOG_ERROR(lg, "error {}", counted());
    SLUICE_LOG_CRITICAL(lg, "critical {}", counted());
    lg.set_level(log_level::error);
    SLUICE_LOG_WARN(lg, "warn again {}", counted());
    SLUICE_LOG_ERROR(lg, "error again {}", counted());
    lg.set_level(log_level::off);
    SLUICE_LOG_CRITICAL(lg, "critical again {}", counted());
    lg.set_level(log_level::trace);
    SLUICE_LOG_TRACE(lg, "trace again {}", counted());
  }
  CHECK(evaluations == 6);
  CHECK(out.text() == "info info 1\nwarn warn 2\nerror error 3\ncritical critical 4\nerror error again 5\n"
                      "trace trace again 6\n");
}

TEST_CASE("levels: set_level() from another thread takes for the lines after it") {
  logged out;
  {
    logger lg([&] { return make_log_writable(out.path); }, {.level = log_level::warn, .pattern = "{message}"});
    std::atomic<bool> lowered{false};
    std::thread other([&] {
      lg.set_level(log_level::debug);
      lowered = true;
    });
    other.join();
    REQUIRE(lowered);
    SLUICE_LOG_DEBUG(lg, "seen");
    CHECK(lg.should_log(log_level::debug));
    CHECK_FALSE(lg.should_log(log_level::trace));
  }
  CHECK(out.text() == "seen\n");
}

TEST_CASE("pattern: each field is the call site's, the thread's and the logger's; widths as fmt's") {
  logged out;
  std::uint32_t line = 0;
  const std::string function = __builtin_FUNCTION();
  std::uint32_t main_tid = static_cast<std::uint32_t>(::gettid()), other_tid = 0;
  {
    logger lg([&] { return make_log_writable(out.path); },
              {.name = "app", .pattern = "[{level:>8}] {logger}|{file}|{line}|{function}|{thread}|{message:*^9}"});
    line = __LINE__ + 1;
    SLUICE_LOG_WARN(lg, "{}-{}", 1, "two");
    lg.flush();  // threads' lines interleave as the backend finds them: this one first
    std::thread other([&] {
      other_tid = static_cast<std::uint32_t>(::gettid());
      SLUICE_LOG_ERROR(lg, "from {}", "there");
    });
    other.join();
    lg.flush();
  }
  const std::string file = "logger_levels_test.cc";
  CHECK(out.text() == fmt::format("[    warn] app|{0}|{1}|{2}|{3}|**1-two**\n"
                                  "[   error] app|{0}|{4}|{5}|{6}|from there\n",
                                  file, line, function, main_tid, line + 4, "operator()", other_tid));
}

TEST_CASE("pattern: the default has the time (ISO 8601 UTC), the level padded, file:line and the message") {
  logged out;
  const auto before = std::chrono::system_clock::now();
  std::uint32_t line = 0;
  {
    logger lg([&] { return make_log_writable(out.path); });
    line = __LINE__ + 1;
    SLUICE_LOG_INFO(lg, "user {} logged in", "ada");
  }
  const auto after = std::chrono::system_clock::now();
  const std::string text = out.text();
  std::smatch m;
  const std::regex re(R"((\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3,6})Z info     logger_levels_test\.cc:(\d+) user ada logged in\n)");
  REQUIRE_MESSAGE(std::regex_match(text, m, re), text);
  CHECK(std::stoul(m[8]) == line);
  // The stamp is the call's: between the two readings of the wall clock,
  // give or take 2 ms (the TSC's line follows a wall clock that a VM may
  // step; logger_test bounds the precision itself).
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  const std::string frac = m[7];
  const auto us = std::stoll(frac) * (frac.size() == 3 ? 1000 : 1);
  const auto stamp = std::chrono::system_clock::from_time_t(::timegm(&tm)) + std::chrono::microseconds(us);
  CHECK(stamp >= before - std::chrono::milliseconds(2));
  CHECK(stamp <= after + std::chrono::milliseconds(2));
}

TEST_CASE("pattern: print() lines are written as they are, beside the macros' lines") {
  logged out;
  {
    logger lg([&] { return make_log_writable(out.path); }, {.pattern = "{level}: {message}"});
    lg.print("raw {}\n", 1);
    SLUICE_LOG_ERROR(lg, "cooked {}", 2);
    lg.print("raw {}\n", 3);
  }
  CHECK(out.text() == "raw 1\nerror: cooked 2\nraw 3\n");
}

TEST_CASE("pattern: an unknown field or a spec fmt refuses throws invalid_argument from the constructor") {
  logged out;
  auto make = [&](const char* pattern) {
    logger lg([&] { return make_log_writable(out.path); }, {.pattern = pattern});
  };
  CHECK_THROWS_AS(make("{lvl} {message}"), std::invalid_argument);
  CHECK_THROWS_AS(make("{message"), std::invalid_argument);
  CHECK_THROWS_AS(make("{line:s}"), std::invalid_argument);
  CHECK_NOTHROW(make("{{literal}} {message}"));
}

TEST_CASE("json: one object a line, parsed back by a JSON parser: every field, the message byte for byte") {
  logged out;
  const std::string tricky = "quote \" backslash \\ newline \n tab \t bell \x07 utf-8 \xc3\xa9 end";
  std::uint32_t line = 0;
  const auto tid = static_cast<std::uint32_t>(::gettid());
  {
    logger lg([&] { return make_log_writable(out.path); }, {.name = "app", .format = log_format::json});
    line = __LINE__ + 1;
    SLUICE_LOG_WARN(lg, "{} {}", tricky, 42);
    SLUICE_LOG_INFO(lg, "plain");
    lg.print("a print() line stays raw\n");
  }
  const std::string text = out.text();
  REQUIRE(text.substr(text.rfind('{')).find("plain") != std::string::npos);
  // Python's json module reads each object line back; it prints the keys in
  // order, the types of line and thread, then each field's value, NUL-ended.
  const std::string json_lines = text.substr(0, text.find("a print() line"));
  const std::string path = out.dir.file("lines.json");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    std::fwrite(json_lines.data(), 1, json_lines.size(), f);
    std::fclose(f);
  }
  const std::string cmd =
      "python3 -c 'import json,sys\n"
      "for l in open(sys.argv[1], encoding=\"utf-8\"):\n"
      "  o = json.loads(l)\n"
      "  sys.stdout.write(\",\".join(o) + \"|\" + type(o[\"line\"]).__name__ + type(o[\"thread\"]).__name__ + \"\\0\")\n"
      "  for k in (\"level\", \"logger\", \"file\", \"line\", \"function\", \"thread\", \"message\"): sys.stdout.write(str(o[k]) + \"\\0\")\n"
      "' " + path;
  const std::string got = sluice::test::sh(cmd);
  std::vector<std::string> fields;
  for (std::size_t at = 0, nul; (nul = got.find('\0', at)) != std::string::npos; at = nul + 1)
    fields.push_back(got.substr(at, nul - at));
  REQUIRE(fields.size() == 16);
  const std::string function = __builtin_FUNCTION();
  const std::string keys = "time,level,logger,file,line,function,thread,message|intint";
  CHECK(fields[0] == keys);
  CHECK(fields[1] == "warn");
  CHECK(fields[2] == "app");
  CHECK(fields[3] == "logger_levels_test.cc");
  CHECK(fields[4] == std::to_string(line));
  CHECK(fields[5] == function);
  CHECK(fields[6] == std::to_string(tid));
  CHECK(fields[7] == tricky + " 42");
  CHECK(fields[8] == keys);
  CHECK(fields[9] == "info");
  CHECK(fields[15] == "plain");
  CHECK(text.substr(text.size() - 25) == "a print() line stays raw\n");
}

TEST_CASE("SLUICE_LOG_*_LIMIT: at most one line an interval from a call site; what it skipped is said before the next") {
  logged out;
  evaluations = 0;
  {
    logger lg([&] { return make_log_writable(out.path); }, {.pattern = "{level} {message}"});
    for (int i = 0; i < 5; ++i) SLUICE_LOG_WARN_LIMIT(lg, std::chrono::hours(1), "first burst {}", i);
    for (int i = 0; i < 3; ++i) {
      SLUICE_LOG_INFO_LIMIT(lg, std::chrono::milliseconds(300), "tick {}", counted());
      if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    }
    SLUICE_LOG_DEBUG_LIMIT(lg, std::chrono::milliseconds(1), "below the level: {}", counted());
  }
  // The hour-long limit wrote its first line only. The 300 ms one: its first
  // call, its second skipped; 400 ms later its third, told of the second.
  CHECK(out.text() == "warn first burst 0\ninfo tick 1\ninfo (1 lines of this call skipped by its limit)\ninfo tick 2\n");
  CHECK(evaluations == 2);  // neither a skipped call's arguments nor those of one below the level are evaluated
}

TEST_CASE("pattern: alignments and widths are what fmt gives, by code points, for strings and numbers") {
  logged out;
  std::uint32_t line = 0;
  const std::string name = "\xc3\xa9t\xc3\xa9";  // "été": 3 code points, 5 bytes
  {
    logger lg([&] { return make_log_writable(out.path); },
              {.name = name, .pattern = "{logger:^8}|{line:<6}|{logger:>4}|{level:^7}|{line:>7}|{message:<3}|"});
    line = __LINE__ + 1;
    SLUICE_LOG_ERROR(lg, "m");
  }
  CHECK(out.text() == fmt::format("{:^8}|{:<6}|{:>4}|{:^7}|{:>7}|{:<3}|\n", name, line, name, "error", line, "m"));
}
