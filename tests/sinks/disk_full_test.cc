// A file that fills up in the middle of a batch (issue 10, defect 4): the
// lines that landed hear success, the others the error, and the file ends on
// a line boundary. The disk fills up through RLIMIT_FSIZE (with SIGXFSZ
// ignored, a write past it is cut short, and the next fails with EFBIG), as
// it would through ENOSPC, without a small filesystem of its own.
#include "support/printers.h"

#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/log_file/log_worker.h"
#include "sluice/log_file/log_writable.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/stream/writable.h"
#include "support/fault_injection.h"
#include "support/temp_dir.h"
#include "support/write_ledger.h"
#include "support/writable_events.h"

using namespace sluice;
using sluice::test::on;
using sluice::test::slurp;
using sluice::test::temp_dir;
using sluice::test::fault;
using sluice::test::sys_call;

namespace {

// Files this process writes cannot grow past `bytes` while it lives.
struct file_size_limit {
  rlimit old{};
  struct sigaction old_xfsz {};
  explicit file_size_limit(rlim_t bytes) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    REQUIRE(::sigaction(SIGXFSZ, &ign, &old_xfsz) == 0);
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    REQUIRE((old.rlim_max == RLIM_INFINITY || old.rlim_max > bytes));
    rlimit r = old;
    r.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &r) == 0);
  }
  ~file_size_limit() {
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::sigaction(SIGXFSZ, &old_xfsz, nullptr);
  }
  file_size_limit(const file_size_limit&) = delete;
  file_size_limit& operator=(const file_size_limit&) = delete;
};

// Line i: numbered, of a length that varies, ending in a newline.
std::string line(std::size_t i) {
  std::string s = "line " + std::to_string(i) + " ";
  s.append(5 + (i * 37) % 60, static_cast<char>('a' + i % 26));
  s += '\n';
  return s;
}

// What each write's callback heard.
struct outcome : sluice::test::write_ledger {
  // Every callback called once; the successes first, then only errors
  // (a line after a failed one never lands). Returns what the successes
  // wrote, in order.
  std::string check_landed() const {
    std::string landed;
    bool failed = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      INFO("write " << i);
      CHECK(calls[i] == 1);
      if (errors[i]) {
        failed = true;
      } else {
        CHECK_FALSE(failed);
        landed += lines[i];
      }
    }
    CHECK(failed);  // the limit was reached
    return landed;
  }
};

// The file holds exactly the lines that heard success, and ends on a line.
void check_file(const outcome& o, const std::string& path) {
  const std::string landed = o.check_landed();
  const std::string in_file = slurp(path);
  CHECK(in_file.size() == landed.size());
  CHECK(in_file == landed);
  if (!in_file.empty()) CHECK(in_file.back() == '\n');
}

// The first error is the limit's.
void check_first_error(const outcome& o) {
  for (const std::error_code& ec : o.errors) {
    if (!ec) continue;
    CHECK(code_name(ec) == "EFBIG");
    return;
  }
}

// Writes `turns` turns of `per_turn` lines each (a writev per turn).
void write_turns(writable& w, loop& l, outcome& o, std::size_t turns, std::size_t per_turn) {
  w.on(event::error, [](std::error_code) {});  // the callbacks tell
  std::size_t n = 0;
  for (std::size_t t = 0; t < turns; ++t) {
    for (std::size_t i = 0; i < per_turn; ++i, ++n) {
      std::string s = line(n);
      w.write(s, o.cb(s));
    }
    l.run();
  }
}

}  // namespace

TEST_CASE("a file that fills up inside a batch keeps only whole lines, and only they hear success") {
  temp_dir dir;
  for (const std::size_t limit : {1, 37, 1000, 1001, 4099}) {
    CAPTURE(limit);
    const std::string path = dir.file("out-" + std::to_string(limit) + ".log");
    outcome o;
    {
      loop l;
      file_size_limit full(limit);
      auto w = make_file_writable(path, {}, on(l));
      write_turns(*w, l, o, 5, 40);
    }
    check_file(o, path);
    check_first_error(o);
  }
}

TEST_CASE("a single line that does not fit is cut off again, and the lines before it stay") {
  temp_dir dir;
  const std::string path = dir.file("out.log");
  outcome o;
  {
    loop l;
    file_size_limit full(100);
    auto w = make_file_writable(path, {.mode = file_options::open_mode::append}, on(l));
    w->on(event::error, [](std::error_code) {});
    const std::string first(60, 'a');
    w->write(first + "\n", o.cb(first + "\n"));
    l.run();
    const std::string second(60, 'b');
    w->write(second + "\n", o.cb(second + "\n"));  // a write(), not a writev: alone in its turn
    l.run();
  }
  check_file(o, path);
  CHECK(slurp(path) == std::string(60, 'a') + "\n");
  check_first_error(o);
}

TEST_CASE("a worker, log or log worker whose file fills up: whole lines only, and the truth to each callback") {
  temp_dir dir;
  for (const char* kind : {"worker", "log", "log worker"}) {
    for (const std::size_t limit : {1, 1000, 2047}) {
      CAPTURE(kind);
      CAPTURE(limit);
      const std::string path = dir.file(std::string(kind) + "-" + std::to_string(limit) + ".log");
      outcome o;
      {
        loop l;
        file_size_limit full(limit);
        std::unique_ptr<file_worker> worker;
        std::unique_ptr<writable> w;
        if (kind == std::string_view("log")) {
          w = make_log_writable(path, {}, on(l));
        } else {
          worker = kind == std::string_view("worker") ? std::make_unique<file_worker>(path)
                                                      : std::make_unique<log_worker>(path, log_options{});
          w = make_worker_writable(*worker, on(l));
        }
        write_turns(*w, l, o, 5, 40);
      }
      check_file(o, path);
      check_first_error(o);
    }
  }
}

