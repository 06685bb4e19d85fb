// duplex, transform and pass_through: the behaviour that needs both sides
// (one destroy, allowHalfOpen, auto-destroy after both ends, a transform's
// backpressure), and real data through files. Node's event orders for these
// streams are checked by the conformance scenarios (tests/conformance/ext).
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <memory>
#include <string>

#include "sluice/base/errors.h"
#include "sluice/factories.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sources/fd_source.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/pipeline.h"
#include "sluice/stream/transform.h"
#include "support/must_call.h"
#include "support/recording_sink.h"
#include "support/recording_source.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

struct duplex_world {
  trace log;
  sluice::loop loop;
  recording_sink* snk = nullptr;
  recording_source* src = nullptr;

  std::unique_ptr<duplex> make(duplex_options o = {}, recording_sink_options so = {}) {
    auto s = std::make_unique<recording_sink>(log, so);
    auto r = std::make_unique<recording_source>(log);
    snk = s.get();
    src = r.get();
    o.event_loop = &loop;
    auto d = std::make_unique<duplex>(std::move(r), std::move(s), o);
    for (auto ev : {event::end, event::finish, event::close, event::drain})
      d->on(ev, [this, ev] { log.add(std::string(to_string(ev))); });
    d->on(event::error, [this](std::error_code ec) { log.add("error " + show(ec)); });
    return d;
  }
};

TEST_CASE("duplex: destroy(err) destroys both sides once: pending writes fail, one 'error', one 'close'") {
  must_call write_cb(1);
  duplex_world t;
  auto d = t.make();
  d->write("a", write_cb.cb());  // pending in the sink
  d->push("x");
  d->destroy(make_error_code(errc::out_of_range));
  CHECK(d->destroyed());
  CHECK(d->readable::destroyed());
  CHECK(d->writable::destroyed());
  CHECK(t.snk->destroys == 1);
  CHECK(t.src->destroys == 1);
  CHECK(t.src->destroy_error == make_error_code(errc::out_of_range));
  d->destroy(make_error_code(errc::destroyed));  // a second destroy does nothing
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_write a; error ERR_OUT_OF_RANGE; close");
  t.snk->complete();  // the sink completes late: the callback still comes once
  t.loop.run_until_idle();
  CHECK(write_cb.calls() == 1);
  CHECK(d->errored() == make_error_code(errc::out_of_range));
  CHECK_FALSE(d->is_readable());
  CHECK_FALSE(d->is_writable());
}

TEST_CASE("duplex: a readable-side error (push after EOF) destroys the writable side too") {
  must_call write_cb(1);
  duplex_world t;
  auto d = t.make({}, {.sync = true});
  d->push_eof();
  d->push("late");
  d->write("a", write_cb.cb());
  t.loop.run_until_idle();
  CHECK(d->writable::destroyed());
  CHECK(write_cb.error() == make_error_code(errc::destroyed));
  CHECK(t.log.str() == "error ERR_STREAM_PUSH_AFTER_EOF; close");
}

TEST_CASE("duplex: a write error reaches the readable side's errored()") {
  duplex_world t;
  duplex_options o;
  o.auto_destroy = false;
  auto d = t.make(o);
  d->write("a");
  t.snk->complete(make_error_code(errc::out_of_range));
  t.loop.run_until_idle();
  CHECK(d->readable::errored() == make_error_code(errc::out_of_range));
  CHECK(t.log.str() == "_write a; error ERR_OUT_OF_RANGE");
}

TEST_CASE("duplex: sides are independent; auto-destroy waits for both 'end' and 'finish'") {
  duplex_world t;
  auto d = t.make({}, {.sync = true});
  d->resume();
  d->push_eof();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "end");  // not closed: the writable side is open
  CHECK_FALSE(d->destroyed());
  CHECK(d->is_writable());
  d->write("a");
  d->end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "end; _write a; _final; finish; close");
  CHECK(d->destroyed());
}

