// sluice-logd's lines: a message as one line of FILE, every control
// character and backslash escaped so that a line is always one message,
// shows a terminal no control character, and the escaping can be undone
// (see --help's "Lines").
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <string>
#include <string_view>

namespace sluice_tools {

// The bytes a line cannot hold as they are: every control character (below
// 0x20, and DEL) and the backslash that starts an escape.
inline constexpr std::array<bool, 256> escaped_bytes = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t[0x7f] = true;
  t['\\'] = true;
  return t;
}();

// Whether `msg` has such a byte: 16 bytes a step with SSE2 (a byte <= 0x1f,
// DEL or a backslash sets its bit in a mask; the last step overlaps the one
// before), the table below 16 bytes. It only reads: a check that also
// copied would leave the line in stores that the write's copy, just after,
// cannot be forwarded from (a stall a message; docs/benchmarks.md,
// "sluice-logd vs rsyslog, round 4 (second pass)").
inline bool needs_escape(std::string_view msg) noexcept {
  const char* const p = msg.data();
  const std::size_t n = msg.size();
#if defined(__SSE2__)
  if (n >= 16) {
    const __m128i ctl = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f), bs = _mm_set1_epi8('\\');
    const auto hit = [&](std::size_t i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      return _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
                          _mm_or_si128(_mm_cmpeq_epi8(v, del), _mm_cmpeq_epi8(v, bs)));
    };
    __m128i any = hit(n - 16);
    for (std::size_t i = 0; i + 16 <= n; i += 16) any = _mm_or_si128(any, hit(i));
    return _mm_movemask_epi8(any) != 0;
  }
#endif
  unsigned char any = 0;
  for (std::size_t i = 0; i < n; ++i) any |= static_cast<unsigned char>(escaped_bytes[static_cast<unsigned char>(p[i])]);
  return any != 0;
}

// The first byte from `p` that is escaped, or `end`: 16 bytes a step with
// SSE2 (a byte <= 0x1f, DEL or a backslash sets its bit in a mask), the
// table for the rest.
inline const char* next_escaped(const char* p, const char* end) noexcept {
#if defined(__SSE2__)
  const __m128i ctl = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f), bs = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
                                     _mm_or_si128(_mm_cmpeq_epi8(v, del), _mm_cmpeq_epi8(v, bs)));
    if (const int m = _mm_movemask_epi8(hit)) return p + __builtin_ctz(static_cast<unsigned>(m));
    p += 16;
  }
#endif
  while (p < end && !escaped_bytes[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

// `msg` as one line into `out` (which is reused, so that no line allocates):
// the runs between escaped bytes copied whole, LF as \n, CR \r, TAB \t,
// backslash \\, any other control character \xHH; then the line's LF.
inline void escape_into(std::string_view msg, std::string& out) {
  static constexpr char hex[] = "0123456789abcdef";
  out.clear();
  const char* p = msg.data();
  const char* const end = p + msg.size();
  while (p < end) {
    const char* q = next_escaped(p, end);
    out.append(p, static_cast<std::size_t>(q - p));
    if (q == end) break;
    const auto c = static_cast<unsigned char>(*q);
    switch (c) {
      case '\n': out.append("\\n", 2); break;
      case '\r': out.append("\\r", 2); break;
      case '\t': out.append("\\t", 2); break;
      case '\\': out.append("\\\\", 2); break;
      default: {
        const char x[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        out.append(x, 4);
      }
    }
    p = q + 1;
  }
  out += '\n';
}

}  // namespace sluice_tools
