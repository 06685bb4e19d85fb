// create_gzip(), create_gunzip(), create_deflate(), create_inflate() and the
// zstd pair: byte-exact against the gzip and zstd tools both ways, through
// backpressure on both sides, flush() mid-stream, and corrupt input as a
// stream error with Node's code, errno and message.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/sink.h"
#include "sluice/stream/writable.h"
#include "sluice/zlib/gzip.h"
#include "sluice/zlib/zlib_error.h"
#include "sluice/zlib/zstd.h"
#include "support/must_call.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

// Log lines with some randomness, so that compression has work but wins.
std::string log_text(std::size_t bytes, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::string s;
  s.reserve(bytes + 128);
  for (std::size_t i = 0; s.size() < bytes; ++i)
    s += "2026-12-02T01:00:00Z host app[" + std::to_string(rng() % 65536) + "]: request " + std::to_string(i) +
         " took " + std::to_string(rng() % 1000) + "ms status=" + std::to_string(200 + rng() % 4) + "\n";
  s.resize(bytes);
  return s;
}

std::string random_bytes(std::size_t n, unsigned seed = 2) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Equal strings, and when not, says where they part (without printing
// megabytes).
bool same(const std::string& got, const std::string& want) {
  if (got == want) return true;
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  MESSAGE("got " << got.size() << " bytes, want " << want.size() << ", first difference at " << i);
  return false;
}

// Runs a shell command; its stdout.
std::string sh(const std::string& cmd) {
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  CHECK(::pclose(p) == 0);
  return out;
}

// Counts write callbacks: each write must be called back exactly once.
struct callbacks {
  int issued = 0;
  int calls = 0;
  std::vector<std::error_code> errors;
  write_cb cb() {
    ++issued;
    return [this](std::error_code ec) {
      ++calls;
      if (ec) errors.push_back(ec);
    };
  }
};

struct run_result {
  std::string out;
  std::error_code error;  // the 'error' event's
  int errors = 0;
  bool saw_false = false;  // write() returned false at least once
};

// Writes `in` `piece` bytes at a time, honouring write()'s false (the next
// write waits for 'drain'), then end(); collects the readable side with
// 'data', or, when `dest` is given, pipes it there.
run_result run_through(zlib_base& z, std::string_view in, std::size_t piece, callbacks& cbs,
                       writable* dest = nullptr) {
  run_result r;
  if (dest)
    z.pipe(*dest);
  else
    z.on(event::data, [&r](std::string_view d) { r.out.append(d); });
  z.on(event::error, [&r](std::error_code ec) {
    r.error = ec;
    ++r.errors;
  });
  std::size_t off = 0;
  std::function<void()> pump = [&] {
    while (off < in.size()) {
      const std::string_view c = in.substr(off, piece);
      off += c.size();
      if (!z.write(c, cbs.cb())) {
        r.saw_false = true;
        if (z.destroyed()) return;
        z.once(event::drain, [&] { pump(); });
        return;
      }
    }
    z.end(cbs.cb());
  };
  pump();
  loop::current().run_until_idle();
  return r;
}

std::string through(std::unique_ptr<zlib_base> z, std::string_view in, std::size_t piece = 65536) {
  callbacks cbs;
  run_result r = run_through(*z, in, piece, cbs);
  CHECK(cbs.calls == cbs.issued);
  CHECK(cbs.errors.empty());
  CHECK(r.errors == 0);
  return r.out;
}

// Feeds `in` to a decompressor; the error it reports (and checks that it
// is reported once, to 'error' and to the failing write's callback).
std::error_code corrupt_error(std::unique_ptr<zlib_base> z, std::string_view in) {
  callbacks cbs;
  run_result r = run_through(*z, in, 65536, cbs);
  CHECK(cbs.calls == cbs.issued);
  CHECK(r.errors == 1);
  CHECK(!cbs.errors.empty());
  if (!cbs.errors.empty()) CHECK(cbs.errors.front() == r.error);
  return r.error;
}

struct tool_files {
  temp_dir dir;
  std::string in = dir.file("in"), out = dir.file("out");
};

}  // namespace

