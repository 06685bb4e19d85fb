// writable: consecutive writes of one size whose callbacks are the same
// function (or all empty) share one request (detail/write_req.h). Sinks still
// see every chunk as written, every callback is called once per write, in
// order, and errors, destroy() and one-at-a-time sinks split runs as needed.
#include "support/printers.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/fs/write_stream.h"
#include "sluice/base/function.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/sink.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/writable.h"
#include "support/recording_sink.h"
#include "support/recording_source.h"

using namespace sluice;
using namespace std::string_view_literals;

namespace {

// A sink that logs each writev as its chunks and its runs (the chunks that
// share a request), and completes each call at once or when told to, with
// an error after `landed` chunks if asked.
struct run_sink : sink {
  explicit run_sink(bool coalesce) : sink({.writev = true, .coalesce = coalesce}) {}
  // Takes writev back after the stream was built: the stream hears it
  // (sink::set_caps()).
  void writev_off() { set_caps({.coalesce = caps().coalesce}); }
  std::vector<std::size_t> batch_chunks, batch_runs;  // per writev
  std::vector<std::string> single_writes;
  std::string bytes;
  std::optional<write_done> pending;
  bool sync = true;
  std::error_code fail_with;
  std::size_t landed = 0;

  void write(std::string_view chunk, write_done done) override {
    single_writes.emplace_back(chunk);
    bytes.append(chunk);
    finish(done);
  }
  void writev(const write_batch& batch, write_done done) override {
    std::size_t chunks = 0, runs = 0;
    for (std::string_view c : batch) {
      bytes.append(c);
      ++chunks;
    }
    for (auto it = batch.begin(); it != batch.end(); it.next_run()) ++runs;
    CHECK(chunks == batch.size());
    batch_chunks.push_back(chunks);
    batch_runs.push_back(runs);
    finish(done);
  }

  void finish(write_done done) {
    if (sync)
      done(fail_with, landed);
    else
      pending.emplace(done);
  }
  void complete() {
    REQUIRE(pending.has_value());
    const write_done d = *pending;
    pending.reset();
    d(fail_with, landed);
  }
};

struct fixture {
  loop l;
  run_sink* sink = nullptr;
  std::optional<writable> w;
  std::string events;
  explicit fixture(writable_options o = {}, bool coalesce = true) {
    auto s = std::make_unique<run_sink>(coalesce);
    sink = s.get();
    o.event_loop = &l;
    w.emplace(std::move(s), o);
    w->on(event::drain, [this] { events += "drain;"; });
    w->on(event::error, [this](std::error_code ec) { events += "error " + code_name(ec) + ";"; });
    w->on(event::close, [this] { events += "close;"; });
  }
};

// The callbacks' log: each call appends its tag, or "!" and its tag for an
// error. Tags are pointers to one string each, so that the callbacks of one
// tag are the same function (a lambda capturing only pointers).
const char* const A = "A";
const char* const B = "B";
const char* const F = "F";
struct calls {
  std::string log;
  write_cb tag(const char* t) {
    return [this, t](std::error_code ec) {
      if (ec) log += '!';
      log += t;
    };
  }
};

}  // namespace

TEST_CASE("same_target: the same function pointer, or one lambda with the same captures") {
  using cb_t = inline_function<void(std::error_code), 16>;
  int x = 0, y = 0;
  auto make = [](int* p) -> cb_t { return [p](std::error_code) { ++*p; }; };
  CHECK(make(&x).same_target(make(&x)));
  CHECK_FALSE(make(&x).same_target(make(&y)));  // other captures
  CHECK(cb_t{}.same_target(cb_t{}));            // both empty
  CHECK_FALSE(make(&x).same_target(cb_t{}));
  cb_t other = [&x](std::error_code) { ++x; };  // another lambda, the same capture
  CHECK_FALSE(make(&x).same_target(other));
  void (*fp)(std::error_code) = [](std::error_code) {};
  CHECK(cb_t(fp).same_target(cb_t(fp)));
  // A target that is not trivially copyable is never matched, even with itself.
  auto keep = std::make_shared<int>(1);
  cb_t owning = [keep](std::error_code) {};
  CHECK_FALSE(owning.same_target(owning));
  CHECK_FALSE(owning.copyable());
  CHECK(make(&x).copyable());
}

