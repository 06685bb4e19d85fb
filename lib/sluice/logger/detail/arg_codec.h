// arg_codec: how sluice::logger's print() stores its arguments in a record
// (spsc_ring.h), and the decoder, made per argument-type list at compile
// time, that formats them on the backend thread exactly as fmt::format
// would have at the call.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <fmt/compile.h>
#include <fmt/core.h>

#include "sluice/logger/detail/spsc_ring.h"
#include "sluice/logger/detail/std_formatters.h"
#include "sluice/stream/writable.h"

namespace sluice::detail {

// Where a decoder formats: the logger's stream (print()'s lines on the
// backend), a growing buffer (a SLUICE_LOG_* line's message, which the
// pattern goes around), or a fixed buffer (the crash handler:
// fmt::format_to_n, which neither allocates nor locks for the built-in
// types).
struct log_output {
  writable* stream = nullptr;
  fmt::memory_buffer* message = nullptr;  // a SLUICE_LOG_* line's message, for the pattern (appended)
  char* buf = nullptr;
  std::size_t capacity = 0;
  std::size_t size = 0;  // bytes format_to_n wanted, when buf is set
  write_cb cb;           // for the stream's write of this line
  // A JSON line's named arguments, as log_encode_named() writes them
  // (appended); null for the other lines, which do not look at them.
  fmt::memory_buffer* named = nullptr;
};

// Strings travel by content: a 32-bit length, then the bytes; the backend
// formats a string_view over them, which fmt formats as it formats the
// caller's string, C string or string_view, specs and all.
template <class T>
inline constexpr bool log_is_string =
    std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> || std::is_same_v<T, fmt::string_view> ||
    std::is_same_v<T, const char*> || std::is_same_v<T, char*>;

// fmt::arg("user", name): a view (a name and a *reference* to the value)
// that fmt only names in fmt::detail. Its bytes would point at the caller's
// value once the call has returned: it travels as its name by content, then
// its value as any argument does.
template <class T>
inline constexpr bool log_is_named = fmt::detail::is_named_arg<T>::value;

// A char array is a C string; other arrays are ranges (formatted at the call).
template <class T, class U = std::remove_cvref_t<T>>
using log_stored_t =
    std::conditional_t<!std::is_array_v<U>, std::decay_t<T>,
                       std::conditional_t<std::is_same_v<std::remove_cv_t<std::remove_extent_t<U>>, char>, const char*, U>>;

template <class T>
using log_named_stored_t = log_stored_t<decltype(T::value)>;

// Trivially copyable types travel as their bytes, but those that point at
// the caller's data: strings (above), named arguments, and what fmt formats
// as a range (a std::span, a view; std::array too, to keep the rule short).
// An optional is its value's case; std::optional<char> is formatted at the
// call too, as FMT_COMPILE's "{}" would not quote it as fmt::format does.
template <class T>
inline constexpr bool log_by_bytes =
    std::is_trivially_copyable_v<T> && !log_is_string<T> && !log_is_named<T> && !fmt::is_range<T, char>::value;
template <class T>
inline constexpr bool log_by_bytes<std::optional<T>> =
    std::is_trivially_copyable_v<std::optional<T>> && log_by_bytes<T> && !std::is_same_v<T, char>;

template <class T>
constexpr void log_check_storable() {
  if constexpr (log_is_named<T>) {
    log_check_storable<log_named_stored_t<T>>();
  } else {
    static_assert(fmt::is_formattable<T>::value,
                  "sluice::logger: an argument's type has no fmt::formatter: specialize fmt::formatter<T> (or "
                  "include the fmt header that has it, e.g. <fmt/chrono.h>, <fmt/ostream.h>)");
    static_assert(!std::is_pointer_v<T> || log_is_string<T> || std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, void>,
                  "sluice::logger::print(): fmt formats only void pointers (fmt::ptr()) and C strings");
  }
}

// Whether an argument travels in the record, for the backend to format.
template <class T>
constexpr bool log_travels() {
  if constexpr (log_is_named<T>)
    return log_travels<log_named_stored_t<T>>();
  else
    return log_is_string<T> || log_by_bytes<T>;
}

// Whether a line is deferred: all its arguments travel, and the backend
// formats them. If one does not, the whole line is formatted at the call
// (log_formatted). Decided at compile time.
template <class... Stored>
constexpr bool log_deferred() {
  (log_check_storable<Stored>(), ...);
  return (log_travels<Stored>() && ...);
}

template <class T>
inline std::string_view log_string_of(const T& v) noexcept {
  if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>)
    return v ? std::string_view(v) : std::string_view();
  else
    return std::string_view(v.data(), v.size());
}

// A named argument's name, with its NUL: fmt looks names up as C strings.
template <class T>
inline std::string_view log_name_of(const T& named) noexcept {
  return std::string_view(named.name, std::strlen(named.name) + 1);
}

