// RELP: the frame reader and formatter, then the RELP writable over real
// loopback sockets: an in-process receiver (net::server) that answers,
// holds its answers, refuses, drops the connection or sends garbage as a
// test asks; and a real rsyslogd with imrelp, started (and SIGKILLed) by the
// test. Every wait is bounded by a number of turns or polls.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/spool/spool_writable.h"
#include "sluice/syslog/relp_frames.h"
#include "sluice/syslog/relp_writable.h"
#include "support/free_port.h"
#include "support/spin.h"
#include "support/rsyslogd.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

// ---- frames

std::string sample_stream() {
  std::string s;
  append_relp_frame(s, 1, "open", "relp_version=0\nrelp_software=x\ncommands=syslog");
  append_relp_frame(s, 2, "syslog", "<14>1 - h a - - - two\nlines\n");
  append_relp_frame(s, 3, "close", "");
  append_relp_frame(s, 999999999, "rsp", "200 OK");
  append_relp_frame(s, 0, "serverclose", "");
  return s;
}

std::vector<relp_frame> read_in_pieces(std::string_view data, const std::vector<std::size_t>& cuts, std::string* err) {
  relp_frame_reader r;
  std::vector<relp_frame> out;
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    if (!r.feed(data.substr(at, cut - at), [&](const relp_frame& f) { out.push_back(f); })) break;
    at = cut;
  }
  if (at < data.size()) r.feed(data.substr(at), [&](const relp_frame& f) { out.push_back(f); });
  *err = r.error();
  return out;
}

void check_sample(const std::vector<relp_frame>& f) {
  REQUIRE(f.size() == 5);
  CHECK(f[0].txnr == 1);
  CHECK(f[0].command == "open");
  CHECK(f[0].data == "relp_version=0\nrelp_software=x\ncommands=syslog");
  CHECK(f[1].command == "syslog");
  CHECK(f[1].data == "<14>1 - h a - - - two\nlines\n");
  CHECK(f[2].command == "close");
  CHECK(f[2].data.empty());
  CHECK(f[3].txnr == 999999999);
  CHECK(f[3].data == "200 OK");
  CHECK(f[4].txnr == 0);
  CHECK(f[4].command == "serverclose");
}

TEST_CASE("the formatter writes TXNR SP COMMAND SP DATALEN [SP DATA] LF") {
  std::string s;
  append_relp_frame(s, 7, "syslog", "hello");
  append_relp_frame(s, 8, "close", "");
  CHECK(s == "7 syslog 5 hello\n8 close 0\n");
  CHECK(relp_rsp_code("200 OK") == 200);
  CHECK(relp_rsp_code("500 queue full") == 500);
  CHECK(relp_rsp_code("20") == 0);
  CHECK(relp_rsp_code("") == 0);
}

TEST_CASE("the reader gives the same frames however the bytes are cut: every chunk size, every split in two and three") {
  const std::string s = sample_stream();
  std::string err;
  for (std::size_t step = 1; step <= s.size(); ++step) {
    std::vector<std::size_t> cuts;
    for (std::size_t c = step; c < s.size(); c += step) cuts.push_back(c);
    CAPTURE(step);
    check_sample(read_in_pieces(s, cuts, &err));
    CHECK(err.empty());
  }
  for (std::size_t a = 1; a < s.size(); ++a)
    for (std::size_t b = a; b < s.size(); b += 7) {
      CAPTURE(a);
      CAPTURE(b);
      check_sample(read_in_pieces(s, {a, b}, &err));
      REQUIRE(err.empty());
    }
}

TEST_CASE("the reader refuses bad frames with a reason, and takes nothing after") {
  struct bad {
    std::string bytes;
    std::string reason;
  };
  const std::vector<bad> cases = {
      {"x open 0\n", "not a transaction number digit"},
      {" open 0\n", "not a transaction number digit"},
      {"1234567890 rsp 0\n", "longer than 9 digits"},
      {"12x rsp 0\n", "no space after the transaction number"},
      {"1  rsp 0\n", "empty command"},
      {"1 r$p 0\n", "not a letter"},
      {"1 " + std::string(33, 'a') + " 0\n", "command longer than 32"},
      {"1 rsp x\n", "no DATALEN"},
      {"1 rsp 1234567890 x", "DATALEN"},
      {"1 rsp 0 \n", "DATALEN 0 not followed by LF"},
      {"1 rsp 3\n", "no space after DATALEN"},
      {"1 rsp 3 abcX", "not ended by LF"},
      {"1 syslog 200000 ", "over the maximum of 131072"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.bytes);
    // Byte by byte and at once: the same verdict.
    for (std::size_t step : {std::size_t(1), c.bytes.size()}) {
      relp_frame_reader r;
      int frames = 0;
      bool ok = true;
      for (std::size_t i = 0; i < c.bytes.size() && ok; i += step) ok = r.feed(std::string_view(c.bytes).substr(i, step), [&](const relp_frame&) { ++frames; });
      CHECK_FALSE(ok);
      CHECK(frames == 0);
      CHECK(r.error().find(c.reason) != std::string::npos);
      CHECK_FALSE(r.feed("1 rsp 0\n", [&](const relp_frame&) { ++frames; }));
      CHECK(frames == 0);
    }
  }
  // A frame that fits, then one that is too long: the first is read.
  relp_frame_reader r(10);
  int frames = 0;
  CHECK_FALSE(r.feed("1 syslog 10 0123456789\n2 syslog 11 ", [&](const relp_frame&) { ++frames; }));
  CHECK(frames == 1);
  CHECK(r.error().find("over the maximum of 10") != std::string::npos);
}

