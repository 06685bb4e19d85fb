// The iterator helpers with operator_options: asynchronous functions, up to
// `concurrency` calls in flight, results in input order, the high-water
// mark, the signal and a function's error. Node's traces pin the order of
// events (conformance/api/op-*-concurrency*, op-map-signal-*, ...); these
// tests pin the counts: every completion and every helper callback once,
// the peak of calls in flight, and what is cleaned up after an abort or an
// error.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "sluice/sluice.h"

namespace {

using namespace std::chrono_literals;

std::vector<std::string> letters(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.emplace_back(1, static_cast<char>('a' + i));
  return v;
}

// A source of n one-letter chunks. The helpers destroy it with an
// AbortError when they stop early; the test listens for that error.
std::unique_ptr<sluice::readable> source(int n) {
  auto r = sluice::readable_from(letters(n));
  r->on(sluice::event::error, [](std::error_code) {});
  return r;
}

std::string upper(std::string_view c) {
  std::string u(c);
  for (char& ch : u) ch = static_cast<char>(ch - 'a' + 'A');
  return u;
}

// The calls in flight of an asynchronous function, which the test
// completes in the order it likes; counts the peak in flight.
struct calls {
  struct call {
    std::string item;
    sluice::map_done done;
  };
  std::deque<call> pending;
  int started = 0;
  int completed = 0;
  std::size_t peak = 0;

  sluice::async_map_fn map_fn() {
    return [this](std::string_view item, sluice::map_done done) {
      ++started;
      pending.push_back({std::string(item), std::move(done)});
      peak = std::max(peak, pending.size());
    };
  }
  // Completes the newest call (the reverse of the input order).
  bool complete_last(std::error_code ec = {}) {
    if (pending.empty()) return false;
    auto c = std::move(pending.back());
    pending.pop_back();
    ++completed;
    c.done(ec, upper(c.item));
    return true;
  }
};

// Every chunk of `r` in flowing mode, its end, its error and its 'close'.
struct collected {
  std::vector<std::string> chunks;
  int ends = 0;
  int closes = 0;
  std::error_code error;
};

void collect(sluice::readable& r, collected& c) {
  r.on(sluice::event::data, [&c](std::string_view chunk) { c.chunks.emplace_back(chunk); });
  r.on(sluice::event::end, [&c] { ++c.ends; });
  r.on(sluice::event::close, [&c] { ++c.closes; });
  r.on(sluice::event::error, [&c](std::error_code ec) { c.error = ec; });
}

// Runs the loop, completing the newest call in flight each time it is idle.
void drive(calls& k) {
  auto& l = sluice::loop::current();
  l.run_until_idle();
  while (k.complete_last()) l.run_until_idle();
}

}  // namespace