// Bytes an argument takes in the record.
template <class T>
inline std::size_t log_arg_size(const T& v) noexcept {
  if constexpr (log_is_string<T>)
    return sizeof(std::uint32_t) + log_string_of(v).size();
  else if constexpr (log_is_named<T>)
    return sizeof(std::uint32_t) + log_name_of(v).size() + log_arg_size<log_named_stored_t<T>>(v.value);
  else
    return sizeof(T);
}

template <class T>
inline std::byte* log_store(std::byte* p, const T& v) noexcept {
  if constexpr (log_is_string<T>) {
    const std::string_view s = log_string_of(v);
    const auto n = static_cast<std::uint32_t>(s.size());
    std::memcpy(p, &n, sizeof n);
    if (n) std::memcpy(p + sizeof n, s.data(), s.size());  // an empty view may have no data
    return p + sizeof n + s.size();
  } else if constexpr (log_is_named<T>) {
    p = log_store<std::string_view>(p, log_name_of(v));
    return log_store<log_named_stored_t<T>>(p, v.value);
  } else {
    std::memcpy(p, &v, sizeof(T));
    return p + sizeof(T);
  }
}

// A named argument as the backend loads it; log_fmt_arg() makes the
// fmt::arg() over it.
template <class V>
struct log_named_value {
  fmt::string_view name;  // NUL-terminated
  V value;
};

template <class T, bool = log_is_named<T>>
struct log_decoded {
  using type = std::conditional_t<log_is_string<T>, fmt::string_view, T>;
};
template <class T>
struct log_decoded<T, true> {
  using type = log_named_value<typename log_decoded<log_named_stored_t<T>>::type>;
};
template <class T>
using log_decoded_t = typename log_decoded<T>::type;

template <class T>
inline log_decoded_t<T> log_load(const std::byte*& p) noexcept {
  if constexpr (log_is_string<T>) {
    std::uint32_t n;
    std::memcpy(&n, p, sizeof n);
    const fmt::string_view s(reinterpret_cast<const char*>(p + sizeof n), n);
    p += sizeof n + n;
    return s;
  } else if constexpr (log_is_named<T>) {
    const fmt::string_view name = log_load<std::string_view>(p);
    return {fmt::string_view(name.data(), name.size() - 1), log_load<log_named_stored_t<T>>(p)};
  } else {
    // A union: T need not be default-constructible.
    union slot {
      char none;
      T value;
      slot() : none() {}
    } s;
    std::memcpy(static_cast<void*>(&s.value), p, sizeof(T));
    p += sizeof(T);
    return s.value;
  }
}

template <class T>
inline const T& log_fmt_arg(const T& v) noexcept {
  return v;
}
template <class V>
inline auto log_fmt_arg(const log_named_value<V>& v) noexcept {
  return fmt::arg(v.name.data(), v.value);
}

// ---- named arguments as JSON keys
//
// A JSON line's named arguments, each as: its name and its value formatted
// with "{}" (as strings by content: log_store), then one byte, 1 if the
// value is written bare (a number, true or false), 0 if as a JSON string.
// log_append_named_json() (line_format.cc) writes them as keys.

// Bare: bool, and the numbers fmt writes as JSON numbers (not a char, which
// fmt writes as a character, nor an infinity or NaN).
template <class V>
inline bool log_json_bare(const V& v) noexcept {
  if constexpr (std::is_floating_point_v<V>)
    return std::isfinite(v);
  else
    return std::is_arithmetic_v<V> && !std::is_same_v<V, char> && !std::is_same_v<V, wchar_t> &&
           !std::is_same_v<V, char8_t> && !std::is_same_v<V, char16_t> && !std::is_same_v<V, char32_t>;
}

inline void log_encode_field(fmt::memory_buffer& into, std::string_view name, const auto& value) {
  const auto append = [&into](const void* data, std::size_t n) {
    into.append(static_cast<const char*>(data), static_cast<const char*>(data) + n);
  };
  const auto name_size = static_cast<std::uint32_t>(name.size());
  append(&name_size, sizeof name_size);
  append(name.data(), name.size());
  const std::size_t at = into.size();
  append(&name_size, sizeof name_size);  // room for the value's size
  fmt::format_to(fmt::appender(into), "{}", value);  // not FMT_COMPILE, which writes a range of strings unquoted
  const auto value_size = static_cast<std::uint32_t>(into.size() - at - sizeof(std::uint32_t));
  std::memcpy(into.data() + at, &value_size, sizeof value_size);
  into.push_back(log_json_bare(value) ? '\1' : '\0');
}

// An argument that is not named: no key.
template <class T>
inline void log_encode_named(fmt::memory_buffer&, const T&) {}
// At the call (log_formatted).
template <class T>
  requires log_is_named<T>
