// log_level: the levels of sluice::logger's lines; log_site, what a
// SLUICE_LOG_* call site knows at compile time (its level, file, line and
// function), kept in static data so that a call copies one pointer of it;
// and log_limit, a rate-limited call site's state.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace sluice {

/// A line's level, lowest first; `off` as a logger's level writes none.
enum class log_level : std::uint8_t { trace, debug, info, warn, error, critical, off };

/// "trace", "debug", "info", "warn", "error", "critical", "off".
constexpr std::string_view log_level_name(log_level l) noexcept {
  constexpr std::string_view names[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  const auto i = static_cast<std::size_t>(l);
  return i < sizeof names / sizeof names[0] ? names[i] : "?";
}

/// One SLUICE_LOG_* call site: made once, at compile time, in static
/// storage (Quill's metadata); each line of it carries its address.
struct log_site {
  log_level level;
  std::uint32_t line;
  const char* file;      // the base name of the file
  const char* function;  // the enclosing function's name
};

namespace detail {
/// A rate-limited call site's state (SLUICE_LOG_*_LIMIT): when it may write
/// next, and the calls it skipped since it last wrote. Any thread.
class log_limit {
 public:
  /// Empty when the call is skipped; else the calls skipped before it.
  template <class Duration>
  std::optional<std::uint64_t> pass(Duration interval) noexcept {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch()).count();
    std::int64_t next = next_.load(std::memory_order_relaxed);
    const std::int64_t step = std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count();
    if (now < next || !next_.compare_exchange_strong(next, now + step, std::memory_order_relaxed)) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    return skipped_.exchange(0, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::int64_t> next_{std::numeric_limits<std::int64_t>::min()};
  std::atomic<std::uint64_t> skipped_{0};
};

/// The part of `path` after its last '/', at compile time.
constexpr const char* log_base_name(const char* path) noexcept {
  const char* base = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') base = p + 1;
  return base;
}
}  // namespace detail

}  // namespace sluice
