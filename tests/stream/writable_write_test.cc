// writable: write(), the high-water mark, 'drain', and when callbacks run.
// Expected traces are Node v20's (checked with tests/conformance/oracle.mjs).
#include "support/printers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "support/memory_sink.h"
#include "sluice/sinks/null_sink.h"
#include "sluice/stream/writable.h"
#include "support/alloc_counter.h"
#include "support/harness.h"
#include "support/must_call.h"

using namespace sluice;
using namespace std::string_view_literals;
using sluice::test::harness;
using sluice::test::harness_options;
using sluice::test::must_call;

namespace {

harness_options with_hwm(harness_options o, std::size_t hwm) {
  o.stream.high_water_mark = hwm;
  return o;
}

}  // namespace

TEST_CASE("write returns true below the high-water mark and false from it on") {
  SUBCASE("async sink") {
    harness h(with_hwm(test::async_sink(), 4));
    CHECK(h.write("ab"));
    CHECK(h.write("c"));
    CHECK_FALSE(h.write("d"));  // length 4 == hwm
    CHECK_FALSE(h.write("e"));
    CHECK(h.w->writable_length() == 5);
    h.complete();
    h.complete();
    CHECK(h.log.str() ==
          "_write ab; write ab -> true; write c -> true; write d -> false; write e -> false; "
          "_writev c,d,e; cb ab ok; drain; cb c ok; cb d ok; cb e ok");
  }
  SUBCASE("sync sink") {
    // A sync sink never builds a queue: every write returns true.
    harness h(with_hwm(test::sync_sink(), 4));
    CHECK(h.write("abcdef"));
    CHECK(h.write("ghijkl"));
    CHECK(h.w->writable_length() == 0);
    h.run();
    CHECK(h.log.str() ==
          "_write abcdef; write abcdef -> true; _write ghijkl; write ghijkl -> true; cb abcdef ok; cb ghijkl ok");
  }
}

TEST_CASE("the default high-water mark is 16384 bytes, or 16 writes in object mode") {
  harness bytes;
  CHECK(bytes.w->writable_high_water_mark() == 16384);
  CHECK_FALSE(bytes.w->writable_object_mode());
  harness_options o;
  o.stream.object_mode = true;
  harness objects(o);
  CHECK(objects.w->writable_high_water_mark() == 16);
  CHECK(objects.w->writable_object_mode());
}

TEST_CASE("writable_length counts every pending byte, the one in flight included") {
  harness h;
  h.write("abc");
  CHECK(h.w->writable_length() == 3);
  h.write("de");
  CHECK(h.w->writable_length() == 5);
  h.complete();  // "abc" done, "de" now in flight
  CHECK(h.w->writable_length() == 2);
  h.complete();
  CHECK(h.w->writable_length() == 0);
}

TEST_CASE("writable_need_drain is set by a false write and cleared by 'drain'") {
  harness h(with_hwm(test::async_sink(), 2));
  CHECK_FALSE(h.w->writable_need_drain());
  h.write("a");
  CHECK_FALSE(h.w->writable_need_drain());
  h.write("b");  // false
  CHECK(h.w->writable_need_drain());
  h.complete();
  CHECK(h.w->writable_need_drain());  // "b" still pending
  h.complete();
  CHECK_FALSE(h.w->writable_need_drain());
  CHECK(h.log.str() == "_write a; write a -> true; write b -> false; _write b; cb a ok; drain; cb b ok");
}

TEST_CASE("'drain' comes once, when the stream is empty, before the last write's callback") {
  harness h(with_hwm(test::async_sink(), 2));
  h.write("ab");
  h.write("c");
  h.write("d");
  h.complete();  // ab: length 2 still, no drain yet
  CHECK(h.log.take() == "_write ab; write ab -> false; write c -> false; write d -> false; _writev c,d; cb ab ok");
  h.complete();
  CHECK(h.log.take() == "drain; cb c ok; cb d ok");
}

TEST_CASE("'drain' is never emitted without a false write first") {
  SUBCASE("async sink") {
    harness h;
    for (const char* c : {"a", "b", "c", "d"}) CHECK(h.write(c));
    h.sink->complete_all();
    h.run();
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    for (const char* c : {"a", "b", "c", "d"}) CHECK(h.write(c));
    h.run();
    CHECK(h.log.str().find("drain") == std::string::npos);
  }
  harness h(with_hwm(test::async_sink(), 10));
  h.write("abcdefghi");  // 9 < 10
  h.complete();
  h.run();
  CHECK(h.log.str().find("drain") == std::string::npos);
}

