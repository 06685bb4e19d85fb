// compose(): Node's stream.compose(). The event orders pinned against Node's
// traces are conformance/api/compose-*.scn; these tests pin backpressure
// through a slow sink over many writes, every write callback called once,
// an error in the middle, an abort, misuse, and the C++ lifetimes.
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "sluice/sluice.h"

namespace {

void run() { sluice::loop::current().run_until_idle(); }

// A sink that holds each write until the test completes it.
class slow_sink final : public sluice::sink {
 public:
  slow_sink() : sink({}) {}
  std::string got;
  std::optional<sluice::write_done> held;
  void write(std::string_view chunk, sluice::write_done done) override {
    got += chunk;
    held = done;
  }
  // Completes the write in flight, if any; true if there was one.
  bool complete() {
    if (!held) return false;
    auto d = *held;
    held.reset();
    d();
    return true;
  }
};

// A source that pushes nothing until the test does.
class idle_source final : public sluice::source {
 public:
  void read(std::size_t) override {}
};

}  // namespace

TEST_CASE("compose: a slow sink at the tail holds the composite's writes back, and every callback comes once") {
  sluice::pass_through p(sluice::duplex_options{.high_water_mark = 4});
  auto sink = std::make_unique<slow_sink>();
  slow_sink& s = *sink;
  sluice::writable w(std::move(sink), {.high_water_mark = 4});
  auto c = sluice::compose({p, w});
  CHECK(c->writable::is_writable());
  CHECK_FALSE(c->readable::is_readable());  // a writable at the tail: nothing to read

  int calls = 0, refused = 0;
  std::string sent;
  for (int i = 0; i < 100; ++i) {
    // 400 bytes: the composite's own high-water mark (16 KiB, Node's
    // default; compose takes none) is passed after 41 writes.
    std::string chunk = "c" + std::to_string(i) + ";";
    chunk.resize(400, '.');
    sent += chunk;
    if (!c->write(chunk, [&](std::error_code ec) { CHECK(!ec); ++calls; })) ++refused;
  }
  bool finished = false;
  c->on(sluice::event::finish, [&] { finished = true; });
  int end_calls = 0;
  c->end([&](std::error_code ec) { CHECK(!ec); ++end_calls; });
  run();
  // The sink holds one write: the chain is full, most writes wait in the composite.
  CHECK(calls < 100);
  CHECK(refused > 0);
  CHECK(c->writable_length() > 0);
  for (int turns = 0; turns < 10000 && s.complete(); ++turns) run();
  CHECK(s.got == sent);
  CHECK(calls == 100);
  CHECK(end_calls == 1);
  CHECK(finished);
}

TEST_CASE("compose: reads follow the tail, and the composite ends when it does") {
  sluice::pass_through a, b;
  auto c = sluice::compose({a, b});
  std::string out;
  bool ended = false;
  c->on(sluice::event::data, [&](std::string_view chunk) { out += chunk; });
  c->on(sluice::event::end, [&] { ended = true; });
  int calls = 0;
  c->write("x", [&](std::error_code ec) { CHECK(!ec); ++calls; });
  c->write("y", [&](std::error_code ec) { CHECK(!ec); ++calls; });
  c->end();
  run();
  CHECK(out == "xy");
  CHECK(ended);
  CHECK(calls == 2);
}

TEST_CASE("compose: an error in the middle destroys the chain, and the composite gets it") {
  sluice::pass_through a, m;
  auto sink = std::make_unique<slow_sink>();
  slow_sink& s = *sink;
  sluice::writable w(std::move(sink));
  auto c = sluice::compose({a, m, w});
  std::error_code got;
  c->on(sluice::event::error, [&](std::error_code ec) { got = ec; });
  int calls = 0;
  c->write("x", [&](std::error_code) { ++calls; });
  run();
  m.destroy(sluice::user_error("boom"));
  run();
  CHECK(got == sluice::user_error("boom"));
  CHECK(a.destroyed());
  CHECK(w.destroyed());
  CHECK(c->destroyed());
  CHECK(calls == 1);
  CHECK(s.got == "x");
}

TEST_CASE("compose: the signal aborts the composite and the chain with ABORT_ERR") {
  std::stop_source stop;
  sluice::pass_through a;
  sluice::writable w(std::make_unique<slow_sink>());
  auto c = sluice::compose({a, w}, {.signal = stop.get_token()});
  std::error_code got;
  c->on(sluice::event::error, [&](std::error_code ec) { got = ec; });
  w.on(sluice::event::error, [](std::error_code) {});
  int calls = 0;
  c->write("x", [&](std::error_code) { ++calls; });
  run();
  stop.request_stop();
  run();
  CHECK(got == sluice::make_error_code(sluice::errc::aborted));
  CHECK(a.destroyed());
  CHECK(w.destroyed());
  int late = 0;
  std::error_code late_ec;
  c->write("y", [&](std::error_code ec) { late_ec = ec; ++late; });
  run();
  CHECK(late == 1);
  CHECK(late_ec);
  CHECK(calls == 1);
}

