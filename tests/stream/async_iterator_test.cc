// async_iterator: Node's createAsyncIterator(), the one for-await engine
// under the iterator helpers and asio/chunks.h. What leaving the loop does
// to the stream (destroyOnReturn), and the end as finished() sees it.
#include "support/printers.h"

#include <doctest/doctest.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/async_iterator.h"
#include "sluice/stream/from.h"
#include "sluice/stream/readable.h"
#include "support/recording_source.h"

using namespace sluice;

namespace {

std::vector<std::string> items(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(std::to_string(i));
  return v;
}

// Drives `it` as `for await (const c of r) { got.push_back(c); if (got.size() == stop_after) break; }`.
// With `log`, each step is logged too ("next C", "done", "throw CODE"); with
// `leave` unset, the body stops at stop_after without leaving the loop (no
// return(): the iteration stays as it is).
struct loop_body {
  loop_body(std::shared_ptr<async_iterator> i, std::size_t n, test::trace* l = nullptr)
      : it(std::move(i)), stop_after(n), log(l) {}
  std::shared_ptr<async_iterator> it;
  std::size_t stop_after;
  test::trace* log;
  bool leave = true;
  std::vector<std::string> got;
  bool ended = false;
  std::error_code error;

  void note(const std::string& line) {
    if (log) log->add(line);
  }
  void step() {
    async_iterator::step s = it->next();
    switch (s.kind) {
      case async_iterator::step::pending:
        return it->wait([this] { step(); });
      case async_iterator::step::end:
        ended = true;
        return note("done");
      case async_iterator::step::error:
        error = s.ec;
        return note("throw " + test::show(s.ec));
      case async_iterator::step::chunk:
        note("next " + s.value);
        got.push_back(std::move(s.value));
        if (got.size() == stop_after) {
          if (leave) it->close();
          return;
        }
        return it->after_await([this] { step(); });
    }
  }
};

}  // namespace

TEST_CASE("async_iterator reads every chunk, then the end; the stream is closed by then") {
  loop l;
  from_options o;
  o.event_loop = &l;
  auto r = readable_from(items(3), o);
  loop_body b(async_iterator::create(*r), 100);
  b.step();
  l.run();
  CHECK(b.got == items(3));
  CHECK(b.ended);
  CHECK_FALSE(b.error);
  CHECK(r->destroyed());  // finished() waited for 'close' (auto_destroy)
}

TEST_CASE("leaving the loop early destroys the stream with an AbortError, unless destroy_on_return is unset") {
  loop l;
  from_options o;
  o.event_loop = &l;
  auto r = readable_from(items(5), o);
  std::error_code seen;
  r->on(event::error, [&](std::error_code ec) { seen = ec; });
  SUBCASE("destroy_on_return (Node's default)") {
    loop_body b(async_iterator::create(*r), 2);
    b.step();
    l.run();
    CHECK(b.got == std::vector<std::string>{"0", "1"});
    CHECK(r->destroyed());
    CHECK(seen == errc::aborted);
  }
  SUBCASE("destroy_on_return = false: the stream is left to read on") {
    loop_body b(async_iterator::create(*r, {.destroy_on_return = false}), 2);
    b.step();
    l.run();
    CHECK(b.got == std::vector<std::string>{"0", "1"});
    CHECK_FALSE(r->destroyed());
    CHECK_FALSE(seen);
    loop_body rest(async_iterator::create(*r), 100);
    rest.step();
    l.run();
    CHECK(rest.got == std::vector<std::string>{"2", "3", "4"});
    CHECK(rest.ended);
  }
}

TEST_CASE("a stream destroyed with an error gives it once; the iterator is closed after") {
  loop l;
  from_options o;
  o.event_loop = &l;
  auto r = readable_from(items(3), o);
  r->on(event::error, [](std::error_code) {});
  loop_body b(async_iterator::create(*r), 100);
  r->destroy(std::make_error_code(std::errc::io_error));
  b.step();
  l.run();
  CHECK(b.got.empty());
  CHECK(b.error == std::errc::io_error);
  CHECK(b.it->closed());
  CHECK(b.it->next().kind == async_iterator::step::end);
}

// ---- a read that waits (the path of asio::chunks): each trace below is
// Node v20's for `for await` over a Readable whose _read logs "_read" (and,
// for the backpressure case, pushes), with `act` run in a later turn, while
// the loop waits for a chunk.

