// fd_sink and file_sink: bytes reach the kernel exactly, in few syscalls,
// through slow readers and failures.
#include "support/printers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/base/errors.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/pipe_fds.h"
#include "support/recording_sink.h"
#include "support/temp_dir.h"
#include "support/writable_events.h"

using namespace sluice;
using namespace std::string_view_literals;
using sluice::test::must_call;
using sluice::test::temp_dir;
using sluice::test::slurp;
using sluice::test::spit;
using sluice::test::pipe_fds;
using sluice::test::events;
using sluice::test::on;
namespace fs = std::filesystem;

namespace {

// Everything readable from fd right now (fd must be non-blocking or at EOF).
std::string read_available(int fd, std::size_t max = SIZE_MAX) {
  std::string out;
  char buf[16384];
  while (out.size() < max) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, max - out.size()));
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  REQUIRE(::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0);
}

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

// A byte pattern that shows reordering: byte i of the stream is pattern(i).
char pattern(std::size_t i) { return static_cast<char>('a' + (i * 7 + i / 251) % 26); }
std::string pattern_chunk(std::size_t offset, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = pattern(offset + i);
  return s;
}

// Restores SIGPIPE's disposition at the end of a test.
struct sigpipe_disposition {
  struct sigaction old {};
  explicit sigpipe_disposition(void (*handler)(int)) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    REQUIRE(::sigaction(SIGPIPE, &sa, &old) == 0);
  }
  ~sigpipe_disposition() { ::sigaction(SIGPIPE, &old, nullptr); }
};

bool sigpipe_pending() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}



}  // namespace

TEST_CASE("bytes written to a pipe are read back byte-exact") {
  pipe_fds p;
  loop l;
  must_call done(100);
  must_call ended;
  std::string expected;
  {
    auto w = make_fd_writable(p.w, false, on(l));
    std::size_t offset = 0;
    for (int i = 0; i < 100; ++i) {
      const std::size_t n = static_cast<std::size_t>(i * 37 % 400) + (i % 20 == 0 ? 4500 : 0);
      std::string chunk = pattern_chunk(offset, n);
      offset += n;
      expected += chunk;
      if (i % 2)
        w->write(std::string_view(chunk), done.cb());
      else
        w->write(std::move(chunk), done.cb());
    }
    REQUIRE(expected.size() < 60000);  // fits in the pipe: nothing blocks
    w->end(ended.cb());
    l.run();
    CHECK(w->writable_finished());
    CHECK(fd_is_open(p.w));  // close_fd = false
  }
  p.close_w();
  CHECK(read_available(p.r) == expected);
  CHECK(ended.error() == std::error_code{});
}

TEST_CASE("a turn's many small writes reach the kernel in one writev") {
  pipe_fds p;
  loop l;
  must_call done(1000);
  auto w = make_fd_writable(p.w, false, on(l));
  auto* sink = &w->get_sink();
  REQUIRE(sink != nullptr);
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    const std::string chunk = pattern_chunk(expected.size(), 56);
    expected += chunk;
    w->write(std::string_view(chunk), done.cb());
  }
  CHECK(sink->syscalls() == 0);  // nothing is written inside write()
  l.run_until_idle();
  CHECK(sink->syscalls() == 1);
  CHECK(sink->bytes_written() == 56000);
  CHECK(done.calls() == 1000);
  set_nonblocking(p.r);
  CHECK(read_available(p.r) == expected);
}

TEST_CASE("writes of later turns are batched per turn") {
  pipe_fds p;
  loop l;
  auto w = make_fd_writable(p.w, false, on(l));
  auto& sink = w->get_sink();
  for (int turn = 0; turn < 5; ++turn) {
    for (int i = 0; i < 50; ++i) w->write("0123456789"sv);
    l.run_until_idle();
    CHECK(sink.syscalls() == static_cast<std::size_t>(turn + 1));
  }
  set_nonblocking(p.r);
  CHECK(read_available(p.r).size() == 2500);
}

