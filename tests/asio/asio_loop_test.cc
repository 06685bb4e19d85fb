// asio/attach: a sluice loop run by a Boost.Asio io_context, with only
// io_context::run() (no loop::run(), no poll() of sluice's own).
#include "support/printers.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>  // before Asio: g++ 12 with C++20 coroutines

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <doctest/doctest.h>
#include <string>
#include <thread>
#include <vector>

#include "sluice/asio/attach.h"
#include "sluice/fs/read_stream.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sources/source.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/pipe_fds.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::must_call;
using sluice::test::pipe_fds;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {
// A loop of the test's own, attached to an io_context.
struct on_asio {
  net::io_context ctx;
  loop l;
  asio::attachment a = asio::attach(ctx, l);
};
}  // namespace

TEST_CASE("ticks and immediates keep Node's order on the io_context, as on loop::run()") {
  auto record = [](bool on_asio) {
    loop l;
    std::vector<std::string> log;
    l.set_immediate([&] {
      log.push_back("immediate 1");
      l.next_tick([&] { log.push_back("tick from immediate 1"); });
      l.set_immediate([&] { log.push_back("immediate from immediate 1"); });
    });
    l.set_immediate([&] { log.push_back("immediate 2"); });
    l.next_tick([&] {
      log.push_back("tick 1");
      l.next_tick([&] { log.push_back("tick from tick 1"); });
    });
    l.next_tick([&] { log.push_back("tick 2"); });
    if (on_asio) {
      net::io_context ctx;
      auto a = asio::attach(ctx, l);
      CHECK(asio::context_of(l) == &ctx);
      CHECK(ctx.run() > 0);
      CHECK_FALSE(l.alive());
    } else {
      l.run();
    }
    return log;
  };
  const std::vector<std::string> expected{"tick 1", "tick 2", "tick from tick 1", "immediate 1",
                                          "tick from immediate 1", "immediate 2", "immediate from immediate 1"};
  CHECK(record(false) == expected);
  CHECK(record(true) == expected);
}

TEST_CASE_FIXTURE(on_asio, "a tick queued from an Asio handler runs on the io_context") {
  int ticks = 0;
  net::post(ctx, [&] { l.next_tick([&] { ++ticks; }); });
  ctx.run();
  CHECK(ticks == 1);
}

TEST_CASE_FIXTURE(on_asio, "an fd watch fires when the pipe becomes readable, and again while it stays readable") {
  pipe_fds p;
  std::vector<short> seen;
  l.watch(p.r, POLLIN, [&](short revents) {
    seen.push_back(revents);
    // Level-triggered, as poll(): nothing was read, so a new watch fires too.
    l.watch(p.r, POLLIN, [&](short revents2) {
      seen.push_back(revents2);
      char c;
      CHECK(::read(p.r, &c, 1) == 1);
    });
  });
  net::post(ctx, [&] { CHECK(::write(p.w, "x", 1) == 1); });
  ctx.run();
  REQUIRE(seen.size() == 2);
  CHECK((seen[0] & POLLIN) != 0);
  CHECK((seen[1] & POLLIN) != 0);
  CHECK_FALSE(l.alive());
}

