// arg_codec: how sluice::logger's print() stores its arguments in a record
// (spsc_ring.h), and the decoder, made per argument-type list at compile
// time, that formats them on the backend thread exactly as fmt::format
// would have at the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <fmt/compile.h>
#include <fmt/core.h>

#include "sluice/logger/detail/spsc_ring.h"
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
};

// Strings travel by content: a 32-bit length, then the bytes; the backend
// formats a string_view over them, which fmt formats as it formats the
// caller's string, C string or string_view, specs and all.
template <class T>
inline constexpr bool log_is_string =
    std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> || std::is_same_v<T, fmt::string_view> ||
    std::is_same_v<T, const char*> || std::is_same_v<T, char*>;

template <class T>
using log_stored_t = std::conditional_t<std::is_array_v<std::remove_cvref_t<T>>, const char*, std::decay_t<T>>;

template <class T>
constexpr void log_check_storable() {
  static_assert(log_is_string<T> || std::is_trivially_copyable_v<T>,
                "sluice::logger::print(): an argument must be trivially copyable (copied as it is) or a string "
                "(std::string, std::string_view, a C string: copied by content); format other types at the call");
  static_assert(!std::is_pointer_v<T> || log_is_string<T> || std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, void>,
                "sluice::logger::print(): fmt formats only void pointers (fmt::ptr()) and C strings");
}

template <class T>
inline std::string_view log_string_of(const T& v) noexcept {
  if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>)
    return v ? std::string_view(v) : std::string_view();
  else
    return std::string_view(v.data(), v.size());
}

// Bytes an argument takes in the record.
template <class T>
inline std::size_t log_arg_size(const T& v) noexcept {
  if constexpr (log_is_string<T>)
    return sizeof(std::uint32_t) + log_string_of(v).size();
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
  } else {
    std::memcpy(p, &v, sizeof(T));
    return p + sizeof(T);
  }
}

template <class T>
using log_decoded_t = std::conditional_t<log_is_string<T>, fmt::string_view, T>;

template <class T>
inline log_decoded_t<T> log_load(const std::byte*& p) noexcept {
  if constexpr (log_is_string<T>) {
    std::uint32_t n;
    std::memcpy(&n, p, sizeof n);
    const fmt::string_view s(reinterpret_cast<const char*>(p + sizeof n), n);
    p += sizeof n + n;
    return s;
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

// The decoder of a record made by print<Stored...>.
template <class... Stored>
bool log_decode([[maybe_unused]] const std::byte* p, const char* format, std::size_t format_size, log_output& out) {
  // Braces: the loads run left to right.
  std::tuple<log_decoded_t<Stored>...> values{log_load<Stored>(p)...};
  return std::apply(
      [&](auto&... v) {
        const fmt::string_view f(format, format_size);
        if (out.stream) return out.stream->vprint(f, fmt::make_format_args(v...), std::move(out.cb));
        out.size = fmt::vformat_to_n(out.buf, out.capacity, f, fmt::make_format_args(v...)).size;
        return true;
      },
      values);
}

// The decoder of a SLUICE_LOG_* line: its format compiled (FMT_COMPILE, type
// S), so the backend neither parses it nor looks its arguments up at run
// time. Made per call site. Its message goes into `message` (the backend,
// which writes the pattern around it) or `buf` (the crash handler), never
// straight into the stream.
template <class S, class... Stored>
bool log_decode_compiled([[maybe_unused]] const std::byte* p, const char*, std::size_t, log_output& out) {
  std::tuple<log_decoded_t<Stored>...> values{log_load<Stored>(p)...};
  std::apply(
      [&](auto&... v) {
        if (out.message)
          fmt::format_to(fmt::appender(*out.message), S{}, v...);
        else
          out.size = fmt::format_to_n(out.buf, out.capacity, S{}, v...).size;
      },
      values);
  return true;
}

}  // namespace sluice::detail
