// log_level: the levels of sluice::logger's lines, and log_site, what a
// SLUICE_LOG_* call site knows at compile time (its level, file, line and
// function), kept in static data so that a call copies one pointer of it.
#pragma once

#include <cstddef>
#include <cstdint>
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
/// The part of `path` after its last '/', at compile time.
constexpr const char* log_base_name(const char* path) noexcept {
  const char* base = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') base = p + 1;
  return base;
}
}  // namespace detail

}  // namespace sluice
