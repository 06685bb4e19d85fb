// logger destinations, colours, the backtrace, thread names and local time:
// each destination takes the lines at or above its own level through its
// own pattern, print() lines go to all, the slowest holds the others back
// and flush() waits for all; the level is coloured only when asked, and
// asked only on a terminal without NO_COLOR; the backtrace writes the last
// n lines below the level, oldest first, before a line at its flush level
// or at flush_backtrace(); {thread} is a thread's name once it has one;
// {time} in the local zone carries its offset.
#include "support/printers.h"

#include <fcntl.h>
#include <pty.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "sluice/fs/write_stream.h"
#include "sluice/log_file/log_writable.h"
#include "sluice/logger/logger.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::slurp;
using sluice::test::temp_dir;
using namespace std::chrono_literals;

namespace {

log_destination file_at(const std::string& path, log_level level, std::string pattern,
                        log_format format = log_format::pattern) {
  log_destination d;
  d.make_stream = [path] { return std::unique_ptr<writable>(make_log_writable(path)); };
  d.level = level;
  d.pattern = std::move(pattern);
  d.format = format;
  return d;
}

// An environment variable set for one test, put back after it.
struct scoped_env {
  std::string name;
  std::optional<std::string> old;
  scoped_env(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~scoped_env() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("destinations: each takes the lines at or above its level, through its own pattern") {
  temp_dir dir;
  const std::string all = dir.file("all.log"), warnings = dir.file("warn.json");
  {
    logger lg({file_at(all, log_level::trace, "{level} {message}"),
               file_at(warnings, log_level::warn, "", log_format::json)},
              {.level = log_level::debug, .name = "app"});
    SLUICE_LOG_TRACE(lg, "trace {}", 0);  // below the logger's level: neither
    SLUICE_LOG_DEBUG(lg, "debug {}", 1);
    SLUICE_LOG_INFO(lg, "info {}", 2);
    SLUICE_LOG_WARN(lg, "warn {}", 3);
    lg.print("raw {}\n", 4);  // print(): every destination
    SLUICE_LOG_CRITICAL(lg, "critical \"{}\"", 5);
    REQUIRE_FALSE(lg.flush());
    CHECK(slurp(all) == "debug debug 1\ninfo info 2\nwarn warn 3\nraw 4\ncritical critical \"5\"\n");
  }
  const std::string json = slurp(warnings);
  const std::regex re(
      R"(\{"time":"[^"]+","level":"warn","logger":"app","file":"logger_destinations_test\.cc","line":\d+,)"
      R"("function":"[^"]+","thread":\d+,"message":"warn 3"\}\n)"
      R"(raw 4\n)"
      R"(\{"time":"[^"]+","level":"critical","logger":"app","file":"logger_destinations_test\.cc","line":\d+,)"
      R"("function":"[^"]+","thread":\d+,"message":"critical \\"5\\""\}\n)");
  CHECK_MESSAGE(std::regex_match(json, re), json);
}

TEST_CASE("destinations: a pattern one and a JSON one share the message; named arguments are keys in JSON only") {
  temp_dir dir;
  const std::string text = dir.file("t.log"), json = dir.file("t.json");
  {
    logger lg({file_at(text, log_level::trace, "{message}"), file_at(json, log_level::trace, "", log_format::json)});
    std::string user = "ada";
    SLUICE_LOG_INFO(lg, "user {user} on port {port}", fmt::arg("user", user), fmt::arg("port", 8080));
    user = "overwritten";
  }
  CHECK(slurp(text) == "user ada on port 8080\n");
  const std::string j = slurp(json);
  CHECK_MESSAGE(j.find("\"message\":\"user ada on port 8080\",\"user\":\"ada\",\"port\":8080}\n") != std::string::npos, j);
}

TEST_CASE("destinations: flush() waits for the slowest; a slow one holds the others back, nothing is lost") {
  // One destination a pipe nobody reads yet (4 KiB), one a file: the ring
  // (4 KiB) fills while the pipe pushes back, so print() blocks, and the
  // file has no more than the pipe's stream took.
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  ::fcntl(fds[1], F_SETPIPE_SZ, 4096);
  temp_dir dir;
  const std::string path = dir.file("fast.log");
  std::string got;
  std::thread reader;
  {
    log_destination slow;
    slow.make_stream = [fd = fds[1]] { return std::unique_ptr<writable>(make_fd_writable(fd, true)); };
    slow.pattern = "{message}";
    logger lg({std::move(slow), file_at(path, log_level::trace, "{message}")}, {.ring_size = 4096});
    std::atomic<int> logged{0};
    auto producer = std::async(std::launch::async, [&] {
      for (int i = 0; i < 3000; ++i) {
        SLUICE_LOG_INFO(lg, "line {} of the test that is long enough", i);
        logged.fetch_add(1);
      }
      return lg.flush();
    });
    std::this_thread::sleep_for(200ms * sluice::test::time_scale());
    CHECK(logged.load() < 3000);
    CHECK(producer.wait_for(0s) == std::future_status::timeout);
    reader = std::thread([&] {
      char buf[65536];
      for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    });
    CHECK_FALSE(producer.get());
    CHECK(lg.dropped() == 0);
  }
  reader.join();
  ::close(fds[0]);
  std::string expected;
  for (int i = 0; i < 3000; ++i) expected += fmt::format("line {} of the test that is long enough\n", i);
  CHECK(got == expected);
  CHECK(slurp(path) == expected);
}

TEST_CASE("destinations: one that fails does not stop the others; flush() says its error") {
  temp_dir dir;
  const std::string path = dir.file("ok.log");
  std::error_code flushed;
  {
    log_destination full;
    full.make_stream = [] { return std::unique_ptr<writable>(make_file_writable("/dev/full")); };
    full.pattern = "{message}";
    logger lg({std::move(full), file_at(path, log_level::trace, "{message}")});
    for (int i = 0; i < 100; ++i) SLUICE_LOG_INFO(lg, "line {}", i);
    flushed = lg.flush();
    for (int i = 100; i < 200; ++i) SLUICE_LOG_INFO(lg, "line {}", i);
  }
  CHECK(flushed == std::errc::no_space_on_device);
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += fmt::format("line {}\n", i);
  CHECK(slurp(path) == expected);
}

TEST_CASE("destinations: a single stream that fails is reported by flush(), and the process goes on") {
  std::error_code flushed;
  {
    logger lg([] { return make_file_writable("/dev/full"); }, {.pattern = "{message}"});
    SLUICE_LOG_INFO(lg, "lost, and said so");
    lg.print("lost too\n");
    flushed = lg.flush();
  }
  CHECK(flushed == std::errc::no_space_on_device);
}

TEST_CASE("destinations: none, or one without a factory, is refused") {
  CHECK_THROWS_AS(logger(std::vector<log_destination>{}), std::invalid_argument);
  CHECK_THROWS_AS(logger(std::vector<log_destination>{log_destination{}}), std::invalid_argument);
}

TEST_CASE("colours: the level only, on request; a terminal asks unless NO_COLOR is set") {
  temp_dir dir;
  const std::string path = dir.file("colour.log");
  {
    log_destination d = file_at(path, log_level::trace, "[{level:<6}] {message}");
    d.colors = true;
    logger lg({std::move(d)}, {.level = log_level::trace});
    SLUICE_LOG_TRACE(lg, "t");
    SLUICE_LOG_INFO(lg, "i");
    SLUICE_LOG_WARN(lg, "w");
    SLUICE_LOG_CRITICAL(lg, "c");
  }
  CHECK(slurp(path) ==
        "[\033[37mtrace\033[m ] t\n[\033[32minfo\033[m  ] i\n[\033[33m\033[1mwarn\033[m  ] w\n"
        "[\033[1m\033[41mcritical\033[m] c\n");

  int master = -1, slave = -1;
  REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  const int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(file >= 0);
  {
    scoped_env unset("NO_COLOR", nullptr);
    CHECK(log_colors_for(slave));
    CHECK_FALSE(log_colors_for(file));  // not a terminal
    CHECK(log_console(log_level::info, slave).colors);
    CHECK_FALSE(log_console(log_level::info, file).colors);
  }
  {
    scoped_env set("NO_COLOR", "1");
    CHECK_FALSE(log_colors_for(slave));
    CHECK_FALSE(log_console(log_level::info, slave).colors);
  }
  {
    scoped_env empty("NO_COLOR", "");  // no-color.org: set and empty is as unset
    CHECK(log_colors_for(slave));
  }
  ::close(file);
  ::close(master);
  ::close(slave);
}

TEST_CASE("colours: a console destination writes to its fd, which the logger leaves open") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  {
    log_destination console = log_console(log_level::info, fds[1]);
    CHECK_FALSE(console.colors);  // a pipe
    console.pattern = "{level} {message}";
    logger lg({std::move(console)}, {.level = log_level::debug});
    SLUICE_LOG_DEBUG(lg, "below the console's level");
    SLUICE_LOG_ERROR(lg, "to the console {}", 1);
  }
  CHECK(::fcntl(fds[1], F_GETFD) != -1);
  ::close(fds[1]);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  CHECK(got == "error to the console 1\n");
}

TEST_CASE("backtrace: the last n lines below the level, oldest first, before a line at the flush level") {
  temp_dir dir;
  const std::string path = dir.file("bt.log");
  {
    logger lg([&] { return make_log_writable(path); }, {.pattern = "{level} {message}"});
    SLUICE_LOG_DEBUG(lg, "not kept: no backtrace yet");
    lg.enable_backtrace(3, log_level::error);
    CHECK(lg.level() == log_level::info);
    CHECK_FALSE(lg.should_log(log_level::debug));
    CHECK(lg.takes(log_level::debug));
    for (int i = 0; i < 5; ++i) SLUICE_LOG_DEBUG(lg, "debug {}", i);
    SLUICE_LOG_INFO(lg, "info is written at once");
    SLUICE_LOG_WARN(lg, "warn is below the flush level");
    SLUICE_LOG_TRACE(lg, "trace {}", std::string("by value"));
    SLUICE_LOG_ERROR(lg, "error: the backtrace first");
    SLUICE_LOG_ERROR(lg, "error again: nothing kept since");
    SLUICE_LOG_DEBUG(lg, "debug after");
    lg.flush_backtrace();
    lg.flush_backtrace();  // nothing left
    SLUICE_LOG_DEBUG(lg, "kept, never written");
    lg.enable_backtrace(0);
    CHECK_FALSE(lg.takes(log_level::debug));
    SLUICE_LOG_DEBUG(lg, "not kept: backtrace off");
  }
  CHECK(slurp(path) ==
        "info info is written at once\n"
        "warn warn is below the flush level\n"
        "debug debug 3\n"
        "debug debug 4\n"
        "trace trace by value\n"
        "error error: the backtrace first\n"
        "error error again: nothing kept since\n"
        "debug debug after\n");
}

TEST_CASE("backtrace: kept lines carry their own times, and a set_level() below them writes at once") {
  temp_dir dir;
  const std::string path = dir.file("bt-time.log");
  {
    logger lg([&] { return make_log_writable(path); }, {.pattern = "{time} {message}"});
    lg.enable_backtrace(10);
    SLUICE_LOG_DEBUG(lg, "first");
    lg.flush();
    std::this_thread::sleep_for(20ms);
    SLUICE_LOG_ERROR(lg, "second");
    lg.set_level(log_level::debug);
    CHECK(lg.takes(log_level::trace));  // the backtrace still keeps trace lines
    SLUICE_LOG_DEBUG(lg, "third");
  }
  const std::string text = slurp(path);
  std::smatch m;
  const std::regex re(R"((\S+)Z first\n(\S+)Z second\n\S+Z third\n)");
  REQUIRE_MESSAGE(std::regex_match(text, m, re), text);
  CHECK(m[1].str() < m[2].str());  // ISO 8601 compares as text
}

TEST_CASE("thread names: {thread} is the name once the thread has one; JSON adds thread_name") {
  temp_dir dir;
  const std::string text_path = dir.file("t.log"), json_path = dir.file("t.json"), id_path = dir.file("id.log");
  const auto tid = static_cast<std::uint32_t>(::gettid());
  std::uint32_t worker_tid = 0;
  {
    logger lg({file_at(text_path, log_level::trace, "{thread:>8}|{message}"),
               file_at(json_path, log_level::trace, "", log_format::json),
               file_at(id_path, log_level::error, "{thread:08}|{message}")});  // a number's spec: the id
    SLUICE_LOG_INFO(lg, "before");
    lg.flush();
    std::thread([&] {
      set_log_thread_name("worker-1");
      worker_tid = static_cast<std::uint32_t>(::gettid());
      SLUICE_LOG_INFO(lg, "named first");
      SLUICE_LOG_ERROR(lg, "by id");
    }).join();
    lg.flush();
    std::thread([&] {
      SLUICE_LOG_INFO(lg, "named later");
      lg.flush();
      set_log_thread_name("io");
      SLUICE_LOG_INFO(lg, "after");
    }).join();
  }
  const std::string text = slurp(text_path);
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == fmt::format("{:>8}|before", tid));
  CHECK(lines[1] == "worker-1|named first");
  CHECK(lines[2] == "worker-1|by id");
  CHECK(std::regex_match(lines[3], std::regex(R"( *\d+\|named later)")));
  CHECK(lines[3] != fmt::format("{:>8}|named later", tid));
  CHECK(lines[4] == "      io|after");
  CHECK(slurp(id_path) == fmt::format("{:08}|by id\n", worker_tid));
  const std::string json = slurp(json_path);
  CHECK(json.find("\"thread_name\"") == json.find("\"thread_name\":\"worker-1\",\"message\":\"named first\""));
  CHECK(json.find("\"thread_name\":\"io\",\"message\":\"after\"") != std::string::npos);
  CHECK(json.find("\"thread_name\":\"io\",\"message\":\"named later\"") == std::string::npos);
}

