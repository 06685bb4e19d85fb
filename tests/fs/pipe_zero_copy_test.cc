// pipe_zero_copy() and pipeline(): from an fd to an fd the kernel moves the
// bytes (copy_file_range, sendfile, splice); every byte arrives in order,
// the streams' events are those of a normal pipe, and when the kernel
// refuses (forced through sluice/base/detail/syscalls.h's table) or a move fails, the
// normal read and write take over from where the kernel stopped.
#include "support/printers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/fs/read_stream.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/sources/fd_source.h"
#include "sluice/stream/pipeline.h"
#include "sluice/stream/pipe_zero_copy.h"
#include "sluice/base/detail/syscalls.h"
#include "support/must_call.h"
#include "support/pipe_fds.h"
#include "support/readable_options.h"
#include "support/temp_dir.h"

using namespace sluice;
using namespace sluice::test;

namespace {

// Bytes that show any reordering, loss or repetition.
std::string payload(std::size_t n) {
  std::string s(n, '\0');
  std::uint32_t x = 12345;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

int open_out(const std::string& path, int extra = 0) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | extra, 0644);
  REQUIRE(fd >= 0);
  return fd;
}

void set_nonblocking(int fd) { REQUIRE(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) == 0); }

writable_options w_on(loop& l) {
  writable_options o;
  o.event_loop = &l;
  return o;
}

fd_source& source_of(fd_readable& r) { return r.get_source(); }

// The events a pipe's two ends show, in order.
struct event_log {
  std::vector<std::string> lines;
  void watch(emitter& e, const std::string& name) {
    for (auto ev : {event::pipe, event::unpipe, event::resume, event::pause, event::end, event::prefinish,
                    event::finish, event::close, event::drain})
      e.on(ev, [this, ev, name] { lines.push_back(name + " " + std::string(to_string(ev))); });
    e.on(event::error, [this, name](std::error_code ec) { lines.push_back(name + " error " + ec.message()); });
  }
};

// The table's three moving calls, swappable one by one: each counts its
// calls, and `refuse_after` of them (or none, -1) succeed before it fails
// with `err`; `cap` cuts every move short.
struct move_hooks {
  static inline int refuse_after[3] = {-1, -1, -1};
  static inline int err[3] = {0, 0, 0};
  static inline int calls[3] = {0, 0, 0};
  static inline int eagain = 0;
  static inline std::size_t cap = 0;
  detail::syscall_table saved;

  enum which { splice, copy_file_range, sendfile };
  move_hooks() {
    for (int i = 0; i < 3; ++i) refuse_after[i] = -1, err[i] = 0, calls[i] = 0;
    eagain = 0;
    cap = 0;
    detail::syscall_table t = detail::real_syscalls;
    t.splice = [](int a, loff_t* b, int c, loff_t* d, size_t n, unsigned f) -> ssize_t {
      if (failing(splice)) return -1;
      return counted(detail::real_syscalls.splice(a, b, c, d, shorter(n), f));
    };
    t.copy_file_range = [](int a, loff_t* b, int c, loff_t* d, size_t n, unsigned f) -> ssize_t {
      if (failing(copy_file_range)) return -1;
      return counted(detail::real_syscalls.copy_file_range(a, b, c, d, shorter(n), f));
    };
    t.sendfile = [](int a, int b, off_t* c, size_t n) -> ssize_t {
      if (failing(sendfile)) return -1;
      return counted(detail::real_syscalls.sendfile(a, b, c, shorter(n)));
    };
    saved = detail::swap_syscalls(t);
  }
  ~move_hooks() { detail::swap_syscalls(saved); }
  move_hooks(const move_hooks&) = delete;
  move_hooks& operator=(const move_hooks&) = delete;

  static void refuse(which w, int e, int after = 0) {
    refuse_after[w] = after;
    err[w] = e;
  }
  static bool failing(which w) {
    const int n = calls[w]++;
    if (refuse_after[w] < 0 || n < refuse_after[w]) return false;
    errno = err[w];
    return true;
  }
  static std::size_t shorter(std::size_t n) { return cap && n > cap ? cap : n; }
  static ssize_t counted(ssize_t r) {
    if (r < 0 && errno == EAGAIN) ++eagain;
    return r;
  }
};

struct file_to_file_run {
  std::string data, out;
  std::vector<std::string> events;
  std::size_t moved = 0, reads = 0;
  std::error_code result;
  // Every byte arrived, and the pipeline called back with success.
  bool complete() const { return !result && out == data; }
};

