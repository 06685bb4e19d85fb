// print() with a runtime format string parses it once and formats from the
// parsed form afterwards: the lines must be fmt::format's, byte for byte, for
// every format fmt accepts, the first time (parse) and every time after (the
// cache), and the errors fmt's.
#include <doctest/doctest.h>

#include <climits>
#include <cstring>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "sluice/loop/loop.h"
#include "support/memory_sink.h"
#include "sluice/stream/writable.h"
#include "support/printers.h"

using namespace sluice;

namespace {

struct custom {
  int v;
};

struct memory_stream {
  loop l;
  memory_sink* sink = nullptr;
  std::unique_ptr<writable> w;
  memory_stream() {
    auto s = std::make_unique<memory_sink>();
    sink = s.get();
    writable_options o;
    o.event_loop = &l;
    w = std::make_unique<writable>(std::move(s), o);
  }
  // What the next print adds to the sink.
  std::string take(std::size_t& seen) {
    l.run_until_idle();
    std::string got = sink->data().substr(seen);
    seen = sink->data().size();
    return got;
  }
};

}  // namespace

template <>
struct fmt::formatter<custom> : fmt::formatter<int> {
  auto format(const custom& c, fmt::format_context& ctx) const { return fmt::formatter<int>::format(c.v * 2, ctx); }
};

namespace {

// Three prints of the same call site (one parse, two from the cache), each
// equal to fmt::vformat. (print() is vprint() behind a compile-time check.)
struct checker {
  memory_stream m;
  std::size_t seen = 0;
  int checked = 0;
  template <class... Args>
  void same(const char* f, const Args&... args) {
    const std::string want = fmt::vformat(f, fmt::make_format_args(args...));
    for (int i = 0; i < 3; ++i) {
      m.w->vprint(f, fmt::make_format_args(args...));
      const std::string got = m.take(seen);
      INFO("format \"", f, "\", print ", i);
      CHECK(got == want);
    }
    ++checked;
  }
};

}  // namespace

TEST_CASE("print with a runtime format writes fmt::format's line for every argument type") {
  checker c;
  int i = -42;
  c.same("{}", i);
  c.same("{}", INT_MIN);
  c.same("{}", 42u);
  c.same("{}", UINT_MAX);
  c.same("{}", LLONG_MIN);
  c.same("{}", ULLONG_MAX);
  c.same("{}", static_cast<short>(-7));
  c.same("{}", static_cast<unsigned char>(200));
  c.same("{}", 123456789012L);
  c.same("{}", true);
  c.same("{}", false);
  c.same("{}", 'x');
  c.same("{}", 1.5f);
  c.same("{}", 0.1);
  c.same("{}", 1e300);
  c.same("{}", -0.0);
  c.same("{}", std::numeric_limits<double>::infinity());
  c.same("{}", std::numeric_limits<double>::quiet_NaN());
  c.same("{}", 2.5L);
  c.same("{}", "a C string");
  const char* cs = "pointer";
  c.same("{}", cs);
  c.same("{}", std::string_view("view"));
  c.same("{}", std::string("string"));
  c.same("{}", std::string());
  const void* p = &i;
  c.same("{}", p);
  c.same("{}", nullptr);
  c.same("{}", custom{21});
  c.same("{:>6}", custom{21});
  CHECK(c.checked == 28);
}

