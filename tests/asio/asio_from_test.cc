// asio/from_awaitable.h: sluice::asio::readable_from(executor, next), a
// readable whose items are co_returned by one boost::asio::awaitable each,
// on an io_context the stream's loop is attached to.
#include "support/printers.h"

#include <utility>  // before Asio: g++ 12 with C++20 coroutines

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <doctest/doctest.h>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/asio/attach.h"
#include "sluice/asio/from_awaitable.h"
#include "sluice/stream/pipeline.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/readable_events.h"
#include "support/recording_sink.h"
#include "support/time_scale.h"

using namespace sluice;
namespace net = boost::asio;
using net::awaitable;
using net::use_awaitable;
using std::chrono::milliseconds;

namespace {

struct fixture {
  net::io_context ctx;
  loop l;
  asio::attachment a = asio::attach(ctx, l);
  from_options fo(std::optional<std::size_t> hwm = std::nullopt) {
    from_options o;
    o.event_loop = &l;
    o.high_water_mark = hwm;
    return o;
  }
  // Runs the io_context until `done` or a bounded time (scaled), so that a
  // hang fails instead of blocking the suite.
  void run_until(const std::function<bool()>& done, milliseconds limit = milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + limit * test::time_scale();
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      if (ctx.stopped()) ctx.restart();
      ctx.run_for(milliseconds(10));
    }
  }
};

// A coroutine source: each item after a wait of `wait` on a steady_timer,
// std::nullopt after `count` items. Counts the coroutines started and the
// ones in flight at once.
struct timed_items {
  timed_items(net::io_context& c, int n, milliseconds w = milliseconds(1)) : ctx(c), count(n), wait(w) {}
  net::io_context& ctx;
  int count;
  milliseconds wait;
  int calls = 0;
  int running = 0;
  int max_running = 0;
  std::function<void()> on_call;

  auto pull() {
    return [this]() -> awaitable<std::optional<std::string>> {
      const int i = calls++;
      ++running;
      if (running > max_running) max_running = running;
      if (on_call) on_call();
      net::steady_timer t(ctx, wait);
      co_await t.async_wait(use_awaitable);
      --running;
      if (i >= count) co_return std::nullopt;
      co_return "item " + std::to_string(i);
    };
  }
};


}  // namespace

TEST_CASE("asio::readable_from: the coroutines' items in order, one at a time, then 'end' and 'close'") {
  fixture f;
  timed_items src{f.ctx, 5};
  auto r = asio::readable_from(f.ctx.get_executor(), src.pull(), f.fo());
  test::readable_events c;
  c.attach(*r);
  f.run_until([&] { return r->closed(); });
  CHECK(c.chunks == std::vector<std::string>{"item 0", "item 1", "item 2", "item 3", "item 4"});
  CHECK(c.events == std::vector<std::string>{"end", "close"});
  CHECK(src.calls == 6);
  CHECK(src.max_running == 1);
}

TEST_CASE("asio::readable_from: items of any type a string is made from") {
  fixture f;
  int n = 0;
  auto r = asio::readable_from(
      f.ctx.get_executor(),
      [&n]() -> awaitable<std::optional<const char*>> {
        if (n == 2) co_return std::nullopt;
        co_return n++ == 0 ? "x" : "y";
      },
      f.fo());
  test::readable_events c;
  c.attach(*r);
  f.run_until([&] { return r->closed(); });
  CHECK(c.chunks == std::vector<std::string>{"x", "y"});
}

TEST_CASE("asio::readable_from: loop::run() on the attached loop waits for the coroutine in flight") {
  fixture f;
  timed_items src{f.ctx, 3, milliseconds(5)};
  auto r = asio::readable_from(f.ctx.get_executor(), src.pull(), f.fo());
  test::readable_events c;
  c.attach(*r);
  f.l.run();  // the driver's run(): returns when the loop has nothing left
  CHECK(c.chunks.size() == 3);
  CHECK(c.events == std::vector<std::string>{"end", "close"});
}

TEST_CASE("asio::readable_from: at most highWaterMark items are pulled ahead of the consumer") {
  for (std::size_t hwm : {std::size_t{1}, std::size_t{4}}) {
    CAPTURE(hwm);
    fixture f;
    timed_items src{f.ctx, 30, milliseconds(0)};
    int consumed = 0;
    int most_ahead = 0;
    bool in_read = false;
    // As in from_async_test: a pull started by read() counts the item that
    // read() takes as taken.
    src.on_call = [&] {
      const int ahead = src.calls - consumed - (in_read ? 1 : 0);
      if (ahead > most_ahead) most_ahead = ahead;
    };
    auto r = asio::readable_from(f.ctx.get_executor(), src.pull(), f.fo(hwm));
    // A slow consumer: one read() every 2 ms, from an Asio timer.
    net::steady_timer tick(f.ctx);
    std::function<void()> consume = [&] {
      in_read = r->readable_length() > 0;
      const bool got = r->read().has_value();
      in_read = false;
      if (got) ++consumed;
      if (r->readable_ended() || r->destroyed()) return;
      tick.expires_after(milliseconds(2));
      tick.async_wait([&](boost::system::error_code ec) {
        if (!ec) consume();
      });
    };
    r->read(0);
    consume();
    f.run_until([&] { return r->readable_ended(); });
    CHECK(r->readable_ended());
    CHECK(consumed == 30);
    CHECK(src.max_running == 1);
    CHECK(most_ahead <= static_cast<int>(hwm));
    CHECK(most_ahead == static_cast<int>(hwm));
    f.run_until([&] { return r->closed(); });
  }
}

