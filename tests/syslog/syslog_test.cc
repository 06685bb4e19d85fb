// The syslog writable and frame reader: formatting and framing, then real
// sockets on loopback: an in-process net::server as receiver (TCP and Unix),
// and a real rsyslogd (imptcp -> omfile) started and stopped by the test.
// Every wait is bounded by a number of turns or polls; nothing asserts on
// elapsed time.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/syslog/syslog_format.h"
#include "sluice/syslog/syslog_frames.h"
#include "sluice/syslog/syslog_writable.h"
#include "support/free_port.h"
#include "support/rsyslogd.h"
#include "support/temp_dir.h"
#include "support/spin.h"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

using sluice::test::spin;

const std::regex header_re(R"(<14>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z host app 42 ID - )");

syslog_header test_header() { return {.facility = 1, .severity = 6, .hostname = "host", .app_name = "app", .procid = "42", .msgid = "ID"}; }

// The message with its header cut off, after checking the header's shape.
std::string body_of(const std::string& m) {
  std::smatch h;
  REQUIRE_MESSAGE(std::regex_search(m, h, header_re, std::regex_constants::match_continuous), m);
  return m.substr(h.length(0));
}

TEST_CASE("the formatter writes an RFC 5424 header and an octet count of the bytes that follow") {
  detail::syslog_formatter f(test_header());
  std::string out;
  timespec t{.tv_sec = 1764597190, .tv_nsec = 123456789};  // 2025-12-01T13:53:10.123456Z
  f.append(out, "hello\nworld", t);
  const std::string msg = "<14>1 2025-12-01T13:53:10.123456Z host app 42 ID - hello\nworld";
  CHECK(out == std::to_string(msg.size()) + " " + msg);
}

TEST_CASE("the formatter's LF framing ends each message with LF, an inner LF sent as a space") {
  detail::syslog_formatter f(test_header(), syslog_framing::lf);
  std::string out;
  f.append(out, "a\nb", {.tv_sec = 0, .tv_nsec = 5000});
  CHECK(out == "<14>1 1970-01-01T00:00:00.000005Z host app 42 ID - a b\n");
}

TEST_CASE("header fields are cut to RFC 5424's sizes and made printable; a bad facility throws") {
  detail::syslog_formatter f({.facility = 23, .severity = 7, .hostname = "a b", .app_name = std::string(60, 'x'), .procid = "p", .msgid = ""});
  std::string out;
  f.append(out, "m", {});
  CHECK(out.find("<191>1 ") != std::string::npos);
  CHECK(out.find(" a_b " + std::string(48, 'x') + " p - - m") != std::string::npos);
  CHECK_THROWS_AS(detail::syslog_formatter(syslog_header{.facility = 24, .severity = 0, .hostname = "h", .app_name = "a", .procid = "p", .msgid = "m"}), std::invalid_argument);
  CHECK_THROWS_AS(detail::syslog_formatter(syslog_header{.facility = 0, .severity = 8, .hostname = "h", .app_name = "a", .procid = "p", .msgid = "m"}), std::invalid_argument);
}

std::vector<std::string> split_all(syslog_frame_reader& r, std::string_view data, std::size_t step, bool& ok) {
  std::vector<std::string> out;
  ok = true;
  for (std::size_t i = 0; i < data.size() && ok; i += step)
    ok = r.feed(data.substr(i, step), [&](std::string_view m) { out.emplace_back(m); });
  return out;
}

TEST_CASE("the frame reader takes octet-counted frames however the bytes are cut") {
  const std::string data = "5 hello3 a\nb11 <1>1 - - x ";
  for (std::size_t step : {1u, 2u, 3u, 7u, 100u}) {
    syslog_frame_reader r(syslog_frame_reader::mode::automatic, 100);
    bool ok = false;
    const auto m = split_all(r, data, step, ok);
    CHECK(ok);
    CHECK(m == std::vector<std::string>{"hello", "a\nb", "<1>1 - - x "});
    CHECK_FALSE(r.mid_frame());
    CHECK(r.framing() == syslog_frame_reader::mode::octet_counting);
  }
}

