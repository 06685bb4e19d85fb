// The seam between a stream and its io (sinks/sink.h, sources/source.h): a
// sink reports to a sink_host and a source pushes to a source_host. The host
// need not be a stream: here a test's host drives the library's own sinks and
// sources, and then the writable and readable show that they are hosts too.
#include "support/printers.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/fd_sink.h"
#include "support/memory_sink.h"
#include "sluice/sinks/sink.h"
#include "sluice/sources/fd_source.h"
#include "sluice/sources/source.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/pipe_fds.h"

using namespace sluice;
using sluice::test::must_call;
using sluice::test::pipe_fds;

namespace {

// A sink's host that is no stream: it records what the sink reports.
class test_sink_host final : public sink_host {
 public:
  struct completion {
    std::error_code ec;
    std::size_t landed;
  };
  void serve(sink& s) { host(s); }

  void on_write(std::error_code ec, std::size_t landed) noexcept override { writes.push_back({ec, landed}); }
  void on_finish(std::error_code ec) noexcept override { finals.push_back(ec); }
  write_cb take_write_cb() noexcept override {
    ++takes;
    return std::move(in_flight);
  }
  void on_sink_error(std::error_code ec) noexcept override { errors.push_back(ec); }

  std::vector<completion> writes;
  std::vector<std::error_code> finals, errors;
  write_cb in_flight;  // what take_write_cb() hands out
  int takes = 0;
};

// A source's host that is no stream: it keeps what is pushed, and says
// "enough" (false) once it holds `limit` chunks, as a readable past its
// high-water mark does.
class test_source_host final : public source_host {
 public:
  void serve(source& s) { host(s); }

  bool source_push(std::string_view chunk) override {
    chunks.emplace_back(chunk);
    return chunks.size() < limit;
  }
  bool source_push_eof() override {
    ++eofs;
    return false;
  }
  void on_source_error(std::error_code ec) noexcept override { errors.push_back(ec); }

  std::vector<std::string> chunks;
  std::vector<std::error_code> errors;
  std::size_t limit = 2;
  int eofs = 0;
};

// A sink that fails outside its calls when told to, as a log file's timer does.
class failing_sink final : public memory_sink {
 public:
  using sink::report_error;
};

// Pushes "0", "1", ... while its host wants more, then the end; fails when
// told to. Knows nothing of the readable.
class counting_source final : public source {
 public:
  void read(std::size_t) override {
    ++reads;
    while (next_ < 5)
      if (!push(std::to_string(next_++))) return;
    push_eof();
  }
  using source::report_error;
  int reads = 0;

 private:
  int next_ = 0;
};

// A source above the streams: it reaches the readable it feeds.
class stream_source final : public source {
 public:
  void read(std::size_t) override {
    seen = &stream();
    stream().push("x");
    stream().push_eof();
  }
  readable* seen = nullptr;
};

std::string read_all(int fd, std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out.data() + got, n - got);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  out.resize(got);
  return out;
}

}  // namespace

TEST_CASE("a sink completes its calls to whatever hosts it, with no stream") {
  test_sink_host h;
  memory_sink s;
  h.serve(s);
  s.write("abc", write_done(h));
  REQUIRE(h.writes.size() == 1);
  CHECK(!h.writes[0].ec);
  CHECK(h.writes[0].landed == 0);
  CHECK(s.data() == "abc");

  s.final(final_done(h));
  REQUIRE(h.finals.size() == 1);
  CHECK(!h.finals[0]);
  CHECK(h.errors.empty());
}

TEST_CASE("write_done passes the landed count only with an error") {
  test_sink_host h;
  write_done done(h);
  done({}, 3);
  done(make_error_code(errc::destroyed), 2);
  REQUIRE(h.writes.size() == 2);
  CHECK(!h.writes[0].ec);
  CHECK(h.writes[0].landed == 0);
  CHECK(h.writes[1].ec == errc::destroyed);
  CHECK(h.writes[1].landed == 2);
}

TEST_CASE("take_callback() takes the write's callback from the host") {
  test_sink_host h;
  must_call called;
  h.in_flight = called.cb();
  write_cb cb = write_done(h).take_callback();
  CHECK(h.takes == 1);
  REQUIRE(cb);
  CHECK(!h.in_flight);
  cb({});
}

TEST_CASE("report_error() reaches the host, and does nothing without one") {
  failing_sink alone;
  alone.report_error(make_error_code(errc::destroyed));  // no host: nothing to tell

  test_sink_host h;
  failing_sink s;
  h.serve(s);
  s.report_error(make_error_code(errc::destroyed));
  REQUIRE(h.errors.size() == 1);
  CHECK(h.errors[0] == errc::destroyed);
}

TEST_CASE("an fd_sink writes to a pipe for a host that is no stream") {
  loop l;
  pipe_fds p;
  test_sink_host h;
  fd_sink s(p.w);
  h.serve(s);
  s.attach(l);
  s.write("hello", write_done(h));
  l.run();  // returns at once if the write completed inside the call
  REQUIRE(h.writes.size() == 1);
  CHECK(!h.writes[0].ec);
  CHECK(read_all(p.r, 5) == "hello");

  p.close_r();
  s.write("gone", write_done(h));
  l.run();
  REQUIRE(h.writes.size() == 2);
  CHECK(h.writes[1].ec == std::error_code(EPIPE, std::system_category()));
  CHECK(h.errors.empty());
}

