// libFuzzer harness: the decompressing transforms (create_gunzip,
// create_inflate, create_inflate_raw, create_unzip, create_zstd_decompress)
// over arbitrary input.
//
// Input: [codec][seed] then the data.
//   - The data is written whole to one decompressor and in pieces of 1 to
//     64 bytes (sizes from `seed`) to another, then both are ended: both
//     must give the same error (or none) and, without one, the same output
//     (with one, one output is the other's prefix: as in Node, the output of
//     the step that fails is not pushed, and steps differ by piece), every write
//     callback is called exactly once, and an error is Node's: a
//     "Z_*"/"ZSTD_error_*" code and the 'error' event exactly once.
//   - Output is capped (the readable side is read as it comes, and a
//     decompressor giving more than 64 MiB is destroyed), so a small
//     zip bomb is not an out-of-memory report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/zlib/gzip.h"
#include "sluice/zlib/zlib_error.h"
#include "sluice/zlib/zstd.h"

namespace {

void check(bool c) {
  if (!c) std::abort();
}

std::unique_ptr<sluice::zlib_base> make(unsigned codec) {
  switch (codec % 5) {
    case 0: return sluice::create_gunzip();
    case 1: return sluice::create_inflate();
    case 2: return sluice::create_inflate_raw();
    case 3: return sluice::create_unzip();
    default: return sluice::create_zstd_decompress();
  }
}

struct outcome {
  std::string out;
  std::error_code error;
  int errors = 0;
};

constexpr std::size_t max_out = 64u << 20;

outcome run(unsigned codec, std::string_view data, std::uint8_t seed, bool whole) {
  outcome r;
  int issued = 0, called = 0;
  {
    auto z = make(codec);
    z->on(sluice::event::data, [&](std::string_view d) {
      if (r.out.size() < max_out) r.out.append(d.substr(0, max_out - r.out.size()));
    });
    z->on(sluice::event::error, [&](std::error_code ec) {
      r.error = ec;
      ++r.errors;
    });
    auto cb = [&](std::error_code) { ++called; };
    std::uint32_t s = seed;
    while (!data.empty() && !z->destroyed()) {
      std::size_t n = data.size();
      if (!whole) {
        s = s * 1103515245u + 12345u;
        n = std::min<std::size_t>(n, 1 + (s >> 16) % 64);
      }
      ++issued;
      z->write(data.substr(0, n), cb);
      data.remove_prefix(n);
      // The pieces go in as a producer gives them, one turn each.
      sluice::loop::current().run_until_idle();
    }
    ++issued;
    z->end(cb);
    sluice::loop::current().run_until_idle();
  }
  sluice::loop::current().run_until_idle();
  check(called == issued);
  check(r.errors <= 1);
  if (r.errors) {
    const std::string code = sluice::code_name(r.error);
    check(code.rfind("Z_", 0) == 0 || code.rfind("ZSTD_error_", 0) == 0);
    check(!r.error.message().empty());
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const unsigned codec = data[0];
  const std::uint8_t seed = data[1];
  const std::string_view input(reinterpret_cast<const char*>(data + 2), size - 2);
  const outcome whole = run(codec, input, seed, true);
  const outcome pieces = run(codec, input, seed, false);
  // The same bytes, however split: the same error, and the same output.
  // (Output capped at max_out in both may stop at different writes.)
  check(whole.error == pieces.error);
  if (whole.out.size() < max_out && pieces.out.size() < max_out) {
    if (!whole.error) {
      check(whole.out == pieces.out);
    } else {
      const std::string& shorter = whole.out.size() < pieces.out.size() ? whole.out : pieces.out;
      const std::string& longer = whole.out.size() < pieces.out.size() ? pieces.out : whole.out;
      check(longer.compare(0, shorter.size(), shorter) == 0);
    }
  }
  return 0;
}
