// readable_from_async(): Node's Readable.from(asyncIterable) over a pull
// function that answers later. The orderings pinned against Node's traces
// are in conformance/api/from-async-*.scn; these tests pin the rest: one
// pull in flight, how far ahead of the consumer the source is pulled, the
// error and destroy paths, and answers that come after the stream went.
#include "support/printers.h"

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sluice/sluice.h"
#include "support/must_call.h"
#include "support/readable_events.h"
#include "support/recording_sink.h"

using namespace sluice;

namespace {

// A source whose pulls are answered from a later turn of the loop (an
// immediate, or a timer of `delay`), as an async iterator's promises are.
// It records how many pulls were made and how many were in flight at once.
struct async_items {
  std::vector<std::string> items;
  std::error_code fail_at_end;  // answer the pull after the last item with this
  std::chrono::milliseconds delay{-1};  // negative: an immediate
  int pulls = 0;
  int in_flight = 0;
  int max_in_flight = 0;
  std::vector<from_completion> held;  // with `hold`: answered by the test
  bool hold = false;
  std::function<void()> on_pull;  // called at each pull, after counting it

  from_async_next next() {
    return [this](from_completion done) {
      ++pulls;
      ++in_flight;
      if (in_flight > max_in_flight) max_in_flight = in_flight;
      if (on_pull) on_pull();
      if (hold) {
        held.push_back(done);
        return;
      }
      auto answer = [this, done, i = pulls - 1] { settle(done, static_cast<std::size_t>(i)); };
      if (delay.count() < 0)
        loop::current().set_immediate(answer);
      else
        loop::current().set_timeout(delay, answer);
    };
  }
  void settle(const from_completion& done, std::size_t i) {
    --in_flight;
    if (i < items.size())
      done.item(items[i]);
    else if (fail_at_end)
      done.error(fail_at_end);
    else
      done.end();
  }
};


/// What the cancel hook was told: how often, and the error of the last call.
struct cancel_log {
  int calls = 0;
  std::error_code error;
  auto hook() {
    return [this](std::error_code ec) {
      ++calls;
      error = ec;
    };
  }
};

}  // namespace

