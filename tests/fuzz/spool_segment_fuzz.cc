// libFuzzer harness: the spool's segment reader, as a spool_writable reads
// back what an earlier run left in its directory (a segment torn by a
// crash, overwritten, or not a segment at all).
//
// Input: [flags][offset lo][offset hi] then the bytes of segment 1.
//   flags bit 0: the harness writes segment 1's header before the bytes
//                (else the bytes are the whole file, header included);
//   flags bit 1: a saved position in segment 1 at byte 16 + offset (a
//                crash after an acknowledgement mid-segment);
//   flags bit 2: a good segment 2 after it, with two records.
// A spool_writable opens the directory, its sink (sync) takes each record,
// and end() must succeed. What it sent must be exactly what parse_record()
// reads from the file, from the header (or the saved position when it lies
// inside the file) to the first record that is not whole and intact, then
// segment 2's records; torn_bytes() the rest of segment 1; no segment left
// on disk after end(). A record length that makes the reader hold more
// than the file is caught by running with -malloc_limit_mb (see
// meson.build).
//
// With SPOOL_FUZZ_SEEDS=DIR set, the harness writes seeds there instead: real
// segments written by a spool_writable whose downstream never acknowledges.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_dir.h"
#include "sluice/spool/detail/spool_dir.h"
#include "sluice/spool/detail/spool_segment.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/sink.h"
#include "sluice/spool/spool_writable.h"
#include "sluice/stream/writable.h"

namespace {

namespace fs = std::filesystem;
namespace detail = sluice::detail;

void check(bool c) {
  if (!c) std::abort();
}

// The downstream's sink: keeps each message; completes at once, or never
// (`hold`: the seed writer's receiver that is away).
class messages_sink : public sluice::sink {
 public:
  explicit messages_sink(std::vector<std::string>& got, bool hold) : sink({}), got_(got), hold_(hold) {}
  void write(std::string_view chunk, sluice::write_done done) override {
    got_.emplace_back(chunk);
    if (!hold_) done();
  }