TEST_CASE("duplex: allow_half_open = false ends the writable side at 'end'") {
  duplex_world t;
  duplex_options o;
  o.allow_half_open = false;
  auto d = t.make(o, {.sync = true});
  d->resume();
  d->push_eof();
  t.loop.run_until_idle();
  CHECK(d->writable_ended());
  CHECK(t.log.str() == "end; _final; finish; close");
}

TEST_CASE("duplex: readable = false and writable = false") {
  duplex_world t;
  duplex_options o;
  o.readable = false;
  auto d = t.make(o, {.sync = true});
  CHECK_FALSE(d->is_readable());
  d->end();
  t.loop.run_until_idle();
  CHECK(t.log.str() == "_final; finish; close");  // no 'end' to wait for

  duplex_world t2;
  duplex_options o2;
  o2.writable = false;
  auto d2 = t2.make(o2);
  CHECK_FALSE(d2->is_writable());
  must_call late(1);
  d2->write("x", late.cb());
  t2.loop.run_until_idle();
  CHECK(late.error() == make_error_code(errc::write_after_end));
}

TEST_CASE("duplex over a socket: its loop may go first; what was written lands, nothing dangles") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  must_call written(1);
  std::unique_ptr<duplex> d;
  {
    sluice::loop l;
    duplex_options o;
    o.event_loop = &l;
    d = std::make_unique<duplex>(std::make_unique<fd_source>(sv[0]), std::make_unique<fd_sink>(sv[0], true), o);
    d->write("hello", written.cb());
  }  // the loop goes first: the held write is written out (see sluice/shutdown.h)
  char buf[16];
  const ssize_t n = ::read(sv[1], buf, sizeof buf);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<std::size_t>(n)) == "hello");
  d.reset();  // pays the callback, and touches neither side's old loop
  CHECK(written.calls() == 1);
  CHECK_FALSE(written.error());
  ::close(sv[1]);
}

// A transformer that upper-cases, and records flushes.
struct upper final : transformer {
  bool flushed = false;
  void transform(std::string_view chunk, transform_done done) override {
    std::string s(chunk);
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    done(std::move(s));
  }
  void flush(transform_done done) override {
    flushed = true;
    done(std::string_view("!"));
  }
  bool has_flush() const noexcept override { return true; }
};

TEST_CASE("transform: chunks come out transformed, flush data last, 'end' before 'finish' (as in Node)") {
  must_call w1(1), w2(1), ended(1);
  trace log;
  sluice::loop l;
  duplex_options o;
  o.event_loop = &l;
  transform t(std::make_unique<upper>(), o);
  std::string out;
  t.on(event::data, [&](std::string_view c) { out += c; });
  t.on(event::finish, [&] { log.add("finish"); });
  t.on(event::end, [&] { log.add("end"); });
  t.on(event::close, [&] { log.add("close"); });
  t.write("abc", w1.cb());
  t.write("def", w2.cb());
  t.end(ended.cb());
  l.run_until_idle();
  CHECK(out == "ABCDEF!");
  CHECK(log.str() == "end; finish; close");
  CHECK(static_cast<upper&>(t.get_transformer()).flushed);
}

TEST_CASE("transform: a full readable side holds the write callback until data is read") {
  must_call first(1), second(1);
  sluice::loop l;
  duplex_options o;
  o.event_loop = &l;
  o.readable_high_water_mark = 4;
  transform t(std::make_unique<upper>(), o);
  t.write("abcd", first.cb());
  t.write("efgh", second.cb());
  l.run_until_idle();
  CHECK(first.calls() == 0);  // held: the readable side is full
  CHECK(t.readable_length() == 4);
  CHECK(t.writable_length() == 8);
  // Node: read() asks _read for more, which releases the held callback; the
  // next chunk is transformed at once, inside read(), and read with it.
  CHECK(t.read() == std::optional<std::string>("ABCDEFGH"));
  CHECK(first.calls() == 1);
  l.run_until_idle();
  CHECK(second.calls() == 1);
  CHECK_FALSE(t.read().has_value());
}

