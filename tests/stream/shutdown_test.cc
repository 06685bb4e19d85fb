// Shutdown: a program that does not end its streams loses nothing it wrote.
// Child processes (tests/stream/shutdown_child.cc) write numbered lines
// through each kind of stream and leave without end(); the file must hold
// exactly those lines, in order. In-process cases check the destructor's
// callbacks.
#include "support/printers.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/factories.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/log_file_sink.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/temp_dir.h"
#include "support/writable_events.h"

extern char** environ;

using namespace sluice;
using namespace std::string_view_literals;
using sluice::test::must_call;
using sluice::test::temp_dir;
using sluice::test::slurp;
using sluice::test::on;
namespace fs = std::filesystem;

namespace {

std::string numbered_lines(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += std::to_string(i) + "\n";
  return s;
}

// The first line where `got` differs from 1..n, for the failure message.
std::string first_difference(const std::string& got, int n) {
  std::istringstream in(got);
  std::string line;
  int i = 0;
  while (std::getline(in, line)) {
    ++i;
    if (line != std::to_string(i)) return "line " + std::to_string(i) + " is '" + line + "'";
  }
  if (i < n) return "only " + std::to_string(i) + " of " + std::to_string(n) + " lines";
  return "none";
}

// Runs the child and returns its exit status (or 128 + signal).
int run_child(const std::vector<std::string>& args) {
  const char* child = std::getenv("SLUICE_SHUTDOWN_CHILD");
  REQUIRE_MESSAGE(child != nullptr, "SLUICE_SHUTDOWN_CHILD names the shutdown_child program");
  std::vector<std::string> all{child};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Some modes leak their streams on purpose; the sanitizers' leak check
  // would fail them.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).substr(0, 13) != "ASAN_OPTIONS=") env_strings.emplace_back(*e);
  env_strings.emplace_back("ASAN_OPTIONS=detect_leaks=0");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  REQUIRE(::posix_spawn(&pid, child, nullptr, nullptr, argv.data(), envp.data()) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void check_child(const std::string& kind, const std::string& mode, int n) {
  temp_dir d;
  const std::string path = d.file("out.log");
  CAPTURE(kind);
  CAPTURE(mode);
  CHECK(run_child({kind, mode, path, std::to_string(n)}) == 0);
  const std::string got = slurp(path);
  const bool exact = got == numbered_lines(n);
  CHECK_MESSAGE(exact, "first difference: " << first_difference(got, n));
}


}  // namespace

TEST_CASE("returning from main with streams never ended or destroyed loses no line") {
  for (const char* kind : {"fd", "file", "log", "worker"}) check_child(kind, "return", 20000);
}

TEST_CASE("exit() from inside the loop, with the turn's writes still held, loses no line") {
  for (const char* kind : {"fd", "file", "log", "worker"}) check_child(kind, "exit", 20000);
}

TEST_CASE("a stream destroyed without end() and without the loop wrote every line before its destructor returned") {
  for (const char* kind : {"fd", "file", "log", "worker"}) check_child(kind, "scope", 20000);
}

TEST_CASE("a static stream, destroyed after its thread's loop, loses no line") {
  for (const char* kind : {"fd", "file", "log", "worker"}) check_child(kind, "static", 20000);
}

TEST_CASE("exit() while the worker has a batch and more wait behind it loses no line, and neither hangs nor crashes") {
  for (int i = 0; i < 5; ++i) check_child("worker", "flood", 200000);
}

// Some writes went out, some are held for the turn, some are corked, and
// the loop never runs again before the stream goes.
void check_destructor_writes_all(loop& l, std::unique_ptr<writable> w, const std::string& path) {
  std::deque<must_call> calls;  // before the stream: checked after it goes
  int i = 1;
  for (; i <= 100; ++i) w->write(std::to_string(i) + "\n", calls.emplace_back(1).cb());
  l.run_until_idle();  // out (to the worker: maybe still in flight)
  for (; i <= 200; ++i) w->write(std::to_string(i) + "\n", calls.emplace_back(1).cb());
  w->cork();
  for (; i <= 300; ++i) w->write(std::to_string(i) + "\n", calls.emplace_back(1).cb());
  w.reset();
  CHECK(slurp(path) == numbered_lines(300));
  for (auto& m : calls) {
    m.check();
    if (m.calls() == 1) CHECK(m.error() == std::error_code{});
  }
  l.run();  // a completion the worker may have posted: it only frees
  CHECK_FALSE(l.alive());
}

TEST_CASE("the destructor of a stream never ended writes what it holds and calls every callback once, with success") {
  temp_dir d;
  const std::string path = d.file("out.log");
  loop l;
  SUBCASE("fd writable") {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    check_destructor_writes_all(l, make_fd_writable(fd, true, on(l)), path);
  }
  SUBCASE("file writable") { check_destructor_writes_all(l, make_file_writable(path, {}, on(l)), path); }
  SUBCASE("log writable") { check_destructor_writes_all(l, make_log_writable(path, {}, on(l)), path); }
  SUBCASE("worker writable") {
    file_worker worker(path);
    check_destructor_writes_all(l, make_worker_writable(worker, on(l)), path);
  }
}

TEST_CASE("the destructor of a destroyed stream writes nothing more") {
  temp_dir d;
  const std::string path = d.file("out.log");
  loop l;
  must_call held;
  {
    auto w = make_file_writable(path, {}, on(l));
    // Corked, the write is buffered as in Node (a write merely held for the
    // turn is in flight, and lands: see fd_sink_test).
    w->cork();
    w->write("held\n"sv, held.cb());
    w->destroy();
  }
  CHECK(held.error() == errc::destroyed);
  CHECK(slurp(path).empty());
}

TEST_CASE("a stream whose loop is destroyed first writes what it holds, and its destructor still pays") {
  temp_dir d;
  const std::string path = d.file("out.log");
  must_call a, b;
  std::unique_ptr<writable> w;
  {
    loop l;
    w = make_file_writable(path, {}, on(l));
    w->write("a\n"sv, a.cb());
    l.run_until_idle();
    w->write("b\n"sv, b.cb());  // held for the turn
  }
  CHECK(slurp(path) == "a\nb\n");
  CHECK(b.calls() == 0);  // owed: the loop went before the tick
  w->write("c\n"sv);      // after the loop: buffered, written by the destructor
  w.reset();
  CHECK(a.error() == std::error_code{});
  CHECK(b.error() == std::error_code{});
  CHECK(slurp(path) == "a\nb\nc\n");
}
