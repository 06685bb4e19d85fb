// print(): write() for text that fmt makes, formatted straight into the
// stream's arena through fmt's public API. The runtime path is here; the
// compiled one is a template (print_compiled.h) over the same room.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/compile.h>
#include <fmt/core.h>

#include "sluice/queue/byte_arena.h"
#include "sluice/stream/detail/print.h"
#include "sluice/stream/detail/print_write.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace {
// A line starts in what is left of the arena's block, unless less than this
// is left: then in a fresh block. So a line shorter than this is never
// formatted twice (see vprint()).
constexpr std::size_t print_min_room = 1024;

// Apart from print_commit(), so that the common case there is a plain jump
// to write_formatted(), with no stack frame to set up for this one.
[[gnu::noinline]] bool write_heap_line(writable& w, std::string& line, std::size_t size, write_cb&& cb) {
  line.resize(size);
  return w.write(std::move(line), std::move(cb));
}

// ---- runtime formats parsed once
//
// A print() call site passes the same format string every time, and fmt
// parses it on every line. The cache below parses a format string once into
// its literal text and its fields (argument, and fmt's own formatter<T>
// holding the parsed specs) and formats from that afterwards, as FMT_COMPILE
// does at compile time. It is keyed by the string's address and size, and a
// hit also compares the text, so a buffer reused for another format is
// never mistaken for the old one. Anything it does not handle goes to fmt
// unchanged: named arguments, dynamic width or precision ({:{}}), custom
// and 128-bit types, and every error (fmt then reports it as it always
// does).

// The output of a cached format: the print_line, which fmt reserves into
// with one comparison per piece (see print.h).
using print_context = fmt::basic_format_context<std::back_insert_iterator<detail::print_line>, char>;

// The formatter of each argument type fmt's visit gives, but 128-bit
// integers and custom types; index 0: a field with no specs ("{}").
using field_formatter =
    std::variant<std::monostate, fmt::formatter<int>, fmt::formatter<unsigned>, fmt::formatter<long long>,
                 fmt::formatter<unsigned long long>, fmt::formatter<bool>, fmt::formatter<char>,
                 fmt::formatter<float>, fmt::formatter<double>, fmt::formatter<long double>,
                 fmt::formatter<const char*>, fmt::formatter<fmt::string_view>, fmt::formatter<const void*>>;

// T's index in field_formatter, or 0: a type the cache leaves to fmt.
template <class T, std::size_t I = 1>
constexpr std::size_t type_index() {
  if constexpr (I == std::variant_size_v<field_formatter>)
    return 0;
  else if constexpr (std::is_same_v<std::variant_alternative_t<I, field_formatter>, fmt::formatter<T>>)
    return I;
  else
    return type_index<T, I + 1>();
}

// Calls fn(value, its type_index() as an integral_constant) for an argument
// of a type the cache handles; false for the others. The argument by
// reference: a copy of the one args.get() just made (its 16-byte value and
// 4-byte type stored apart, then loaded as two 16-byte words) stalls on
// store forwarding, ~20 cycles a field: a third of print()'s time.
template <class F>
bool visit_cached(const fmt::basic_format_arg<fmt::format_context>& arg, F&& fn) {
  return fmt::visit_format_arg(
      [&](auto value) -> bool {
        constexpr std::size_t index = type_index<decltype(value)>();
        if constexpr (index == 0)
          return false;
        else
          return fn(value, std::integral_constant<std::size_t, index>{});
      },
      arg);
}

// How a field is written once parsed.
enum class field_kind : std::uint8_t {
  by_formatter,  // fmt's formatter<T> with the parsed specs
  plain,         // no specs: written as FMT_COMPILE("{}") writes it
  decimal,       // an integer, plain or with a width (and the '0' flag): write_decimal()
  text,          // a string_view with no specs: its bytes
};

struct format_field {
  std::uint32_t literal_begin;  // the literal text before the field, in cached_format::literals
  std::uint32_t literal_size;
  int arg_id;
  std::uint8_t type;  // type_index() of the argument it was parsed for
  field_kind kind;
  std::uint8_t width;  // decimal: the minimum width, 0 for none
  bool zero;           // decimal: padded with '0' after the sign, not with spaces before it
  field_formatter formatter;
};