// The frames that lie whole in a read are taken in a run (octet_run()),
// the rest a byte at a time: both must give the same messages, cuts and
// errors. Random streams of frames, some too long, some malformed at the
// end, fed whole and in random pieces.
TEST_CASE("the frame reader, octet counting: frames whole in a read and frames cut give the same") {
  std::uint32_t seed = 12345;
  const auto next = [&seed](std::uint32_t n) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % n;
  };
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    std::string data;
    const int frames = 1 + static_cast<int>(next(40));
    for (int f = 0; f < frames; ++f) {
      const std::size_t len = 1 + next(f % 7 == 3 ? 300 : 130);  // some longer than the maximum, 120
      data += std::to_string(len) + " ";
      for (std::size_t i = 0; i < len; ++i) data += static_cast<char>('a' + next(26));
    }
    switch (next(5)) {  // how the stream ends
      case 0: data += "0 x"; break;
      case 1: data += "12x"; break;
      case 2: data += "99999999999 "; break;
      case 3: data += "7 abc"; break;  // torn
      default: break;
    }
    for (const bool truncate : {false, true}) {
      struct result {
        std::vector<std::string> messages;
        std::vector<bool> cut;
        bool ok = true;
        std::string error;
        bool mid = false;
      };
      // pieces: 0 whole, 1 random pieces, 2 a byte at a time (never a run)
      const auto run = [&](int pieces) {
        syslog_frame_reader r(syslog_frame_reader::mode::automatic, 120, truncate);
        result out;
        std::size_t i = 0;
        while (i < data.size() && out.ok) {
          const std::size_t n = pieces == 0 ? data.size() : pieces == 1 ? 1 + next(400) : 1;
          out.ok = r.feed(std::string_view(data).substr(i, n), [&](std::string_view m) {
            out.messages.emplace_back(m);
            out.cut.push_back(r.cut());
          });
          i += n;
        }
        out.error = r.error();
        out.mid = r.mid_frame();
        return out;
      };
      const result bytes = run(2);
      for (const int pieces : {0, 1}) {
        CAPTURE(pieces);
        const result r = run(pieces);
        CHECK(r.messages == bytes.messages);
        CHECK(r.cut == bytes.cut);
        CHECK(r.ok == bytes.ok);
        CHECK(r.error == bytes.error);
        CHECK(r.mid == bytes.mid);
      }
    }
  }
}

TEST_CASE("the frame reader takes LF-framed messages, and tells a torn one") {
  syslog_frame_reader r(syslog_frame_reader::mode::automatic, 100);
  bool ok = false;
  const auto m = split_all(r, "<1>a\n\n<2>b\r\n<3>c", 2, ok);
  CHECK(ok);
  CHECK(m == std::vector<std::string>{"<1>a", "<2>b\r"});
  CHECK(r.mid_frame());
  CHECK(r.framing() == syslog_frame_reader::mode::lf);
}

TEST_CASE("the frame reader refuses bad lengths, oversize messages and unknown framing") {
  bool ok = true;
  {
    syslog_frame_reader r(syslog_frame_reader::mode::octet_counting, 100);
    const auto m = split_all(r, "2 ab0 x", 100, ok);
    CHECK_FALSE(ok);
    CHECK(m == std::vector<std::string>{"ab"});
    CHECK(r.error() == "bad frame length '0'");
  }
  {
    syslog_frame_reader r(syslog_frame_reader::mode::octet_counting, 100);
    split_all(r, "12x", 100, ok);
    CHECK_FALSE(ok);
    CHECK(r.error() == "bad frame length '12x'");
  }
  {
    syslog_frame_reader r(syslog_frame_reader::mode::octet_counting, 100);
    split_all(r, "101 ", 100, ok);
    CHECK_FALSE(ok);
    CHECK(r.error() == "message longer than 100 bytes (101)");
  }
  {
    syslog_frame_reader r(syslog_frame_reader::mode::octet_counting, 100);
    split_all(r, "99999", 100, ok);
    CHECK_FALSE(ok);
  }
  {
    syslog_frame_reader r(syslog_frame_reader::mode::lf, 4);
    split_all(r, "<1>ab\n", 100, ok);
    CHECK_FALSE(ok);
    CHECK(r.error() == "message longer than 4 bytes");
  }
  {
    syslog_frame_reader r(syslog_frame_reader::mode::automatic, 100);
    split_all(r, "hello", 100, ok);
    CHECK_FALSE(ok);
    CHECK(r.error() == "neither octet counting nor LF framing (first byte 0x68)");
  }
}

