// The pieces both print() paths write themselves, without fmt: integers in
// decimal (plain, or with a width and the '0' flag) and bytes (literal text,
// string arguments). Used by the runtime format cache (writable_print.cc)
// and the compiled path (print_compiled.h); public fmt API only.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sluice/stream/detail/print.h"

namespace sluice::detail {

// Appends a literal or a string argument: most are a few bytes, which a
// call of memcpy costs more than copying them (two overlapping fixed-size
// copies, inlined). Both always inlined: out of line (a template shared with
// the program), each field paid a call through the PLT.
[[gnu::always_inline]] inline void append_bytes(print_line& line, const char* p, std::size_t n) {
  const std::size_t at = line.size();
  line.resize(at + n);
  char* const d = line.data() + at;
  if (n > 32) [[unlikely]] {
    std::memcpy(d, p, n);
  } else if (n >= 16) {
    std::memcpy(d, p, 16);
    std::memcpy(d + n - 16, p + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(d, p, 8);
    std::memcpy(d + n - 8, p + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(d, p, 4);
    std::memcpy(d + n - 4, p + n - 4, 4);
  } else if (n >= 2) {
    std::memcpy(d, p, 2);
    std::memcpy(d + n - 2, p + n - 2, 2);
  } else if (n == 1) {
    *d = *p;
  }
}

// 10^i, but 0 for i = 0, for decimal_digits().
inline constexpr std::uint64_t powers_of_10[20] = {0,
                                                   10,
                                                   100,
                                                   1000,
                                                   10000,
                                                   100000,
                                                   1000000,
                                                   10000000,
                                                   100000000,
                                                   1000000000,
                                                   10000000000ull,
                                                   100000000000ull,
                                                   1000000000000ull,
                                                   10000000000000ull,
                                                   100000000000000ull,
                                                   1000000000000000ull,
                                                   10000000000000000ull,
                                                   100000000000000000ull,
                                                   1000000000000000000ull,
                                                   10000000000000000000ull};

// The number of decimal digits of n (1 for 0): log10 from the bit length
// (1233 / 4096 ~ log10(2)), corrected by one comparison.
inline int decimal_digits(std::uint64_t n) noexcept {
  const int t = (64 - std::countl_zero(n | 1)) * 1233 >> 12;
  return t - (n < powers_of_10[t]) + 1;
}

// The same for a value of 32 bits, with one table load and no compare
// (fmt's count_digits for uint32_t): the digit count is on the line's
// critical path, since the next field starts where this one ends.
// increments[b] for a value of bit length b + 1: (digits << 32) minus the
// smallest value with that many digits, so that the carry adds one exactly
// from that value on.
inline constexpr std::uint64_t digit_increments[32] = {
    (1ull << 32) - 0,          (1ull << 32) - 0,          (1ull << 32) - 0,          (2ull << 32) - 10,
    (2ull << 32) - 10,         (2ull << 32) - 10,         (3ull << 32) - 100,        (3ull << 32) - 100,
    (3ull << 32) - 100,        (4ull << 32) - 1000,       (4ull << 32) - 1000,       (4ull << 32) - 1000,
    (4ull << 32) - 1000,       (5ull << 32) - 10000,      (5ull << 32) - 10000,      (5ull << 32) - 10000,
    (6ull << 32) - 100000,     (6ull << 32) - 100000,     (6ull << 32) - 100000,     (7ull << 32) - 1000000,
    (7ull << 32) - 1000000,    (7ull << 32) - 1000000,    (7ull << 32) - 1000000,    (8ull << 32) - 10000000,
    (8ull << 32) - 10000000,   (8ull << 32) - 10000000,   (9ull << 32) - 100000000,  (9ull << 32) - 100000000,
    (9ull << 32) - 100000000,  (10ull << 32) - 1000000000, (10ull << 32) - 1000000000, (10ull << 32) - 1000000000};

inline int decimal_digits(std::uint32_t n) noexcept {
  return static_cast<int>((n + digit_increments[31 - std::countl_zero(n | 1)]) >> 32);
}

inline constexpr char digit_pairs[] =
    "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849"
    "5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

// An integer in decimal, padded to `width` as fmt pads one: spaces before the
// sign, or with `zero` (the '0' flag) zeros after it. Two digits a step from
// the end, as fmt's format_decimal writes them.
template <class T>
[[gnu::always_inline]] inline void write_decimal(print_line& line, T value, std::size_t width, bool zero) {
  using U = std::make_unsigned_t<T>;
  const bool negative = value < 0;
  // 0 - U(value): the magnitude, INT_MIN's too, without a signed overflow.
  U n = negative ? static_cast<U>(0 - static_cast<U>(value)) : static_cast<U>(value);
  const std::size_t digits = static_cast<std::size_t>(
      decimal_digits(static_cast<std::conditional_t<(sizeof(U) <= 4), std::uint32_t, std::uint64_t>>(n)));
  const std::size_t body = digits + negative;
  const std::size_t pad = width > body ? width - body : 0;
  const std::size_t at = line.size();
  line.resize(at + pad + body);
  char* d = line.data() + at;
  // Most fields need no padding: no call of memset for them.
  if (zero) {
    if (negative) *d++ = '-';
    if (pad) std::memset(d, '0', pad);
    d += pad;
  } else {
    if (pad) std::memset(d, ' ', pad);
    d += pad;
    if (negative) *d++ = '-';
  }
  char* out = d + digits;
  while (n >= 100) {
    out -= 2;
    std::memcpy(out, digit_pairs + 2 * (n % 100), 2);
    n /= 100;
  }
  if (n >= 10) {
    std::memcpy(out - 2, digit_pairs + 2 * n, 2);
  } else {
    out[-1] = static_cast<char>('0' + n);
  }
}

}  // namespace sluice::detail
