// print(): fmt formatting straight into the stream's buffer, with write()'s rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "sluice/loop/loop.h"
#include "support/memory_sink.h"
#include "sluice/stream/print_compiled.h"
#include "sluice/stream/writable.h"
#include "support/alloc_counter.h"
#include "support/harness.h"
#include "support/printers.h"

using namespace sluice;
using sluice::test::async_sink;
using sluice::test::harness;

namespace {

struct memory_stream {
  loop l;
  memory_sink* sink = nullptr;
  std::unique_ptr<writable> w;
  explicit memory_stream(writable_options o = {}) {
    auto s = std::make_unique<memory_sink>();
    sink = s.get();
    o.event_loop = &l;
    w = std::make_unique<writable>(std::move(s), o);
  }
};

}  // namespace

TEST_CASE("print formats its arguments like fmt::format") {
  memory_stream m;
  m.w->print("{} {:>5} {:.2f} {:#x} {}\n", "id", 42, 3.14159, 255, std::string_view("end"));
  m.w->print("{}", "");
  m.w->print("no args\n");
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() == "id    42 3.14 0xff end\nno args\n");
}

TEST_CASE("print returns what write would: false at the high-water mark") {
  memory_stream m({.high_water_mark = 8, .auto_destroy = true});
  m.w->cork();  // keeps everything buffered, so length grows
  CHECK(m.w->print("{}", "abc"));
  CHECK(m.w->writable_length() == 3);
  CHECK_FALSE(m.w->print("{}{}", "de", "fgh"));  // 8 bytes: at the mark
  CHECK(m.w->writable_need_drain());
  m.w->uncork();
  m.l.run_until_idle();
  CHECK(m.sink->data() == "abcdefgh");
}

TEST_CASE("print after end calls back nothing but errors the stream with ERR_STREAM_WRITE_AFTER_END") {
  harness h;
  h.w->end();
  CHECK_FALSE(h.w->print("late {}\n", 1));
  h.loop.run_until_idle();
  CHECK(h.log.str().find("error ERR_STREAM_WRITE_AFTER_END") != std::string::npos);
}

TEST_CASE("vprint with a callback calls it once, like write's") {
  harness h;
  h.w->vprint("{}-{}", fmt::make_format_args(1, 2), h.cb("1-2"));
  h.sink->complete();
  h.loop.run_until_idle();
  CHECK(h.log.str().rfind("_write 1-2; cb 1-2 ok", 0) == 0);
}

TEST_CASE("a bad runtime format throws fmt::format_error: nothing written, the callback not taken") {
  memory_stream m;
  m.w->cork();
  m.w->print("{}\n", "before");
  int called = 0;
  CHECK_THROWS_AS(m.w->vprint("{} {:q}\n", fmt::make_format_args(1, 2), [&](std::error_code) { ++called; }),
                  fmt::format_error);
  CHECK(m.w->writable_length() == 7);
  m.w->print("{}\n", "after");
  m.w->uncork();
  m.w->end();
  m.l.run();
  CHECK(called == 0);  // the write was refused by the throw, so it was never accepted
  CHECK(m.sink->data() == "before\nafter\n");
}

TEST_CASE("lines longer than the arena's chunks, and lines at block ends, arrive whole") {
  memory_stream m;
  std::string expected;
  const std::string long_line(10000, 'x');
  for (int i = 0; i < 3000; ++i) {  // ~100 bytes each: crosses several 64 KiB blocks
    m.w->print("{:06} {}\n", i, std::string(90, static_cast<char>('a' + i % 26)));
    expected += fmt::format("{:06} {}\n", i, std::string(90, static_cast<char>('a' + i % 26)));
    if (i % 1000 == 0) {
      m.w->print("{}\n", long_line);
      expected += long_line + "\n";
    }
    if (i % 100 == 0) m.l.run_until_idle();
  }
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() == expected);
}