TEST_CASE("a source pushes to whatever hosts it, and hears its answer") {
  test_source_host h;
  counting_source s;
  h.serve(s);
  s.read(16);
  CHECK(h.chunks == std::vector<std::string>{"0", "1"});  // the host said "enough" at two
  CHECK(h.eofs == 0);
  h.limit = 100;
  s.read(16);
  CHECK(h.chunks == std::vector<std::string>{"0", "1", "2", "3", "4"});
  CHECK(h.eofs == 1);
  s.report_error(make_error_code(errc::destroyed));
  REQUIRE(h.errors.size() == 1);
  CHECK(h.errors[0] == errc::destroyed);
}

TEST_CASE("an fd_source reads a pipe for a host that is no stream") {
  loop l;
  pipe_fds p;
  test_source_host h;
  h.limit = 100;
  fd_source s(p.r);
  h.serve(s);
  s.attach(l);
  REQUIRE(::write(p.w, "abc", 3) == 3);
  p.close_w();
  // A read is answered by one push; the host asks again, as a readable does.
  for (int i = 0; i < 100 && h.eofs == 0 && h.errors.empty(); ++i) {
    s.read(16);
    l.run();
  }
  std::string all;
  for (const auto& c : h.chunks) all += c;
  CHECK(all == "abc");
  CHECK(h.eofs == 1);
  CHECK(h.errors.empty());
}

TEST_CASE("a writable is its sink's host: report_error() destroys it with the error") {
  loop l;
  must_call wrote;
  auto owned = std::make_unique<failing_sink>();
  failing_sink& s = *owned;
  writable w(std::move(owned), {.event_loop = &l});
  std::vector<std::error_code> errors;
  w.on(event::error, [&](std::error_code ec) { errors.push_back(ec); });
  w.write("a", wrote.cb());
  l.run_until_idle();
  CHECK(s.data() == "a");
  s.report_error(make_error_code(errc::destroyed));
  CHECK(w.destroyed());
  l.run_until_idle();
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == errc::destroyed);
}

TEST_CASE("a readable is its source's host: pushes arrive as data, report_error() destroys it") {
  loop l;
  auto owned = std::make_unique<counting_source>();
  counting_source& s = *owned;
  readable r(std::move(owned), {.high_water_mark = 2, .event_loop = &l});
  std::string data;
  std::vector<std::error_code> errors;
  bool ended = false;
  r.on(event::data, [&](std::string_view c) { data += c; });
  r.on(event::end, [&] { ended = true; });
  r.on(event::error, [&](std::error_code ec) { errors.push_back(ec); });
  l.run_until_idle();
  CHECK(data == "01234");
  CHECK(ended);
  CHECK(s.reads >= 1);

  auto owned2 = std::make_unique<counting_source>();
  counting_source& s2 = *owned2;
  readable r2(std::move(owned2), {.event_loop = &l});
  r2.on(event::error, [&](std::error_code ec) { errors.push_back(ec); });
  s2.report_error(make_error_code(errc::destroyed));
  CHECK(r2.destroyed());
  l.run_until_idle();
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == errc::destroyed);
}

TEST_CASE("a source above the streams reaches its readable with stream()") {
  loop l;
  auto owned = std::make_unique<stream_source>();
  stream_source& s = *owned;
  readable r(std::move(owned), {.event_loop = &l});
  std::string data;
  r.on(event::data, [&](std::string_view c) { data += c; });
  l.run_until_idle();
  CHECK(s.seen == &r);
  CHECK(data == "x");
}

// The sides of a duplex keep the alignment their constructors assume (see
// writable.h): a writable side at 8 mod 16 crashed in its constructor.
TEST_CASE("each side of a duplex is aligned as its class") {
  loop l;
  auto d = std::make_unique<duplex>(std::make_unique<counting_source>(), std::make_unique<memory_sink>(),
                                    duplex_options{.event_loop = &l});
  const auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  CHECK(at(static_cast<writable*>(d.get())) % alignof(writable) == 0);
  CHECK(at(static_cast<readable*>(d.get())) % alignof(readable) == 0);
  d->destroy();
  l.run_until_idle();
  CHECK(d->closed());
}

// ---- the capabilities (sink_caps), the one destroy, the exit path (sync_sink)

