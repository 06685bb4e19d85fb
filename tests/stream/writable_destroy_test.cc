// writable: destroy(), errors from the sink, and the C++ destructor.
// Expected traces are Node v20's (checked with tests/conformance/oracle.mjs),
// except for the C++ destructor, which Node has no counterpart of.
#include "support/printers.h"

#include <memory>
#include <string>

#include "sluice/base/errors.h"
#include "sluice/stream/writable.h"
#include "support/harness.h"
#include "support/must_call.h"

using namespace sluice;
using sluice::test::harness;
using sluice::test::harness_options;
using sluice::test::must_call;

namespace {

harness_options no_auto_destroy(harness_options o) {
  o.stream.auto_destroy = false;
  return o;
}

}  // namespace

TEST_CASE("destroy gives ERR_STREAM_DESTROYED to buffered callbacks, then 'close'") {
  harness h(test::async_sink(false, false));
  h.write("a");
  h.write("b");
  h.write("c");
  h.w->destroy();
  h.log_state();
  h.run();
  CHECK(h.log.take() ==
        "_write a; write a -> true; write b -> true; write c -> true; "
        "state length=3 needDrain=false ended=false finished=false corked=0 destroyed=true writable=false; close");
  // The buffered callbacks wait for the write in flight, as in Node.
  h.complete();
  CHECK(h.log.take() == "cb a ok; cb b ERR_STREAM_DESTROYED; cb c ERR_STREAM_DESTROYED");
  CHECK(h.w->writable_length() == 0);
  CHECK(h.sink->writes == 1);
}

TEST_CASE("destroy with only buffered writes calls them back on the next tick, before 'close'") {
  harness h(test::async_sink());
  h.w->cork();
  h.write("a");
  h.write("b");
  h.w->destroy();
  CHECK(h.log.take() == "write a -> true; write b -> true");
  h.run();
  CHECK(h.log.take() == "cb a ERR_STREAM_DESTROYED; cb b ERR_STREAM_DESTROYED; close");
  CHECK(h.w->writable_corked() == 1);
}

TEST_CASE("destroy(err) emits 'error' and then 'close' on the next tick") {
  harness h;
  h.w->destroy(user_error("boom"));
  CHECK(h.w->destroyed());
  CHECK(h.w->closed());
  CHECK(h.w->errored() == user_error("boom"));
  CHECK(h.log.take().empty());
  h.run();
  CHECK(h.log.take() == "error boom; close");
  CHECK(h.sink->destroys == 1);
  CHECK(h.sink->destroy_error == user_error("boom"));
}

TEST_CASE("destroy(err) gives err to the buffered callbacks") {
  harness h(test::async_sink(false, false));
  h.write("a");
  h.write("b");
  h.w->destroy(user_error("boom"));
  h.complete();
  h.run();
  CHECK(h.log.str() == "_write a; write a -> true; write b -> true; cb a ok; cb b boom; error boom; close");
}

TEST_CASE("destroy twice emits one 'close' and the first error only") {
  SUBCASE("without errors") {
    harness h;
    h.w->destroy();
    h.w->destroy();
    h.w->destroy(user_error("x"));
    h.run();
    CHECK(h.log.str() == "close");
    CHECK_FALSE(bool(h.w->errored()));
  }
  SUBCASE("with errors") {
    harness h;
    h.w->destroy(user_error("first"));
    h.w->destroy(user_error("second"));
    h.run();
    CHECK(h.log.str() == "error first; close");
    CHECK(h.w->errored() == user_error("first"));
  }
  SUBCASE("after an error without autoDestroy") {
    harness h(no_auto_destroy(test::async_sink(false, false)));
    h.write("a");
    h.complete(user_error("bad"));
    h.w->destroy(user_error("other"));
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a bad; error bad; close");
    CHECK(h.w->errored() == user_error("bad"));
  }
  SUBCASE("from a 'finish' listener of an auto-destroyed stream") {
    harness h(test::sync_sink(false, false));
    h.w->on(event::finish, [&] { h.w->destroy(); });
    h.end();
    h.run();
    CHECK(h.log.str() == "end-cb ok; finish; close");
    CHECK(h.sink->destroys == 1);
  }
}

TEST_CASE("writes after destroy call back with ERR_STREAM_DESTROYED and emit no 'error'") {
  harness h;
  h.w->destroy();
  CHECK_FALSE(h.write("a"));
  h.log_state();
  h.run();
  CHECK_FALSE(h.write("b"));
  h.run();
  h.write("c", false);
  h.run();
  CHECK(h.log.str() ==
        "write a -> false; "
        "state length=0 needDrain=false ended=false finished=false corked=0 destroyed=true writable=false; "
        "close; cb a ERR_STREAM_DESTROYED; write b -> false; cb b ERR_STREAM_DESTROYED; write c -> false");
  CHECK(h.sink->writes == 0);
}