template <class T>
constexpr bool is_decimal_type = std::is_same_v<T, int> || std::is_same_v<T, unsigned> ||
                                 std::is_same_v<T, long long> || std::is_same_v<T, unsigned long long>;

// The integer specs write_decimal() writes as fmt does: "[0]WIDTH[d]" or "d"
// (WIDTH from 1 to 255, not starting with 0), between p and the closing
// brace. Anything else (fill, align, sign, '#', other presentations, 'L')
// stays fmt's formatter's. A log line's "{:02}" through fmt's generic
// write_int costs ~130 instructions with its fill; write_decimal ~30.
bool parse_decimal_specs(const char* p, const char* close, format_field& f) {
  const bool zero = p != close && *p == '0';
  if (zero) {
    ++p;
    if (p == close || *p < '1' || *p > '9') return false;  // "{:0}", "{:0d}", "{:00}": fmt's to judge
  }
  unsigned width = 0;
  while (p != close && *p >= '0' && *p <= '9') {
    width = width * 10 + static_cast<unsigned>(*p++ - '0');
    if (width > 255) return false;
  }
  if (p != close && *p == 'd') ++p;
  if (p != close) return false;
  f.kind = field_kind::decimal;
  f.width = static_cast<std::uint8_t>(width);
  f.zero = zero;
  return true;
}

struct cached_format {
  const char* data = nullptr;
  std::size_t size = 0;
  std::string text;      // the format string itself
  std::string literals;  // the literal text, "{{" and "}}" unescaped
  std::vector<format_field> fields;
  std::uint32_t tail_begin = 0, tail_size = 0;
  bool by_fmt = false;  // fmt formats it: something above the cache handles
};

// Parses `format` for these arguments' types into `e`. False: fmt's to
// format (and to report, if the format is wrong).
bool parse_format(cached_format& e, fmt::string_view format, fmt::format_args args) {
  fmt::format_parse_context pctx(format);
  const char* p = format.data();
  const char* const end = p + format.size();
  std::uint32_t segment = 0;
  while (p != end) {
    if (*p != '{' && *p != '}') {
      const char* q = p;
      while (q != end && *q != '{' && *q != '}') ++q;
      e.literals.append(p, q);
      p = q;
      continue;
    }
    if (p + 1 != end && p[1] == *p) {  // "{{" or "}}"
      e.literals.push_back(*p);
      p += 2;
      continue;
    }
    if (*p == '}') return false;  // unmatched: fmt's error
    if (++p == end) return false;
    int id = 0;
    if (*p == '}' || *p == ':') {
      id = pctx.next_arg_id();
    } else if (*p >= '0' && *p <= '9') {
      if (*p == '0') {
        ++p;
      } else {
        while (p != end && *p >= '0' && *p <= '9' && id < 100000) id = id * 10 + (*p++ - '0');
      }
      if (p == end || (*p != '}' && *p != ':')) return false;
      pctx.check_arg_id(id);
    } else {
      return false;  // a named argument, or an error
    }
    format_field f{segment, static_cast<std::uint32_t>(e.literals.size() - segment), id, 0, field_kind::plain, 0, false,
                   {}};
    const bool specs = *p == ':';
    if (specs) ++p;
    const bool typed = visit_cached(args.get(id), [&](auto value, auto type) {
      using T = decltype(value);
      constexpr std::size_t index = decltype(type)::value;
      f.type = static_cast<std::uint8_t>(index);
      if (!specs || *p == '}') {
        if constexpr (is_decimal_type<T>) f.kind = field_kind::decimal;
        if constexpr (std::is_same_v<T, fmt::string_view>) f.kind = field_kind::text;
        return true;
      }
      const char* const close = std::find(p, end, '}');
      if (std::find(p, close, '{') != close) return false;  // dynamic width or precision
      // fmt 9.1 reserves one byte for a quoted char ({:?}) and writes
      // three or more: right on fmt's own buffer, an overrun on a
      // contiguous one such as the line.
      if (std::find(p, close, '?') != close) return false;
      auto& formatter = f.formatter.template emplace<index>();
      const char* const spec = p;
      pctx.advance_to(p);
      // fmt's parse runs either way: it reports what is wrong as fmt does.
      p = formatter.parse(pctx);
      f.kind = field_kind::by_formatter;
      if constexpr (is_decimal_type<T>) {
        if (p == close) parse_decimal_specs(spec, close, f);
      }
      return true;
    });
    if (!typed || p == end || *p != '}') return false;
    ++p;
    e.fields.push_back(std::move(f));
    segment = static_cast<std::uint32_t>(e.literals.size());
  }
  e.tail_begin = segment;
  e.tail_size = static_cast<std::uint32_t>(e.literals.size() - segment);
  return true;
}