 private:
  std::vector<std::string>& got_;
  bool hold_;
};

std::unique_ptr<sluice::writable> downstream(sluice::loop& l, std::vector<std::string>& got, bool hold) {
  return std::make_unique<sluice::writable>(std::make_unique<messages_sink>(got, hold),
                                            sluice::writable_options{.high_water_mark = 16, .object_mode = true,
                                                                     .event_loop = &l});
}

// Turns the loop until `done()`, at most `turns` times; the spool has no fds
// of its own to wait for, only ticks, immediates and its position timer.
bool spin(sluice::loop& l, const std::function<bool()>& done, int turns = 200) {
  for (int i = 0; i < turns && !done(); ++i) {
    l.run_until_idle();
    if (!done()) ::usleep(i < 10 ? 0 : 1000);
  }
  return done();
}

const std::string& root() { return sluice::fuzz::fuzz_dir("spool-fuzz"); }

void spit(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(f.good());
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

sluice::spool_options options(sluice::loop& l, const std::string& dir) {
  sluice::spool_options o;
  o.dir = dir;
  o.segment_bytes = 1 << 20;
  o.max_bytes = 64 << 20;
  o.stream.event_loop = &l;
  return o;
}

// Seeds: segments as a spool writes them, of a few records each.
void write_seeds(const std::string& out) {
  const std::vector<std::vector<std::string>> runs = {
      {"one"},
      {"first", "", "third record", std::string(300, 'x')},
      {"<13>1 2026-12-03T10:00:00Z host app 1 - - hello", "<13>1 2026-12-03T10:00:01Z host app 1 - - again"},
  };
  int n = 0;
  for (const auto& run : runs) {
    const std::string dir = root() + "/seed";
    std::error_code ec;
    fs::remove_all(dir, ec);
    {
      sluice::loop l;
      std::vector<std::string> got;
      auto w = sluice::make_spool_writable(downstream(l, got, true), options(l, dir));
      std::size_t done = 0;
      for (const std::string& m : run) w->write(m, [&](std::error_code e) { check(!e), ++done; });
      check(spin(l, [&] { return done == run.size(); }));
      w->destroy();
      l.run_until_idle();
    }
    const std::string seg = slurp(dir + "/" + detail::segment_name(1));
    check(seg.size() > detail::segment_header_size);
    ++n;
    // The file as it is; the records after a header of the harness's; a
    // saved position after the first record, and a good segment 2 after.
    spit(out + "/segment-" + std::to_string(n), std::string("\0\0\0", 3) + seg);
    std::string rec;
    detail::append_record(rec, run[0]);
    const std::size_t first = rec.size();
    spit(out + "/records-" + std::to_string(n),
         std::string("\1\0\0", 3) + seg.substr(detail::segment_header_size));
    spit(out + "/position-" + std::to_string(n),
         std::string{'\6', static_cast<char>(first & 0xff), static_cast<char>(first >> 8)} + seg);
  }
  // A torn tail: the last record cut short.
  std::string seg;
  detail::append_segment_header(seg, 1);
  detail::append_record(seg, "whole");
  std::string last;
  detail::append_record(last, "torn record");
  spit(out + "/torn", std::string("\0\0\0", 3) + seg + last.substr(0, last.size() - 3));
}

bool skip_long() {
  static const bool skip = std::getenv("SPOOL_FUZZ_SKIP_LONG") != nullptr;
  return skip;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("SPOOL_FUZZ_SEEDS")) {
    write_seeds(out);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 3) return 0;
  const unsigned flags = bytes[0];
  const std::uint64_t offset = detail::segment_header_size + (bytes[1] | (std::uint64_t{bytes[2]} << 8));
  const std::string_view data(reinterpret_cast<const char*>(bytes + 3), size - 3);

  const std::string dir = root() + "/spool";
  std::error_code ec;
  fs::remove_all(dir, ec);
  check(::mkdir(dir.c_str(), 0700) == 0);
  std::string seg1;
  if (flags & 1) detail::append_segment_header(seg1, 1);
  seg1 += data;
  spit(dir + "/" + detail::segment_name(1), seg1);
  const std::vector<std::string> second = {"segment 2, first", "segment 2, second"};
  if (flags & 4) {
    std::string seg2;
    detail::append_segment_header(seg2, 2);
    for (const std::string& m : second) detail::append_record(seg2, m);
    spit(dir + "/" + detail::segment_name(2), seg2);
  }
  if (flags & 2) {
    detail::spool_dir d;
    check(!d.open(dir));
    check(!d.write_position({1, offset}));
  }

  // What the reader must send: segment 1's records from where reading
  // starts to the first that is not whole and intact.
  std::vector<std::string> want;
  std::uint64_t torn = 0;
  if (detail::check_segment_header(seg1, 1)) {
    std::size_t at = detail::segment_header_size;
    if ((flags & 2) && offset <= seg1.size()) at = static_cast<std::size_t>(offset);
    std::string_view rest = std::string_view(seg1).substr(at), payload;
    std::size_t used = 0;
    while (detail::parse_record(rest, payload, used) == detail::record_status::ok) {
      want.emplace_back(payload);
      rest.remove_prefix(used);
    }
    torn = rest.size();
    // SPOOL_FUZZ_SKIP_LONG=1: inputs whose last record claims more bytes
    // than the file holds are skipped, so that a run goes on past the
    // reader's allocation of the claimed length (found by this harness;
    // meson test runs without it).
    if (skip_long() && rest.size() >= detail::record_header_size) {
      std::uint32_t len = 0;
      for (int i = 0; i < 4; ++i) len |= std::uint32_t(static_cast<unsigned char>(rest[i])) << (8 * i);
      if (len <= detail::max_record_payload && len > rest.size() - detail::record_header_size) return 0;
    }
  } else {
    torn = seg1.size();
  }
  if (flags & 4) want.insert(want.end(), second.begin(), second.end());

  {
    sluice::loop l;
    std::vector<std::string> got;
    auto w = sluice::make_spool_writable(downstream(l, got, false), options(l, dir));
    check(w->recovered_segments() == ((flags & 4) ? 2u : 1u));
    bool ended = false;
    std::error_code end_ec;
    w->end([&](std::error_code e) { ended = true, end_ec = e; });
    check(spin(l, [&] { return ended; }));
    check(!end_ec);
    check(got == want);
    check(w->torn_bytes() == torn);
    check(w->segments() == 0);
  }
  for (const auto& e : fs::directory_iterator(dir)) check(e.path().filename().string().rfind("seg-", 0) != 0);
  return 0;
}
