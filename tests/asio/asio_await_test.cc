// asio/writer.h, chunks.h, event_queue.h: co_await on streams inside
// boost::asio::awaitable coroutines, on an io_context the loop is attached to.
#include "support/printers.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <utility>  // before Asio: g++ 12 with C++20 coroutines

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstdio>
#include <doctest/doctest.h>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/asio/attach.h"
#include "sluice/asio/chunks.h"
#include "sluice/asio/event_queue.h"
#include "sluice/asio/writer.h"
#include "sluice/fs/read_stream.h"
#include "sluice/fs/write_stream.h"
#include "sluice/sources/source.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/alloc_counter.h"
#include "support/pipe_fds.h"

using namespace sluice;
using sluice::test::pipe_fds;
namespace net = boost::asio;
using net::awaitable;
using net::use_awaitable;

namespace {

// Runs `co` on `ctx` to its end; returns what it threw.
std::exception_ptr run(net::io_context& ctx, awaitable<void> co) {
  std::exception_ptr thrown;
  bool done = false;
  net::co_spawn(ctx, std::move(co), [&](std::exception_ptr e) {
    thrown = e;
    done = true;
  });
  ctx.run();
  CHECK(done);
  return thrown;
}

// Pushes `total` numbered lines, 64 KiB chunks at a time, each in a later
// turn (an immediate), as a file does; no timer anywhere.
class lines_source final : public source {
 public:
  explicit lines_source(std::size_t total) : total_(total) {}
  void attach(loop& l) override { loop_ = &l; }
  void read(std::size_t) override {
    loop_->set_immediate([this] { produce(); }, this);
  }
  std::error_code destroy(std::error_code err) noexcept override {
    loop_->cancel(this);
    return err;
  }

 private:
  void produce() {
    if (next_ == total_) {
      push_eof();
      return;
    }
    std::string chunk;
    chunk.reserve(64 * 1024);
    char line[32];
    while (next_ < total_ && chunk.size() + sizeof line < chunk.capacity()) {
      const int n = std::snprintf(line, sizeof line, "line %zu\n", next_++);
      chunk.append(line, static_cast<std::size_t>(n));
    }
    push(std::move(chunk));
  }
  loop* loop_ = nullptr;
  std::size_t total_;
  std::size_t next_ = 0;
};

// The code of the std::system_error in `e`, or none.
std::error_code thrown_code(std::exception_ptr e) {
  try {
    if (e) std::rethrow_exception(e);
  } catch (const std::system_error& x) {
    return x.code();
  }
  return {};
}

struct fixture {
  net::io_context ctx;
  loop l;
  asio::attachment a = asio::attach(ctx, l);
  readable_options ro() {
    readable_options o;
    o.event_loop = &l;
    return o;
  }
  writable_options wo() {
    writable_options o;
    o.event_loop = &l;
    return o;
  }
};

}  // namespace

TEST_CASE("lines: 100k lines through co_await, no timer, no allocation per line") {
  fixture f;
  constexpr std::size_t total = 100000;
  readable r(std::make_unique<lines_source>(total), f.ro());
  std::size_t count = 0;
  bool in_order = true;
  std::size_t allocations = 0;
  auto thrown = run(f.ctx, [&]() -> awaitable<void> {
    asio::lines in(r);
    std::size_t before = 0;
    while (auto line = co_await in.async_next(use_awaitable)) {
      char expected[32];
      const int n = std::snprintf(expected, sizeof expected, "line %zu", count);
      in_order = in_order && *line == std::string_view(expected, static_cast<std::size_t>(n));
      if (++count == 1000) before = sluice::test::allocation_count();  // warm
    }
    allocations = sluice::test::allocation_count() - before;
  }());
  CHECK_FALSE(thrown);
  CHECK(count == total);
  CHECK(in_order);
  // The source's chunks (about 18 of 64 KiB for 99k lines) and the stream's
  // own bookkeeping per chunk; nothing per line.
  CHECK(allocations < 200);
  CHECK(r.readable_ended());
}

TEST_CASE("lines: the error variant reports a line too long, and the throwing one throws it") {
  fixture f;
  readable r(std::make_unique<lines_source>(10), f.ro());
  SUBCASE("error_code") {
    std::error_code ec;
    int lines = 0;
    CHECK_FALSE(run(f.ctx, [&]() -> awaitable<void> {
      asio::lines in(r, {.max_line_length = 4});
      while (co_await in.async_next(ec, use_awaitable)) ++lines;
    }()));
    CHECK(lines == 0);
    CHECK(ec == make_error_code(errc::line_too_long));
  }
  SUBCASE("throws") {
    auto thrown = run(f.ctx, [&]() -> awaitable<void> {
      asio::lines in(r, {.max_line_length = 4});
      while (co_await in.async_next(use_awaitable)) {
      }
    }());
    CHECK(thrown_code(thrown) == make_error_code(errc::line_too_long));
  }
  r.destroy();
}