TEST_CASE("call_copy calls a copy: a mutable lambda's state is each copy's own") {
  int total = 0;
  inline_function<void(std::error_code), 16> f = [n = 0, &total](std::error_code) mutable { total += ++n; };
  f.call_copy({});
  f.call_copy({});
  CHECK(total == 2);  // each copy counted from 0
  f({});
  f({});
  CHECK(total == 5);  // the original: 1, then 2
}

TEST_CASE("1,000 writes with the same callback: one request, 1,000 chunks to the sink, 1,000 calls in order") {
  fixture f;
  int called = 0;
  std::string expected;
  // One callback for all: the sink's bytes say the chunks kept their order,
  // the count that each write was called back once.
  auto cb = [&called](std::error_code ec) {
    CHECK_FALSE(ec);
    ++called;
  };
  f.l.set_immediate([&] {
    for (int i = 0; i < 1000; ++i) {
      char chunk[8];
      std::snprintf(chunk, sizeof chunk, "%06d\n", i);
      expected.append(chunk, 7);
      f.w->write(std::string_view(chunk, 7), cb);
    }
    CHECK(f.w->writable_length() == 7000);
  });
  f.l.run_until_idle();
  CHECK(called == 1000);
  CHECK(f.sink->bytes == expected);
  REQUIRE(f.sink->batch_chunks.size() == 1);
  CHECK(f.sink->batch_chunks[0] == 1000);
  CHECK(f.sink->batch_runs[0] == 1);  // merged: one request for the turn
  CHECK(f.w->writable_length() == 0);
}

TEST_CASE("call_n calls n - 1 fresh copies of a mutable lambda, then the lambda itself") {
  int total = 0;
  inline_function<void(std::error_code), 16> f = [n = 0, &total](std::error_code) mutable { total += ++n; };
  f.call_n(3, {});
  CHECK(total == 3);  // each call counted from 0: the copies' 1 and 1, the original's 1
  f({});
  CHECK(total == 5);  // the original kept its own count: 2
  f.call_n(1, {});
  CHECK(total == 8);
}

TEST_CASE("one callback passed by reference to many writes: one run, each write called back once, in order") {
  fixture f;
  calls c;
  const write_cb a = c.tag(A), b = c.tag(B), none{};
  f.l.set_immediate([&] {
    for (int i = 0; i < 3; ++i) f.w->write("xx"sv, a);
    f.w->write("xx"sv, b);
    f.w->write("xx"sv, a);
    f.w->write("xx"sv, none);  // empty, by reference: no callback
    f.w->write("yyy"sv, a);
  });
  f.l.run_until_idle();
  CHECK(c.log == "AAABAA");
  CHECK(f.sink->bytes == "xxxxxxxxxxxxyyy");
  REQUIRE(f.sink->batch_chunks.size() == 1);
  CHECK(f.sink->batch_chunks[0] == 7);
  // AAA | B | A | - | yyy: the caller's callbacks are copied, never taken.
  CHECK(f.sink->batch_runs[0] == 5);
  CHECK(a);
  CHECK(b);
  a({});  // still the caller's to call
  CHECK(c.log == "AAABAAA");
}

TEST_CASE("a callback by reference after end() hears ERR_STREAM_WRITE_AFTER_END once, on a later tick") {
  fixture f;
  calls c;
  const write_cb a = c.tag(A);
  f.w->end();
  CHECK_FALSE(f.w->write("xx"sv, a));
  CHECK(c.log.empty());
  f.l.run_until_idle();
  CHECK(c.log == "!A");
}