TEST_CASE("print with a runtime format follows every format spec as fmt does") {
  checker c;
  c.same("{:d} {:x} {:X} {:#x} {:#X} {:o} {:#o} {:b} {:#b} {:#B}", 255, 255, 255, 255, 255, 8, 8, 5, 5, 5);
  c.same("{:+} {:-} {: } {:+} {: }", 5, 5, 5, -5, -5);
  c.same("{:08} {:+08} {:#010x} {:<8}| {:>8}| {:^8}|", -42, 42, 255, 7, 7, 7);
  c.same("{:*^9} {:_<5} {:0>4} {:#^3}", "mid", 1, 2, 'c');
  c.same("{:c} {:d} {:x} {:?} {:?} {:>5?}", 65, 'A', 'A', 'A', '\n', 'q');
  c.same("{:s} {:d} {:x} {:>6}", true, true, false, true);
  c.same("{:.3f} {:08.3f} {:+.2e} {:E} {:g} {:G} {:.0f} {:#.0f} {:a} {:A}", 3.14159, -3.14159, 12345.678, 0.000123,
         1e-10, 1e20, 2.5, 2.5, 1.0, 0.5);
  c.same("{:.3} {:10.4} {:<10.2f}|", 3.14159, 2.71828, 1.005);
  c.same("{:.2f} {:>12.3e} {:g}", 1.5f, 2.5L, 1e-5f);
  c.same("{:.3s}| {:>8.2s}| {:<6}| {:^7}| {:?}", "abcdef", "xyz", "ab", "c", "q\"\n");
  c.same("{:p} {:>20p}", static_cast<const void*>(nullptr), reinterpret_cast<const void*>(0x1234));
  c.same("{:L} {:L} {:L}", 1234567, 1234.5, true);
  c.same("{:é^9} {:→>5}", "uni", 7);
  c.same("{:}", 17);
  c.same("{:>2000}", "wide");  // longer than the room left in the block: the line grows
  CHECK(c.checked == 15);
}

TEST_CASE("print with a runtime format takes positional arguments, escaped braces and no arguments as fmt does") {
  checker c;
  c.same("{0} {1} {0}", "a", 2);
  c.same("{1}{0}", 1, 2);
  c.same("{0:>4}|{0:<4}|{0:^4}|{1:x}", 9, 255);
  c.same("{2}", 0, 1, "third");
  c.same("{{}} {{{}}} }}{{", 5);
  c.same("{{");
  c.same("}}");
  c.same("plain text, no fields\n");
  c.same("");
  c.same("2026-11-30T{:02}:{:02}:{:02}.{:06}Z INFO request id={} path={} status={} took_us={}\n", 1, 2, 3, 45, 99,
         "/api/v1/items", 200, 1234);
  c.same("{:{}}|{:.{}f}|{:{}.{}}", 5, 4, 3.14159, 2, 2.5, 8, 3);  // dynamic specs: fmt's to format
  c.same("{name} {0}", fmt::arg("name", "named"));
  c.same("{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
         20);
  CHECK(c.checked == 13);
}

