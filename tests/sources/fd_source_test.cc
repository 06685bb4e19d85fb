// fd_source: a readable over an fd gives every byte in order, then 'end';
// waits for POLLIN on a non-blocking fd; turns read errors into 'error';
// closes what it owns.
#include "support/printers.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/fs/read_stream.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sources/fd_source.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/readable_options.h"
#include "support/must_call.h"
#include "support/pipe_fds.h"
#include "support/temp_dir.h"

using namespace sluice;
using sluice::test::on_loop;
using sluice::test::must_call;
using sluice::test::pipe_fds;
using sluice::test::temp_file;
namespace fs = std::filesystem;

namespace {

readable_options no_auto_destroy(readable_options o) {
  o.auto_destroy = false;
  return o;
}

std::string random_bytes(std::size_t n, unsigned seed = 1) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}


// Everything a readable emits, in order.
struct recorder {
  std::string data;
  std::vector<std::size_t> chunks;
  std::vector<std::string> events;
  std::error_code error;

  explicit recorder(readable& r) {
    r.on(event::data, [this](std::string_view c) {
      data.append(c);
      chunks.push_back(c.size());
      if (events.empty() || events.back() != "data") events.push_back("data");
    });
    r.on(event::end, [this] { events.push_back("end"); });
    r.on(event::error, [this](std::error_code ec) {
      error = ec;
      events.push_back("error");
    });
    r.on(event::close, [this] { events.push_back("close"); });
  }
};

using events = std::vector<std::string>;

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  REQUIRE(::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0);
}

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    REQUIRE(n > 0);
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

fd_source& source_of(fd_readable& r) { return r.get_source(); }

}  // namespace

TEST_CASE("a file's bytes arrive in order in chunks of at most 64 KiB, then 'end' and 'close'") {
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{65535}, std::size_t{65536},
                           std::size_t{65537}, std::size_t{300000}}) {
    CAPTURE(size);
    const std::string content = random_bytes(size, static_cast<unsigned>(size));
    temp_file f(content);
    loop l;
    auto r = make_file_readable(f.path.string(), on_loop(l));
    recorder rec(*r);
    l.run();
    CHECK(rec.data == content);
    for (std::size_t c : rec.chunks) CHECK(c <= fd_source::default_chunk_size);
    CHECK(rec.events == (size ? events{"data", "end", "close"} : events{"end", "close"}));
    CHECK(r->readable_ended());
    CHECK(r->destroyed());
    CHECK(source_of(*r).bytes_read() == size);
  }
}

TEST_CASE("make_fd_readable's high-water mark is the chunk size unless the options set one") {
  loop l;
  pipe_fds p;
  CHECK(make_fd_readable(p.r, false, on_loop(l))->readable_high_water_mark() == 64 * 1024);
  CHECK(make_fd_readable(p.r, false, on_loop(l, 10))->readable_high_water_mark() == 10);
}

TEST_CASE("the chunk size bounds each read") {
  temp_file f("0123456789abcdefghijklmnopqrstuvwxy");  // 35 bytes
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  loop l;
  fd_readable r(std::make_unique<fd_source>(fd, true, 10), on_loop(l));
  recorder rec(r);
  l.run();
  CHECK(rec.chunks == std::vector<std::size_t>{10, 10, 10, 5});
  CHECK(rec.data == "0123456789abcdefghijklmnopqrstuvwxy");
  CHECK(source_of(r).syscalls() == 5);  // four chunks and the read that returns 0
}

TEST_CASE("a 'data' chunk in flowing mode is a view into the source's one buffer") {
  temp_file f(random_bytes(200000));
  loop l;
  auto r = make_file_readable(f.path.string(), on_loop(l));
  std::vector<const char*> starts;
  r->on(event::data, [&](std::string_view c) { starts.push_back(c.data()); });
  l.run();
  REQUIRE(starts.size() == 4);
  // Pushed from outside the readable's read(), each chunk goes straight out
  // as 'data': no copy into the readable's buffer, the same memory each time.
  CHECK(std::all_of(starts.begin(), starts.end(), [&](const char* p) { return p == starts[0]; }));
}