TEST_CASE("a callback by reference that owns state is refused with ERR_INVALID_ARG_TYPE, and nothing is written") {
  fixture f;
  auto keep = std::make_shared<int>(0);
  const write_cb owning = [keep](std::error_code) { ++*keep; };
  REQUIRE_FALSE(owning.copyable());
  f.l.set_immediate([&] {
    try {
      f.w->write("xx"sv, owning);
      FAIL("write() did not throw");
    } catch (const stream_error& e) {
      CHECK(e.code() == make_error_code(errc::invalid_arg_type));
    }
  });
  f.l.run_until_idle();
  CHECK(f.sink->bytes.empty());
  CHECK(f.w->writable_length() == 0);
  CHECK(*keep == 0);
}

TEST_CASE("interleaved callbacks: runs break where the callback or the size changes, and calls keep write order") {
  fixture f;
  calls c;
  f.l.set_immediate([&] {
    // A A A B B A - - A, then a longer chunk with A, then A again.
    for (const char* t : {A, A, A, B, B, A}) f.w->write("xx"sv, c.tag(t));
    f.w->write("xx"sv);
    f.w->write("xx"sv);
    f.w->write("xx"sv, c.tag(A));
    f.w->write("yyy"sv, c.tag(A));
    f.w->write("xx"sv, c.tag(A));
  });
  f.l.run_until_idle();
  CHECK(c.log == "AAABBAAAA");
  CHECK(f.sink->bytes == "xxxxxxxxxxxxxxxxxxyyyxx");
  REQUIRE(f.sink->batch_chunks.size() == 1);
  CHECK(f.sink->batch_chunks[0] == 11);
  // AAA | BB | A | -- | A | yyy | xx
  CHECK(f.sink->batch_runs[0] == 7);
}

TEST_CASE("a mutable callback given to many writes is called once per write, each copy fresh") {
  fixture f;
  struct seen {
    int calls = 0, bad = 0;
  } st;
  // 16 bytes with no padding: stored inline, trivially copyable.
  auto once = [s = &st, n = std::int64_t{0}](std::error_code) mutable {
    if (++n != 1) ++s->bad;  // each write's copy is called once
    ++s->calls;
  };
  f.l.set_immediate([&] {
    for (int i = 0; i < 50; ++i) f.w->write("abc"sv, once);
  });
  f.l.run_until_idle();
  CHECK(st.calls == 50);
  CHECK(st.bad == 0);
  CHECK(f.sink->batch_runs.at(0) == 1);
}

TEST_CASE("high-water mark and 'drain' count merged writes byte by byte") {
  fixture f({.high_water_mark = 100});
  int called = 0;
  auto cb = [&called](std::error_code) { ++called; };
  std::vector<bool> returns;
  f.sink->sync = false;
  f.l.set_immediate([&] {
    for (int i = 0; i < 30; ++i) returns.push_back(f.w->write("0123456789"sv, cb));
    CHECK(f.w->writable_length() == 300);
  });
  f.l.run_until_idle();
  REQUIRE(returns.size() == 30);
  for (int i = 0; i < 30; ++i) CHECK(returns[i] == (i < 9));  // 100 bytes reached on the 10th write
  CHECK(f.w->writable_need_drain());
  f.sink->complete();
  f.l.run_until_idle();
  CHECK(called == 30);
  CHECK(f.events == "drain;");
  CHECK(f.w->writable_length() == 0);
}

TEST_CASE("a writev that fails inside a run: the writes that landed hear success, each of the others the error") {
  fixture f;
  calls c;
  f.sink->fail_with = std::make_error_code(std::errc::no_space_on_device);
  f.sink->landed = 3;
  SUBCASE("sync sink") {}
  SUBCASE("async sink") { f.sink->sync = false; }
  f.l.set_immediate([&] {
    for (int i = 0; i < 5; ++i) f.w->write("line\n"sv, c.tag(A));
    for (int i = 0; i < 3; ++i) f.w->write("line\n"sv, c.tag(B));
  });
  f.l.run_until_idle();
  if (f.sink->pending) f.sink->complete();
  f.l.run_until_idle();
  CHECK(c.log == "AAA!A!A!B!B!B");
  CHECK(f.events == "error ENOSPC;close;");
}

