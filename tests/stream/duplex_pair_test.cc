// duplex_pair(): Node's duplexPair(). The behaviour pinned against Node's
// traces is in conformance/api/pair-*.scn; these tests pin what C++ adds:
// deleting one side's object while the other is still in use.
#include <doctest/doctest.h>

#include <string>

#include "sluice/sluice.h"

namespace {
void run() { sluice::loop::current().run_until_idle(); }
}  // namespace

TEST_CASE("duplex_pair: what one side writes the other reads, both ways") {
  auto [a, b] = sluice::duplex_pair();
  std::string at_a, at_b;
  a->on(sluice::event::data, [&](std::string_view c) { at_a += c; });
  b->on(sluice::event::data, [&](std::string_view c) { at_b += c; });
  int calls = 0;
  a->write("ping", [&](std::error_code ec) { CHECK(!ec); ++calls; });
  b->write("pong", [&](std::error_code ec) { CHECK(!ec); ++calls; });
  run();
  CHECK(at_b == "ping");
  CHECK(at_a == "pong");
  CHECK(calls == 2);
}

TEST_CASE("duplex_pair: a write to a side whose object was deleted fails with ERR_STREAM_DESTROYED") {
  auto [a, b] = sluice::duplex_pair();
  b.reset();
  std::error_code got;
  int calls = 0;
  a->on(sluice::event::error, [](std::error_code) {});
  a->write("x", [&](std::error_code ec) { got = ec; ++calls; });
  run();
  CHECK(calls == 1);
  CHECK(got == sluice::make_error_code(sluice::errc::destroyed));
}

TEST_CASE("duplex_pair: deleting the writer while the reader holds its write's callback") {
  auto [a, b] = sluice::duplex_pair();
  int calls = 0;
  a->write("x", [&](std::error_code) { ++calls; });
  a.reset();  // the write is still in flight: b holds its completion
  // b's _read must not call into the deleted writer (ASan would say so).
  CHECK(b->read() == std::optional<std::string>("x"));
  run();
  CHECK(calls == 1);  // called by the writer's destructor, as any owed callback
}

TEST_CASE("duplex_pair: deleting the reader while the writer's end() waits for its 'end'") {
  auto [a, b] = sluice::duplex_pair();
  int calls = 0;
  a->end([&](std::error_code) { ++calls; });
  run();
  CHECK(calls == 0);  // nobody read b: no 'end' yet
  b.reset();          // takes a's 'end' listener with it
  a.reset();
  CHECK(calls == 1);
}