// The cache writes integers with no specs, or with only a width and the
// '0' flag ("{:02}", "{:6d}"), and strings with no specs, itself (not
// through fmt): every digit count, both signs, the extremes, widths below,
// at and above the digits, and lines that outgrow their room.
TEST_CASE("print with a runtime format writes integers with a width and strings as fmt does") {
  checker c;
  const char* const f = "{}|{:1}|{:02}|{:06}|{:21}|{:022d}|{:d}|{}";
  std::uint64_t p = 1;
  for (int digits = 1; digits <= 20; ++digits) {
    const std::uint64_t below = p - 1, at = p;
    c.same(f, below, at, below, at, below, at, below, std::string_view("sv"));
    if (at <= static_cast<std::uint64_t>(LLONG_MAX)) {
      const auto s = static_cast<long long>(at);
      c.same(f, -s, s, -s, s, -s, s, -s, "c string");
    }
    if (at <= UINT_MAX) {
      const auto u = static_cast<unsigned>(at);
      c.same(f, u, u - 1, u, u - 1, u, u - 1, u, std::string_view());
      if (at <= static_cast<std::uint64_t>(INT_MAX)) {
        const auto i = static_cast<int>(at);
        c.same(f, -i, i - 1, -i, 1 - i, i, -i, i - 1, std::string_view("a longer string view, past sixteen bytes"));
      }
    }
    if (digits < 20) p *= 10;
  }
  c.same(f, INT_MIN, INT_MAX, INT_MIN, INT_MAX, INT_MIN, INT_MAX, 0, "");
  c.same(f, LLONG_MIN, LLONG_MAX, LLONG_MIN, LLONG_MAX, LLONG_MIN, LLONG_MAX, 0LL, "");
  c.same(f, ULLONG_MAX, 0ull, ULLONG_MAX, 0ull, ULLONG_MAX, 0ull, ULLONG_MAX, "");
  c.same(f, static_cast<short>(-7), 123456789012L, static_cast<unsigned char>(200), -1L, 5ul, static_cast<short>(-1),
         -0, "");
  c.same("{:03}|{:5}|{:05}|{:1}|{:01}", -5, -5, -5, -5, -5);
  c.same("{:255}|{:0255}|{:0255d}", 1, -2, 3u);  // the widest width the cache writes
  c.same("{:256}|{:0256}", 1, -2);               // wider: fmt's
  c.same("{:0}|{:00}|{:0d}|{:d}", 1, 2, 3, 4);  // no width: fmt's
  // Five fields of 255 and more: past the room left in a block (1 KiB at least).
  const std::string wide(300, 'x');
  c.same("{:0255}{:0255}{:0255}{:0255}{:0255}{:0255}{}\n", 1, 2, 3, 4, 5, 6, std::string_view(wide));
  CHECK(c.checked == 20 + 19 + 10 + 10 + 9);
}

TEST_CASE("a buffer that held another format at the same address is parsed again") {
  memory_stream m;
  std::size_t seen = 0;
  char f[] = "a={}\n";
  m.w->vprint(f, fmt::make_format_args(1));
  CHECK(m.take(seen) == "a=1\n");
  f[0] = 'b';
  m.w->vprint(f, fmt::make_format_args(2));
  CHECK(m.take(seen) == "b=2\n");
  std::strcpy(f, "{:x}|");
  m.w->vprint(f, fmt::make_format_args(255));
  CHECK(m.take(seen) == "ff|");
}

TEST_CASE("one format string printed with other argument types gives each its own line") {
  memory_stream m;
  std::size_t seen = 0;
  static const char f[] = "[{:>4}]";
  for (int round = 0; round < 3; ++round) {
    m.w->vprint(f, fmt::make_format_args(7));
    CHECK(m.take(seen) == "[   7]");
    m.w->vprint(f, fmt::make_format_args("ab"));
    CHECK(m.take(seen) == "[  ab]");
    m.w->vprint(f, fmt::make_format_args(2.5));
    CHECK(m.take(seen) == "[ 2.5]");
    m.w->vprint(f, fmt::make_format_args('c'));
    CHECK(m.take(seen) == "[   c]");
  }
}

TEST_CASE("a runtime format fmt rejects throws fmt's error every time, and writes nothing") {
  memory_stream m;
  std::size_t seen = 0;
  for (int i = 0; i < 2; ++i) {
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{"), fmt::make_format_args(1)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("}"), fmt::make_format_args(1)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{0}{}"), fmt::make_format_args(1, 2)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{}{0}"), fmt::make_format_args(1, 2)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{1}"), fmt::make_format_args(1)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{:d}"), fmt::make_format_args("text")), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{:.2d}"), fmt::make_format_args(5)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{:x"), fmt::make_format_args(5)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{01}"), fmt::make_format_args(5, 6)), fmt::format_error);
    CHECK_THROWS_AS(m.w->vprint(fmt::string_view("{}"), fmt::make_format_args(static_cast<const char*>(nullptr))),
                    fmt::format_error);
  }
  CHECK(m.take(seen).empty());
  // A good format that fmt accepts after the ones it rejected.
  m.w->vprint(fmt::string_view("{}"), fmt::make_format_args(3));
  CHECK(m.take(seen) == "3");
}