namespace {

// Logs its calls; writev and final as its caps say. Holds a write when told
// to, so that the writes after it wait in the stream's buffer.
class caps_sink : public sink {
 public:
  explicit caps_sink(sink_caps caps) : sink(caps) {}
  caps_sink(sink_caps caps, sync_sink* sync) : sink(caps, sync) {}
  void write(std::string_view chunk, write_done done) override {
    log += "write " + std::string(chunk) + ";";
    if (hold) held.emplace(done);
    else done();
  }
  void writev(const write_batch& batch, write_done done) override {
    log += "writev";
    for (std::string_view c : batch) (log += ' ').append(c);
    log += ";";
    done();
  }
  void final(final_done done) override {
    log += "final;";
    done();
  }
  void destroy(std::error_code err, destroy_done done) noexcept override {
    log += "destroy;";
    done(err);
  }
  using sink::set_caps;
  std::string log;
  bool hold = false;
  std::optional<write_done> held;
};

// A sink that offers the exit path: it logs to `out`, which outlives it,
// what the stream writes through it when it goes.
class exit_sink final : public caps_sink, public sync_sink {
 public:
  explicit exit_sink(std::string& out) : caps_sink({}, this), out_(out) {}
  ~exit_sink() override { out_ += log; }
  std::error_code drain_sync() noexcept override {
    log += "drain_sync;";
    held.reset();  // the stream settles that call itself
    return {};
  }
  std::error_code write_sync(const write_batch& batch) noexcept override {
    log += "write_sync";
    for (std::string_view c : batch) (log += ' ').append(c);
    log += ";";
    return {};
  }
  std::size_t landed_sync() const noexcept override { return 0; }

 private:
  std::string& out_;
};

}  // namespace

TEST_CASE("sink_caps: writev and final are called as the sink's caps say, and only then") {
  loop l;
  for (const bool declared : {true, false}) {
    CAPTURE(declared);
    auto owned = std::make_unique<caps_sink>(sink_caps{.writev = declared, .final = declared});
    caps_sink& s = *owned;
    writable w(std::move(owned), {.event_loop = &l});
    w.cork();
    w.write("a");
    w.write("b");
    w.write("c");
    w.uncork();
    w.end();
    l.run_until_idle();
    CHECK(w.writable_finished());
    if (declared)
      CHECK(s.log == "writev a b c;final;destroy;");  // autoDestroy
    else
      CHECK(s.log == "write a;write b;write c;destroy;");
  }
}

TEST_CASE("sink_caps: a sink that changes its caps (set_caps()) is heard by its writable") {
  loop l;
  auto owned = std::make_unique<caps_sink>(sink_caps{});
  caps_sink& s = *owned;
  writable w(std::move(owned), {.event_loop = &l});
  w.cork();
  w.write("a");
  w.write("b");
  w.uncork();
  l.run_until_idle();
  s.set_caps({.writev = true});  // as a socket's sink does once connected
  w.cork();
  w.write("c");
  w.write("d");
  w.uncork();
  l.run_until_idle();
  CHECK(s.log == "write a;write b;writev c d;");
}

TEST_CASE("sink_caps: coalesce holds a turn's writes for one writev") {
  loop l;
  auto owned = std::make_unique<caps_sink>(sink_caps{.writev = true, .coalesce = true});
  caps_sink& s = *owned;
  writable w(std::move(owned), {.event_loop = &l});
  l.set_immediate([&] {
    w.write("a");
    w.write("b");
  });
  l.run_until_idle();
  CHECK(s.log == "writev a b;");
}

TEST_CASE("destroy: a sink whose destroy is synchronous calls its done once; 'close' follows") {
  loop l;
  int closes = 0;
  std::string* log = nullptr;
  {
    auto owned = std::make_unique<caps_sink>(sink_caps{});
    log = &owned->log;
    writable w(std::move(owned), {.event_loop = &l});
    w.on(event::close, [&] { ++closes; });
    w.destroy();
    CHECK(w.destroyed());
    CHECK(w.closed());  // done was called inside the sink's destroy
    CHECK(*log == "destroy;");
    w.destroy();  // a second destroy reaches no sink
    CHECK(*log == "destroy;");
    l.run_until_idle();
    CHECK(closes == 1);
  }
  CHECK(closes == 1);
}

TEST_CASE("sync_sink: an ordinary sink offers no exit path; one that derives sync_sink does") {
  caps_sink plain({});
  CHECK(plain.sync() == nullptr);
  std::string out;
  exit_sink offering(out);
  CHECK(offering.sync() == static_cast<sync_sink*>(&offering));
}

TEST_CASE("sync_sink: a writable deleted without end() writes what it holds through write_sync") {
  loop l;
  std::string out, calls;
  auto owned = std::make_unique<exit_sink>(out);
  owned->hold = true;
  auto w = std::make_unique<writable>(std::move(owned), writable_options{.event_loop = &l});
  w->write("a", [&](std::error_code ec) { calls += std::string("a ") + (ec ? code_name(ec) : "ok") + ";"; });
  w->write("b", [&](std::error_code ec) { calls += std::string("b ") + (ec ? code_name(ec) : "ok") + ";"; });
  w->write("c", [&](std::error_code ec) { calls += std::string("c ") + (ec ? code_name(ec) : "ok") + ";"; });
  w.reset();
  // The write in flight is drained, the two behind it written in one batch;
  // then the sink is destroyed, and every callback hears success.
  CHECK(out == "write a;drain_sync;write_sync b c;destroy;");
  CHECK(calls == "a ok;b ok;c ok;");
}
