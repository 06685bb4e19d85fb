// state: what a sluice::logger shares between its producers, its backend
// thread and its crash handler (logger.h keeps it behind a pointer, so that
// a user of logger.h compiles no <thread> nor <mutex> of it). Internal to
// the logger (never installed): logger.cc and crash_handler.cc.
//
// ---- Who touches what
//
// A producer thread owns one log_queue per logger (attach_thread): it alone
// writes records and moves `tail`. The backend thread alone reads records,
// hands each line to the stream (vprint, which formats through the stream's
// parsed-format cache), and moves `head` once the stream's write callback
// says the line landed: so a full ring means lines not yet written, and the
// crash handler writes from `head`. Queues are never unlinked while the
// logger lives (the crash handler walks the list without a lock); a thread
// that exits lets go of its queue, and the next new thread takes it over.
//
// Waking: print() never wakes the backend. The backend drains, then sleeps
// for poll_interval on its loop's timer; a full ring, flush() and shutdown
// post to its loop (kick()), once until the backend has run. A producer
// waiting for room sleeps on its queue's `space_epoch`, which the backend
// bumps when it has freed half the ring and sees `waiting`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "sluice/logger/detail/clock.h"
#include "sluice/logger/detail/spsc_ring.h"
#include "sluice/logger/logger.h"
#include "sluice/loop/loop.h"
#include "sluice/loop/signals.h"

namespace sluice {

namespace detail {
// The line that tells of dropped lines, before the thread's next one.
inline constexpr std::string_view log_drop_format = "sluice::logger: {} lines dropped\n";
// The site of flush_backtrace()'s record: no line, the backtrace's.
extern const log_site log_backtrace_marker;
}  // namespace detail

struct logger::state {
  logger_options options;
  std::vector<log_destination> destinations;  // the factories run on the backend thread
  std::uint64_t id = 0;
  std::mutex level_mutex;                           // set_level() and enable_backtrace(): the gate from both

  std::atomic<detail::log_queue*> queues{nullptr};  // pushed at the front, never unlinked
  std::mutex attach_mutex;

  std::thread backend;
  std::mutex loop_mutex;
  loop* home = nullptr;  // the backend's loop while it runs (loop_mutex)
  std::atomic<bool> kicked{false};
  std::atomic<bool> stopping{false};
  std::atomic<bool> finished{false};

  std::mutex flush_mutex;
  std::condition_variable flush_cv;
  std::atomic<std::uint64_t> flush_asked{0};
  std::uint64_t flush_done = 0;  // flush_mutex
  std::error_code flush_error;   // flush_mutex

  // options.pattern, parsed (logger.cc): literal text, or a field (time,
  // level, logger, file, line, function, thread, message: 0 to 7) with its
  // fmt spec ("{:<8}"), or none.
  struct pattern_part {
    std::string literal;
    int field = -1;
    std::string spec;
    // A spec that is only an alignment and a width ("{:<8}"), done by hand:
    // fmt would parse the spec again on every line.
    char align = 0;  // '<', '>', '^', or 0: use `spec`
    std::size_t width = 0;
    // {time:%H:%M:%S.%f}: a strftime format, split at its %f (the fraction)
    // into two; their text is made once a second, for `second` (the
    // backend's: each output has its own parts).
    bool strftime_time = false;
    bool fraction = false;
    std::string before_fraction, after_fraction;
    mutable std::uint64_t second = ~std::uint64_t{0};
    mutable std::string text_before, text_after;
  };
  static std::vector<pattern_part> compile_pattern(const std::string& pattern, bool& uses_time);

  // Whether the backtrace is on (enable_backtrace(), set_level(): the gate).
  std::atomic<bool> backtrace_on{false};

