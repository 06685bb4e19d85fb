// print(): fmt formatting straight into the stream's buffer, with write()'s rules.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "sluice/loop.h"
#include "sluice/sinks/memory_sink.h"
#include "sluice/stream/writable.h"
#include "support/alloc_counter.h"
#include "support/harness.h"
#include "support/printers.h"

using namespace sluice;
using sluice::test::harness;

namespace {

struct memory_stream {
  loop l;
  memory_sink* sink = nullptr;
  std::unique_ptr<writable> w;
  explicit memory_stream(writable_options o = {}) {
    auto s = std::make_unique<memory_sink>();
    sink = s.get();
    o.event_loop = &l;
    w = std::make_unique<writable>(std::move(s), o);
  }
};

}  // namespace

TEST_CASE("print formats its arguments like fmt::format") {
  memory_stream m;
  m.w->print("{} {:>5} {:.2f} {:#x} {}\n", "id", 42, 3.14159, 255, std::string_view("end"));
  m.w->print("{}", "");
  m.w->print("no args\n");
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() == "id    42 3.14 0xff end\nno args\n");
}

TEST_CASE("print returns what write would: false at the high-water mark") {
  memory_stream m({.high_water_mark = 8, .auto_destroy = true});
  m.w->cork();  // keeps everything buffered, so length grows
  CHECK(m.w->print("{}", "abc"));
  CHECK(m.w->writable_length() == 3);
  CHECK_FALSE(m.w->print("{}{}", "de", "fgh"));  // 8 bytes: at the mark
  CHECK(m.w->writable_need_drain());
  m.w->uncork();
  m.l.run_until_idle();
  CHECK(m.sink->data() == "abcdefgh");
}

TEST_CASE("print after end calls back nothing but errors the stream with ERR_STREAM_WRITE_AFTER_END") {
  harness h;
  h.w->end();
  CHECK_FALSE(h.w->print("late {}\n", 1));
  h.loop.run_until_idle();
  CHECK(h.log.str().find("error ERR_STREAM_WRITE_AFTER_END") != std::string::npos);
}

TEST_CASE("vprint with a callback calls it once, like write's") {
  harness h;
  h.w->vprint("{}-{}", fmt::make_format_args(1, 2), h.cb("1-2"));
  h.sink->complete();
  h.loop.run_until_idle();
  CHECK(h.log.str().rfind("_write 1-2; cb 1-2 ok", 0) == 0);
}

TEST_CASE("lines longer than the arena's chunks, and lines at block ends, arrive whole") {
  memory_stream m;
  std::string expected;
  const std::string long_line(10000, 'x');
  for (int i = 0; i < 3000; ++i) {  // ~100 bytes each: crosses several 64 KiB blocks
    m.w->print("{:06} {}\n", i, std::string(90, static_cast<char>('a' + i % 26)));
    expected += fmt::format("{:06} {}\n", i, std::string(90, static_cast<char>('a' + i % 26)));
    if (i % 1000 == 0) {
      m.w->print("{}\n", long_line);
      expected += long_line + "\n";
    }
    if (i % 100 == 0) m.l.run_until_idle();
  }
  m.w->end();
  m.l.run();
  CHECK(m.sink->data() == expected);
}

TEST_CASE("print makes no heap allocation per line in steady state") {
  memory_stream m;
  m.w->cork();
  for (int i = 0; i < 2000; ++i) m.w->print("{} INFO request id={} status={}\n", "2026-11-30T00:00:00Z", i, 200);
  m.w->uncork();
  m.l.run_until_idle();  // warm: pool and arena have grown to the batch size
  m.w->cork();
  const auto before = sluice::test::allocation_count();
  for (int i = 0; i < 2000; ++i) m.w->print("{} INFO request id={} status={}\n", "2026-11-30T00:00:00Z", i, 200);
  const auto after = sluice::test::allocation_count();
  m.w->uncork();
  m.l.run_until_idle();
  CHECK(after - before == 0);
}
