// readable: push(), read() and the buffer, paused and flowing modes, the
// 'readable' event, unshift(), object mode, errors and destroy().
// Expected traces are Node v20's (checked with tests/conformance/oracle.mjs),
// except for the C++ destructor and the buffer's memory behaviour, which Node
// has no counterpart of.
#include "support/printers.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/stream/readable.h"
#include "support/must_call.h"
#include "support/recording_source.h"

using namespace sluice;
using sluice::test::readable_harness;

namespace {

readable_options with_hwm(std::size_t hwm, bool object_mode = false) {
  readable_options o;
  o.high_water_mark = hwm;
  o.object_mode = object_mode;
  return o;
}

}  // namespace

TEST_CASE("the default high-water mark is 16384 bytes, or 16 chunks in object mode") {
  readable_harness bytes;
  CHECK(bytes.r->readable_high_water_mark() == 16384);
  CHECK_FALSE(bytes.r->readable_object_mode());
  readable_options o;
  o.object_mode = true;
  readable_harness objects(o);
  CHECK(objects.r->readable_high_water_mark() == 16);
  CHECK(objects.r->readable_object_mode());
}

TEST_CASE("push returns true below the high-water mark and false from it on") {
  readable_harness h(with_hwm(4));
  CHECK(h.push("ab"));
  CHECK(h.push("c"));
  CHECK_FALSE(h.push("d"));  // length 4 == hwm
  CHECK_FALSE(h.push("efgh"));
  CHECK(h.r->readable_length() == 8);
  CHECK(h.src->reads == 0);  // nobody asked for data yet
}

TEST_CASE("a first chunk larger than the high-water mark is still accepted") {
  readable_harness h(with_hwm(2));
  CHECK_FALSE(h.push("abcdef"));
  CHECK(h.r->readable_length() == 6);
}

SCENARIO("paused mode: chunks wait in the buffer for read()") {
  GIVEN("two pushed chunks") {
    readable_harness h;
    h.push("abc");
    h.push("def");
    CHECK(h.state() == "length=6 flowing=null ended=false endEmitted=false destroyed=false readable=true");
    WHEN("read(2) takes part of the first chunk and read() takes the rest") {
      h.read(2);
      h.read();
      h.read();
      THEN("the bytes come out in order and the source is asked for more") {
        // One _read only: it has pushed nothing yet, so it is still reading.
        CHECK(h.log.take() == "push abc -> true; push def -> true; _read; read -> ab; read -> cdef; read -> null");
        CHECK(h.src->last_size == 16384);
      }
      AND_WHEN("EOF is pushed and read() sees it") {
        h.log.take();
        h.push_eof();
        h.read();
        CHECK(h.r->eof_pushed());
        CHECK_FALSE(h.r->readable_ended());
        h.run();
        THEN("'end' comes on the next tick, then the auto-destroy's 'close'") {
          CHECK(h.log.take() == "push EOF -> false; read -> null; end; close");
          CHECK(h.state() == "length=0 flowing=null ended=true endEmitted=true destroyed=true readable=false");
          CHECK(h.src->destroys == 1);
        }
      }
    }
  }
}

TEST_CASE("read(n) with fewer than n bytes buffered returns null, unless ended") {
  readable_harness h;
  h.push("abc");
  CHECK_FALSE(h.read(5).has_value());
  h.push_eof();
  CHECK(h.read(5) == std::optional<std::string>("abc"));
  h.run();
  CHECK(h.log.str() == "push abc -> true; _read; read -> null; push EOF -> false; read -> abc; end; close");
}

TEST_CASE("read(n) spanning chunks joins them and splits the last") {
  readable_harness h;
  h.push("ab");
  h.push("cd");
  h.push("ef");
  CHECK(h.r->read(5) == std::optional<std::string>("abcde"));
  CHECK(h.r->readable_length() == 1);
  CHECK(h.r->read() == std::optional<std::string>("f"));
}

TEST_CASE("read() in paused mode joins everything buffered") {
  readable_harness h;
  h.push("ab");
  h.push("cd");
  CHECK(h.r->read() == std::optional<std::string>("abcd"));
  CHECK(h.r->readable_length() == 0);
}

TEST_CASE("a chunk read whole, or its rest after a partial read, is moved out, not copied") {
  readable_harness h;
  std::string big(1000, 'x');
  big[0] = 'a';
  const char* bytes = big.data();
  h.r->push(std::move(big));
  SUBCASE("read whole") {
    const auto out = h.r->read();
    REQUIRE(out.has_value());
    CHECK(out->size() == 1000);
    CHECK(out->data() == bytes);
  }
  SUBCASE("read in two parts") {
    const auto head = h.r->read(10);
    REQUIRE(head.has_value());
    CHECK(*head == std::string("axxxxxxxxx"));
    CHECK(h.r->readable_length() == 990);
    const auto rest = h.r->read();
    REQUIRE(rest.has_value());
    CHECK(*rest == std::string(990, 'x'));
    CHECK(rest->data() == bytes);  // the same buffer, its rest moved to the front
  }
}