TEST_CASE("gzip: our gzip's output is what gzip -d reads back, and gzip's is what our gunzip reads back") {
  tool_files f;
  for (const std::string& input : {log_text(3 << 20), random_bytes(300000), std::string()}) {
    CAPTURE(input.size());
    for (int level : {-1, 1, 9}) {
      spit(f.out, through(create_gzip({.level = level}), input));
      CHECK(same(sh("gzip -dc < " + f.out), input));
    }
    spit(f.in, input);
    CHECK(same(through(create_gunzip(), sh("gzip -9c < " + f.in), 4096), input));
    CHECK(same(through(create_gunzip(), sh("gzip -1c < " + f.in)), input));
    CHECK(same(through(create_unzip(), sh("gzip -c < " + f.in)), input));
  }
}

TEST_CASE("gzip: gunzip reads concatenated members (as gzip -d does) and ignores trailing zeros") {
  tool_files f;
  spit(f.in, "first\n");
  std::string two = sh("gzip -c < " + f.in);
  spit(f.in, "second\n");
  two += sh("gzip -c < " + f.in);
  CHECK(same(through(create_gunzip(), two, 7), "first\nsecond\n"));
  CHECK(same(through(create_gunzip(), two + std::string(10, '\0')), "first\nsecond\n"));
}

TEST_CASE("deflate: zlib format both ways, our output decoded by another inflater (Python's zlib, where there is one)") {
  const std::string input = log_text(1 << 20, 7);
  const std::string z = through(create_deflate({.level = 6}), input);
  CHECK(static_cast<unsigned char>(z[0]) == 0x78);  // the zlib header: deflate, 32 KiB window
  CHECK(same(through(create_inflate(), z, 1000), input));
  tool_files f;
  spit(f.out, z);
  spit(f.in, input);
  // Python's zlib, where there is one, is an inflater that is not ours.
  if (std::system("command -v python3 >/dev/null 2>&1") == 0)
    CHECK(same(sh("python3 -c 'import sys,zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))' < " +
                  f.out),
               input));
  else
    MESSAGE("python3 not found: our deflate output not checked by another inflater");
  CHECK(same(through(create_inflate_raw(), through(create_deflate_raw(), input)), input));
}

TEST_CASE("zstd: our output is what zstd -d reads back, zstd's is what we read back, byte for byte the same frame") {
  tool_files f;
  for (const std::string& input : {log_text(1 << 20, 3), random_bytes(300000, 4), std::string()}) {
    CAPTURE(input.size());
    spit(f.in, input);
    for (int level : {1, 3, 19}) {
      CAPTURE(level);
      const std::string ours = through(create_zstd_compress({.level = level}), input);
      spit(f.out, ours);
      CHECK(same(sh("zstd -qdc < " + f.out), input));
      // The tool single-threaded over a pipe (no content size known) writes
      // the same frame as libzstd with a checksum: the same library, the
      // same parameters. (Its default, one worker thread, cuts blocks
      // elsewhere.) gzip has a deflate of its own: there only the decoded
      // bytes can agree.
      const std::string theirs = sh("zstd -q --single-thread -" + std::to_string(level) + " -c < " + f.in);
      CHECK(same(ours, theirs));
      CHECK(same(through(create_zstd_decompress(), theirs, 5000), input));
    }
    // zstd run on a file writes the content size in the frame header.
    CHECK(same(through(create_zstd_decompress(), sh("zstd -q -c " + f.in)), input));
  }
}

TEST_CASE("zstd: concatenated frames decompress to the concatenation, as zstd -d does") {
  const std::string a = through(create_zstd_compress(), "first\n");
  const std::string b = through(create_zstd_compress(), "second\n");
  CHECK(same(through(create_zstd_decompress(), a + b, 3), "first\nsecond\n"));
}

// A writable whose sink completes each write on a later turn: the slow
// consumer that makes the readable side fill.
class slow_sink final : public sink {
 public:
  explicit slow_sink(std::string& out) : sink({}), out_(out) {}
  void write(std::string_view chunk, write_done done) override {
    out_.append(chunk);
    ++writes;
    loop::current().set_immediate([done] { done(); });
  }
  int writes = 0;

 private:
  std::string& out_;
};