// ---- an in-process receiver

struct relp_receiver {
  struct conn {
    net::socket* s;
    relp_frame_reader reader;
    std::uint32_t expect = 1;  // librelp's server expects txnrs 1, 2, 3 ...
    bool opened = false;
    std::vector<std::uint32_t> held;
    std::vector<std::string> messages;
  };
  loop& l;
  net::server srv;
  std::vector<std::unique_ptr<conn>> conns;
  std::vector<std::string> messages;  // every syslog frame's data, as received
  std::vector<std::string> problems;  // what a RELP receiver would refuse
  std::vector<std::string> commands;
  bool hold = false;                  // keep answers until release()
  bool hold_first = false;            // the first connection never answers a message
  std::string garbage_on_open;        // answer the first open with this
  std::string refuse_marker;          // answer "500" to a message that ends so
  bool wrong_txnr = false;            // answer the first connection's first message with another txnr
  bool ignore_close = false;          // never answer close
  std::size_t serverclose_after = 0;  // the first connection: serverclose after answering this many

  explicit relp_receiver(loop& lp) : l(lp), srv(opts(lp)) {
    srv.on_connection([this](net::socket& s) {
      conns.push_back(std::make_unique<conn>());
      conn* c = conns.back().get();
      c->s = &s;
      s.on(event::data, [this, c](std::string_view b) {
        if (!c->reader.feed(b, [&](const relp_frame& f) { on_frame(*c, f); })) problems.push_back(c->reader.error());
      });
      s.on(event::end, [c] { c->s->end(); });
      s.on(event::close, [c] { c->s = nullptr; });
    });
    srv.listen(0, "127.0.0.1");
  }
  static net::server_options opts(loop& lp) {
    net::server_options o;
    o.event_loop = &lp;
    return o;
  }
  std::uint16_t port() const { return srv.address()->port; }

  void answer(conn& c, std::uint32_t txnr, std::string_view text) {
    std::string out;
    append_relp_frame(out, txnr, "rsp", text);
    c.s->write(std::move(out));
  }

  void on_frame(conn& c, const relp_frame& f) {
    if (!c.s) return;
    commands.push_back(f.command);
    if (f.txnr != c.expect) problems.push_back("txnr " + std::to_string(f.txnr) + ", expected " + std::to_string(c.expect));
    c.expect = f.txnr + 1;
    if (f.command == "open") {
      if (f.data.find("relp_version=0") == std::string::npos || f.data.find("commands=syslog") == std::string::npos)
        problems.push_back("open without relp_version=0, commands=syslog: " + f.data);
      if (!garbage_on_open.empty() && conns.size() == 1) {
        c.s->write(std::string(garbage_on_open));
        return;
      }
      c.opened = true;
      answer(c, f.txnr, "200 OK\nrelp_version=0\ncommands=syslog");
      return;
    }
    if (!c.opened) problems.push_back(f.command + " before open");
    if (f.command == "close") {
      if (!ignore_close) answer(c, f.txnr, "200 OK");
      return;
    }
    if (f.command != "syslog") {
      problems.push_back("command " + f.command);
      return;
    }
    messages.push_back(f.data);
    c.messages.push_back(f.data);
    if (!refuse_marker.empty() && f.data.ends_with(refuse_marker)) {
      answer(c, f.txnr, "500 not today");
      return;
    }
    if (serverclose_after != 0 && conns.size() == 1 && c.messages.size() >= serverclose_after) {
      if (c.messages.size() == serverclose_after) {
        answer(c, f.txnr, "200 OK");
        c.s->write(std::string("0 serverclose 0\n"));
        c.s->end();
      }
      return;
    }
    if (wrong_txnr && conns.size() == 1 && c.messages.size() == 1)
      answer(c, f.txnr + 1000, "200 OK");
    else if (hold || (hold_first && conns.size() == 1))
      c.held.push_back(f.txnr);
    else
      answer(c, f.txnr, "200 OK");
  }

