// file_worker, worker_sink and flush_sync: a thread of its own writes the
// file; completions come back to each producer's loop, in order.
#include "support/printers.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/fs/flush_sync.h"
#include "sluice/fs/write_stream.h"
#include "sluice/log_file/log_worker.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/stream/writable.h"
#include "support/alloc_counter.h"
#include "support/must_call.h"
#include "support/pipe_fds.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"
#include "support/writable_events.h"

using namespace sluice;
using namespace std::string_view_literals;
using sluice::test::must_call;
using sluice::test::temp_dir;
using sluice::test::slurp;
using sluice::test::pipe_fds;
using sluice::test::events;
using sluice::test::on;
namespace fs = std::filesystem;

namespace {



// Polls `done` for up to ten seconds.
template <class Pred>
bool eventually(Pred done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10) * sluice::test::time_scale();
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Line n of producer k: its length varies, and every byte depends on (k, n),
// so a torn or interleaved line cannot pass for a good one.
std::size_t make_line(char* buf, std::size_t size, int k, int n) {
  const int pad = (n * 7 + k * 3) % 41;
  int len = std::snprintf(buf, size, "p%d %07d ", k, n);
  for (int i = 0; i < pad; ++i) buf[len++] = static_cast<char>('a' + (n + i + k) % 26);
  buf[len++] = '\n';
  return static_cast<std::size_t>(len);
}

// "p<k> <n> ...": k and n, or false.
bool parse_line(std::string_view line, int& k, int& n) {
  auto number = [&line](std::size_t& i, int& out) {
    const std::size_t start = i;
    out = 0;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') out = out * 10 + (line[i++] - '0');
    return i > start && i - start < 9;
  };
  std::size_t i = 1;
  if (line.empty() || line[0] != 'p' || !number(i, k)) return false;
  if (i >= line.size() || line[i++] != ' ') return false;
  return number(i, n);
}

// Checks a file (or pipe transcript) of lines from `producers` producers of
// `lines` lines each: every line well formed, once, in order per producer.
void check_lines(const std::string& text, int producers, int lines) {
  std::vector<int> next(static_cast<std::size_t>(producers), 0);
  std::size_t pos = 0, bad = 0, out_of_order = 0, count = 0;
  char expect[128];
  while (pos < text.size()) {
    const std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) {
      ++bad;
      break;
    }
    const std::string_view line(text.data() + pos, eol + 1 - pos);
    pos = eol + 1;
    ++count;
    int k = -1, n = -1;
    if (!parse_line(line, k, n) || k >= producers || n >= lines) {
      ++bad;
      continue;
    }
    if (line != std::string_view(expect, make_line(expect, sizeof expect, k, n))) {
      ++bad;
      continue;
    }
    if (n != next[static_cast<std::size_t>(k)]) ++out_of_order;
    next[static_cast<std::size_t>(k)] = n + 1;
  }
  CHECK(bad == 0);
  CHECK(out_of_order == 0);
  CHECK(count == static_cast<std::size_t>(producers) * static_cast<std::size_t>(lines));
  for (int k = 0; k < producers; ++k) CHECK(next[static_cast<std::size_t>(k)] == lines);
}

// One producer thread's work: `lines` lines through its own writable on its
// own loop, with backpressure, a flush_sync now and then, and a callback on
// every write that checks the order.
struct producer_result {
  int called = 0;
  bool in_order = true;
  bool on_thread = true;
  bool finished = false;
  std::error_code error;
  std::error_code flush_error;
};

void produce(file_worker& worker, int k, int lines, int flush_every, writable_options options,
             producer_result& r) {
  const auto me = std::this_thread::get_id();
  struct counter {
    producer_result* r;
    std::thread::id me;
  } c{&r, me};
  auto w = make_worker_writable(worker, options);
  int next = 0;
  bool ended = false;
  std::function<void()> write_some = [&] {
    char buf[128];
    while (next < lines) {
      const int n = next++;
      const bool more = w->write(std::string_view(buf, make_line(buf, sizeof buf, k, n)),
                                 [&c, n](std::error_code ec) {
                                   if (ec && !c.r->error) c.r->error = ec;
                                   if (n != c.r->called) c.r->in_order = false;
                                   if (std::this_thread::get_id() != c.me) c.r->on_thread = false;
                                   ++c.r->called;
                                 });
      if (flush_every > 0 && n % flush_every == flush_every - 1) {
        if (const std::error_code ec = flush_sync(*w); ec && !r.flush_error) r.flush_error = ec;
      }
      if (!more) return;
    }
    if (!ended) {
      ended = true;
      w->end();
    }
  };
  w->on(event::drain, [&] { write_some(); });
  w->on(event::finish, [&] { r.finished = true; });
  write_some();
  w->event_loop().run();
}

}  // namespace

