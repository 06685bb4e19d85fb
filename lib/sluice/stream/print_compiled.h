// writable::print() with a compiled format string (fmt's FMT_COMPILE).
// Apart from writable.h so that only the code that compiles formats pays
// for <fmt/compile.h> (and fmt/format.h behind it); sluice.h includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fmt/compile.h>

#include "sluice/stream/detail/print.h"
#include "sluice/stream/detail/print_write.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace detail {

// ---- compiled formats that print() writes itself
//
// fmt's code for FMT_COMPILE writes a field with specs ("{:02}") through its
// generic write_int, its padding and a memset (~130 instructions), and each
// literal through a copy loop. print() parses the format itself, at compile
// time, and writes what the runtime format cache writes itself (see
// writable_print.cc) the same way: literals with copies of a size known at
// compile time, integers with write_decimal(), strings as their bytes, and
// other arithmetic values with FMT_COMPILE("{}"). A format with anything else
// (other specs, positional or named fields, other argument types, an error)
// is fmt's, whole, as before; so is every error fmt reports.

// How an argument is written: by write_decimal(), as its bytes, by fmt alone
// ("{}" only), or not at all (the whole format then goes to fmt).
enum class compiled_arg : std::uint8_t { fmt_only, decimal, text, plain };

template <class T>
constexpr compiled_arg compiled_arg_of() {
  if constexpr (std::is_same_v<T, short> || std::is_same_v<T, unsigned short> || std::is_same_v<T, int> ||
                std::is_same_v<T, unsigned> || std::is_same_v<T, long> || std::is_same_v<T, unsigned long> ||
                std::is_same_v<T, long long> || std::is_same_v<T, unsigned long long>)
    return compiled_arg::decimal;
  else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> ||
                     std::is_same_v<T, fmt::string_view>)
    return compiled_arg::text;
  else if constexpr (std::is_arithmetic_v<T>)  // bool, characters, floating point
    return compiled_arg::plain;
  else
    return compiled_arg::fmt_only;
}

// The literal text before a field (straight from the format string: "{{"
// and "}}" end a piece of their own, with one brace), then the field, if any.
struct compiled_piece {
  std::size_t literal_begin = 0;
  std::size_t literal_size = 0;
  std::size_t arg = 0;
  bool field = false;
  std::uint8_t width = 0;  // decimal: the minimum width, 0 for none
  bool zero = false;       // decimal: the '0' flag
};

template <std::size_t N>
struct compiled_plan {
  bool ok = false;  // false: fmt formats the whole line
  std::size_t count = 0;
  compiled_piece pieces[N]{};
};

// Parses `f` for arguments written as `kinds` say, at compile time. Fields
// in order ("{}" or "{:SPECS}"), each argument once; SPECS only "d" or
// "[0]WIDTH[d]" (1 to 255) on an integer, as the runtime cache takes them.
template <std::size_t N>
constexpr compiled_plan<N> plan_compiled(fmt::string_view f, const compiled_arg* kinds, std::size_t nargs) {
  compiled_plan<N> plan;
  const char* const s = f.data();
  const std::size_t size = f.size();
  std::size_t i = 0, literal = 0, next_arg = 0;
  auto add = [&](std::size_t literal_end, bool field) -> compiled_piece& {
    compiled_piece& p = plan.pieces[plan.count++];
    p.literal_begin = literal;
    p.literal_size = literal_end - literal;
    p.field = field;
    return p;
  };
  while (i != size) {
    const char c = s[i];
    if (c != '{' && c != '}') {
      ++i;
      continue;
    }
    if (i + 1 != size && s[i + 1] == c) {  // "{{" or "}}": the piece ends with one brace
      add(i + 1, false);
      i += 2;
      literal = i;
      continue;
    }
    if (c == '}') return plan;  // unmatched: fmt's error
    const std::size_t literal_end = i++;
    if (i == size || next_arg == nargs) return plan;
    const compiled_arg kind = kinds[next_arg];
    if (kind == compiled_arg::fmt_only) return plan;
    std::uint8_t width = 0;
    bool zero = false;
    if (s[i] == ':') {
      ++i;
      if (kind != compiled_arg::decimal) return plan;
      if (i != size && s[i] == '0') {
        zero = true;
        ++i;
        if (i == size || s[i] < '1' || s[i] > '9') return plan;  // "{:0}", "{:00}": fmt's
      }
      unsigned w = 0;
      while (i != size && s[i] >= '0' && s[i] <= '9') {
        w = w * 10 + static_cast<unsigned>(s[i++] - '0');
        if (w > 255) return plan;
      }
      width = static_cast<std::uint8_t>(w);
      if (i != size && s[i] == 'd') ++i;
    }
    if (i == size || s[i] != '}') return plan;  // other specs, positional or named fields
    ++i;
    compiled_piece& p = add(literal_end, true);
    p.arg = next_arg++;
    p.width = width;
    p.zero = zero;
    literal = i;
  }
  if (next_arg != nargs) return plan;
  add(size, false);
  plan.ok = true;
  return plan;
}

// The plan of format S for these argument types, a constant.
template <class S, class... Args>
struct compiled_plan_of {
  static constexpr fmt::string_view text = fmt::string_view(S());
  static constexpr compiled_arg kinds[sizeof...(Args) + 1] = {compiled_arg_of<Args>()..., compiled_arg::fmt_only};
  static constexpr auto value = plan_compiled<text.size() + 1>(text, kinds, sizeof...(Args));
};

template <class Plan, std::size_t I, class... Args>
inline void write_compiled_piece(print_line& line, const Args&... args) {
  constexpr compiled_piece p = Plan::value.pieces[I];
  if constexpr (p.literal_size != 0) {
    // A copy of a size known here: a few moves, no call.
    const std::size_t at = line.size();
    line.resize(at + p.literal_size);
    std::memcpy(line.data() + at, Plan::text.data() + p.literal_begin, p.literal_size);
  }
  if constexpr (p.field) {
    const auto& value = std::get<p.arg>(std::tie(args...));
    using T = std::remove_cvref_t<decltype(value)>;
    constexpr compiled_arg kind = compiled_arg_of<T>();
    if constexpr (kind == compiled_arg::decimal) {
      write_decimal(line, value, p.width, p.zero);
    } else if constexpr (kind == compiled_arg::text) {
      append_bytes(line, value.data(), value.size());
    } else {
      fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}"), value);
    }
  }
}

template <class Plan, class... Args, std::size_t... I>
inline void write_compiled(print_line& line, std::index_sequence<I...>, const Args&... args) {
  (write_compiled_piece<Plan, I>(line, args...), ...);
}

}  // namespace detail

template <class S, class... Args>
  requires detail::compiled_format<S>
bool writable::print(const S& format, Args&&... args) {
  detail::print_line line;
  if (!print_start(line.room_)) return fail_after_end({});
  using plan = detail::compiled_plan_of<S, std::remove_cvref_t<Args>...>;
  if constexpr (plan::value.ok) {
    detail::write_compiled<plan>(line, std::make_index_sequence<plan::value.count>{}, args...);
  } else {
    fmt::format_to(std::back_inserter(line), format, args...);
  }
  return print_commit(line.room_, line.size(), {});
}

}  // namespace sluice
