// clock: the logger's time stamps (clock.h): the stamp's text, and the TSC
// mapped to the wall clock.
#include "sluice/logger/detail/clock.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "sluice/sinks/detail/worker_protocol.h"  // cpu_relax()

namespace sluice::detail {

namespace {

struct civil {
  int y;
  unsigned m, d;
};
// Howard Hinnant's civil_from_days.
civil civil_from_days(std::int64_t z) noexcept {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<int>(y + (m <= 2)), m, d};
}

void put_digits(char* p, unsigned v, int n) noexcept {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

// The counter and the wall clock read together: of a few tries, the one
// whose clock_gettime the two counter reads bracket most tightly (the
// others were interrupted).
tsc_clock::sample sample_tsc() noexcept {
  tsc_clock::sample best{};
  std::uint64_t best_gap = ~std::uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t a = log_tsc();
    const std::uint64_t ns = realtime_ns(CLOCK_REALTIME);
    const std::uint64_t b = log_tsc();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

}  // namespace

std::uint64_t realtime_ns(clockid_t id) noexcept {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::size_t format_stamp(char* p, std::uint64_t ns, bool precise) noexcept {
  const std::int64_t secs = static_cast<std::int64_t>(ns / 1'000'000'000);
  const std::int64_t days = secs / 86400;
  const auto sod = static_cast<unsigned>(secs % 86400);
  const civil c = civil_from_days(days);
  put_digits(p, static_cast<unsigned>(c.y), 4);
  p[4] = '-';
  put_digits(p + 5, c.m, 2);
  p[7] = '-';
  put_digits(p + 8, c.d, 2);
  p[10] = 'T';
  put_digits(p + 11, sod / 3600, 2);
  p[13] = ':';
  put_digits(p + 14, sod / 60 % 60, 2);
  p[16] = ':';
  put_digits(p + 17, sod % 60, 2);
  p[19] = '.';
  const auto frac = static_cast<unsigned>(ns % 1'000'000'000);
  std::size_t n = 20;
  if (precise) {
    put_digits(p + n, frac / 1000, 6);
    n += 6;
  } else {
    put_digits(p + n, frac / 1'000'000, 3);
    n += 3;
  }
  p[n++] = 'Z';
  p[n++] = ' ';
  return n;
}

bool tsc_invariant() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    bool constant = false, nonstop = false;
    while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {
    }
    std::istringstream flags(line);
    for (std::string f; flags >> f;) {
      constant |= f == "constant_tsc";
      nonstop |= f == "nonstop_tsc";
    }
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string clocksource;
    source >> clocksource;
    return constant && nonstop && clocksource == "tsc";
  }();
  return ok;
#else
  return false;
#endif
}

void tsc_clock::calibrate() {
  origin_ = sample_tsc();
  const std::uint64_t until = origin_.ns + 2'000'000;
  while (realtime_ns(CLOCK_REALTIME) < until) cpu_relax();
  const sample s = sample_tsc();
  publish(s.tsc, s.ns, static_cast<double>(s.ns - origin_.ns) / static_cast<double>(s.tsc - origin_.tsc));
  last_fit_ = s.tsc;
  interval_ns_ = 50'000'000;
}

void tsc_clock::maybe_refit() noexcept {
  const std::uint64_t now = log_tsc();
  const double slope = current().slope.load(std::memory_order_relaxed);
  if (static_cast<double>(now - last_fit_) * slope < static_cast<double>(interval_ns_)) return;
  const sample s = sample_tsc();
  const std::uint64_t mapped = to_ns(s.tsc);
  const auto off = static_cast<std::int64_t>(s.ns - mapped);
  if (off > 1'000'000 || off < -1'000'000 || s.ns <= origin_.ns || s.tsc <= origin_.tsc) {
    // The wall clock was stepped: start from here, at the old rate.
    origin_ = {s.tsc - 1, s.ns - static_cast<std::uint64_t>(slope)};
    publish(s.tsc, s.ns, slope);
  } else {
    interval_ns_ = std::min<std::uint64_t>(interval_ns_ * 2, 1'000'000'000);
    const double rate = static_cast<double>(s.ns - origin_.ns) / static_cast<double>(s.tsc - origin_.tsc);
    // Continuous at s.tsc; reaches the fitted line one interval later.
    const double ticks = static_cast<double>(interval_ns_) / rate;
    publish(s.tsc, mapped, std::max(rate + static_cast<double>(off) / ticks, rate / 2));
  }
  last_fit_ = s.tsc;
}

std::uint64_t tsc_clock::to_ns(std::uint64_t tsc) const noexcept {
  const fit& f = current();
  const auto delta = static_cast<double>(static_cast<std::int64_t>(tsc - f.tsc.load(std::memory_order_relaxed)));
  return f.ns.load(std::memory_order_relaxed) +
         static_cast<std::uint64_t>(std::llround(delta * f.slope.load(std::memory_order_relaxed)));
}

void tsc_clock::publish(std::uint64_t tsc, std::uint64_t ns, double slope) noexcept {
  fit& f = fits_[1 - which_.load(std::memory_order_relaxed)];
  f.tsc.store(tsc, std::memory_order_relaxed);
  f.ns.store(ns, std::memory_order_relaxed);
  f.slope.store(slope, std::memory_order_relaxed);
  which_.store(1 - which_.load(std::memory_order_relaxed), std::memory_order_release);
}

}  // namespace sluice::detail
