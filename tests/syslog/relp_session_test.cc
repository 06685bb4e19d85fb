// relp_session: the receiver's side of a RELP session as a state machine
// over bytes (sluice-logd --listen-relp runs it on its sockets; the tool's
// own test, tests/tools/logd_relp_test.sh, drives it with real senders).
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "sluice/syslog/relp_frames.h"
#include "sluice/syslog/relp_session.h"

using sluice::append_relp_frame;
using sluice::relp_session;

namespace {

std::string frame(std::uint32_t txnr, std::string_view cmd, std::string_view data = {}) {
  std::string s;
  append_relp_frame(s, txnr, cmd, data);
  return s;
}

const std::string open_frame = frame(1, "open", "relp_version=0\nrelp_software=test\ncommands=syslog");

// Feeds `bytes` in pieces of `step` bytes (0: whole); returns feed()'s last result.
bool feed(relp_session& s, const std::string& bytes, std::string& out, std::vector<std::string>& msgs,
          std::size_t step = 0) {
  bool ok = true;
  for (std::size_t i = 0; i < bytes.size() && ok; i += step ? step : bytes.size())
    ok = s.feed(std::string_view(bytes).substr(i, step ? step : bytes.size()), out,
                [&](std::string_view m) { msgs.emplace_back(m); });
  return ok;
}

}  // namespace

TEST_CASE("relp_session: open answered with the offers, messages in order, answered oldest first, close last") {
  for (std::size_t step : {0, 1, 2, 7}) {
    CAPTURE(step);
    relp_session s;
    std::string out;
    std::vector<std::string> msgs;
    REQUIRE(feed(s, open_frame, out, msgs, step));
    CHECK(s.open());
    CHECK(out == frame(1, "rsp", "200 OK\nrelp_version=0\nrelp_software=sluice\ncommands=syslog"));
    out.clear();
    REQUIRE(feed(s, frame(2, "syslog", "one") + frame(3, "syslog", "two\nlines") + frame(4, "close"), out, msgs, step));
    CHECK(msgs == std::vector<std::string>{"one", "two\nlines"});
    CHECK(out.empty());  // nothing is answered before the caller says it is stored
    CHECK(s.unanswered() == 2);
    CHECK(s.close_asked());
    CHECK_FALSE(s.close_due());
    s.ack_next(out);
    CHECK(out == frame(2, "rsp", "200 OK"));
    CHECK_FALSE(s.close_due());
    s.ack_next(out);
    CHECK(s.close_due());
    s.answer_close(out);
    CHECK(out == frame(2, "rsp", "200 OK") + frame(3, "rsp", "200 OK") + frame(4, "rsp", "200 OK"));
    CHECK(s.close_answered());
    CHECK_FALSE(s.close_due());
    s.ack_next(out);  // nothing is left to answer: no frame
    CHECK(out.size() == 3 * frame(2, "rsp", "200 OK").size());
  }
}

TEST_CASE("relp_session: transaction numbers wrap from 999999999 to 1") {
  relp_session s;
  std::string out;
  std::vector<std::string> msgs;
  REQUIRE(feed(s, frame(999999998, "open", "relp_version=0"), out, msgs));
  out.clear();
  REQUIRE(feed(s, frame(999999999, "syslog", "a") + frame(1, "syslog", "b") + frame(2, "syslog", "c"), out, msgs));
  CHECK(msgs.size() == 3);
  s.ack_next(out);
  s.ack_next(out);
  s.ack_next(out);
  CHECK(out == frame(999999999, "rsp", "200 OK") + frame(1, "rsp", "200 OK") + frame(2, "rsp", "200 OK"));
}

TEST_CASE("relp_session: bad input is an error with its reason; the messages before it were taken") {
  struct bad {
    std::string bytes;
    std::string why;
  };
  const std::string ok2 = frame(2, "syslog", "before");
  const std::vector<bad> cases = {
      {frame(1, "syslog", "x"), "RELP: the session did not start with open (got 'syslog')"},
      {frame(0, "open"), "RELP: transaction number 0"},
      {open_frame + ok2 + frame(4, "syslog", "x"), "RELP: transaction number 4 where 3 was due"},
      {open_frame + ok2 + frame(2, "syslog", "x"), "RELP: transaction number 2 where 3 was due"},
      {open_frame + ok2 + frame(3, "starttls"), "RELP: command 'starttls' was not offered (only syslog)"},
      {open_frame + ok2 + frame(3, "open"), "RELP: a second open"},
      {open_frame + ok2 + frame(3, "close") + frame(4, "syslog", "x"), "RELP: a frame after close"},
      {open_frame + ok2 + "hello\n", "RELP: a frame starts with a byte that is not a transaction number digit"},
      {open_frame + ok2 + "3 syslog 200", "RELP: DATALEN 200... over the maximum of 100"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.bytes);
    for (std::size_t step : {0, 1}) {
      relp_session s(100);
      std::string out;
      std::vector<std::string> msgs;
      CHECK_FALSE(feed(s, c.bytes, out, msgs, step));
      CHECK(s.error() == c.why);
      if (c.bytes.find("before") != std::string::npos) CHECK(msgs == std::vector<std::string>{"before"});
      else CHECK(msgs.empty());
      // Once bad, it takes nothing more.
      CHECK_FALSE(s.feed(frame(9, "syslog", "later"), out, [&](std::string_view m) { msgs.emplace_back(m); }));
      CHECK(msgs.size() <= 1);
    }
  }
}

TEST_CASE("relp_session: serverclose") {
  std::string out;
  relp_session::append_serverclose(out);
  CHECK(out == "0 serverclose 0\n");
}

TEST_CASE("relp_session: refuse_next answers the oldest with rsp 500 and its text; the next is answered after it") {
  relp_session s;
  std::string out;
  std::vector<std::string> msgs;
  REQUIRE(feed(s, open_frame, out, msgs));
  out.clear();
  REQUIRE(feed(s, frame(2, "syslog", "too large") + frame(3, "syslog", "fine") + frame(4, "close"), out, msgs));
  s.refuse_next(out, "next hop refused it");
  CHECK_FALSE(s.close_due());
  s.ack_next(out);
  CHECK(s.close_due());
  CHECK(out == frame(2, "rsp", "500 next hop refused it") + frame(3, "rsp", "200 OK"));
  s.refuse_next(out, "nothing left");  // nothing is left to answer: no frame
  CHECK(out == frame(2, "rsp", "500 next hop refused it") + frame(3, "rsp", "200 OK"));
}
