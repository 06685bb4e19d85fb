// logger: deferred formatting. print() and the SLUICE_LOG_* macros (at the
// end of this header) copy their arguments into a ring of the calling
// thread; a backend thread formats them with fmt into a stream of its own,
// on its own loop. Its internals are in logger/detail/: the ring
// (spsc_ring.h), the argument codec (arg_codec.h), the clocks (clock.h), the
// state the threads share (state.h) and the crash handler.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/compile.h>
#include <fmt/core.h>

#include "sluice/logger/detail/arg_codec.h"
#include "sluice/logger/detail/clock.h"
#include "sluice/logger/detail/spsc_ring.h"
#include "sluice/logger/detail/std_formatters.h"
#include "sluice/logger/log_level.h"
#include "sluice/stream/detail/print.h"
#include "sluice/stream/writable.h"

namespace sluice {

/// What print() does when its thread's ring is full.
enum class full_policy {
  block,  ///< spin briefly, then wait for the backend to make room
  drop,   ///< drop the line, counted; the backend says how many before the thread's next line
  grow,   ///< a bigger ring (twice the size, up to max_ring_size), then block
};

/// When each line is stamped (at the call), and how the backend writes it:
/// an ISO 8601 UTC time and a space before the line. Each thread's stamps
/// never go back (unless the wall clock is stepped back by more than 1 ms).
enum class log_timestamp {
  none,
  /// CLOCK_REALTIME_COARSE: the kernel's last tick (up to a few ms old),
  /// written to the millisecond. The cheapest read in a loop, but of data
  /// the kernel writes every tick, so a call after a pause misses on it:
  /// its tail at the call is the worst of the three (docs/benchmarks.md).
  coarse,
  /// The CPU's time-stamp counter at the call (rdtsc), which the backend
  /// turns into CLOCK_REALTIME: calibrated against it at construction (the
  /// constructor takes 2 ms more) and again every second, within a few
  /// microseconds of it; written to the microsecond. Where the counter is
  /// not invariant (no constant_tsc and nonstop_tsc in /proc/cpuinfo, or the
  /// kernel's clocksource is not tsc) or not x86: what realtime does.
  precise,
  /// CLOCK_REALTIME (vDSO) at the call, written to the microsecond.
  realtime,
};

/// How a SLUICE_LOG_* line is written: through logger_options::pattern, or
/// as one JSON object a line.
enum class log_format { pattern, json };

/// How {time} is written: ISO 8601 in UTC ("2026-12-04T20:30:00.123456Z"),
/// or in the local time zone with its offset ("...00.123456+01:00"; the
/// zone as localtime_r() finds it, TZ included, looked up once a second).
enum class log_time_zone { utc, local };

/// Makes a logger's stream; run on the logger's backend thread.
using log_stream_factory = std::function<std::unique_ptr<writable>()>;

/// The pattern a logger writes SLUICE_LOG_* lines with unless told.
inline constexpr const char* log_default_pattern = "{time} {level:<8} {file}:{line} {message}";

/// One of a logger's destinations (logger(std::vector<log_destination>)):
/// its stream, the lowest level of the SLUICE_LOG_* lines it takes (a line
/// the logger's own level filters out reaches none), and how it writes
/// them. print() lines go to every destination.
struct log_destination {
  log_stream_factory make_stream;
  log_level level = log_level::trace;
  std::string pattern = log_default_pattern;  // as logger_options::pattern
  log_format format = log_format::pattern;
  /// The pattern's {level} in ANSI colours (as spdlog's: trace white,
  /// debug cyan, info green, warn yellow, error red, critical white on red;
  /// the padding stays plain). log_colors_for(fd) says whether a terminal
  /// wants them.
  bool colors = false;
};

/// Whether lines written to `fd` should be coloured: it is a terminal and
/// NO_COLOR is unset or empty (no-color.org).
bool log_colors_for(int fd) noexcept;

/// A destination on `fd` (standard error unless told; not closed by the
/// logger), coloured when log_colors_for(fd).
log_destination log_console(log_level level = log_level::trace, int fd = 2);

/// Names the calling thread in {thread} (instead of its id) and in JSON
/// lines ("thread_name"), for every logger, from its next line on. A name
/// is kept for the life of the process (once per distinct name).
void set_log_thread_name(std::string_view name);

struct logger_options {
  /// The lowest level a SLUICE_LOG_* line is written at (set_level()
  /// changes it); print() lines are always written.
  log_level level = log_level::info;
  /// {logger} in the pattern.
  std::string name{};
  /// {time}'s zone.
  log_time_zone time_zone = log_time_zone::utc;
  /// How a SLUICE_LOG_* line is written, with fmt's syntax over named
  /// fields: {time} (ISO 8601 UTC, to the microsecond with a precise clock;
  /// {time:%H:%M:%S.%f}: a strftime format, %f the fraction, in time_zone),
  /// {level}, {logger}, {file} (its base name), {line}, {function},
  /// {thread} (the thread's name, set_log_thread_name(), else its id),
  /// {message}; widths and alignments as fmt's ({level:<8}). A newline
  /// follows. An unknown field throws std::invalid_argument from the
  /// constructor. print() lines are written as they are. (With several
  /// destinations, each has its own pattern and format instead.)
  std::string pattern = log_default_pattern;
  /// json: each SLUICE_LOG_* line is one object on a line of its own, with
  /// the pattern's fields as keys, in its order (time, level, logger, file,
  /// line, function, thread, message; the pattern itself is not used),
  /// "line" and "thread" as numbers, "thread_name" after "thread" when the
  /// thread has one, strings escaped as RFC 8259 requires (control
  /// characters as \u00XX; other bytes as they are).
  log_format format = log_format::pattern;
  /// Bytes of each thread's ring, made on the thread's first print(); a
  /// power of two (rounded up), at least 4 KiB. A line's arguments must fit
  /// in it (in max_ring_size with grow), or print() drops it.
  std::size_t ring_size = 256 * 1024;
  full_policy on_full = full_policy::block;
  /// grow: the largest a ring grows to.
  std::size_t max_ring_size = 64 * 1024 * 1024;
  /// When print() lines are stamped (a pattern with {time} stamps its
  /// lines with this clock, or precise's when this is none).
  log_timestamp timestamp = log_timestamp::none;
  /// How long the backend sleeps when the rings are empty (it is woken at
  /// once by flush(), a full ring and shutdown). Lines reach the stream
  /// within about this long.
  std::chrono::milliseconds poll_interval{1};
  /// SIGTERM and SIGINT (sluice/signals.h, on the backend's loop): write
  /// everything printed, end the stream, then the signal's default action.
  /// One handler per signal per process: fails (throws) if one is watched.
  bool handle_term_signals = false;
  /// SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE: write what the rings hold to
  /// crash_fd (or crash_path, opened then with O_APPEND) with
  /// async-signal-safe calls, then the default action. Lines the stream
  /// holds and has not written are lost; a line may appear twice if it was
  /// written just before the crash.
  bool crash_handler = false;
  std::string crash_path{};
  int crash_fd = 2;
};

/// A logger that formats off the caller's thread:
///
///     sluice::logger lg([] { return sluice::make_log_writable("app.log", {.max_size = 64 << 20}); });
///     SLUICE_LOG_INFO(lg, "user {} logged in", name);               // any thread; through the pattern
///     lg.print("iteration {} message {} double {}\n", it, i, d);  // a raw line, as fmt gives it
///     lg.flush();  // every line logged before it is written
///
/// (docs/logging.md: the levels, the macros, the pattern.)
///
/// The function runs on the logger's backend thread and makes the stream
/// there, on that thread's loop::current(), so any writable works. The
/// backend formats each line with fmt (exactly what fmt::format gives) into
/// the stream, stops when write() returns false and resumes on 'drain'; the
/// rings fill meanwhile, and full_policy says what print() does then. The
/// destructor writes everything printed, ends the stream and joins.
///
/// Lines of one thread keep their order; lines of different threads are
/// interleaved as the backend finds them.
class logger {
 public:
  using stream_factory = log_stream_factory;