TEST_CASE("compress and decompress through backpressure: write() false and 'drain' on the writing side, a slow pipe on the reading side") {
  const std::string input = log_text(8 << 20, 5);
  struct codec_pair {
    const char* name;
    std::unique_ptr<zlib_base> (*compress)();
    std::unique_ptr<zlib_base> (*decompress)();
  };
  const codec_pair pairs[] = {
      {"gzip", [] { return create_gzip(); }, [] { return create_gunzip(); }},
      {"zstd", [] { return create_zstd_compress(); }, [] { return create_zstd_decompress(); }},
  };
  for (const codec_pair& p : pairs) {
    CAPTURE(p.name);
    std::string compressed, output;
    {
      auto z = p.compress();
      writable dest(std::make_unique<slow_sink>(compressed), {.high_water_mark = 16384});
      callbacks cbs;
      std::size_t peak = 0;
      z->on(event::data, [&](std::string_view) { peak = std::max(peak, z->readable_length()); });
      const run_result r = run_through(*z, input, 65536, cbs, &dest);
      CHECK(r.saw_false);
      CHECK(r.errors == 0);
      CHECK(cbs.calls == cbs.issued);
      CHECK(cbs.errors.empty());
      CHECK(dest.writable_finished());
      // The readable side held at most its high-water mark and one chunk's output.
      CHECK(peak <= 16384 + 65536);
    }
    {
      auto z = p.decompress();
      writable dest(std::make_unique<slow_sink>(output), {.high_water_mark = 16384});
      callbacks cbs;
      const run_result r = run_through(*z, compressed, 4096, cbs, &dest);
      CHECK(r.saw_false);
      CHECK(r.errors == 0);
      CHECK(cbs.calls == cbs.issued);
      CHECK(dest.writable_finished());
    }
    CHECK(output.size() == input.size());
    CHECK(same(output, input));
  }
}

TEST_CASE("flush(): the output so far decompresses to all that was written before it, mid-stream") {
  struct codec_pair {
    const char* name;
    std::unique_ptr<zlib_base> (*compress)();
    std::unique_ptr<zlib_base> (*decompress)();
  };
  const codec_pair pairs[] = {
      {"gzip", [] { return create_gzip(); }, [] { return create_gunzip(); }},
      {"deflate", [] { return create_deflate(); }, [] { return create_inflate(); }},
      {"zstd", [] { return create_zstd_compress(); }, [] { return create_zstd_decompress(); }},
  };
  for (const codec_pair& p : pairs) {
    CAPTURE(p.name);
    for (flush_kind kind : {flush_kind::full, flush_kind::sync}) {
      auto z = p.compress();
      std::string out;
      z->on(event::data, [&](std::string_view d) { out.append(d); });
      callbacks cbs;
      const std::string a = log_text(100000, 9);
      z->write(a, cbs.cb());
      std::string at_flush;
      bool flushed = false;
      z->flush(kind, [&](std::error_code ec) {
        CHECK(!ec);
        flushed = true;
        at_flush = out;
      });
      loop::current().run_until_idle();
      REQUIRE(flushed);
      // Without the flush, the compressor holds back most of `a`.
      std::string decoded;
      auto d = p.decompress();
      d->on(event::data, [&](std::string_view c) { decoded.append(c); });
      d->write(at_flush, cbs.cb());
      loop::current().run_until_idle();
      CHECK(same(decoded, a));
      z->write("after\n", cbs.cb());
      z->end(cbs.cb());
      loop::current().run_until_idle();
      CHECK(same(through(p.decompress(), out), a + "after\n"));
      CHECK(cbs.calls == cbs.issued);
      CHECK(cbs.errors.empty());
    }
  }
}

TEST_CASE("flush() after end() calls back at 'end'; after 'finish', on the next tick") {
  auto z = create_gzip();
  std::string out;
  z->on(event::data, [&](std::string_view d) { out.append(d); });
  bool ended = false, flushed = false, flushed2 = false;
  z->on(event::end, [&] { ended = true; });
  z->write("x");
  z->end();
  z->flush([&](std::error_code) {
    CHECK(ended);
    flushed = true;
  });
  loop::current().run_until_idle();
  CHECK(flushed);
  z->flush([&](std::error_code) { flushed2 = true; });
  CHECK(!flushed2);
  loop::current().run_until_idle();
  CHECK(flushed2);
}

