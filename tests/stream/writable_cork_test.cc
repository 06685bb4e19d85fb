// writable: cork() and uncork() batch writes into one writev.
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

TEST_CASE("cork holds writes and uncork sends them as one writev") {
  SUBCASE("async sink") {
    harness h(test::async_sink());
    h.w->cork();
    CHECK(h.w->writable_corked() == 1);
    h.write("a");
    h.write("b");
    h.write("c");
    h.log_state();
    CHECK(h.sink->writes + h.sink->writevs == 0);
    h.w->uncork();
    h.log_state();
    h.complete();
    CHECK(h.log.str() ==
          "write a -> true; write b -> true; write c -> true; "
          "state length=3 needDrain=false ended=false finished=false corked=1 destroyed=false writable=true; "
          "_writev a,b,c; "
          "state length=3 needDrain=false ended=false finished=false corked=0 destroyed=false writable=true; "
          "cb a ok; cb b ok; cb c ok");
    CHECK(h.sink->writevs == 1);
    CHECK(h.sink->writes == 0);
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    h.w->cork();
    h.write("a");
    h.write("b");
    h.w->uncork();
    CHECK(h.w->writable_length() == 0);  // written inside uncork()
    CHECK(h.log.take() == "write a -> true; write b -> true; _writev a,b");
    h.run();
    CHECK(h.log.take() == "cb a ok; cb b ok");
  }
}

TEST_CASE("nested corks need as many uncorks") {
  harness h(test::async_sink());
  h.w->cork();
  h.w->cork();
  CHECK(h.w->writable_corked() == 2);
  h.write("a");
  h.write("b");
  h.w->uncork();
  CHECK(h.w->writable_corked() == 1);
  CHECK(h.sink->writes + h.sink->writevs == 0);
  h.w->uncork();
  CHECK(h.w->writable_corked() == 0);
  h.complete();
  CHECK(h.log.str() == "write a -> true; write b -> true; _writev a,b; cb a ok; cb b ok");
}

TEST_CASE("uncork with nothing buffered calls no sink method and never goes below zero") {
  harness h(test::async_sink());
  h.w->uncork();
  CHECK(h.w->writable_corked() == 0);
  h.w->cork();
  h.w->uncork();
  h.w->uncork();
  CHECK(h.w->writable_corked() == 0);
  h.run();
  CHECK(h.log.str().empty());
  // And the stream still writes straight through afterwards.
  h.write("a");
  h.complete();
  CHECK(h.log.str() == "_write a; write a -> true; cb a ok");
}

TEST_CASE("a single corked chunk goes out through write, not writev") {
  harness h(test::async_sink());
  h.w->cork();
  h.write("a");
  h.w->uncork();
  h.complete();
  CHECK(h.log.str() == "write a -> true; _write a; cb a ok");
}

TEST_CASE("uncork on a sink without writev writes the chunks one at a time") {
  SUBCASE("async sink") {
    harness h(test::async_sink(false));
    h.w->cork();
    h.write("a");
    h.write("b");
    h.write("c");
    h.w->uncork();
    CHECK(h.log.take() == "write a -> true; write b -> true; write c -> true; _write a");
    h.complete();
    h.complete();
    h.complete();
    CHECK(h.log.take() == "_write b; cb a ok; _write c; cb b ok; cb c ok");
    CHECK(h.sink->writevs == 0);
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink(false));
    h.w->cork();
    h.write("a");
    h.write("b");
    h.w->uncork();
    CHECK(h.log.take() == "write a -> true; write b -> true; _write a; _write b");
    h.run();
    CHECK(h.log.take() == "cb a ok; cb b ok");
  }
}

TEST_CASE("uncork while a write is in flight sends the corked chunks when it completes") {
  harness h(test::async_sink());
  h.write("a");
  h.w->cork();
  h.write("b");
  h.write("c");
  h.w->uncork();
  CHECK(h.log.take() == "_write a; write a -> true; write b -> true; write c -> true");
  h.complete();
  CHECK(h.log.take() == "_writev b,c; cb a ok");
  h.complete();
  CHECK(h.log.take() == "cb b ok; cb c ok");
}