TEST_CASE("more chunks than IOV_MAX are split over several writev calls, in order") {
  temp_dir dir;
  const std::string path = dir.file("many.bin");
  loop l;
  must_call done(1500);
  std::string expected;
  {
    auto w = make_file_writable(path, {}, on(l));
    auto& sink = w->get_sink();
    // Chunks above 4 KiB are owned one by one, so no two are adjacent in memory.
    for (int i = 0; i < 1500; ++i) {
      std::string chunk = pattern_chunk(expected.size(), 4097 + static_cast<std::size_t>(i % 3));
      expected += chunk;
      w->write(std::move(chunk), done.cb());
    }
    w->end();
    l.run();
    CHECK(sink.syscalls() >= 2);
    CHECK(sink.bytes_written() == expected.size());
  }
  CHECK(slurp(path) == expected);
}

TEST_CASE("a non-blocking pipe with a slow reader gets every byte in order and every callback once") {
  pipe_fds p;
  set_nonblocking(p.w);
  set_nonblocking(p.r);
  loop l;
  constexpr std::size_t total = 1 << 20;
  std::size_t chunk_size = 4096;
  SUBCASE("4 KiB chunks (arena, writev)") { chunk_size = 4096; }
  SUBCASE("one 1 MiB chunk (single write, partial writes)") { chunk_size = total; }
  SUBCASE("odd sizes") { chunk_size = 5003; }
  const int chunks = static_cast<int>((total + chunk_size - 1) / chunk_size);
  must_call done(chunks);
  must_call ended;
  events ev;
  auto w = make_fd_writable(p.w, false, on(l));
  ev.attach(*w);
  auto& sink = w->get_sink();
  bool saw_false = false;
  for (std::size_t off = 0; off < total; off += chunk_size) {
    std::string chunk = pattern_chunk(off, std::min(chunk_size, total - off));
    saw_false = !w->write(std::move(chunk), done.cb()) || saw_false;
  }
  w->end(ended.cb());
  CHECK(saw_false);

  std::string received;
  int rounds = 0;
  while (received.size() < total && rounds < 10000) {
    ++rounds;
    l.run_until_idle();
    received += read_available(p.r, 8192);  // a slow reader: 8 KiB a round
    l.run_once(std::chrono::milliseconds(0));
  }
  l.run_until_idle();
  REQUIRE(received.size() == total);
  bool in_order = true;
  for (std::size_t i = 0; i < total && in_order; ++i) in_order = received[i] == pattern(i);
  CHECK(in_order);
  CHECK(rounds > 10);  // the reader really was the bottleneck
  CHECK(done.calls() == chunks);
  CHECK(ended.calls() == 1);
  CHECK(ev.str() == "finish; close");  // end() came first, so no 'drain'
  CHECK(sink.bytes_written() == total);
  CHECK_FALSE(l.alive());
}

TEST_CASE("random chunks, corks and turns over a slow non-blocking pipe arrive byte-exact") {
  for (unsigned seed = 1; seed <= 12; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    pipe_fds p;
    set_nonblocking(p.w);
    set_nonblocking(p.r);
    loop l;
    auto w = make_fd_writable(p.w, false, on(l));
    int expected_calls = 0, calls = 0;
    std::string expected, received;
    auto pump = [&] {
      l.run_until_idle();
      received += read_available(p.r, 1 + pick(20000));
      l.run_once(std::chrono::milliseconds(0));
    };
    for (int op = 0; op < 400; ++op) {
      const std::size_t kind = pick(12);
      if (kind < 7) {
        std::size_t n = pick(4) == 0 ? pick(30000) : pick(200);
        if (pick(20) == 0) n = 0;
        std::string chunk = pattern_chunk(expected.size(), n);
        expected += chunk;
        ++expected_calls;
        auto cb = [&calls](std::error_code ec) { calls += ec ? 1000000 : 1; };
        switch (pick(3)) {
          case 0: w->write(std::string_view(chunk), cb); break;
          case 1: w->write(std::move(chunk), cb); break;
          case 2: {
            auto buf = std::make_shared<std::string>(std::move(chunk));
            const std::string_view view(*buf);
            w->write(std::shared_ptr<const void>(buf, buf.get()), view, cb);
            break;
          }
        }
      } else if (kind == 7) {
        w->cork();
      } else if (kind == 8) {
        w->uncork();
      } else {
        pump();
      }
    }
    while (w->writable_corked()) w->uncork();
    must_call ended;
    w->end(ended.cb());
    for (int guard = 0; guard < 100000 && (received.size() < expected.size() || l.alive()); ++guard) pump();
    CHECK(received.size() == expected.size());
    CHECK(received == expected);
    CHECK(calls == expected_calls);
    CHECK(w->writable_finished());
  }
}