TEST_CASE("map with concurrency 3 has at most 3 calls in flight and keeps the input order") {
  for (std::size_t concurrency : {1u, 2u, 3u}) {
    CAPTURE(concurrency);
    auto src = source(10);
    calls k;
    sluice::operator_options o;
    o.concurrency = concurrency;
    auto m = sluice::map(*src, k.map_fn(), o);
    collected c;
    collect(*m, c);
    drive(k);
    CHECK(k.peak == concurrency);  // reached, never passed
    CHECK(k.started == 10);
    CHECK(k.completed == 10);
    CHECK(c.chunks == std::vector<std::string>{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"});
    CHECK(c.ends == 1);
    CHECK(c.closes == 1);
    CHECK(!c.error);
  }
}

TEST_CASE("map's calls completed by timers, out of order, give their results in order") {
  auto& l = sluice::loop::current();
  auto src = source(6);
  int in_flight = 0, peak = 0, completions = 0;
  sluice::operator_options o;
  o.concurrency = 4;
  auto m = sluice::map(
      *src,
      [&](std::string_view item, sluice::map_done done) {
        peak = std::max(peak, ++in_flight);
        // Later items finish sooner (the order of deadlines, not their
        // length, matters: nothing here is bounded by time).
        l.set_timeout(std::chrono::milliseconds(2 * ('g' - item[0])),
                      [&, done = std::make_shared<sluice::map_done>(std::move(done)), v = upper(item)]() mutable {
                        --in_flight;
                        ++completions;
                        (*done)({}, v);
                      });
      },
      o);
  collected c;
  collect(*m, c);
  l.run();
  CHECK(peak == 4);
  CHECK(completions == 6);
  CHECK(c.chunks == std::vector<std::string>{"A", "B", "C", "D", "E", "F"});
  CHECK(c.ends == 1);
}

TEST_CASE("map's high_water_mark bounds the results made ahead of the reader") {
  auto src = source(10);
  calls k;
  sluice::operator_options o;
  o.concurrency = 2;
  o.high_water_mark = 3;
  auto m = sluice::map(*src, k.map_fn(), o);
  auto& l = sluice::loop::current();
  CHECK(!m->read());  // the first _read starts the helper
  l.run_until_idle();
  // Nobody reads: calls go on until 2 + 3 results wait (one of them in the
  // result stream's buffer, taken by its _read).
  for (int i = 0; i < 20 && k.complete_last(); ++i) l.run_until_idle();
  // concurrency + high_water_mark results, the one in the result's buffer
  // among them until the reader takes it (Node: op-map-hwm).
  CHECK(k.started == 2 + 3);
  CHECK(k.pending.empty());
  collected c;
  collect(*m, c);
  drive(k);
  CHECK(c.chunks == std::vector<std::string>{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"});
  CHECK(k.started == 10);
  CHECK(k.completed == 10);
}

TEST_CASE("filter and flat_map with concurrency keep the input order") {
  SUBCASE("filter") {
    auto src = source(6);
    std::deque<std::pair<std::string, sluice::predicate_done>> pending;
    std::size_t peak = 0;
    sluice::operator_options o;
    o.concurrency = 3;
    auto f = sluice::filter(
        *src,
        [&](std::string_view item, sluice::predicate_done done) {
          pending.emplace_back(std::string(item), std::move(done));
          peak = std::max(peak, pending.size());
        },
        o);
    collected c;
    collect(*f, c);
    auto& l = sluice::loop::current();
    l.run_until_idle();
    while (!pending.empty()) {
      auto [item, done] = std::move(pending.back());
      pending.pop_back();
      done({}, item != "b" && item != "e");
      l.run_until_idle();
    }
    CHECK(peak == 3);
    CHECK(c.chunks == std::vector<std::string>{"a", "c", "d", "f"});
    CHECK(c.ends == 1);
  }
  SUBCASE("flat_map") {
    auto src = source(3);
    std::deque<std::pair<std::string, sluice::flat_map_done>> pending;
    sluice::operator_options o;
    o.concurrency = 2;
    auto f = sluice::flat_map(
        *src,
        [&](std::string_view item, sluice::flat_map_done done) {
          pending.emplace_back(std::string(item), std::move(done));
        },
        o);
    collected c;
    collect(*f, c);
    auto& l = sluice::loop::current();
    l.run_until_idle();
    while (!pending.empty()) {
      auto [item, done] = std::move(pending.back());
      pending.pop_back();
      // b gives nothing: an empty sequence is skipped.
      done({}, item == "b" ? std::vector<std::string>{} : std::vector<std::string>{item, upper(item)});
      l.run_until_idle();
    }
    CHECK(c.chunks == std::vector<std::string>{"a", "A", "c", "C"});
    CHECK(c.ends == 1);
  }
  SUBCASE("flat_map, synchronous") {
    auto src = source(2);
    auto f = sluice::flat_map(*src, [](std::string_view item) { return std::vector<std::string>(3, std::string(item)); });
    collected c;
    collect(*f, c);
    sluice::loop::current().run_until_idle();
    CHECK(c.chunks == std::vector<std::string>{"a", "a", "a", "b", "b", "b"});
  }
}

TEST_CASE("for_each with concurrency calls back once, after every call completed") {
  auto src = source(7);
  std::deque<sluice::item_done> pending;
  std::size_t peak = 0;
  int calls_made = 0, cb_calls = 0;
  std::error_code result{std::make_error_code(std::errc::io_error)};
  sluice::operator_options o;
  o.concurrency = 2;
  sluice::for_each(
      *src,
      [&](std::string_view, sluice::item_done done) {
        ++calls_made;
        pending.push_back(std::move(done));
        peak = std::max(peak, pending.size());
      },
      [&](std::error_code ec) {
        ++cb_calls;
        result = ec;
        CHECK(pending.empty());
      },
      o);
  auto& l = sluice::loop::current();
  l.run_until_idle();
  while (!pending.empty()) {
    auto d = std::move(pending.back());
    pending.pop_back();
    d({});
    l.run_until_idle();
  }
  CHECK(peak == 2);
  CHECK(calls_made == 7);
  CHECK(cb_calls == 1);
  CHECK(!result);
}

TEST_CASE("an abort with calls in flight gives AbortError and destroys the result and the source") {
  auto src = source(8);
  calls k;
  std::stop_source stop;
  sluice::operator_options o;
  o.concurrency = 3;
  o.signal = stop.get_token();
  auto m = sluice::map(*src, k.map_fn(), o);
  collected c;
  collect(*m, c);
  auto& l = sluice::loop::current();
  l.run_until_idle();
  REQUIRE(k.pending.size() == 3);
  stop.request_stop();
  drive(k);  // the calls in flight still complete, once each
  CHECK(c.error == sluice::make_error_code(sluice::errc::aborted));
  CHECK(c.chunks.empty());
  CHECK(c.ends == 0);
  CHECK(c.closes == 1);
  CHECK(m->destroyed());
  CHECK(src->destroyed());
  CHECK(k.started == 3);  // no call after the abort
  CHECK(k.completed == 3);
}

TEST_CASE("a signal stopped already fails every helper with AbortError") {
  std::stop_source stop;
  stop.request_stop();
  sluice::operator_options o;
  o.signal = stop.get_token();
  auto& l = sluice::loop::current();
  const auto aborted = sluice::make_error_code(sluice::errc::aborted);
  SUBCASE("to_array") {
    auto src = source(3);
    int n = 0;
    sluice::to_array(
        *src,
        [&](std::error_code ec, std::vector<std::string> all) {
          ++n;
          CHECK(ec == aborted);
          CHECK(all.empty());
        },
        o);
    l.run_until_idle();
    CHECK(n == 1);
    CHECK(src->destroyed());
  }
  SUBCASE("some") {
    auto src = source(3);
    int n = 0, tested = 0;
    sluice::some(
        *src, [&](std::string_view) { return ++tested, true; },
        [&](std::error_code ec, bool) {
          ++n;
          CHECK(ec == aborted);
        },
        o);
    l.run_until_idle();
    CHECK(n == 1);
    CHECK(tested == 0);
    CHECK(src->destroyed());
  }
  SUBCASE("take") {
    auto src = source(3);
    auto t = sluice::take(*src, 2, o);
    collected c;
    collect(*t, c);
    l.run_until_idle();
    CHECK(c.error == aborted);
    CHECK(c.chunks.empty());
    // Node's take() throws before its loop: the source is never iterated,
    // so not destroyed (conformance/api/op-take-signal-before).
    CHECK_FALSE(src->destroyed());
  }
}

TEST_CASE("an error from the function destroys the result and the source") {
  auto src = source(8);
  calls k;
  sluice::operator_options o;
  o.concurrency = 3;
  auto m = sluice::map(*src, k.map_fn(), o);
  collected c;
  collect(*m, c);
  auto& l = sluice::loop::current();
  l.run_until_idle();
  REQUIRE(k.pending.size() == 3);
  const auto bang = sluice::user_error("bang");
  // The second call fails while the first and third are in flight.
  auto second = std::move(k.pending[1]);
  k.pending.erase(k.pending.begin() + 1);
  ++k.completed;
  second.done(bang, {});
  drive(k);
  CHECK(c.error == bang);
  CHECK(c.chunks == std::vector<std::string>{"A"});  // the result before the failed one
  CHECK(m->destroyed());
  CHECK(src->destroyed());
  CHECK(k.started == 3);
  CHECK(k.completed == 3);
}

TEST_CASE("some and find with an asynchronous predicate and concurrency") {
  auto& l = sluice::loop::current();
  auto src = source(6);
  std::deque<std::pair<std::string, sluice::predicate_done>> pending;
  std::optional<std::string> found;
  int n = 0;
  sluice::operator_options o;
  o.concurrency = 2;
  sluice::find(
      *src,
      [&](std::string_view item, sluice::predicate_done done) { pending.emplace_back(std::string(item), std::move(done)); },
      [&](std::error_code ec, std::optional<std::string> v) {
        ++n;
        CHECK(!ec);
        found = v;
      },
      o);
  l.run_until_idle();
  while (!pending.empty()) {
    auto [item, done] = std::move(pending.back());
    pending.pop_back();
    done({}, item >= "b");
    l.run_until_idle();
  }
  CHECK(n == 1);
  CHECK(found == std::optional<std::string>("b"));  // the first in input order, though c completed first
  CHECK(src->destroyed());
}

TEST_CASE("concurrency 0 is refused with a stream_error") {
  auto src = source(1);
  sluice::operator_options o;
  o.concurrency = 0;
  CHECK_THROWS_AS(sluice::map(*src, [](std::string_view, sluice::map_done d) { d({}, ""); }, o), sluice::stream_error);
}