// pipeline(file readable, fd writable over a file) of `size` bytes, on a
// private loop.
file_to_file_run run_file_to_file(std::size_t size, int out_flags = 0) {
  file_to_file_run run;
  temp_dir dir;
  run.data = payload(size);
  spit(dir.file("in"), run.data);
  must_call done;
  loop l;
  std::error_code ec;
  auto in = make_file_readable(dir.file("in"), on_loop(l, 64 * 1024), ec);
  REQUIRE(in);
  // A high-water mark above the file's size: the normal path meets no
  // backpressure, so its events are those the moves must show.
  writable_options wo = w_on(l);
  wo.high_water_mark = 64 * 1024 * 1024;
  auto out = make_fd_writable(open_out(dir.file("out"), out_flags), true, wo);
  event_log log;
  log.watch(*in, "src");
  log.watch(*out, "dst");
  pipeline({*in, *out}, done.cb([&](std::error_code e) { run.result = e; }));
  l.run();
  run.moved = source_of(*in).bytes_moved();
  run.reads = source_of(*in).syscalls();
  run.events = log.lines;
  run.out = slurp(dir.file("out"));
  return run;
}

// A readable over `fd` that collects what comes, starting only once a move
// has met a full pipe or socket (EAGAIN), so that the moves must wait for
// room (if none ever does, the test's check of EAGAIN fails).
struct late_reader {
  must_call ended;
  std::unique_ptr<readable> r;
  std::string got;
  int turns = 0;
  std::function<void()> start;
  late_reader(loop& l, int fd, bool close_fd) : r(make_fd_readable(fd, close_fd, on_loop(l))) {
    start = [this, &l] {
      if (move_hooks::eagain == 0 && ++turns < 1000) return l.set_immediate(start);
      r->on(event::data, [this](std::string_view c) { got.append(c); });
    };
    l.set_immediate(start);
    r->on(event::end, ended.cb());
  }
};

// pipeline(file readable, fd writable over a file) of `size` bytes, for
// the tests that act during the moves.
struct file_pipeline {
  temp_dir dir;
  std::string data;
  loop l;
  must_call done;
  std::unique_ptr<fd_readable> in;
  std::unique_ptr<writable> out;
  explicit file_pipeline(std::size_t size) : data(payload(size)) {
    spit(dir.file("in"), data);
    in = make_file_readable(dir.file("in"), on_loop(l));
    out = make_fd_writable(open_out(dir.file("out")), true, w_on(l));
  }
  // Runs `act` on the first turn after the first move.
  void after_first_move(std::function<void()> act) {
    l.set_immediate([this, act = std::move(act)]() mutable {
      if (moved() == 0) return after_first_move(std::move(act));
      act();
    });
  }
  void run() {
    pipeline({*in, *out}, done.cb());
    l.run();
  }
  std::size_t moved() const { return source_of(*in).bytes_moved(); }
  std::string written() const { return slurp(dir.file("out")); }
};

}  // namespace

TEST_CASE("pipeline moves a file into a file in the kernel, with the events of a normal pipe") {
  move_hooks hooks;
  const auto moved = run_file_to_file(3 * 1024 * 1024 + 4321);
  CHECK(moved.complete());
  CHECK(moved.moved == moved.data.size());
  CHECK(moved.reads == 0);
  CHECK(hooks.calls[move_hooks::copy_file_range] + hooks.calls[move_hooks::sendfile] > 0);

  // The same pipeline with every moving call refused: the normal path.
  move_hooks::refuse(move_hooks::splice, EINVAL);
  move_hooks::refuse(move_hooks::copy_file_range, EXDEV);
  move_hooks::refuse(move_hooks::sendfile, ENOSYS);
  const auto copied = run_file_to_file(moved.data.size());
  CHECK(copied.complete());
  CHECK(copied.moved == 0);
  CHECK(copied.reads > 0);
  std::string moved_events, copied_events;
  for (const auto& e : moved.events) moved_events += e + "; ";
  for (const auto& e : copied.events) copied_events += e + "; ";
  CHECK(moved_events == copied_events);
  CHECK(moved_events.find("src end; ") != std::string::npos);
  CHECK(moved_events.find("dst finish; ") != std::string::npos);
}

TEST_CASE("an empty file moves nothing and still ends both streams") {
  const auto run = run_file_to_file(0);
  CHECK(run.result == std::error_code{});
  CHECK(run.out.empty());
  CHECK(run.moved == 0);
}