void build(cached_format& e, fmt::string_view format, fmt::format_args args) {
  e.data = nullptr;  // unusable until built
  e.text.assign(format.data(), format.size());
  e.literals.clear();
  e.fields.clear();
  try {
    e.by_fmt = !parse_format(e, format, args);
  } catch (const fmt::format_error&) {
    e.by_fmt = true;
  }
  e.data = format.data();
  e.size = format.size();
}

// A field fmt formats: with no specs as FMT_COMPILE("{}") writes it, else
// with its parsed formatter. Not inlined, so that the fields the cache
// writes itself (write_decimal(), append_bytes()) keep a small loop that
// sets up none of fmt's stack frame.
template <std::size_t Index, class T>
[[gnu::noinline]] void format_by_fmt(const format_field& f, detail::print_line& line, T value) {
  if (f.kind == field_kind::plain) {
    fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}"), value);
  } else {
    // The line is reached through the iterator, which keeps no position:
    // what format() returns need not be kept.
    print_context ctx(std::back_inserter(line), {});
    std::get_if<Index>(&f.formatter)->format(value, ctx);
  }
}

// Formats from the parsed form. False, with part of the line written, when
// an argument's type is not the one the format was parsed for.
bool format_parsed(const cached_format& e, detail::print_line& line, fmt::format_args args) {
  const char* const literals = e.literals.data();
  for (const format_field& f : e.fields) {
    detail::append_bytes(line, literals + f.literal_begin, f.literal_size);
    const bool typed = visit_cached(args.get(f.arg_id), [&](auto value, auto type) {
      using T = decltype(value);
      constexpr std::size_t index = decltype(type)::value;
      if (f.type != index) return false;
      if constexpr (is_decimal_type<T>) {
        if (f.kind == field_kind::decimal) {
          detail::write_decimal(line, value, f.width, f.zero);
          return true;
        }
      }
      if constexpr (std::is_same_v<T, fmt::string_view>) {
        if (f.kind == field_kind::text) {
          detail::append_bytes(line, value.data(), value.size());
          return true;
        }
      }
      format_by_fmt<index>(f, line, value);
      return true;
    });
    if (!typed) return false;
  }
  detail::append_bytes(line, literals + e.tail_begin, e.tail_size);
  return true;
}

// Two ways per set: one string printed with two sets of argument types (a
// "{}" that the linker shares between call sites) keeps both.
constexpr std::size_t cache_sets = 32;
thread_local std::array<cached_format, 2 * cache_sets> format_cache;
thread_local std::array<std::uint8_t, cache_sets> next_victim;

// Formats the line from the cache (parsing the format first, on a miss).
// False, with nothing written: fmt's to format.
bool print_parsed(detail::print_line& line, fmt::string_view format, fmt::format_args args) {
  const auto key = reinterpret_cast<std::uintptr_t>(format.data()) ^ (format.size() << 7);
  const std::size_t set = ((key * 0x9E3779B97F4A7C15ull) >> 59) % cache_sets;
  cached_format* const ways = &format_cache[2 * set];
  int victim = -1;
  for (int w = 0; w < 2; ++w) {
    cached_format& e = ways[w];
    if (e.data != format.data() || e.size != format.size() ||
        std::memcmp(e.text.data(), format.data(), format.size()) != 0) {
      victim = w;
      continue;
    }
    if (e.by_fmt) return false;
    if (format_parsed(e, line, args)) return true;
    line.resize(0);  // other argument types than those it was parsed for
  }
  if (victim < 0) victim = next_victim[set] ^= 1;
  cached_format& e = ways[victim];
  build(e, format, args);
  if (!e.by_fmt && format_parsed(e, line, args)) return true;
  line.resize(0);
  return false;
}

}  // namespace

