// parse_size: the tools' reading of a byte count ("64K", "100M") or a plain
// whole number, strict as a good Unix tool is: no sign, no space, no junk.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace sluice_tools {

/// A whole number in [0, max], with an optional K, M or G suffix
/// (1024-based) when `suffix` is set; false when `s` is not one.
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

}  // namespace sluice_tools