TEST_CASE("a log batch that rotates, then fills the new file: the lines of the first part landed") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  outcome o;
  const std::string big = std::string(1500, 'x') + "\n";
  {
    loop l;
    file_size_limit full(1000);
    // A chunk larger than max_size goes whole into a fresh file: the batch
    // is written in two parts, with a rotation between them, and the second
    // part is cut short by the limit.
    auto w = make_log_writable(path, {.max_size = 500, .keep = 1}, on(l));
    w->on(event::error, [](std::error_code) {});
    for (std::size_t i = 0; i < 8; ++i) {
      std::string s = line(i);
      w->write(s, o.cb(s));
    }
    w->write(big, o.cb(big));
    l.run();
  }
  const std::string landed = o.check_landed();
  CHECK(o.errors.back());
  CHECK(slurp(path + ".1") == landed);
  CHECK(slurp(path).empty());
}

TEST_CASE("a stream destroyed without end() whose last writes fill the file: the destructor's callbacks tell the truth") {
  temp_dir dir;
  for (const int kind : {0, 1, 2}) {
    CAPTURE(kind);
    const std::string path = dir.file("out-" + std::to_string(kind) + ".log");
    outcome o;
    {
      loop l;
      file_size_limit full(1000);
      std::unique_ptr<file_worker> worker;
      std::unique_ptr<writable> w;
      if (kind == 0) w = make_file_writable(path, {}, on(l));
      if (kind == 1) w = make_log_writable(path, {}, on(l));
      if (kind == 2) {
        worker = std::make_unique<file_worker>(path);
        w = make_worker_writable(*worker, on(l));
      }
      for (std::size_t i = 0; i < 60; ++i) {
        std::string s = line(i);
        w->write(s, o.cb(s));
      }
      w.reset();  // never ran the loop: the destructor writes them (sluice/shutdown.h)
    }
    check_file(o, path);
    check_first_error(o);
  }
}

// log_options::wait_for_space (issue 19, item 2): a full disk holds the batch
// back instead of failing it; each line lands once, whole, when room comes.
// ENOSPC comes from the fault-injection layer (a short write first, as a
// filling disk does), so that no small filesystem is needed.
TEST_CASE("a log worker that waits for space: the batch is tried again and every line lands once, whole") {
  temp_dir dir;
  const std::string path = dir.file("wait.log");
  sluice::test::write_ledger o;
  std::size_t waits = 0;
  {
    loop l;
    sluice::test::fault_injector inj;
    log_worker worker(path, log_options{.wait_for_space = true, .space_retry = std::chrono::milliseconds(5)});
    auto w = make_worker_writable(worker, on(l));
    w->on(event::error, [](std::error_code) { FAIL("no error while it waits for space"); });
    inj.fail_at(sys_call::writev, 0, fault::short_io);
    for (std::size_t k = 1; k <= 4; ++k) inj.fail_at(sys_call::writev, k, fault::enospc);
    std::string all;
    for (std::size_t i = 0; i < 200; ++i) {
      std::string s = line(i);
      all += s;
      w->write(s, o.cb(s));
    }
    l.run();
    CHECK(inj.injected(sys_call::writev, fault::enospc) == 4);
    waits = worker.space_waits();
    CHECK_FALSE(worker.waiting_for_space());
    w->end();
    l.run();
    CHECK(worker.close() == std::error_code{});
    CHECK(slurp(path) == all);
  }
  CHECK(waits == 1);
  for (std::size_t i = 0; i < o.lines.size(); ++i) {
    INFO("write " << i);
    CHECK(o.calls[i] == 1);
    CHECK(o.errors[i] == std::error_code{});
  }
}

TEST_CASE("a log worker that waits for space: request_reopen() retries at once; close() fails what still waits") {
  temp_dir dir;
  const std::string path = dir.file("wait.log");
  sluice::test::write_ledger o;
  {
    loop l;
    sluice::test::fault_injector inj;
    // An hour between tries: only request_reopen() (SIGHUP) and close() end a wait.
    log_worker worker(path, log_options{.wait_for_space = true, .space_retry = std::chrono::hours(1)});
    auto w = make_worker_writable(worker, on(l));
    w->on(event::error, [](std::error_code) {});
    inj.set_rate(sys_call::writev, 1.0, {fault::enospc});
    std::string s = line(0);
    w->write(s, o.cb(s));
    l.run_until_idle();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!worker.waiting_for_space() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(worker.waiting_for_space());
    // Room again, and a reopen: the line lands, without waiting the hour.
    inj.stop();
    worker.request_reopen();
    l.run();
    REQUIRE(o.calls.at(0) == 1);
    CHECK(o.errors[0] == std::error_code{});
    CHECK(worker.reopens() == 1);
    CHECK(slurp(path) == s);
    // Full again, and closed while it waits: the line hears ENOSPC.
    inj.set_rate(sys_call::writev, 1.0, {fault::enospc});
    std::string t = line(1);
    w->write(t, o.cb(t));
    l.run_until_idle();
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!worker.waiting_for_space() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(worker.waiting_for_space());
    worker.close();
    l.run();
    REQUIRE(o.calls.at(1) == 1);
    CHECK(code_name(o.errors[1]) == "ENOSPC");
    CHECK(worker.space_waits() == 2);
    CHECK(slurp(path) == s);
  }
}