TEST_CASE("readable_from_async: items in order, one pull in flight, then 'end' and 'close'") {
  async_items src;
  src.items = {"a", "b", "c", "d"};
  auto r = readable_from_async(src.next());
  CHECK(r->readable_object_mode());
  CHECK(r->readable_high_water_mark() == 1);  // Node's Readable.from default
  test::readable_events c;
  c.attach(*r);
  loop::current().run();
  CHECK(c.chunks == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(c.events == std::vector<std::string>{"end", "close"});
  CHECK(src.pulls == 5);  // four items and the end
  CHECK(src.max_in_flight == 1);
}

TEST_CASE("readable_from_async: the source is pulled at most highWaterMark items ahead of the consumer") {
  for (std::size_t hwm : {std::size_t{1}, std::size_t{3}, std::size_t{8}}) {
    CAPTURE(hwm);
    async_items src;
    for (int i = 0; i < 40; ++i) src.items.push_back(std::to_string(i));
    from_options o;
    o.high_water_mark = hwm;
    auto r = readable_from_async(src.next(), o);
    // A slow consumer: one read() per millisecond; the source answers in
    // the next turn. At each pull, the pulls made (this one included) minus
    // the items the consumer took is how far ahead the stream asks. A pull
    // that read() starts counts the item that read() is taking as taken
    // (Node's read() calls _read before it takes the item from the buffer).
    int consumed = 0;
    int most_ahead = 0;
    bool in_read = false;
    src.on_pull = [&] {
      const int ahead = src.pulls - consumed - (in_read ? 1 : 0);
      if (ahead > most_ahead) most_ahead = ahead;
    };
    bool ended = false;
    r->on(event::end, [&] { ended = true; });
    std::function<void()> consume = [&] {
      in_read = r->readable_length() > 0;  // read() takes an item
      const bool got = r->read().has_value();
      in_read = false;
      if (got) ++consumed;
      if (!ended && !r->destroyed()) loop::current().set_timeout(std::chrono::milliseconds(1), consume);
    };
    r->read(0);
    loop::current().set_timeout(std::chrono::milliseconds(1), consume);
    loop::current().run();
    CHECK(ended);
    CHECK(consumed == 40);
    CHECK(src.max_in_flight == 1);
    CHECK(most_ahead <= static_cast<int>(hwm));  // backpressure: never further ahead
    CHECK(most_ahead == static_cast<int>(hwm));  // and it does read that far ahead
  }
}

TEST_CASE("readable_from_async: paused, exactly highWaterMark items are pulled and buffered") {
  async_items src;
  for (int i = 0; i < 10; ++i) src.items.push_back(std::to_string(i));
  from_options o;
  o.high_water_mark = 4;
  auto r = readable_from_async(src.next(), o);
  r->read(0);  // starts the pulls, as a consumer's first read does
  loop::current().run();
  CHECK(src.pulls == 4);
  CHECK(r->readable_length() == 4);
  CHECK(*r->read() == "0");  // one taken: one more pull
  loop::current().run();
  CHECK(src.pulls == 5);
  CHECK(r->readable_length() == 4);
  r->destroy();
  loop::current().run();
}

TEST_CASE("readable_from_async: error() destroys the stream: 'error' then 'close', no more pulls") {
  async_items src;
  src.items = {"a", "b"};
  src.fail_at_end = make_error_code(std::errc::io_error);
  cancel_log cancel;
  auto r = readable_from_async(src.next(), cancel.hook());
  test::readable_events c;
  c.attach(*r);
  loop::current().run();
  CHECK(c.chunks == std::vector<std::string>{"a", "b"});
  CHECK(c.events == std::vector<std::string>{"error " + make_error_code(std::errc::io_error).message(), "close"});
  CHECK(r->errored() == std::errc::io_error);
  CHECK(src.pulls == 3);
  // Node's close(error): iterator.throw(error), once.
  CHECK(cancel.calls == 1);
  CHECK(cancel.error == std::errc::io_error);
}

TEST_CASE("readable_from_async: an exception thrown by the pull destroys the stream with it") {
  int pulls = 0;
  auto r = readable_from_async([&pulls](from_completion) {
    if (++pulls == 1) throw std::runtime_error("no connection");
  });
  test::readable_events c;
  c.attach(*r);
  loop::current().run();
  CHECK(pulls == 1);
  CHECK(c.events == std::vector<std::string>{"error no connection", "close"});
}

TEST_CASE("readable_from_async: error() without a code closes without 'error', as Node's rejection with undefined") {
  auto r = readable_from_async([](from_completion done) {
    loop::current().set_immediate([done] { done.error({}); });
  });
  test::readable_events c;
  c.attach(*r);
  loop::current().run();
  CHECK(c.events == std::vector<std::string>{"close"});
  CHECK(r->readable_aborted());
}

TEST_CASE("readable_from_async: destroy while a pull is in flight: 'close', cancel, the late answer dropped") {
  async_items src;
  src.items = {"a", "b", "c"};
  src.hold = true;
  cancel_log cancel;
  auto r = readable_from_async(src.next(), cancel.hook());
  test::readable_events c;
  c.attach(*r);
  loop::current().run_until_idle();
  REQUIRE(src.held.size() == 1);
  src.held[0].item("a");
  loop::current().run_until_idle();
  REQUIRE(src.held.size() == 2);  // the second pull is in flight
  CHECK(!src.held[1].cancelled());
  CHECK(src.held[0].cancelled());  // answered
  r->destroy(make_error_code(std::errc::operation_canceled));
  CHECK(cancel.calls == 1);  // at once, as Node calls iterator.throw()/return() from _destroy
  CHECK(cancel.error == std::errc::operation_canceled);
  CHECK(src.held[1].cancelled());
  loop::current().run_until_idle();
  CHECK(c.events == std::vector<std::string>{"error " + make_error_code(std::errc::operation_canceled).message(), "close"});
  src.held[1].item("b");  // too late: dropped
  src.held[1].end();
  loop::current().run_until_idle();
  CHECK(c.chunks == std::vector<std::string>{"a"});
  CHECK(c.events.size() == 2);
  CHECK(src.held.size() == 2);  // no pull after the destroy
  CHECK(cancel.calls == 1);
}

TEST_CASE("readable_from_async: an answer after the stream was deleted touches nothing") {
  std::optional<from_completion> late;
  int cancels = 0;
  auto r = readable_from_async([&late](from_completion done) { late.emplace(done); },
                               [&cancels](std::error_code) { ++cancels; });
  r->read(0);
  loop::current().run_until_idle();
  REQUIRE(late);
  r.reset();  // deleted without destroy(): the source is still told to stop
  CHECK(cancels == 1);
  CHECK(late->cancelled());
  late->item("x");  // under ASan: no use after free
  late->error(make_error_code(std::errc::io_error));
  loop::current().run_until_idle();
}

TEST_CASE("readable_from_async: a second answer to one pull is dropped") {
  std::vector<from_completion> held;
  auto r = readable_from_async([&held](from_completion done) { held.push_back(done); });
  test::readable_events c;
  c.attach(*r);
  loop::current().run_until_idle();
  REQUIRE(held.size() == 1);
  held[0].item("a");
  held[0].item("again");  // dropped
  held[0].end();          // dropped
  loop::current().run_until_idle();
  REQUIRE(held.size() == 2);
  held[1].end();
  loop::current().run_until_idle();
  CHECK(c.chunks == std::vector<std::string>{"a"});
  CHECK(c.events == std::vector<std::string>{"end", "close"});
}

TEST_CASE("readable_from_async: answers given inside the pull are taken without recursion") {
  // 200000 items answered synchronously: one loop in the source, not one
  // stack frame per item.
  int n = 0;
  auto r = readable_from_async([&n](from_completion done) {
    if (n == 200000)
      done.end();
    else
      done.item(std::to_string(n++));
  });
  std::size_t items = 0;
  r->on(event::data, [&items](std::string_view) { ++items; });
  bool ended = false;
  r->on(event::end, [&ended] { ended = true; });
  loop::current().run();
  CHECK(items == 200000);
  CHECK(ended);
}

TEST_CASE("readable_from_async: the cancel hook runs at every destroy, also after the end (Node's return())") {
  int cancels = 0;
  auto r = readable_from_async([](from_completion done) { done.end(); }, [&cancels](std::error_code ec) {
    CHECK(!ec);
    ++cancels;
  });
  test::readable_events c;
  c.attach(*r);
  loop::current().run();
  CHECK(c.events == std::vector<std::string>{"end", "close"});
  CHECK(cancels == 1);  // autoDestroy after 'end'
}

TEST_CASE("readable_from_async: a null pull function is refused") {
  CHECK_THROWS_AS(readable_from_async(from_async_next{}), stream_error);
}

TEST_CASE("readable_from_async: piped through pipeline() into a slow writable, every write completed once") {
  async_items src;
  src.delay = std::chrono::milliseconds(1);
  for (int i = 0; i < 50; ++i) src.items.push_back("item " + std::to_string(i) + "\n");
  auto r = readable_from_async(src.next());
  test::trace log;
  auto sink = std::make_unique<test::recording_sink>(log);
  test::recording_sink& s = *sink;
  writable_options wo;
  wo.object_mode = true;
  wo.high_water_mark = 2;
  writable w(std::move(sink), wo);
  test::must_call done;
  pipeline({*r, w}, done.cb());
  // The writable completes one write per millisecond, slower than nothing
  // but not slower than the source, so both sides wait on each other.
  std::function<void()> complete_one = [&] {
    if (s.pending() > 0) s.complete();
    if (!w.writable_finished() && !w.destroyed()) loop::current().set_timeout(std::chrono::milliseconds(2), complete_one);
  };
  loop::current().set_timeout(std::chrono::milliseconds(2), complete_one);
  loop::current().run();
  done.check();
  CHECK(!done.error());
  std::string expected;
  for (const auto& i : src.items) expected += i;
  CHECK(s.bytes == expected);
  CHECK(s.writes + s.writevs <= 50);
  CHECK(s.pending() == 0);
  CHECK(src.max_in_flight == 1);
  CHECK(src.pulls == 51);
}
