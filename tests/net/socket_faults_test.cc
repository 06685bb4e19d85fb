// Faults on sockets (tests/support/fault_injection.h over sluice/base/detail/syscalls.h's
// sendmsg and recv): EPIPE, ECONNRESET, EAGAIN, EINTR, short sendmsg and
// short recv, for a net::socket and for the syslog writable. Each error
// reaches every write callback exactly once and 'error' once; a short write
// resumes where it stopped; EAGAIN waits for the fd; the peer gets every byte
// once, in order. The socket under test is the only one using the table: its
// peer is a plain fd (socketpair, or a raw listener on a Unix path).
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/socket.h"
#include "sluice/syslog/syslog_frames.h"
#include "sluice/syslog/syslog_writable.h"
#include "support/fault_injection.h"
#include "support/must_call.h"
#include "support/spin.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

// What a plain fd holds to read now (non-blocking); false at its end (the
// peer's FIN).
bool drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    return n != 0;
  }
}

// A net::socket on one end of a socketpair; the other end is `peer`, plain.
struct pair_world {
  sluice::loop loop;
  int peer = -1;
  std::unique_ptr<net::socket> s;
  std::vector<std::string> errors;
  int closes = 0;
  bool closed_with_error = false;
  std::string data;

  pair_world() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    peer = fds[1];
    net::socket_options o;
    o.event_loop = &loop;
    s = std::make_unique<net::socket>(fds[0], o);
    s->on(event::error, [this](std::error_code ec) { errors.push_back(code_name(ec)); });
    s->on(event::close, [this](const event_arg& a) {
      ++closes;
      closed_with_error = bool(a.error);
    });
    s->on(event::data, [this](std::string_view d) { data += d; });
  }
  ~pair_world() {
    s.reset();
    ::close(peer);
  }
};

std::string pattern(std::size_t n, char from) {
  std::string p(n, '\0');
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>(from + i % 23);
  return p;
}

void write_error_reaches_everyone(fault f, const char* name) {
  CAPTURE(name);
  must_call cbs(3);
  pair_world w;
  fault_injector fi;
  fi.fail_at(sys_call::sendmsg, 0, f);
  // One turn: one sendmsg for the three.
  w.s->write("one ", cbs.cb());
  w.s->write("two ", cbs.cb());
  w.s->write("three", cbs.cb());
  REQUIRE(spin(w.loop, [&] { return w.closes == 1; }));
  CHECK(fi.injected(sys_call::sendmsg, f) == 1);
  cbs.check();
  CHECK(code_name(cbs.error(0)) == name);
  for (int i = 0; i < 3; ++i) CHECK(cbs.error(static_cast<std::size_t>(i)));
  CHECK(w.errors == std::vector<std::string>{name});
  CHECK(w.closed_with_error);
  std::string got;
  drain(w.peer, got);
  CHECK(got.empty());
  // Nothing more comes later.
  w.loop.run_until_idle();
  CHECK(w.closes == 1);
  CHECK(w.errors.size() == 1);
}

TEST_CASE("sendmsg EPIPE: each write's callback hears it once, then one 'error' and 'close'") {
  write_error_reaches_everyone(fault::epipe, "EPIPE");
}

TEST_CASE("sendmsg ECONNRESET: each write's callback hears it once, then one 'error' and 'close'") {
  write_error_reaches_everyone(fault::econnreset, "ECONNRESET");
}

TEST_CASE("short sendmsg: the write resumes where the kernel stopped; the peer gets every byte once, in order") {
  must_call cbs(3);
  pair_world w;
  fault_injector fi(7);
  fi.fail_at(sys_call::sendmsg, 0, fault::short_io);
  fi.fail_at(sys_call::sendmsg, 1, fault::short_io);
  fi.fail_at(sys_call::sendmsg, 2, fault::short_io);
  const std::string a = pattern(3000, 'a'), b = pattern(5000, 'A'), c = pattern(700, '0');
  w.s->write(a, cbs.cb());
  w.s->write(b, cbs.cb());
  w.s->write(c, cbs.cb());
  std::string got;
  REQUIRE(spin(w.loop, [&] {
    drain(w.peer, got);
    return cbs.calls() == 3 && got.size() >= a.size() + b.size() + c.size();
  }));
  CHECK(fi.injected(sys_call::sendmsg, fault::short_io) == 3);
  CHECK(fi.calls(sys_call::sendmsg) >= 4);  // each cut resumed
  CHECK(got == a + b + c);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(cbs.error(static_cast<std::size_t>(i)));
  CHECK(w.errors.empty());
  CHECK(w.s->bytes_written() == got.size());
}