TEST_CASE("chunks: a pipe's chunks until 'end', written by a writer in another coroutine") {
  fixture f;
  pipe_fds p;
  REQUIRE(::fcntl(p.w, F_SETFL, O_NONBLOCK) == 0);
  REQUIRE(::fcntl(p.r, F_SETFL, O_NONBLOCK) == 0);
  auto out = make_fd_writable(p.w, false, f.wo());
  auto in = make_fd_readable(p.r, false, f.ro());
  const std::string piece(1000, 'z');
  constexpr int pieces = 1000;  // 1 MB: far past the pipe's buffer
  std::size_t got = 0;
  int waits_at_once = 0;
  std::exception_ptr writer_threw;
  net::co_spawn(f.ctx, [&]() -> awaitable<void> {
    asio::writer w(*out);
    for (int i = 0; i < pieces; ++i) {
      const bool room = out->write(piece);
      co_await w.async_room(use_awaitable);
      if (room) ++waits_at_once;
    }
    co_await w.async_end(use_awaitable);
    p.close_w();
  }, [&](std::exception_ptr e) { writer_threw = e; });
  auto thrown = run(f.ctx, [&]() -> awaitable<void> {
    asio::chunks c(*in);
    while (auto chunk = co_await c.async_next(use_awaitable)) got += chunk->size();
  }());
  CHECK_FALSE(thrown);
  CHECK_FALSE(writer_threw);
  CHECK(got == piece.size() * pieces);
  CHECK(waits_at_once > 0);
  CHECK(out->writable_finished());
  CHECK(in->readable_ended());
}

TEST_CASE("chunks: a stream destroyed with an error throws it; without one, premature close") {
  fixture f;
  pipe_fds p;
  REQUIRE(::fcntl(p.r, F_SETFL, O_NONBLOCK) == 0);
  auto in = make_fd_readable(p.r, false, f.ro());
  std::error_code expected;
  SUBCASE("error") {
    expected = std::make_error_code(std::errc::io_error);
    f.l.set_immediate([&] { in->destroy(expected); });
  }
  SUBCASE("no error") {
    expected = make_error_code(errc::premature_close);
    f.l.set_immediate([&] { in->destroy(); });
  }
  std::error_code ec;
  int chunks_seen = 0;
  asio::chunks c(*in);  // before the destroy: it hears the events
  CHECK_FALSE(run(f.ctx, [&]() -> awaitable<void> {
    while (co_await c.async_next(ec, use_awaitable)) ++chunks_seen;
  }()));
  CHECK(chunks_seen == 0);
  CHECK(ec == expected);
}

TEST_CASE("chunks: a callback works as the completion token") {
  fixture f;
  readable r(std::make_unique<lines_source>(3), f.ro());
  asio::chunks c(r);
  std::string all;
  bool ended = false;
  std::function<void(std::exception_ptr, std::optional<std::string>)> next =
      [&](std::exception_ptr e, std::optional<std::string> chunk) {
        CHECK_FALSE(e);
        if (!chunk) {
          ended = true;
          return;
        }
        all += *chunk;
        c.async_next(next);
      };
  c.async_next(next);
  f.ctx.run();
  CHECK(ended);
  CHECK(all == "line 0\nline 1\nline 2\n");
}

// A chunk that the iterator's wake-up finds is handed to the handler from
// that wake-up (a microtask, where Node's `for await` resumes), not from one
// more tick; still never inside the 'readable' that woke it, and the handler
// may end the iteration there: nothing touches the chunks object after it.
TEST_CASE("chunks: a woken handler runs outside the 'readable' event, and may destroy the iteration") {
  fixture f;
  readable r(std::make_unique<lines_source>(3), f.ro());
  bool in_readable = false;
  // Around the iteration's own listener: on before it, off after it.
  r.on(event::readable, [&] { in_readable = true; });
  std::optional<asio::chunks> c(std::in_place, r);
  r.on(event::readable, [&] { in_readable = false; });
  int handled = 0;
  bool inside_event = false;
  std::string got;
  c->async_next([&](std::exception_ptr e, std::optional<std::string> chunk) {
    CHECK_FALSE(e);
    ++handled;
    inside_event = inside_event || in_readable;
    if (chunk) got = *chunk;
    c.reset();  // the iteration ends inside its own completion
  });
  f.ctx.run();
  CHECK(handled == 1);
  CHECK_FALSE(inside_event);
  CHECK(got == "line 0\nline 1\nline 2\n");
  CHECK_FALSE(c.has_value());
}