TEST_CASE("gunzip and inflate: corrupt input is a stream error with Node's code, errno and message") {
  std::error_code ec = corrupt_error(create_gunzip(), "hello world");
  CHECK(code_name(ec) == "Z_DATA_ERROR");
  CHECK(zlib_errno(ec) == -3);
  CHECK(ec.message() == "incorrect header check");

  ec = corrupt_error(create_inflate(), "hello world");
  CHECK(code_name(ec) == "Z_DATA_ERROR");
  CHECK(ec.message() == "incorrect header check");

  // Truncated: Node's "unexpected end of file", Z_BUF_ERROR, at end().
  const std::string gz = through(create_gzip(), log_text(10000));
  ec = corrupt_error(create_gunzip(), std::string_view(gz).substr(0, gz.size() / 2));
  CHECK(code_name(ec) == "Z_BUF_ERROR");
  CHECK(zlib_errno(ec) == -5);
  CHECK(ec.message() == "unexpected end of file");

  // A flipped byte in the data: the CRC or the code tables catch it.
  std::string bad = gz;
  bad[bad.size() - 6] ^= 0x55;
  ec = corrupt_error(create_gunzip(), bad);
  CHECK(code_name(ec) == "Z_DATA_ERROR");
  CHECK(ec.message() == "incorrect data check");
  // Garbage after a member is a member that fails.
  ec = corrupt_error(create_gunzip(), gz + "garbage");
  CHECK(code_name(ec) == "Z_DATA_ERROR");
}

TEST_CASE("zstd decompress: corrupt input is a stream error with Node 22's ZSTD_error_ code") {
  std::error_code ec = corrupt_error(create_zstd_decompress(), "hello world, not zstd");
  CHECK(code_name(ec) == "ZSTD_error_prefix_unknown");
  CHECK(zlib_errno(ec) == 10);
  CHECK(ec.message() == "Unknown frame descriptor");

  std::string z = through(create_zstd_compress(), log_text(100000));
  std::string bad = z;
  bad[bad.size() - 2] ^= 0x55;  // in the checksum
  ec = corrupt_error(create_zstd_decompress(), bad);
  CHECK(code_name(ec) == "ZSTD_error_checksum_wrong");

  ec = corrupt_error(create_zstd_decompress(), std::string_view(z).substr(0, z.size() / 2));
  CHECK(code_name(ec) == "ZSTD_error_srcSize_wrong");
  CHECK(ec.message() == "unexpected end of file");
}

TEST_CASE("options out of range throw, as Node's RangeError") {
  CHECK_THROWS_AS(create_gzip({.level = 10}), stream_error);
  CHECK_THROWS_AS(create_gzip({.window_bits = 7}), stream_error);
  CHECK_THROWS_AS(create_deflate({.chunk_size = 10}), stream_error);
  CHECK_THROWS_AS(create_zstd_compress({.level = 100}), stream_error);
}

// What() and the code of the stream_error a factory throws.
template <class F>
std::pair<std::string, std::error_code> range_error_of(F make) {
  try {
    make();
  } catch (const stream_error& e) {
    return {e.what(), e.code()};
  }
  return {"no throw", {}};
}

TEST_CASE("an option out of range names that option and its range, as Node's message does") {
  // Node v20: zlib.createGzip({level: 12}) and so on (node -e).
  const std::pair<std::function<void()>, std::string> cases[] = {
      {[] { create_gzip({.level = 12}); },
       "The value of \"options.level\" is out of range. It must be >= -1 and <= 9. Received 12"},
      {[] { create_gzip({.window_bits = 8}); },
       "The value of \"options.windowBits\" is out of range. It must be >= 9 and <= 15. Received 8"},
      {[] { create_gunzip({.window_bits = 7}); },
       "The value of \"options.windowBits\" is out of range. It must be >= 8 and <= 15. Received 7"},
      {[] { create_gzip({.mem_level = 10}); },
       "The value of \"options.memLevel\" is out of range. It must be >= 1 and <= 9. Received 10"},
      {[] { create_gzip({.strategy = 5}); },
       "The value of \"options.strategy\" is out of range. It must be >= 0 and <= 4. Received 5"},
      {[] { create_deflate({.chunk_size = 10}); },
       "The value of \"options.chunkSize\" is out of range. It must be >= 64. Received 10"},
      {[] { create_zstd_decompress({.chunk_size = 10}); },
       "The value of \"options.chunkSize\" is out of range. It must be >= 64. Received 10"},
  };
  for (const auto& [make, message] : cases) {
    const auto [what, code] = range_error_of(make);
    CHECK(what == message);
    CHECK(code == errc::out_of_range);
    CHECK(code_name(code) == "ERR_OUT_OF_RANGE");
  }
  // zstd's range is the library's (ZSTD_minCLevel() is negative, and
  // depends on its version); its maximum has been 22 since 1.0.
  const auto [what, code] = range_error_of([] { create_zstd_compress({.level = 100}); });
  CHECK(what.starts_with("The value of \"options.level\" is out of range. It must be >= -"));
  CHECK(what.ends_with(" and <= 22. Received 100"));
  CHECK(code == errc::out_of_range);
}

}  // namespace sluice::test
