// async_iterator: Node's createAsyncIterator(), the one for-await engine
// under the iterator helpers and asio/chunks.h. What leaving the loop does
// to the stream (destroyOnReturn), and the end as finished() sees it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/async_iterator.h"
#include "sluice/stream/from.h"

using namespace sluice;

namespace {

std::vector<std::string> items(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(std::to_string(i));
  return v;
}

// Drives `it` as `for await (const c of r) { got.push_back(c); if (got.size() == stop_after) break; }`.
struct loop_body {
  loop_body(std::shared_ptr<async_iterator> i, std::size_t n) : it(std::move(i)), stop_after(n) {}
  std::shared_ptr<async_iterator> it;
  std::size_t stop_after;
  std::vector<std::string> got;
  bool ended = false;
  std::error_code error;

  void step() {
    async_iterator::step s = it->next();
    switch (s.kind) {
      case async_iterator::step::pending:
        return it->wait([this] { step(); });
      case async_iterator::step::end:
        ended = true;
        return;
      case async_iterator::step::error:
        error = s.ec;
        return;
      case async_iterator::step::chunk:
        got.push_back(std::move(s.value));
        if (got.size() == stop_after) return it->close();
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
