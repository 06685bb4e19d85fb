// A small harness shared by the perf/ programs. The machines these run on
// are shared and noisy, so every program measures its cases side by side in
// one process, interleaves the repetitions of the cases (a noisy second hurts
// all of them alike) and keeps the best of N: the minimum is the run that was
// disturbed least.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

/// Keeps `value` alive: the compiler must assume it is read here.
template <class T>
inline void do_not_optimize(T const& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}
template <class T>
inline void do_not_optimize(T& value) {
  asm volatile("" : "+r,m"(value) : : "memory");
}
/// The compiler must assume all memory was read and written here.
inline void clobber_memory() { asm volatile("" : : : "memory"); }

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0) {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

/// Options every perf program takes: `--quick` (or SLUICE_BENCH_QUICK=1 in
/// the environment) for a CI-speed run, `--reps N` for the best-of count.
struct options {
  bool quick = false;
  int reps = 7;
  double target_s = 0.02;  // wall time of one repetition of one case

  static options parse(int argc, char** argv) {
    options o;
    if (const char* q = std::getenv("SLUICE_BENCH_QUICK"); q && *q && std::strcmp(q, "0") != 0)
      o.quick = true;
    for (int i = 1; i < argc; ++i) {
      std::string_view a = argv[i];
      if (a == "--quick") {
        o.quick = true;
      } else if (a == "--reps" && i + 1 < argc) {
        o.reps = std::atoi(argv[++i]);
      } else if (a == "--help" || a == "-h") {
        std::printf("usage: %s [--quick] [--reps N]\n  SLUICE_BENCH_QUICK=1 is the same as --quick\n", argv[0]);
        std::exit(0);
      } else {
        std::fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[i]);
        std::exit(2);
      }
    }
    if (o.quick) {
      o.reps = o.reps > 3 ? 3 : o.reps;
      o.target_s = 0.005;
    }
    if (o.reps < 1) o.reps = 1;
    return o;
  }
};

/// One case: a body that runs `iters` operations and returns how many it ran.
struct timed_case {
  std::string name;
  std::function<void(std::uint64_t iters)> body;
  std::uint64_t start_iters = 1024;  // first calibration step; lower it for slow cases
  std::uint64_t iters = 0;
  double best_ns = std::numeric_limits<double>::infinity();
};

/// Picks each case's iteration count so that one repetition takes about
/// target_s, then runs `reps` rounds over all cases and keeps each one's best.
inline void run_interleaved(std::vector<timed_case>& cases, const options& o) {
  for (auto& c : cases) {
    std::uint64_t n = c.start_iters ? c.start_iters : 1;
    for (;;) {
      auto t0 = clock::now();
      c.body(n);
      double s = seconds_since(t0);
      if (s >= o.target_s / 4 || n >= (std::uint64_t{1} << 40)) {
        double per = s / static_cast<double>(n);
        c.iters = per > 0 ? static_cast<std::uint64_t>(o.target_s / per) + 1 : n;
        break;
      }
      n *= 4;
    }
  }
  for (int r = 0; r < o.reps; ++r) {
    for (auto& c : cases) {
      auto t0 = clock::now();
      c.body(c.iters);
      double ns = seconds_since(t0) * 1e9 / static_cast<double>(c.iters);
      if (ns < c.best_ns) c.best_ns = ns;
    }
  }
}

}  // namespace bench