  template <class F>
    requires std::is_invocable_v<F&>
  explicit logger(F&& make_stream, const logger_options& options = {})
      : logger(one_destination(stream_factory([f = std::forward<F>(make_stream)]() mutable -> std::unique_ptr<writable> {
                 return f();
               }), options),
               options, 0) {}
  /// A logger over several destinations, each with its own level and
  /// pattern (options.pattern and options.format are not used):
  ///
  ///     sluice::logger lg({sluice::log_console(sluice::log_level::warn),
  ///                        {.make_stream = [] { return sluice::make_log_writable("app.log"); }}},
  ///                       {.level = sluice::log_level::debug});
  ///
  /// Each line is written to each destination in turn; the logger waits for
  /// the slowest ('drain' of each that pushed back), and a line has landed
  /// (flush(), room in the ring) once every destination has written it. A
  /// destination that fails does not stop the others; flush() returns the
  /// first destination's error.
  explicit logger(std::vector<log_destination> destinations, const logger_options& options = {})
      : logger(std::move(destinations), options, 0) {}
  ~logger();
  logger(const logger&) = delete;
  logger& operator=(const logger&) = delete;

  /// Queues a line: copies the arguments (trivially copyable ones as they
  /// are, strings by content, a fmt::arg()'s name and value so) with the
  /// format's address and the decoder for their types. If an argument is
  /// anything else (a std container, a type that is not trivially copyable,
  /// a range such as std::span that points at the caller's data), the whole
  /// line is formatted at the call instead, which costs what fmt::format
  /// costs, and its text is queued. False if the line was dropped (policy
  /// drop, a line larger than the ring, after shutdown). A runtime format
  /// (fmt::runtime()) that fmt rejects when the backend formats it (a field
  /// without an argument, a dynamic width out of range) is written as the
  /// line "sluice::logger: format error: <fmt's message>: <the format>"
  /// instead.
  template <class... Args>
  bool print(fmt::format_string<Args...> format, Args&&... args) {
    const fmt::string_view f = format;
    if constexpr (detail::log_deferred<detail::log_stored_t<Args>...>()) {
      return put<detail::log_stored_t<Args>...>(f.data(), f.size(), nullptr, false, clock_,
                                                 &detail::log_decode<detail::log_stored_t<Args>...>, args...);
    } else {
      const detail::log_formatted text(f, false, args...);
      return put<std::string_view>(f.data(), f.size(), nullptr, false, clock_, &detail::log_decode_formatted<false>,
                                   text.message_text());
    }
  }