TEST_CASE("copy_file_range refused half way: sendfile goes on from where it stopped") {
  move_hooks hooks;
  move_hooks::refuse(move_hooks::copy_file_range, EXDEV, 2);
  const auto run = run_file_to_file(3 * fd_source::move_size + 17);
  CHECK(run.complete());
  CHECK(run.moved == run.data.size());
  CHECK(hooks.calls[move_hooks::copy_file_range] == 3);
  CHECK(hooks.calls[move_hooks::sendfile] > 0);
}

TEST_CASE("the kernel refusing half way: read and write go on from where it stopped") {
  move_hooks hooks;
  move_hooks::refuse(move_hooks::copy_file_range, EOPNOTSUPP, 1);
  move_hooks::refuse(move_hooks::sendfile, EINVAL, 1);
  const auto run = run_file_to_file(3 * fd_source::move_size + 17);
  CHECK(run.complete());
  CHECK(run.moved == 2 * fd_source::move_size);
  CHECK(run.reads > 0);
}

TEST_CASE("a move that fails (EIO) hands over to the normal path, which decides") {
  move_hooks hooks;
  move_hooks::refuse(move_hooks::copy_file_range, EIO, 1);
  const auto run = run_file_to_file(2 * fd_source::move_size + 5);
  // The real read and write succeed: so does the copy.
  CHECK(run.complete());
  CHECK(run.moved == fd_source::move_size);
  CHECK(run.reads > 0);
}

TEST_CASE("into an O_APPEND file (copy_file_range's EBADF) every byte arrives") {
  const auto run = run_file_to_file(fd_source::move_size + 99, O_APPEND);
  CHECK(run.complete());
}

TEST_CASE("a file into a full non-blocking pipe: splice waits for room, moves short, keeps order") {
  temp_dir dir;
  const std::string data = payload(1024 * 1024 + 333);
  spit(dir.file("in"), data);
  move_hooks hooks;
  move_hooks::cap = 10000;  // short moves
  pipe_fds p;
  set_nonblocking(p.w);
  set_nonblocking(p.r);
  // Fill the pipe first: the first move must meet EAGAIN.
  std::string head;
  for (;;) {
    const std::string block = payload(4096);
    const ssize_t n = ::write(p.w, block.data(), block.size());
    if (n < 0) {
      REQUIRE(errno == EAGAIN);
      break;
    }
    head.append(block, 0, static_cast<std::size_t>(n));
  }
  loop l;
  must_call done;
  auto in = make_file_readable(dir.file("in"), on_loop(l));
  auto out = make_fd_writable(p.w, false, w_on(l));
  late_reader reader(l, p.r, false);
  std::error_code result;
  pipeline({*in, *out}, done.cb([&](std::error_code e) {
    result = e;
    p.close_w();  // the reader's end of the data
  }));
  l.run();
  CHECK(result == std::error_code{});
  CHECK(reader.got == head + data);
  CHECK(source_of(*in).bytes_moved() == data.size());
  CHECK(source_of(*in).syscalls() == 0);
  CHECK(move_hooks::eagain > 0);
  CHECK(hooks.calls[move_hooks::splice] > static_cast<int>(data.size() / 10000));
}

TEST_CASE("a pipe into a file: splice waits for data, and the writer's end is the end") {
  temp_dir dir;
  const std::string data = payload(600 * 1000 + 7);
  pipe_fds p;
  set_nonblocking(p.w);
  set_nonblocking(p.r);
  loop l;
  const int chunks = 60;
  must_call writes(chunks), done;
  auto feeder = make_fd_writable(p.w, false, w_on(l));
  auto in = make_fd_readable(p.r, false, on_loop(l));
  auto out = make_fd_writable(open_out(dir.file("out")), true, w_on(l));
  // The feeder writes in steps, each after the last callback: the pipe
  // runs empty between them, and the moves wait for POLLIN.
  const std::size_t step = data.size() / chunks + 1;
  std::size_t at = 0;
  std::function<void()> feed = [&] {
    if (at >= data.size()) {
      feeder->end([&](std::error_code) { p.close_w(); });
      return;
    }
    const std::string_view piece = std::string_view(data).substr(at, step);
    at += piece.size();
    feeder->write(piece, writes.cb([&](std::error_code ec) {
      CHECK(ec == std::error_code{});
      feed();
    }));
  };
  feed();
  std::error_code result;
  pipeline({*in, *out}, done.cb([&](std::error_code e) { result = e; }));
  l.run();
  CHECK(result == std::error_code{});
  CHECK(slurp(dir.file("out")) == data);
  CHECK(source_of(*in).bytes_moved() == data.size());
  CHECK(source_of(*in).syscalls() == 0);
}

