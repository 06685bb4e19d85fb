// reduce() with options and an asynchronous reducer, and take()/drop()'s
// signal before their first read. Node's traces pin the order of events
// (conformance/api/op-reduce-async*, op-reduce-signal-*, op-take-signal-*,
// op-drop-signal-before); these tests pin the counts and the outcomes: each
// reducer call and each helper callback once, one call in flight at a time,
// and what is left of the source after an abort or an error.
#include <doctest/doctest.h>

#include <deque>
#include <stop_token>
#include <string>
#include <vector>

#include "sluice/sluice.h"

namespace {

std::vector<std::string> numbers(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(std::to_string(i));
  return v;
}

// A source of n chunks "0".."n-1". The helpers destroy it with an
// AbortError when they stop early; the test listens for that error.
std::unique_ptr<sluice::readable> source(int n) {
  auto r = sluice::readable_from(numbers(n));
  r->on(sluice::event::error, [](std::error_code) {});
  return r;
}

// The reducer's calls in flight, which the test completes when it likes.
struct reducer_calls {
  struct call {
    std::string acc;
    std::string item;
    sluice::reduce_done done;
  };
  std::deque<call> pending;
  int started = 0;
  std::size_t peak = 0;

  sluice::async_reduce_fn fn() {
    return [this](std::string acc, std::string_view item, sluice::reduce_done done) {
      ++started;
      pending.push_back({std::move(acc), std::string(item), std::move(done)});
      peak = std::max(peak, pending.size());
    };
  }
  // Completes the oldest call with its sum (or `ec`).
  bool complete(std::error_code ec = {}) {
    if (pending.empty()) return false;
    auto c = std::move(pending.front());
    pending.pop_front();
    c.done(ec, std::to_string(std::stoi(c.acc) + std::stoi(c.item)));
    return true;
  }
};

struct outcome {
  int calls = 0;
  std::error_code ec;
  std::string value;
  sluice::reduce_cb cb() {
    return [this](std::error_code e, std::string v) {
      ++calls;
      ec = e;
      value = std::move(v);
    };
  }
};

// Everything r gives, by to_array() run to its end: its callback once, with no error.
std::vector<std::string> read_all(sluice::readable& r) {
  std::vector<std::string> all;
  int done = 0;
  sluice::to_array(r, [&](std::error_code ec, std::vector<std::string> v) {
    CHECK_FALSE(ec);
    all = std::move(v);
    ++done;
  });
  sluice::loop::current().run_until_idle();
  CHECK(done == 1);
  return all;
}

void drive(reducer_calls& k) {
  auto& l = sluice::loop::current();
  l.run_until_idle();
  while (k.complete()) l.run_until_idle();
}

}  // namespace

TEST_CASE("reduce with an asynchronous reducer reads the next chunk only once the call completes") {
  auto src = source(100);
  reducer_calls k;
  outcome out;
  sluice::reduce(*src, k.fn(), std::string("0"), out.cb(), sluice::operator_options{});
  drive(k);
  CHECK(k.started == 100);
  CHECK(k.peak == 1);  // Node's `await reducer(...)`: one call at a time
  CHECK(out.calls == 1);
  CHECK_FALSE(out.ec);
  CHECK(out.value == std::to_string(99 * 100 / 2));
}

TEST_CASE("reduce with options and no initial value starts from the first chunk") {
  auto src = source(4);
  reducer_calls k;
  outcome out;
  sluice::reduce(*src, k.fn(), std::nullopt, out.cb(), sluice::operator_options{});
  drive(k);
  CHECK(k.started == 3);
  CHECK(out.calls == 1);
  CHECK(out.value == "6");
}

TEST_CASE("reduce with options over an empty stream: the initial value, or ERR_MISSING_ARGS without one") {
  {
    auto src = source(0);
    reducer_calls k;
    outcome out;
    sluice::reduce(*src, k.fn(), std::string("7"), out.cb(), sluice::operator_options{});
    drive(k);
    CHECK(k.started == 0);
    CHECK(out.calls == 1);
    CHECK_FALSE(out.ec);
    CHECK(out.value == "7");
  }
  {
    auto src = source(0);
    reducer_calls k;
    outcome out;
    sluice::reduce(*src, k.fn(), std::nullopt, out.cb(), sluice::operator_options{});
    drive(k);
    CHECK(out.calls == 1);
    CHECK(out.ec == sluice::make_error_code(sluice::errc::reduce_empty));
  }
}