TEST_CASE("writes reach the file, and their callbacks run on the producer's loop, in order") {
  temp_dir d;
  loop l;
  std::deque<must_call> calls;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  const auto me = std::this_thread::get_id();
  std::vector<int> order;
  bool on_thread = true;
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    expected += line;
    w->write(line, calls.emplace_back(1).cb([&, i](std::error_code) {
      order.push_back(i);
      if (std::this_thread::get_id() != me) on_thread = false;
    }));
  }
  CHECK(order.empty());  // nothing is called back before the loop runs
  l.run();               // returns once the worker is done: the batch held the loop
  REQUIRE(order.size() == 50);
  bool in_order = true;
  for (int i = 0; i < 50; ++i) in_order = in_order && order[static_cast<std::size_t>(i)] == i;
  CHECK(in_order);
  CHECK(on_thread);
  for (auto& m : calls) CHECK_FALSE(m.error());
  CHECK(slurp(d.file("a.log")) == expected);
  // One turn's writes: one batch, one writev.
  CHECK(worker.batches() == 1);
  CHECK(worker.syscalls() == 1);
  CHECK(worker.bytes_written() == expected.size());
  CHECK_FALSE(l.alive());
}

TEST_CASE("'drain', 'finish' and 'close' come back on the producer's loop") {
  temp_dir d;
  loop l;
  events ev;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 64));
  ev.attach(*w);
  w->once(event::drain, [&] { w->end(); });
  std::string expected;
  bool last = true;
  for (int i = 0; i < 10; ++i) {
    const std::string line = "twenty bytes line " + std::to_string(i) + "\n";
    expected += line;
    last = w->write(line);
  }
  CHECK_FALSE(last);  // past the high-water mark
  l.run();
  CHECK(ev.str() == "drain; finish; close");
  CHECK_FALSE(ev.off_thread);
  CHECK(slurp(d.file("a.log")) == expected);
}

TEST_CASE("a worker writable's default high-water mark is worker_high_water_mark, unless the options set one") {
  temp_dir d;
  loop l;
  file_worker worker(d.file("a.log"));
  writable_options defaults;
  defaults.event_loop = &l;
  auto w = make_worker_writable(worker, defaults);
  CHECK(w->writable_high_water_mark() == worker_high_water_mark);
  auto set = make_worker_writable(worker, on(l, 100));
  CHECK(set->writable_high_water_mark() == 100);
  writable_options objects = defaults;
  objects.object_mode = true;
  auto o = make_worker_writable(worker, objects);
  CHECK(o->writable_high_water_mark() == 16);
  const std::string line(100 * 1024, 'x');
  CHECK(w->write(line));  // 100 KiB: far below the mark
  w->end();
  set->end();
  o->end();
  l.run();
  CHECK(slurp(d.file("a.log")).size() == line.size());
}

TEST_CASE("writes of later turns are written as later batches, in order") {
  temp_dir d;
  loop l;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  std::string expected;
  int turns = 0;
  std::function<void()> turn = [&] {
    for (int i = 0; i < 10; ++i) {
      const std::string line = "turn " + std::to_string(turns) + " line " + std::to_string(i) + "\n";
      expected += line;
      w->write(line);
    }
    if (++turns < 20) l.set_immediate([&] { turn(); });
  };
  turn();
  l.run();
  CHECK(slurp(d.file("a.log")) == expected);
  CHECK(worker.batches() >= 2);
  CHECK(worker.batches() <= 20);
}