TEST_CASE("a second false write after 'drain' starts a new cycle ending in a second 'drain'") {
  harness h(with_hwm(test::async_sink(), 3));
  h.write("a");
  h.write("b");
  h.write("c");  // false
  h.complete();
  h.write("d");  // still false: length 3
  h.complete();
  h.complete();
  CHECK(h.log.take() ==
        "_write a; write a -> true; write b -> true; write c -> false; _writev b,c; cb a ok; write d -> false; "
        "_write d; cb b ok; cb c ok; drain; cb d ok");
  h.write("x");
  h.write("y");
  h.write("z");
  h.complete();
  h.complete();
  CHECK(h.log.take() ==
        "_write x; write x -> true; write y -> true; write z -> false; _writev y,z; cb x ok; drain; cb y ok; cb z ok");
}

TEST_CASE("a sync sink's callbacks run on the next tick, in write order") {
  harness h(test::sync_sink());
  h.write("a");
  h.write("b");
  h.write("c", false);
  h.write("d");
  CHECK(h.log.take() ==
        "_write a; write a -> true; _write b; write b -> true; _write c; write c -> true; _write d; write d -> true");
  h.run();
  CHECK(h.log.take() == "cb a ok; cb b ok; cb d ok");
}

TEST_CASE("a sync sink's callbacks are deferred through the stream's own loop") {
  // The stream runs on a private loop: the thread's default loop is not involved.
  harness h(test::sync_sink());
  h.write("a");
  loop::current().run_until_idle();
  CHECK(h.log.str() == "_write a; write a -> true");
  h.run();
  CHECK(h.log.str() == "_write a; write a -> true; cb a ok");
}

TEST_CASE("a writable without an event_loop option uses the thread's loop") {
  test::trace log;
  writable w(std::make_unique<test::recording_sink>(log, test::recording_sink_options{.sync = true}));
  CHECK(&w.event_loop() == &loop::current());
  must_call done;
  w.write("a"sv, done.cb());
  CHECK(done.calls() == 0);
  loop::current().run_until_idle();
  CHECK(done.calls() == 1);
  CHECK(log.str() == "_write a");
}

TEST_CASE("a writable needs a sink") {
  CHECK_THROWS_AS(writable(nullptr), stream_error);
}

TEST_CASE("an async sink's completions call back in write order") {
  SUBCASE("sink with writev") {
    harness h;
    h.write("a");
    h.write("b");
    h.write("c");
    h.complete();
    h.complete();
    CHECK(h.log.str() == "_write a; write a -> true; write b -> true; write c -> true; _writev b,c; cb a ok; cb b ok; cb c ok");
  }
  SUBCASE("sink without writev") {
    harness h(test::async_sink(false));
    h.write("a");
    h.write("b");
    h.write("c");
    h.complete();
    h.complete();
    h.complete();
    CHECK(h.log.str() ==
          "_write a; write a -> true; write b -> true; write c -> true; _write b; cb a ok; _write c; cb b ok; cb c ok");
  }
}

TEST_CASE("writes made while one is in flight reach the sink as one writev") {
  harness h;
  must_call done(100);
  h.w->write("first"sv, done.cb());
  for (int i = 1; i < 100; ++i) h.w->write(std::string(1, static_cast<char>('a' + i % 26)), done.cb());
  CHECK(h.sink->writes == 1);
  h.complete();
  CHECK(h.sink->writevs == 1);
  CHECK(h.sink->chunks.size() == 100);
  h.complete();
  CHECK(done.calls() == 100);
  CHECK(h.sink->bytes.size() == 5 + 99);
}

TEST_CASE("object mode counts writes, not bytes, against the high-water mark") {
  harness_options o = test::async_sink();
  o.stream.object_mode = true;
  harness h(o);
  for (int i = 0; i < 15; ++i) CHECK(h.w->write("a long chunk of text"sv));
  CHECK(h.w->writable_length() == 15);
  CHECK_FALSE(h.w->write("x"sv));
  CHECK(h.w->writable_length() == 16);
  CHECK(h.w->writable_need_drain());
  h.sink->complete_all();
  h.run();
  CHECK(h.w->writable_length() == 0);
  CHECK(h.log.str().find("drain") != std::string::npos);
}

