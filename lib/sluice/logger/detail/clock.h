// clock: the logger's time stamps. What a line's stamp is read from at the
// call (CLOCK_REALTIME, its coarse twin, or the CPU's time-stamp counter,
// which the backend maps to the wall clock), and the stamp written before
// the line, formatted without gmtime() so that the crash handler can use it.
// Installed because logger.h's print() reads the clock inline.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sluice::detail {

// What print() stamps a record with: log_timestamp once resolved (precise
// is the TSC where it is invariant).
enum class log_clock : std::uint8_t { none, tsc, coarse, realtime };

inline std::uint64_t log_tsc() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#else
  return 0;  // never used: log_clock::tsc is x86 only
#endif
}

/// clock_gettime(id) as ns since the epoch.
std::uint64_t realtime_ns(clockid_t id) noexcept;

/// "2026-12-02T01:19:04.123Z " (to the millisecond) or
/// "2026-12-02T01:19:04.123456Z " (`precise`: to the microsecond) into `p`,
/// which has room for 40; returns its length. Async-signal-safe.
std::size_t format_stamp(char* p, std::uint64_t ns, bool precise) noexcept;

/// Whether the TSC ticks at one rate in every state and on every core, and
/// the kernel trusts it (it falls back to another clocksource when it does
/// not): constant_tsc and nonstop_tsc in /proc/cpuinfo, and tsc the current
/// clocksource. Always false off x86. Read once, then cached.
bool tsc_invariant();

/// The TSC as the wall clock (log_timestamp::precise).
///
/// print() stores the counter; the backend maps it to CLOCK_REALTIME with a
/// line (base, slope) it refits every second against pairs read together.
/// A refit does not jump: it starts where the old line is at that moment
/// and slews the difference out over the next interval, so that the stamps
/// of one thread stay in order across it. Only a wall clock stepped by more
/// than a millisecond (settimeofday, an NTP step) makes it start afresh.
class tsc_clock {
 public:
  /// Two samples 2 ms apart: a slope good to about 1e-5 until the first
  /// refit, 50 ms later.
  void calibrate();
  /// The backend, on each pass: refits once the interval is over (50 ms,
  /// doubling up to 1 s).
  void maybe_refit() noexcept;
  /// Any thread (the crash handler too): the counter's value as ns since
  /// the epoch.
  std::uint64_t to_ns(std::uint64_t tsc) const noexcept;

  struct sample {
    std::uint64_t tsc, ns;
  };

 private:
  // Two fits, one being read: the backend writes the other, then flips, so
  // that a reader (the crash handler, on another thread) sees a whole one.
  struct fit {
    std::atomic<std::uint64_t> tsc{0}, ns{0};
    std::atomic<double> slope{1};
  };
  const fit& current() const noexcept { return fits_[which_.load(std::memory_order_acquire)]; }
  void publish(std::uint64_t tsc, std::uint64_t ns, double slope) noexcept;

  fit fits_[2];
  std::atomic<int> which_{0};
  sample origin_{};  // the backend's
  std::uint64_t last_fit_ = 0;
  std::uint64_t interval_ns_ = 0;
};

}  // namespace sluice::detail
