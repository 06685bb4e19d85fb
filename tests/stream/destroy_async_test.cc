// A sink whose destroy completes later (sink::destroy() calling its done
// later, Node's _destroy(err, cb) calling cb later): the stream is destroyed at once and
// closed at the callback; 'error' and 'close' come the tick after it, as
// destroy.js's onDestroy has them. Node's order, checked with a Writable
// and a Duplex whose _destroy keeps its callback:
//   w.destroy(); w.destroyed === true, w.closed === false; (ticks: nothing)
//   cb(err) -> w.closed === true, w.errored === err; next tick 'error', 'close'.
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>

#include "sluice/sluice.h"

namespace {

void run() { sluice::loop::current().run_until_idle(); }

// A sink that holds its destroy's completion until the test calls it.
class later_sink final : public sluice::sink {
 public:
  later_sink() : sink({}) {}
  std::optional<sluice::destroy_done> held;
  std::error_code given;
  int destroys = 0;
  std::string* log = nullptr;
  void write(std::string_view, sluice::write_done done) override { done(); }
  void destroy(std::error_code err, sluice::destroy_done done) noexcept override {
    ++destroys;
    given = err;
    if (log) *log += "sink-destroy;";
    held = std::move(done);
  }
  void complete(std::error_code err = {}) {
    REQUIRE(held);
    auto d = std::move(*held);
    held.reset();
    d(err);
  }
};

class logging_source final : public sluice::source {
 public:
  std::string* log = nullptr;
  void read(std::size_t) override {}
  std::error_code destroy(std::error_code err) noexcept override {
    if (log) *log += "source-destroy;";
    return err;
  }
};

}  // namespace

TEST_CASE("sink destroy, done later: the writable is destroyed at once, closed and 'close' only after the sink's callback") {
  auto sink = std::make_unique<later_sink>();
  later_sink& s = *sink;
  sluice::writable w(std::move(sink));
  std::string log;
  w.on(sluice::event::error, [&](std::error_code e) { log += "error " + e.message() + ";"; });
  w.on(sluice::event::close, [&] { log += "close;"; });
  w.destroy();
  CHECK(s.destroys == 1);
  CHECK_FALSE(s.given);  // Node: _destroy(null, cb)
  CHECK(w.destroyed());
  CHECK_FALSE(w.closed());
  run();
  CHECK(log.empty());  // nothing until the callback
  CHECK_FALSE(w.closed());
  w.destroy();  // a second destroy does nothing
  CHECK(s.destroys == 1);
  s.complete();
  CHECK(w.closed());
  CHECK(log.empty());  // 'close' is the next tick's
  run();
  CHECK(log == "close;");
}

TEST_CASE("sink destroy, done later: the callback's error is the stream's: 'error' then 'close'") {
  auto sink = std::make_unique<later_sink>();
  later_sink& s = *sink;
  sluice::writable w(std::move(sink));
  std::string log;
  w.on(sluice::event::error, [&](std::error_code e) { log += "error " + std::string(e == sluice::errc::aborted ? "aborted" : "other") + ";"; });
  w.on(sluice::event::close, [&] { log += "close;"; });
  // A write callback still owed gets ERR_STREAM_DESTROYED before the
  // destroy completes, as Node's errorBuffer is a tick after destroy().
  w.cork();
  int calls = 0;
  std::error_code cb_err;
  w.write("a", [&](std::error_code e) {
    ++calls;
    cb_err = e;
  });
  w.destroy();
  run();
  CHECK(calls == 1);
  CHECK(cb_err == sluice::errc::destroyed);
  CHECK(log.empty());
  s.complete(make_error_code(sluice::errc::aborted));
  CHECK(w.errored() == sluice::errc::aborted);
  run();
  CHECK(log == "error aborted;close;");
}

TEST_CASE("sink destroy, done later: a duplex destroys its source after the sink's callback") {
  std::string log;
  auto sink = std::make_unique<later_sink>();
  later_sink& s = *sink;
  s.log = &log;
  auto src = std::make_unique<logging_source>();
  src->log = &log;
  sluice::duplex d(std::move(src), std::move(sink));
  d.on(sluice::event::close, [&] { log += "close;"; });
  d.destroy();
  CHECK(d.destroyed());
  CHECK(log == "sink-destroy;");
  run();
  CHECK(log == "sink-destroy;");
  s.complete();
  CHECK(log == "sink-destroy;source-destroy;");
  CHECK(d.closed());
  run();
  CHECK(log == "sink-destroy;source-destroy;close;");
}

TEST_CASE("sink destroy, done later: a stream deleted while its destroy waits calls nothing and leaks nothing") {
  std::string log;
  {
    sluice::writable w(std::make_unique<later_sink>());
    w.on(sluice::event::close, [&] { log += "close;"; });
    w.destroy();
    run();
  }  // the sink drops the callback it holds; ASan says if anything reaches the stream
  run();
  CHECK(log.empty());
}

TEST_CASE("sink destroy, done later: a sink that completes inside the call is a synchronous destroy") {
  class now_sink final : public sluice::sink {
   public:
    now_sink() : sink({}) {}
    void write(std::string_view, sluice::write_done done) override { done(); }
    void destroy(std::error_code err, sluice::destroy_done done) noexcept override { done(err); }
  };
  sluice::writable w(std::make_unique<now_sink>());
  std::string log;
  w.on(sluice::event::close, [&] { log += "close;"; });
  w.destroy();
  CHECK(w.closed());
  run();
  CHECK(log == "close;");
}