TEST_CASE("a writev that fails whole calls every merged write's callback with the error") {
  fixture f;
  int failed = 0, ok = 0;
  auto cb = [&](std::error_code ec) { ++(ec ? failed : ok); };
  f.sink->fail_with = std::make_error_code(std::errc::broken_pipe);
  f.l.set_immediate([&] {
    for (int i = 0; i < 200; ++i) f.w->write("abcdef"sv, cb);
  });
  f.l.run_until_idle();
  CHECK(failed == 200);
  CHECK(ok == 0);
}

TEST_CASE("destroy() with merged writes buffered calls each one back with ERR_STREAM_DESTROYED") {
  fixture f({}, false);
  calls c;
  f.sink->sync = false;
  f.l.set_immediate([&] {
    f.w->write("first"sv, c.tag(F));  // in flight
    for (int i = 0; i < 4; ++i) f.w->write("more"sv, c.tag(A));
    f.w->write("more"sv);
    for (int i = 0; i < 2; ++i) f.w->write("more"sv, c.tag(A));
    f.w->destroy();
  });
  f.l.run_until_idle();
  CHECK(c.log.empty());  // the buffered writes wait for the one in flight (Node: errorBuffer returns while writing)
  f.sink->complete();
  f.l.run_until_idle();
  // The write in flight landed; every buffered one hears that the stream is gone.
  CHECK(c.log == "F!A!A!A!A!A!A");
  CHECK(f.sink->bytes == "first");
}

TEST_CASE("a sink without writev gets a run's chunks one write at a time") {
  fixture f;
  calls c;
  f.sink->writev_off();
  f.l.set_immediate([&] {
    for (int i = 0; i < 4; ++i) f.w->write("ab"sv, c.tag(A));
    f.w->write("ab"sv, c.tag(B));
  });
  f.l.run_until_idle();
  CHECK(c.log == "AAAAB");
  CHECK(f.sink->single_writes == std::vector<std::string>{"ab", "ab", "ab", "ab", "ab"});
  CHECK(f.sink->batch_chunks.empty());
}

TEST_CASE("cork() and uncork() batch merged writes into one writev") {
  bool coalesce = true;
  SUBCASE("a sink that coalesces") {}
  // No sink call in flight and no coalescing: no run is open for write()'s
  // inline path, and each corked chunk joins the request before it.
  SUBCASE("a sink that does not") { coalesce = false; }
  fixture f({}, coalesce);
  int called = 0;
  auto cb = [&called](std::error_code) { ++called; };
  f.l.set_immediate([&] {
    f.w->cork();
    for (int i = 0; i < 10; ++i) f.w->write("zz"sv, cb);
    f.w->uncork();
  });
  f.l.run_until_idle();
  CHECK(called == 10);
  REQUIRE(f.sink->batch_chunks.size() == 1);
  CHECK(f.sink->batch_chunks[0] == 10);
  CHECK(f.sink->batch_runs[0] == 1);
}

TEST_CASE("merged writes over a slow non-blocking pipe: partial writes inside runs, every byte in order, every callback once") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
  loop l;
  int called = 0, failed = 0;
  auto cb = [&called, &failed](std::error_code ec) { ++(ec ? failed : called); };
  std::string expected;
  {
    auto w = make_fd_writable(fds[1], true, {.event_loop = &l});
    l.set_immediate([&] {
      for (int i = 0; i < 20000; ++i) {
        char chunk[57];
        std::snprintf(chunk, sizeof chunk, "%055d\n", i);
        expected.append(chunk, 56);
        w->write(std::string_view(chunk, 56), cb);
      }
      w->end();
    });
    std::string received;
    int rounds = 0;
    while (received.size() < 20000 * 56 && rounds < 100000) {
      ++rounds;
      l.run_until_idle();
      char buf[5000];  // a slow reader, never on a chunk boundary
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) received.append(buf, static_cast<std::size_t>(n));
      l.run_once(std::chrono::milliseconds(0));
    }
    l.run_until_idle();
    CHECK(rounds > 10);
    CHECK(received.size() == expected.size());
    CHECK(received == expected);
  }
  ::close(fds[0]);
  CHECK(called == 20000);
  CHECK(failed == 0);
}