inline void log_encode_named(fmt::memory_buffer& into, const T& arg) {
  log_encode_field(into, std::string_view(arg.name), arg.value);
}
// On the backend (log_decode_compiled).
template <class V>
inline void log_encode_named(fmt::memory_buffer& into, const log_named_value<V>& arg) {
  log_encode_field(into, std::string_view(arg.name.data(), arg.name.size()), arg.value);
}

// Defined in line_format.cc.
void log_append_named_json(fmt::memory_buffer& line, std::string_view named);

// ---- the decoders

// The decoder of a record made by print<Stored...>.
template <class... Stored>
bool log_decode([[maybe_unused]] const std::byte* p, const char* format, std::size_t format_size, log_output& out) {
  // Braces: the loads run left to right.
  std::tuple<log_decoded_t<Stored>...> values{log_load<Stored>(p)...};
  return std::apply(
      [&](auto&... v) {
        const fmt::string_view f(format, format_size);
        if (out.stream) return out.stream->vprint(f, fmt::make_format_args(log_fmt_arg(v)...), std::move(out.cb));
        out.size = fmt::vformat_to_n(out.buf, out.capacity, f, fmt::make_format_args(log_fmt_arg(v)...)).size;
        return true;
      },
      values);
}

// The decoder of a SLUICE_LOG_* line: its format compiled (FMT_COMPILE, type
// S), so the backend neither parses it nor looks its arguments up at run
// time. Made per call site. Its message goes into `message` (the backend,
// which writes the pattern around it) or `buf` (the crash handler), never
// straight into the stream.
//
// With named arguments, the format is parsed as a runtime one instead: fmt
// 9's FMT_COMPILE knows a fmt::arg()'s name only at run time, and does not
// compile a named field with a spec ("{user:>8}").
template <class S, class... Stored>
bool log_decode_compiled([[maybe_unused]] const std::byte* p, [[maybe_unused]] const char* format,
                         [[maybe_unused]] std::size_t format_size, log_output& out) {
  std::tuple<log_decoded_t<Stored>...> values{log_load<Stored>(p)...};
  std::apply(
      [&](auto&... v) {
        if constexpr ((log_is_named<Stored> || ...)) {
          const fmt::string_view f(format, format_size);
          if (out.message) {
            fmt::vformat_to(fmt::appender(*out.message), f, fmt::make_format_args(log_fmt_arg(v)...));
            if (out.named) (log_encode_named(*out.named, v), ...);
          } else {
            out.size = fmt::vformat_to_n(out.buf, out.capacity, f, fmt::make_format_args(log_fmt_arg(v)...)).size;
          }
        } else if (out.message) {
          fmt::format_to(fmt::appender(*out.message), S{}, v...);
        } else {
          out.size = fmt::format_to_n(out.buf, out.capacity, S{}, v...).size;
        }
      },
      values);
  return true;
}

// A line formatted at the call, because an argument cannot travel in the
// record (a std::vector, a type that is not trivially copyable): what
// fmt::format gives, through the format as fmt parses it at run time (the
// FMT_COMPILE of a SLUICE_LOG_* line writes ranges and optionals of strings
// unquoted for "{}", fmt::format quoted), and for a SLUICE_LOG_* line its
// named arguments (log_encode_named). The record holds the two as strings.
struct log_formatted {
  fmt::memory_buffer message;
  fmt::memory_buffer named;

  template <class... Args>
  log_formatted(fmt::string_view format, bool site_line, const Args&... args) {
    fmt::vformat_to(fmt::appender(message), format, fmt::make_format_args(args...));
    if (site_line) (log_encode_named(named, args), ...);
  }
  std::string_view message_text() const noexcept { return {message.data(), message.size()}; }
  std::string_view named_text() const noexcept { return {named.data(), named.size()}; }
};

// The decoder of a line formatted at the call: its text as it is, for a
// print() line into the stream, for a SLUICE_LOG_* line into `message`
// (with its named arguments into `named`); either into `buf` for the crash
// handler.
template <bool site_line>
bool log_decode_formatted(const std::byte* p, const char*, std::size_t, log_output& out) {
  const fmt::string_view text = log_load<std::string_view>(p);
  if constexpr (site_line) {
    if (out.message) {
      out.message->append(text.data(), text.data() + text.size());
      const fmt::string_view named = log_load<std::string_view>(p);
      if (out.named) out.named->append(named.data(), named.data() + named.size());
      return true;
    }
  } else {
    if (out.stream) return out.stream->write(std::string_view(text.data(), text.size()), std::move(out.cb));
  }
  out.size = text.size();
  std::memcpy(out.buf, text.data(), std::min(text.size(), out.capacity));
  return true;
}

}  // namespace sluice::detail
