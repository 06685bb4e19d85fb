// The option parsers the tools share: sizes with K/M/G suffixes, durations,
// HOST:PORT, the --fsync policies of sluice::log_options, the --max-message
// default. One parser for each, so that the same value means the same in
// every tool and a bad one is said the same way.
#pragma once

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
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

// A duration: a whole number with ms, s, m or h, up to a day. A bare number
// is seconds, in every tool and for every duration option (--idle-timeout
// 500 once meant 500 s in sluice-logd and 500 ms in sluice-fanout).
inline bool parse_duration(const std::string& s, std::chrono::milliseconds& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;  // no sign, no space
  errno = 0;
  char* end = nullptr;
  const std::uint64_t v = std::strtoull(s.c_str(), &end, 10);
  constexpr std::uint64_t day_ms = 86'400'000;
  if (errno || v > day_ms) return false;
  const std::string_view unit(end);
  std::uint64_t ms;
  if (unit == "ms") ms = v;
  else if (unit.empty() || unit == "s") ms = v * 1000;
  else if (unit == "m") ms = v * 60'000;
  else if (unit == "h") ms = v * 3'600'000;
  else return false;
  if (ms > day_ms) return false;
  out = std::chrono::milliseconds(ms);
  return true;
}

// HOST:PORT after `opt` (an option's or a scheme's name, for the message):
// HOST a host name or an IPv4 address, or an IPv6 address in brackets
// ([::1]:514); PORT from `min_port` (0 for a listener: any free port) to
// 65535. Into `host` (without brackets) and `port`; on false `why` says
// what is wrong, worded the same in every tool (its usage error, exit 2).
inline bool parse_host_port(const std::string& opt, const std::string& a, std::string& host, std::uint16_t& port,
                            unsigned min_port, std::string& why) {
  const std::size_t colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return why = opt + " wants HOST:PORT ([...] for an IPv6 address), got '" + a + "'", false;
  std::string h = a.substr(0, colon);
  const bool bracketed = h.size() >= 2 && h.front() == '[' && h.back() == ']';
  if (bracketed) h = h.substr(1, h.size() - 2);
  unsigned char addr[16];
  // A name is looked up by the socket, off the loop (net::lookup()).
  const bool host_name = !h.empty() && h.size() <= 253 && h.front() != '-' && h.front() != '.' &&
                         std::all_of(h.begin(), h.end(), [](unsigned char c) {
                           return std::isalnum(c) || c == '-' || c == '.' || c == '_';
                         });
  const bool ok = bracketed ? ::inet_pton(AF_INET6, h.c_str(), addr) == 1
                            : ::inet_pton(AF_INET, h.c_str(), addr) == 1 || host_name;
  if (!ok) return why = opt + " wants a host name or an IP address ([...] for IPv6) as HOST, got '" + h + "'", false;
  std::uint64_t p = 0;
  if (!parse_size(a.c_str() + colon + 1, false, 65535, p) || p < min_port)
    return why = opt + " wants a port from " + std::to_string(min_port) + " to 65535, got '" + a.substr(colon + 1) + "'",
           false;
  host = h;
  port = static_cast<std::uint16_t>(p);
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