TEST_CASE("an asynchronous reducer's error fails reduce, destroys the source and stops the calls") {
  auto src = source(10);
  reducer_calls k;
  outcome out;
  sluice::reduce(*src, k.fn(), std::string("0"), out.cb(), sluice::operator_options{});
  auto& l = sluice::loop::current();
  l.run_until_idle();
  REQUIRE(k.complete());
  l.run_until_idle();
  REQUIRE(k.complete(sluice::user_error("boom")));
  l.run_until_idle();
  CHECK(k.started == 2);
  CHECK(k.pending.empty());
  CHECK(out.calls == 1);
  CHECK(out.ec == sluice::user_error("boom"));
  CHECK(src->destroyed());
}

TEST_CASE("a reducer's second completion is ignored, as a promise settles once") {
  auto src = source(3);
  outcome out;
  int calls = 0;
  sluice::reduce(
      *src,
      [&calls](std::string acc, std::string_view item, sluice::reduce_done done) {
        ++calls;
        done({}, acc + std::string(item));
        done({}, "again");
        done(sluice::user_error("late"), "");
      },
      std::string("x"), out.cb(), sluice::operator_options{});
  sluice::loop::current().run_until_idle();
  CHECK(calls == 3);
  CHECK(out.calls == 1);
  CHECK_FALSE(out.ec);
  CHECK(out.value == "x012");
}

TEST_CASE("a synchronous reducer that throws, in the overload with options, fails reduce") {
  auto src = source(5);
  outcome out;
  int called = 0;
  sluice::reduce(
      *src,
      [&called](std::string acc, std::string_view item) -> std::string {
        if (++called == 2) throw std::runtime_error("bad item");
        return acc + std::string(item);
      },
      std::string(""), out.cb(), sluice::operator_options{});
  sluice::loop::current().run_until_idle();
  CHECK(called == 2);
  CHECK(out.calls == 1);
  CHECK(out.ec == sluice::user_error("bad item"));
  CHECK(src->destroyed());
}

TEST_CASE("reduce with a signal stopped before the call destroys the source unread and fails after its close") {
  auto src = source(3);
  std::stop_source stop;
  stop.request_stop();
  sluice::operator_options o;
  o.signal = stop.get_token();
  reducer_calls k;
  outcome out;
  bool closed_first = false;
  src->on(sluice::event::close, [&] { closed_first = out.calls == 0; });
  sluice::reduce(*src, k.fn(), std::string("0"), out.cb(), o);
  CHECK(src->destroyed());
  CHECK(out.calls == 0);  // not before the stream has closed
  drive(k);
  CHECK(k.started == 0);
  CHECK(out.calls == 1);
  CHECK(out.ec == sluice::make_error_code(sluice::errc::aborted));
  CHECK(closed_first);
}

TEST_CASE("reduce's signal stopped while a call is in flight: that call completes, the next chunk fails") {
  auto src = source(10);
  std::stop_source stop;
  sluice::operator_options o;
  o.signal = stop.get_token();
  reducer_calls k;
  outcome out;
  sluice::reduce(*src, k.fn(), std::string("0"), out.cb(), o);
  auto& l = sluice::loop::current();
  l.run_until_idle();
  REQUIRE(k.pending.size() == 1);
  stop.request_stop();
  l.run_until_idle();
  CHECK(out.calls == 0);  // looked at only when a chunk is read
  drive(k);
  CHECK(k.started == 1);
  CHECK(out.calls == 1);
  CHECK(out.ec == sluice::make_error_code(sluice::errc::aborted));
  CHECK(src->destroyed());
}