SCENARIO("a pipe whose data arrives in pieces") {
  GIVEN("a blocking pipe and a writer thread") {
    pipe_fds p;
    const std::string content = random_bytes(150000, 7);
    std::thread writer([&] {
      for (std::size_t off = 0; off < content.size(); off += 7001) {
        write_all(p.w, std::string_view(content).substr(off, 7001));
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      p.close_w();
    });
    loop l;
    auto r = make_fd_readable(p.r, false, on_loop(l));
    recorder rec(*r);
    l.run();
    writer.join();
    THEN("every byte arrives in order, then 'end'") {
      CHECK(rec.data == content);
      CHECK(rec.events == events{"data", "end", "close"});
      CHECK(fd_is_open(p.r));  // not ours to close
    }
  }
  GIVEN("a non-blocking pipe with nothing in it yet") {
    pipe_fds p;
    set_nonblocking(p.r);
    loop l;
    auto r = make_fd_readable(p.r, false, on_loop(l));
    recorder rec(*r);
    l.run_until_idle();
    THEN("the source waits for POLLIN through the loop") {
      CHECK((l.watched_events(p.r) & POLLIN) != 0);
      CHECK(rec.events.empty());
    }
    WHEN("data comes, then the writer closes") {
      write_all(p.w, "first ");
      l.run_until_idle();
      l.run_once(std::chrono::milliseconds(0));  // the poll finds it readable
      l.run_until_idle();
      CHECK(rec.data == "first ");
      write_all(p.w, "second");
      p.close_w();
      l.run();
      THEN("it reads each piece when it is there, then ends") {
        CHECK(rec.data == "first second");
        CHECK(rec.events == events{"data", "end", "close"});
        CHECK(!l.alive());
      }
    }
  }
  GIVEN("a non-blocking pipe fed by a thread in pieces") {
    pipe_fds p;
    set_nonblocking(p.r);
    const std::string content = random_bytes(100000, 3);
    std::thread writer([&] {
      for (std::size_t off = 0; off < content.size(); off += 3333) {
        write_all(p.w, std::string_view(content).substr(off, 3333));
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
      p.close_w();
    });
    loop l;
    auto r = make_fd_readable(p.r, false, on_loop(l));
    recorder rec(*r);
    l.run();
    writer.join();
    THEN("every byte arrives, each read after the loop saw the pipe readable") {
      CHECK(rec.data == content);
      CHECK(rec.events == events{"data", "end", "close"});
      // A pipe is polled before it is read: no read finds it empty (EAGAIN),
      // one read per chunk and one for the end.
      CHECK(source_of(*r).syscalls() == rec.chunks.size() + 1);
    }
  }
}

TEST_CASE("a read error destroys the stream with the errno: 'error', then 'close'") {
  SUBCASE("EBADF: a closed fd") {
    int bad;
    {
      pipe_fds p;
      bad = p.r;
    }
    REQUIRE(!fd_is_open(bad));
    loop l;
    auto r = make_fd_readable(bad, false, on_loop(l));
    recorder rec(*r);
    l.run();
    CHECK(rec.events == events{"error", "close"});
    CHECK(rec.error == std::error_code(EBADF, std::system_category()));
    CHECK(r->errored() == rec.error);
  }
  SUBCASE("EISDIR: a directory opens but cannot be read") {
    temp_file f("");
    loop l;
    auto r = make_file_readable(f.dir.string(), on_loop(l));
    recorder rec(*r);
    l.run();
    CHECK(rec.events == events{"error", "close"});
    CHECK(rec.error == std::error_code(EISDIR, std::system_category()));
    CHECK(!fd_is_open(source_of(*r).fd()));
  }
}

TEST_CASE("make_file_readable throws stream_error with the errno of open(); its twin sets the error_code") {
  loop l;
  const std::string missing = "/nonexistent-sluice-dir/file";
  try {
    (void)make_file_readable(missing, on_loop(l));
    FAIL("no exception");
  } catch (const stream_error& e) {
    CHECK(e.code() == std::error_code(ENOENT, std::system_category()));
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
  }
  std::error_code ec = make_error_code(errc::destroyed);  // cleared on success, replaced on failure
  CHECK(make_file_readable(missing, on_loop(l), ec) == nullptr);
  CHECK(ec == std::error_code(ENOENT, std::system_category()));

  temp_file f("x");
  auto r = make_file_readable(f.path.string(), on_loop(l), ec);
  REQUIRE(r);
  CHECK(!ec);
  CHECK((::fcntl(source_of(*r).fd(), F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("a file readable closes its fd when destroyed; make_fd_readable closes only when told") {
  temp_file f("abc");
  loop l;
  SUBCASE("after 'end' (autoDestroy)") {
    auto r = make_file_readable(f.path.string(), on_loop(l));
    const int fd = source_of(*r).fd();
    recorder rec(*r);
    l.run();
    CHECK(!fd_is_open(fd));
  }
  SUBCASE("with autoDestroy off: at destroy(), not at 'end'") {
    auto r = make_file_readable(f.path.string(), no_auto_destroy(on_loop(l)));
    const int fd = source_of(*r).fd();
    recorder rec(*r);
    l.run();
    CHECK(rec.events == events{"data", "end"});
    CHECK(fd_is_open(fd));
    r->destroy();
    CHECK(!fd_is_open(fd));
  }
  SUBCASE("close_fd = false leaves the fd open") {
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    {
      auto r = make_fd_readable(fd, false, on_loop(l));
      recorder rec(*r);
      l.run();
      CHECK(rec.data == "abc");
    }
    CHECK(fd_is_open(fd));
    ::close(fd);
  }
  SUBCASE("deleting the readable closes the fd and drops its pending read") {
    auto r = make_file_readable(f.path.string(), on_loop(l));
    const int fd = source_of(*r).fd();
    CHECK(!r->read(0));  // asks the source, whose read() waits for the next turn
    REQUIRE(l.alive());
    r.reset();
    CHECK(!fd_is_open(fd));
    CHECK(!l.alive());
    l.run();
  }
}

TEST_CASE("destroy() while waiting for POLLIN stops the watch; nothing more is read") {
  pipe_fds p;
  set_nonblocking(p.r);
  loop l;
  auto r = make_fd_readable(p.r, false, on_loop(l));
  recorder rec(*r);
  l.run_until_idle();
  REQUIRE(l.watched_events(p.r) != 0);
  r->destroy();
  CHECK(l.watched_events(p.r) == 0);
  write_all(p.w, "late");
  l.run();
  CHECK(rec.data.empty());
  CHECK(rec.events == events{"close"});
}

TEST_CASE("a paused stream reads ahead no further than its high-water mark") {
  const std::string content = random_bytes(1 << 20, 5);
  temp_file f(content);
  loop l;
  auto r = make_file_readable(f.path.string(), on_loop(l));
  std::string got;
  r->on(event::data, [&](std::string_view c) {
    got.append(c);
    r->pause();
  });
  l.run();
  // One chunk went out as 'data', then reading stopped at the mark.
  CHECK(got.size() == fd_source::default_chunk_size);
  CHECK(source_of(*r).bytes_read() <= got.size() + r->readable_high_water_mark());
  CHECK(r->readable_length() == source_of(*r).bytes_read() - got.size());
  // And it goes on where it stopped.
  r->remove_all_listeners(event::data);
  r->on(event::data, [&](std::string_view c) { got.append(c); });
  r->resume();
  l.run();
  CHECK(got == content);
}

TEST_CASE("stop() keeps what was read: the read-ahead still comes out, then 'end'; nothing more is read") {
  const std::string content = random_bytes(1 << 20, 6);
  temp_file f(content);
  loop l;
  auto r = make_file_readable(f.path.string(), on_loop(l));
  recorder rec(*r);
  r->on(event::data, [&](std::string_view) { r->pause(); });
  l.run();  // one chunk out, the read-ahead buffered
  REQUIRE(r->readable_length() > 0);
  const std::size_t read = r->get_source().bytes_read();  // an fd_readable: its source by type
  r->stop();
  r->stop();  // a second stop does nothing
  r->remove_all_listeners(event::data);
  r->on(event::data, [&](std::string_view c) { rec.data.append(c); });
  r->resume();
  l.run();
  CHECK(r->get_source().bytes_read() == read);
  CHECK(rec.data == content.substr(0, read));
  CHECK(rec.events == events{"data", "end", "close"});
  CHECK(!rec.error);
}

TEST_CASE("stop() while waiting for POLLIN drops the watch and ends the stream") {
  pipe_fds p;
  set_nonblocking(p.r);
  write_all(p.w, "first");
  loop l;
  auto r = make_fd_readable(p.r, false, on_loop(l));
  recorder rec(*r);
  bool watching_at_stop = false;
  r->once(event::data, [&](std::string_view) {
    // After this chunk the stream reads again and waits for POLLIN.
    l.set_immediate([&] {
      watching_at_stop = l.watched_events(p.r) != 0;
      r->stop();
      write_all(p.w, "late");
    });
  });
  l.run();
  CHECK(watching_at_stop);
  CHECK(rec.data == "first");
  CHECK(rec.events == events{"data", "end", "close"});
}

TEST_CASE("piped into an fd writable, a file arrives byte for byte; a slow reader bounds what is buffered") {
  const std::string content = random_bytes(3 << 20, 11);
  temp_file f(content);
  pipe_fds p;
  set_nonblocking(p.w);
  std::string received;
  std::thread reader([&] {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(p.r, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      received.append(buf, static_cast<std::size_t>(n));
      if (received.size() % (256 * 1024) < 4096) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  loop l;
  auto in = make_file_readable(f.path.string(), on_loop(l));
  writable_options wo;
  wo.event_loop = &l;
  auto out = make_fd_writable(p.w, false, wo);
  std::size_t most_buffered = 0;
  in->on(event::data, [&](std::string_view) {
    most_buffered = std::max(most_buffered, in->readable_length() + out->writable_length());
  });
  must_call finished;
  out->on(event::finish, [cb = finished.cb()]() mutable { cb({}); });
  in->pipe(*out);
  l.run();
  p.close_w();
  reader.join();
  CHECK(received.size() == content.size());
  CHECK(received == content);
  // At most a chunk in each stream (and the readable's read-ahead), never the file.
  CHECK(most_buffered <= 3 * fd_source::default_chunk_size);
}