// The engine keeps an fd in its epoll set while the fd's callback renews its
// watch (no epoll_ctl per wait). A callback that closes the fd may have its
// number given to another file, which the set does not hold: a watch on
// that one must wait on it, not on the old registration. When the callback
// renews the watch itself, the engine finds the new file at its next sweep
// (engine::sweep_period, no fstat() per wake-up), within the limit below.
TEST_CASE_FIXTURE(on_asio, "an fd closed after its watch fired, its number now another pipe's, is watched anew") {
  net::steady_timer limit(ctx);
  limit.expires_after(std::chrono::seconds(5 * sluice::test::time_scale()));
  limit.async_wait([&](boost::system::error_code ec) {
    if (!ec) ctx.stop();
  });
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const int number = std::min(fds[0], fds[1]);
  const int r = number, w = std::max(fds[0], fds[1]);
  int first = 0, second = 0;
  std::vector<int> next(2, -1);
  auto watch_next = [&] {
    // The lowest free numbers: the old pipe's.
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    next = {p[0], p[1]};
    REQUIRE(std::min(p[0], p[1]) == number);
    l.watch(number, POLLIN, [&](short revents) {
      ++second;
      CHECK((revents & POLLIN) != 0);
      ::close(next[0]);
      ::close(next[1]);
      limit.cancel();
    });
    // The new pipe's read end gets the data: a watch that waited on the
    // old registration would never hear of it.
    const int read_end = next[0];
    const int write_end = next[1];
    REQUIRE(read_end == number);
    net::post(ctx, [write_end] { CHECK(::write(write_end, "y", 1) == 1); });
  };
  SUBCASE("closed and reused in a later handler") {
    l.watch(r, POLLIN, [&](short) {
      ++first;
      ::close(r);
      ::close(w);
      net::post(ctx, watch_next);
    });
  }
  SUBCASE("closed and reused in the watch's own callback") {
    l.watch(r, POLLIN, [&](short) {
      ++first;
      ::close(r);
      ::close(w);
      watch_next();
    });
  }
  CHECK(::write(w, "x", 1) == 1);
  ctx.run();
  CHECK(first == 1);
  CHECK(second == 1);
}

// A stream that closes its fd has the engine let go of it first
// (loop::forget_fd()): once closed, the number may be another file's,
// registered on the same io_context by someone else, whose events must not
// be touched (and TSan sees the number's reuse by another thread as a race).
TEST_CASE_FIXTURE(on_asio, "a stream's fd is let go before it closes: its number's next file, on the same io_context, keeps its events") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const int number = fds[0];
  CHECK(::write(fds[1], "x", 1) == 1);
  ::close(fds[1]);
  std::string got;
  bool closed = false;
  {
    readable_options ro;
    ro.event_loop = &l;
    auto in = make_fd_readable(number, /*close_fd=*/true, ro);
    in->on(sluice::event::data, [&](std::string_view chunk) { got.append(chunk); });
    in->on(sluice::event::close, [&] { closed = true; });
    ctx.run();  // the watch fired, the end was read, and the stream closed its fd
  }
  REQUIRE(closed);
  CHECK(got == "x");
  ctx.restart();

  // The lowest free number is the old pipe's again: its read end is now
  // another's, waited on through Asio on the same io_context.
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  REQUIRE(p[0] == number);
  net::posix::stream_descriptor theirs(ctx, p[0]);
  bool heard = false;
  theirs.async_wait(net::posix::descriptor_base::wait_read, [&](boost::system::error_code ec) {
    CHECK(!ec);
    heard = true;
  });
  a.detach();  // the engine lets go of what it still holds
  CHECK(::write(p[1], "y", 1) == 1);
  ctx.run_for(std::chrono::seconds(2 * sluice::test::time_scale()));
  CHECK(heard);
  ::close(p[1]);
}

// The loop's fds wait in the engine's own epoll set, and Asio's reactor
// holds only that set: Asio's epoll_ctl(MOD) per async_wait is paid once per
// batch of ready fds, not per fd and round trip. So the fd a watch waits on
// is not in Asio's reactor, and Asio on the same io_context can wait on it too.
TEST_CASE_FIXTURE(on_asio, "an fd the loop watches is not in Asio's reactor: Asio can wait on it on the same io_context") {
  pipe_fds p;
  int ours = 0;
  bool theirs_heard = false;
  l.watch(p.r, POLLIN, [&](short revents) {
    ++ours;
    CHECK((revents & POLLIN) != 0);
  });
  net::posix::stream_descriptor theirs(ctx);
  boost::system::error_code ec;
  theirs.assign(p.r, ec);  // EEXIST when the loop's watch put the fd in Asio's epoll
  REQUIRE_MESSAGE(!ec, ec.message());
  theirs.async_wait(net::posix::descriptor_base::wait_read, [&](boost::system::error_code wec) {
    CHECK(!wec);
    theirs_heard = true;
  });
  CHECK(::write(p.w, "x", 1) == 1);
  ctx.run();
  CHECK(ours == 1);
  CHECK(theirs_heard);
  theirs.release();  // the pipe's, not Asio's, to close
}

