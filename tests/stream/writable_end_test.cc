// writable: end(), the sink's final, 'prefinish', 'finish' and autoDestroy.
// Expected traces are Node v20's (checked with tests/conformance/oracle.mjs).
#include "support/printers.h"

#include <string>

#include "sluice/base/errors.h"
#include "sluice/stream/writable.h"
#include "support/harness.h"
#include "support/must_call.h"

using namespace sluice;
using sluice::test::harness;
using sluice::test::harness_options;

namespace {

harness_options no_auto_destroy(harness_options o) {
  o.stream.auto_destroy = false;
  return o;
}

}  // namespace

SCENARIO("end runs the sink's final, then 'finish', then 'close'") {
  GIVEN("an async sink with a final") {
    harness h(test::async_sink());
    h.write("a");
    h.end();
    THEN("nothing finishes while the write is in flight") {
      CHECK(h.log.take() == "_write a; write a -> true");
      CHECK(h.w->writable_ended());
      CHECK_FALSE(h.w->writable_finished());
      WHEN("the write completes") {
        h.complete();
        THEN("final is called after the write's callback") {
          CHECK(h.log.take() == "cb a ok; _final");
          WHEN("final completes") {
            h.complete();
            CHECK(h.log.take().empty());  // 'finish' waits for the next tick
            h.run();
            THEN("the end callback, 'finish' and 'close' follow, in that order") {
              CHECK(h.log.take() == "end-cb ok; finish; close");
              CHECK(h.w->writable_finished());
              CHECK(h.w->destroyed());
              CHECK(h.w->closed());
            }
          }
        }
      }
    }
  }
  GIVEN("a sync sink with a final") {
    harness h(test::sync_sink());
    h.write("a");
    h.end();
    THEN("final runs inside end(), before the write's deferred callback") {
      CHECK(h.log.take() == "_write a; write a -> true; _final");
      h.run();
      CHECK(h.log.take() == "cb a ok; end-cb ok; finish; close");
    }
  }
}

TEST_CASE("'prefinish' comes when final completes, and 'finish' on a later tick") {
  harness_options o = test::async_sink();
  o.log_prefinish = true;
  harness h(o);
  h.write("a");
  h.end();
  h.complete();
  CHECK(h.log.take() == "_write a; write a -> true; cb a ok; _final");
  h.complete();
  CHECK(h.log.take() == "prefinish");
  h.run();
  CHECK(h.log.take() == "end-cb ok; finish; close");
}

TEST_CASE("without a final, 'prefinish' is emitted inside end() and 'finish' on the next tick") {
  harness_options o = test::async_sink(true, false);
  o.log_prefinish = true;
  harness h(o);
  h.end();
  CHECK(h.log.take() == "prefinish");
  CHECK_FALSE(h.w->writable_finished());
  h.run();
  CHECK(h.log.take() == "end-cb ok; finish; close");
  CHECK(h.sink->finals == 0);
}

TEST_CASE("end with nothing written still runs final once") {
  harness h(test::async_sink());
  h.end();
  CHECK(h.log.take() == "_final");
  h.complete();
  h.run();
  CHECK(h.log.take() == "end-cb ok; finish; close");
  CHECK(h.sink->finals == 1);
}

TEST_CASE("end's callback runs before 'finish'") {
  SUBCASE("async sink") {
    harness h(test::async_sink(true, false));
    h.write("a");
    h.end();
    h.complete();
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; end-cb ok; finish; close");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink(true, false));
    h.write("a");
    h.end();
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; end-cb ok; finish; close");
  }
}

TEST_CASE("end with a chunk writes it last, then finishes") {
  SUBCASE("async sink") {
    harness h(test::async_sink(true, false));
    h.write("a");
    h.end_with("z");
    CHECK(h.w->writable_length() == 2);
    h.complete();
    h.complete();
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; _write z; cb a ok; end-cb ok; finish; close");
    CHECK(h.sink->bytes == "az");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink(true, false));
    h.end_with("z");
    h.run();
    CHECK(h.log.str() == "_write z; end-cb ok; finish; close");
  }
}

TEST_CASE("a second end before 'finish' waits for the finish too") {
  harness h(test::async_sink(false, false));
  h.write("a");
  h.end();
  h.end();
  CHECK(h.w->writable_ended());
  CHECK_FALSE(h.w->is_writable());
  h.complete();
  h.run();
  CHECK(h.log.str() == "_write a; write a -> true; cb a ok; end-cb ok; end-cb ok; finish; close");
}