SCENARIO("destroy while a write is in flight") {
  GIVEN("a stream with one write at the sink") {
    harness h(test::async_sink(false, false));
    h.write("a");
    h.w->destroy();
    h.run();
    CHECK(h.log.take() == "_write a; write a -> true; close");
    WHEN("the write completes") {
      h.complete();
      THEN("its callback gets ok, as in Node") {
        CHECK(h.log.take() == "cb a ok");
        CHECK(h.w->writable_length() == 0);
      }
    }
    WHEN("the write fails") {
      h.complete(user_error("late"));
      h.run();
      THEN("its callback gets the error, and no 'error' is emitted") {
        CHECK(h.log.take() == "cb a late");
        CHECK(h.w->errored() == user_error("late"));
      }
    }
  }
  GIVEN("a write that made write() return false") {
    harness_options o = test::async_sink(false, false);
    o.stream.high_water_mark = 1;
    harness h(o);
    CHECK_FALSE(h.write("a"));
    h.w->destroy();
    THEN("needDrain reads false and no 'drain' comes") {
      CHECK_FALSE(h.w->writable_need_drain());
      h.complete();
      h.run();
      CHECK(h.log.str() == "_write a; write a -> false; cb a ok; close");
    }
  }
}

TEST_CASE("destroy with a sync sink's callbacks pending lets them run, then 'close'") {
  harness h(test::sync_sink());
  h.write("a");
  h.w->destroy();
  h.run();
  CHECK(h.log.str() == "_write a; write a -> true; cb a ok; close");
}

TEST_CASE("destroy with end pending gives end's callback ERR_STREAM_DESTROYED") {
  SUBCASE("final in flight") {
    harness h(test::async_sink());
    h.write("a");
    h.end();
    h.complete();
    h.w->destroy();
    h.complete();  // final completes after destroy: no 'finish'
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; _final; end-cb ERR_STREAM_DESTROYED; close");
    CHECK_FALSE(h.w->writable_finished());
  }
  SUBCASE("sync sink, same turn") {
    harness h(test::sync_sink(false, false));
    h.write("a");
    h.end();
    h.w->destroy();
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; end-cb ERR_STREAM_DESTROYED; close");
  }
}

TEST_CASE("end after destroy(err) calls back with ERR_STREAM_DESTROYED") {
  harness h;
  h.w->destroy(user_error("boom"));
  h.end();
  h.run();
  CHECK(h.log.str() == "error boom; close; end-cb ERR_STREAM_DESTROYED");
}

TEST_CASE("a failed write gives its error to its callback, then 'error' and 'close'") {
  SUBCASE("async sink") {
    harness h(test::async_sink(false, false));
    h.write("a");
    h.write("b");
    h.complete(user_error("bad"));
    CHECK(h.w->destroyed());
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; write b -> true; cb a bad; cb b bad; error bad; close");
    CHECK(h.sink->writes == 1);
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink(false, false));
    h.sink->fail_next(user_error("bad"));
    CHECK_FALSE(h.write("a"));  // errored: write() returns false
    CHECK_FALSE(h.write("b"));
    h.run();
    CHECK(h.log.str() == "_write a; write a -> false; write b -> false; cb a bad; cb b bad; error bad; close");
    CHECK(h.sink->writes == 1);
  }
}

TEST_CASE("without autoDestroy a failed write errors the stream but leaves it alive") {
  harness h(no_auto_destroy(test::async_sink(false, false)));
  h.write("a");
  h.write("b");
  h.complete(user_error("bad"));
  h.log_state();
  CHECK_FALSE(h.write("c"));
  h.w->destroy();
  h.run();
  CHECK(h.log.str() ==
        "_write a; write a -> true; write b -> true; cb a bad; cb b bad; error bad; "
        "state length=0 needDrain=false ended=false finished=false corked=0 destroyed=false writable=false; "
        "write c -> false; cb c bad; close");
}

TEST_CASE("with emit_close off, destroy(err) emits only 'error'") {
  harness_options o;
  o.stream.emit_close = false;
  harness h(o);
  h.w->destroy(user_error("boom"));
  h.run();
  CHECK(h.log.str() == "error boom");
  CHECK(h.w->closed());
}