  /// A line at `site` (made by the SLUICE_LOG_* macros below, which check
  /// the level first and compile the format, FMT_COMPILE): its arguments
  /// are copied as print()'s are (or the line formatted at the call); the
  /// backend formats the compiled format (parsed at run time with named
  /// arguments, which fmt 9 does not compile) and writes the line through
  /// the pattern.
  template <class S, class... Args>
    requires detail::compiled_format<S>
  bool log(const log_site& site, const S& format, Args&&... args) {
    const fmt::string_view f(format);
    // fmt's compile-time checks, as FMT_COMPILE's: the line may be formatted
    // with S's text at run time.
    [[maybe_unused]] constexpr fmt::format_string<std::remove_cvref_t<Args>...> checked{fmt::string_view(S{})};
    // Below the level: taken (takes()) for the backtrace only.
    const bool backtrace_only = site.level < level_.load(std::memory_order_relaxed);
    if constexpr (detail::log_deferred<detail::log_stored_t<Args>...>()) {
      return put<detail::log_stored_t<Args>...>(f.data(), f.size(), &site, backtrace_only, site_clock_,
                                                 &detail::log_decode_compiled<S, detail::log_stored_t<Args>...>, args...);
    } else {
      const detail::log_formatted text(f, true, args...);
      return put<std::string_view, std::string_view>(f.data(), f.size(), &site, backtrace_only, site_clock_,
                                                     &detail::log_decode_formatted<true>, text.message_text(),
                                                     text.named_text());
    }
  }