  // Answers the first `n` held transactions of the last connection.
  void release(std::size_t n) {
    conn& c = *conns.back();
    n = std::min(n, c.held.size());
    for (std::size_t i = 0; i < n; ++i) answer(c, c.held[i], "200 OK");
    c.held.erase(c.held.begin(), c.held.begin() + n);
  }
};

relp_options test_options(loop& l, std::uint16_t port) {
  relp_options o;
  o.port = port;
  o.header = {.facility = 1, .severity = 6, .hostname = "host", .app_name = "app", .procid = "42", .msgid = "ID"};
  o.reconnect_min = 5ms;
  o.reconnect_max = 40ms;
  o.stream.event_loop = &l;
  return o;
}

std::string seq(int i) { return "message " + std::to_string(i) + " with some text"; }

const std::regex header_re(R"(<14>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z host app 42 ID - )");

// The message with its header cut off, after checking the header's shape.
std::string body_of(const std::string& m) {
  std::smatch h;
  REQUIRE_MESSAGE(std::regex_search(m, h, header_re, std::regex_constants::match_continuous), m);
  return m.substr(h.length(0));
}

TEST_CASE("every message is a transaction the receiver answers; callbacks once each, then close and its answer") {
  loop l;
  relp_receiver rx(l);
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  const int n = 3000;
  int callbacks = 0, errors = 0;
  int ended = 0;
  std::error_code end_ec;
  auto w = make_relp_writable(test_options(l, rx.port()));
  for (int i = 0; i < n; ++i) w->write(i == 7 ? std::string("two\nlines") : seq(i), [&](std::error_code ec) { ++callbacks, errors += bool(ec); });
  w->end([&](std::error_code ec) { ++ended, end_ec = ec; });
  REQUIRE(spin(l, [&] { return ended == 1 && !rx.conns.back()->s; }));
  CHECK_FALSE(end_ec);
  CHECK(callbacks == n);
  CHECK(errors == 0);
  CHECK(w->acked() == std::size_t(n));
  CHECK(w->resent() == 0);
  CHECK(w->dropped() == 0);
  CHECK(w->in_flight() == 0);
  CHECK(rx.problems.empty());
  REQUIRE(rx.messages.size() == std::size_t(n));
  for (int i = 0; i < n; ++i) REQUIRE(body_of(rx.messages[i]) == (i == 7 ? std::string("two\nlines") : seq(i)));
  REQUIRE(rx.commands.size() == std::size_t(n) + 2);
  CHECK(rx.commands.front() == "open");
  CHECK(rx.commands.back() == "close");
}

TEST_CASE("the window bounds what is unanswered; a connection dropped mid-window: the unanswered are sent again, in order") {
  loop l;
  relp_receiver rx(l);
  rx.hold = true;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = test_options(l, rx.port());
  o.window = 256;
  const int n = 1000;
  std::vector<int> calls(n, 0);
  int errors = 0, drains = 0, refused_writes = 0;
  bool ended = false;
  auto w = make_relp_writable(o);
  w->on(event::drain, [&] { ++drains; });
  for (int i = 0; i < n; ++i) refused_writes += !w->write(seq(i), [&, i](std::error_code ec) { ++calls[i], errors += bool(ec); });
  // 256 in the window, the 257th held by the sink for room, 255 more in
  // the stream up to its mark (the window): false from the 512th write on.
  CHECK(refused_writes == n - 511);
  // The window fills and stays full while nothing is answered.
  REQUIRE(spin(l, [&] { return rx.messages.size() == 256; }));
  spin(l, [&] { return rx.messages.size() > 256; }, 50);
  CHECK(rx.messages.size() == 256);
  CHECK(w->in_flight() == 256);
  // 100 answers make room for 100 more.
  rx.release(100);
  REQUIRE(spin(l, [&] { return rx.messages.size() == 356; }));
  spin(l, [&] { return rx.messages.size() > 356; }, 50);
  CHECK(rx.messages.size() == 356);
  CHECK(w->acked() == 100);
  CHECK(w->in_flight() == 256);
  // The receiver drops the connection with 256 unanswered (100 .. 355);
  // the next one answers at once.
  rx.hold = false;
  rx.conns.back()->s->destroy();
  // 'drain' once all are answered on the next session (none after end(), as in Node).
  REQUIRE(spin(l, [&] { return drains == 1; }));
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK(rx.conns.size() == 2);
  CHECK(w->reconnects() == 1);
  CHECK(w->resent() == 256);
  CHECK(w->acked() == std::size_t(n));
  CHECK(w->dropped() == 0);
  CHECK(errors == 0);
  CHECK(drains == 1);
  for (int i = 0; i < n; ++i) REQUIRE(calls[i] == 1);
  CHECK(rx.problems.empty());
  // The second session starts with the first unanswered and goes on in order.
  const auto& second = rx.conns[1]->messages;
  REQUIRE(second.size() == std::size_t(n - 100));
  for (std::size_t i = 0; i < second.size(); ++i) REQUIRE(body_of(second[i]) == seq(int(i) + 100));
}