TEST_CASE_FIXTURE(on_asio, "200 fds ready at once: each watch runs once, its renewal runs again while data is left") {
  std::vector<std::unique_ptr<pipe_fds>> pipes;
  std::vector<int> calls(200, 0);
  for (int i = 0; i < 200; ++i) {
    pipes.push_back(std::make_unique<pipe_fds>());
    CHECK(::write(pipes.back()->w, "ab", 2) == 2);
  }
  // Each callback reads one byte and watches again: two runs a pipe, the
  // second from the set's level-triggered report of the byte left.
  std::function<void(int)> watch = [&](int i) {
    l.watch(pipes[static_cast<std::size_t>(i)]->r, POLLIN, [&, i](short revents) {
      CHECK((revents & POLLIN) != 0);
      char c;
      REQUIRE(::read(pipes[static_cast<std::size_t>(i)]->r, &c, 1) == 1);
      if (++calls[static_cast<std::size_t>(i)] == 1) watch(i);
    });
  };
  for (int i = 0; i < 200; ++i) watch(i);
  ctx.run();  // returns: no watch is left
  CHECK(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 2; }));
  CHECK_FALSE(l.alive());
}

TEST_CASE_FIXTURE(on_asio, "a watch not renewed, its fd still readable, leaves the set: io_context::run() returns") {
  pipe_fds p;
  CHECK(::write(p.w, "x", 1) == 1);
  int calls = 0;
  l.watch(p.r, POLLIN, [&](short) { ++calls; });  // reads nothing, watches no more
  ctx.run();  // a level-triggered set still holding the fd would keep it running
  CHECK(calls == 1);
  // Watched again later: the byte is still there, and is reported.
  l.watch(p.r, POLLIN, [&](short revents) {
    ++calls;
    CHECK((revents & POLLIN) != 0);
  });
  ctx.restart();
  ctx.run();
  CHECK(calls == 2);
}

TEST_CASE_FIXTURE(on_asio, "ready together: a callback that lets go of another ready fd and reuses its number gets no stale report") {
  int p[2][2];
  for (auto& fds : p) {
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    CHECK(::write(fds[1], "x", 1) == 1);
  }
  int owner[2] = {0, 0};
  int first = 0, stale = 0;
  // Whichever the set reports first lets go of the other, closes it and
  // opens a pipe under its read number, with nothing in it.
  auto take = [&](int j) {
    const int number = p[j][0];
    l.cancel(&owner[j]);
    l.forget_fd(number);
    ::close(p[j][0]);
    ::close(p[j][1]);
    REQUIRE(::pipe2(p[j], O_CLOEXEC) == 0);
    REQUIRE(p[j][0] == number);
    l.watch(number, POLLIN, [&](short) { ++stale; }, &owner[j]);
    net::post(ctx, [&, j] { l.cancel(&owner[j]); });
  };
  for (int i = 0; i < 2; ++i)
    l.watch(p[i][0], POLLIN, [&, i](short) {
      if (++first == 1) take(1 - i);
    }, &owner[i]);
  ctx.run();
  CHECK(first == 1);
  CHECK(stale == 0);
  for (auto& fds : p) {
    ::close(fds[0]);
    ::close(fds[1]);
  }
}

TEST_CASE_FIXTURE(on_asio, "a watch on a regular file fires at once, as poll() says, and again when renewed") {
  char path[] = "/tmp/sluice-asio-file-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::unlink(path);
  int calls = 0;
  l.watch(fd, POLLIN, [&](short revents) {
    ++calls;
    CHECK((revents & POLLIN) != 0);
    l.watch(fd, POLLOUT, [&](short revents2) {
      ++calls;
      CHECK((revents2 & POLLOUT) != 0);
    });
  });
  ctx.run();
  CHECK(calls == 2);
  ::close(fd);
}