TEST_CASE("take and drop with a signal stopped before the first read fail and leave the source as it is") {
  for (bool taking : {true, false}) {
    CAPTURE(taking);
    auto src = source(3);
    std::stop_source stop;
    stop.request_stop();
    sluice::operator_options o;
    o.signal = stop.get_token();
    auto m = taking ? sluice::take(*src, 2, o) : sluice::drop(*src, 1, o);
    std::error_code error;
    int errors = 0, datas = 0, closes = 0;
    m->on(sluice::event::error, [&](std::error_code ec) {
      error = ec;
      ++errors;
    });
    m->on(sluice::event::data, [&](std::string_view) { ++datas; });
    m->on(sluice::event::close, [&] { ++closes; });
    sluice::loop::current().run_until_idle();
    CHECK(errors == 1);
    CHECK(error == sluice::make_error_code(sluice::errc::aborted));
    CHECK(datas == 0);
    CHECK(closes == 1);
    CHECK_FALSE(src->destroyed());
    // The source was never iterated: another helper reads all of it.
    const std::vector<std::string> all = read_all(*src);
    CHECK(all == numbers(3));
  }
}

TEST_CASE("take and drop with a signal not stopped read as without one") {
  auto src = source(5);
  std::stop_source stop;
  sluice::operator_options o;
  o.signal = stop.get_token();
  auto m = sluice::take(*src, 2, o);
  const std::vector<std::string> got = read_all(*m);
  CHECK(got == std::vector<std::string>{"0", "1"});
}

TEST_CASE("take's last chunk in a full result: the source is let go only when the result is read again") {
  auto src = source(5);
  auto m = sluice::take(*src, 1);
  int ends = 0;
  m->on(sluice::event::end, [&] { ++ends; });
  auto& l = sluice::loop::current();
  CHECK_FALSE(m->read());  // starts the helper; its chunk fills the result
  l.run_until_idle();
  CHECK(m->readable_length() == 1);
  // Node's generator waits at its yield: it has not returned, so the
  // source is still there.
  CHECK_FALSE(src->destroyed());
  auto c = m->read();
  REQUIRE(c);
  CHECK(*c == "0");
  l.run_until_idle();
  CHECK(src->destroyed());
  CHECK_FALSE(m->read());
  l.run_until_idle();
  CHECK(ends == 1);
}

// ---- flat_map whose function gives a stream (Node's flatMap over streams).

TEST_CASE("flat_map over streams reads each through, in input order, with concurrency 3") {
  auto src = source(20);
  sluice::operator_options o;
  o.concurrency = 3;
  int made = 0;
  auto m = sluice::flat_map(
      *src,
      [&made](std::string_view c) {
        ++made;
        std::string s(c);
        return sluice::readable_from(std::vector<std::string>{s + "a", s + "b", s + "c"});
      },
      o);
  const std::vector<std::string> got = read_all(*m);
  CHECK(made == 20);
  std::vector<std::string> want;
  for (int i = 0; i < 20; ++i)
    for (const char* x : {"a", "b", "c"}) want.push_back(std::to_string(i) + x);
  CHECK(got == want);
}

// Inner streams whose items come later, answered by the test: the helper
// waits on the first stream while later ones are made ahead.
struct late_streams {
  std::vector<std::deque<sluice::from_completion>> pulls;  // per stream, pulls in flight
  int closed = 0;                                          // 'close' of the streams made
  bool listen_for_errors = true;                           // an 'error' listener of the test's own
  sluice::flat_map_stream_fn fn() {
    return [this](std::string_view) {
      const std::size_t k = pulls.size();
      pulls.emplace_back();
      auto s = sluice::readable_from_async([this, k](sluice::from_completion done) { pulls[k].push_back(done); });
      // flat_map destroys a stream it stops reading with ABORT_ERR.
      if (listen_for_errors) s->on(sluice::event::error, [](std::error_code) {});
      s->on(sluice::event::close, [this] { ++closed; });
      return s;
    };
  }
};