TEST_CASE("end after 'finish' calls back with ERR_STREAM_ALREADY_FINISHED and emits no error") {
  SUBCASE("auto-destroyed stream") {
    harness h(test::sync_sink(false, false));
    h.end(false);
    h.run();
    h.end();
    h.run();
    CHECK(h.log.str() == "finish; close; end-cb ERR_STREAM_ALREADY_FINISHED");
  }
  SUBCASE("stream without autoDestroy") {
    harness h(no_auto_destroy(test::sync_sink(false, false)));
    h.end(false);
    h.run();
    h.end();
    CHECK(h.log.take() == "finish");
    h.run();
    CHECK(h.log.take() == "end-cb ERR_STREAM_ALREADY_FINISHED");
    CHECK_FALSE(h.w->destroyed());
  }
}

TEST_CASE("end with a chunk after end gives ERR_STREAM_WRITE_AFTER_END to both callbacks and 'error'") {
  harness h(test::async_sink(false, false));
  h.write("a", false);
  h.end();
  h.end_with("late");
  CHECK(h.w->destroyed());
  h.complete();
  h.run();
  CHECK(h.log.str() ==
        "_write a; write a -> true; end-cb ERR_STREAM_WRITE_AFTER_END; error ERR_STREAM_WRITE_AFTER_END; close; "
        "end-cb ERR_STREAM_WRITE_AFTER_END");
}

TEST_CASE("write after end calls back with ERR_STREAM_WRITE_AFTER_END, then emits 'error'") {
  SUBCASE("sync sink") {
    harness h(test::sync_sink(false, false));
    h.end(false);
    CHECK_FALSE(h.write("late"));
    CHECK(h.w->destroyed());  // autoDestroy: destroyed at once
    CHECK(h.log.take() == "write late -> false");
    h.run();
    CHECK(h.log.take() == "cb late ERR_STREAM_WRITE_AFTER_END; error ERR_STREAM_WRITE_AFTER_END; close");
    CHECK(h.w->errored() == errc::write_after_end);
  }
  SUBCASE("async sink with a write in flight") {
    harness h(test::async_sink(false, false));
    h.write("a");
    h.end(false);
    CHECK_FALSE(h.write("late"));
    h.complete();
    h.run();
    CHECK(h.log.str() ==
          "_write a; write a -> true; write late -> false; cb a ok; cb late ERR_STREAM_WRITE_AFTER_END; "
          "error ERR_STREAM_WRITE_AFTER_END; close");
  }
  SUBCASE("stream without autoDestroy") {
    harness h(no_auto_destroy(test::sync_sink(false, false)));
    h.end(false);
    CHECK_FALSE(h.write("late"));
    h.log_state();
    h.run();
    h.log_state();
    CHECK(h.log.str() ==
          "write late -> false; "
          "state length=0 needDrain=false ended=true finished=false corked=0 destroyed=false writable=false; "
          "cb late ERR_STREAM_WRITE_AFTER_END; error ERR_STREAM_WRITE_AFTER_END; "
          "state length=0 needDrain=false ended=true finished=false corked=0 destroyed=false writable=false");
  }
}

TEST_CASE("a write after end without a callback still emits 'error'") {
  harness h(test::sync_sink(false, false));
  h.end(false);
  h.write("late", false);
  h.run();
  CHECK(h.log.str() == "write late -> false; error ERR_STREAM_WRITE_AFTER_END; close");
}

TEST_CASE("end while corked flushes the corked writes in one writev") {
  SUBCASE("async sink") {
    harness h(test::async_sink(true, false));
    h.w->cork();
    h.w->cork();
    h.write("a");
    h.write("b");
    h.end();
    h.log_state();
    h.complete();
    h.run();
    CHECK(h.log.str() ==
          "write a -> true; write b -> true; _writev a,b; "
          "state length=2 needDrain=false ended=true finished=false corked=0 destroyed=false writable=false; "
          "cb a ok; cb b ok; end-cb ok; finish; close");
  }
  SUBCASE("end with a chunk, sync sink") {
    harness h(test::sync_sink(true, false));
    h.w->cork();
    h.write("a");
    h.end_with("z");
    CHECK(h.w->writable_corked() == 0);
    h.run();
    CHECK(h.log.str() == "write a -> true; _writev a,z; cb a ok; end-cb ok; finish; close");
  }
}

TEST_CASE("a final error reaches end's callback and the 'error' event") {
  SUBCASE("async final") {
    harness h(test::async_sink());
    h.write("a");
    h.end();
    h.complete();
    h.complete(user_error("nofinal"));
    CHECK(h.w->destroyed());
    h.run();
    CHECK(h.log.str() == "_write a; write a -> true; cb a ok; _final; end-cb nofinal; error nofinal; close");
    CHECK(h.w->errored() == user_error("nofinal"));
    CHECK_FALSE(h.w->writable_finished());
  }
  SUBCASE("sync final") {
    harness h(test::sync_sink());
    h.sink->fail_next(user_error("nofinal"));
    h.end();
    CHECK(h.log.take() == "_final");
    h.run();
    // end() queued its callback after final had already failed.
    CHECK(h.log.take() == "error nofinal; close; end-cb nofinal");
  }
  SUBCASE("without autoDestroy") {
    harness h(no_auto_destroy(test::async_sink()));
    h.end();
    h.complete(user_error("nofinal"));
    h.log_state();
    h.run();
    CHECK(h.log.str() ==
          "_final; end-cb nofinal; error nofinal; "
          "state length=0 needDrain=false ended=true finished=false corked=0 destroyed=false writable=false");
    CHECK(h.w->errored() == user_error("nofinal"));
  }
}

