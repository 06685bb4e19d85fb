// The durable spool: the segment format (records back, a torn tail
// dropped), then spool_writable in front of a downstream writable whose
// completions the test gives (a recording_sink: the acknowledgements come
// when the test says), on a real directory: order, deletion after the
// acknowledgements, a SIGKILLed process's spool sent first by the next one,
// a torn tail, max_bytes, ENOSPC (fault injection), the directory's checks;
// and a real rsyslogd with imrelp behind a relp_writable, away and then
// started. Every wait is bounded (spin()).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/spool/detail/spool_segment.h"
#include "sluice/spool/spool_writable.h"
#include "sluice/syslog/relp_writable.h"
#include "support/fault_injection.h"
#include "support/free_port.h"
#include "support/recording_sink.h"
#include "support/rsyslogd.h"
#include "support/spin.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

using namespace std::chrono_literals;

std::string msg(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "m%06d", i);
  return b;
}

// ---- the format

TEST_CASE("records read back whole; a record cut anywhere needs more; a flipped byte is bad") {
  std::string seg;
  detail::append_segment_header(seg, 7);
  CHECK(detail::check_segment_header(seg, 7));
  CHECK_FALSE(detail::check_segment_header(seg, 8));
  std::string recs;
  detail::append_record(recs, "one");
  detail::append_record(recs, "");
  detail::append_record(recs, std::string(1000, 'x'));
  std::string_view rest = recs, p;
  std::size_t used = 0;
  REQUIRE(detail::parse_record(rest, p, used) == detail::record_status::ok);
  CHECK(p == "one");
  rest.remove_prefix(used);
  REQUIRE(detail::parse_record(rest, p, used) == detail::record_status::ok);
  CHECK(p.empty());
  rest.remove_prefix(used);
  REQUIRE(detail::parse_record(rest, p, used) == detail::record_status::ok);
  CHECK(p == std::string(1000, 'x'));
  // A torn tail: every cut of the last record.
  std::string last;
  detail::append_record(last, "the last record");
  for (std::size_t cut = 0; cut < last.size(); ++cut)
    CHECK(detail::parse_record(std::string_view(last).substr(0, cut), p, used) == detail::record_status::need_more);
  // Garbage: each byte changed, of the length or of the payload.
  for (std::size_t i = 0; i < last.size(); ++i) {
    std::string bad = last;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    const auto st = detail::parse_record(bad, p, used);
    CHECK(st != detail::record_status::ok);
  }
  // CRC-32C's check value, whole and in pieces of every cut (the SSE 4.2
  // path takes 8 bytes at a time, the rest a byte at a time).
  const std::string check = "123456789";
  CHECK(detail::crc32c(check.data(), check.size()) == 0xE3069283u);
  for (std::size_t cut = 0; cut <= check.size(); ++cut)
    CHECK(detail::crc32c(check.data() + cut, check.size() - cut, detail::crc32c(check.data(), cut)) == 0xE3069283u);
  std::uint64_t seq = 0;
  CHECK(detail::parse_segment_name(detail::segment_name(42), seq));
  CHECK(seq == 42);
  CHECK_FALSE(detail::parse_segment_name("seg-42", seq));
  CHECK_FALSE(detail::parse_segment_name("lock", seq));
}

// ---- the spool, in front of a downstream the test acknowledges

// A downstream writable whose sink records each message ("_write m000001")
// and completes each write when the test says (or at once, `sync`).
struct downstream {
  trace log;
  recording_sink* sink = nullptr;
  std::unique_ptr<writable> make(loop& l, bool sync, std::size_t hwm = 64) {
    auto s = std::make_unique<recording_sink>(log, recording_sink_options{.sync = sync, .writev = false});
    sink = s.get();
    return std::make_unique<writable>(std::move(s), writable_options{.high_water_mark = hwm, .object_mode = true,
                                                                      .event_loop = &l});
  }
  // The messages the downstream was given, in order.
  std::vector<std::string> got() const {
    std::vector<std::string> v;
    for (const std::string& line : log.lines())
      if (line.rfind("_write ", 0) == 0) v.push_back(line.substr(7));
    return v;
  }
};