// ---- The open run is closed wherever write() stops buffering inline: write()
// then tests only the run's key (writable.h, runs_allowed()).

TEST_CASE("end() during an open run: a later write fails with ERR_STREAM_WRITE_AFTER_END, its callback called once") {
  fixture f;
  calls c;
  const write_cb a = c.tag(A);
  std::vector<bool> returns;
  f.l.set_immediate([&] {
    for (int i = 0; i < 3; ++i) returns.push_back(f.w->write("xx"sv, a));  // held for the turn: a run
    f.w->end();
    returns.push_back(f.w->write("xx"sv, a));             // by reference
    returns.push_back(f.w->write("xx"sv, c.tag(B)));      // by value
    returns.push_back(f.w->write("xx"sv));                // no callback
  });
  f.l.run_until_idle();
  CHECK(returns == std::vector<bool>{true, true, true, false, false, false});
  // The first refused write's callback was queued before destroy() (by the
  // write after end) handed the held writes to the sink, whose callbacks
  // come on the tick after.
  CHECK(c.log == "!AAAA!B");
  CHECK(f.sink->bytes == "xxxxxx");
  CHECK(f.events == "error ERR_STREAM_WRITE_AFTER_END;close;");
}

TEST_CASE("destroy() during a coalescing run: a later write fails with ERR_STREAM_DESTROYED, its callback called once") {
  fixture f;
  calls c;
  const write_cb a = c.tag(A);
  std::vector<bool> returns;
  f.l.set_immediate([&] {
    for (int i = 0; i < 3; ++i) returns.push_back(f.w->write("xx"sv, a));
    f.w->write("xx"sv);
    f.w->destroy();
    returns.push_back(f.w->write("xx"sv, a));
    returns.push_back(f.w->write("xx"sv));
  });
  f.l.run_until_idle();
  CHECK(returns == std::vector<bool>{true, true, true, false, false});
  // The held writes went to the sink before it was destroyed (Node had
  // handed them to _write already); the one after destroy() did not.
  CHECK(c.log == "AAA!A");
  CHECK(f.sink->bytes == "xxxxxxxx");
  CHECK(f.events == "close;");
}

TEST_CASE("an error while a run is open: later writes return false, every callback is called once with the error") {
  fixture f({.auto_destroy = false}, false);
  calls c;
  const write_cb a = c.tag(A);
  f.sink->sync = false;
  std::vector<bool> returns;
  f.l.set_immediate([&] {
    f.w->write("first"sv, c.tag(F));  // in flight
    for (int i = 0; i < 3; ++i) returns.push_back(f.w->write("xx"sv, a));  // buffered behind it: a run
  });
  f.l.run_until_idle();
  f.sink->fail_with = std::make_error_code(std::errc::broken_pipe);
  f.sink->complete();  // the stream errors, and is not destroyed
  f.l.run_until_idle();
  CHECK(c.log == "!F!A!A!A");
  REQUIRE(f.w->errored());
  CHECK_FALSE(f.w->destroyed());
  // Node: an errored stream still buffers a write, and write() returns false.
  returns.push_back(f.w->write("xx"sv, a));
  returns.push_back(f.w->write("xx"sv, a));
  returns.push_back(f.w->write("xx"sv));
  CHECK(returns == std::vector<bool>{true, true, true, false, false, false});
  f.w->destroy();
  f.l.run_until_idle();
  CHECK(c.log == "!F!A!A!A!A!A");
  CHECK(f.w->writable_length() == 0);
}

