// The option parsers the tools share: sizes with K/M/G suffixes, the
// --fsync policies of sluice::log_options, the --max-message default.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <system_error>

#include "sluice/log_file/log_options.h"

namespace sluice_tools {

// The longest syslog message, header included (octet counting's LEN), by
// default: what sluice-logd takes and sluice-log sends (rsyslog's default
// is 8 KiB; syslog-ng's 64 KiB). One constant so that the two agree.
inline constexpr std::size_t default_max_message = 64 * 1024;

// A whole number in [0, max] with an optional K, M or G suffix (1024-based),
// or false when `s` is not one.
inline bool parse_size(const char* s, bool suffix, std::uint64_t max, std::uint64_t& out) {
  if (s[0] < '0' || s[0] > '9') return false;  // no sign, no space
  errno = 0;
  char* end = nullptr;
  std::uint64_t v = std::strtoull(s, &end, 10);
  if (errno) return false;
  if (suffix && *end != '\0' && end[1] == '\0') {
    unsigned shift = 0;
    switch (*end) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: return false;
    }
    if (v > (max >> shift)) return false;
    v <<= shift;
    ++end;
  }
  if (*end != '\0' || v > max) return false;
  out = v;
  return true;
}

// What to say of a log FILE's error: the library's log file never follows
// a symbolic link (O_NOFOLLOW), whose ELOOP strerror() would call "Too many
// levels of symbolic links".
inline std::string file_error(std::error_code ec) {
  if (ec == std::errc::too_many_symbolic_link_levels)
    return "a symbolic link: refusing to follow it (ELOOP)";
  return ec.message();
}

// never, end, bytes=SIZE or ms=T (1 to 86400000) into `log`; false for
// anything else.
inline bool parse_fsync(const std::string& p, sluice::log_options& log) {
  using policy = sluice::log_options::fsync_policy;
  std::uint64_t v = 0;
  if (p == "never") {
    log.fsync = policy::never;
  } else if (p == "end") {
    log.fsync = policy::at_end;
  } else if (p.rfind("bytes=", 0) == 0 && parse_size(p.c_str() + 6, true, UINT64_MAX >> 1, v)) {
    log.fsync = policy::every_bytes;
    log.fsync_bytes = v;
  } else if (p.rfind("ms=", 0) == 0 && parse_size(p.c_str() + 3, false, 86'400'000, v) && v >= 1) {
    log.fsync = policy::every_ms;
    log.fsync_interval = std::chrono::milliseconds(v);
  } else {
    return false;
  }
  return true;
}

// none, gzip or zstd, each but none with an optional :LEVEL (gzip:1,
// zstd:19) into `log` (--compress); false for anything else, a level out of
// sluice::log_compression_levels() among it. Whether this build can
// compress so is for the caller to check (sluice::log_compression_available()).
inline bool parse_compress(const std::string& p, sluice::log_options& log) {
  using compression = sluice::log_options::compression;
  const std::size_t colon = p.find(':');
  const std::string method = p.substr(0, colon);
  compression c;
  if (method == "none")
    c = compression::none;
  else if (method == "gzip")
    c = compression::gzip;
  else if (method == "zstd")
    c = compression::zstd;
  else
    return false;
  int level = 0;
  if (colon != std::string::npos) {
    const sluice::compression_levels levels = sluice::log_compression_levels(c);
    std::uint64_t v = 0;
    if (c == compression::none || !parse_size(p.c_str() + colon + 1, false, static_cast<std::uint64_t>(levels.max), v) ||
        v < static_cast<std::uint64_t>(levels.min))
      return false;
    level = static_cast<int>(v);
  }
  log.compress = c;
  log.compress_level = level;
  return true;
}

}  // namespace sluice_tools