TEST_CASE("with a high-water mark of 0 every write to an async sink returns false") {
  harness h(with_hwm(test::async_sink(), 0));
  CHECK_FALSE(h.write("a"));
  CHECK(h.w->writable_need_drain());
  h.complete();
  h.write("b");
  h.write("c");
  h.complete();
  h.complete();
  CHECK(h.log.str() ==
        "_write a; write a -> false; drain; cb a ok; _write b; write b -> false; write c -> false; _write c; "
        "cb b ok; drain; cb c ok");
}

TEST_CASE("with a high-water mark of 0 a sync sink's writes return true") {
  harness h(with_hwm(test::sync_sink(), 0));
  CHECK(h.write("a"));
  CHECK(h.w->writable_length() == 0);
  CHECK(h.write("b"));
  h.run();
  CHECK(h.log.str() == "_write a; write a -> true; _write b; write b -> true; cb a ok; cb b ok");
}

TEST_CASE("a zero-length write reaches the sink and calls back") {
  SUBCASE("async sink") {
    harness h(with_hwm(test::async_sink(), 0));
    CHECK(h.write(""));  // length stays 0, so even hwm 0 says true
    CHECK(h.w->writable_length() == 0);
    CHECK_FALSE(h.w->writable_need_drain());
    h.complete();
    CHECK(h.log.str() == "_write ; write  -> true; cb  ok");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    CHECK(h.write(""));
    h.run();
    CHECK(h.log.str() == "_write ; write  -> true; cb  ok");
  }
}

TEST_CASE("a write from inside a write callback goes out after it") {
  SUBCASE("async sink") {
    harness h;
    h.w->write("a"sv, h.cb("a"));
    must_call inner;
    h.w->write("b"sv, inner.cb([&](std::error_code ec) {
      h.log.add("cb b " + test::show(ec));
      h.write("c");
    }));
    h.complete();
    h.complete();
    h.complete();
    CHECK(h.log.str() == "_write a; _write b; cb a ok; cb b ok; _write c; write c -> true; cb c ok");
  }
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    must_call outer;
    h.w->write("a"sv, outer.cb([&](std::error_code ec) {
      h.log.add("cb a " + test::show(ec));
      h.write("b");
    }));
    h.run();
    CHECK(h.log.str() == "_write a; cb a ok; _write b; write b -> true; cb b ok");
  }
}

TEST_CASE("a write from inside a 'drain' listener is accepted") {
  harness h(with_hwm(test::async_sink(), 1));
  int drains = 0;
  h.w->once(event::drain, [&] {
    ++drains;
    h.write("again");
  });
  CHECK_FALSE(h.write("a"));
  h.complete();
  h.complete();
  CHECK(drains == 1);
  CHECK(h.log.str() == "_write a; write a -> false; drain; _write again; write again -> false; cb a ok; drain; cb again ok");
}

TEST_CASE("every write callback is called exactly once, with no error, over many writes") {
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    must_call done(1000);
    for (int i = 0; i < 1000; ++i) h.w->write("chunk"sv, done.cb());
    h.run();
    CHECK(done.calls() == 1000);
    CHECK(h.sink->bytes.size() == 5000);
  }
  SUBCASE("async sink") {
    harness h;
    must_call done(1000);
    for (int i = 0; i < 1000; ++i) {
      h.w->write("chunk"sv, done.cb());
      if (i % 7 == 0) h.sink->complete_all();
    }
    h.sink->complete_all();
    h.run();
    CHECK(done.calls() == 1000);
    CHECK(h.sink->bytes.size() == 5000);
  }
}

// ---- large chunks and owned buffers

TEST_CASE("a chunk larger than 4096 bytes written as a view lands byte-exact") {
  for (std::size_t size : {std::size_t{4096}, std::size_t{4097}, std::size_t{100000}}) {
    CAPTURE(size);
    harness h(test::sync_sink());
    must_call done;
    std::string big(size, '\0');
    for (std::size_t i = 0; i < size; ++i) big[i] = static_cast<char>('a' + i % 23);
    h.w->write(std::string_view(big), done.cb());
    big.assign(size, '#');  // the stream keeps its own copy
    h.run();
    REQUIRE(h.sink->bytes.size() == size);
    bool exact = true;
    for (std::size_t i = 0; i < size; ++i) exact = exact && h.sink->bytes[i] == static_cast<char>('a' + i % 23);
    CHECK(exact);
    CHECK(done.error() == std::error_code{});
  }
}