  /// The level below which SLUICE_LOG_* lines are not written; any thread,
  /// any time (one relaxed atomic store).
  void set_level(log_level l) noexcept;
  log_level level() const noexcept { return level_.load(std::memory_order_relaxed); }
  /// Whether a line at `l` is written: one load and a compare.
  bool should_log(log_level l) const noexcept { return l >= level_.load(std::memory_order_relaxed); }
  /// Whether a SLUICE_LOG_* line at `l` goes into the ring: it is written,
  /// or kept for the backtrace. The macros ask this: one load and a compare.
  bool takes(log_level l) const noexcept { return l >= gate_.load(std::memory_order_relaxed); }

  /// Keeps the last `n` SLUICE_LOG_* lines below the logger's level (their
  /// arguments copied as any line's, formatted only if written) and writes
  /// them, oldest first and with their own times, before the next line at
  /// `flush_level` or above, or at flush_backtrace(). n = 0 turns it off.
  /// Any thread. Lines kept and never written are lost at the end (and at
  /// a crash, where only the rings are written).
  void enable_backtrace(std::size_t n, log_level flush_level = log_level::error);
  /// Writes the lines the backtrace keeps, after the lines this thread
  /// logged before the call (it is itself a record in this thread's ring).
  void flush_backtrace();

  /// Blocks until every line printed before it, by any thread, is written
  /// to the stream (its write callbacks have run). Returns the stream's
  /// error, if it has one.
  std::error_code flush();

  /// Lines dropped so far, by every thread.
  std::uint64_t dropped() const noexcept;

  struct state;

 private:
  logger(std::vector<log_destination> destinations, const logger_options& options, int);
  static std::vector<log_destination> one_destination(stream_factory make_stream, const logger_options& options);

  template <class... Stored, class... Args>
  bool put(const char* format, std::size_t format_size, const log_site* site, bool backtrace_only,
           detail::log_clock clock, detail::log_decode_fn* decode, const Args&... args) {
    (detail::log_check_storable<Stored>(), ...);
    const std::size_t size =
        detail::log_round(sizeof(detail::log_record) + (std::size_t{0} + ... + detail::log_arg_size<Stored>(args)));
    detail::log_queue* q = local_queue();
    std::byte* p = q ? q->reserve(size) : nullptr;
    if (!p) [[unlikely]] {
      p = reserve_slow(q, size);
      if (!p) return false;
    }
    auto* r = reinterpret_cast<detail::log_record*>(p);
    r->size = static_cast<std::uint32_t>(size);
    r->dropped = q->pending_drops;
    r->backtrace_only = backtrace_only;
    r->timestamp = clock == detail::log_clock::none ? 0 : clock == detail::log_clock::tsc ? detail::log_tsc() : now(clock);
    r->format = format;
    r->format_size = static_cast<std::uint32_t>(format_size);
    r->thread = q->thread_id;
    r->decode = decode;
    r->site = site;
    [[maybe_unused]] std::byte* a = p + sizeof(detail::log_record);
    ((a = detail::log_store<Stored>(a, static_cast<const Stored&>(args))), ...);
    q->pending_drops = 0;
    q->commit(size);
    return true;
  }

