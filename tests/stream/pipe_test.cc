// pipe: Readable.prototype.pipe() and unpipe() into a writable: the data,
// backpressure through 'drain', ending the destination, and the cleanup of
// every listener when the pipe breaks. Expected traces are Node v20's
// (checked with tests/conformance/oracle.mjs); the readable's events and
// _read carry " r", the destination's are bare.
#include "support/printers.h"

#include <deque>
#include <memory>
#include <string>

#include "sluice/base/errors.h"
#include "support/memory_sink.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/harness.h"
#include "support/recording_source.h"

using namespace sluice;
using sluice::test::harness;
using sluice::test::harness_options;
using sluice::test::readable_harness;

namespace {

harness_options with_hwm(harness_options o, std::size_t hwm) {
  o.stream.high_water_mark = hwm;
  return o;
}

// A writable harness and a readable on the same loop, logging into one trace.
struct pipe_rig {
  explicit pipe_rig(harness_options wo = test::sync_sink(false, false), readable_options ro = {})
      : w(wo), r(ro, w.log, w.loop, "r") {
    w.w->on(event::pipe, [this](const event_arg& a) {
      w.log.add("pipe");
      last_source = a.source;
    });
    w.w->on(event::unpipe, [this] { w.log.add("unpipe"); });
  }
  std::string take() { return w.log.take(); }
  void run() { w.run(); }

  // The destination's listeners of each event pipe() uses: all back to these
  // once the pipe is gone.
  std::string dest_listeners() const {
    std::string out;
    for (auto ev : {event::close, event::finish, event::drain, event::error, event::unpipe}) {
      if (!out.empty()) out += ' ';
      out += std::string(to_string(ev)) + "=" + std::to_string(w.w->listener_count(ev));
    }
    return out;
  }

  harness w;
  readable_harness r;
  void* last_source = nullptr;
};

// A sink for several destinations on one loop: logs "_write <name> <chunk>"
// and completes on demand.
class named_sink : public sink {
 public:
  named_sink(test::trace& log, std::string name) : sink({}), log_(log), name_(std::move(name)) {}
  void write(std::string_view chunk, write_done done) override {
    log_.add("_write " + name_ + " " + std::string(chunk));
    pending_.push_back(done);
  }
  void complete() {
    REQUIRE(!pending_.empty());
    write_done d = pending_.front();
    pending_.pop_front();
    d();
  }

 private:
  test::trace& log_;
  std::string name_;
  std::deque<write_done> pending_;
};

std::unique_ptr<writable> named_writable(test::trace& log, sluice::loop& l, const std::string& name,
                                         named_sink*& sink_out, std::size_t hwm) {
  auto s = std::make_unique<named_sink>(log, name);
  sink_out = s.get();
  writable_options o;
  o.event_loop = &l;
  o.high_water_mark = hwm;
  auto w = std::make_unique<writable>(std::move(s), o);
  for (auto ev : {event::drain, event::finish, event::close, event::pipe, event::unpipe})
    w->on(ev, [&log, name, ev] { log.add(std::string(to_string(ev)) + " " + name); });
  return w;
}

}  // namespace

TEST_CASE("pipe writes every chunk and ends the destination at the source's end") {
  pipe_rig p;
  CHECK(&p.r.r->pipe(*p.w.w) == p.w.w.get());
  CHECK(p.last_source == p.r.r.get());
  CHECK(p.r.r->pipes_count() == 1);
  p.r.push("a");
  p.r.push("b");
  p.run();
  p.r.push_eof();
  p.run();
  CHECK(p.take() ==
        "pipe; push a -> true; push b -> true; _read r; resume r; _write a; _write b; "
        "push EOF -> false; end r; finish; pause r; unpipe; close r; close");
  CHECK(p.w.sink->bytes == "ab");
  CHECK(p.r.r->pipes_count() == 0);
}

SCENARIO("pipe pauses the source when write() returns false and resumes it on 'drain'") {
  pipe_rig p(with_hwm(test::async_sink(false, false), 2));
  p.r.r->pipe(*p.w.w);
  p.r.push("aa");
  p.r.push("bb");
  p.r.push("cc");
  p.run();
  CHECK(p.take() == "pipe; push aa -> true; push bb -> true; push cc -> true; _read r; resume r; _write aa; pause r");
  CHECK(p.r.state() == "length=4 flowing=false ended=false endEmitted=false destroyed=false readable=true");
  WHEN("each write completes") {
    p.w.complete();
    p.run();
    CHECK(p.take() == "drain; resume r; _write bb; pause r");
    p.w.complete();
    p.run();
    CHECK(p.take() == "drain; resume r; _write cc; pause r");
    p.w.complete();
    p.r.push_eof();
    p.run();
    THEN("the destination ends once the source has") {
      CHECK(p.take() == "drain; push EOF -> false; resume r; end r; finish; pause r; unpipe; close r; close");
      CHECK(p.w.sink->bytes == "aabbcc");
    }
  }
}