TEST_CASE_FIXTURE(on_asio, "a watch for POLLOUT and one for POLLIN on the same fd are both served") {
  int sv[2];
  REQUIRE(::pipe2(sv, O_CLOEXEC | O_NONBLOCK) == 0);
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0);
  ::close(sv[0]);
  ::close(sv[1]);
  int in = 0, out = 0;
  l.watch(fds[0], POLLIN, [&](short) { ++in; });
  l.watch(fds[0], POLLOUT, [&](short) {
    ++out;
    CHECK(::write(fds[1], "x", 1) == 1);  // makes fds[0] readable
  });
  ctx.run();
  CHECK(in == 1);
  CHECK(out == 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE_FIXTURE(on_asio, "a watch on a closed fd fires with POLLNVAL, as poll() says") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  ::close(fds[0]);
  ::close(fds[1]);
  short seen = 0;
  l.watch(fds[0], POLLIN, [&](short revents) { seen = revents; });
  ctx.run();
  CHECK((seen & POLLNVAL) != 0);
}

TEST_CASE_FIXTURE(on_asio, "a cancelled watch lets go of its fd: io_context::run() returns") {
  pipe_fds p;
  int owner = 0;
  int calls = 0;
  l.watch(p.r, POLLIN, [&](short) { ++calls; }, &owner);
  net::post(ctx, [&] { l.cancel(&owner); });
  ctx.run();
  CHECK(calls == 0);
  CHECK_FALSE(l.alive());
}

TEST_CASE_FIXTURE(on_asio, "timers run in order on the io_context; a cleared one never runs") {
  std::vector<int> fired;
  l.set_timeout(20ms, [&] { fired.push_back(20); });
  const timer_id cleared = l.set_timeout(1ms, [&] { fired.push_back(-1); });
  l.set_timeout(5ms, [&] {
    fired.push_back(5);
    l.set_timeout(0ms, [&] { fired.push_back(0); });
  });
  l.clear_timeout(cleared);
  ctx.run();
  // 5 first (earlier than 20, and 0 is set by it); 0 and 20 in either order,
  // as a busy machine may run 5 late, after 20 is due.
  REQUIRE(fired.size() == 3);
  CHECK(fired[0] == 5);
  CHECK(std::count(fired.begin(), fired.end(), 0) == 1);
  CHECK(std::count(fired.begin(), fired.end(), 20) == 1);
  CHECK_FALSE(l.alive());
}

TEST_CASE_FIXTURE(on_asio, "post() from another thread runs on the io_context while the loop is held") {
  const auto me = std::this_thread::get_id();
  int posted = 0;
  l.hold();  // ctx.run() must not return before the thread's posts
  std::thread t([&] {
    for (int i = 0; i < 100; ++i)
      l.post([&] {
        CHECK(std::this_thread::get_id() == me);
        if (++posted == 100) l.release();
      });
  });
  ctx.run();
  t.join();
  CHECK(posted == 100);
  CHECK_FALSE(l.alive());
}

TEST_CASE_FIXTURE(on_asio, "an fd writable and an fd readable over a pipe run with only io_context::run()") {
  pipe_fds p;
  REQUIRE(::fcntl(p.w, F_SETFL, O_NONBLOCK) == 0);
  REQUIRE(::fcntl(p.r, F_SETFL, O_NONBLOCK) == 0);
  // Twice the pipe's buffer: the writable must wait for POLLOUT, the
  // readable for POLLIN.
  const std::string chunk(4096, 'x');
  const int chunks = 64;
  must_call cb(chunks);
  must_call end_cb(1);
  std::size_t got = 0;
  bool ended = false;
  writable_options wo;
  wo.event_loop = &l;
  readable_options ro;
  ro.event_loop = &l;
  auto out = make_fd_writable(p.w, false, wo);
  auto in = make_fd_readable(p.r, false, ro);
  in->on(event::data, [&](std::string_view c) { got += c.size(); });
  in->on(event::end, [&] { ended = true; });
  for (int i = 0; i < chunks; ++i) out->write(chunk, cb.cb());
  out->end(end_cb.cb([&](std::error_code) { p.close_w(); }));
  ctx.run();
  CHECK(got == chunk.size() * chunks);
  CHECK(ended);
  CHECK_FALSE(l.alive());
}