TEST_CASE("read(n) above the high-water mark raises it to the next power of two") {
  readable_harness h(with_hwm(4));
  h.r->read(5);
  CHECK(h.r->readable_high_water_mark() == 8);
  h.r->read(1000);
  CHECK(h.r->readable_high_water_mark() == 1024);
}

TEST_CASE("read(n) above 1 GiB throws ERR_OUT_OF_RANGE, as Node does") {
  readable_harness h;
  h.push("abc");
  try {
    h.r->read(std::size_t{1} << 31);
    FAIL("read did not throw");
  } catch (const stream_error& e) {
    CHECK(e.code() == make_error_code(errc::out_of_range));
  }
  CHECK(h.r->readable_length() == 3);
  CHECK(h.r->readable_high_water_mark() == 16384);
}

TEST_CASE("a synchronous source's push inside _read is returned by the same read()") {
  readable_harness h(with_hwm(4));
  int n = 0;
  h.src->on_read = [&](readable& r) {
    if (n < 3)
      r.push(std::string(1, 'c').append(std::to_string(n++)));
    else
      r.push_eof();
  };
  CHECK(h.r->read() == std::optional<std::string>("c0"));
  CHECK(h.r->read() == std::optional<std::string>("c1"));
  std::string rest;
  h.r->on(event::data, [&](std::string_view c) { rest += c; });
  test::must_call ended;
  h.r->once(event::end, [cb = ended.cb()]() mutable { cb({}); });
  h.run();
  CHECK(rest == "c2");
  CHECK(h.r->readable_ended());
}

SCENARIO("flowing mode: a 'data' listener starts the flow on the next tick") {
  readable_harness h;
  h.push("one");
  h.push("two");
  h.on_data();
  CHECK(h.r->readable_flowing() == std::optional<bool>(true));
  CHECK(h.log.take() == "push one -> true; push two -> true");
  h.run();
  CHECK(h.log.take() == "_read; resume; data one; data two");
  WHEN("more is pushed while flowing with nothing buffered") {
    h.push("three");
    const std::string pushed = h.log.take();
    THEN("it is emitted at once, inside push()") { CHECK(pushed == "data three; push three -> true"); }
    AND_WHEN("EOF is pushed") {
      h.push_eof();
      h.run();
      THEN("'end' and 'close' follow") {
        CHECK(h.log.take() == "push EOF -> false; end; close");
        CHECK(h.state() == "length=0 flowing=true ended=true endEmitted=true destroyed=true readable=false");
      }
    }
  }
}

TEST_CASE("readable_flowing is null, then true, then false after pause()") {
  readable_harness h;
  CHECK_FALSE(h.r->readable_flowing().has_value());
  CHECK_FALSE(h.r->is_paused());
  h.r->resume();
  CHECK(h.r->readable_flowing() == std::optional<bool>(true));
  h.r->pause();
  CHECK(h.r->readable_flowing() == std::optional<bool>(false));
  CHECK(h.r->is_paused());
  h.run();
  CHECK(h.log.str() == "pause; _read; resume");
}

TEST_CASE("pause() before a 'data' listener keeps the stream paused") {
  readable_harness h;
  h.r->pause();
  h.push("a");
  h.on_data();
  h.run();
  CHECK(h.log.take() == "pause; push a -> true; _read");  // the read-ahead of maybeReadMore
  CHECK(h.r->readable_length() == 1);
  h.r->resume();
  h.run();
  CHECK(h.log.take() == "resume; data a");
}

TEST_CASE("pause() emits 'pause' unless the stream is already paused") {
  readable_harness h;
  h.r->pause();  // flowing null -> false: emitted
  h.r->pause();
  CHECK(h.log.take() == "pause");
  h.r->resume();
  h.r->pause();
  CHECK(h.log.take() == "pause");
  h.run();
  CHECK(h.log.take() == "_read; resume");
}

TEST_CASE("'readable' is emitted on the next tick and read() drains the buffer") {
  readable_harness h(with_hwm(4));
  h.r->on(event::readable, [&] {
    h.log.add("readable");
    while (auto c = h.r->read()) h.log.add("got " + *c);
  });
  h.push("abc");
  h.push("de");
  CHECK(h.r->readable_flowing() == std::optional<bool>(false));
  h.run();
  // The first read() inside the listener asks the source for more first.
  CHECK(h.log.str() == "push abc -> true; push de -> false; readable; _read; got abcde");
}