TEST_CASE("writer: async_end throws the stream's error (EPIPE), and async_room reports it in ec") {
  ::signal(SIGPIPE, SIG_IGN);
  fixture f;
  pipe_fds p;
  REQUIRE(::fcntl(p.w, F_SETFL, O_NONBLOCK) == 0);
  p.close_r();
  auto out = make_fd_writable(p.w, false, f.wo());
  out->on(event::error, [](std::error_code) {});
  SUBCASE("async_end throws") {
    auto thrown = run(f.ctx, [&]() -> awaitable<void> {
      asio::writer w(*out);
      out->write("x");
      co_await w.async_end(use_awaitable);
    }());
    CHECK(thrown_code(thrown) == std::error_code(EPIPE, std::system_category()));
  }
  SUBCASE("async_room with an error_code") {
    std::error_code ec;
    CHECK_FALSE(run(f.ctx, [&]() -> awaitable<void> {
      asio::writer w(*out);
      // Past the high-water mark, so that room waits for 'drain', which the
      // error replaces.
      out->write(std::string(64 * 1024, 'x'));
      co_await w.async_room(ec, use_awaitable);
    }()));
    CHECK(ec == std::error_code(EPIPE, std::system_category()));
  }
}

TEST_CASE("writer: room below the high-water mark costs no allocation per write") {
  fixture f;
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  REQUIRE(devnull >= 0);
  auto out = make_fd_writable(devnull, true, f.wo());
  std::size_t allocations = 0;
  CHECK_FALSE(run(f.ctx, [&]() -> awaitable<void> {
    asio::writer w(*out);
    std::size_t before = 0;
    for (int i = 0; i < 20000; ++i) {
      if (i == 1000) before = sluice::test::allocation_count();
      co_await w.async_write("a line of the log\n", use_awaitable);
    }
    allocations = sluice::test::allocation_count() - before;
    co_await w.async_end(use_awaitable);
  }()));
  CHECK(allocations < 100);
  CHECK(out->writable_finished());
}

namespace {
// A bare emitter, as any class of the program's own may be.
struct ticker final : emitter {};
event_arg error_arg(std::error_code ec) {
  event_arg a;
  a.error = ec;
  return a;
}
}  // namespace

TEST_CASE("event_queue: events as co_await, in order, then the error; O(1) and no allocation once warm") {
  fixture f;
  ticker t;
  constexpr int total = 100000;
  int emitted = 0;
  // Bursts of 100 'data' events per turn, then an 'error'.
  std::function<void()> burst = [&] {
    for (int i = 0; i < 100 && emitted < total; ++i, ++emitted) {
      const std::string_view chunk = (emitted % 2) ? "odd" : "even";
      event_arg a;
      a.chunk = chunk;
      t.emit(event::data, a);
    }
    if (emitted < total)
      f.l.set_immediate([&burst] { burst(); });
    else
      t.emit(event::error, error_arg(std::make_error_code(std::errc::io_error)));
  };
  f.l.set_immediate([&burst] { burst(); });
  // Made before the first burst: it queues from construction on.
  asio::event_queue q(t, event::data, {}, f.l);
  int seen = 0;
  bool in_order = true;
  std::size_t allocations = 0;
  std::error_code ec, first_error;
  CHECK_FALSE(run(f.ctx, [&]() -> awaitable<void> {
    std::size_t before = 0;
    while (auto a = co_await q.async_next(ec, use_awaitable)) {
      in_order = in_order && a->chunk == ((seen % 2) ? "odd" : "even");
      if (++seen == 1000) before = sluice::test::allocation_count();
    }
    allocations = sluice::test::allocation_count() - before;
    first_error = ec;
    // Over: nothing more, not even a second error.
    auto again = co_await q.async_next(ec, use_awaitable);
    CHECK_FALSE(again);
  }()));
  CHECK(seen == total);
  CHECK(in_order);
  CHECK(first_error == std::make_error_code(std::errc::io_error));
  CHECK(ec == std::error_code{});  // the second call found the iteration over
  CHECK(allocations < 50);
}

TEST_CASE("event_queue: a close event ends the iteration after the events before it") {
  fixture f;
  ticker t;
  f.l.set_immediate([&] {
    event_arg a;
    a.chunk = "one";
    t.emit(event::data, a);
    a.chunk = "two";
    t.emit(event::data, a);
    t.emit(event::end);
  });
  std::string all;
  asio::event_queue q(t, event::data, {event::end}, f.l);
  std::exception_ptr thrown = run(f.ctx, [&]() -> awaitable<void> {
    while (auto a = co_await q.async_next(use_awaitable)) all += std::string(a->chunk) + ";";
  }());
  CHECK_FALSE(thrown);
  CHECK(all == "one;two;");
}

TEST_CASE("event_queue: an 'error' throws from async_next") {
  fixture f;
  ticker t;
  f.l.set_immediate([&] { t.emit(event::error, error_arg(make_error_code(errc::premature_close))); });
  asio::event_queue q(t, event::data, {}, f.l);
  auto thrown = run(f.ctx, [&]() -> awaitable<void> {
    while (co_await q.async_next(use_awaitable)) {
    }
  }());
  CHECK(thrown_code(thrown) == make_error_code(errc::premature_close));
}