TEST_CASE("flush_held() and the end of the turn close the run: later writes start another, every callback once") {
  fixture f;
  calls c;
  const write_cb a = c.tag(A);
  f.l.set_immediate([&] {
    for (int i = 0; i < 3; ++i) f.w->write("xx"sv, a);
    f.w->flush_held();  // the sink took them (synchronously)
    for (int i = 0; i < 2; ++i) f.w->write("xx"sv, a);
  });
  f.l.run_until_idle();
  f.l.set_immediate([&] {
    for (int i = 0; i < 2; ++i) f.w->write("xx"sv, a);
  });
  f.l.run_until_idle();
  CHECK(c.log == "AAAAAAA");
  CHECK(f.sink->batch_chunks == std::vector<std::size_t>{3, 2, 2});
  CHECK(f.sink->batch_runs == std::vector<std::size_t>{1, 1, 1});
}

TEST_CASE("print() between writes of its size joins their run, and the writes after it join too") {
  fixture f;
  f.l.set_immediate([&] {
    f.w->write("ab\n"sv);
    f.w->write("ab\n"sv);
    f.w->print("{}\n", "cd");
    f.w->write("ef\n"sv);
    f.w->print("{}\n", "longer");  // another size: a request of its own
    f.w->write("gh\n"sv);
  });
  f.l.run_until_idle();
  CHECK(f.sink->bytes == "ab\nab\ncd\nef\nlonger\ngh\n");
  REQUIRE(f.sink->batch_chunks.size() == 1);
  CHECK(f.sink->batch_chunks[0] == 6);
  CHECK(f.sink->batch_runs[0] == 3);
}

TEST_CASE("destroy() while a sink call is in flight and a run is open: a later write fails, its callback called once") {
  fixture f({}, false);  // no coalescing: the run is open because a call is in flight
  calls c;
  const write_cb a = c.tag(A);
  f.sink->sync = false;
  std::vector<bool> returns;
  f.l.set_immediate([&] {
    f.w->write("first"sv, c.tag(F));  // in flight
    for (int i = 0; i < 3; ++i) returns.push_back(f.w->write("xx"sv, a));
    f.w->destroy();
    returns.push_back(f.w->write("xx"sv, a));  // the run's key, but the stream is gone
    returns.push_back(f.w->write("xx"sv));
  });
  f.l.run_until_idle();
  CHECK(returns == std::vector<bool>{true, true, true, false, false});
  CHECK(c.log == "!A");  // the refused write; the buffered ones wait for the call in flight
  f.sink->complete();
  f.l.run_until_idle();
  CHECK(c.log == "!AF!A!A!A");
  CHECK(f.sink->bytes == "first");
  CHECK(f.w->writable_length() == 0);
}

TEST_CASE("a duplex's readable-side error while its writable side holds an open run: later writes return false") {
  test::trace log;
  loop l;
  auto snk = std::make_unique<test::recording_sink>(log);  // completes when told: the first write stays in flight
  test::recording_sink* sink = snk.get();
  duplex_options o;
  o.auto_destroy = false;  // errored, not destroyed
  o.event_loop = &l;
  duplex d(std::make_unique<test::recording_source>(log), std::move(snk), o);
  std::string errors;
  d.on(event::error, [&errors](std::error_code ec) { errors += code_name(ec) + ";"; });
  int failed = 0, ok = 0;
  const write_cb cb = [&failed, &ok](std::error_code ec) { ++(ec ? failed : ok); };
  CHECK(d.write("first"sv, cb));
  CHECK(d.write("bb"sv, cb));  // buffered behind the call in flight: a run
  CHECK(d.write("bb"sv, cb));
  d.push_eof();
  d.push("late");  // ERR_STREAM_PUSH_AFTER_EOF: both sides error
  l.run_until_idle();
  REQUIRE(d.writable::errored());
  CHECK_FALSE(d.writable::destroyed());
  // Node: writeOrBuffer() returns false once the stream has errored.
  CHECK_FALSE(d.write("bb"sv, cb));
  CHECK_FALSE(d.write("bb"sv));
  d.destroy();
  sink->complete();
  l.run_until_idle();
  CHECK(ok + failed == 4);  // every write with a callback, once
  CHECK(errors == "ERR_STREAM_PUSH_AFTER_EOF;");
}