// Issue 19, item 3: with `truncate`, a longer message is cut to the maximum
// and the stream goes on; its end is known, so nothing after it is lost.
TEST_CASE("the frame reader, cutting: a longer message is cut to the maximum, and the next one is whole") {
  const std::string big(300, 'x');
  struct octet_case {
    std::string data;
    syslog_frame_reader::mode mode;
  };
  const octet_case cases[] = {
      {"5 hello300 " + big + "3 abc100000 " + std::string(100000, 'y') + "2 ok", syslog_frame_reader::mode::automatic},
      {"<1>hello\n" + big + "\n<3>abc\n" + std::string(100000, 'y') + "\nok\n", syslog_frame_reader::mode::lf},
  };
  for (const auto& c : cases) {
    for (std::size_t step : {1u, 7u, 99u, 100u, 101u, 4096u, 1000000u}) {
      CAPTURE(step);
      syslog_frame_reader r(c.mode, 100, true);
      std::vector<std::string> m;
      std::vector<bool> cut;
      std::size_t most = 0;
      bool ok = true;
      for (std::size_t i = 0; i < c.data.size() && ok; i += step) {
        ok = r.feed(std::string_view(c.data).substr(i, step), [&](std::string_view msg) {
          m.emplace_back(msg);
          cut.push_back(r.cut());
        });
        most = std::max(most, r.buffered());
      }
      CHECK(ok);
      const bool lf = c.mode == syslog_frame_reader::mode::lf;
      CHECK(m == std::vector<std::string>{lf ? "<1>hello" : "hello", big.substr(0, 100), lf ? "<3>abc" : "abc",
                                          std::string(100, 'y'), "ok"});
      CHECK(cut == std::vector<bool>{false, true, false, true, false});
      CHECK_FALSE(r.mid_frame());
      CHECK(most <= 100 + 15);  // never more than the maximum (and the string's own slack)
      CHECK(r.buffered() <= 256);  // what is kept between messages
    }
  }
}

TEST_CASE("the frame reader gives a long message's buffer back once it is out") {
  syslog_frame_reader r(syslog_frame_reader::mode::octet_counting, 64 * 1024);
  const std::string body(60000, 'z');
  const std::string frame = std::to_string(body.size()) + " " + body;
  std::size_t n = 0;
  CHECK(r.feed(std::string_view(frame).substr(0, 30000), [&](std::string_view) { ++n; }));
  CHECK(r.buffered() >= 29990);
  CHECK(r.buffered() <= body.size());  // grows only as far as the frame needs
  CHECK(r.feed(std::string_view(frame).substr(30000), [&](std::string_view m) {
    ++n;
    CHECK(m == body);
  }));
  CHECK(n == 1);
  CHECK(r.buffered() <= 15);
}

// An in-process receiver: a net::server whose connections' frames are
// collected, in order.
struct receiver {
  loop& l;
  net::server srv;
  std::vector<std::string> messages;
  std::size_t connections = 0;
  std::vector<net::socket*> open;
  std::vector<std::unique_ptr<syslog_frame_reader>> readers;