TEST_CASE("a 'readable' listener takes precedence over 'data'") {
  readable_harness h;
  h.on_readable();
  h.on_data();
  h.push("a");
  h.run();
  CHECK(h.r->readable_flowing() == std::optional<bool>(false));
  CHECK(h.log.take() == "push a -> true; _read; readable");
  h.read();
  CHECK(h.log.take() == "data a; read -> a");
}

TEST_CASE("removing the 'readable' listener lets a 'data' listener flow again") {
  readable_harness h;
  const listener_id id = h.on_readable();
  h.on_data();
  h.push("a");
  h.run();
  h.log.take();
  h.r->off(event::readable, id);
  h.run();
  CHECK(h.log.take() == "resume; data a");
  CHECK(h.r->readable_flowing() == std::optional<bool>(true));
}

TEST_CASE("a once('data') listener is called once and counts as a data listener until then") {
  readable_harness h;
  test::must_call called;
  h.r->once(event::data, [cb = called.cb()](std::string_view) mutable { cb({}); });
  h.push("a");
  h.push("b");
  h.run();
  CHECK(called.calls() == 1);
  CHECK(h.r->listener_count(event::data) == 0);
  // Flowing with no data listener left: the second chunk went out unheard, as in Node.
  CHECK(h.r->readable_length() == 0);
}

TEST_CASE("unshift puts a chunk back at the front") {
  readable_harness h;
  h.push("cd");
  h.r->read(1);
  h.r->unshift("ab");
  CHECK(h.r->readable_length() == 3);
  CHECK(h.r->read() == std::optional<std::string>("abd"));
}

TEST_CASE("unshift after 'end' errors with ERR_STREAM_UNSHIFT_AFTER_END_EVENT") {
  readable_options o;
  o.auto_destroy = false;
  readable_harness h(o);
  h.push_eof();
  h.read();
  h.run();
  h.log.take();
  h.r->unshift("x");
  CHECK(h.log.take() == "error ERR_STREAM_UNSHIFT_AFTER_END_EVENT");
  CHECK(h.r->errored() == make_error_code(errc::unshift_after_end));
}

TEST_CASE("push after EOF errors with ERR_STREAM_PUSH_AFTER_EOF") {
  SUBCASE("autoDestroy: 'error' and 'close' on the next tick") {
    readable_harness h;
    h.push_eof();
    CHECK_FALSE(h.push("x"));
    CHECK(h.r->destroyed());
    h.run();
    CHECK(h.log.str() == "push EOF -> false; push x -> false; error ERR_STREAM_PUSH_AFTER_EOF; close");
  }
  SUBCASE("noAutoDestroy: 'error' inside push(), no 'close'") {
    readable_options o;
    o.auto_destroy = false;
    readable_harness h(o);
    h.push_eof();
    CHECK_FALSE(h.push("x"));
    CHECK_FALSE(h.r->destroyed());
    CHECK_FALSE(h.r->is_readable());
    h.run();
    CHECK(h.log.str() == "push EOF -> false; error ERR_STREAM_PUSH_AFTER_EOF; push x -> false");
  }
}

TEST_CASE("object mode counts chunks and read() gives one chunk whatever n") {
  readable_harness h(with_hwm(2, true));
  CHECK(h.push("long-chunk"));
  CHECK_FALSE(h.push("b"));
  CHECK(h.r->readable_length() == 2);
  CHECK(h.r->read(1) == std::optional<std::string>("long-chunk"));
  CHECK(h.r->read() == std::optional<std::string>("b"));
}

TEST_CASE("an empty chunk is a chunk in object mode only") {
  SUBCASE("byte mode") {
    readable_harness h;
    CHECK(h.r->push(""));
    CHECK(h.r->readable_length() == 0);
  }
  SUBCASE("object mode") {
    readable_harness h(with_hwm(16, true));
    CHECK(h.r->push(""));
    CHECK(h.r->readable_length() == 1);
    CHECK(h.r->read() == std::optional<std::string>(""));
  }
}

TEST_CASE("hwm 0: push returns false at once, and the source is read only when the buffer is empty") {
  readable_harness h(with_hwm(0));
  CHECK_FALSE(h.push("a"));
  h.run();
  CHECK(h.src->reads == 0);
  CHECK(h.r->read() == std::optional<std::string>("a"));
  CHECK(h.src->reads == 0);
  CHECK_FALSE(h.r->read().has_value());
  CHECK(h.src->reads == 1);
}