TEST_CASE("end after a write error calls back with the stream's error") {
  harness h(test::async_sink(false, false));
  h.write("a");
  h.complete(user_error("bad"));
  h.end();
  h.run();
  CHECK(h.log.str() == "_write a; write a -> true; cb a bad; error bad; close; end-cb ERR_STREAM_DESTROYED");
}

TEST_CASE("without autoDestroy the stream is not destroyed after 'finish' and no 'close' comes") {
  harness h(no_auto_destroy(test::sync_sink(false, false)));
  h.write("a");
  h.end();
  h.run();
  h.log_state();
  CHECK(h.log.str() ==
        "_write a; write a -> true; cb a ok; end-cb ok; finish; "
        "state length=0 needDrain=false ended=true finished=true corked=0 destroyed=false writable=false");
  CHECK_FALSE(h.w->closed());
  CHECK(h.sink->destroys == 0);
}

TEST_CASE("with autoDestroy 'close' follows 'finish' and the sink is destroyed once") {
  harness h(test::async_sink());
  h.end();
  h.complete();
  h.run();
  CHECK(h.log.str() == "_final; end-cb ok; finish; close");
  CHECK(h.w->destroyed());
  CHECK(h.w->closed());
  CHECK(h.sink->destroys == 1);
  CHECK_FALSE(bool(h.sink->destroy_error));
  CHECK_FALSE(bool(h.w->errored()));
}

TEST_CASE("with emit_close off, no 'close' follows 'finish'") {
  harness_options o = test::sync_sink(false, false);
  o.stream.emit_close = false;
  harness h(o);
  h.end();
  h.run();
  CHECK(h.log.str() == "end-cb ok; finish");
  CHECK(h.w->destroyed());
}

TEST_CASE("ended and writable change at end(), finished at 'finish'") {
  harness h(test::async_sink(false, false));
  CHECK(h.w->is_writable());
  CHECK_FALSE(h.w->writable_ended());
  h.write("a", false);
  h.end(false);
  CHECK_FALSE(h.w->is_writable());
  CHECK(h.w->writable_ended());
  CHECK_FALSE(h.w->writable_finished());
  h.complete();
  CHECK_FALSE(h.w->writable_finished());
  h.run();
  CHECK(h.w->writable_finished());
}

TEST_CASE("a sync sink's final runs once even with many writes and ends") {
  harness h(test::sync_sink());
  for (int i = 0; i < 10; ++i) h.write("x", false);
  h.end();
  h.end();
  h.run();
  CHECK(h.sink->finals == 1);
  CHECK(h.log.lines().back() == "close");
}

// ---- sluice's own: coalescing sinks (fd_sink, file_sink) hold a turn's writes

TEST_CASE("a coalescing sink finishes after end() whatever the writes' callbacks") {
  harness_options o = test::sync_sink(true, false);
  o.sink.coalesce = true;
  SUBCASE("one write without a callback") {
    harness h(o);
    h.write("a", false);
    h.end();
    h.run();
    CHECK(h.log.str() == "write a -> true; _write a; end-cb ok; finish; close");
  }
  SUBCASE("several writes without callbacks") {
    harness h(o);
    h.write("a", false);
    h.write("b", false);
    h.end();
    h.run();
    CHECK(h.log.str() == "write a -> true; write b -> true; _writev a,b; end-cb ok; finish; close");
  }
  SUBCASE("end with a chunk") {
    harness h(o);
    h.end_with("z");
    h.run();
    CHECK(h.log.str() == "_write z; end-cb ok; finish; close");
  }
  SUBCASE("writes with callbacks") {
    harness h(o);
    h.write("a");
    h.end();
    h.run();
    CHECK(h.log.str() == "write a -> true; _write a; cb a ok; end-cb ok; finish; close");
  }
}

TEST_CASE("a sink that completes final twice errors the stream with ERR_MULTIPLE_CALLBACK after 'finish'") {
  SUBCASE("async sink") {
    harness h(test::async_sink());
    h.end();
    h.complete();
    h.sink->complete_last_again();
    h.run();
    CHECK(h.log.str() == "_final; end-cb ok; finish; error ERR_MULTIPLE_CALLBACK; close");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    h.end();
    h.sink->complete_last_again();
    h.run();
    CHECK(h.log.str() == "_final; end-cb ok; finish; error ERR_MULTIPLE_CALLBACK; close");
  }
}