TEST_CASE("pipe into a destination that already needs 'drain' starts paused") {
  pipe_rig p(with_hwm(test::async_sink(false, false), 1));
  p.w.write("a", false);
  p.r.r->pipe(*p.w.w);
  p.r.push("b");
  p.run();
  CHECK(p.take() == "_write a; write a -> false; pipe; pause r; push b -> true; _read r; resume r");
  CHECK(p.r.state() == "length=1 flowing=false ended=false endEmitted=false destroyed=false readable=true");
  p.w.complete();
  p.run();
  CHECK(p.take() == "drain; resume r; _write b; pause r");
  p.w.complete();
  p.run();
  CHECK(p.take() == "drain; resume r");
}

TEST_CASE("pipe with end = false leaves the destination open and unpipes at the source's end") {
  pipe_rig p;
  p.r.r->pipe(*p.w.w, {.end = false});
  p.r.push("a");
  p.r.push_eof();
  p.run();
  CHECK(p.take() == "pipe; push a -> true; push EOF -> false; resume r; _write a; end r; pause r; unpipe; close r");
  CHECK(p.w.w->is_writable());
  CHECK_FALSE(p.w.w->writable_ended());
}

TEST_CASE("pipe from a source that has already ended ends the destination on the next tick") {
  readable_options ro;
  ro.auto_destroy = false;
  pipe_rig p(test::sync_sink(false, false), ro);
  p.r.on_data();
  p.r.push_eof();
  p.run();
  p.r.r->pipe(*p.w.w);
  CHECK_FALSE(p.w.w->writable_ended());
  p.run();
  CHECK(p.take() == "push EOF -> false; resume r; end r; pipe; finish; pause r; unpipe; close");
}

TEST_CASE("unpipe stops the data, pauses the source and takes every listener off the destination") {
  pipe_rig p;
  const std::string before = p.dest_listeners();
  p.r.r->pipe(*p.w.w);
  CHECK(p.dest_listeners() != before);
  p.r.push("a");
  p.run();
  p.r.r->unpipe(*p.w.w);
  CHECK(p.dest_listeners() == before);
  CHECK(p.r.r->listener_count(event::data) == 0);
  p.r.push("b");
  p.run();
  CHECK(p.take() == "pipe; push a -> true; _read r; resume r; _write a; pause r; unpipe; push b -> true; _read r");
  CHECK(p.r.state() == "length=1 flowing=false ended=false endEmitted=false destroyed=false readable=true");
  // A second unpipe, or one of a stream never piped to, does nothing.
  p.r.r->unpipe(*p.w.w);
  p.r.r->unpipe();
  CHECK(p.take().empty());
}

TEST_CASE("a destination's error unpipes before the destination's own 'error' listeners run") {
  pipe_rig p(test::async_sink(false, false));
  p.r.r->pipe(*p.w.w);
  p.r.push("a");
  p.run();
  p.w.complete(user_error("disk"));
  p.run();
  CHECK(p.take() == "pipe; push a -> true; _read r; resume r; _write a; pause r; unpipe; error disk; close");
  CHECK(p.r.state() == "length=0 flowing=false ended=false endEmitted=false destroyed=false readable=true");
  CHECK(p.r.r->pipes_count() == 0);
}

TEST_CASE("a destroyed destination's 'close' unpipes, and the source keeps its data") {
  pipe_rig p(test::async_sink(false, false));
  const std::string before = p.dest_listeners();
  p.r.r->pipe(*p.w.w);
  p.r.push("a");
  p.run();
  p.w.w->destroy();
  p.run();
  p.r.push("b");
  p.run();
  CHECK(p.take() == "pipe; push a -> true; _read r; resume r; _write a; close; pause r; unpipe; push b -> true; _read r");
  CHECK(p.r.r->readable_length() == 1);
  CHECK(p.dest_listeners() == before);
  p.w.complete();  // the write in flight still completes
}

TEST_CASE("with two destinations the source waits for the slower one's 'drain'") {
  test::trace log;
  sluice::loop l;
  named_sink *sa = nullptr, *sb = nullptr;
  auto a = named_writable(log, l, "a", sa, 1);
  auto b = named_writable(log, l, "b", sb, 1);
  readable_harness r({}, log, l, "r");
  r.r->pipe(*a);
  r.r->pipe(*b);
  r.push("x");
  r.push("y");
  l.run_until_idle();
  CHECK(log.take() == "pipe a; pipe b; push x -> true; push y -> true; _read r; resume r; _write a x; pause r; _write b x");
  sa->complete();
  l.run_until_idle();
  CHECK(log.take() == "drain a");
  CHECK(r.r->readable_flowing() == std::optional<bool>(false));
  sb->complete();
  l.run_until_idle();
  CHECK(log.take() == "drain b; resume r; _write a y; pause r; _write b y");
  sa->complete();
  sb->complete();
  l.run_until_idle();
  CHECK(log.take() == "drain a; drain b; resume r");
}