TEST_CASE("flush_sync returns once the bytes are in the file and the callbacks have run") {
  temp_dir d;
  loop l;
  must_call a, b, c;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  std::string order;
  w->write("a\n"sv, a.cb([&](std::error_code) { order += 'a'; }));
  w->write("b\n"sv, b.cb([&](std::error_code) { order += 'b'; }));
  w->write("c\n"sv, c.cb([&](std::error_code) { order += 'c'; }));
  CHECK(slurp(d.file("a.log")).empty());  // held for the end of the turn
  CHECK(flush_sync(*w) == std::error_code{});
  CHECK(slurp(d.file("a.log")) == "a\nb\nc\n");
  CHECK(order == "abc");
  CHECK_FALSE(a.error());
  CHECK(w->writable_length() == 0);
  CHECK(worker.batches() == 1);
  l.run();  // the coalescing tick finds nothing; no callback runs twice
  CHECK(order == "abc");
  CHECK_FALSE(l.alive());
}

TEST_CASE("flush_sync also writes what is buffered behind the batch in flight") {
  temp_dir d;
  loop l;
  must_call a, b, c;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  std::string order;
  w->write("a\n"sv, a.cb([&](std::error_code) { order += 'a'; }));
  l.run_until_idle();  // the end of the turn: "a" goes to the worker
  w->write("b\n"sv, b.cb([&](std::error_code) { order += 'b'; }));
  w->write("c\n"sv, c.cb([&](std::error_code) { order += 'c'; }));
  CHECK(flush_sync(*w) == std::error_code{});
  CHECK(slurp(d.file("a.log")) == "a\nb\nc\n");
  CHECK(order == "abc");
  l.run();
  CHECK(order == "abc");
  CHECK_FALSE(l.alive());
}