  explicit receiver(loop& lp) : l(lp), srv(opts(lp)) {
    srv.on_connection([this](net::socket& s) {
      ++connections;
      open.push_back(&s);
      readers.push_back(std::make_unique<syslog_frame_reader>(syslog_frame_reader::mode::automatic, 1 << 20));
      auto* r = readers.back().get();
      s.on(event::data, [this, r](std::string_view c) {
        REQUIRE(r->feed(c, [this](std::string_view m) { messages.emplace_back(m); }));
      });
      s.on(event::close, [this, &s] { std::erase(open, &s); });
    });
  }
  static net::server_options opts(loop& lp) {
    net::server_options o;
    o.event_loop = &lp;
    return o;
  }
  std::uint16_t port() const { return srv.address()->port; }
};

syslog_options sink_options(loop& l) {
  syslog_options o;
  o.header = test_header();
  o.reconnect_min = 5ms;
  o.reconnect_max = 40ms;
  o.stream.event_loop = &l;
  return o;
}

std::string seq(int i) { return "message " + std::to_string(i) + " with some text"; }

TEST_CASE("N messages arrive in order over TCP, each octet-counted, an inner newline kept") {
  loop l;
  receiver rx(l);
  rx.srv.listen(0, "127.0.0.1");
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = sink_options(l);
  o.port = rx.port();
  auto w = make_syslog_writable(o);
  const int n = 5000;
  int callbacks = 0, errors = 0;
  for (int i = 0; i < n; ++i)
    w->write(i == 7 ? std::string("two\nlines") : seq(i), [&](std::error_code ec) { ++callbacks, errors += bool(ec); });
  bool ended = false;
  std::error_code end_ec;
  w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
  REQUIRE(spin(l, [&] { return ended && rx.messages.size() == std::size_t(n); }));
  CHECK_FALSE(end_ec);
  CHECK(callbacks == n);
  CHECK(errors == 0);
  CHECK(w->sent() == std::size_t(n));
  CHECK(w->dropped() == 0);
  CHECK(w->reconnects() == 0);
  for (int i = 0; i < n; ++i) REQUIRE(body_of(rx.messages[i]) == (i == 7 ? std::string("two\nlines") : seq(i)));
}

TEST_CASE("messages go over a Unix stream socket, LF-framed when asked") {
  temp_dir dir;
  loop l;
  receiver rx(l);
  const std::string path = dir.file("log.sock");
  rx.srv.listen(std::string_view(path));
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = sink_options(l);
  o.unix_path = path;
  o.framing = syslog_framing::lf;
  auto w = make_syslog_writable(o);
  for (int i = 0; i < 100; ++i) w->write(seq(i));
  bool ended = false;
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended && rx.messages.size() == 100; }));
  CHECK(body_of(rx.messages[99]) == seq(99));
  CHECK(rx.readers.at(0)->framing() == syslog_frame_reader::mode::lf);
}



TEST_CASE("while the receiver is away messages wait: write() is false past the mark, 'drain' once it is back") {
  loop l;
  auto o = sink_options(l);
  o.port = free_port();
  o.stream.high_water_mark = 10;
  auto w = make_syslog_writable(o);
  int drains = 0, callbacks = 0;
  w->on(event::drain, [&] { ++drains; });
  bool last = true;
  for (int i = 0; i < 20; ++i) last = w->write(seq(i), [&](std::error_code ec) { callbacks += !ec; });
  CHECK_FALSE(last);
  // Several refused connections: still nothing called back.
  spin(l, [] { return false; }, 30);
  CHECK(callbacks == 0);
  CHECK(w->sent() == 0);
  CHECK_FALSE(w->connected());

  receiver rx(l);
  rx.srv.listen(o.port, "127.0.0.1");
  REQUIRE(spin(l, [&] { return rx.messages.size() == 20 && drains == 1; }));
  CHECK(callbacks == 20);
  CHECK(w->reconnects() == 0);  // the first connection
  bool ended = false;
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
}