TEST_CASE("local time: {time} in the local zone, with its offset") {
  temp_dir dir;
  const std::string utc = dir.file("utc.log"), local = dir.file("local.log");
  scoped_env tz("TZ", "XYZ-3");  // POSIX: three hours east of UTC
  ::tzset();
  {
    logger lg([&] { return make_log_writable(local); }, {.time_zone = log_time_zone::local, .pattern = "{time} {message}"});
    SLUICE_LOG_INFO(lg, "now");
  }
  {
    logger lg([&] { return make_log_writable(utc); }, {.pattern = "{time} {message}"});
    SLUICE_LOG_INFO(lg, "utc");
  }
  const std::string text = slurp(local), utc_text = slurp(utc);
  std::smatch m, u;
  REQUIRE_MESSAGE(std::regex_match(text, m, std::regex(R"(\S+T(\d\d):(\d\d):\d\d\.\d{6}\+03:00 now\n)")),
                  text);
  REQUIRE_MESSAGE(std::regex_match(utc_text, u, std::regex(R"(\S+T(\d\d):(\d\d):\d\d\.\d{6}Z utc\n)")), utc_text);
  const int local_minutes = std::stoi(m[1]) * 60 + std::stoi(m[2]), utc_minutes = std::stoi(u[1]) * 60 + std::stoi(u[2]);
  // The second logger ran a moment later: a minute may have turned.
  const int east = (local_minutes - utc_minutes + 24 * 60) % (24 * 60);
  CHECK((east == 180 || east == 179));
}