TEST_CASE("print makes no heap allocation per line in steady state") {
  memory_stream m;
  m.w->cork();
  for (int i = 0; i < 2000; ++i) m.w->print("{} INFO request id={} status={}\n", "2026-11-30T00:00:00Z", i, 200);
  m.w->uncork();
  m.l.run_until_idle();  // warm: pool and arena have grown to the batch size
  m.w->cork();
  const auto before = sluice::test::allocation_count();
  for (int i = 0; i < 2000; ++i) m.w->print("{} INFO request id={} status={}\n", "2026-11-30T00:00:00Z", i, 200);
  const auto after = sluice::test::allocation_count();
  m.w->uncork();
  m.l.run_until_idle();
  CHECK(after - before == 0);
}

// ---- runtime format strings: a line that does not fit the room left in the
// arena's block is formatted a second time, into room of its size

namespace {

// Counts its formatting, to show which lines were formatted twice.
struct counted_text {
  std::string_view text;
  int* calls;
};

// Writes 5000 bytes more each time it is formatted.
struct grows_each_time {
  int* calls;
};

}  // namespace

template <>
struct fmt::formatter<counted_text> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(counted_text t, Context& ctx) const -> decltype(ctx.out()) {
    ++*t.calls;
    return fmt::formatter<std::string_view>::format(t.text, ctx);
  }
};

template <>
struct fmt::formatter<grows_each_time> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Context>
  auto format(grows_each_time g, Context& ctx) const -> decltype(ctx.out()) {
    ++*g.calls;
    return std::fill_n(ctx.out(), 5000 * *g.calls, 'z');
  }
};

TEST_CASE("print formats a line that outgrows its room again: whole, counted once, called back once") {
  memory_stream m;
  std::string expected;
  const std::size_t lengths[] = {1, 90, 1023, 1024, 1025, 2000, 3000, 4094, 4095, 4096, 4097, 5000, 10000, 70000};
  constexpr int n = 600;
  int formatted = 0;
  std::vector<int> called(n, 0);
  m.w->cork();
  for (int i = 0; i < n; ++i) {
    const std::size_t len = lengths[(i * 7 + i / 14) % std::size(lengths)];
    const std::string body(len, static_cast<char>('a' + i % 26));
    const counted_text text{body, &formatted};
    m.w->vprint("{:04}:{}:{}\n", fmt::make_format_args(i, text, len),
                [&called, i](std::error_code ec) {
                  CHECK_FALSE(ec);
                  ++called[static_cast<std::size_t>(i)];
                });
    expected += fmt::format("{:04}:{}:{}\n", i, body, len);
    CHECK(m.w->writable_length() == expected.size());
  }
  CHECK(formatted > n);      // some lines did not fit where they started
  CHECK(formatted < 2 * n);  // and each of those was formatted once more only
  m.w->uncork();
  m.w->end();
  m.l.run();
  CHECK(m.sink->data().size() == expected.size());
  CHECK(m.sink->data() == expected);
  CHECK(std::count(called.begin(), called.end(), 1) == n);
}

TEST_CASE("a line whose formatter writes more each time is the one formatted last, counted once") {
  memory_stream m;
  int calls = 0;
  m.w->cork();
  // 5000 bytes do not fit the 4 KiB first room, 10000 not the first heap
  // room of 8 KiB; 15000 fit the 16 KiB it grows to.
  m.w->print("{}\n", grows_each_time{&calls});
  CHECK(calls == 3);
  CHECK(m.w->writable_length() == 15001);
  m.w->uncork();
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() == std::string(15000, 'z') + "\n");
}

TEST_CASE("print makes no heap allocation per line in steady state, lines formatted twice included") {
  memory_stream m;
  // Lines of 3006 bytes: 21 fill a block's 65472 and leave 2346, more than
  // print()'s minimum room of 1024, so the 22nd starts there and moves.
  const std::string body(3000, 'x');
  int formatted = 0;
  auto batch = [&] {
    for (int i = 0; i < 200; ++i) m.w->print("{:04} {}\n", i, counted_text{body, &formatted});
  };
  m.w->cork();
  batch();
  m.w->uncork();
  m.l.run_until_idle();  // warm: pool and arena have grown to the batch size
  m.w->cork();
  formatted = 0;
  const auto before = sluice::test::allocation_count();
  batch();
  const auto after = sluice::test::allocation_count();
  m.w->uncork();
  m.l.run_until_idle();
  CHECK(formatted > 200);
  CHECK(after - before == 0);
}