TEST_CASE("sendmsg EAGAIN and EINTR: the write waits for the fd (or retries) and completes once") {
  must_call cbs(2);
  pair_world w;
  fault_injector fi;
  fi.fail_at(sys_call::sendmsg, 0, fault::eagain);
  fi.fail_at(sys_call::sendmsg, 1, fault::eintr);
  w.s->write("hello ", cbs.cb());
  w.s->write("world", cbs.cb());
  std::string got;
  REQUIRE(spin(w.loop, [&] {
    drain(w.peer, got);
    return cbs.calls() == 2 && got.size() >= 11;
  }));
  CHECK(got == "hello world");
  CHECK(fi.calls(sys_call::sendmsg) >= 3);
  CHECK_FALSE(cbs.error(0));
  CHECK_FALSE(cbs.error(1));
  CHECK(w.errors.empty());
  CHECK(w.closes == 0);
}

TEST_CASE("recv ECONNRESET: one 'error' ECONNRESET, then 'close' with it; no 'data'") {
  pair_world w;
  fault_injector fi;
  fi.fail_at(sys_call::recv, 0, fault::econnreset);
  REQUIRE(::send(w.peer, "hello", 5, MSG_NOSIGNAL) == 5);
  REQUIRE(spin(w.loop, [&] { return w.closes == 1; }));
  CHECK(fi.injected(sys_call::recv, fault::econnreset) == 1);
  CHECK(w.errors == std::vector<std::string>{"ECONNRESET"});
  CHECK(w.closed_with_error);
  CHECK(w.data.empty());
}

TEST_CASE("recv EAGAIN, EINTR and short reads: every byte arrives once, in order, with no error") {
  pair_world w;
  fault_injector fi(3);
  fi.fail_at(sys_call::recv, 0, fault::eagain);
  fi.fail_at(sys_call::recv, 1, fault::eintr);
  fi.fail_at(sys_call::recv, 2, fault::short_io);
  fi.fail_at(sys_call::recv, 3, fault::short_io);
  const std::string sent = pattern(300000, 'a');  // more than a few reads: every scripted call comes
  std::size_t off = 0;
  REQUIRE(spin(w.loop, [&] {
    if (off < sent.size()) {
      const ssize_t n = ::send(w.peer, sent.data() + off, sent.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) off += static_cast<std::size_t>(n);
    }
    return w.data.size() >= sent.size();
  }));
  CHECK(w.data == sent);
  CHECK(fi.injected(sys_call::recv, fault::short_io) == 2);
  CHECK(fi.injected(sys_call::recv, fault::eagain) == 1);
  CHECK(w.errors.empty());
  CHECK(w.closes == 0);
}

// A plain listener on a Unix path: the syslog writable's receiver. Keeps
// what each connection sent.
struct raw_receiver {
  int fd = -1;
  std::vector<int> conns;
  std::vector<std::string> got;

