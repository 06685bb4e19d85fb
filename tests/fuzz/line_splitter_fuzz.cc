// libFuzzer harness: line_splitter against a model of its rules. The input
// is [max][seed] then the data; the data is fed in chunks of 0 to 16 bytes
// (sizes from `seed`), and the lines (and the error) must be those the
// model finds in the whole data at once.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/lines/line_splitter.h"

namespace {

struct outcome {
  std::vector<std::string> lines;
  bool too_long = false;
  bool operator==(const outcome&) const = default;
};

// The rules of line_splitter.h, on the whole data: a line ends at "\n"
// (a "\r" just before it is not part of it); the bytes after the last "\n"
// are a last line; the first line longer than `max` ends everything.
outcome model(std::string_view data, std::size_t max) {
  outcome o;
  while (!data.empty()) {
    const std::size_t nl = data.find('\n');
    std::string_view line = data.substr(0, nl);
    if (nl != std::string_view::npos && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max) {
      o.too_long = true;
      return o;
    }
    o.lines.emplace_back(line);
    if (nl == std::string_view::npos) break;
    data.remove_prefix(nl + 1);
  }
  return o;
}

outcome split(std::string_view data, std::size_t max, std::uint8_t seed) {
  outcome o;
  sluice::line_splitter s(max);
  std::error_code ec;
  std::uint32_t r = seed * 2654435761u + 1;
  std::vector<std::string> chunks;  // each must outlive its lines
  while (!data.empty() || chunks.empty()) {
    r = r * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>((r >> 16) % 17, data.size());
    chunks.emplace_back(data.substr(0, n));
    data.remove_prefix(n);
    s.feed(chunks.back());
    while (auto line = s.next(ec)) o.lines.emplace_back(*line);
    if (ec) {
      o.too_long = ec == sluice::errc::line_too_long;
      if (!o.too_long) std::abort();
      return o;
    }
    if (data.empty()) break;
  }
  if (auto last = s.finish(ec)) o.lines.emplace_back(*last);
  if (ec) {
    if (ec != sluice::errc::line_too_long) std::abort();
    o.too_long = true;
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 2) return 0;
  // Small limits, where the edge cases are, and now and then the default.
  const std::size_t max = bytes[0] == 0xff ? sluice::line_options{}.max_line_length : bytes[0] % 16;
  const std::string_view data(reinterpret_cast<const char*>(bytes + 2), size - 2);
  if (!(split(data, max, bytes[1]) == model(data, max))) std::abort();
  return 0;
}