TEST_CASE("a message answered 500: its callback alone hears which, counted; the stream goes on") {
  loop l;
  relp_receiver rx(l);
  rx.refuse_marker = "refuse me";
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  std::error_code stream_error;
  std::vector<std::error_code> ecs(6);
  std::vector<int> calls(6, 0);
  bool ended = false;
  auto w = make_relp_writable(test_options(l, rx.port()));
  w->on(event::error, [&](std::error_code ec) { stream_error = ec; });
  for (int i = 0; i < 5; ++i) w->write(i == 2 ? std::string("refuse me") : seq(i), [&, i](std::error_code ec) { ++calls[i], ecs[i] = ec; });
  REQUIRE(spin(l, [&] { return calls[4] == 1; }));
  // Still writable: a message after the refusal is delivered too.
  CHECK(w->write(seq(5), [&](std::error_code ec) { ++calls[5], ecs[5] = ec; }));
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  for (int i = 0; i < 6; ++i) CHECK(calls[i] == 1);
  for (int i = 0; i < 6; ++i)
    if (i != 2) CHECK_FALSE(ecs[i]);
  CHECK(ecs[2].message() == "RELP: the receiver refused a message: rsp 500 not today");
  // A relay tells it by is_refusal() (it answers its sender 500 for it).
  CHECK(relp_writable::is_refusal(ecs[2]));
  CHECK_FALSE(relp_writable::is_refusal(ecs[0]));
  CHECK_FALSE(stream_error);
  CHECK(w->refused() == 1);
  CHECK(w->acked() == 5);
  CHECK(w->dropped() == 1);
  // The receiver saw them all, in order: the refused one is its gap.
  REQUIRE(rx.messages.size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(body_of(rx.messages[i]) == (i == 2 ? std::string("refuse me") : seq(i)));
}

TEST_CASE("behind a spool, a message answered 500 is dropped from the spool, counted, said; the rest go on and the spool drains") {
  loop l;
  temp_dir d;
  relp_receiver rx(l);
  rx.refuse_marker = "refuse me";
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  spool_options so;
  so.dir = d.file("spool");
  so.stream.event_loop = &l;
  std::vector<std::error_code> said;
  so.on_refused = [&](std::error_code ec) { said.push_back(ec); };
  {
    auto relp = make_relp_writable(test_options(l, rx.port()));
    relp_writable* r = relp.get();
    auto w = make_spool_writable(std::move(relp), so);
    std::error_code stream_error;
    w->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    std::vector<int> calls(10, 0);
    for (int i = 0; i < 10; ++i)
      w->write(i == 2 ? std::string("refuse me") : seq(i), [&, i](std::error_code ec) { calls[i] += ec ? 100 : 1; });
    bool ended = false;
    std::error_code end_ec;
    w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
    REQUIRE(spin(l, [&] { return ended; }));
    CHECK_FALSE(end_ec);
    CHECK_FALSE(stream_error);
    for (int c : calls) CHECK(c == 1);  // each in the spool
    REQUIRE(said.size() == 1);
    CHECK(said[0].message() == "RELP: the receiver refused a message: rsp 500 not today");
    // The spool's counts are the receiver's: 9 answered 200, 1 refused.
    CHECK(w->sent_from_spool() == 10);
    CHECK(w->acked() == 9);
    CHECK(w->refused() == 1);
    CHECK(r->acked() == 9);
    CHECK(r->refused() == 1);
    REQUIRE(rx.messages.size() == 10);
    for (int i = 0; i < 10; ++i) CHECK(body_of(rx.messages[i]) == (i == 2 ? std::string("refuse me") : seq(i)));
  }
  // The next run on DIR has nothing to send: the refused message is not
  // sent again, nor what came after it.
  {
    auto w = make_spool_writable(make_relp_writable(test_options(l, rx.port())), so);
    bool ended = false;
    std::error_code end_ec;
    w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
    REQUIRE(spin(l, [&] { return ended; }));
    CHECK_FALSE(end_ec);
    CHECK(w->sent_from_spool() == 0);
  }
  CHECK(rx.messages.size() == 10);
  CHECK(said.size() == 1);
}

// spool_options::is_refusal: a failure it says is no refusal (sluice-log's
// kafka:// says so of a delivery that timed out while the brokers were away)
// fails the spool as the downstream's own failure would: the record and
// those after it stay in DIR, and the next run sends them.
TEST_CASE("behind a spool, a failure is_refusal says is not a refusal keeps its record for the next run") {
  loop l;
  temp_dir d;
  relp_receiver rx(l);
  rx.refuse_marker = "refuse me";
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  spool_options so;
  so.dir = d.file("spool");
  so.stream.event_loop = &l;
  int said = 0;
  so.on_refused = [&](std::error_code) { ++said; };
  so.is_refusal = [](std::error_code) { return false; };
  {
    auto w = make_spool_writable(make_relp_writable(test_options(l, rx.port())), so);
    std::error_code stream_error;
    w->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    std::vector<int> calls(5, 0);
    for (int i = 0; i < 5; ++i)
      w->write(i == 2 ? std::string("refuse me") : seq(i), [&, i](std::error_code ec) { calls[i] += ec ? 100 : 1; });
    bool ended = false;
    std::error_code end_ec;
    w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
    REQUIRE(spin(l, [&] { return ended; }));
    CHECK(end_ec);  // the spool failed: not everything was acknowledged
    for (int c : calls) CHECK(c == 1);  // each in the spool
    CHECK(said == 0);
    CHECK(w->refused() == 0);
    CHECK(w->acked() == 2);
  }
  // The next run sends the record again, and those after it, in order; the
  // receiver now takes it.
  rx.refuse_marker = "never";
  const std::size_t before = rx.messages.size();
  {
    auto w = make_spool_writable(make_relp_writable(test_options(l, rx.port())), so);
    bool ended = false;
    std::error_code end_ec;
    w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
    REQUIRE(spin(l, [&] { return ended; }));
    CHECK_FALSE(end_ec);
    CHECK(w->sent_from_spool() == 3);
    CHECK(w->acked() == 3);
  }
  REQUIRE(rx.messages.size() == before + 3);
  CHECK(body_of(rx.messages[before]) == "refuse me");
  CHECK(body_of(rx.messages[before + 1]) == seq(3));
  CHECK(body_of(rx.messages[before + 2]) == seq(4));
}

TEST_CASE("the window slides: messages written later go out while older ones are unanswered; a break resends in order") {
  loop l;
  relp_receiver rx(l);
  rx.hold = true;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = test_options(l, rx.port());
  o.window = 8;
  const int n = 20;
  std::vector<int> calls(n, 0);
  int errors = 0;
  bool ended = false;
  auto w = make_relp_writable(o);
  auto write = [&](int i) { w->write(seq(i), [&, i](std::error_code ec) { ++calls[i], errors += bool(ec); }); };
  for (int i = 0; i < 8; ++i) write(i);
  REQUIRE(spin(l, [&] { return rx.messages.size() == 8; }));
  // Three answers: their callbacks come now, while five are unanswered.
  rx.release(3);
  REQUIRE(spin(l, [&] { return calls[2] == 1; }));
  CHECK(calls[0] == 1);
  CHECK(calls[3] == 0);
  CHECK(w->in_flight() == 5);
  // A steady producer's next messages go at once, beside the five.
  for (int i = 8; i < 11; ++i) write(i);
  REQUIRE(spin(l, [&] { return rx.messages.size() == 11; }));
  CHECK(w->in_flight() == 8);
  CHECK(rx.conns.back()->held.size() == 8);
  // The window is full: the next waits until an answer makes room.
  write(11);
  spin(l, [&] { return rx.messages.size() > 11; }, 40);
  CHECK(rx.messages.size() == 11);
  rx.release(1);
  REQUIRE(spin(l, [&] { return rx.messages.size() == 12; }));
  // The receiver drops the session with 3 .. 11 unanswered (two writes'
  // worth): the next session starts with 4, the oldest, then the rest.
  rx.conns.back()->s->destroy();
  REQUIRE(spin(l, [&] { return rx.conns.size() == 2 && rx.conns[1]->messages.size() == 8; }));
  for (int i = 12; i < n; ++i) write(i);
  rx.hold = false;
  rx.release(8);
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK(errors == 0);
  for (int i = 0; i < n; ++i) REQUIRE(calls[i] == 1);
  CHECK(w->resent() == 8);
  CHECK(w->acked() == std::size_t(n));
  CHECK(rx.problems.empty());
  const auto& second = rx.conns[1]->messages;
  REQUIRE(second.size() == std::size_t(n - 4));
  for (std::size_t i = 0; i < second.size(); ++i) REQUIRE(body_of(second[i]) == seq(int(i) + 4));
}

TEST_CASE("answer_timeout: a receiver that stops answering loses the session; the next one gets the messages again") {
  loop l;
  relp_receiver rx(l);
  rx.hold_first = true;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = test_options(l, rx.port());
  o.answer_timeout = 100ms * time_scale();
  std::vector<int> calls(10, 0);
  int errors = 0;
  bool ended = false;
  auto w = make_relp_writable(o);
  for (int i = 0; i < 10; ++i) w->write(seq(i), [&, i](std::error_code ec) { ++calls[i], errors += bool(ec); });
  REQUIRE(spin(l, [&] { return rx.messages.size() == 10; }));
  const auto t0 = std::chrono::steady_clock::now();
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK(std::chrono::steady_clock::now() - t0 >= 90ms * time_scale());
  CHECK(w->answer_timeouts() == 1);
  CHECK(w->reconnects() == 1);
  CHECK(w->resent() == 10);
  CHECK(errors == 0);
  for (int i = 0; i < 10; ++i) CHECK(calls[i] == 1);
  REQUIRE(rx.conns.size() == 2);
  REQUIRE(rx.conns[1]->messages.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(body_of(rx.conns[1]->messages[i]) == seq(i));

  // Unset: a receiver that never answers holds the window, and nothing
  // times out.
  relp_receiver quiet(l);
  quiet.hold = true;
  REQUIRE(spin(l, [&] { return quiet.srv.listening(); }));
  auto q = test_options(l, quiet.port());
  q.answer_timeout.reset();
  int quiet_calls = 0;
  auto held = make_relp_writable(q);
  held->write(seq(0), [&](std::error_code) { ++quiet_calls; });
  spin(l, [&] { return false; }, 60);
  CHECK(held->answer_timeouts() == 0);
  CHECK(quiet.conns.size() == 1);
  CHECK(quiet_calls == 0);
  held->destroy();
  REQUIRE(spin(l, [&] { return quiet_calls == 1; }));
}

TEST_CASE("a receiver that answers open with garbage loses the session; the next one carries the messages") {
  loop l;
  relp_receiver rx(l);
  rx.garbage_on_open = "this is not RELP\n";
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  int callbacks = 0, errors = 0;
  bool ended = false;
  auto w = make_relp_writable(test_options(l, rx.port()));
  for (int i = 0; i < 10; ++i) w->write(seq(i), [&](std::error_code ec) { ++callbacks, errors += bool(ec); });
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK(rx.conns.size() == 2);
  CHECK(rx.conns[0]->messages.empty());
  CHECK(rx.conns[1]->messages.size() == 10);
  CHECK(callbacks == 10);
  CHECK(errors == 0);
  CHECK(w->reconnects() == 0);  // the first session never opened
}

TEST_CASE("a rsp for a transaction that is not open closes the session; its unanswered messages go again on the next") {
  loop l;
  relp_receiver rx(l);
  rx.wrong_txnr = true;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  std::vector<int> calls(20, 0);
  int errors = 0;
  bool ended = false;
  auto w = make_relp_writable(test_options(l, rx.port()));
  for (int i = 0; i < 20; ++i) w->write(seq(i), [&, i](std::error_code ec) { ++calls[i], errors += bool(ec); });
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  REQUIRE(rx.conns.size() == 2);
  CHECK(errors == 0);
  for (int i = 0; i < 20; ++i) CHECK(calls[i] == 1);
  CHECK(w->acked() == 20);
  // The first session's answers that came before the bad one stand: the
  // second starts at the first message not answered.
  const auto& second = rx.conns[1]->messages;
  REQUIRE_FALSE(second.empty());
  CHECK(body_of(second.front()) == seq(20 - int(second.size())));
  CHECK(w->resent() == second.size());
  for (std::size_t i = 0; i < second.size(); ++i) CHECK(body_of(second[i]) == seq(20 - int(second.size()) + int(i)));
}

TEST_CASE("serverclose: the session is over; what it did not answer goes on the next, in order") {
  loop l;
  relp_receiver rx(l);
  rx.serverclose_after = 5;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  std::vector<int> calls(50, 0);
  int errors = 0;
  bool ended = false;
  auto w = make_relp_writable(test_options(l, rx.port()));
  for (int i = 0; i < 50; ++i) w->write(seq(i), [&, i](std::error_code ec) { ++calls[i], errors += bool(ec); });
  w->end([&](std::error_code ec) { ended = !ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  REQUIRE(rx.conns.size() == 2);
  CHECK(errors == 0);
  for (int i = 0; i < 50; ++i) CHECK(calls[i] == 1);
  CHECK(w->acked() == 50);
  CHECK(w->reconnects() == 1);
  const auto& second = rx.conns[1]->messages;
  REQUIRE(second.size() == 45);
  for (std::size_t i = 0; i < second.size(); ++i) CHECK(body_of(second[i]) == seq(5 + int(i)));
  CHECK(w->resent() == rx.conns[0]->messages.size() - 5);
  CHECK(rx.problems.empty());
}

TEST_CASE("end(): a close never answered ends the session after a bounded wait; end() with nothing written ends at once") {
  loop l;
  relp_receiver rx(l);
  rx.ignore_close = true;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  int callbacks = 0, errors = 0, ended = 0;
  std::error_code end_ec;
  auto w = make_relp_writable(test_options(l, rx.port()));
  for (int i = 0; i < 3; ++i) w->write(seq(i), [&](std::error_code ec) { ++callbacks, errors += bool(ec); });
  w->end([&](std::error_code ec) { ++ended, end_ec = ec; });
  REQUIRE(spin(l, [&] { return ended == 1; }, 8000));  // close_wait is 5 s
  CHECK_FALSE(end_ec);
  CHECK(callbacks == 3);
  CHECK(errors == 0);
  CHECK(rx.commands.back() == "close");
  spin(l, [&] { return false; }, 20);
  CHECK(ended == 1);

  int ended2 = 0;
  auto idle = make_relp_writable(test_options(l, rx.port()));
  idle->end([&](std::error_code ec) { ended2 += 1 + 10 * bool(ec); });
  REQUIRE(spin(l, [&] { return ended2 != 0; }));
  spin(l, [&] { return false; }, 20);
  CHECK(ended2 == 1);
}

TEST_CASE("destroy() with transactions unanswered: each callback hears ERR_STREAM_DESTROYED, counted dropped") {
  loop l;
  relp_receiver rx(l);
  rx.hold = true;
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  std::vector<std::error_code> ecs;
  auto w = make_relp_writable(test_options(l, rx.port()));
  for (int i = 0; i < 10; ++i) w->write(seq(i), [&](std::error_code ec) { ecs.push_back(ec); });
  REQUIRE(spin(l, [&] { return rx.messages.size() == 10; }));
  w->destroy();
  REQUIRE(spin(l, [&] { return ecs.size() == 10; }));
  spin(l, [&] { return false; }, 20);
  CHECK(ecs.size() == 10);
  for (const auto& ec : ecs) CHECK(ec == errc::destroyed);
  for (const auto& ec : ecs) CHECK_FALSE(relp_writable::is_refusal(ec));
  CHECK(w->dropped() == 10);
  CHECK(w->acked() == 0);
}


TEST_CASE("give_up_after with no receiver: every callback hears the connect error, counted dropped") {
  loop l;
  auto o = test_options(l, free_port());
  o.give_up_after = 100ms;
  std::vector<std::error_code> ecs;
  auto w = make_relp_writable(o);
  w->on(event::error, [](std::error_code) {});
  for (int i = 0; i < 3; ++i) w->write(seq(i), [&](std::error_code ec) { ecs.push_back(ec); });
  REQUIRE(spin(l, [&] { return ecs.size() == 3; }));
  for (const auto& ec : ecs) CHECK(ec == std::errc::connection_refused);
  for (const auto& ec : ecs) CHECK_FALSE(relp_writable::is_refusal(ec));
  // Nor another user_error, though it shares the category.
  CHECK_FALSE(relp_writable::is_refusal(user_error("RELP: the receiver closed the session (serverclose)")));
  CHECK(w->dropped() == 3);
}

TEST_CASE("as_is: each chunk is sent as it is, with no header of the writable's; cut to max_message like any") {
  loop l;
  relp_receiver rx(l);
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  auto o = test_options(l, rx.port());
  o.as_is = true;
  o.max_message = 40;
  int callbacks = 0, ended = 0;
  auto w = make_relp_writable(o);
  const std::string relayed = "<13>1 2026-12-01T00:00:00Z h a - - - relayed";
  w->write(relayed, [&](std::error_code ec) { callbacks += !ec; });
  w->write(std::string(50, 'x'), [&](std::error_code ec) { callbacks += !ec; });
  w->end([&](std::error_code) { ++ended; });
  REQUIRE(spin(l, [&] { return ended == 1; }));
  CHECK(callbacks == 2);
  REQUIRE(rx.messages.size() == 2);
  CHECK(rx.messages[0] == relayed.substr(0, 40));
  CHECK(rx.messages[1] == std::string(40, 'x'));
  CHECK(w->truncated() == 2);
}

TEST_CASE("alternates: a receiver that refuses connections is passed over for the next, which gets every message") {
  loop l;
  relp_receiver rx(l);
  REQUIRE(spin(l, [&] { return rx.srv.listening(); }));
  // A port that is bound and not listening: every connect to it is refused.
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(held >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(held, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(held, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  auto o = test_options(l, ntohs(a.sin_port));
  o.alternates = {{"127.0.0.1", rx.port()}};
  int callbacks = 0, ended = 0;
  auto w = make_relp_writable(o);
  for (int i = 0; i < 100; ++i) w->write(seq(i), [&](std::error_code ec) { callbacks += !ec; });
  w->end([&](std::error_code) { ++ended; });
  REQUIRE(spin(l, [&] { return ended == 1; }));
  ::close(held);
  CHECK(callbacks == 100);
  REQUIRE(rx.messages.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(body_of(rx.messages[i]) == seq(i));
}

// ---- against a real rsyslogd with imrelp

struct rsyslog {
  temp_dir dir;
  std::uint16_t port = free_port();
  pid_t pid = -1;
  std::string out = dir.file("out.log");

  static bool installed() { return rsyslogd_has_imrelp(); }

  // The raw message, as the writable framed it; control characters kept.
  void start() {
    write_imrelp_conf(dir, port, out, "rawmsg", " parser.escapeControlCharactersOnReceive=\"off\"");
    pid = start_rsyslogd(dir, port);
  }
  void stop(int sig = SIGTERM) { stop_rsyslogd(pid, sig); }
  ~rsyslog() { stop(); }

  std::vector<std::string> bodies() const {
    std::vector<std::string> v;
    std::istringstream in(slurp(out));
    for (std::string line; std::getline(in, line);) v.push_back(body_of(line));
    return v;
  }
};

// Writes n messages, honouring write() == false, until every one is
// answered and end() called back; `at(acked)` runs each turn.
void stream_into(loop& l, relp_writable& w, int n, std::vector<int>& calls, int& errors, const std::function<void()>& each_turn) {
  int next = 0;
  bool end_called = false;
  // Shared with end()'s callback, which may outlive this frame if a wait fails.
  auto end_state = std::make_shared<std::pair<bool, std::error_code>>(false, std::error_code{});
  REQUIRE(spin(l, [&] {
    each_turn();
    while (next < n && !w.writable_need_drain()) {
      const int i = next++;
      w.write(seq(i), [&, i](std::error_code ec) { ++calls[i], errors += bool(ec); });
    }
    if (next == n && !end_called) {
      end_called = true;
      w.end([end_state](std::error_code ec) { *end_state = {true, ec}; });
    }
    return end_state->first;
  }, 60000));
  CHECK_FALSE(end_state->second);
}

TEST_CASE("rsyslog imrelp: 10,000 messages, every one in its file once, in order") {
  if (!rsyslog::installed()) {
    MESSAGE("skipped: rsyslogd with imrelp is not installed (apt-get install rsyslog rsyslog-relp)");
    return;
  }
  rsyslog rs;
  rs.start();
  loop l;
  const int n = 10000;
  std::vector<int> calls(n, 0);
  int errors = 0;
  auto w = make_relp_writable(test_options(l, rs.port));
  stream_into(l, *w, n, calls, errors, [] {});
  CHECK(errors == 0);
  for (int i = 0; i < n; ++i) REQUIRE(calls[i] == 1);
  CHECK(w->acked() == std::size_t(n));
  // Answered means written (direct queue): the file holds them now.
  const auto got = rs.bodies();
  REQUIRE(got.size() == std::size_t(n));
  for (int i = 0; i < n; ++i) REQUIRE(got[i] == seq(i));
}

TEST_CASE("rsyslog imrelp SIGKILLed and restarted mid-stream: nothing lost, duplicates within the window, counted") {
  if (!rsyslog::installed()) {
    MESSAGE("skipped: rsyslogd with imrelp is not installed (apt-get install rsyslog rsyslog-relp)");
    return;
  }
  rsyslog rs;
  rs.start();
  loop l;
  auto o = test_options(l, rs.port);
  // Batches of up to 4096 from the stream, 512 of them unanswered at a
  // time: the window slides within a batch as answers come.
  o.window = 512;
  o.stream.high_water_mark = 4096;
  const int n = 10000;
  std::vector<int> calls(n, 0);
  int errors = 0, kills = 0;
  auto w = make_relp_writable(o);
  stream_into(l, *w, n, calls, errors, [&] {
    // Mid-window: rsyslog is answering, some of the unanswered maybe
    // written by it already (the duplicates to come).
    const bool mid = w->in_flight() > 0;
    if (mid && ((kills == 0 && w->acked() >= 3000) || (kills == 1 && w->acked() >= 6500))) {
      ++kills;
      rs.stop(SIGKILL);
      rs.start();
    }
  });
  CHECK(kills == 2);
  CHECK(errors == 0);
  for (int i = 0; i < n; ++i) REQUIRE(calls[i] == 1);
  CHECK(w->acked() == std::size_t(n));
  CHECK(w->reconnects() == 2);
  CHECK(w->resent() <= 2 * o.window);
  // Every message, first seen in order; the rest are duplicates of ones
  // resent, no more than resent() of them.
  const auto got = rs.bodies();
  std::vector<int> seen(n, 0);
  int next_new = 0;
  std::size_t dups = 0;
  for (const auto& b : got) {
    const auto it = std::find(b.begin(), b.end(), ' ');
    REQUIRE(it != b.end());
    const int i = std::stoi(std::string(it + 1, b.end()));
    REQUIRE(i >= 0);
    REQUIRE(i < n);
    REQUIRE(b == seq(i));
    if (seen[i]++ == 0) {
      REQUIRE(i == next_new);
      ++next_new;
    } else {
      ++dups;
    }
  }
  CHECK(next_new == n);
  MESSAGE("duplicates in rsyslog's file: " << dups << ", resent: " << w->resent());
  CHECK(dups <= w->resent());
}

}  // namespace
}  // namespace sluice::test
