// add_abort_signal() and the `signal` option of pipeline() and finished(),
// a std::stop_token as Node v20.20.2's AbortSignal: each case's expected log
// is what the same program prints with Node's stream module
// (`node --expose-internals tests/stream/abort_signal_test.mjs`). Then what Node
// cannot show: request_stop() from another thread, and a stream deleted
// while its token can still be stopped.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/abort_signal.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/pipeline.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/transform.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/named_streams.h"
#include "support/recording_sink.h"

namespace sluice::test {
namespace {

// pipeline_test's named streams, and an abort that logs around request_stop().
struct world : named_streams {
  void abort(std::stop_source& s) {
    log.add("abort");
    s.request_stop();
    log.add("aborted");
  }
};

TEST_CASE("add_abort_signal: an abort after data destroys the readable") {
  world t;
  std::stop_source s;
  auto r = t.make_readable("r");
  add_abort_signal(s.get_token(), *r);
  r->push("a");
  t.loop.run_until_idle();
  t.abort(s);
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_read r; abort; aborted; error r ABORT_ERR; close r");
  CHECK(r->destroyed());
}

TEST_CASE("add_abort_signal: a token stopped already destroys at once") {
  world t;
  std::stop_source s;
  s.request_stop();
  auto r = t.make_readable("r");
  add_abort_signal(s.get_token(), *r);
  t.log.add(std::string("destroyed ") + (r->destroyed() ? "true" : "false"));
  t.loop.run_until_idle();
  CHECK(t.log.str() == "destroyed true; error r ABORT_ERR; close r");
}

TEST_CASE("add_abort_signal: an abort after the end changes nothing") {
  world t;
  std::stop_source s;
  auto r = t.make_readable("r", /*auto_destroy=*/false);
  add_abort_signal(s.get_token(), *r);
  r->resume();
  r->push("a");
  r->push_eof();
  t.loop.run_until_idle();
  s.request_stop();
  t.log.add(std::string("destroyed ") + (r->destroyed() ? "true" : "false"));
  t.loop.run_until_idle();
  CHECK(t.log.str() == "end r; destroyed false");
}

TEST_CASE("pipeline: an abort destroys every stream and the callback gets the AbortError") {
  must_call called;
  world t;
  std::stop_source s;
  auto r = t.make_readable("r");
  auto p = t.make_pass_through("p");
  auto w = t.make_writable("w");
  pipeline_options o;
  o.signal = s.get_token();
  pipeline({*r, *p, *w}, t.log_as("cb", called), o);
  r->push("a");
  t.loop.run_until_idle();
  t.abort(s);
  t.loop.run_until_idle();
  CHECK(t.log.str() ==
        "_read r; _write w a; abort; aborted; error r ABORT_ERR; close r; error p ABORT_ERR; close p; "
        "error w ABORT_ERR; close w; cb ABORT_ERR");
}

TEST_CASE("pipeline: a token stopped already aborts on a microtask") {
  must_call called;
  world t;
  std::stop_source s;
  s.request_stop();
  auto r = t.make_readable("r");
  auto w = t.make_writable("w");
  pipeline_options o;
  o.signal = s.get_token();
  pipeline({*r, *w}, t.log_as("cb", called), o);
  t.log.add(std::string("sync ") + (r->destroyed() ? "true" : "false"));
  // The Node program runs after an await: its microtasks come before its ticks.
  t.loop.run_microtasks();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "sync false; error r ABORT_ERR; close r; error w ABORT_ERR; close w; cb ABORT_ERR");
}

TEST_CASE("finished: an abort calls back with the AbortError and leaves the stream") {
  must_call called;
  world t;
  std::stop_source s;
  auto w = t.make_writable("w");
  finished_options o;
  o.signal = s.get_token();
  auto cleanup = finished(*w, t.log_as("cb", called), o);
  w->write("a");
  t.loop.run_until_idle();
  t.abort(s);
  w->end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_write w a; abort; cb ABORT_ERR; aborted; _final w; finish w; close w");
}

TEST_CASE("finished: a token stopped already calls back on the next tick") {
  must_call called;
  world t;
  std::stop_source s;
  s.request_stop();
  auto w = t.make_writable("w");
  finished_options o;
  o.signal = s.get_token();
  auto cleanup = finished(*w, t.log_as("cb", called), o);
  t.log.add("sync");
  w->end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "sync; _final w; cb ABORT_ERR; finish w; close w");
}