TEST_CASE("a connection the receiver closes is replaced, and later messages arrive on the new one") {
  loop l;
  receiver rx(l);
  rx.srv.listen(0, "127.0.0.1");
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = sink_options(l);
  o.port = rx.port();
  auto w = make_syslog_writable(o);
  int ok = 0;
  for (int i = 0; i < 10; ++i) w->write(seq(i), [&](std::error_code ec) { ok += !ec; });
  REQUIRE(spin(l, [&] { return rx.messages.size() == 10; }));
  REQUIRE(rx.open.size() == 1);
  rx.open[0]->destroy();  // the receiver goes (FIN)
  REQUIRE(spin(l, [&] { return !w->connected(); }));
  for (int i = 10; i < 20; ++i) w->write(seq(i), [&](std::error_code ec) { ok += !ec; });
  REQUIRE(spin(l, [&] { return w->reconnects() == 1 && rx.messages.size() == 20; }));
  CHECK(ok == 20);
  CHECK(rx.connections == 2);
  for (int i = 0; i < 20; ++i) CHECK(body_of(rx.messages[i]) == seq(i));
  bool ended = false;
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
}

TEST_CASE("give_up_after bounds the wait: every message's callback gets the connect error, all counted dropped") {
  loop l;
  auto o = sink_options(l);
  o.port = free_port();
  o.give_up_after = 30ms;
  auto w = make_syslog_writable(o);
  std::vector<std::error_code> cbs;
  for (int i = 0; i < 50; ++i) w->write(seq(i), [&](std::error_code ec) { cbs.push_back(ec); });
  std::error_code stream_err, end_err;
  bool end_called = false;
  w->on(event::error, [&](std::error_code ec) { stream_err = ec; });
  w->end([&](std::error_code ec) { end_called = true, end_err = ec; });
  REQUIRE(spin(l, [&] { return cbs.size() == 50 && end_called && w->closed(); }));
  CHECK(stream_err == std::errc::connection_refused);
  CHECK(end_err);
  for (auto& ec : cbs) CHECK(ec);
  CHECK(w->sent() == 0);
  CHECK(w->dropped() == 50);
}

TEST_CASE("destroy() while messages wait calls each back with ERR_STREAM_DESTROYED and counts them dropped") {
  loop l;
  auto o = sink_options(l);
  o.port = free_port();
  auto w = make_syslog_writable(o);
  int destroyed = 0;
  for (int i = 0; i < 30; ++i)
    w->write(seq(i), [&](std::error_code ec) { destroyed += ec == make_error_code(errc::destroyed); });
  spin(l, [] { return false; }, 5);
  w->destroy();
  REQUIRE(spin(l, [&] { return destroyed == 30; }));
  CHECK(w->dropped() == 30);
}

// ---- against a real rsyslogd

struct rsyslog {
  temp_dir dir;
  std::uint16_t port = free_port();
  pid_t pid = -1;
  std::string out = dir.file("out.log");

  static bool installed() { return ::access("/usr/sbin/rsyslogd", X_OK) == 0; }

  // imptcp on the port; omfile writes each message as received (%rawmsg%),
  // with control characters left as they are.
  void start() {
    std::ofstream conf(dir.file("rsyslog.conf"));
    conf << "global(workDirectory=\"" << dir.path.string() << "\" parser.escapeControlCharactersOnReceive=\"off\")\n"
         << "module(load=\"imptcp\")\n"
         << "template(name=\"raw\" type=\"string\" string=\"%rawmsg%\\n\")\n"
         << "ruleset(name=\"r\") { action(type=\"omfile\" file=\"" << out << "\" template=\"raw\") }\n"
         << "input(type=\"imptcp\" address=\"127.0.0.1\" port=\"" << port << "\" ruleset=\"r\")\n";
    conf.close();
    pid = start_rsyslogd(dir, port);
  }
  void stop() { stop_rsyslogd(pid); }
  ~rsyslog() { stop(); }

  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream in(slurp(out));
    for (std::string line; std::getline(in, line);) v.push_back(line);
    return v;
  }
  // Waits for `n` lines in the output, or until it stops growing (no new
  // line in 100 polls): bounded either way.
  std::vector<std::string> wait_lines(std::size_t n) const {
    std::size_t last = 0;
    for (int still = 0, i = 0; i < 2000 && still < 100; ++i) {
      const std::size_t now = lines().size();
      if (now >= n) break;
      still = now == last ? still + 1 : 0;
      last = now;
      std::this_thread::sleep_for(10ms);
    }
    return lines();
  }
};