TEST_CASE("a file into a loopback TCP socket: sendfile, every byte in order") {
  temp_dir dir;
  const std::string data = payload(4 * 1024 * 1024 + 1);
  spit(dir.file("in"), data);
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(lfd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(lfd, 1) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int cfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(cfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int sfd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  REQUIRE(sfd >= 0);
  ::close(lfd);
  set_nonblocking(cfd);

  move_hooks hooks;
  loop l;
  must_call done;
  auto in = make_file_readable(dir.file("in"), on_loop(l));
  auto out = make_fd_writable(cfd, true, w_on(l));  // closed after 'finish': the reader's end
  late_reader reader(l, sfd, true);
  std::error_code result;
  pipeline({*in, *out}, done.cb([&](std::error_code e) { result = e; }));
  l.run();
  CHECK(result == std::error_code{});
  CHECK(reader.got == data);
  CHECK(source_of(*in).bytes_moved() == data.size());
  CHECK(hooks.calls[move_hooks::sendfile] > 0);
}

TEST_CASE("a reader gone: the move's EPIPE is met again by the write, reported once by the writable") {
  temp_dir dir;
  const std::string data = payload(256 * 1024);
  spit(dir.file("in"), data);
  move_hooks hooks;
  pipe_fds p;
  p.close_r();
  loop l;
  must_call done;
  auto in = make_file_readable(dir.file("in"), on_loop(l));
  auto out = make_fd_writable(p.w, false, w_on(l));
  event_log log;
  log.watch(*out, "dst");
  std::error_code result;
  pipeline({*in, *out}, done.cb([&](std::error_code e) { result = e; }));
  l.run();
  CHECK(result == std::error_code(EPIPE, std::system_category()));
  CHECK(hooks.calls[move_hooks::splice] == 1);
  CHECK(source_of(*in).bytes_moved() == 0);
  int errors = 0;
  for (const auto& line : log.lines) errors += line.rfind("dst error", 0) == 0;
  CHECK(errors == 1);
}

TEST_CASE("a 'data' listener before the pipe: the kernel moves nothing, the listener sees every byte") {
  file_pipeline p(300 * 1000);
  std::string seen;
  p.in->on(event::data, [&](std::string_view c) { seen.append(c); });
  p.run();
  CHECK(seen == p.data);
  CHECK(p.written() == p.data);
  CHECK(p.moved() == 0);
}

TEST_CASE("a 'data' listener added during the moves stops them: it sees the rest, the file gets all") {
  file_pipeline p(4 * fd_source::move_size);
  std::string seen;
  bool added = false;
  p.after_first_move([&] {
    added = true;
    p.in->on(event::data, [&](std::string_view c) { seen.append(c); });
  });
  p.run();
  REQUIRE(added);
  CHECK(p.moved() > 0);
  CHECK(p.moved() < p.data.size());
  CHECK(p.written() == p.data);
  CHECK(seen == p.data.substr(p.moved()));
}

TEST_CASE("pause() during the moves stops them; resume() goes on with reads and writes") {
  file_pipeline p(4 * fd_source::move_size);
  p.after_first_move([&] {
    p.in->pause();
    p.l.set_immediate([&] { p.in->resume(); });
  });
  p.run();
  CHECK(p.moved() > 0);
  CHECK(p.moved() < p.data.size());
  CHECK(source_of(*p.in).syscalls() > 0);
  CHECK(p.written() == p.data);
}

TEST_CASE("pipe_zero_copy with end = false leaves the writable open for the next file") {
  temp_dir dir;
  const std::string a = payload(fd_source::move_size + 3), b = "and the tail\n";
  spit(dir.file("a"), a);
  spit(dir.file("b"), b);
  loop l;
  must_call ended;
  auto out = make_fd_writable(open_out(dir.file("out")), true, w_on(l));
  auto first = make_file_readable(dir.file("a"), on_loop(l));
  std::unique_ptr<fd_readable> second;
  first->on(event::end, [&] {
    CHECK(!out->writable_ended());
    second = make_file_readable(dir.file("b"), on_loop(l));
    second->on(event::end, [&] { out->end(ended.cb()); });
    pipe_zero_copy(*second, *out, {.end = false});
  });
  pipe_zero_copy(*first, *out, {.end = false});
  l.run();
  CHECK(ended.error() == std::error_code{});
  CHECK(slurp(dir.file("out")) == a + b);
  CHECK(source_of(*first).bytes_moved() == a.size());
}