TEST_CASE("finished: an abort after the callback changes nothing") {
  must_call called;
  world t;
  std::stop_source s;
  auto w = t.make_writable("w");
  finished_options o;
  o.signal = s.get_token();
  auto cleanup = finished(*w, t.log_as("cb", called), o);
  w->end();
  t.loop.run_until_idle();
  s.request_stop();
  t.log.add("aborted");
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_final w; finish w; close w; cb ok; aborted");
}

// request_stop() on another thread: the stream is destroyed on its loop's
// thread, never on the stopping one.
TEST_CASE("add_abort_signal: request_stop() from another thread destroys the stream on its loop") {
  world t;
  std::stop_source s;
  auto r = t.make_readable("r");
  add_abort_signal(s.get_token(), *r);
  const auto loop_thread = std::this_thread::get_id();
  std::thread::id destroyed_on;
  r->on(event::close, [&] {
    destroyed_on = std::this_thread::get_id();
    t.loop.release();
  });
  t.loop.hold();
  std::thread stopper([&s] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s.request_stop();
  });
  t.loop.run();  // returns once the close released the hold
  stopper.join();
  CHECK(t.log.str() == "error r ABORT_ERR; close r");
  CHECK(destroyed_on == loop_thread);
}

TEST_CASE("pipeline and finished: request_stop() from another thread") {
  must_call pipeline_called, finished_called;
  world t;
  std::stop_source s;
  auto r = t.make_readable("r");
  auto w = t.make_writable("w");
  auto other = t.make_writable("x");
  pipeline_options po;
  po.signal = s.get_token();
  pipeline({*r, *w}, t.log_as("cb", pipeline_called), po);
  finished_options fo;
  fo.signal = s.get_token();
  auto cleanup = finished(*other, t.log_as("finished", finished_called), fo);
  w->on(event::close, [&] { t.loop.release(); });
  t.loop.hold();
  std::thread stopper([&s] { s.request_stop(); });
  t.loop.run();
  stopper.join();
  t.loop.run_until_idle();
  CHECK(r->destroyed());
  CHECK(w->destroyed());
  CHECK_FALSE(other->destroyed());
  const std::string log = t.log.str();
  CHECK(log.find("cb ABORT_ERR") != std::string::npos);
  CHECK(log.find("finished ABORT_ERR") != std::string::npos);
}

// The registration goes with the stream: a stop after the stream was deleted
// posts nothing that touches it (ASan would see the use after free).
TEST_CASE("add_abort_signal: a stream deleted first is never touched") {
  world t;
  std::stop_source s;
  must_call never(0);
  auto r = t.make_readable("r");
  add_abort_signal(s.get_token(), *r);
  auto w = t.make_writable("w");
  finished_options fo;
  fo.signal = s.get_token();
  // finished()'s cleanup is not kept: it holds the listeners, which touch
  // the stream (the stream must outlive them, as without a signal).
  (void)finished(*w, t.log_as("finished", never), fo);
  r.reset();
  w.reset();
  std::thread stopper([&s] { s.request_stop(); });
  stopper.join();
  t.loop.run_until_idle();
  CHECK(t.log.str().empty());
}

// One token's listeners run in the order they were added, as an
// AbortSignal's do, also when the stop comes from another thread.
TEST_CASE("add_abort_signal: the streams of one token are aborted in the order they were added") {
  for (const bool other_thread : {false, true}) {
    world t;
    std::stop_source s;
    auto a = t.make_readable("a");
    auto b = t.make_readable("b");
    auto c = t.make_readable("c");
    add_abort_signal(s.get_token(), *b);
    add_abort_signal(s.get_token(), *a);
    add_abort_signal(s.get_token(), *c);
    if (other_thread)
      std::thread([&s] { s.request_stop(); }).join();
    else
      s.request_stop();
    t.loop.run_until_idle();
    CHECK(t.log.str() == "error b ABORT_ERR; close b; error a ABORT_ERR; close a; error c ABORT_ERR; close c");
  }
}

// Many stops racing with the loop's own close of the stream (for TSan).
TEST_CASE("add_abort_signal: stops racing with the stream's close") {
  for (int i = 0; i < 200; ++i) {
    world t;
    std::stop_source s;
    auto r = t.make_readable("r");
    add_abort_signal(s.get_token(), *r);
    std::atomic<bool> go{false};
    std::thread stopper([&] {
      while (!go.load()) {
      }
      s.request_stop();
    });
    go = true;
    r->destroy();
    t.loop.run_until_idle();
    stopper.join();
    t.loop.run_until_idle();
    CHECK(r->destroyed());
  }
}

}  // namespace
}  // namespace sluice::test