TEST_CASE("a large std::string&& is moved into the stream, not copied") {
  SUBCASE("sync sink") {
    harness h(test::sync_sink());
    must_call done;
    std::string big(10000, 'x');
    const char* buffer = big.data();
    h.w->write(std::move(big), done.cb());
    REQUIRE(h.sink->chunks.size() == 1);
    CHECK(h.sink->chunks[0] == buffer);
    CHECK(h.sink->bytes == std::string(10000, 'x'));
    h.run();
  }
  SUBCASE("async sink, buffered behind another write") {
    harness h;
    must_call done(2);
    h.w->write("first"sv, done.cb());
    std::string big(10000, 'y');
    const char* buffer = big.data();
    h.w->write(std::move(big), done.cb());
    CHECK(h.w->writable_length() == 10005);
    h.complete();
    h.complete();
    REQUIRE(h.sink->chunks.size() == 2);
    CHECK(h.sink->chunks[1] == buffer);
  }
}

TEST_CASE("a small std::string&& is accepted and lands") {
  harness h(test::sync_sink());
  must_call done;
  h.w->write(std::string("small"), done.cb());
  h.run();
  CHECK(h.sink->bytes == "small");
}

TEST_CASE("a large std::vector<std::byte>&& is moved into the stream, not copied") {
  harness h(test::sync_sink());
  must_call done;
  std::vector<std::byte> big(8192, std::byte{'v'});
  const char* buffer = reinterpret_cast<const char*>(big.data());
  h.w->write(std::move(big), done.cb());
  REQUIRE(h.sink->chunks.size() == 1);
  CHECK(h.sink->chunks[0] == buffer);
  CHECK(h.sink->bytes == std::string(8192, 'v'));
  h.run();
}

TEST_CASE("a shared buffer is written in place and released after its write") {
  harness h;
  must_call done;
  auto buffer = std::make_shared<std::string>(20000, 's');
  const char* where = buffer->data();
  h.w->write(std::shared_ptr<const void>(buffer), std::string_view(*buffer), done.cb());
  CHECK(buffer.use_count() == 2);
  REQUIRE(h.sink->chunks.size() == 1);
  CHECK(h.sink->chunks[0] == where);
  h.complete();
  CHECK(done.calls() == 1);
  CHECK(buffer.use_count() == 1);
}

TEST_CASE("a small shared buffer is copied and released at once") {
  harness h;
  must_call done;
  auto buffer = std::make_shared<std::string>("tiny");
  h.w->write(std::shared_ptr<const void>(buffer), std::string_view(*buffer), done.cb());
  CHECK(buffer.use_count() == 1);
  h.complete();
  CHECK(h.sink->bytes == "tiny");
}

TEST_CASE("a span of bytes is written like a view") {
  harness h(test::sync_sink());
  must_call done;
  const std::byte raw[] = {std::byte{'o'}, std::byte{'k'}, std::byte{0}, std::byte{'!'}};
  h.w->write(std::span<const std::byte>(raw), done.cb());
  h.run();
  CHECK(h.sink->bytes == std::string("ok\0!", 4));
}

TEST_CASE("bytes written in many sizes land in order, byte-exact") {
  harness h;
  must_call done(200);
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    const std::size_t n = (static_cast<std::size_t>(i) * 997) % 9000;
    std::string chunk(n, static_cast<char>('A' + i % 26));
    expected += chunk;
    if (i % 3 == 0)
      h.w->write(std::move(chunk), done.cb());
    else
      h.w->write(std::string_view(chunk), done.cb());
    if (i % 5 == 0) h.sink->complete_all();
  }
  h.sink->complete_all();
  CHECK(h.sink->bytes == expected);
}

// ---- sluice's own: coalescing sinks

TEST_CASE("a coalescing sink gets the writes of one turn as one writev at the end of the turn") {
  harness_options o;
  o.sink.sync = true;
  o.sink.coalesce = true;
  harness h(o);
  CHECK(h.write("a"));
  CHECK(h.write("b"));
  CHECK(h.write("c"));
  CHECK(h.w->writable_length() == 3);
  CHECK(h.sink->writes + h.sink->writevs == 0);
  h.run();
  CHECK(h.log.take() == "write a -> true; write b -> true; write c -> true; _writev a,b,c; cb a ok; cb b ok; cb c ok");
  h.write("d");
  h.run();
  CHECK(h.log.take() == "write d -> true; _write d; cb d ok");
}

// ---- randomised