TEST_CASE("time format: {time:%...} is strftime's over the line's stamp, %f its fraction, in the zone asked") {
  temp_dir dir;
  const std::string utc = dir.file("utc.log"), local = dir.file("local.log");
  scoped_env tz("TZ", "XYZ-3");
  ::tzset();
  // The same stamp twice in a line: ISO 8601 as {time} writes it, and the
  // strftime form, which must say the same instant.
  {
    logger lg([&] { return make_log_writable(utc); },
              {.pattern = "{time}|{time:%d.%m.%Y %H:%M:%S,%f}|{time:%%f %j}|{time:%F}|{message}"});
    for (int i = 0; i < 3; ++i) SLUICE_LOG_INFO(lg, "line {}", i);
  }
  {
    logger lg([&] { return make_log_writable(local); },
              {.time_zone = log_time_zone::local, .pattern = "{time}|{time:%H:%M:%S.%f %z}|{message}"});
    SLUICE_LOG_INFO(lg, "local");
  }
  const std::string text = slurp(utc);
  const std::regex utc_line(
      R"((\d{4})-(\d\d)-(\d\d)T(\d\d:\d\d:\d\d)\.(\d{6})Z\|(\d\d)\.(\d\d)\.(\d{4}) (\d\d:\d\d:\d\d),(\d{6})\|%f (\d{3})\|(\S+)\|line \d)");
  int lines = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), utc_line), end; it != end; ++it, ++lines) {
    const std::smatch& m = *it;
    CHECK(m[1] == m[8]);
    CHECK(m[2] == m[7]);
    CHECK(m[3] == m[6]);
    CHECK(m[4] == m[9]);
    CHECK(m[5] == m[10]);
    CHECK(m[12] == m[1].str() + "-" + m[2].str() + "-" + m[3].str());
    // %j: the day of the year, as timegm's tm says.
    struct tm tm {};
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    const time_t t = ::timegm(&tm);
    struct tm back {};
    REQUIRE(::gmtime_r(&t, &back));
    CHECK(std::stoi(m[11]) == back.tm_yday + 1);
  }
  CHECK_MESSAGE(lines == 3, text);
  const std::string local_text = slurp(local);
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_match(local_text, m,
                                   std::regex(R"(\S+T(\d\d:\d\d:\d\d)\.(\d{6})\+03:00\|(\d\d:\d\d:\d\d)\.(\d{6}) \+0300\|local\n)")),
                  local_text);
  CHECK(m[1] == m[3]);
  CHECK(m[2] == m[4]);
}