TEST_CASE("asio::readable_from: a coroutine that throws destroys the stream: 'error' then 'close'") {
  fixture f;
  SUBCASE("a std::system_error gives its code") {
    int calls = 0;
    auto r = asio::readable_from(
        f.ctx.get_executor(),
        [&calls]() -> awaitable<std::optional<std::string>> {
          if (calls++ == 1) throw std::system_error(make_error_code(std::errc::connection_reset));
          co_return "first";
        },
        f.fo());
    test::readable_events c;
    c.attach(*r);
    f.run_until([&] { return r->closed(); });
    CHECK(c.chunks == std::vector<std::string>{"first"});
    CHECK(c.events ==
          std::vector<std::string>{"error " + make_error_code(std::errc::connection_reset).message(), "close"});
    CHECK(calls == 2);
  }
  SUBCASE("another exception its what()") {
    auto r = asio::readable_from(
        f.ctx.get_executor(),
        []() -> awaitable<std::optional<std::string>> {
          throw std::runtime_error("bad row");
          co_return std::nullopt;
        },
        f.fo());
    test::readable_events c;
    c.attach(*r);
    f.run_until([&] { return r->closed(); });
    CHECK(c.events == std::vector<std::string>{"error bad row", "close"});
    CHECK(r->errored() == user_error("bad row"));
  }
}

TEST_CASE("asio::readable_from: destroy mid-pull stops the token at once; the coroutine's result is dropped") {
  fixture f;
  int calls = 0;
  bool stop_seen = false;
  bool finished = false;
  auto r = asio::readable_from(
      f.ctx.get_executor(),
      [&](std::stop_token stop) -> awaitable<std::optional<std::string>> {
        ++calls;
        // A wait far longer than the test, cut short by the stop token.
        net::steady_timer t(f.ctx, std::chrono::hours(1));
        std::stop_callback on_stop(stop, [&t] { t.cancel(); });
        try {
          co_await t.async_wait(use_awaitable);
        } catch (const boost::system::system_error&) {
        }
        stop_seen = stop.stop_requested();
        finished = true;
        co_return "too late";
      },
      f.fo());
  test::readable_events c;
  c.attach(*r);
  r->read(0);
  f.run_until([&] { return calls == 1; }, milliseconds(1000));
  REQUIRE(calls == 1);
  f.ctx.poll();  // the coroutine reaches its wait
  CHECK(!finished);
  r->destroy();
  f.run_until([&] { return finished && r->closed(); });
  CHECK(finished);
  CHECK(stop_seen);
  CHECK(c.chunks.empty());  // "too late" never pushed
  CHECK(c.events == std::vector<std::string>{"close"});
  CHECK(calls == 1);
  CHECK(f.ctx.poll() == 0);  // nothing left behind on the io_context
}

TEST_CASE("asio::readable_from: a coroutine that ignores the token finishes later; its result is dropped") {
  fixture f;
  bool finished = false;
  std::unique_ptr<readable> r = asio::readable_from(
      f.ctx.get_executor(),
      [&]() -> awaitable<std::optional<std::string>> {
        net::steady_timer t(f.ctx, milliseconds(20));
        co_await t.async_wait(use_awaitable);
        finished = true;
        co_return "late";
      },
      f.fo());
  r->read(0);
  f.ctx.poll();
  r.reset();  // deleted mid-pull: the handler that comes later touches nothing
  f.run_until([&] { return finished; });
  CHECK(finished);
  f.ctx.poll();
}

TEST_CASE("asio::readable_from: an executor of another io_context is refused") {
  fixture f;
  net::io_context other;
  CHECK_THROWS_AS(asio::readable_from(
                      other.get_executor(),
                      []() -> awaitable<std::optional<std::string>> { co_return std::nullopt; }, f.fo()),
                  stream_error);
}

TEST_CASE("asio::readable_from: pipeline() into a slow writable, every write completed once") {
  fixture f;
  timed_items src{f.ctx, 40, milliseconds(1)};
  auto r = asio::readable_from(f.ctx.get_executor(), src.pull(), f.fo());
  test::trace log;
  auto sink = std::make_unique<test::recording_sink>(log);
  test::recording_sink& s = *sink;
  writable_options wo;
  wo.object_mode = true;
  wo.high_water_mark = 2;
  wo.event_loop = &f.l;
  writable w(std::move(sink), wo);
  test::must_call done;
  bool pipeline_done = false;
  pipeline({*r, w}, done.cb([&](std::error_code) { pipeline_done = true; }));
  // The writable completes one call every 3 ms, from an Asio timer.
  net::steady_timer t(f.ctx);
  std::function<void()> complete_one = [&] {
    if (s.pending() > 0) s.complete();
    if (pipeline_done) return;
    t.expires_after(milliseconds(3));
    t.async_wait([&](boost::system::error_code ec) {
      if (!ec) complete_one();
    });
  };
  complete_one();
  f.run_until([&] { return pipeline_done; });
  done.check();
  CHECK(!done.error());
  std::string expected;
  for (int i = 0; i < 40; ++i) expected += "item " + std::to_string(i);
  CHECK(s.bytes == expected);
  CHECK(s.pending() == 0);
  CHECK(src.max_running == 1);
  CHECK(src.calls == 41);
  t.cancel();
  f.ctx.poll();
}