TEST_CASE("random writes, corks and completions keep every byte in order and call every callback once") {
  for (unsigned seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
    harness_options o = test::async_sink(pick(2) == 0, false);
    o.sink.coalesce = pick(4) == 0;
    o.stream.high_water_mark = pick(3) == 0 ? 0 : 1 + pick(20000);
    harness h(o);
    must_call done(0);
    int with_cb = 0, calls_ok = 0;
    std::string expected;
    int drains = 0, false_writes = 0;
    h.w->on(event::drain, [&] { ++drains; });
    for (int op = 0; op < 300; ++op) {
      switch (pick(10)) {
        case 0:
        case 1:
        case 2:
        case 3: {
          const std::size_t n = pick(5) == 0 ? pick(9000) : pick(64);
          std::string chunk(n, static_cast<char>('a' + op % 26));
          for (std::size_t i = 0; i < n; i += 7) chunk[i] = static_cast<char>('A' + (op + i) % 26);
          expected += chunk;
          write_cb cb;
          if (pick(2)) {
            ++with_cb;
            cb = [&calls_ok](std::error_code ec) { calls_ok += ec ? 1000000 : 1; };
          }
          bool r;
          if (pick(2))
            r = h.w->write(std::move(chunk), std::move(cb));
          else
            r = h.w->write(std::string_view(chunk), std::move(cb));
          if (!r) ++false_writes;
          break;
        }
        case 4: h.w->cork(); break;
        case 5: h.w->uncork(); break;
        case 6:
        case 7:
          if (h.sink->pending()) h.complete();
          break;
        case 8: h.run(); break;
        case 9: h.sink->set_sync(pick(3) == 0); break;
      }
    }
    h.sink->set_sync(false);
    h.end();
    for (int guard = 0; guard < 100000 && (h.sink->pending() || h.loop.alive()); ++guard) {
      if (h.sink->pending()) h.complete();
      h.run();
    }
    CHECK(h.sink->bytes == expected);
    CHECK(calls_ok == with_cb);
    CHECK(h.w->writable_finished());
    CHECK(h.w->writable_length() == 0);
    CHECK(drains <= false_writes);
    CHECK(h.log.lines().size() >= 3);
    CHECK(h.log.str().find("end-cb ok; finish; close") != std::string::npos);
  }
}

TEST_CASE("random sink failures still call every callback exactly once") {
  for (unsigned seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed * 7919);
    auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
    harness_options o = test::async_sink(pick(2) == 0, pick(2) == 0);
    o.stream.auto_destroy = pick(3) != 0;
    harness h(o);
    int with_cb = 0, calls = 0;
    std::string expected;
    for (int op = 0; op < 200; ++op) {
      switch (pick(8)) {
        case 0:
        case 1:
        case 2: {
          std::string chunk(1 + pick(100), static_cast<char>('a' + op % 26));
          expected += chunk;
          ++with_cb;
          h.w->write(std::string_view(chunk), [&calls](std::error_code) { ++calls; });
          break;
        }
        case 3: h.w->cork(); break;
        case 4: h.w->uncork(); break;
        case 5:
          if (h.sink->pending()) h.complete(pick(20) == 0 ? user_error("random failure") : std::error_code{});
          break;
        case 6: h.run(); break;
        case 7:
          if (pick(30) == 0) h.w->destroy(pick(2) ? user_error("random destroy") : std::error_code{});
          break;
      }
    }
    h.end();
    for (int guard = 0; guard < 100000 && (h.sink->pending() || h.loop.alive()); ++guard) {
      if (h.sink->pending()) h.complete();
      h.run();
    }
    const std::string landed = h.sink->bytes;
    h.w.reset();  // pays whatever is still owed
    CHECK(calls == with_cb);
    // With autoDestroy nothing is written after a failure, so what landed is a
    // prefix. Without it, Node still flushes writes buffered after the error
    // (on uncork), so chunks may be skipped.
    if (o.stream.auto_destroy) CHECK(expected.compare(0, landed.size(), landed) == 0);
  }
}

// ---- overloads

// write("literal") must pick the string_view overload, as the examples in
// writable.h and loop.h use it.
template <class T>
constexpr bool accepts_write_of = requires(writable& w, T chunk) { w.write(chunk); };

TEST_CASE("write accepts a string literal and a const char*, as the header examples do") {
  CHECK(accepts_write_of<std::string_view>);
  CHECK(accepts_write_of<const std::string&>);
  CHECK(accepts_write_of<const char (&)[6]>);
  CHECK(accepts_write_of<const char*>);
}

// ---- steady state