TEST_CASE("flush_sync completes a batch whose completion was already posted; the posted task then does nothing") {
  temp_dir d;
  loop l;
  must_call a, b;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  std::string order;
  w->write("a\n"sv, a.cb([&](std::error_code) { order += 'a'; }));
  l.run_until_idle();
  REQUIRE(eventually([&] { return worker.batches() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past its post(), almost always
  CHECK(flush_sync(*w) == std::error_code{});
  CHECK(order == "a");
  w->write("b\n"sv, b.cb([&](std::error_code) { order += 'b'; }));
  l.run();
  CHECK(order == "ab");
  CHECK(slurp(d.file("a.log")) == "a\nb\n");
  CHECK_FALSE(l.alive());
}

TEST_CASE("flush_sync after an error returns it: ENOSPC from /dev/full") {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  loop l;
  must_call a, b, later;
  events ev;
  file_worker worker(fd, true);
  auto w = make_worker_writable(worker, on(l, 16384));
  ev.attach(*w);
  w->write("a\n"sv, a.cb());
  w->write("b\n"sv, b.cb());
  const std::error_code ec = flush_sync(*w);
  CHECK(ec == std::errc::no_space_on_device);
  CHECK(ec.category() == std::system_category());
  CHECK(a.error() == std::errc::no_space_on_device);
  CHECK(b.error() == std::errc::no_space_on_device);
  l.run();
  CHECK(ev.str() == "error ENOSPC; close");
  CHECK(flush_sync(*w) == std::errc::no_space_on_device);  // the stream's first error, still
  w->write("c\n"sv, later.cb());
  l.run();
  CHECK(later.error() == errc::destroyed);
  CHECK_FALSE(l.alive());
}

TEST_CASE("flush_sync with nothing pending returns at once, without allocating") {
  temp_dir d;
  loop l;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t before = test::allocation_count();
  const std::error_code ec = flush_sync(*w);
  const std::size_t after = test::allocation_count();
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(ec == std::error_code{});
  CHECK(after - before == 0);
  CHECK(took < std::chrono::seconds(1));  // a loose bound: CI machines are busy
  CHECK(worker.batches() == 0);
  CHECK_FALSE(l.alive());
}

TEST_CASE("a flush_sync round trip makes no heap allocation") {
  temp_dir d;
  loop l;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  int called = 0;
  const std::string_view line = "2026-11-30T02:21:43Z INFO request id=42 status=200\n";
  auto round_trip = [&] {
    w->write(line, [&called](std::error_code) { ++called; });
    return flush_sync(*w);
  };
  for (int i = 0; i < 100; ++i) REQUIRE_FALSE(round_trip());  // warm-up: the pool, the arena
  bool all_ok = true;
  const std::size_t before = test::allocation_count();
  for (int i = 0; i < 1000; ++i) all_ok = !round_trip() && all_ok;
  const std::size_t after = test::allocation_count();
  CHECK(all_ok);
  CHECK(after - before == 0);
  CHECK(called == 1100);
  CHECK(slurp(d.file("a.log")).size() == 1100 * line.size());
  l.run();
  CHECK_FALSE(l.alive());
}

TEST_CASE("flush_sync from a write callback of the same stream waits for the bytes") {
  temp_dir d;
  loop l;
  must_call a, b, c;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  std::string order, seen;
  std::error_code inner;
  w->write("a\n"sv, a.cb([&](std::error_code) {
    order += 'a';
    w->write("c\n"sv, c.cb([&](std::error_code) { order += 'c'; }));
    inner = flush_sync(*w);
    seen = slurp(d.file("a.log"));
  }));
  w->write("b\n"sv, b.cb([&](std::error_code) { order += 'b'; }));
  l.run();
  CHECK(inner == std::error_code{});
  CHECK(seen == "a\nb\nc\n");  // "c" was written before flush_sync returned
  CHECK(order == "abc");       // and its callback still came after "b"'s
  CHECK_FALSE(l.alive());
}

// flush_sync takes the worker's handle: a stream over another sink is a
// compile error, not ERR_METHOD_NOT_IMPLEMENTED at run time (as it was
// when it took any writable and cast its sink).
template <class W>
concept flushable = requires(W& w) { flush_sync(w); };
static_assert(flushable<worker_writable>);
static_assert(!flushable<writable>);
static_assert(!flushable<fd_writable>);

TEST_CASE("destroying the writable with a batch at the worker waits for it; its callbacks hear success") {
  pipe_fds p;
  loop l;
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the worker block on the full pipe
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(p.r, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
  });
  std::string expected;
  {
    std::deque<must_call> calls;
    file_worker worker(p.w);
    auto w = make_worker_writable(worker, on(l, 1 << 20));
    for (int i = 0; i < 64; ++i) {
      const std::string chunk(4096, static_cast<char>('a' + i % 26));
      expected += chunk;
      w->write(chunk, calls.emplace_back(1).cb());
    }
    l.run_until_idle();  // 256 KiB to a 64 KiB pipe: the worker blocks
    w.reset();           // waits for the worker, then pays the callbacks
    for (auto& m : calls) CHECK(m.error() == std::error_code{});  // the bytes landed
    l.run();  // a completion the worker may have posted: it frees what is left
    CHECK_FALSE(l.alive());
    CHECK(worker.close() == std::error_code{});
  }
  p.close_w();
  reader.join();
  CHECK(got == expected);  // the batch was written whole all the same
}

TEST_CASE("destroying the writable after the worker posted its completion frees it when the loop runs") {
  temp_dir d;
  loop l;
  must_call a;
  file_worker worker(d.file("a.log"));
  auto w = make_worker_writable(worker, on(l, 16384));
  w->write("a\n"sv, a.cb());
  l.run_until_idle();
  REQUIRE(eventually([&] { return worker.batches() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past its post(), almost always
  w.reset();
  CHECK(a.error() == std::error_code{});  // written: the worker was done with it
  l.run();  // the posted completion, which frees what the sink left
  CHECK_FALSE(l.alive());
  CHECK(slurp(d.file("a.log")) == "a\n");
}

TEST_CASE("destroying the worker writes what was handed over; later writes fail with EBADF") {
  temp_dir d;
  loop l;
  std::deque<must_call> calls;
  must_call late;
  events ev;
  auto worker = std::make_unique<file_worker>(d.file("a.log"));
  auto w = make_worker_writable(*worker, on(l, 16384));
  ev.attach(*w);
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    expected += line;
    w->write(line, calls.emplace_back(1).cb());
  }
  l.run_until_idle();  // handed over
  worker.reset();      // drains, joins, closes
  CHECK(slurp(d.file("a.log")) == expected);
  l.run();
  for (auto& m : calls) CHECK_FALSE(m.error());
  w->write("late\n"sv, late.cb());
  l.run();
  CHECK(late.error() == std::errc::bad_file_descriptor);
  CHECK(ev.str() == "error EBADF; close");
  CHECK_FALSE(l.alive());
}

// Every fd of the process is taken (RLIMIT_NOFILE lowered, the rest filled
// with dups) while it lives; all given back at the end of its scope. (Under
// UBSan, its vptr checks print false reports meanwhile: they probe memory
// through a pipe of their own, which cannot be made.)
class no_fd_left {
 public:
  no_fd_left() {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &old_) == 0);
    rlimit low = old_;
    low.rlim_cur = std::min<rlim_t>(old_.rlim_cur, 256);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    for (;;) {
      const int fd = ::dup(STDERR_FILENO);
      if (fd < 0) {
        REQUIRE(errno == EMFILE);
        break;
      }
      fds_.push_back(fd);
    }
  }
  ~no_fd_left() {
    for (int fd : fds_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &old_);
  }
  no_fd_left(const no_fd_left&) = delete;
  no_fd_left& operator=(const no_fd_left&) = delete;

 private:
  rlimit old_{};
  std::vector<int> fds_;
};

TEST_CASE("no fd left for the loop's eventfd when the stream is built: the write's callback and 'error' hear EMFILE; "
          "nothing aborts") {
  temp_dir d;
  file_worker worker(d.file("a.log"));
  loop l;  // its eventfd is made as the first worker writable is built
  must_call first, second;
  events ev;
  std::unique_ptr<writable> w;
  {
    no_fd_left full;
    w = make_worker_writable(worker, on(l, 16384));  // cannot make it: the first write says why
    ev.attach(*w);
    w->write("first\n"sv, first.cb());
    l.run();
  }
  CHECK(first.error() == std::errc::too_many_files_open);
  CHECK(ev.str() == "error EMFILE; close");
  w->write("second\n"sv, second.cb());  // after the error: write after destroy
  l.run();
  CHECK(second.error());
  CHECK(slurp(d.file("a.log")).empty());
  CHECK_FALSE(l.alive());
}

TEST_CASE("the loop's eventfd is made as the stream is built: writes after the process ran out of fds still land") {
  temp_dir d;
  file_worker worker(d.file("a.log"));
  loop l;
  auto w = make_worker_writable(worker, on(l, 16384));
  events ev;
  ev.attach(*w);
  must_call first;
  {
    no_fd_left full;  // a server's connections took every fd (sluice-logd under EMFILE)
    w->write("first\n"sv, first.cb());
    l.run();
  }
  CHECK_FALSE(first.error());
  CHECK(ev.str().empty());
  must_call ended;
  w->end(ended.cb());
  l.run();
  CHECK_FALSE(ended.error());
  CHECK(slurp(d.file("a.log")) == "first\n");
  first.check();
  ended.check();
}

TEST_CASE("two producers writing large batches to a slow non-blocking pipe: partial writes never interleave lines") {
  pipe_fds p;
  const int flags = ::fcntl(p.w, F_GETFL);
  REQUIRE(::fcntl(p.w, F_SETFL, flags | O_NONBLOCK) == 0);
  std::string got;
  std::size_t reads = 0;
  std::thread reader([&] {
    char buf[4000];  // small reads: the worker meets a full pipe often
    for (;;) {
      const ssize_t n = ::read(p.r, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
      ++reads;
    }
  });
  constexpr int producers = 2, lines = 20000;
  producer_result results[producers];
  {
    file_worker worker(p.w);
    writable_options big;
    big.high_water_mark = 256 * 1024;  // batches larger than the pipe
    std::vector<std::thread> threads;
    for (int k = 0; k < producers; ++k)
      threads.emplace_back([&, k] { produce(worker, k, lines, 0, big, results[k]); });
    for (auto& t : threads) t.join();
    CHECK(worker.syscalls() > worker.batches());  // the kernel took parts
  }
  p.close_w();
  reader.join();
  for (const auto& r : results) {
    CHECK(r.called == lines);
    CHECK(r.in_order);
    CHECK(r.on_thread);
    CHECK(r.finished);
    CHECK_FALSE(r.error);
  }
  CHECK(reads > 1);
  check_lines(got, producers, lines);
}

TEST_CASE("four producer threads, 100k numbered lines each, one file: every line once, in order per thread, none torn") {
  temp_dir d;
  constexpr int producers = 4, lines = 100000;
  producer_result results[producers];
  {
    file_worker worker(d.file("a.log"), {.mode = file_options::open_mode::append});
    std::vector<std::thread> threads;
    for (int k = 0; k < producers; ++k)
      threads.emplace_back([&, k] { produce(worker, k, lines, 25000, writable_options{}, results[k]); });
    for (auto& t : threads) t.join();
  }
  for (const auto& r : results) {
    CHECK(r.called == lines);
    CHECK(r.in_order);
    CHECK(r.on_thread);
    CHECK(r.finished);
    CHECK_FALSE(r.error);
    CHECK_FALSE(r.flush_error);
  }
  check_lines(slurp(d.file("a.log")), producers, lines);
}

// ---- a log worker: file_worker over a rotating log (log_file/log_worker.h)

namespace {

std::vector<std::string> kept_files(const std::string& path) {  // oldest first
  std::vector<std::string> files;
  int n = 1;
  while (fs::exists(path + "." + std::to_string(n))) ++n;
  for (--n; n >= 1; --n) files.push_back(path + "." + std::to_string(n));
  if (fs::exists(path)) files.push_back(path);
  return files;
}

}  // namespace

TEST_CASE("a log worker rotates between the chunks of a batch: keep N, numbering, no chunk split") {
  temp_dir d;
  const std::string path = d.file("app.log");
  loop l;
  must_call batch(5), e, big;
  log_worker worker(path, log_options{.max_size = 20, .keep = 2});
  CHECK(worker.fd() == -1);
  auto w = make_worker_writable(worker, on(l, 16384));
  // One turn, one batch: the third line does not fit beside the first two.
  for (const char* s : {"0123456789\n", "aaaa\n", "bbbbbbbbbbbbbbb\n", "c\n", "d\n"})
    w->write(std::string_view(s), batch.cb());
  CHECK_FALSE(flush_sync(*w));
  CHECK(worker.batches() == 1);
  CHECK(worker.rotations() == 1);
  CHECK(slurp(path + ".1") == "0123456789\naaaa\n");
  CHECK(slurp(path) == "bbbbbbbbbbbbbbb\nc\nd\n");  // exactly max_size: no rotation yet
  w->write("e\n"sv, e.cb());
  CHECK_FALSE(flush_sync(*w));
  // A chunk larger than max_size goes whole into a fresh file.
  w->write("a line longer than twenty bytes\n"sv, big.cb());
  CHECK_FALSE(flush_sync(*w));
  CHECK(worker.rotations() == 3);
  CHECK(slurp(path) == "a line longer than twenty bytes\n");
  CHECK(slurp(path + ".1") == "e\n");
  CHECK(slurp(path + ".2") == "bbbbbbbbbbbbbbb\nc\nd\n");
  CHECK_FALSE(fs::exists(path + ".3"));  // keep 2: the oldest went
  for (std::size_t i = 0; i < 5; ++i) CHECK_FALSE(batch.error(i));
  CHECK(worker.bytes_written() == 16 + 20 + 2 + 32);
  w->end();
  l.run();
  CHECK_FALSE(worker.close());
  CHECK(worker.fsyncs() == 0);  // fsync never
}

TEST_CASE("four producer threads through a rotating log worker: every line once, in order, none torn, no file past max_size") {
  temp_dir d;
  const std::string path = d.file("app.log");
  constexpr int producers = 4, lines = 20000;
  constexpr std::uint64_t max = 16 * 1024;
  producer_result results[producers];
  std::size_t rotations = 0;
  {
    log_worker worker(path, log_options{.max_size = max, .keep = 10000});
    std::vector<std::thread> threads;
    for (int k = 0; k < producers; ++k)
      threads.emplace_back([&, k] { produce(worker, k, lines, 7000, writable_options{}, results[k]); });
    for (auto& t : threads) t.join();
    CHECK_FALSE(worker.close());
    rotations = worker.rotations();
  }
  for (const auto& r : results) {
    CHECK(r.called == lines);
    CHECK(r.in_order);
    CHECK(r.finished);
    CHECK_FALSE(r.error);
    CHECK_FALSE(r.flush_error);
  }
  const auto files = kept_files(path);
  CHECK(files.size() == rotations + 1);
  CHECK(rotations > 50);
  std::string all;
  std::size_t too_big = 0, unterminated = 0;
  for (const auto& f : files) {
    const std::string text = slurp(f);
    if (text.size() > max) ++too_big;
    if (text.empty() || text.back() != '\n') ++unterminated;
    all += text;
  }
  CHECK(too_big == 0);
  CHECK(unterminated == 0);
  check_lines(all, producers, lines);
}

TEST_CASE("a log worker reopens on request: after a rename, later lines go to the new file; an idle worker is woken") {
  temp_dir d;
  const std::string path = d.file("app.log");
  loop l;
  must_call a, b;
  log_worker worker(path, log_options{});
  auto w = make_worker_writable(worker, on(l, 16384));
  w->write("before\n"sv, a.cb());
  CHECK_FALSE(flush_sync(*w));
  fs::rename(path, path + ".moved");
  worker.request_reopen();  // the worker sleeps: it is woken and reopens at once
  CHECK(eventually([&] { return worker.reopens() == 1; }));
  CHECK(fs::exists(path));
  w->write("after\n"sv, b.cb());
  CHECK_FALSE(flush_sync(*w));
  CHECK(slurp(path + ".moved") == "before\n");
  CHECK(slurp(path) == "after\n");
  w->end();
  l.run();
  CHECK_FALSE(worker.close());
  worker.request_reopen();  // after close: nothing
  CHECK(worker.reopens() == 1);
}

TEST_CASE("a log worker reopened while a producer thread writes: every line once, in order, across the two files") {
  temp_dir d;
  const std::string path = d.file("app.log");
  constexpr int lines = 60000;
  producer_result r;
  {
    log_worker worker(path, log_options{.fsync = log_options::fsync_policy::at_end});
    std::thread producer([&] { produce(worker, 0, lines, 0, writable_options{}, r); });
    REQUIRE(eventually([&] { return worker.bytes_written() > 0; }));
    fs::rename(path, path + ".moved");
    worker.request_reopen();
    producer.join();
    CHECK_FALSE(worker.close());
    CHECK(worker.reopens() == 1);
    // at_end: the old file at the reopen, the new one at close if it got
    // lines (the producer may have written its last before the reopen).
    CHECK(worker.fsyncs() == (fs::file_size(path) > 0 ? 2u : 1u));
  }
  CHECK(r.called == lines);
  CHECK(r.in_order);
  CHECK(r.finished);
  CHECK_FALSE(r.error);
  CHECK(fs::exists(path));
  check_lines(slurp(path + ".moved") + slurp(path), 1, lines);
}

TEST_CASE("a log worker's fsync policies, seen through its counters") {
  temp_dir d;
  const std::string path = d.file("app.log");
  loop l;
  auto write_batches = [&](log_worker& worker, int n) {
    auto w = make_worker_writable(worker, on(l, 16384));
    for (int i = 0; i < n; ++i) {
      w->write("0123456789\n"sv);
      CHECK_FALSE(flush_sync(*w));
    }
    w->end();
    l.run();
  };
  SUBCASE("never") {
    log_worker worker(path, log_options{.max_size = 30, .fsync = log_options::fsync_policy::never});
    write_batches(worker, 6);
    CHECK_FALSE(worker.close());
    CHECK(worker.rotations() == 2);
    CHECK(worker.fsyncs() == 0);
  }
  SUBCASE("at_end: each file once, before it is closed (rotation, reopen, close)") {
    log_worker worker(path, log_options{.max_size = 30, .fsync = log_options::fsync_policy::at_end});
    write_batches(worker, 6);  // 2 rotations
    CHECK(worker.fsyncs() == 2);
    worker.request_reopen();
    CHECK(eventually([&] { return worker.reopens() == 1; }));
    CHECK(worker.fsyncs() == 3);
    worker.request_reopen();  // nothing unsynced: no sync
    CHECK(eventually([&] { return worker.reopens() == 2; }));
    CHECK(worker.fsyncs() == 3);
    write_batches(worker, 1);
    CHECK_FALSE(worker.close());
    CHECK(worker.fsyncs() == 4);
  }
  SUBCASE("every_bytes") {
    log_worker worker(path, log_options{.fsync = log_options::fsync_policy::every_bytes, .fsync_bytes = 30});
    write_batches(worker, 7);  // 11 bytes a batch: synced after the 3rd and the 6th
    CHECK(worker.fsyncs() == 2);
    CHECK_FALSE(worker.close());
    CHECK(worker.fsyncs() == 3);  // the 7th, before the close
  }
  SUBCASE("every_ms: at most the interval after a write, even when idle") {
    log_worker worker(path, log_options{.fsync = log_options::fsync_policy::every_ms,
                                         .fsync_interval = std::chrono::milliseconds(20)});
    const auto start = std::chrono::steady_clock::now();
    write_batches(worker, 1);
    CHECK(eventually([&] { return worker.fsyncs() == 1; }));  // no more writes: the worker woke for it
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    CHECK(worker.fsyncs() == 1);  // nothing new to sync
    CHECK_FALSE(worker.close());
    CHECK(worker.fsyncs() == 1);
  }
}

TEST_CASE("a log worker whose rotation fails: the batch's error, flush_sync returns it, every callback once") {
  temp_dir d;
  const std::string path = d.file("app.log");
  // A directory where app.log.1 must go: rename() fails with EISDIR, as root too.
  REQUIRE(::mkdir((path + ".1").c_str(), 0755) == 0);
  loop l;
  must_call first, batch(4), later;
  events ev;
  log_worker worker(path, log_options{.max_size = 20, .keep = 1});
  auto w = make_worker_writable(worker, on(l, 16384));
  ev.attach(*w);
  w->write("0123456789\n"sv, first.cb());
  CHECK_FALSE(flush_sync(*w));
  for (const char* s : {"aaaa\n", "bbbbbbbbbbbbbbb\n", "c\n", "d\n"}) w->write(std::string_view(s), batch.cb());
  CHECK(flush_sync(*w) == std::errc::is_a_directory);
  // The line before the rotation landed, and its callback says so (issue 10, defect 4).
  CHECK(batch.error(0) == std::error_code{});
  for (std::size_t i = 1; i < 4; ++i) CHECK(batch.error(i) == std::errc::is_a_directory);
  l.run();
  CHECK(ev.str() == "error EISDIR; close");
  CHECK(slurp(path) == "0123456789\naaaa\n");  // the part before the rotation landed
  CHECK(worker.rotations() == 0);
  w->write("more"sv, later.cb());
  l.run();
  CHECK(later.error() == errc::destroyed);
  CHECK_FALSE(worker.close());
}

TEST_CASE("a log worker's reopen that fails while idle is the next batch's error") {
  temp_dir d;
  fs::create_directory(d.path / "sub");
  const std::string path = (d.path / "sub" / "app.log").string();
  loop l;
  must_call a, b;
  events ev;
  log_worker worker(path, log_options{});
  auto w = make_worker_writable(worker, on(l, 16384));
  ev.attach(*w);
  w->write("a\n"sv, a.cb());
  CHECK_FALSE(flush_sync(*w));
  fs::rename(d.path / "sub", d.path / "gone");  // the open fd still works; the path does not
  worker.request_reopen();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  w->write("b\n"sv, b.cb());
  CHECK(flush_sync(*w) == std::errc::no_such_file_or_directory);
  CHECK(b.error() == std::errc::no_such_file_or_directory);
  CHECK(worker.reopens() == 0);
  l.run();
  CHECK(ev.str() == "error ENOENT; close");
  CHECK_FALSE(worker.close());
  CHECK(slurp((d.path / "gone" / "app.log").string()) == "a\n");
}

TEST_CASE("a log worker on /dev/full: ENOSPC to every callback and to flush_sync") {
  loop l;
  must_call a, b;
  std::error_code ec;
  auto worker = log_worker::open("/dev/full", log_options{}, ec);
  REQUIRE(worker);
  events ev;
  auto w = make_worker_writable(*worker, on(l, 16384));
  ev.attach(*w);
  w->write("a\n"sv, a.cb());
  w->write("b\n"sv, b.cb());
  CHECK(flush_sync(*w) == std::errc::no_space_on_device);
  CHECK(a.error() == std::errc::no_space_on_device);
  CHECK(b.error() == std::errc::no_space_on_device);
  l.run();
  CHECK(log_worker::open("/nonexistent/dir/x", log_options{}, ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
}