spool_options opts(loop& l, const temp_dir& d, std::uint64_t segment = 4096, std::uint64_t max = 1 << 20) {
  spool_options o;
  o.dir = d.file("spool");
  o.segment_bytes = segment;
  o.max_bytes = max;
  o.stream.event_loop = &l;
  return o;
}

std::size_t segment_files(const temp_dir& d) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.file("spool")))
    if (e.path().filename().string().rfind("seg-", 0) == 0) ++n;
  return n;
}

// Writes n messages from `first`, honouring write() == false; each callback
// counted in calls[i].
void write_all(loop& l, writable& w, int first, int n, std::vector<int>& calls, int& errors) {
  int next = first;
  REQUIRE(spin(l, [&] {
    while (next < first + n && !w.writable_need_drain()) {
      const int i = next++;
      w.write(msg(i), [&, i](std::error_code ec) { ++calls[static_cast<std::size_t>(i)], errors += bool(ec); });
    }
    return next == first + n;
  }));
}

TEST_CASE("records go to segments, then downstream in order; a segment goes once all of it is acknowledged") {
  loop l;
  temp_dir d;
  downstream down;
  auto w = make_spool_writable(down.make(l, false), opts(l, d));
  const int n = 2000;
  std::vector<int> calls(n, 0);
  int errors = 0;
  write_all(l, *w, 0, n, calls, errors);
  // The callbacks come once each as the records are on disk, the receiver
  // having acknowledged nothing.
  REQUIRE(spin(l, [&] { return w->spooled_records() == std::uint64_t(n); }));
  REQUIRE(spin(l, [&] { return std::count(calls.begin(), calls.end(), 1) == n; }));
  CHECK(errors == 0);
  CHECK(down.sink->pending() > 0);
  CHECK(w->segments() > 4);  // 2000 records of 15 bytes in 4 KiB segments
  CHECK(segment_files(d) == w->segments());
  CHECK(w->acked() == 0);
  // The downstream acknowledges: segments go as their records are all acked.
  const std::size_t before = w->segments();
  REQUIRE(spin(l, [&] {
    for (int k = 0; k < 50 && down.sink->pending() > 0; ++k) down.sink->complete();
    return w->acked() >= std::uint64_t(n / 2);
  }));
  CHECK(w->segments() < before);
  CHECK(segment_files(d) == w->segments());
  bool ended = false;
  std::error_code end_ec;
  w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
  REQUIRE(spin(l, [&] {
    while (down.sink->pending() > 0) down.sink->complete();
    return ended;
  }));
  CHECK_FALSE(end_ec);
  CHECK(w->acked() == std::uint64_t(n));
  CHECK(w->sent_from_spool() == std::uint64_t(n));
  CHECK(segment_files(d) == 0);
  const auto got = down.got();
  REQUIRE(got.size() == std::size_t(n));
  for (int i = 0; i < n; ++i) REQUIRE(got[std::size_t(i)] == msg(i));
  for (int c : calls) CHECK(c == 1);
}