struct failing final : transformer {
  int calls = 0;
  void transform(std::string_view, transform_done done) override {
    done(make_error_code(errc::out_of_range));
  }
  void flush(transform_done done) override { done(make_error_code(errc::line_too_long)); }
  bool has_flush() const noexcept override { return true; }
};

TEST_CASE("transform: a transform error fails the write and destroys the stream") {
  must_call w(1);
  sluice::loop l;
  duplex_options o;
  o.event_loop = &l;
  transform t(std::make_unique<failing>(), o);
  std::error_code seen;
  t.on(event::error, [&](std::error_code ec) { seen = ec; });
  t.write("a", w.cb());
  l.run_until_idle();
  CHECK(w.error() == make_error_code(errc::out_of_range));
  CHECK(seen == make_error_code(errc::out_of_range));
  CHECK(t.destroyed());
}

TEST_CASE("transform: a flush error reaches end()'s callback and 'error'") {
  must_call ended(1);
  sluice::loop l;
  duplex_options o;
  o.event_loop = &l;
  transform t(std::make_unique<failing>(), o);
  std::error_code seen;
  t.on(event::error, [&](std::error_code ec) { seen = ec; });
  t.end(ended.cb());
  l.run_until_idle();
  CHECK(ended.error() == make_error_code(errc::line_too_long));
  CHECK(seen == make_error_code(errc::line_too_long));
}

struct twice final : transformer {
  void transform(std::string_view, transform_done done) override {
    done(std::string_view("x"));
    done(std::string_view("y"));
  }
};

// Node (v20.20.2) prints "data x; data y; cb ok; error ERR_MULTIPLE_CALLBACK;
// close" for the same transform.
TEST_CASE("transform: a callback called twice pushes again, then ERR_MULTIPLE_CALLBACK") {
  must_call w(1);
  trace log;
  sluice::loop l;
  duplex_options o;
  o.event_loop = &l;
  transform t(std::make_unique<twice>(), o);
  t.on(event::data, [&](std::string_view c) { log.add("data " + std::string(c)); });
  t.on(event::error, [&](std::error_code ec) { log.add("error " + show(ec)); });
  t.on(event::close, [&] { log.add("close"); });
  t.write("a", w.cb([&](std::error_code ec) { log.add("cb " + show(ec)); }));
  l.run_until_idle();
  CHECK(log.str() == "data x; data y; cb ok; error ERR_MULTIPLE_CALLBACK; close");
}

TEST_CASE("pipeline over files: file -> upper -> pass_through -> file, byte-exact, bounded") {
  temp_dir dir;
  const std::string in_path = dir.file("in"), out_path = dir.file("out");
  std::string data;
  for (int i = 0; i < 200000; ++i) data += "line " + std::to_string(i) + " of the input\n";
  spit(in_path, data);

  must_call done(1);
  sluice::loop l;
  readable_options ro;
  ro.event_loop = &l;
  auto in = make_file_readable(in_path, ro);
  duplex_options o;
  o.event_loop = &l;
  transform up(std::make_unique<upper>(), o);
  pass_through pt(o);
  writable_options wo;
  wo.event_loop = &l;
  auto out = make_file_writable(out_path, {}, wo);
  std::size_t max_pending = 0;
  up.on(event::data, [&](std::string_view) {
    max_pending = std::max({max_pending, up.readable_length(), pt.writable_length() + pt.readable_length(),
                            out->writable_length()});
  });
  std::error_code result = make_error_code(errc::destroyed);
  pipeline({*in, up, pt, *out}, done.cb([&](std::error_code ec) { result = ec; }));
  l.run();
  CHECK_FALSE(result);

  const std::string got = slurp(out_path);
  std::string want = data;
  for (char& c : want) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  want += "!";
  CHECK(got.size() == want.size());
  CHECK(got == want);
  CHECK(max_pending <= 4 * 65536);  // backpressure held every buffer near its mark
}

}  // namespace
}  // namespace sluice::test