TEST_CASE("compose: misuse throws ERR_MISSING_ARGS or ERR_INVALID_ARG_VALUE and wires nothing") {
  sluice::readable r(std::make_unique<idle_source>());
  sluice::writable w(std::make_unique<slow_sink>());
  sluice::pass_through p;
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const sluice::stream_error& e) {
      return std::string(sluice::code_name(e.code()));
    }
    return std::string("no throw");
  };
  CHECK(code_of([&] { sluice::compose(std::vector<sluice::stream_ref>{}); }) == "ERR_MISSING_ARGS");
  CHECK(code_of([&] { sluice::compose({w, p}); }) == "ERR_INVALID_ARG_VALUE");
  CHECK(code_of([&] { sluice::compose({p, r}); }) == "ERR_INVALID_ARG_VALUE");
  // Node's order: streams[1] of (w, p, r) is checked for readable first.
  for (auto [bad, want] : {std::pair{std::vector<sluice::stream_ref>{w, p}, sluice::errc::compose_not_readable},
                           std::pair{std::vector<sluice::stream_ref>{p, r}, sluice::errc::compose_not_writable},
                           std::pair{std::vector<sluice::stream_ref>{p, w, r}, sluice::errc::compose_not_readable}}) {
    std::error_code got;
    try {
      sluice::compose(bad);
    } catch (const sluice::stream_error& e) {
      got = e.code();
    }
    CHECK(got == sluice::make_error_code(want));
  }
  // Nothing was piped: p still has no destination and nothing listens on w.
  CHECK(p.readable_flowing() == std::nullopt);
  run();
  CHECK_FALSE(p.destroyed());
  CHECK_FALSE(w.destroyed());
}

TEST_CASE("compose: deleting the composite mid-stream takes the chain down, and its callbacks come once") {
  sluice::pass_through a;
  auto sink = std::make_unique<slow_sink>();
  sluice::writable w(std::move(sink));
  w.on(sluice::event::error, [](std::error_code) {});
  a.on(sluice::event::error, [](std::error_code) {});
  int calls = 0;
  {
    auto c = sluice::compose({a, w});
    for (int i = 0; i < 3; ++i) c->write("x", [&](std::error_code) { ++calls; });
    run();
  }  // the listeners on a and w outlive it; ASan says if they reach it
  CHECK(calls == 3);
  run();
  CHECK(w.destroyed());
  CHECK(a.destroyed());
}

// Node's composite _destroy keeps its callback until the pipeline calls
// back: the composite is destroyed at once but closes after the chain.
TEST_CASE("compose: destroy() waits for the chain, and the composite closes last") {
  sluice::pass_through a, b;
  std::string log;
  const auto listen = [&log](sluice::pass_through& s, std::string name) {
    s.on(sluice::event::error, [&log, name](std::error_code e) {
      log += "error " + name + (e == sluice::errc::aborted ? " abort;" : " other;");
    });
    s.on(sluice::event::close, [&log, name] { log += "close " + name + ";"; });
  };
  listen(a, "a");
  listen(b, "b");
  auto c = sluice::compose({a, b});
  c->on(sluice::event::error, [&](std::error_code e) { log += std::string("error c") + (e == sluice::errc::aborted ? " abort;" : " other;"); });
  c->on(sluice::event::close, [&] { log += "close c;"; });
  int calls = 0;
  c->write("x", [&](std::error_code) { ++calls; });
  c->destroy();
  CHECK(c->destroyed());
  CHECK_FALSE(c->closed());
  CHECK(b.destroyed());       // the tail, by the composite's _destroy
  CHECK_FALSE(a.destroyed());  // the head, by the pipeline, later
  run();
  CHECK(calls == 1);
  CHECK(a.destroyed());
  CHECK(c->closed());
  CHECK(log == "error b abort;close b;error a abort;close a;error c abort;close c;");
}

TEST_CASE("compose: a destroy that waits closes the composite with the pipeline's error") {
  sluice::pass_through a, b;
  a.on(sluice::event::error, [](std::error_code) {});
  b.on(sluice::event::error, [](std::error_code) {});
  auto c = sluice::compose({a, b});
  std::error_code got;
  int errors = 0;
  c->on(sluice::event::error, [&](std::error_code e) {
    ++errors;
    got = e;
  });
  a.destroy(make_error_code(sluice::errc::write_after_end));  // any error but an abort
  c->destroy();
  run();
  CHECK(errors == 1);
  CHECK(got == sluice::errc::write_after_end);
  CHECK(c->errored() == sluice::errc::write_after_end);
}

TEST_CASE("compose: deleting the composite while its destroy waits leaves the chain to finish alone") {
  sluice::pass_through a, b;
  a.on(sluice::event::error, [](std::error_code) {});
  b.on(sluice::event::error, [](std::error_code) {});
  int closes = 0;
  a.on(sluice::event::close, [&] { ++closes; });
  b.on(sluice::event::close, [&] { ++closes; });
  {
    auto c = sluice::compose({a, b});
    c->destroy();
  }  // the pipeline's callback comes after it; ASan says if it reaches it
  run();
  CHECK(closes == 2);
  CHECK(a.destroyed());
}