// ---- compiled format strings: print(FMT_COMPILE(...), args...)

namespace {

struct throws_midway {};

}  // namespace

template <>
struct fmt::formatter<throws_midway> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Context>
  auto format(throws_midway, Context& ctx) const -> decltype(ctx.out()) {
    fmt::format_to(ctx.out(), "partial");
    throw std::runtime_error("formatter failed");
  }
};

TEST_CASE("print with a compiled format formats its arguments like fmt::format") {
  memory_stream m;
  const std::string s = "str";
  m.w->print(FMT_COMPILE("{} {} {} {} {}\n"), 42, -7, 18446744073709551615ull, 'c', true);
  m.w->print(FMT_COMPILE("{:>5}|{:<4}|{:06}|{:#x}|{:.2f}|{}\n"), 42, "ab", 123, 255, 3.14159, 0.5);
  m.w->print(FMT_COMPILE("{} {} {}\n"), s, std::string_view("view"), "literal");
  m.w->print(FMT_COMPILE("2026-11-30T{:02}:{:02}:{:02}.{:06}Z INFO id={} path={}\n"), 1u, 2u, 3u, 45u, 12345u,
             std::string_view("/api/v1/items"));
  m.w->print(FMT_COMPILE("no args\n"));
  m.w->print(FMT_COMPILE("{}"), "");
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() ==
        "42 -7 18446744073709551615 c true\n"
        "   42|ab  |000123|0xff|3.14|0.5\n"
        "str view literal\n"
        "2026-11-30T01:02:03.000045Z INFO id=12345 path=/api/v1/items\n"
        "no args\n");
}

namespace {

// print(FMT_COMPILE(...)) against fmt::format with the same compiled format.
struct compiled_checker {
  memory_stream m;
  std::size_t seen = 0;
  int checked = 0;
  template <class S, class... Args>
  void same(const S& f, const Args&... args) {
    const std::string want = fmt::format(f, args...);
    m.w->print(f, args...);
    m.l.run_until_idle();
    const std::string got = m.sink->data().substr(seen);
    seen = m.sink->data().size();
    const fmt::string_view text(f);
    INFO("format \"", std::string_view(text.data(), text.size()), "\"");
    CHECK(got == want);
    ++checked;
  }
};

}  // namespace

