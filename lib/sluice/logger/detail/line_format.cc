// The lines of sluice::logger's SLUICE_LOG_* macros on the backend thread:
// the pattern parsed once (compile_pattern), each line's stamp, and the line
// written through the pattern or as JSON (write_site_line). print()'s lines
// and the rest of the backend are logger.cc.
#include <time.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sluice/logger/detail/arg_codec.h"
#include "sluice/logger/detail/clock.h"
#include "sluice/logger/detail/state.h"
#include "sluice/logger/logger.h"

namespace sluice {

using detail::log_queue;
using detail::log_record;

namespace {
// The pattern's fields, in the order of logger::state::pattern_part.
constexpr std::string_view pattern_fields[] = {"time", "level", "logger", "file", "line", "function", "thread", "message"};

}  // namespace

// The pattern as the backend writes it: literal text and fields, each field
// with its fmt spec ("{:<8}"), or none. Throws std::invalid_argument for an
// unknown field, and for a spec fmt refuses ({line:s}), here rather than on
// every line.
std::vector<logger::state::pattern_part> logger::state::compile_pattern(const std::string& pattern, bool& uses_time) {
  std::vector<logger::state::pattern_part> parts;
  std::string literal;
  std::string positional;  // the same as one fmt format, to have fmt check the specs
  uses_time = false;
  const auto bad = [&pattern](const std::string& why) {
    return std::invalid_argument("sluice::logger: pattern \"" + pattern + "\": " + why);
  };
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      literal += c;
      positional.append(2, c);
      ++i;
      continue;
    }
    if (c == '}') throw bad("a '}' without its '{' (write '}}')");
    if (c != '{') {
      literal += c;
      positional += c;
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    const std::size_t name_end = std::min(pattern.find(':', i), close);
    const std::string_view name =
        std::string_view(pattern).substr(i + 1, name_end == std::string::npos ? 0 : name_end - i - 1);
    std::size_t field = std::size(pattern_fields);
    for (std::size_t f = 0; f < std::size(pattern_fields); ++f)
      if (pattern_fields[f] == name) field = f;
    if (close == std::string::npos || field == std::size(pattern_fields))
      throw bad("unknown field {" + std::string(name) +
                "} (the fields: time, level, logger, file, line, function, thread, message)");
    uses_time = uses_time || field == 0;
    if (!literal.empty()) parts.push_back({std::exchange(literal, {}), -1, {}});
    std::string spec = pattern.substr(name_end, close - name_end);
    if (field == 0 && spec.size() > 1 && spec[1] == '%') {
      // {time:%H:%M:%S}: strftime's, not fmt's; %f is the fraction.
      logger::state::pattern_part part{{}, 0, {}};
      part.strftime_time = true;
      const std::string format = spec.substr(1);
      std::size_t k = 0;
      while (k < format.size() && !(format[k] == '%' && k + 1 < format.size() && format[k + 1] == 'f'))
        k += format[k] == '%' ? 2 : 1;
      part.fraction = k < format.size();
      part.before_fraction = format.substr(0, std::min(k, format.size()));
      if (part.fraction) part.after_fraction = format.substr(k + 2);
      parts.push_back(std::move(part));
      positional += "{0}";
      i = close;
      continue;
    }
    logger::state::pattern_part part{{}, static_cast<int>(field), spec.empty() ? std::string() : "{" + spec + "}"};
    // ":<8", ":>12", ":^5": by hand.
    if (spec.size() >= 3 && (spec[1] == '<' || spec[1] == '>' || spec[1] == '^') &&
        spec.find_first_not_of("0123456789", 2) == std::string::npos && spec[2] != '0') {
      part.align = spec[1];
      part.width = std::stoul(spec.substr(2));
    }
    parts.push_back(std::move(part));
    positional += '{' + std::to_string(field) + spec + '}';
    i = close;
  }
  if (!literal.empty()) parts.push_back({std::move(literal), -1, {}});
  try {
    const std::string_view sv = "x";
    const std::uint32_t n = 1;
    (void)fmt::vformat(positional, fmt::make_format_args(sv, sv, sv, sv, n, sv, n, sv));
  } catch (const std::exception& e) {
    throw bad(e.what());
  }
  return parts;
}