TEST_CASE("a write completing while corked does not send the corked chunks") {
  harness h(test::async_sink());
  h.write("a");
  h.w->cork();
  h.write("b");
  h.write("c");
  h.complete();
  h.log_state();
  h.w->uncork();
  h.complete();
  CHECK(h.log.str() ==
        "_write a; write a -> true; write b -> true; write c -> true; cb a ok; "
        "state length=2 needDrain=false ended=false finished=false corked=1 destroyed=false writable=true; "
        "_writev b,c; cb b ok; cb c ok");
}

TEST_CASE("corked chunks count toward the high-water mark and 'drain' follows the writev") {
  harness_options o = test::async_sink();
  o.stream.high_water_mark = 2;
  harness h(o);
  h.w->cork();
  CHECK(h.write("a"));
  CHECK_FALSE(h.write("b"));
  CHECK(h.w->writable_need_drain());
  h.w->uncork();
  h.complete();
  CHECK(h.log.str() == "write a -> true; write b -> false; _writev a,b; drain; cb a ok; cb b ok");
}

TEST_CASE("a writev calls back only the chunks that have a callback") {
  SUBCASE("async sink") {
    harness h(test::async_sink());
    h.w->cork();
    h.write("a", false);
    h.write("b");
    h.write("c", false);
    h.w->uncork();
    h.complete();
    CHECK(h.log.str() == "write a -> true; write b -> true; write c -> true; _writev a,b,c; cb b ok");
  }
  SUBCASE("sync sink, callback-less batch then a mixed one") {
    harness h(test::sync_sink());
    h.w->cork();
    h.write("a", false);
    h.write("b", false);
    h.w->uncork();
    h.w->cork();
    h.write("c");
    h.write("d", false);
    h.w->uncork();
    h.run();
    CHECK(h.log.str() ==
          "write a -> true; write b -> true; _writev a,b; write c -> true; write d -> true; _writev c,d; cb c ok");
  }
}

TEST_CASE("a failed writev gives its error to every chunk's callback, then 'error'") {
  SUBCASE("async sink") {
    harness h(test::async_sink());
    h.w->cork();
    h.write("a");
    h.write("b");
    h.w->uncork();
    h.complete(user_error("bad"));
    h.run();
    CHECK(h.log.str() == "write a -> true; write b -> true; _writev a,b; cb a bad; cb b bad; error bad; close");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    h.w->cork();
    h.write("a");
    h.write("b");
    h.sink->fail_next(user_error("bad"));
    h.w->uncork();
    CHECK(h.log.take() == "write a -> true; write b -> true; _writev a,b");
    h.run();
    CHECK(h.log.take() == "cb a bad; cb b bad; error bad; close");
  }
}

TEST_CASE("uncork after destroy flushes nothing and the corked callbacks get ERR_STREAM_DESTROYED") {
  harness h(test::async_sink());
  h.w->cork();
  h.write("a");
  h.w->destroy();
  h.w->uncork();
  h.log_state();
  h.run();
  CHECK(h.log.str() ==
        "write a -> true; "
        "state length=1 needDrain=false ended=false finished=false corked=0 destroyed=true writable=false; "
        "cb a ERR_STREAM_DESTROYED; close");
  CHECK(h.sink->writes + h.sink->writevs == 0);
}

TEST_CASE("cork after uncork batches again") {
  harness h(test::sync_sink());
  for (int round = 0; round < 3; ++round) {
    h.w->cork();
    h.write("x", false);
    h.write("y", false);
    h.w->uncork();
  }
  h.run();
  CHECK(h.sink->writevs == 3);
  CHECK(h.sink->bytes == "xyxyxy");
}