TEST_CASE("steady-state writes to a sync sink allocate nothing") {
  loop l;
  writable_options o;
  o.event_loop = &l;
  writable w(std::make_unique<null_sink>(), o);
  int calls = 0;
  auto round = [&] {
    for (int i = 0; i < 100; ++i) w.write("0123456789abcdef0123456789abcdef"sv, [&calls](std::error_code) { ++calls; });
    for (int i = 0; i < 100; ++i) w.write("no callback"sv);
    l.run_until_idle();
  };
  for (int i = 0; i < 5; ++i) round();  // warm-up
  const std::size_t before = test::allocation_count();
  for (int i = 0; i < 100; ++i) round();
  const std::size_t after = test::allocation_count();
  CHECK(after - before == 0);
  CHECK(calls == 105 * 100);
}

TEST_CASE("steady-state writes to an async sink allocate nothing") {
  harness h;
  auto& sink = *h.sink;
  int calls = 0;
  auto round = [&] {
    for (int i = 0; i < 50; ++i) h.w->write("payload"sv, [&calls](std::error_code) { ++calls; });
    while (sink.pending() > 0) sink.complete();
    h.run();
  };
  // The recording sink itself allocates (its log); measure the stream only.
  for (int i = 0; i < 5; ++i) round();
  h.log.take();
  sink.bytes.reserve(1 << 20);
  sink.chunks.reserve(1 << 16);
  const std::size_t before = test::allocation_count();
  round();
  const std::size_t after = test::allocation_count();
  // Two sink calls per round (one _write, one _writev), two log lines each at most.
  CHECK(after - before <= 8);
  CHECK(calls == 6 * 50);
}

// A server holds many idle streams: one that was never written to holds
// nothing on the heap but itself (issue 13). The first write makes the
// request pool and the arena.
TEST_CASE("a writable allocates nothing until its first write") {
  loop l;
  auto sink = std::make_unique<null_sink>();
  const std::size_t before = test::allocation_count();
  std::optional<writable> w(std::in_place, std::move(sink), writable_options{.event_loop = &l});
  w->on(event::error, [](std::error_code) {});  // the first listener is stored inline
  const std::size_t made = test::allocation_count();
  w->write("first"sv);
  const std::size_t written = test::allocation_count();
  CHECK(made - before == 0);
  CHECK(written - made > 0);  // the count sees the stream's allocations
  w.reset();
  l.run_until_idle();
}

// A callback that throws ends the program with std::terminate, as a listener
// that throws does (tests/loop/emitter_test.cc): callbacks run from the loop in
// noexcept paths, where an exception has nowhere sound to go. In a child.
TEST_CASE("a write callback that throws ends the program with std::terminate") {
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::set_terminate([] { std::_Exit(42); });
    loop l;
    writable w(std::make_unique<memory_sink>(), {.event_loop = &l});
    w.write("x", [](std::error_code) { throw std::runtime_error("callback failed"); });
    w.end();
    l.run();
    std::_Exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
}

namespace {
// A sink whose writev fails after `landed` of its chunks were written whole
// (a short write, then ENOSPC): inside the call, or when told to.
struct part_landed_sink : sink {
  part_landed_sink() : sink({.writev = true}) {}
  std::optional<write_done> done;
  bool sync = false;
  std::size_t landed = 0;
  void write(std::string_view, write_done d) override { start(d); }
  void writev(const write_batch&, write_done d) override { start(d); }
  void start(write_done d) {
    done.emplace(d);
    if (sync) fail();
  }
  void fail() {
    const write_done d = *done;
    done.reset();
    d(std::make_error_code(std::errc::no_space_on_device), landed);
  }
};
}  // namespace

TEST_CASE("a writev that fails after some chunks landed calls those back with success, the others with the error") {
  loop l;
  std::string seen;
  auto s = std::make_unique<part_landed_sink>();
  part_landed_sink& sk = *s;
  sk.landed = 2;
  SUBCASE("sync sink") { sk.sync = true; }
  SUBCASE("async sink") {}
  writable w(std::move(s), {.event_loop = &l});
  w.on(event::error, [&](std::error_code ec) { seen += "error " + code_name(ec) + "; "; });
  w.on(event::close, [&] { seen += "close"; });
  auto note = [&](const char* name) {
    return [&seen, name](std::error_code ec) { seen += std::string(name) + " " + (ec ? code_name(ec) : "ok") + "; "; };
  };
  w.cork();
  for (const char* name : {"a", "b", "c", "d"}) w.write(std::string_view(name), note(name));
  w.uncork();
  if (!sk.sync) sk.fail();
  l.run();
  CHECK(seen == "a ok; b ok; c ENOSPC; d ENOSPC; error ENOSPC; close");
}