TEST_CASE("rsyslog: N messages from the writable arrive as N lines, byte for byte") {
  if (!rsyslog::installed()) {
    MESSAGE("skipped: rsyslogd is not installed (apt-get install rsyslog)");
    return;
  }
  rsyslog rs;
  rs.start();
  loop l;
  auto o = sink_options(l);
  o.port = rs.port;
  auto w = make_syslog_writable(o);
  const int n = 2000;
  for (int i = 0; i < n; ++i) w->write(seq(i) + " \"quoted\" {json:1} \xc3\xa9");
  bool ended = false;
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  const auto lines = rs.wait_lines(n);
  REQUIRE(lines.size() == std::size_t(n));
  for (int i = 0; i < n; ++i) REQUIRE(body_of(lines[i]) == seq(i) + " \"quoted\" {json:1} \xc3\xa9");
  CHECK(w->sent() == std::size_t(n));
}

TEST_CASE("rsyslog stopped and restarted: the writable reconnects, and what is lost is within the window") {
  if (!rsyslog::installed()) {
    MESSAGE("skipped: rsyslogd is not installed (apt-get install rsyslog)");
    return;
  }
  rsyslog rs;
  rs.start();
  loop l;
  auto o = sink_options(l);
  o.port = rs.port;
  o.reconnect_max = 50ms;
  auto w = make_syslog_writable(o);
  int ok = 0, failed = 0;
  auto cb = [&](std::error_code ec) { ec ? ++failed : ++ok; };
  const int before = 500, during = 200, after = 500;
  int i = 0;
  for (; i < before; ++i) w->write(seq(i), cb);
  REQUIRE(spin(l, [&] { return ok == before; }));
  REQUIRE(rs.wait_lines(before).size() == std::size_t(before));

  rs.stop();
  // Written one per turn while rsyslog is gone: those the kernel took
  // before the writable saw the connection end are the loss window.
  for (; i < before + during; ++i) {
    w->write(seq(i), cb);
    spin(l, [] { return false; }, 1);
  }
  CHECK_FALSE(w->connected());
  rs.start();
  for (; i < before + during + after; ++i) w->write(seq(i), cb);
  bool ended = false;
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK(ok == before + during + after);
  CHECK(failed == 0);
  CHECK(w->reconnects() >= 1);

  // Every message at most once, in order; the lost ones were all written
  // while rsyslog was stopped, and fit in the socket buffers' bytes.
  const int total = before + during + after;
  const auto lines = rs.wait_lines(total);
  std::vector<int> got;
  for (auto& line : lines) {
    const std::string b = body_of(line);
    got.push_back(std::stoi(b.substr(8)));
  }
  REQUIRE(std::is_sorted(got.begin(), got.end()));
  REQUIRE(std::adjacent_find(got.begin(), got.end()) == got.end());
  const int lost = total - int(got.size());
  std::set<int> have(got.begin(), got.end());
  for (int k = 0; k < total; ++k)
    if (!have.count(k)) CHECK_MESSAGE((k >= before && k < before + during), "lost message " << k);
  int sndbuf = 0, rcvbuf = 0;
  socklen_t len = sizeof(int);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len);
  ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len);
  ::close(fd);
  const int frame = int(lines.front().size()) + 4;
  MESSAGE("lost " << lost << " of " << total << " messages; window " << (sndbuf + rcvbuf) / frame << " messages");
  CHECK(lost <= (sndbuf + rcvbuf) / frame);
}

}  // namespace
}  // namespace sluice::test