TEST_CASE("a non-blocking pipe with a reader thread gets every byte, with 'drain' for backpressure") {
  pipe_fds p;
  set_nonblocking(p.w);
  loop l;
  constexpr std::size_t total = 1 << 20;
  std::string received;
  std::thread reader([&] {
    char buf[3000];
    for (;;) {
      const ssize_t n = ::read(p.r, buf, sizeof buf);
      if (n <= 0) break;
      received.append(buf, static_cast<std::size_t>(n));
    }
  });
  must_call ended;
  int drains = 0, writes = 0, calls = 0;
  {
    auto w = make_fd_writable(p.w, false, on(l));
    std::size_t off = 0;
    std::function<void()> pump = [&] {
      while (off < total) {
        const std::size_t n = std::min<std::size_t>(1000, total - off);
        ++writes;
        const bool ok = w->write(std::string_view(pattern_chunk(off, n)), [&calls](std::error_code ec) {
          calls += ec ? 1000000 : 1;
        });
        off += n;
        if (!ok) return;  // wait for 'drain'
      }
      w->end(ended.cb());
    };
    w->on(event::drain, [&] {
      ++drains;
      pump();
    });
    pump();
    l.run();
    CHECK(w->writable_finished());
  }
  p.close_w();
  reader.join();
  REQUIRE(received.size() == total);
  bool in_order = true;
  for (std::size_t i = 0; i < total && in_order; ++i) in_order = received[i] == pattern(i);
  CHECK(in_order);
  CHECK(drains > 0);
  CHECK(calls == writes);
}

TEST_CASE("/dev/full gives ENOSPC to the callback and to 'error'") {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  loop l;
  must_call done;
  must_call later;
  events ev;
  auto w = make_fd_writable(fd, true, on(l));
  ev.attach(*w);
  w->write("no room"sv, done.cb());
  l.run();
  CHECK(done.error() == std::errc::no_space_on_device);
  CHECK(done.error().category() == std::system_category());
  CHECK(code_name(done.error()) == "ENOSPC");
  CHECK(ev.str() == "error ENOSPC; close");
  CHECK(w->errored() == std::errc::no_space_on_device);
  CHECK(w->destroyed());
  CHECK_FALSE(fd_is_open(fd));  // close_fd = true, and the stream was destroyed
  w->write("more"sv, later.cb());
  l.run();
  CHECK(later.error() == errc::destroyed);
}

