// The workload: N log lines, all different, the same in every variant and in
// log_bench.js.
#pragma once

#include <cstdint>
#include <string_view>

namespace log_bench {

// The fmt/spdlog format (spdlog adds the newline itself), the printf one, and
// the arguments; all variants format the same fields.
#define LINE_BODY "2026-11-30T{:02}:{:02}:{:02}.{:06}Z INFO request id={} path={} status={} took_us={}"
#define LINE_PRINTF "2026-11-30T%02u:%02u:%02u.%06uZ INFO request id=%u path=%s status=%u took_us=%u\n"
#define LINE_ARGS(l) l.hh, l.mm, l.ss, l.us, l.id, l.path, l.status, l.took

struct line {
  unsigned hh, mm, ss, us, id, status, took;
  std::string_view path;
  const char* cpath;
};

constexpr const char* paths[4] = {"/api/v1/items", "/api/v1/items/42", "/api/v1/users", "/healthz"};
constexpr std::string_view path_views[4] = {"/api/v1/items", "/api/v1/items/42", "/api/v1/users", "/healthz"};
constexpr unsigned statuses[8] = {200, 200, 200, 201, 204, 304, 404, 500};

// Line i's fields. 32-bit arithmetic only, so that log_bench.js computes the
// same values with Math.imul: any change here must be made there too.
inline line make_line(std::uint64_t i) noexcept {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  const std::uint64_t t = i * 997 + (x & 255);  // microseconds since midnight
  line l;
  l.hh = static_cast<unsigned>((t / 3600000000u) % 24);
  l.mm = static_cast<unsigned>((t / 60000000u) % 60);
  l.ss = static_cast<unsigned>((t / 1000000u) % 60);
  l.us = static_cast<unsigned>(t % 1000000u);
  l.id = x % 1000000u;
  l.status = statuses[(x >> 20) & 7];
  l.took = (x >> 8) % 100000u;
  l.path = path_views[x >> 30];
  l.cpath = paths[x >> 30];
  return l;
}

}  // namespace log_bench