// A child process spools `n` records (the downstream acknowledging the
// first `ack`), then is SIGKILLed: what it leaves is what a crash leaves.
void spool_and_die(const temp_dir& d, int n, int ack) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    loop l;
    downstream down;
    auto w = make_spool_writable(down.make(l, false), opts(l, d));
    for (int i = 0; i < n; ++i) w->write(msg(i));
    spin(l, [&] { return w->spooled_records() == std::uint64_t(n); });
    spin(l, [&] {
      while (down.sink->pending() > 0 && w->acked() < std::uint64_t(ack)) down.sink->complete();
      return w->acked() >= std::uint64_t(ack);
    });
    // The position of the acknowledgements is saved within 100 ms.
    for (int i = 0; i < 60; ++i) spin(l, [] { return false; }, 1);
    ::kill(::getpid(), SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("after a SIGKILL, a new spool on the same DIR sends what was left first, from the acknowledged position, then its own") {
  temp_dir d;
  spool_and_die(d, 1000, 300);
  loop l;
  downstream down;
  auto w = make_spool_writable(down.make(l, true), opts(l, d));
  CHECK(w->recovered_segments() > 0);
  std::vector<int> calls(1100, 0);
  int errors = 0;
  write_all(l, *w, 1000, 100, calls, errors);
  bool ended = false;
  w->end([&](std::error_code ec) { ended = true, errors += bool(ec); });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK(errors == 0);
  for (int i = 1000; i < 1100; ++i) CHECK(calls[std::size_t(i)] == 1);
  // 300 were acknowledged and saved: the rest of the old, then the new.
  const auto got = down.got();
  REQUIRE(got.size() == 800);
  for (int i = 0; i < 800; ++i) REQUIRE(got[std::size_t(i)] == msg(300 + i));
  CHECK(w->torn_bytes() == 0);
  CHECK(segment_files(d) == 0);
}

TEST_CASE("a downstream that fails a write fails the spool; what it did not acknowledge is sent by the next spool") {
  loop l;
  temp_dir d;
  {
    downstream down;
    auto w = make_spool_writable(down.make(l, false), opts(l, d));
    std::error_code seen;
    w->on(event::error, [&](std::error_code ec) { seen = ec; });
    std::vector<int> calls(100, 0);
    int errors = 0;
    write_all(l, *w, 0, 100, calls, errors);
    REQUIRE(spin(l, [&] { return w->spooled_records() == 100 && down.sink->pending() > 0; }));
    REQUIRE(spin(l, [&] {
      while (down.sink->pending() > 0 && w->acked() < 10) down.sink->complete();
      return w->acked() == 10;
    }));
    down.sink->complete(user_error("the receiver refused it"));
    REQUIRE(spin(l, [&] { return w->destroyed() && bool(seen); }));
    CHECK(seen == user_error("the receiver refused it"));
    CHECK(errors == 0);
    for (int c : calls) CHECK(c == 1);
  }
  downstream down;
  auto w = make_spool_writable(down.make(l, true), opts(l, d));
  bool ended = false;
  w->end([&](std::error_code) { ended = true; });
  REQUIRE(spin(l, [&] { return ended; }));
  const auto got = down.got();
  REQUIRE(got.size() == 90);
  for (int i = 0; i < 90; ++i) REQUIRE(got[std::size_t(i)] == msg(10 + i));
}

TEST_CASE("a torn tail after a crash is dropped, counted, never sent") {
  temp_dir d;
  spool_and_die(d, 500, 0);
  // The last segment ends inside a record, as a crash in a write leaves it;
  // then a record whose checksum does not match.
  std::vector<std::filesystem::path> segs;
  for (const auto& e : std::filesystem::directory_iterator(d.file("spool")))
    if (e.path().filename().string().rfind("seg-", 0) == 0) segs.push_back(e.path());
  std::sort(segs.begin(), segs.end());
  REQUIRE(!segs.empty());
  {
    std::string torn;
    detail::append_record(torn, "torn-record");
    std::ofstream f(segs.back(), std::ios::app | std::ios::binary);
    f << torn.substr(0, torn.size() - 3);
  }
  loop l;
  downstream down;
  auto w = make_spool_writable(down.make(l, true), opts(l, d));
  bool ended = false;
  w->end([&](std::error_code) { ended = true; });
  REQUIRE(spin(l, [&] { return ended; }));
  const auto got = down.got();
  REQUIRE(got.size() == 500);
  for (int i = 0; i < 500; ++i) REQUIRE(got[std::size_t(i)] == msg(i));
  CHECK(w->torn_bytes() == 16);  // 8 + 11 - 3 bytes of the torn record
}

TEST_CASE("a flipped byte mid-segment drops the rest of that segment only") {
  temp_dir d;
  spool_and_die(d, 1000, 0);
  std::vector<std::filesystem::path> segs;
  for (const auto& e : std::filesystem::directory_iterator(d.file("spool")))
    if (e.path().filename().string().rfind("seg-", 0) == 0) segs.push_back(e.path());
  std::sort(segs.begin(), segs.end());
  REQUIRE(segs.size() >= 3);
  {
    // Record 10 of the first segment: header 16, each record 8 + 7.
    std::fstream f(segs.front(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16 + 10 * 15 + 9);
    f.put('#');
  }
  loop l;
  downstream down;
  auto w = make_spool_writable(down.make(l, true), opts(l, d));
  bool ended = false;
  w->end([&](std::error_code) { ended = true; });
  REQUIRE(spin(l, [&] { return ended; }));
  const auto got = down.got();
  REQUIRE(got.size() > 10);
  for (int i = 0; i < 10; ++i) CHECK(got[std::size_t(i)] == msg(i));
  CHECK(got[10] != msg(10));
  CHECK(std::find(got.begin(), got.end(), msg(10)) == got.end());
  CHECK(got.back() == msg(999));
  CHECK(w->torn_bytes() > 0);
}

TEST_CASE("the producer goes on while the receiver is away, until max_bytes: then write() is false, and 'drain' after acks") {
  loop l;
  temp_dir d;
  downstream down;
  auto o = opts(l, d, 4096, 64 * 1024);
  o.stream.high_water_mark = 16;
  auto w = make_spool_writable(down.make(l, false, 16), o);
  std::vector<int> calls(20000, 0);
  int errors = 0, next = 0;
  // Written with no acknowledgement: far more than the downstream's 16 fit.
  REQUIRE(spin(l, [&] {
    while (!w->writable_need_drain()) {
      const int i = next++;
      w->write(msg(i), [&, i](std::error_code ec) { ++calls[std::size_t(i)], errors += bool(ec); });
    }
    return true;
  }));
  for (int k = 0; k < 20; ++k) spin(l, [] { return false; }, 1);
  CHECK(next > 3000);  // 64 KiB of 15-byte records
  CHECK(next < 5000);
  CHECK(w->writable_need_drain());
  CHECK(w->disk_bytes() <= o.max_bytes);
  bool drained = false;
  w->once(event::drain, [&] { drained = true; });
  REQUIRE(spin(l, [&] {
    while (down.sink->pending() > 0) down.sink->complete();
    return drained;
  }));
  bool ended = false;
  w->end([&](std::error_code ec) { ended = true, errors += bool(ec); });
  REQUIRE(spin(l, [&] {
    while (down.sink->pending() > 0) down.sink->complete();
    return ended;
  }));
  CHECK(errors == 0);
  for (int i = 0; i < next; ++i) REQUIRE(calls[std::size_t(i)] == 1);
  const auto got = down.got();
  REQUIRE(got.size() == std::size_t(next));
  for (int i = 0; i < next; ++i) REQUIRE(got[std::size_t(i)] == msg(i));
}

TEST_CASE("a spool that cannot be written (ENOSPC): said once, then backpressure in memory; nothing lost, in order") {
  loop l;
  temp_dir d;
  downstream down;
  auto o = opts(l, d);
  int said = 0;
  std::error_code said_ec;
  o.on_spool_error = [&](std::error_code ec) { ++said, said_ec = ec; };
  auto w = make_spool_writable(down.make(l, false, 16), o);
  const int n = 3000;
  std::vector<int> calls(n, 0);
  int errors = 0;
  write_all(l, *w, 0, 500, calls, errors);
  REQUIRE(spin(l, [&] { return w->spooled_records() == 500; }));
  fault_injector faults;
  faults.set_rate(sys_call::writev, 1.0, {fault::enospc});
  // The rest is written honouring backpressure, the downstream acking slowly.
  int next = 500, held_back = 0;
  REQUIRE(spin(l, [&] {
    for (int k = 0; k < 100 && next < n && !w->writable_need_drain(); ++k) {
      const int i = next++;
      w->write(msg(i), [&, i](std::error_code ec) { ++calls[std::size_t(i)], errors += bool(ec); });
    }
    for (int k = 0; k < 8 && down.sink->pending() > 0; ++k) down.sink->complete();
    if (w->writable_need_drain()) ++held_back;
    return next == n;
  }));
  bool ended = false;
  w->end([&](std::error_code ec) { ended = true, errors += bool(ec); });
  REQUIRE(spin(l, [&] {
    while (down.sink->pending() > 0) down.sink->complete();
    return ended;
  }));
  faults.stop();
  CHECK(held_back > 0);
  CHECK(said == 1);
  CHECK(said_ec == std::errc::no_space_on_device);
  CHECK(w->spool_failures() >= 1);
  CHECK(w->bypassed() > 0);
  CHECK(errors == 0);
  for (int i = 0; i < n; ++i) REQUIRE(calls[std::size_t(i)] == 1);
  const auto got = down.got();
  REQUIRE(got.size() == std::size_t(n));
  for (int i = 0; i < n; ++i) REQUIRE(got[std::size_t(i)] == msg(i));
}

TEST_CASE("spool_sync::batch: one fsync a batch before its callbacks; an fsync that fails (EIO) is a spool that cannot be written") {
  loop l;
  temp_dir d;
  fault_injector faults;
  {
    downstream down;
    auto o = opts(l, d);
    o.sync = spool_sync::batch;
    auto w = make_spool_writable(down.make(l, true), o);
    const std::size_t before = faults.calls(sys_call::fsync);
    std::vector<int> calls(300, 0);
    int errors = 0;
    write_all(l, *w, 0, 300, calls, errors);
    REQUIRE(spin(l, [&] { return std::count(calls.begin(), calls.end(), 1) == 300; }));
    // 300 records in one turn: a batch, 4 KiB segments: a handful of
    // pieces, each synced (and the directory for each new segment).
    const std::size_t syncs = faults.calls(sys_call::fsync) - before;
    CHECK(syncs >= 2);
    CHECK(syncs <= 20);
    bool ended = false;
    w->end([&](std::error_code ec) { ended = true, errors += bool(ec); });
    REQUIRE(spin(l, [&] { return ended; }));
    CHECK(errors == 0);
    CHECK(down.got().size() == 300);
  }
  downstream down;
  auto o = opts(l, d);
  o.sync = spool_sync::batch;
  int said = 0;
  std::error_code said_ec;
  o.on_spool_error = [&](std::error_code ec) { ++said, said_ec = ec; };
  auto w = make_spool_writable(down.make(l, false, 16), o);
  faults.set_rate(sys_call::fsync, 1.0, {fault::eio});
  std::vector<int> calls(500, 0);
  int errors = 0;
  write_all(l, *w, 0, 500, calls, errors);
  bool ended = false;
  w->end([&](std::error_code ec) { ended = true, errors += bool(ec); });
  REQUIRE(spin(l, [&] {
    while (down.sink->pending() > 0) down.sink->complete();
    return ended;
  }));
  faults.stop();
  CHECK(said == 1);
  CHECK(said_ec == std::errc::io_error);
  CHECK(errors == 0);
  for (int c : calls) CHECK(c == 1);
  const auto got = down.got();
  REQUIRE(got.size() == 500);
  for (int i = 0; i < 500; ++i) REQUIRE(got[std::size_t(i)] == msg(i));
  // What failed its fsync was cut back, not left to be sent twice.
  CHECK(w->spooled_records() == 0);
}

// A child process spools `n` records in segments of `segment` bytes, the
// downstream acknowledging them all; then the disk fails (ENOSPC) for one
// more record, which goes from memory: the live segment is closed and, all
// acknowledged, deleted. SIGKILLed then, it leaves a position and no
// segment, as a run does whose segments were all acknowledged and released.
void spool_release_all_and_die(const temp_dir& d, int n, std::uint64_t segment) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    loop l;
    downstream down;
    auto w = make_spool_writable(down.make(l, false), opts(l, d, segment));
    for (int i = 0; i < n; ++i) w->write(msg(i));
    spin(l, [&] {
      while (down.sink->pending() > 0) down.sink->complete();
      return w->acked() == std::uint64_t(n);
    });
    for (int i = 0; i < 40; ++i) spin(l, [] { return false; }, 1);  // the position saved
    {
      fault_injector faults;
      faults.set_rate(sys_call::writev, 1.0, {fault::enospc});
      w->write(msg(n));
      spin(l, [&] {
        while (down.sink->pending() > 0) down.sink->complete();
        return w->bypassed() == 1 && down.sink->pending() == 0 && w->segments() == 0;
      });
    }
    if (w->segments() != 0 || segment_files(d) != 0) ::_exit(4);
    ::kill(::getpid(), SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("a saved position never applies to a later run's segment: killed with all released, a run that cannot send, then one that can") {
  // Several segments: the position names a higher sequence than a fresh
  // numbering's first; one large segment: the same sequence, and an offset
  // inside what the next run wrote.
  std::uint64_t segment = 4096;
  int later = 100;
  SUBCASE("the position's segment number is higher") {}
  SUBCASE("the position's segment number is the first") {
    segment = 1 << 20;
    later = 2000;
  }
  temp_dir d;
  spool_release_all_and_die(d, 1000, segment);
  REQUIRE(segment_files(d) == 0);
  loop l;
  {
    // Cannot send: the downstream never acknowledges; the run goes away.
    downstream down;
    auto w = make_spool_writable(down.make(l, false), opts(l, d, segment));
    CHECK(w->recovered_segments() == 0);
    for (int i = 0; i < later; ++i) w->write(msg(1000 + i));
    REQUIRE(spin(l, [&] { return w->spooled_records() == std::uint64_t(later); }));
    w->destroy();
  }
  REQUIRE(segment_files(d) > 0);
  downstream down;
  auto w = make_spool_writable(down.make(l, true), opts(l, d, segment));
  CHECK(w->recovered_segments() > 0);
  bool ended = false;
  std::error_code end_ec;
  w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
  REQUIRE(spin(l, [&] { return ended; }));
  CHECK_FALSE(end_ec);
  const auto got = down.got();
  REQUIRE(got.size() == std::size_t(later));
  for (int i = 0; i < later; ++i) REQUIRE(got[std::size_t(i)] == msg(1000 + i));
  CHECK(w->torn_bytes() == 0);
  CHECK(segment_files(d) == 0);
}

TEST_CASE("ENOSPC, then room again: the records kept in memory go after the disk's and before any newer, and end() comes") {
  loop l;
  temp_dir d;
  downstream down;
  auto o = opts(l, d);
  int said = 0;
  o.on_spool_error = [&](std::error_code) { ++said; };
  auto w = make_spool_writable(down.make(l, false, 16), o);
  const int n = 1000;
  std::vector<int> calls(n, 0);
  int errors = 0;
  const auto write = [&](int first, int count) {
    for (int i = first; i < first + count; ++i)
      w->write(msg(i), [&, i](std::error_code ec) { ++calls[std::size_t(i)], errors += bool(ec); });
  };
  write(0, 500);
  REQUIRE(spin(l, [&] { return w->spooled_records() == 500; }));
  {
    fault_injector faults;
    faults.set_rate(sys_call::writev, 1.0, {fault::enospc});
    write(500, 200);
    REQUIRE(spin(l, [&] { return w->spool_failures() >= 1; }));
  }
  // Room again, and past the spool's second before it tries the disk again,
  // with the 200 still in memory (the downstream acknowledged nothing).
  const auto later = std::chrono::steady_clock::now() + 1200ms;
  spin(l, [&] { return std::chrono::steady_clock::now() >= later; }, 100000);
  write(700, 300);
  for (int i = 0; i < 20; ++i) spin(l, [] { return false; }, 1);
  bool ended = false;
  std::error_code end_ec;
  w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
  REQUIRE(spin(l, [&] {
    while (down.sink->pending() > 0) down.sink->complete();
    return ended;
  }));
  CHECK_FALSE(end_ec);
  CHECK(said == 1);
  CHECK(errors == 0);
  for (int c : calls) CHECK(c == 1);
  const auto got = down.got();
  REQUIRE(got.size() == std::size_t(n));
  for (int i = 0; i < n; ++i) REQUIRE(got[std::size_t(i)] == msg(i));
  // The disk was used again after the memory's records: the last 300 were spooled.
  CHECK(w->spooled_records() >= 800);
  CHECK(segment_files(d) == 0);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool limit_address_space = false;  // the sanitizers reserve terabytes of it
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool limit_address_space = false;
#else
constexpr bool limit_address_space = true;
#endif
#else
constexpr bool limit_address_space = true;
#endif

TEST_CASE("a corrupt record length (1 GiB, the maximum) ends its segment, counted: nothing of that size is allocated") {
  temp_dir d;
  spool_and_die(d, 500, 0);
  std::vector<std::filesystem::path> segs;
  for (const auto& e : std::filesystem::directory_iterator(d.file("spool")))
    if (e.path().filename().string().rfind("seg-", 0) == 0) segs.push_back(e.path());
  std::sort(segs.begin(), segs.end());
  REQUIRE(!segs.empty());
  {
    // A length of 0x40000000, its checksum garbage, and a little after it.
    std::ofstream f(segs.back(), std::ios::app | std::ios::binary);
    const char planted[16] = {0, 0, 0, 0x40, 'c', 'r', 'c', '!', 'p', 'a', 'y', 'l', 'o', 'a', 'd', '.'};
    f.write(planted, sizeof planted);
  }
  // In a child whose address space is bounded 256 MiB above what it uses:
  // a buffer of the planted length fails there (bad_alloc).
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 0;
    try {
      if (limit_address_space) {
        std::ifstream st("/proc/self/status");
        std::string key;
        std::uint64_t kb = 0;
        while (st >> key)
          if (key == "VmSize:" && st >> kb) break;
        rlimit r{};
        r.rlim_cur = r.rlim_max = (kb << 10) + (std::uint64_t{256} << 20);
        if (kb == 0 || ::setrlimit(RLIMIT_AS, &r) != 0) ::_exit(5);
      }
      loop l;
      downstream down;
      auto w = make_spool_writable(down.make(l, true), opts(l, d));
      for (int i = 500; i < 600; ++i) w->write(msg(i));
      bool ended = false;
      std::error_code end_ec;
      w->end([&](std::error_code ec) { ended = true, end_ec = ec; });
      spin(l, [&] { return ended; });
      const auto got = down.got();
      bool in_order = got.size() == 600;
      for (std::size_t i = 0; in_order && i < got.size(); ++i) in_order = got[i] == msg(int(i));
      if (!ended || end_ec) code = 6;
      else if (!in_order) code = 7;
      else if (w->torn_bytes() != 16) code = 8;
    } catch (const std::bad_alloc&) {
      code = 9;
    } catch (...) {
      code = 10;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  // 0: the 500 before it and the 100 new ones sent, in order, the 16 planted
  // bytes counted as torn; 9: bad_alloc.
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("DIR: made 0700, files 0600; a symbolic link, a DIR others can write, or one in use is refused") {
  loop l;
  temp_dir d;
  {
    downstream down;
    auto w = make_spool_writable(down.make(l, false), opts(l, d));
    struct stat st {};
    REQUIRE(::stat(d.file("spool").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    w->write("x");
    REQUIRE(spin(l, [&] { return w->spooled_records() == 1; }));
    for (const auto& e : std::filesystem::directory_iterator(d.file("spool"))) {
      REQUIRE(::stat(e.path().c_str(), &st) == 0);
      CHECK((st.st_mode & 0777) == 0600);
    }
    // A second spool on the same DIR, while this one holds it.
    downstream down2;
    std::error_code ec;
    auto w2 = make_spool_writable(down2.make(l, false), opts(l, d), ec);
    CHECK(w2 == nullptr);
    CHECK(ec.message() == "spool: the directory is in use by another process");
    w->destroy();
  }
  REQUIRE(::symlink(d.file("spool").c_str(), d.file("link").c_str()) == 0);
  auto o = opts(l, d);
  o.dir = d.file("link");
  downstream down;
  std::error_code ec;
  CHECK(make_spool_writable(down.make(l, false), o, ec) == nullptr);
  CHECK(ec.message() == "spool: the directory is a symbolic link: refusing to follow it");
  REQUIRE(::chmod(d.file("spool").c_str(), 0777) == 0);
  CHECK(make_spool_writable(down.make(l, false), opts(l, d), ec) == nullptr);
  CHECK(ec.message() == "spool: the directory is writable by group or others (want mode 0700)");
  CHECK_THROWS_AS(make_spool_writable(down.make(l, false), opts(l, d)), stream_error);
}

// ---- a real rsyslogd with imrelp, behind a relp_writable

struct rsyslog {
  temp_dir dir;
  std::uint16_t port = free_port();
  pid_t pid = -1;
  std::string out = dir.file("out.log");
  static bool installed() { return rsyslogd_has_imrelp(); }
  void start() {
    write_imrelp_conf(dir, port, out);
    pid = start_rsyslogd(dir, port);
  }
  ~rsyslog() { stop_rsyslogd(pid); }
};

TEST_CASE("rsyslog imrelp away while 20,000 messages are spooled; started: every one in order, the spool emptied") {
  if (!rsyslog::installed()) {
    MESSAGE("skipped: rsyslogd with imrelp is not installed (apt-get install rsyslog rsyslog-relp)");
    return;
  }
  loop l;
  temp_dir d;
  rsyslog rs;
  relp_options ro{.port = rs.port, .reconnect_min = 20ms, .reconnect_max = 200ms};
  ro.stream.event_loop = &l;
  auto w = make_spool_writable(make_relp_writable(ro), opts(l, d, 64 * 1024, 64 << 20));
  const int n = 20000;
  std::vector<int> calls(n, 0);
  int errors = 0;
  write_all(l, *w, 0, n, calls, errors);
  // All of it taken while nobody listens: the producer was not held back.
  REQUIRE(spin(l, [&] { return w->spooled_records() == std::uint64_t(n); }));
  CHECK(w->acked() == 0);
  CHECK(w->segments() > 3);
  rs.start();
  bool ended = false;
  w->end([&](std::error_code ec) { ended = true, errors += bool(ec); });
  REQUIRE(spin(l, [&] { return ended; }, 30000));
  CHECK(errors == 0);
  for (int c : calls) REQUIRE(c == 1);
  CHECK(w->acked() == std::uint64_t(n));
  CHECK(segment_files(d) == 0);
  std::istringstream in(slurp(rs.out));
  int i = 0;
  for (std::string line; std::getline(in, line); ++i) {
    while (!line.empty() && line.front() == ' ') line.erase(0, 1);
    REQUIRE(line == msg(i));
  }
  CHECK(i == n);
}

}  // namespace
}  // namespace sluice::test