// A line's stamp in ns: its thread's lines in order. A refit of the TSC's
// line may put a stamp taken before it a hair behind the one before (a wall
// clock stepped back by more than that goes back).
std::uint64_t logger::state::line_stamp(log_queue& q, const log_record& r) noexcept {
  std::uint64_t ns = stamp_ns(r.timestamp);
  if (ns < q.last_stamp && q.last_stamp - ns < 1'000'000) ns = q.last_stamp;
  q.last_stamp = ns;
  return ns;
}

// A stamp as written: "2026-12-04T20:30:00.123456Z " (or "+01:00" for the
// zone, local time) into buf.
std::size_t logger::state::format_time(std::uint64_t ns, char* buf) noexcept {
  // The date and time to the second change once a second: kept, and only
  // the fraction written (the whole stamp costs ~10% of a line's formatting).
  const std::uint64_t second = ns / 1'000'000'000;
  if (second != stamp_second) {
    std::int64_t offset = 0;  // seconds east of UTC
    if (options.time_zone == log_time_zone::local) {
      const auto t = static_cast<time_t>(second);
      struct tm tm {};
      if (::localtime_r(&t, &tm)) offset = tm.tm_gmtoff;
    }
    detail::format_stamp(stamp_text, ns + static_cast<std::uint64_t>(offset * 1'000'000'000), precise_stamps());
    if (options.time_zone == log_time_zone::utc) {
      std::memcpy(stamp_zone, "Z", 2);
    } else {
      const std::int64_t m = (offset < 0 ? -offset : offset) / 60;
      fmt::format_to_n(stamp_zone, sizeof stamp_zone - 1, "{}{:02}:{:02}", offset < 0 ? '-' : '+', m / 60, m % 60);
      stamp_zone[6] = 0;
    }
    stamp_second = second;
  }
  std::memcpy(buf, stamp_text, 20);  // "2026-12-02T01:19:04."
  const auto frac = static_cast<unsigned>(ns % 1'000'000'000);
  std::size_t n = 20;
  unsigned digits = precise_stamps() ? frac / 1000 : frac / 1'000'000;
  const std::size_t width = precise_stamps() ? 6 : 3;
  for (std::size_t k = width; k-- > 0; digits /= 10) buf[n + k] = static_cast<char>('0' + digits % 10);
  n += width;
  for (const char* z = stamp_zone; *z; ++z) buf[n++] = *z;
  buf[n++] = ' ';
  return n;
}

namespace {

void append(fmt::memory_buffer& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }

// Code points of UTF-8 `s` (the bytes that do not continue one), as fmt
// counts a width.
std::size_t utf8_code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

// `text` as a JSON string's contents: RFC 8259's escapes, bytes >= 0x20
// otherwise as they are (UTF-8 passes through).
void append_json(fmt::memory_buffer& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  for (const char c : text) {
    switch (c) {
      case '"': append(out, "\\\""); break;
      case '\\': append(out, "\\\\"); break;
      case '\n': append(out, "\\n"); break;
      case '\r': append(out, "\\r"); break;
      case '\t': append(out, "\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          append(out, "\\u00");
          out.push_back(hex[(c >> 4) & 0xf]);
          out.push_back(hex[c & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
}

}  // namespace

// A JSON line's named arguments (arg_codec.h's log_encode_named), each as
// its key after "message": ,"user":"alice" or ,"port":8080.
void detail::log_append_named_json(fmt::memory_buffer& line, std::string_view named) {
  const auto* p = reinterpret_cast<const std::byte*>(named.data());
  for (const auto* end = p + named.size(); p < end;) {
    const fmt::string_view key = log_load<std::string_view>(p), value = log_load<std::string_view>(p);
    const bool bare = *p++ == std::byte{1};
    append(line, ",\"");
    append_json(line, std::string_view(key.data(), key.size()));
    append(line, bare ? "\":" : "\":\"");
    append_json(line, std::string_view(value.data(), value.size()));
    if (!bare) line.push_back('"');
  }
}

namespace {

// spdlog's colours of the levels, and the reset after them.
constexpr std::string_view level_colors[] = {"\033[37m", "\033[36m", "\033[32m", "\033[33m\033[1m",
                                             "\033[31m\033[1m", "\033[1m\033[41m", ""};
constexpr std::string_view color_reset = "\033[m";

}  // namespace

// {time:%...}: strftime's text for the stamp's second (made once a second,
// in the zone the options say), the fraction where the format has %f (as
// many digits as {time} writes).
void logger::state::append_strftime_time(const pattern_part& part, std::uint64_t ns) {
  if (!ns) return;
  const std::uint64_t second = ns / 1'000'000'000;
  if (second != part.second) {
    const auto t = static_cast<time_t>(second);
    struct tm tm {};
    if (options.time_zone == log_time_zone::local ? !::localtime_r(&t, &tm) : !::gmtime_r(&t, &tm)) return;
    const auto render = [&tm](const std::string& format, std::string& into) {
      char buf[256];
      // 0 is an empty text or one that does not fit: either way, none.
      into.assign(buf, format.empty() ? 0 : std::strftime(buf, sizeof buf, format.c_str(), &tm));
    };
    render(part.before_fraction, part.text_before);
    render(part.after_fraction, part.text_after);
    part.second = second;
  }
  append(line, part.text_before);
  if (part.fraction) {
    const auto frac = static_cast<unsigned>(ns % 1'000'000'000);
    const std::size_t width = precise_stamps() ? 6 : 3;
    char digits[6];
    unsigned d = precise_stamps() ? frac / 1000 : frac / 1'000'000;
    for (std::size_t k = width; k-- > 0; d /= 10) digits[k] = static_cast<char>('0' + d % 10);
    append(line, std::string_view(digits, width));
  }
  append(line, part.text_after);
}

// A SLUICE_LOG_* line (`stamp` in ns, or 0), to each output whose level
// takes it: the pattern's parts appended to `line` (with one output and a
// message without a spec, the message formatted straight into it), or the
// JSON object; one write each. The last line of a run carries, to each
// output, the callback that lands `landing` up to `landed_at` (an output
// that does not take the line gets an empty write with it).
bool logger::state::write_site_line(const log_queue& q, const log_record& r, std::uint64_t stamp, log_queue* landing,
                                    std::uint64_t landed_at) {
  char stamp_buf[48];
  const std::size_t n = stamp ? format_time(stamp, stamp_buf) - 1 : 0;  // without its space
  const std::string_view time(stamp_buf, n), level = log_level_name(r.site->level), name = options.name;
  const std::string_view file = r.site->file, function = r.site->function;
  const std::uint32_t number = r.site->line, thread = r.thread;
  const detail::log_thread_name* thread_named = q.thread_name.load(std::memory_order_acquire);
  const std::string_view thread_name =
      thread_named && thread_named->thread == thread ? std::string_view(thread_named->name) : std::string_view();
  // The message into `into` (appended).
  const auto format_message = [&r](fmt::memory_buffer& into, fmt::memory_buffer* named = nullptr) {
    detail::log_output out;
    out.message = &into;
    out.named = named;
    const std::size_t before = into.size();
    try {
      r.decode(reinterpret_cast<const std::byte*>(&r + 1), r.format, r.format_size, out);
    } catch (const std::exception& e) {
      // A spec checked only when formatting (a dynamic width out of range).
      into.resize(before);
      if (named) named->clear();
      fmt::format_to(fmt::appender(into), "sluice::logger: format error: {}: {}", e.what(),
                     std::string_view(r.format, r.format_size));
    }
  };
  // With several outputs the message is formatted once, into `message`
  // (and the named arguments, for a JSON output, into `named`).
  bool message_made = false;
  fmt::memory_buffer named;
  const auto the_message = [&]() -> std::string_view {
    if (!message_made) {
      message.clear();
      format_message(message, json_outputs ? &named : nullptr);
      message_made = true;
    }
    return std::string_view(message.data(), message.size());
  };
  bool ok = true;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    output& o = outputs[i];
    if (o.failed) continue;
    write_cb cb;
    if (landed_at) cb = land_cb(*landing, landed_at, i);
    if (r.site->level < o.level) {
      if (cb && !o.stream->write(std::string_view(), std::move(cb))) {
        o.pushed_back = true;
        ok = false;
      }
      continue;
    }
    line.clear();
    if (o.format == log_format::json) {
      line.push_back('{');
      if (n) {
        append(line, "\"time\":\"");
        append(line, time);
        append(line, "\",");
      }
      const auto field = [this](std::string_view key, std::string_view value) {
        line.push_back('"');
        append(line, key);
        append(line, "\":\"");
        append_json(line, value);
        append(line, "\",");
      };
      field("level", level);
      field("logger", name);
      field("file", file);
      fmt::format_to(fmt::appender(line), "\"line\":{},", number);
      field("function", function);
      fmt::format_to(fmt::appender(line), "\"thread\":{},", thread);
      if (!thread_name.empty()) field("thread_name", thread_name);
      append(line, "\"message\":\"");
      append_json(line, the_message());
      line.push_back('"');
      detail::log_append_named_json(line, std::string_view(named.data(), named.size()));
      append(line, "}\n");
    } else {
      for (const pattern_part& part : o.pattern) {
        if (part.field < 0) {
          append(line, part.literal);
          continue;
        }
        // Padding as fmt pads: by code points, spaces; '<' is a string's
        // default, '>' a number's, '^' leaves the odd one on the right. A
        // colour goes round the text, not the padding.
        const std::string_view color = o.colors && part.field == 1 ? level_colors[static_cast<std::size_t>(r.site->level)]
                                                                    : std::string_view();
        const auto padded = [this, &part, color](std::string_view text) {
          const std::size_t points = part.align ? utf8_code_points(text) : part.width;
          const std::size_t pad = part.width > points ? part.width - points : 0;
          const std::size_t left = part.align == '>' ? pad : part.align == '^' ? pad / 2 : 0;
          for (std::size_t k = 0; k < left; ++k) line.push_back(' ');
          append(line, color);
          append(line, text);
          if (!color.empty()) append(line, color_reset);
          for (std::size_t k = left; k < pad; ++k) line.push_back(' ');
        };
        const auto put = [this, &part, &padded](const auto& value) {
          if (!part.spec.empty() && !part.align) {
            fmt::format_to(fmt::appender(line), fmt::runtime(part.spec), value);
          } else if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::uint32_t>) {
            const fmt::format_int digits(value);
            padded(std::string_view(digits.data(), digits.size()));
          } else {
            padded(value);
          }
        };
        switch (part.field) {
          case 0:
            if (part.strftime_time)
              append_strftime_time(part, stamp);
            else
              put(time);
            break;
          case 1: put(level); break;
          case 2: put(name); break;
          case 3: put(file); break;
          case 4: put(number); break;
          case 5: put(function); break;
          case 6:
            // A name, when the thread has one and the spec suits a string
            // (an alignment and a width); a numeric spec ({thread:08}) keeps
            // the id, as compile_pattern() checked it.
            if (thread_name.empty() || (!part.spec.empty() && !part.align))
              put(thread);
            else
              put(thread_name);
            break;
          default:
            if (part.spec.empty() && outputs.size() == 1)
              format_message(line);
            else
              put(the_message());
        }
      }
      line.push_back('\n');
    }
    if (!o.stream->write(std::string_view(line.data(), line.size()), std::move(cb))) {  // copied into the stream's arena
      o.pushed_back = true;
      ok = false;
    }
  }
  return ok;
}

}  // namespace sluice