// The formats print() writes itself (sluice::detail::plan_compiled(): "{}",
// and "d" or "[0]WIDTH[d]" on an integer) and the ones it leaves to fmt.
TEST_CASE("print with a compiled format writes fmt::format's line, whether it or fmt writes the fields") {
  compiled_checker c;
  using sluice::detail::compiled_plan_of;
  const auto f1 = FMT_COMPILE("{}|{:1}|{:02}|{:06}|{:21}|{:022d}|{:d}|{}");
  using F1 = std::remove_cvref_t<decltype(f1)>;
  static_assert(compiled_plan_of<F1, int, int, int, int, int, int, int, std::string_view>::value.ok);
  std::uint64_t p = 1;
  for (int digits = 1; digits <= 20; ++digits) {
    const std::uint64_t below = p - 1, at = p;
    c.same(FMT_COMPILE("{}|{:1}|{:02}|{:06}|{:21}|{:022d}|{:d}|{}"), below, at, below, at, below, at, below,
           std::string_view("sv"));
    if (at <= static_cast<std::uint64_t>(LLONG_MAX)) {
      const auto v = static_cast<long long>(at);
      c.same(FMT_COMPILE("{}|{:1}|{:02}|{:06}|{:21}|{:022d}|{:d}|{}"), -v, v, -v, v, -v, v, -v, std::string("str"));
    }
    if (at <= static_cast<std::uint64_t>(INT_MAX)) {
      const auto i = static_cast<int>(at);
      c.same(FMT_COMPILE("{}|{:1}|{:02}|{:06}|{:21}|{:022d}|{:d}|{}"), -i, i - 1, -i, 1 - i, i, -i, i - 1,
             std::string_view("a longer string view, past sixteen bytes"));
    }
    if (digits < 20) p *= 10;
  }
  c.same(FMT_COMPILE("{:03}|{:5}|{:05}|{:1}|{:01}"), -5, -5, -5, -5, -5);
  c.same(FMT_COMPILE("{}|{}|{:03}|{:07}"), INT_MIN, LLONG_MIN, static_cast<short>(-7), static_cast<unsigned short>(9));
  c.same(FMT_COMPILE("{}|{}|{}|{}"), ULLONG_MAX, 123456789012L, 5ul, 0u);
  c.same(FMT_COMPILE("{:255}|{:0255}|{:0255d}"), 1, -2, 3u);  // the widest width it writes
  c.same(FMT_COMPILE("{} {} {} {} {} {}"), true, 'c', 3.5, 0.1f, static_cast<unsigned char>(200), "c string");
  c.same(FMT_COMPILE("{{{}}} {{}} }}{{ {{{:02}}}"), 1, 2);  // escaped braces
  c.same(FMT_COMPILE("{}"), std::string_view("", 0));
  {
    // An empty view with no data at all: fmt 9's own format() would pass
    // its null pointer to memcpy (UBSan), so the line is known by hand.
    memory_stream m;
    m.w->print(FMT_COMPILE("<{}>"), std::string_view());
    m.l.run_until_idle();
    CHECK(m.sink->data() == "<>");
  }
  c.same(FMT_COMPILE(""));
  c.same(FMT_COMPILE("no fields\n"));
  // Five fields of 255 and a long string: past the room left in a block.
  const std::string wide(300, 'x');
  c.same(FMT_COMPILE("{:0255}{:0255}{:0255}{:0255}{:0255}{:0255}{}\n"), 1, 2, 3, 4, 5, 6, std::string_view(wide));
  // fmt's: other specs, positional fields, other types, widths it does not take.
  const auto f2 = FMT_COMPILE("{:256}");
  using F2 = std::remove_cvref_t<decltype(f2)>;
  static_assert(!compiled_plan_of<F2, int>::value.ok);
  c.same(FMT_COMPILE("{:256}|{:0256}"), 1, -2);
  c.same(FMT_COMPILE("{:0}|{:00}|{:0d}|{:+}|{:x}|{:>4}|{:<4}"), 1, 2, 3, 4, 255, 6, 7);
  c.same(FMT_COMPILE("{1} {0}"), 1, 2);
  c.same(FMT_COMPILE("{:5}|{:.2f}"), std::string_view("ab"), 3.14159);
  c.same(FMT_COMPILE("{} {}"), static_cast<const void*>(nullptr), 1);
  CHECK(c.checked == 20 + 19 + 10 + 10 + 5);
}

TEST_CASE("print with a compiled format delivers lines of every length whole, across 4 KiB and block ends") {
  // Lengths around the arena's limits: a line that outgrows the room left in
  // a block moves to the next (or to the front of the same, drained block),
  // and one longer than 4 KiB moves to the heap. Every line is different.
  memory_stream m;
  std::string expected;
  const std::size_t lengths[] = {1, 90, 1023, 1024, 1025, 2000, 3000, 4094, 4095, 4096, 4097, 5000, 10000, 70000};
  for (int i = 0; i < 600; ++i) {
    const std::size_t len = lengths[(i * 7 + i / 14) % std::size(lengths)];
    const std::string body(len, static_cast<char>('a' + i % 26));
    m.w->print(FMT_COMPILE("{:04}:{}:{}\n"), i, body, len);
    expected += fmt::format("{:04}:{}:{}\n", i, body, len);
    if (i % 5 == 0) m.l.run_until_idle();  // drained blocks start over in place
  }
  m.w->end();
  m.l.run();
  CHECK(m.sink->data().size() == expected.size());
  CHECK(m.sink->data() == expected);
}