TEST_CASE("flat_map over streams whose items come later keeps the order, and a stream's error fails it") {
  auto src = source(3);
  late_streams ls;
  sluice::operator_options o;
  o.concurrency = 2;
  auto m = sluice::flat_map(*src, ls.fn(), o);
  std::vector<std::string> chunks;
  std::error_code error;
  int errors = 0, closes = 0;
  m->on(sluice::event::data, [&](std::string_view c) { chunks.emplace_back(c); });
  m->on(sluice::event::error, [&](std::error_code ec) {
    error = ec;
    ++errors;
  });
  m->on(sluice::event::close, [&] { ++closes; });
  auto& l = sluice::loop::current();
  l.run_until_idle();
  // Made ahead: concurrency 2 plus the default high-water mark of 1.
  REQUIRE(ls.pulls.size() == 3);
  CHECK(ls.pulls[1].empty());  // the later ones are not read before the first ends
  CHECK(ls.pulls[2].empty());
  REQUIRE(ls.pulls[0].size() == 1);
  ls.pulls[0].front().item("x");
  ls.pulls[0].pop_front();
  l.run_until_idle();
  CHECK(chunks == std::vector<std::string>{"x"});
  REQUIRE(ls.pulls[0].size() == 1);
  ls.pulls[0].front().end();
  ls.pulls[0].pop_front();
  l.run_until_idle();
  REQUIRE(ls.pulls[1].size() == 1);  // now the second is read
  ls.pulls[1].front().error(sluice::user_error("inner"));
  ls.pulls[1].pop_front();
  l.run_until_idle();
  CHECK(errors == 1);
  CHECK(error == sluice::user_error("inner"));
  CHECK(closes == 1);
  CHECK(chunks == std::vector<std::string>{"x"});
  CHECK(src->destroyed());
}

// Node's for-await leaves its eos listener on a stream it destroys, and that
// listener takes the AbortError: nothing is reported as unhandled.
int unhandled_errors = 0;
void count_unhandled(const std::error_code&) noexcept { ++unhandled_errors; }

TEST_CASE("a stream flat_map stops reading takes its AbortError: no unhandled 'error' without a listener of its own") {
  unhandled_errors = 0;
  const auto old = sluice::set_unhandled_error_handler(count_unhandled);
  {
    auto src = source(3);
    late_streams ls;
    ls.listen_for_errors = false;
    auto m = sluice::flat_map(*src, ls.fn());
    m->on(sluice::event::data, [](std::string_view) {});
    auto& l = sluice::loop::current();
    l.run_until_idle();
    REQUIRE(ls.pulls.size() == 1);
    sluice::from_completion pending = ls.pulls[0].front();
    m->destroy();
    l.run_until_idle();
    pending.item("x");  // the return reaches the stream at its next item
    l.run_until_idle();
    CHECK(ls.closed == 1);
  }
  sluice::set_unhandled_error_handler(old);
  CHECK(unhandled_errors == 0);
}

TEST_CASE("destroying flat_map's result destroys the stream it reads; a null stream fails it") {
  {
    auto src = source(3);
    late_streams ls;
    auto m = sluice::flat_map(*src, ls.fn());
    m->on(sluice::event::data, [](std::string_view) {});
    auto& l = sluice::loop::current();
    l.run_until_idle();
    REQUIRE(ls.pulls.size() == 1);
    ls.pulls[0].front().item("x");
    ls.pulls[0].pop_front();
    l.run_until_idle();
    REQUIRE(ls.pulls[0].size() == 1);
    sluice::from_completion pending = ls.pulls[0].front();
    m->destroy();
    l.run_until_idle();
    // Node's generator returns at its next yield: once the stream it waits on
    // gives its item, the return reaches that stream, which is destroyed.
    pending.item("y");
    l.run_until_idle();
    CHECK(ls.closed == 1);  // destroyed by the helper, which (with m) still owns it
    CHECK(src->destroyed());
  }
  {
    auto src = source(2);
    auto m = sluice::flat_map(*src, [](std::string_view) { return std::unique_ptr<sluice::readable>(); });
    std::error_code error;
    m->on(sluice::event::error, [&](std::error_code ec) { error = ec; });
    m->on(sluice::event::data, [](std::string_view) {});
    sluice::loop::current().run_until_idle();
    CHECK(error == sluice::user_error("flat_map: the function gave no stream"));
    CHECK(src->destroyed());
  }
}
