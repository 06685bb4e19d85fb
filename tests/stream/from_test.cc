// readable_from(): Node's Readable.from() over C++ ranges and generator-like
// callables. The behaviour pinned against Node's traces is in
// conformance/api/from-*.scn; these tests pin the C++ side: ownership of the
// range, the string case, errors thrown by the source, and the options.
#include <doctest/doctest.h>

#include <list>
#include <stdexcept>
#include <string>
#include <vector>

#include "sluice/sluice.h"

namespace {

// Every chunk of `r` in flowing mode, and its end or error.
struct collected {
  std::vector<std::string> chunks;
  bool ended = false;
  std::error_code error;
};

collected collect(sluice::readable& r) {
  collected c;
  r.on(sluice::event::data, [&c](std::string_view chunk) { c.chunks.emplace_back(chunk); });
  r.on(sluice::event::end, [&c] { c.ended = true; });
  r.on(sluice::event::error, [&c](std::error_code ec) { c.error = ec; });
  sluice::loop::current().run_until_idle();
  return c;
}

}  // namespace

TEST_CASE("readable_from a vector gives its items in order, then 'end'") {
  auto r = sluice::readable_from(std::vector<std::string>{"a", "bc", "d"});
  CHECK(r->readable_object_mode());
  CHECK(r->readable_high_water_mark() == 1);
  const auto c = collect(*r);
  CHECK(c.chunks == std::vector<std::string>{"a", "bc", "d"});
  CHECK(c.ended);
  CHECK(!c.error);
}

TEST_CASE("readable_from copies an lvalue range and iterates a view in place") {
  std::vector<std::string> v{"x", "y"};
  auto copied = sluice::readable_from(v);
  v[0] = "changed";
  CHECK(collect(*copied).chunks == std::vector<std::string>{"x", "y"});
  CHECK(v == std::vector<std::string>{"changed", "y"});  // copied from, not moved from

  auto viewed = sluice::readable_from(std::views::all(v));
  v[1] = "seen";
  CHECK(collect(*viewed).chunks == std::vector<std::string>{"changed", "seen"});
  CHECK(v == std::vector<std::string>{"changed", "seen"});  // a view's items are copied
}

TEST_CASE("readable_from takes any input range of string-like items") {
  std::list<const char*> l{"p", "q"};
  CHECK(collect(*sluice::readable_from(l)).chunks == std::vector<std::string>{"p", "q"});
  auto upper = std::vector<std::string>{"a", "b"} |
               std::views::transform([](const std::string& s) { return s + s; });
  CHECK(collect(*sluice::readable_from(std::move(upper))).chunks == std::vector<std::string>{"aa", "bb"});
}

TEST_CASE("readable_from a string is one chunk, not a range of characters") {
  auto r = sluice::readable_from(std::string("hello"));
  CHECK(r->readable_high_water_mark() == 16);  // the object-mode default, as in Node
  CHECK(collect(*r).chunks == std::vector<std::string>{"hello"});
}

TEST_CASE("readable_from a generator pulls until it returns nullopt") {
  int n = 0;
  auto r = sluice::readable_from([&n]() -> std::optional<std::string> {
    if (n == 3) return std::nullopt;
    return std::to_string(n++);
  });
  const auto c = collect(*r);
  CHECK(c.chunks == std::vector<std::string>{"0", "1", "2"});
  CHECK(c.ended);
}

TEST_CASE("readable_from: a generator's error destroys the stream with it") {
  SUBCASE("through its std::error_code&") {
    int n = 0;
    auto r = sluice::readable_from([&n](std::error_code& ec) -> std::optional<std::string> {
      if (n == 1) {
        ec = std::make_error_code(std::errc::io_error);
        return std::nullopt;
      }
      return std::to_string(n++);
    });
    const auto c = collect(*r);
    CHECK(c.chunks == std::vector<std::string>{"0"});
    CHECK(!c.ended);
    CHECK(c.error == std::make_error_code(std::errc::io_error));
    CHECK(r->destroyed());
  }
  SUBCASE("thrown as a std::system_error") {
    auto r = sluice::readable_from([]() -> std::optional<std::string> {
      throw std::system_error(std::make_error_code(std::errc::no_space_on_device));
    });
    CHECK(collect(*r).error == std::make_error_code(std::errc::no_space_on_device));
  }
  SUBCASE("thrown as another exception: its what() as a user_error") {
    auto r = sluice::readable_from([]() -> std::optional<std::string> { throw std::runtime_error("no more"); });
    const auto c = collect(*r);
    CHECK(c.error == sluice::user_error("no more"));
    CHECK(sluice::code_name(c.error) == "no more");
  }
}

TEST_CASE("readable_from's options: byte mode merges items on read, hwm pulls ahead") {
  int pulls = 0;
  sluice::from_options o;
  o.object_mode = false;
  o.high_water_mark = 4;
  auto r = sluice::readable_from(
      [&pulls]() -> std::optional<std::string> {
        ++pulls;
        if (pulls > 3) return std::nullopt;
        return std::string("ab");
      },
      o);
  CHECK(!r->read(0));
  CHECK(pulls == 2);  // 4 bytes buffered: the high-water mark
  CHECK(r->readable_length() == 4);
  // As in Node, read() pulls once more (a sync push) before taking the buffer.
  CHECK(r->read() == std::optional<std::string>("ababab"));
}