  // This thread's queue for this logger: a thread-local cache of one.
  struct local_cache {
    std::uint64_t id;
    detail::log_queue* queue;
  };
  static constinit thread_local local_cache local_;
  detail::log_queue* local_queue() noexcept { return local_.id == id_ ? local_.queue : attach_thread(); }
  detail::log_queue* attach_thread();
  std::byte* reserve_slow(detail::log_queue*& q, std::size_t size);
  static std::uint64_t now(detail::log_clock clock) noexcept;

  std::uint64_t id_;
  detail::log_clock clock_;       // print()'s stamps
  detail::log_clock site_clock_;  // SLUICE_LOG_* lines' stamps
  std::atomic<log_level> level_;
  std::atomic<log_level> gate_;  // level_, or trace while a backtrace keeps lines
  std::unique_ptr<state> state_;
};

}  // namespace sluice

// ---- the macros
//
// SLUICE_LOG_INFO(lg, "user {} logged in", name): a line at info, written when
// lg's level lets it (one load and a compare, before the arguments are
// looked at). The format is checked at compile time; the file, line and
// function are kept in static data, once per call site. SLUICE_LOG_ACTIVE_LEVEL
// (0 trace ... 5 critical, 6 off), defined before this header is included,
// removes the calls below it from the program.
#define SLUICE_LOG_LEVEL_TRACE 0
#define SLUICE_LOG_LEVEL_DEBUG 1
#define SLUICE_LOG_LEVEL_INFO 2
#define SLUICE_LOG_LEVEL_WARN 3
#define SLUICE_LOG_LEVEL_ERROR 4
#define SLUICE_LOG_LEVEL_CRITICAL 5
#define SLUICE_LOG_LEVEL_OFF 6
#ifndef SLUICE_LOG_ACTIVE_LEVEL
#define SLUICE_LOG_ACTIVE_LEVEL SLUICE_LOG_LEVEL_TRACE
#endif

#define SLUICE_LOG_AT(lg, lvl, format, ...)                                                                      \
  do {                                                                                                            \
    if ((lg).takes(lvl)) [[unlikely]] {                                                                      \
      static constexpr ::sluice::log_site sluice_log_site_{lvl, __LINE__, ::sluice::detail::log_base_name(__FILE__), \
                                                           __builtin_FUNCTION()};                                 \
      (lg).log(sluice_log_site_, FMT_COMPILE(format) __VA_OPT__(, ) __VA_ARGS__);                                 \
    }                                                                                                             \
  } while (false)

// SLUICE_LOG_INFO_LIMIT(lg, interval, fmt, args...): at most one line an
// interval (a std::chrono duration) from this call site, any thread; the
// calls in between are skipped and counted, and the next line written is
// preceded by one at the same site and level saying how many.
#define SLUICE_LOG_LIMIT_AT(lg, lvl, interval, format, ...)                                                      \
  do {                                                                                                            \
    if ((lg).takes(lvl)) [[unlikely]] {                                                                      \
      static constexpr ::sluice::log_site sluice_log_site_{lvl, __LINE__, ::sluice::detail::log_base_name(__FILE__), \
                                                           __builtin_FUNCTION()};                                 \
      static ::sluice::detail::log_limit sluice_log_limit_;                                                       \
      if (const auto sluice_log_skipped_ = sluice_log_limit_.pass(interval)) {                                    \
        if (*sluice_log_skipped_ != 0)                                                                            \
          (lg).log(sluice_log_site_, FMT_COMPILE("({} lines of this call skipped by its limit)"),                \
                   *sluice_log_skipped_);                                                                         \
        (lg).log(sluice_log_site_, FMT_COMPILE(format) __VA_OPT__(, ) __VA_ARGS__);                               \
      }                                                                                                           \
    }                                                                                                             \
  } while (false)

