// on_signal: a signal's task runs on the loop, never in the handler; one
// watch per signal; the previous disposition comes back.
#include "support/printers.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <system_error>
#include <thread>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/loop/signals.h"
#include "sluice/fs/read_stream.h"
#include "sluice/stream/readable.h"
#include "support/loop_turn.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::turn;

namespace {

// Sets a signal's disposition for a test and restores it after.
struct disposition {
  int signo;
  struct sigaction old {};
  disposition(int s, void (*handler)(int)) : signo(s) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    REQUIRE(::sigaction(signo, &sa, &old) == 0);
  }
  ~disposition() { ::sigaction(signo, &old, nullptr); }
};

void (*current_handler(int signo))(int) {
  struct sigaction sa {};
  ::sigaction(signo, nullptr, &sa);
  return sa.sa_handler;
}

}  // namespace

TEST_CASE("a signal's task runs from the loop, not from the handler") {
  disposition keep(SIGUSR1, SIG_DFL);
  loop l;
  int calls = 0;
  auto w = on_signal(l, SIGUSR1, [&calls] { ++calls; });
  CHECK(bool(w));
  ::raise(SIGUSR1);
  CHECK(calls == 0);
  turn(l, 1000);
  CHECK(calls == 1);
  SUBCASE("signals that arrive before the loop looks are coalesced") {
    ::raise(SIGUSR1);
    ::raise(SIGUSR1);
    turn(l, 1000);
    CHECK(calls == 2);
  }
  SUBCASE("it keeps watching") {
    ::raise(SIGUSR1);
    turn(l, 1000);
    ::raise(SIGUSR1);
    turn(l, 1000);
    CHECK(calls == 3);
  }
  SUBCASE("a signal sent from another thread") {
    std::thread t([] { ::kill(::getpid(), SIGUSR1); });
    t.join();
    for (int guard = 0; guard < 50 && calls == 1; ++guard) turn(l, 100);
    CHECK(calls == 2);
  }
}

TEST_CASE("one watch per signal per process; reset restores the previous disposition") {
  disposition ign(SIGUSR2, SIG_IGN);
  loop l;
  {
    auto first = on_signal(l, SIGUSR2, [] {});
    CHECK((current_handler(SIGUSR2) != SIG_IGN));
    std::error_code ec;
    auto second = on_signal(l, SIGUSR2, [] {}, ec);
    CHECK(ec == std::errc::device_or_resource_busy);
    CHECK_FALSE(bool(second));
    CHECK_THROWS_AS(on_signal(l, SIGUSR2, [] {}), std::system_error);
    first.reset();
    CHECK((current_handler(SIGUSR2) == SIG_IGN));
    auto third = on_signal(l, SIGUSR2, [] {}, ec);
    CHECK_FALSE(bool(ec));
    CHECK(bool(third));
    // A moved watch still owns the handler.
    signal_watch moved = std::move(third);
    CHECK_FALSE(bool(third));
    CHECK((current_handler(SIGUSR2) != SIG_IGN));
  }
  CHECK((current_handler(SIGUSR2) == SIG_IGN));
  CHECK_FALSE(l.alive());  // no watch is left on the signals' fd either
}

TEST_CASE("a signal's task may reset its own watch, and run() then returns") {
  disposition keep(SIGUSR1, SIG_DFL);
  loop l;
  int calls = 0;
  signal_watch w;
  w = on_signal(l, SIGUSR1, [&] {
    ++calls;
    w.reset();
  });
  ::raise(SIGUSR1);
  l.run();
  CHECK(calls == 1);
  CHECK_FALSE(bool(w));
  CHECK((current_handler(SIGUSR1) == SIG_DFL));
}

TEST_CASE("signals that cannot be caught are refused with EINVAL") {
  loop l;
  std::error_code ec;
  CHECK_FALSE(bool(on_signal(l, SIGKILL, [] {}, ec)));
  CHECK(ec == std::errc::invalid_argument);
  CHECK_FALSE(bool(on_signal(l, 0, [] {}, ec)));
  CHECK(ec == std::errc::invalid_argument);
  CHECK_FALSE(bool(on_signal(l, NSIG, [] {}, ec)));
  CHECK(ec == std::errc::invalid_argument);
  // The refused SIGKILL left its slot free.
  CHECK_FALSE(bool(on_signal(l, SIGKILL, [] {}, ec)));
  CHECK(ec == std::errc::invalid_argument);
}

// Issue 10, defect 2: a tool's stdin may be a blocking pipe or terminal with
// no data for a long time. The readable must wait for it in the loop's poll,
// not in read(2), or a signal's watch waits for the next line.
TEST_CASE("a signal is handled while a readable waits on a blocking pipe with no data") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);  // blocking, as a tool's stdin is
  loop l;
  bool got_data = false;
  bool signalled = false;
  bool data_before_signal = false;
  readable_options o;
  o.event_loop = &l;
  auto r = make_fd_readable(fds[0], false, o);
  r->on(event::data, [&](std::string_view) { got_data = true; });
  r->on(event::error, [](std::error_code) {});
  signal_watch watch;
  std::atomic<bool> handled{false};
  watch = on_signal(l, SIGUSR2, [&] {
    signalled = true;
    handled = true;
    data_before_signal = got_data;
    watch.reset();
    r->destroy();
  });
  // The writer sends once the signal was handled, or after 10 s (times
  // SLUICE_TIME_SCALE) without it, and then closes, so the test ends even
  // when the loop is stuck in read(2). (Was a fixed 3 s: a loop slower than
  // that to its 50 ms timer, on a loaded machine, saw the data first.)
  std::thread writer([w = fds[1], &handled] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10) * sluice::test::time_scale();
    while (!handled && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    [[maybe_unused]] ssize_t n = ::write(w, "late\n", 5);
    ::close(w);
  });
  l.set_timeout(std::chrono::milliseconds(50), [] { ::raise(SIGUSR2); });
  l.run();
  writer.join();
  ::close(fds[0]);
  CHECK(signalled);
  CHECK_FALSE(data_before_signal);
}