namespace {
// Reads as a regular file does: every chunk in the next turn, through an
// immediate, for ever. The loop always has an immediate queued.
class endless_source final : public source {
 public:
  void attach(loop& l) override { loop_ = &l; }
  void read(std::size_t) override {
    loop_->set_immediate([this] { push(std::string_view(chunk_, sizeof chunk_)); }, this);
  }
  std::error_code destroy(std::error_code err) noexcept override {
    loop_->cancel(this);
    return err;
  }

 private:
  loop* loop_ = nullptr;
  char chunk_[4096] = {};
};
}  // namespace

TEST_CASE_FIXTURE(on_asio, "a flowing readable does not starve the io_context's timers and handlers") {
  readable_options ro;
  ro.event_loop = &l;
  std::unique_ptr<readable> in;
  SUBCASE("over /dev/zero") {
    const int zero = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
    REQUIRE(zero >= 0);
    in = make_fd_readable(zero, true, ro);
  }
  SUBCASE("over a source that reads in immediates, as a regular file does") {
    in = std::make_unique<readable>(std::make_unique<endless_source>(), ro);
  }
  std::size_t got = 0;
  in->on(event::data, [&](std::string_view c) { got += c.size(); });
  // A chain of posted handlers and a timer: each only runs if the readable
  // lets the io_context take turns. Without it, ctx.run() never returns.
  int hops = 0;
  std::function<void()> hop = [&] {
    if (++hops < 100) net::post(ctx, hop);
  };
  net::post(ctx, hop);
  bool timer_fired = false;
  net::steady_timer timer(ctx, 5ms);
  timer.async_wait([&](boost::system::error_code ec) {
    CHECK_FALSE(ec);
    timer_fired = true;
  });
  // Stop when both have run.
  std::function<void()> check = [&] {
    if (hops >= 100 && timer_fired)
      in->destroy();
    else
      net::post(ctx, check);
  };
  net::post(ctx, check);
  ctx.run();
  CHECK(hops == 100);
  CHECK(timer_fired);
  CHECK(got > 0);
  CHECK(in->destroyed());
}

TEST_CASE("a loop attached to an io_context still runs its close hooks when it goes") {
  net::io_context ctx;
  asio::attachment a;
  int calls = 0;
  loop::close_hook hook;
  hook.owner = &calls;
  hook.fn = [](loop::close_hook& h, loop&) noexcept { ++*static_cast<int*>(h.owner); };
  {
    loop l;
    a = asio::attach(ctx, l);
    l.add_close_hook(hook);
    pipe_fds p;
    l.watch(p.r, POLLIN, [](short) {});
    l.set_timeout(1h, [] {});
    // The loop goes with a watch and a timer on the io_context.
    l.cancel(nullptr);
  }
  CHECK(calls == 1);
  ctx.run();  // the aborted waits complete and touch nothing
  a.detach();
}

TEST_CASE("detaching hands the loop back to loop::run()") {
  net::io_context ctx;
  loop l;
  int ticks = 0;
  {
    auto a = asio::attach(ctx, l);
    l.next_tick([&] { ++ticks; });
  }
  CHECK(asio::context_of(l) == nullptr);
  l.set_timeout(1ms, [&] { ++ticks; });
  l.run();
  CHECK(ticks == 2);
  ctx.run();  // the posted turn finds the engine detached
  CHECK(ticks == 2);
}

TEST_CASE_FIXTURE(on_asio, "loop::run() on an attached loop runs the io_context until the loop is done") {
  int calls = 0;
  l.set_timeout(1ms, [&] { ++calls; });
  l.set_immediate([&] { ++calls; });
  l.run();
  CHECK(calls == 2);
  CHECK_FALSE(l.alive());
}