TEST_CASE("an error returned by the sink's destroy becomes the stream's 'error'") {
  harness h;
  h.sink->destroy_fails_with = std::make_error_code(std::errc::io_error);
  h.w->destroy();
  h.run();
  CHECK(h.log.str() == "error EIO; close");
  CHECK(h.w->errored() == std::errc::io_error);
}

TEST_CASE("a sink that completes a write twice errors the stream with ERR_MULTIPLE_CALLBACK") {
  SUBCASE("async sink") {
    harness h(test::async_sink(false, false));
    h.write("a");
    h.complete();
    h.sink->complete_last_again();
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; error ERR_MULTIPLE_CALLBACK; close");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink(false, false));
    h.write("a");
    h.sink->complete_last_again();
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; error ERR_MULTIPLE_CALLBACK; close");
  }
}

TEST_CASE("destroy from inside a write callback stops the buffered writes") {
  harness h(test::async_sink(false, false));
  must_call first;
  h.w->write("a", first.cb([&](std::error_code) { h.w->destroy(); }));
  h.write("b");
  h.complete();  // a done: b goes to the sink before a's callback runs
  h.complete();
  h.run();
  CHECK(h.log.str() == "_write a; write b -> true; _write b; cb b ok; close");
}

TEST_CASE("destroy with no 'error' listener sends the error to the unhandled-error handler") {
  static int calls = 0;
  static std::error_code seen;
  calls = 0;
  const auto old = set_unhandled_error_handler([](const std::error_code& ec) noexcept {
    ++calls;
    seen = ec;
  });
  {
    loop l;
    writable_options o;
    o.event_loop = &l;
    test::trace log;
    writable w(std::make_unique<test::recording_sink>(log), o);
    w.destroy(user_error("nobody listens"));
    CHECK(calls == 0);
    l.run_until_idle();
    CHECK(w.errored() == user_error("nobody listens"));
  }
  set_unhandled_error_handler(old);
  CHECK(calls == 1);
  CHECK(seen == user_error("nobody listens"));
}

// ---- the C++ destructor (Differs from Node: Node has none)

TEST_CASE("the destructor calls back the buffered and in-flight writes with ERR_STREAM_DESTROYED") {
  harness h(test::async_sink(false, false));
  h.write("a");
  h.write("b");
  h.end();
  h.w.reset();
  CHECK(h.log.str() ==
        "_write a; write a -> true; write b -> true; "
        "cb a ERR_STREAM_DESTROYED; cb b ERR_STREAM_DESTROYED; end-cb ERR_STREAM_DESTROYED");
}

TEST_CASE("the destructor calls back with ok the writes that completed but await their tick") {
  harness h(test::sync_sink(false, false));
  h.write("a");
  h.write("b");
  h.w.reset();
  CHECK(h.log.str() == "_write a; write a -> true; _write b; write b -> true; cb a ok; cb b ok");
}

TEST_CASE("the destructor emits no event and runs none of its queued ticks") {
  harness h;
  h.w->destroy(user_error("boom"));
  h.w.reset();
  h.run();
  CHECK(h.log.str().empty());
}

TEST_CASE("the destructor calls back a write whose sync failure awaits its tick with that failure") {
  harness h(test::sync_sink(false, false));
  h.sink->fail_next(user_error("bad"));
  h.write("a");
  h.w.reset();
  CHECK(h.log.str() == "_write a; write a -> false; cb a bad");
}

TEST_CASE("the destructor pays a write-after-end callback still waiting for its tick") {
  harness h(test::async_sink(false, false));
  h.end(false);
  h.write("late");
  h.w.reset();
  CHECK(h.log.str() == "write late -> false; cb late ERR_STREAM_WRITE_AFTER_END");
}

TEST_CASE("the destructor pays an end callback still waiting for its tick") {
  harness h(test::sync_sink(false, false));
  h.end(false);
  h.run();
  h.end();  // ERR_STREAM_ALREADY_FINISHED, queued for the next tick
  h.w.reset();
  CHECK(h.log.str() == "finish; close; end-cb ERR_STREAM_ALREADY_FINISHED");
}

TEST_CASE("the destructor pays a write-after-destroy callback still waiting for its tick") {
  harness h;
  h.w->destroy();
  h.write("a");
  h.w.reset();
  CHECK(h.log.str() == "write a -> false; cb a ERR_STREAM_DESTROYED");
}

TEST_CASE("the destructor of a finished stream calls nothing") {
  harness h(test::sync_sink());
  h.write("a");
  h.end();
  h.run();
  h.log.take();
  h.w.reset();
  CHECK(h.log.str().empty());
}
