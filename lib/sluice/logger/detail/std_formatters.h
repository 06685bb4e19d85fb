// std_formatters: fmt's formatters of the standard library's types, so that
// a logger line formats std containers, std::optional and the rest as
// fmt::format does with the same headers, whichever fmt the library is
// built with.
#pragma once

#include <optional>
#include <type_traits>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <fmt/std.h>

#if FMT_VERSION < 100000
FMT_BEGIN_NAMESPACE
// fmt 10's formatter of std::optional (fmt 9's <fmt/std.h> has none), with
// fmt 10's output: "optional(42)", "none", and strings and chars quoted as
// fmt's debug format writes them, optional("x"). A spec applies to the
// value ("{:>4}": "optional(  42)").
template <class T>
struct formatter<std::optional<T>, char, std::enable_if_t<is_formattable<T, char>::value>> {
  template <class ParseContext>
  constexpr auto parse(ParseContext& ctx) {
    set_debug_format(underlying_, 0);
    return underlying_.parse(ctx);
  }

  template <class FormatContext>
  auto format(const std::optional<T>& value, FormatContext& ctx) const {
    if (!value) return fmt::format_to(ctx.out(), "none");
    ctx.advance_to(fmt::format_to(ctx.out(), "optional("));
    auto out = underlying_.format(*value, ctx);
    *out++ = ')';
    return out;
  }

 private:
  // Only string and char formatters have a debug format (fmt 9's takes no
  // argument, fmt 10's a bool).
  template <class U>
  static constexpr auto set_debug_format(U& u, int) -> decltype(u.set_debug_format()) {
    u.set_debug_format();
  }
  template <class U>
  static constexpr void set_debug_format(U&, ...) {}

  formatter<T, char> underlying_;
};
FMT_END_NAMESPACE
#endif
