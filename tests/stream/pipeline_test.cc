// pipeline() and finished(), checked against Node v20.20.2: each case's
// expected log is what the same program prints with Node's stream module
// (tests/stream/pipeline_test.mjs prints them all: `node tests/stream/pipeline_test.mjs`).
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
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

using world = named_streams;

TEST_CASE("pipeline: data flows to the end and the callback says ok") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  auto p = t.make_pass_through("p");
  auto w = t.make_writable("w");
  pipeline({*r, *p, *w}, t.log_as("cb", called));
  r->push("a");
  r->push("b");
  r->push_eof();
  t.loop.run_until_idle();
  CHECK(t.log.str() ==
        "_write w a; _write w b; end r; end p; _final w; finish p; close r; finish w; close p; close w; cb ok");
  CHECK(r->destroyed());
  CHECK(p->destroyed());
}

TEST_CASE("pipeline: a write error destroys every stream and reaches the callback once") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  auto p = t.make_pass_through("p");
  auto w = t.make_writable("w", std::make_error_code(std::errc::no_space_on_device));
  pipeline({*r, *p, *w}, t.log_as("cb", called));
  r->push("a");
  t.loop.run_until_idle();
  const std::string boom = what(std::make_error_code(std::errc::no_space_on_device));
  CHECK(t.log.str() == "_read r; _write w a; error w " + boom + "; close w; error r " + boom + "; close r; error p " +
                           boom + "; close p; cb " + boom);
  CHECK(r->destroyed());
  CHECK(p->destroyed());
  CHECK(w->destroyed());
}

TEST_CASE("pipeline: a stream closed early is a premature close for all") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  auto p = t.make_pass_through("p");
  auto w = t.make_writable("w");
  pipeline({*r, *p, *w}, t.log_as("cb", called));
  r->push("a");
  t.loop.run_until_idle();
  p->destroy();
  t.loop.run_until_idle();
  CHECK(t.log.str() ==
        "_read r; _write w a; close p; error r ERR_STREAM_PREMATURE_CLOSE; close r; "
        "error w ERR_STREAM_PREMATURE_CLOSE; close w; cb ERR_STREAM_PREMATURE_CLOSE");
}

TEST_CASE("pipeline: the source's error destroys the destination") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  auto w = t.make_writable("w");
  pipeline({*r, *w}, t.log_as("cb", called));
  r->push("a");
  t.loop.run_until_idle();
  r->destroy(make_error_code(errc::out_of_range));
  t.loop.run_until_idle();
  CHECK(t.log.str() ==
        "_read r; _write w a; error r ERR_OUT_OF_RANGE; close r; error w ERR_OUT_OF_RANGE; close w; "
        "cb ERR_OUT_OF_RANGE");
}

TEST_CASE("pipeline: end = false leaves the last stream open") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  auto w = t.make_writable("w");
  pipeline_options o;
  o.end = false;
  pipeline({*r, *w}, t.log_as("cb", called), o);
  r->push("a");
  r->push_eof();
  t.loop.run_until_idle();
  CHECK_FALSE(w->writable_ended());
  CHECK(t.log.str() == "_write w a; end r; close r; cb ok");
  w->end();
  t.loop.run_until_idle();
  CHECK(w->writable_finished());
}

TEST_CASE("pipeline: bad calls throw and wire nothing") {
  world t;
  auto r = t.make_readable("r");
  auto w = t.make_writable("w");
  CHECK_THROWS_AS(pipeline({*r}, [](std::error_code) {}), stream_error);
  CHECK_THROWS_AS(pipeline({*w, *r}, [](std::error_code) {}), stream_error);
  CHECK(r->pipes_count() == 0);
  CHECK(w->listener_count(event::close) == 1);  // only world's own
}

TEST_CASE("finished: a writable after 'finish' and 'close'") {
  must_call called;
  world t;
  auto w = t.make_writable("w");
  finished(*w, t.log_as("fin", called));
  w->write("a");
  w->end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_write w a; _final w; finish w; close w; fin ok");
}

TEST_CASE("finished: a readable destroyed before its end is a premature close") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  finished(*r, t.log_as("fin", called));
  r->push("a");
  r->destroy();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "close r; fin ERR_STREAM_PREMATURE_CLOSE");
}

TEST_CASE("finished: the error comes as soon as it is emitted") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  finished(*r, t.log_as("fin", called));
  r->destroy(make_error_code(errc::out_of_range));
  t.loop.run_until_idle();
  CHECK(t.log.str() == "error r ERR_OUT_OF_RANGE; fin ERR_OUT_OF_RANGE; close r");
}

TEST_CASE("finished: a readable after 'end' and 'close'") {
  must_call called;
  world t;
  auto r = t.make_readable("r");
  finished(*r, t.log_as("fin", called));
  r->resume();
  r->push("a");
  r->push_eof();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "end r; close r; fin ok");
}

TEST_CASE("finished: on a stream already finished, the callback comes on the next tick") {
  must_call called;
  world t;
  auto w = t.make_writable("w");
  w->end();
  t.loop.run_until_idle();
  t.log.add("--");
  finished(*w, t.log_as("fin", called));
  CHECK(t.log.str() == "_final w; finish w; close w; --");
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_final w; finish w; close w; --; fin ok");
}

TEST_CASE("finished: cleanup takes the listeners off and the callback never comes") {
  must_call called(0);
  world t;
  auto w = t.make_writable("w");
  const std::size_t before = w->listener_count(event::close);
  auto cleanup = finished(*w, t.log_as("fin", called));
  cleanup();
  CHECK(w->listener_count(event::close) == before);
  w->end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_final w; finish w; close w");
}

TEST_CASE("finished: a duplex waits for both sides") {
  must_call called;
  world t;
  auto d = t.make_pass_through("d");
  finished(*d, t.log_as("fin", called));
  d->end("x");
  t.loop.run_until_idle();
  t.log.add("--");
  d->resume();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "finish d; --; end d; close d; fin ok");
}

TEST_CASE("finished: a writable that emits no 'close' is done at 'finish'") {
  must_call called;
  world t;
  writable_options o;
  o.event_loop = &t.loop;
  o.emit_close = false;
  writable w(std::make_unique<world::sync_sink>(t.log, "w", std::error_code{}), o);
  t.watch(w, "w");
  finished(w, t.log_as("fin", called));
  w.end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_final w; finish w; fin ok");
}

}  // namespace
}  // namespace sluice::test
