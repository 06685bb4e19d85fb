// writable_options::max_buffered: the opt-in hard cap (issue 10). A write
// that would take the stream past it is refused with ERR_SLUICE_BUFFER_FULL,
// and the stream goes on.
#include "support/printers.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/recording_sink.h"

using namespace sluice;
using namespace std::string_view_literals;
using sluice::test::must_call;
using sluice::test::recording_sink;
using sluice::test::trace;

namespace {

struct capped {
  loop l;
  trace log;
  recording_sink* sink;
  std::unique_ptr<writable> w;
  std::vector<std::string> events;

  explicit capped(std::size_t max, bool object_mode = false, std::size_t hwm = 16) {
    auto s = std::make_unique<recording_sink>(log);
    sink = s.get();
    writable_options o;
    o.event_loop = &l;
    o.max_buffered = max;
    o.high_water_mark = hwm;
    o.object_mode = object_mode;
    w = std::make_unique<writable>(std::move(s), o);
    w->on(event::error, [this](std::error_code ec) { events.push_back("error " + code_name(ec)); });
    w->on(event::drain, [this] { events.push_back("drain"); });
  }
};

}  // namespace

TEST_CASE("a write past max_buffered is refused: false, ERR_SLUICE_BUFFER_FULL on a later tick, nothing buffered") {
  capped c(10);
  must_call ok(1), refused(1);
  CHECK(c.w->write("0123456"sv, ok.cb()));  // in flight: the sink completes it when told
  CHECK(c.w->writable_length() == 7);
  bool inside = true;
  CHECK_FALSE(c.w->write("abcd"sv, refused.cb([&](std::error_code) { CHECK_FALSE(inside); })));
  inside = false;
  CHECK(c.w->writable_length() == 7);
  CHECK(c.w->refused_writes() == 1);
  CHECK(refused.calls() == 0);  // not inside write()
  c.l.run_until_idle();
  CHECK(refused.calls() == 1);
  CHECK(refused.error() == errc::buffer_full);
  CHECK(code_name(refused.error()) == "ERR_SLUICE_BUFFER_FULL");
  CHECK(c.sink->bytes == "0123456");  // the refused chunk never reached the sink
  c.sink->complete();
  c.l.run_until_idle();
  CHECK(ok.calls() == 1);
  CHECK_FALSE(ok.error());
  CHECK(c.events == std::vector<std::string>{"drain"});  // no 'error': the stream goes on
  CHECK_FALSE(c.w->destroyed());
}

TEST_CASE("after a refusal the stream goes on: writes that fit are accepted and land") {
  capped c(10, false, 100);
  must_call first, refused, later;
  CHECK(c.w->write("0123456789"sv, first.cb()));   // exactly the cap: accepted
  CHECK_FALSE(c.w->write("x"sv, refused.cb()));    // one byte more: refused
  c.sink->complete();
  c.l.run_until_idle();
  CHECK(c.w->write("abc"sv, later.cb()));
  c.sink->complete();
  c.l.run_until_idle();
  CHECK(c.sink->bytes == "0123456789abc");
  CHECK_FALSE(first.error());
  CHECK(refused.error() == errc::buffer_full);
  CHECK_FALSE(later.error());
  CHECK(c.w->refused_writes() == 1);
  must_call ended;
  c.w->end(ended.cb());
  c.sink->complete_all();
  c.l.run();
  CHECK_FALSE(ended.error());
  CHECK(c.w->writable_finished());
}