TEST_CASE("unpipe() with no destination unpipes them all") {
  test::trace log;
  sluice::loop l;
  named_sink *sa = nullptr, *sb = nullptr;
  auto a = named_writable(log, l, "a", sa, 16);
  auto b = named_writable(log, l, "b", sb, 16);
  readable_harness r({}, log, l, "r");
  r.r->pipe(*a);
  r.r->pipe(*b);
  r.r->push("x");
  l.run_until_idle();
  r.r->unpipe();
  r.r->push("y");
  l.run_until_idle();
  CHECK(log.take() == "pipe a; pipe b; _read r; resume r; _write a x; _write b x; pause r; unpipe a; unpipe b; _read r");
  CHECK(r.r->readable_length() == 1);
  CHECK(r.r->pipes_count() == 0);
  sa->complete();
  sb->complete();
}

TEST_CASE("destroying the readable object takes its listeners off the destination, which goes on") {
  pipe_rig p;
  const std::string before = p.dest_listeners();
  p.r.r->pipe(*p.w.w);
  p.r.push("a");
  p.run();
  p.r.r.reset();
  CHECK(p.dest_listeners() == before);
  p.run();
  p.w.write("z", false);
  p.w.end(false);
  p.run();
  CHECK(p.take() == "pipe; push a -> true; _read r; resume r; _write a; _write z; write z -> true; finish; close");
}

TEST_CASE("destroying the writable object mid-pipe breaks the pipe silently and keeps the data") {
  // The usual C++ scope, `auto in = ...; auto out = ...; in->pipe(*out);`,
  // destroys the writable first: the readable must not touch it afterwards.
  test::trace log;
  sluice::loop l;
  readable_harness r({}, log, l, "r");
  named_sink* sink = nullptr;
  auto w = named_writable(log, l, "w", sink, 16);
  r.r->pipe(*w);
  r.push("a");
  l.run_until_idle();
  CHECK(log.take() == "pipe w; push a -> true; _read r; resume r; _write w a");
  w.reset();
  CHECK(r.r->pipes_count() == 0);
  CHECK(r.r->listener_count(event::data) == 0);
  CHECK(r.r->readable_flowing() == std::optional<bool>(false));  // paused, without 'pause'
  r.push("b");
  l.run_until_idle();
  CHECK(log.take() == "push b -> true; _read r");  // the read-ahead, into the buffer
  CHECK(r.r->readable_length() == 1);
  r.r->unpipe();
  r.push_eof();
  l.run_until_idle();
  CHECK(r.r->read() == std::optional<std::string>("b"));
}

TEST_CASE("destroying the writable object inside the readable's 'data' listener is safe") {
  test::trace log;
  sluice::loop l;
  readable_harness r({}, log, l, "r");
  named_sink* sink = nullptr;
  auto w = named_writable(log, l, "w", sink, 16);
  r.r->on(event::data, [&](std::string_view) { w.reset(); });  // runs before the pipe's listener
  r.r->pipe(*w);
  r.push("a");
  l.run_until_idle();
  CHECK(log.take() == "pipe w; push a -> true; _read r; resume r");
  CHECK_FALSE(w);
}

TEST_CASE("a long pipe delivers every byte in order") {
  // A synchronous source of 10000 numbered chunks into a memory sink.
  class counting_source : public source {
   public:
    void read(std::size_t) override {
      if (next_ == 10000) {
        stream().push_eof();
        return;
      }
      while (next_ < 10000 && stream().push(std::to_string(next_++) + ",")) {
      }
    }

   private:
    int next_ = 0;
  };
  sluice::loop l;
  readable_options ro;
  ro.event_loop = &l;
  ro.high_water_mark = 64;
  readable r(std::make_unique<counting_source>(), ro);
  auto sink = std::make_unique<memory_sink>();
  memory_sink* ms = sink.get();
  writable_options wo;
  wo.event_loop = &l;
  wo.high_water_mark = 32;
  writable w(std::move(sink), wo);
  bool finished = false;
  w.on(event::finish, [&] { finished = true; });
  r.pipe(w);
  l.run_until_idle();
  std::string expected;
  for (int i = 0; i < 10000; ++i) expected += std::to_string(i) + ",";
  CHECK(ms->data() == expected);
  CHECK(finished);
  CHECK(r.readable_ended());
}