namespace {
// Counts the SIGPIPEs that reach the process (a handler, not SIG_IGN, so
// that fd_writer guards its pipe writes as it does at SIG_DFL).
std::atomic<int> sigpipes_seen{0};
extern "C" void count_sigpipe(int) { sigpipes_seen.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

// Issue 34, item 11: Linux raises SIGPIPE when the reader leaves while a
// write waits in the pipe, and that write returns short (the bytes it put
// in), not EPIPE; fd_writer swallowed SIGPIPE only after EPIPE, so the one of
// the short write killed the process ((file -> gunzip -> stdout) | head -1).
// Each round blocks a write of 1 MiB on a full pipe, then closes the read
// end under it: the short write is certain, not a race.
TEST_CASE("a write cut short by the reader leaving raises no SIGPIPE that reaches the process") {
  sigpipe_disposition counted(count_sigpipe);
  sigpipes_seen = 0;
  const std::string big(1 << 20, 'x');
  for (int round = 0; round < 20; ++round) {
    pipe_fds p;
    const int capacity = ::fcntl(p.w, F_GETPIPE_SZ);
    REQUIRE(capacity > 0);
    REQUIRE(static_cast<std::size_t>(capacity) < big.size());
    std::thread reader([&p, capacity] {
      // The pipe is full: the write is inside writev(), waiting for room
      // (or about to), when its reader goes.
      int queued = 0;
      while (::ioctl(p.r, FIONREAD, &queued) == 0 && queued < capacity) std::this_thread::yield();
      p.close_r();
    });
    sluice::detail::fd_writer w(p.w);
    w.start(std::string_view(big));
    const std::error_code ec = w.write_all();
    reader.join();
    CHECK(ec == std::errc::broken_pipe);
    CHECK(w.bytes_written() == static_cast<std::size_t>(capacity));  // the write before EPIPE was short
    CHECK_FALSE(sigpipe_pending());
  }
  CHECK(sigpipes_seen.load() == 0);
}

TEST_CASE("a pipe whose reader is gone gives EPIPE, and SIGPIPE does not kill the process") {
  SUBCASE("SIGPIPE at its default disposition") {
    sigpipe_disposition dfl(SIG_DFL);
    pipe_fds p;
    p.close_r();
    loop l;
    must_call done;
    events ev;
    auto w = make_fd_writable(p.w, false, on(l));
    ev.attach(*w);
    w->write("into the void"sv, done.cb());
    l.run();
    CHECK(done.error() == std::errc::broken_pipe);
    CHECK(code_name(done.error()) == "EPIPE");
    CHECK(ev.str() == "error EPIPE; close");
    CHECK_FALSE(sigpipe_pending());
  }
  SUBCASE("SIGPIPE ignored") {
    sigpipe_disposition ign(SIG_IGN);
    pipe_fds p;
    p.close_r();
    loop l;
    must_call done;
    auto w = make_fd_writable(p.w, false, on(l));
    w->on(event::error, [](std::error_code) {});
    w->write("into the void"sv, done.cb());
    l.run();
    CHECK(done.error() == std::errc::broken_pipe);
  }
  SUBCASE("a socket whose peer is gone") {
    sigpipe_disposition dfl(SIG_DFL);
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    ::close(sv[1]);
    loop l;
    must_call done;
    auto w = make_fd_writable(sv[0], true, on(l));
    w->on(event::error, [](std::error_code) {});
    w->write("into the void"sv, done.cb());
    l.run();
    CHECK(done.error() == std::errc::broken_pipe);
    CHECK_FALSE(sigpipe_pending());
  }
}

TEST_CASE("a SIGPIPE already pending for someone else stays pending") {
  sigpipe_disposition dfl(SIG_DFL);
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  REQUIRE(pthread_sigmask(SIG_BLOCK, &set, &old) == 0);
  ::raise(SIGPIPE);  // blocked: stays pending
  REQUIRE(sigpipe_pending());
  {
    pipe_fds p;
    p.close_r();
    loop l;
    must_call done;
    auto w = make_fd_writable(p.w, false, on(l));
    w->on(event::error, [](std::error_code) {});
    w->write("x"sv, done.cb());
    l.run();
    CHECK(done.error() == std::errc::broken_pipe);
  }
  CHECK(sigpipe_pending());
  // Consume it before unblocking, or it would kill the test.
  const timespec zero{0, 0};
  CHECK(sigtimedwait(&set, nullptr, &zero) == SIGPIPE);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_CASE("destroy while an fd write waits for the fd calls it back once and emits no 'error'") {
  pipe_fds p;
  set_nonblocking(p.w);
  loop l;
  must_call big_done, small_done;
  events ev;
  auto w = make_fd_writable(p.w, false, on(l));
  ev.attach(*w);
  w->write(std::string(200000, 'z'), big_done.cb());  // more than the pipe holds
  l.run_until_idle();
  REQUIRE(l.alive());  // waiting for POLLOUT
  w->write("buffered"sv, small_done.cb());
  w->destroy();
  l.run_until_idle();
  CHECK(big_done.calls() == 1);
  CHECK(small_done.calls() == 1);
  CHECK(small_done.error() == errc::destroyed);
  CHECK(ev.str() == "close");
  CHECK_FALSE(l.alive());
}

TEST_CASE("destroy while an fd write waits for the fd tells that write's callback it did not land") {
  // Differs from Node on purpose: net.Socket calls a write that was in flight
  // at destroy() back with null, though part of it may never have been
  // written. sluice says ERR_STREAM_DESTROYED, which also becomes errored().
  pipe_fds p;
  set_nonblocking(p.w);
  loop l;
  must_call big_done;
  auto w = make_fd_writable(p.w, false, on(l));
  w->write(std::string(200000, 'z'), big_done.cb());
  l.run_until_idle();
  w->destroy();
  l.run_until_idle();
  CHECK(big_done.calls() == 1);
  CHECK(big_done.error() == errc::destroyed);
  CHECK(w->errored() == errc::destroyed);
}

TEST_CASE("the C++ destructor of an fd writable waiting for the fd finishes the write and pays its callback") {
  pipe_fds p;
  set_nonblocking(p.w);
  loop l;
  must_call big_done, next_done;
  std::string got;
  std::thread reader;
  {
    auto w = make_fd_writable(p.w, false, on(l));
    w->write(std::string(200000, 'z'), big_done.cb());
    l.run_until_idle();
    REQUIRE(l.alive());
    w->write("and the next\n"sv, next_done.cb());  // buffered behind it
    // The destructor blocks until the fd takes the rest: someone must read.
    reader = std::thread([&] {
      char buf[65536];
      for (;;) {
        pollfd pf{p.r, POLLIN, 0};
        ::poll(&pf, 1, -1);
        const ssize_t n = ::read(p.r, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
    });
  }
  CHECK(big_done.calls() == 1);
  CHECK(big_done.error() == std::error_code{});
  CHECK(next_done.error() == std::error_code{});
  CHECK_FALSE(l.alive());  // the sink's watch went with it
  l.run_until_idle();
  CHECK_FALSE(l.alive());
  p.close_w();
  reader.join();
  CHECK(got == std::string(200000, 'z') + "and the next\n");
}

TEST_CASE("writes without callbacks to an fd, then end(), finish and close (the loop.h example)") {
  pipe_fds p;
  loop l;
  must_call ended;
  events ev;
  auto w = make_fd_writable(p.w, false, on(l));
  ev.attach(*w);
  SUBCASE("one write, then end()") {
    w->write("hello\n"sv);
    w->end(ended.cb());
  }
  SUBCASE("end(chunk)") { w->end("hello\n"sv, ended.cb()); }
  SUBCASE("two writes, then end()") {
    w->write("hel"sv);
    w->write("lo\n"sv);
    w->end(ended.cb());
  }
  l.run();
  CHECK(ended.calls() == 1);
  CHECK(ev.str() == "finish; close");
  CHECK(w->writable_finished());
  set_nonblocking(p.r);
  CHECK(read_available(p.r) == "hello\n");
}

// ---- file_sink

TEST_CASE("file_sink truncate mode replaces the file's content") {
  temp_dir dir;
  const std::string path = dir.file("t.txt");
  spit(path, "old content that is long");
  loop l;
  must_call ended;
  must_call wrote;
  auto w = make_file_writable(path, {.mode = file_options::open_mode::truncate}, on(l));
  w->write("new"sv, wrote.cb());
  w->end(ended.cb());
  l.run();
  CHECK(ended.error() == std::error_code{});
  CHECK(slurp(path) == "new");
}

TEST_CASE("file_sink append mode adds to the end") {
  temp_dir dir;
  const std::string path = dir.file("a.log");
  spit(path, "line 1\n");
  loop l;
  must_call wrote(2);
  for (const char* line : {"line 2\n", "line 3\n"}) {
    auto w = make_file_writable(path, {.mode = file_options::open_mode::append}, on(l));
    w->write(std::string_view(line), wrote.cb());
    w->end();
    l.run();
  }
  CHECK(slurp(path) == "line 1\nline 2\nline 3\n");
}

TEST_CASE("file_sink exclusive mode creates a new file and refuses an existing one") {
  temp_dir dir;
  const std::string path = dir.file("x.dat");
  loop l;
  {
    must_call wrote;
    auto w = make_file_writable(path, {.mode = file_options::open_mode::exclusive, .permissions = 0600}, on(l));
    w->write("fresh"sv, wrote.cb());
    w->end();
    l.run();
  }
  CHECK(slurp(path) == "fresh");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  SUBCASE("the throwing open") {
    try {
      auto s = file_sink::open(path, {.mode = file_options::open_mode::exclusive});
      FAIL("opening an existing file in exclusive mode did not throw");
    } catch (const stream_error& e) {
      CHECK(e.code() == std::errc::file_exists);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  }
  SUBCASE("the non-throwing open") {
    std::error_code ec;
    auto s = file_sink::open(path, {.mode = file_options::open_mode::exclusive}, ec);
    CHECK(s == nullptr);
    CHECK(ec == std::errc::file_exists);
  }
  CHECK(slurp(path) == "fresh");  // untouched
}

TEST_CASE("opening a file that cannot be opened throws stream_error, and open() sets ec") {
  temp_dir dir;
  const std::string path = dir.file("no/such/dir/file");
  CHECK_THROWS_AS(file_sink::open(path), stream_error);
  CHECK_THROWS_AS(make_file_writable(path), stream_error);
  try {
    auto s = file_sink::open(path);
    FAIL("no exception");
  } catch (const stream_error& e) {
    CHECK(e.code() == std::errc::no_such_file_or_directory);
  }
  std::error_code ec;
  CHECK(file_sink::open(path, {}, ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
  ec.clear();
  auto ok = file_sink::open(dir.file("fine"), {}, ec);
  CHECK(ok != nullptr);
  CHECK_FALSE(bool(ec));
  ec = make_error_code(errc::destroyed);  // replaced on failure
  CHECK(file_sink::open(path, ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
}

TEST_CASE("make_file_writable's non-throwing twins: null and the errno of open(), or a writable and ec cleared") {
  static_assert(noexcept(make_file_writable(std::string(), std::declval<std::error_code&>())));
  temp_dir dir;
  loop l;
  const std::string missing = dir.file("no/such/dir/file");
  std::error_code ec = make_error_code(errc::destroyed);
  CHECK(make_file_writable(missing, ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
  ec = make_error_code(errc::destroyed);
  CHECK(make_file_writable(missing, {.mode = file_options::open_mode::append}, ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);
  ec = make_error_code(errc::destroyed);
  CHECK(make_file_writable(missing, {}, on(l), ec) == nullptr);
  CHECK(ec == std::errc::no_such_file_or_directory);

  const std::string path = dir.file("made");
  must_call wrote, ended;
  auto w = make_file_writable(path, {}, on(l), ec);
  REQUIRE(w != nullptr);
  CHECK_FALSE(ec);
  CHECK(w->get_sink().fd() >= 0);  // the typed handle: file_sink&, no cast
  w->write("twin\n", wrote.cb());
  w->end(ended.cb());
  l.run();
  CHECK(slurp(path) == "twin\n");
}

TEST_CASE("file_sink's fsync_at_end syncs before close, and its error reaches end's callback") {
  // fsync() on /dev/null fails with EINVAL, which shows whether it was called.
  loop l;
  SUBCASE("fsync_at_end off") {
    must_call ended;
    events ev;
    must_call wrote;
    auto w = make_file_writable("/dev/null", {.fsync_at_end = false}, on(l));
    ev.attach(*w);
    w->write("x"sv, wrote.cb());
    w->end(ended.cb());
    l.run();
    CHECK(ended.error() == std::error_code{});
    CHECK(ev.str() == "finish; close");
  }
  SUBCASE("fsync_at_end on") {
    must_call ended;
    events ev;
    must_call wrote;
    auto w = make_file_writable("/dev/null", {.fsync_at_end = true}, on(l));
    ev.attach(*w);
    w->write("x"sv, wrote.cb());
    w->end(ended.cb());
    l.run();
    CHECK(ended.error() == std::errc::invalid_argument);
    CHECK(ev.str() == "error EINVAL; close");
  }
  SUBCASE("fsync_at_end on a regular file succeeds") {
    temp_dir dir;
    must_call ended;
    must_call wrote;
    auto w = make_file_writable(dir.file("synced"), {.fsync_at_end = true}, on(l));
    w->write("durable"sv, wrote.cb());
    w->end(ended.cb());
    l.run();
    CHECK(ended.error() == std::error_code{});
    CHECK(slurp(dir.file("synced")) == "durable");
  }
}

TEST_CASE("the file is closed once the stream finishes") {
  temp_dir dir;
  loop l;
  writable_options o = on(l);
  o.auto_destroy = false;  // the close must come from end(), not from destroy()
  auto w = make_file_writable(dir.file("c.txt"), {}, o);
  const int fd = w->get_sink().fd();
  REQUIRE(fd >= 0);
  must_call wrote;
  w->write("abc"sv, wrote.cb());
  w->end();
  CHECK(fd_is_open(fd));
  l.run();
  CHECK(w->writable_finished());
  CHECK_FALSE(w->destroyed());
  CHECK_FALSE(fd_is_open(fd));
  CHECK(slurp(dir.file("c.txt")) == "abc");
}

TEST_CASE("the file is closed when the stream is destroyed without end") {
  temp_dir dir;
  loop l;
  int fd = -1;
  SUBCASE("destroy()") {
    auto w = make_file_writable(dir.file("d.txt"), {}, on(l));
    fd = w->get_sink().fd();
    w->destroy();
    CHECK_FALSE(fd_is_open(fd));
    l.run();
  }
  SUBCASE("the C++ destructor") {
    {
      auto w = make_file_writable(dir.file("d.txt"), {}, on(l));
      fd = w->get_sink().fd();
      CHECK(fd_is_open(fd));
    }
    CHECK_FALSE(fd_is_open(fd));
  }
}

TEST_CASE("an fd_sink over an fd it owns closes it once the stream finishes") {
  pipe_fds p;
  loop l;
  const int fd = ::dup(p.w);
  REQUIRE(fd >= 0);
  must_call wrote;
  auto w = make_fd_writable(fd, true, on(l));
  w->write("x"sv, wrote.cb());
  w->end();
  CHECK(fd_is_open(fd));
  l.run();
  CHECK(w->destroyed());
  CHECK_FALSE(fd_is_open(fd));
}

TEST_CASE("a zero-length write to an fd calls back without a syscall") {
  pipe_fds p;
  loop l;
  must_call done;
  auto w = make_fd_writable(p.w, false, on(l));
  auto& sink = w->get_sink();
  w->write(""sv, done.cb());
  l.run();
  CHECK(done.error() == std::error_code{});
  CHECK(sink.syscalls() == 0);
  CHECK(sink.bytes_written() == 0);
}

TEST_CASE("an fd_sink over a pipe it does not own leaves the fd open") {
  pipe_fds p;
  loop l;
  {
    must_call wrote;
    auto w = make_fd_writable(p.w, false, on(l));
    w->write("x"sv, wrote.cb());
    w->end();
    l.run();
    CHECK(w->destroyed());
  }
  CHECK(fd_is_open(p.w));
}

// Issue 10, defect 9: an fd writable holds a turn's writes for one writev;
// Node would have handed them to _write already, so a misuse later in the
// same turn (a write after end(), a destroy()) must not take them back.
TEST_CASE("writes held for the turn land when a write after end() errors the stream in the same turn") {
  temp_dir dir;
  const std::string path = dir.file("same-turn.txt");
  loop l;
  must_call wrote_a;
  must_call wrote_b;
  must_call ended;
  {
    auto w = make_file_writable(path, {}, on(l));
    w->on(event::error, [](std::error_code) {});
    w->write("a\n"sv, wrote_a.cb());
    w->end(ended.cb());
    w->write("b\n"sv, wrote_b.cb());
    l.run();
  }
  CHECK(slurp(path) == "a\n");
  CHECK(wrote_a.error() == std::error_code{});
  CHECK(wrote_b.error() == make_error_code(errc::write_after_end));
}

TEST_CASE("writes held for the turn land when the stream is destroyed in the same turn") {
  temp_dir dir;
  const std::string path = dir.file("same-turn-destroy.txt");
  loop l;
  must_call wrote(2);
  {
    auto w = make_file_writable(path, {}, on(l));
    w->write("a\n"sv, wrote.cb());
    w->write("b\n"sv, wrote.cb());
    w->destroy();
    l.run();
  }
  CHECK(slurp(path) == "a\nb\n");
  CHECK(wrote.error(0) == std::error_code{});
  CHECK(wrote.error(1) == std::error_code{});
}