TEST_CASE("a producer that ignores write()'s false return stays bounded by max_buffered") {
  const std::size_t cap = 64 * 1024;
  capped c(cap, false, 16384);
  std::size_t accepted = 0, refused_seen = 0, ok_seen = 0, calls = 0, accepted_bytes = 0;
  const std::size_t n = 20000;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string chunk(50 + i % 100, static_cast<char>('a' + i % 26));
    const std::size_t before = c.w->writable_length();
    c.w->write(chunk, [&](std::error_code ec) {
      ++calls;
      if (ec == errc::buffer_full)
        ++refused_seen;
      else if (!ec)
        ++ok_seen;
    });
    if (c.w->writable_length() > before) {
      ++accepted;
      accepted_bytes += chunk.size();
    }
    CHECK(c.w->writable_length() <= cap);
    // The sink is slow: it completes one call every 1000 writes (100 KB).
    if (i % 1000 == 999 && c.sink->pending() > 0) c.sink->complete();
    if (i % 10 == 9) c.l.run_until_idle();
  }
  c.sink->complete_all();
  c.l.run();
  c.sink->complete_all();
  c.l.run();
  CHECK(calls == n);  // every callback exactly once
  CHECK(ok_seen == accepted);
  CHECK(refused_seen == n - accepted);
  CHECK(c.w->refused_writes() == n - accepted);
  CHECK(c.w->refused_writes() > 0);
  CHECK(c.sink->bytes.size() == accepted_bytes);
  CHECK(c.w->writable_length() == 0);
}

TEST_CASE("in object mode max_buffered counts objects, whatever their size") {
  capped c(3, true, 100);
  must_call ok(3), refused(2);
  CHECK(c.w->write(std::string(10000, 'a'), ok.cb()));
  CHECK(c.w->write("b"sv, ok.cb()));
  CHECK(c.w->write("c"sv, ok.cb()));
  CHECK(c.w->writable_length() == 3);
  CHECK_FALSE(c.w->write("d"sv, refused.cb()));
  CHECK_FALSE(c.w->write(""sv, refused.cb()));  // an empty object is one object too
  CHECK(c.w->refused_writes() == 2);
  c.sink->complete_all();
  c.l.run();
  c.sink->complete_all();
  c.l.run();
  CHECK(refused.error(0) == errc::buffer_full);
  CHECK(refused.error(1) == errc::buffer_full);
}

TEST_CASE("a chunk larger than max_buffered is refused even by an empty stream, and no 'drain' is owed") {
  capped c(4, false, 100);
  must_call refused;
  CHECK_FALSE(c.w->write("01234"sv, refused.cb()));
  CHECK_FALSE(c.w->writable_need_drain());
  c.l.run();
  CHECK(refused.error() == errc::buffer_full);
  CHECK(c.events.empty());
  CHECK(c.log.empty());  // the sink saw nothing
}

TEST_CASE("owned chunks and print() are held to max_buffered as copies are") {
  capped c(8192, false, 100000);
  must_call big_ok, big_refused, printed_refused;
  CHECK(c.w->write(std::string(6000, 'a'), big_ok.cb()));            // owned, not copied
  CHECK_FALSE(c.w->write(std::string(6000, 'b'), big_refused.cb()));  // owned: refused
  CHECK(c.w->writable_length() == 6000);
  CHECK_FALSE(c.w->vprint("{}", fmt::make_format_args(std::string(3000, 'c')), printed_refused.cb()));
  CHECK(c.w->print("{}\n", 42));  // fits
  CHECK(c.w->writable_length() == 6003);
  CHECK(c.w->refused_writes() == 2);
  c.sink->complete_all();
  c.l.run();
  c.sink->complete_all();
  c.l.run();
  CHECK_FALSE(big_ok.error());
  CHECK(big_refused.error() == errc::buffer_full);
  CHECK(printed_refused.error() == errc::buffer_full);
  CHECK(c.sink->bytes == std::string(6000, 'a') + "42\n");
}

TEST_CASE("a write after end() on a capped stream is still ERR_STREAM_WRITE_AFTER_END, not a refusal") {
  capped c(1);
  must_call late;
  c.w->on(event::error, [](std::error_code) {});
  c.w->end();
  CHECK_FALSE(c.w->write("xx"sv, late.cb()));
  c.sink->complete_all();
  c.l.run();
  CHECK(late.error() == errc::write_after_end);
  CHECK(c.w->refused_writes() == 0);
}