  // ---- the backend thread's
  // A destination as the backend writes it.
  struct output {
    std::unique_ptr<writable> stream;
    log_level level = log_level::trace;
    log_format format = log_format::pattern;
    bool colors = false;
    std::vector<pattern_part> pattern;
    bool pushed_back = false;    // its write() returned false
    bool waiting_drain = false;  // the pass waits for its 'drain'
    bool failed = false;         // its stream errored: written no more
  };
  std::vector<output> outputs;
  std::size_t paused_outputs = 0;  // those the pass waits for, until each has drained
  std::size_t failed_outputs = 0;
  bool json_outputs = false;  // some output writes JSON: the named arguments are wanted
  std::size_t ends_pending = 0;    // end() callbacks still to come
  std::error_code end_error;       // the first of them with an error
  // A line kept for the backtrace: its record, copied, and its queue (for
  // the thread's name).
  struct kept_line {
    std::vector<std::byte> record;
    const detail::log_queue* queue;
    std::uint64_t stamp;  // ns, or 0
  };
  std::deque<kept_line> backtrace;
  std::size_t backtrace_size = 0;  // as the last enable_backtrace() read said
  log_level backtrace_flush_level = log_level::error;
  std::vector<std::vector<std::byte>> spare_records;  // kept lines' storage, reused
  fmt::memory_buffer message;  // a SLUICE_LOG_* line's message, when it cannot go straight into `line`
  fmt::memory_buffer line;     // a SLUICE_LOG_* line, handed to the stream
  std::uint64_t stamp_second = ~std::uint64_t{0};  // the second stamp_text holds
  char stamp_text[40] = {};
  char stamp_zone[8] = "Z";  // "Z", or the local zone's offset ("+01:00")
  bool paused = false;  // write() returned false: waiting for 'drain'
  bool pass_queued = false;
  timer_id timer = 0;
  bool ending = false;
  std::uint64_t flush_snapped = 0;  // the flush whose ends the queues' flush_stop hold
  std::uint64_t flush_told = 0;     // the flushes told they are done
  int term_signo = 0;
  signal_watch term_watch, int_watch;
  detail::tsc_clock tsc;  // log_clock::tsc
  detail::log_clock clock = detail::log_clock::none;

  // A record's timestamp as ns since the epoch.
  std::uint64_t stamp_ns(std::uint64_t t) const noexcept { return clock == detail::log_clock::tsc ? tsc.to_ns(t) : t; }
  bool precise_stamps() const noexcept { return clock == detail::log_clock::tsc || clock == detail::log_clock::realtime; }

  void run_backend(std::promise<void>& started);
  void kick();
  void schedule_pass();
  void pass();
  enum class drained { empty, budget, pushed_back };
  drained drain_queue(detail::log_queue& q, std::size_t& budget);
  // Writes one record. `landed_at`, when not 0, is where the queue's lines
  // that it ends land (the last line of a run: see drain_queue()).
  bool write_line(detail::log_queue& q, const detail::log_record& r, std::uint64_t landed_at);
  bool write_site_line(const detail::log_queue& q, const detail::log_record& r, std::uint64_t stamp,
                       detail::log_queue* landing, std::uint64_t landed_at);
  void keep_for_backtrace(const detail::log_queue& q, const detail::log_record& r, std::uint64_t stamp);
  bool write_backtrace();
  // The line's stamp, in ns, as its thread's lines go (never back).
  std::uint64_t line_stamp(detail::log_queue& q, const detail::log_record& r) noexcept;
  std::size_t format_time(std::uint64_t ns, char* buf) noexcept;
  void append_strftime_time(const pattern_part& part, std::uint64_t ns);
  // An empty write to each output, with the callback that lands `pos`:
  // closes a run whose last line carried none.
  bool close_run(detail::log_queue& q, std::uint64_t pos);
  static write_cb land_cb(detail::log_queue& q, std::uint64_t pos, std::size_t output);
  void landed_on(detail::log_queue& q, std::uint64_t pos, std::size_t output) noexcept;
  void drained_one(output& o);
  void output_failed(std::size_t i);
  void land(detail::log_queue& q, std::uint64_t pos) noexcept;
  void land_all() noexcept;
  void check_flush() noexcept;
  void finish(std::error_code ec) noexcept;
  void on_term(int signo);
};

}  // namespace sluice