namespace {

// Runs `act` while the iteration of a fresh readable waits in read(), and
// returns the trace, with the buffered length at the end.
std::string waiting_read(const std::function<void(readable&, test::trace&)>& act, std::size_t hwm = 16384,
                         std::size_t stop = 100, std::function<void(readable&)> on_read = {}) {
  test::trace log;
  loop l;
  readable_options o;
  o.event_loop = &l;
  o.high_water_mark = hwm;
  auto s = std::make_unique<test::recording_source>(log);
  s->on_read = std::move(on_read);
  readable r(std::move(s), o);
  for (auto ev : {event::end, event::close, event::pause, event::resume})
    r.on(ev, [&log, ev] { log.add(std::string(to_string(ev))); });
  r.on(event::error, [&log](std::error_code ec) { log.add("error " + test::show(ec)); });
  loop_body body(async_iterator::create(r, {.destroy_on_return = false}), stop, &log);
  body.leave = false;
  body.step();
  l.run_until_idle();
  act(r, log);
  l.run_until_idle();
  log.add("length " + std::to_string(r.readable_length()));
  body.it->close();
  return log.take();
}

}  // namespace

TEST_CASE("a waiting read gets a pushed chunk after 'readable' and the read-ahead, in Node's order") {
  // The 'readable' and the read-ahead (maybeReadMore) share one tick: a tick
  // a 'readable' listener queues still runs after the read-ahead's _read.
  std::string got = waiting_read([](readable& r, test::trace& log) {
    r.on(event::readable, [&r, &log] {
      log.add("readable");
      r.event_loop().next_tick([&log] { log.add("tick from readable"); });
    });
    r.push("abc");
    log.add("push abc");
    log.add("length " + std::to_string(r.readable_length()));
  });
  CHECK(got == "_read; push abc; length 3; readable; _read; tick from readable; next abc; length 0");
}

TEST_CASE("a waiting read: two pushes in one turn come out joined, as one read() takes them") {
  CHECK(waiting_read([](readable& r, test::trace& log) {
          r.push("ab");
          r.push("cd");
          log.add("push ab, cd");
        }) == "_read; push ab, cd; _read; next abcd; length 0");
}

TEST_CASE("a waiting read gets an unshifted chunk") {
  CHECK(waiting_read([](readable& r, test::trace& log) {
          r.unshift("x");
          log.add("unshift x");
        }) == "_read; unshift x; next x; length 0");
}

TEST_CASE("a waiting read across pause() and resume(): no 'pause', the chunk still comes") {
  CHECK(waiting_read([](readable& r, test::trace& log) {
          r.pause();
          log.add("pause()");
          r.push("ab");
          log.add("push ab");
          r.resume();
          log.add("resume()");
        }) == "_read; pause(); push ab; resume(); _read; resume; next ab; length 0");
}

TEST_CASE("a waiting read gets the last chunk, then 'end' and 'close', then the end") {
  CHECK(waiting_read([](readable& r, test::trace& log) {
          r.push("ab");
          r.push_eof();
          log.add("push ab, EOF");
        }) == "_read; push ab, EOF; next ab; end; close; done; length 0");
}

TEST_CASE("a waiting read on a destroyed stream: 'close', then a premature close; a pushed chunk stays") {
  CHECK(waiting_read([](readable& r, test::trace& log) {
          r.destroy();
          log.add("destroy()");
        }) == "_read; destroy(); close; throw ERR_STREAM_PREMATURE_CLOSE; length 0");
  CHECK(waiting_read([](readable& r, test::trace& log) {
          r.push("ab");
          r.destroy();
          log.add("push ab, destroy()");
        }) == "_read; push ab, destroy(); close; throw ERR_STREAM_PREMATURE_CLOSE; length 2");
}

TEST_CASE("backpressure: a consumer that stops reading stops the source at the high-water mark") {
  // The source pushes 4 bytes at each _read; the body takes one chunk and
  // reads no more. The read-ahead fills the buffer to hwm 8, then no _read.
  std::string got = waiting_read(
      [](readable& r, test::trace& log) {
        r.push("abcd");
        log.add("push abcd");
      },
      8, 1, [](readable& r) { r.push("efgh"); });
  CHECK(got == "_read; next efgh; _read; _read; push abcd; length 12");
}