// The room moves to a fresh block, or, past the largest arena chunk, to a
// string of its own, which then grows as strings do.
void detail::print_room::grow(std::size_t size, std::size_t want) {
  if (heap.empty()) {
    if (want <= byte_arena::max_chunk) {
      std::size_t room;
      char* const p = reinterpret_cast<char*>(arena->reserve(want, room));
      // The block may be the same one, drained and started over: overlap.
      std::memmove(p, data, size);
      data = p;
      capacity = std::min(room, byte_arena::max_chunk);
      return;
    }
    heap.resize(std::max(want, 2 * byte_arena::max_chunk));
    std::memcpy(heap.data(), data, size);
  } else {
    heap.resize(std::max(want, 2 * heap.size()));
  }
  data = heap.data();
  capacity = heap.size();
}

// The room print() formats into: nothing is handed out of the arena until
// print_commit(). False when the stream takes no more writes (fail_after_end()).
bool writable::print_start(detail::print_room& room) {
  if (state_.has(detail::wflag::ending | detail::wflag::destroyed)) return false;
  // The line goes at the arena's next(), the open run's end: the run is
  // closed first (write_or_buffer() may join the line to it again).
  buffered_.close_run();
  std::size_t left;
  room.data = reinterpret_cast<char*>(pool_.arena.reserve(print_min_room, left));
  room.capacity = std::min(left, detail::byte_arena::max_chunk);
  room.arena = &pool_.arena;
  return true;
}

// The formatted line becomes a request like any small chunk, or, when it
// went to the heap, a chunk the request owns.
bool writable::print_commit(detail::print_room& room, std::size_t size, write_cb&& cb) {
  if (!room.heap.empty()) [[unlikely]]
    return write_heap_line(*this, room.heap, size, std::move(cb));
  if (state_.has(detail::wflag::capped)) [[unlikely]] {
    if (over_cap(size)) return refuse_over_cap(std::move(cb));  // the room is left as it was
  }
  return write_formatted({room.data, size}, std::move(cb));
}

// A format the cache does not handle: fmt::vformat_to_n() writes into the
// room directly and tells the line's whole size even when it does not fit;
// such a line (longer than the room left in the block, so at least
// print_min_room bytes, or longer than any arena chunk) is formatted once
// more into room of that size. Its formatters run twice; the loop covers one
// that writes more the second time.
// flatten inlines the whole of fmt's formatting here, which the release
// build wants; under a sanitizer it makes one function so large that g++
// takes over ten minutes on this file, so sanitizer builds go without. Not
// in vprint() itself: a function that large keeps nothing in registers, and
// the cached path (print_parsed()) then spills and reloads around every field.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLUICE_PRINT_FLATTEN
#else
#define SLUICE_PRINT_FLATTEN [[gnu::flatten]]
#endif
namespace {
SLUICE_PRINT_FLATTEN [[gnu::noinline]] std::size_t print_by_fmt(detail::print_room& room, fmt::string_view format,
                                                                fmt::format_args args) {
  std::size_t size = fmt::vformat_to_n(room.data, room.capacity, format, args).size;
  while (size > room.capacity) [[unlikely]] {
    room.grow(0, size);
    size = fmt::vformat_to_n(room.data, room.capacity, format, args).size;
  }
  return size;
}
}  // namespace

// A format the cache handles (print_parsed()) is formatted from its parsed
// form into the line, which grows, keeping what is written, when the room
// runs out; any other by fmt (print_by_fmt()).
bool writable::vprint(fmt::string_view format, fmt::format_args args, write_cb cb) {
  detail::print_line line;
  if (!print_start(line.room_)) return fail_after_end(std::move(cb));
  if (print_parsed(line, format, args)) return print_commit(line.room_, line.size(), std::move(cb));
  const std::size_t size = print_by_fmt(line.room_, format, args);
  return print_commit(line.room_, size, std::move(cb));
}

}  // namespace sluice