TEST_CASE("print with a compiled format returns what write returns, at every step") {
  memory_stream printed({.high_water_mark = 64});
  memory_stream written({.high_water_mark = 64});
  printed.w->cork();
  written.w->cork();
  for (int i = 0; i < 12; ++i) {
    const bool p = printed.w->print(FMT_COMPILE("line {:02}\n"), i);
    const bool w = written.w->write(fmt::format("line {:02}\n", i));
    CHECK(p == w);
    CHECK(printed.w->writable_length() == written.w->writable_length());
    CHECK(printed.w->writable_need_drain() == written.w->writable_need_drain());
  }
  CHECK(printed.w->writable_need_drain());  // 96 bytes against a mark of 64
  bool drained = false;
  printed.w->once(event::drain, [&] { drained = true; });
  printed.w->uncork();
  printed.l.run_until_idle();
  CHECK(drained);
  CHECK(printed.w->print(FMT_COMPILE("{}\n"), "after drain"));
}

TEST_CASE("print with a compiled format after end errors the stream as write does") {
  harness printed, written;
  printed.w->end();
  written.w->end();
  CHECK_FALSE(printed.w->print(FMT_COMPILE("late {}\n"), 1));
  CHECK_FALSE(written.w->write("late 1\n"));
  printed.run();
  written.run();
  CHECK(printed.log.str().find("error ERR_STREAM_WRITE_AFTER_END") != std::string::npos);
  CHECK(printed.log.str() == written.log.str());
  CHECK(printed.log.str().find("_write") == std::string::npos);
}

TEST_CASE("print with a compiled format after destroy errors as write does") {
  harness printed, written;
  printed.w->destroy();
  written.w->destroy();
  CHECK_FALSE(printed.w->print(FMT_COMPILE("late {}\n"), 1));
  CHECK_FALSE(written.w->write("late 1\n"));
  printed.run();
  written.run();
  CHECK(printed.log.str() == written.log.str());
}

TEST_CASE("write callbacks around compiled prints are each called exactly once") {
  harness h(async_sink());
  h.write("a");
  h.w->print(FMT_COMPILE("{}-{}\n"), "b", 2);
  h.write("c");
  h.w->print(FMT_COMPILE("{}\n"), std::string(5000, 'x'));  // owned on the heap
  h.write("d");
  h.complete();  // "a"
  h.run();
  h.complete();  // the batch of the rest
  h.run();
  h.write("e");  // in flight: the stream's destructor pays its callback
  h.w->print(FMT_COMPILE("{}\n"), 3.5);
  h.write("f");  // buffered
  h.w->destroy();
  h.run();
  const std::string log = h.log.str();
  INFO(log);
  CHECK(log.find("cb a ok") != std::string::npos);
  CHECK(log.find("cb c ok") != std::string::npos);
  CHECK(log.find("cb d ok") != std::string::npos);
  CHECK(log.find("_writev b-2\n,c,<5001 bytes>,d") != std::string::npos);
  // ~harness pays "e" and "f" (ERR_STREAM_DESTROYED) and checks that every
  // callback was called exactly once.
}

TEST_CASE("a formatter that throws inside a compiled print leaves nothing behind") {
  memory_stream m;
  m.w->cork();
  m.w->print(FMT_COMPILE("{}\n"), "before");
  CHECK_THROWS_AS(m.w->print(FMT_COMPILE("{} {}\n"), "x", throws_midway{}), std::runtime_error);
  CHECK(m.w->writable_length() == 7);
  m.w->print(FMT_COMPILE("{}\n"), "after");
  m.w->uncork();
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() == "before\nafter\n");
}

TEST_CASE("print with a compiled format makes no heap allocation per line in steady state") {
  memory_stream m;
  const std::string_view path = "/api/v1/items";
  auto batch = [&] {
    for (unsigned i = 0; i < 2000; ++i)
      m.w->print(FMT_COMPILE("2026-11-30T{:02}:{:02}:{:02}.{:06}Z INFO request id={} path={} status={} took_us={}\n"),
                 i % 24, i % 60, i % 60, i * 997 % 1000000, i * 31, path, 200u, i % 1000);
  };
  m.w->cork();
  batch();
  m.w->uncork();
  m.l.run_until_idle();  // warm
  m.w->cork();
  const auto before = sluice::test::allocation_count();
  batch();
  const auto after = sluice::test::allocation_count();
  m.w->uncork();
  m.l.run_until_idle();
  CHECK(after - before == 0);
}