  explicit raw_receiver(const std::string& path) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 16) == 0);
  }
  ~raw_receiver() {
    for (const int c : conns)
      if (c >= 0) ::close(c);
    ::close(fd);
  }
  void poll_once() {
    for (;;) {
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) break;
      conns.push_back(c);
      got.emplace_back();
    }
    // At a sender's FIN, close as a receiver does.
    for (std::size_t i = 0; i < conns.size(); ++i)
      if (conns[i] >= 0 && !drain(conns[i], got[i])) {
        ::close(conns[i]);
        conns[i] = -1;
      }
  }
  // The messages of connection i; `torn` says whether it ended mid-frame.
  std::vector<std::string> messages(std::size_t i, bool* torn = nullptr) const {
    std::vector<std::string> out;
    syslog_frame_reader r(syslog_frame_reader::mode::octet_counting, 1 << 20);
    REQUIRE(r.feed(got[i], [&](std::string_view m) { out.emplace_back(m); }));
    if (torn) *torn = r.mid_frame();
    return out;
  }
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST_CASE("syslog writable: sendmsg EPIPE, ECONNRESET, or a short write then EPIPE: a new connection, every message "
          "whole on it, each callback once with success") {
  struct scenario {
    const char* name;
    std::vector<fault> faults;  // sendmsg calls 0, 1, ...
    bool torn_first;  // a short write first: the first connection may hold part
  };
  for (const scenario& sc : {scenario{"EPIPE", {fault::epipe}, false},
                             scenario{"ECONNRESET", {fault::econnreset}, false},
                             scenario{"short, then EPIPE", {fault::short_io, fault::epipe}, true}}) {
    CAPTURE(sc.name);
    temp_dir dir;
    const std::string path = dir.file("r.sock");
    raw_receiver rx(path);
    must_call cbs(3);
    sluice::loop loop;
    syslog_options o;
    o.unix_path = path;
    o.reconnect_min = std::chrono::milliseconds(1);
    o.stream.event_loop = &loop;
    o.header.hostname = "h";
    o.header.app_name = "app";
    auto log = make_syslog_writable(o);
    REQUIRE(spin(loop, [&] {
      rx.poll_once();
      return log->connected() && !rx.conns.empty();
    }));
    fault_injector fi(11);
    for (std::size_t k = 0; k < sc.faults.size(); ++k) fi.fail_at(sys_call::sendmsg, k, sc.faults[k]);
    const std::string big = pattern(4000, 'a');
    log->write("first", cbs.cb());
    log->write(big, cbs.cb());
    log->write("third", cbs.cb());
    // The messages, whole, over both connections (a short write may have
    // put the first whole on the first connection: it is not sent again).
    const auto whole = [&] {
      std::vector<std::string> all;
      for (std::size_t i = 0; i < rx.got.size(); ++i)
        for (auto& m : rx.messages(i)) all.push_back(std::move(m));
      return all;
    };
    REQUIRE(spin(loop, [&] {
      rx.poll_once();
      return cbs.calls() == 3 && rx.got.size() == 2 && whole().size() >= 3;
    }));
    for (int i = 0; i < 3; ++i) CHECK_FALSE(cbs.error(static_cast<std::size_t>(i)));
    CHECK(fi.injected(sys_call::sendmsg, sc.faults.back()) == 1);
    CHECK(log->reconnects() == 1);
    CHECK(log->sent() == 3);
    CHECK(log->dropped() == 0);
    if (!sc.torn_first) CHECK(rx.messages(0).empty());  // the failed write sent nothing
    const auto all = whole();
    REQUIRE(all.size() == 3);
    CHECK(ends_with(all[0], " first"));
    CHECK(ends_with(all[1], " " + big));
    CHECK(ends_with(all[2], " third"));
    fi.stop();
    must_call ended;
    log->end(ended.cb());
    REQUIRE(spin(loop, [&] {
      rx.poll_once();
      return ended.calls() == 1;
    }));
    CHECK_FALSE(ended.error());
    cbs.check();
    ended.check();
    log.reset();
  }
}

TEST_CASE("syslog writable: a recv error (ECONNRESET) on its connection is a new connection, and messages go on") {
  temp_dir dir;
  const std::string path = dir.file("r.sock");
  raw_receiver rx(path);
  must_call cbs(2);
  sluice::loop loop;
  syslog_options o;
  o.unix_path = path;
  o.reconnect_min = std::chrono::milliseconds(1);
  o.stream.event_loop = &loop;
  auto log = make_syslog_writable(o);
  REQUIRE(spin(loop, [&] {
    rx.poll_once();
    return log->connected() && !rx.conns.empty();
  }));
  log->write("before", cbs.cb());
  REQUIRE(spin(loop, [&] {
    rx.poll_once();
    return cbs.calls() == 1 && rx.messages(0).size() == 1;
  }));
  {
    fault_injector fi;
    fi.fail_at(sys_call::recv, 0, fault::econnreset);
    // The receiver sends a byte: the writable's read sees the reset.
    REQUIRE(::send(rx.conns[0], "x", 1, MSG_NOSIGNAL) == 1);
    REQUIRE(spin(loop, [&] {
      rx.poll_once();
      return rx.conns.size() == 2 && log->connected();
    }));
    CHECK(fi.injected(sys_call::recv, fault::econnreset) == 1);
  }
  log->write("after", cbs.cb());
  REQUIRE(spin(loop, [&] {
    rx.poll_once();
    return cbs.calls() == 2 && rx.messages(1).size() == 1;
  }));
  CHECK(log->reconnects() == 1);
  CHECK(ends_with(rx.messages(1)[0], " after"));
  CHECK_FALSE(cbs.error(0));
  CHECK_FALSE(cbs.error(1));
  must_call ended;
  log->end(ended.cb());
  REQUIRE(spin(loop, [&] {
    rx.poll_once();
    return ended.calls() == 1;
  }));
  cbs.check();
  ended.check();
}

}  // namespace
}  // namespace sluice::test