#if SLUICE_LOG_ACTIVE_LEVEL <= SLUICE_LOG_LEVEL_TRACE
#define SLUICE_LOG_TRACE(lg, ...) SLUICE_LOG_AT(lg, ::sluice::log_level::trace, __VA_ARGS__)
#define SLUICE_LOG_TRACE_LIMIT(lg, interval, ...) SLUICE_LOG_LIMIT_AT(lg, ::sluice::log_level::trace, interval, __VA_ARGS__)
#else
#define SLUICE_LOG_TRACE(lg, ...) static_cast<void>(0)
#define SLUICE_LOG_TRACE_LIMIT(lg, interval, ...) static_cast<void>(0)
#endif
#if SLUICE_LOG_ACTIVE_LEVEL <= SLUICE_LOG_LEVEL_DEBUG
#define SLUICE_LOG_DEBUG(lg, ...) SLUICE_LOG_AT(lg, ::sluice::log_level::debug, __VA_ARGS__)
#define SLUICE_LOG_DEBUG_LIMIT(lg, interval, ...) SLUICE_LOG_LIMIT_AT(lg, ::sluice::log_level::debug, interval, __VA_ARGS__)
#else
#define SLUICE_LOG_DEBUG(lg, ...) static_cast<void>(0)
#define SLUICE_LOG_DEBUG_LIMIT(lg, interval, ...) static_cast<void>(0)
#endif
#if SLUICE_LOG_ACTIVE_LEVEL <= SLUICE_LOG_LEVEL_INFO
#define SLUICE_LOG_INFO(lg, ...) SLUICE_LOG_AT(lg, ::sluice::log_level::info, __VA_ARGS__)
#define SLUICE_LOG_INFO_LIMIT(lg, interval, ...) SLUICE_LOG_LIMIT_AT(lg, ::sluice::log_level::info, interval, __VA_ARGS__)
#else
#define SLUICE_LOG_INFO(lg, ...) static_cast<void>(0)
#define SLUICE_LOG_INFO_LIMIT(lg, interval, ...) static_cast<void>(0)
#endif
#if SLUICE_LOG_ACTIVE_LEVEL <= SLUICE_LOG_LEVEL_WARN
#define SLUICE_LOG_WARN(lg, ...) SLUICE_LOG_AT(lg, ::sluice::log_level::warn, __VA_ARGS__)
#define SLUICE_LOG_WARN_LIMIT(lg, interval, ...) SLUICE_LOG_LIMIT_AT(lg, ::sluice::log_level::warn, interval, __VA_ARGS__)
#else
#define SLUICE_LOG_WARN(lg, ...) static_cast<void>(0)
#define SLUICE_LOG_WARN_LIMIT(lg, interval, ...) static_cast<void>(0)
#endif
#if SLUICE_LOG_ACTIVE_LEVEL <= SLUICE_LOG_LEVEL_ERROR
#define SLUICE_LOG_ERROR(lg, ...) SLUICE_LOG_AT(lg, ::sluice::log_level::error, __VA_ARGS__)
#define SLUICE_LOG_ERROR_LIMIT(lg, interval, ...) SLUICE_LOG_LIMIT_AT(lg, ::sluice::log_level::error, interval, __VA_ARGS__)
#else
#define SLUICE_LOG_ERROR(lg, ...) static_cast<void>(0)
#define SLUICE_LOG_ERROR_LIMIT(lg, interval, ...) static_cast<void>(0)
#endif
#if SLUICE_LOG_ACTIVE_LEVEL <= SLUICE_LOG_LEVEL_CRITICAL
#define SLUICE_LOG_CRITICAL(lg, ...) SLUICE_LOG_AT(lg, ::sluice::log_level::critical, __VA_ARGS__)
#define SLUICE_LOG_CRITICAL_LIMIT(lg, interval, ...) SLUICE_LOG_LIMIT_AT(lg, ::sluice::log_level::critical, interval, __VA_ARGS__)
#else
#define SLUICE_LOG_CRITICAL(lg, ...) static_cast<void>(0)
#define SLUICE_LOG_CRITICAL_LIMIT(lg, interval, ...) static_cast<void>(0)
#endif