TEST_CASE("destroy(err) emits 'error' then 'close' on the next tick") {
  readable_harness h;
  h.push("a");
  h.r->destroy(user_error("boom"));
  CHECK(h.r->destroyed());
  CHECK(h.r->closed());
  CHECK_FALSE(h.r->is_readable());
  CHECK(h.r->readable_aborted());
  CHECK(h.r->errored() == user_error("boom"));
  CHECK(h.src->destroys == 1);
  CHECK(h.src->destroy_error == user_error("boom"));
  CHECK_FALSE(h.push("b"));
  h.run();
  CHECK(h.log.str() == "push a -> true; push b -> false; error boom; close");
}

TEST_CASE("destroy twice emits one 'close' and the first error only") {
  readable_harness h;
  h.r->destroy(user_error("first"));
  h.r->destroy(user_error("second"));
  h.r->destroy();
  h.run();
  CHECK(h.log.str() == "error first; close");
  CHECK(h.src->destroys == 1);
}

TEST_CASE("destroy after the flow has started: later pushes are refused, 'data' stops") {
  readable_harness h;
  h.on_data();
  h.push("a");
  h.run();
  h.r->destroy();
  CHECK_FALSE(h.push("b"));
  h.run();
  CHECK(h.log.str() == "push a -> true; _read; resume; data a; push b -> false; close");
}

TEST_CASE("Node quirk: destroy in the turn a 'data' listener was added still lets the buffer flow first") {
  // resume_tick() was queued before destroy()'s 'close', and read() only stops
  // emitting 'data' once 'close' (or 'error') has been emitted.
  readable_harness h;
  h.on_data();
  h.push("a");
  h.push("b");
  h.r->destroy();
  h.run();
  CHECK(h.log.str() == "push a -> true; push b -> true; resume; data a; data b; close");
}

TEST_CASE("noEmitClose: 'end' but no 'close'") {
  readable_options o;
  o.emit_close = false;
  readable_harness h(o);
  h.on_data();
  h.push_eof();
  h.run();
  CHECK(h.log.str() == "push EOF -> false; resume; end");
  CHECK(h.r->destroyed());
}

TEST_CASE("noAutoDestroy: 'end' without destroy") {
  readable_options o;
  o.auto_destroy = false;
  readable_harness h(o);
  h.on_data();
  h.push_eof();
  h.run();
  CHECK(h.log.str() == "push EOF -> false; resume; end");
  CHECK_FALSE(h.r->destroyed());
  CHECK(h.r->readable_ended());
}

TEST_CASE("'end' is emitted exactly once") {
  readable_harness h;
  test::must_call ended;
  h.r->on(event::end, [cb = ended.cb()]() mutable { cb({}); });
  h.on_data();
  h.push("a");
  h.push_eof();
  h.r->read();
  h.r->read();
  h.run();
  h.r->read();
  h.run();
}

TEST_CASE("the destructor drops deferred work: nothing runs after the readable is gone") {
  test::trace log;
  sluice::loop l;
  {
    readable_harness h({}, log, l);
    h.on_data();
    h.push("a");
    h.r->destroy(user_error("x"));
  }
  l.run_until_idle();
  CHECK(log.str() == "push a -> true");
  CHECK_FALSE(l.alive());
}

TEST_CASE("the destructor destroys the source once, unless destroy() did") {
  class counting_source : public source {
   public:
    explicit counting_source(int& destroys) : destroys_(destroys) {}
    void read(std::size_t) override {}
    std::error_code destroy(std::error_code err) noexcept override {
      ++destroys_;
      return err;
    }

   private:
    int& destroys_;
  };
  sluice::loop l;
  readable_options o;
  o.event_loop = &l;
  int destroys = 0;
  SUBCASE("never destroyed") {
    { readable r(std::make_unique<counting_source>(destroys), o); }
    CHECK(destroys == 1);
  }
  SUBCASE("destroyed first") {
    {
      readable r(std::make_unique<counting_source>(destroys), o);
      r.destroy();
      CHECK(destroys == 1);
    }
    CHECK(destroys == 1);
  }
}

TEST_CASE("a source pushing later, from the loop, feeds a flowing consumer") {
  // The source of the header's example: pushes asynchronously.
  class ticking_source : public source {
   public:
    void read(std::size_t) override {
      loop_->next_tick([this] {
        if (next_ == 3)
          stream().push_eof();
        else
          stream().push(std::to_string(next_++));
      });
    }
    void attach(sluice::loop& l) override { loop_ = &l; }

   private:
    sluice::loop* loop_ = nullptr;
    int next_ = 0;
  };
  sluice::loop l;
  readable_options o;
  o.event_loop = &l;
  readable r(std::make_unique<ticking_source>(), o);
  std::string got;
  bool ended = false;
  r.on(event::data, [&](std::string_view c) { got += c; });
  r.on(event::end, [&] { ended = true; });
  l.run_until_idle();
  CHECK(got == "012");
  CHECK(ended);
}
