// print(): where writable::print() formats a line, and how it tells a
// compiled format string from a runtime one. Public fmt API only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <type_traits>

#include <fmt/core.h>

namespace sluice {

class writable;

namespace detail {

class byte_arena;

// Where print() formats a line: the room left in the stream's arena. A line
// that outgrows it moves to a fresh block, or to the heap past
// byte_arena::max_chunk. Both print() paths share it (writable_print.cc).
struct print_room {
  char* data = nullptr;
  std::size_t capacity = 0;
  byte_arena* arena = nullptr;
  std::string heap;  // the line, once it is longer than any arena chunk

  // Makes room for `capacity` bytes, keeping the first `size`.
  void grow(std::size_t size, std::size_t capacity);
};

// For compiled format strings: a contiguous container to fmt (see
// fmt::is_contiguous below), so that the code FMT_COMPILE generates reserves
// each piece with one inline comparison and writes it through a plain
// pointer. (On fmt's own buffer type, the appender, every piece goes through
// fmt's out-of-line helpers: ~160 instructions more per perf/log_bench line,
// ~10%.) A line that outgrows its room moves once, keeping what is written.
class print_line {
 public:
  using value_type = char;
  char* data() noexcept { return room_.data; }
  char& operator[](std::size_t i) noexcept { return room_.data[i]; }
  std::size_t size() const noexcept { return size_; }
  void resize(std::size_t n) {
    if (n > room_.capacity) [[unlikely]]
      room_.grow(size_, n);
    size_ = n;
  }
  void push_back(char c) {
    resize(size_ + 1);
    room_.data[size_ - 1] = c;
  }
  // fmt 11 copies literal text with append() (fmt 9 with resize()).
  template <class It>
  void append(It first, It last) {
    const auto n = static_cast<std::size_t>(std::distance(first, last));
    resize(size_ + n);
    std::copy(first, last, room_.data + size_ - n);
  }

 private:
  friend class sluice::writable;
  std::size_t size_ = 0;
  print_room room_;
};

// What FMT_COMPILE("...") makes: a class that converts to a string view only
// explicitly, and that fmt's runtime format_string does not take either.
// Every other format string takes print()'s runtime overload: literals and
// strings convert implicitly; FMT_STRING("...") converts implicitly up to
// fmt 10 and is a format_string's own in fmt 11. The test is on these
// properties because fmt 9 and 10 name the base class of compiled strings
// in fmt::detail only (fmt 11's fmt::compiled_string is in <fmt/compile.h>,
// which this header does not include).
template <class S>
concept compiled_format = std::is_class_v<S> && std::is_constructible_v<fmt::string_view, const S&> &&
                          !std::is_convertible_v<const S&, fmt::string_view> &&
                          !std::is_convertible_v<const S&, fmt::format_string<>>;

}  // namespace detail
}  // namespace sluice

template <>
struct fmt::is_contiguous<sluice::detail::print_line> : std::true_type {};
