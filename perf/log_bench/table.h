// The table: one row per variant (two for the asynchronous ones) with ratios
// against sluice print, then the goals, PASS or MISS.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "variants.h"

namespace log_bench {

// A variant's best figures over the rounds.
struct stats {
  int runs = 0;
  double best_total = std::numeric_limits<double>::infinity();
  double best_producer = std::numeric_limits<double>::infinity();
  double best_cpu = std::numeric_limits<double>::infinity();
  double best_thread_cpu = std::numeric_limits<double>::infinity();
  std::uint64_t peak_rss = 0, growth = 0, syscw = 0, wchar = 0;
};

// Prints the table of the `chosen` variants (their figures in `st`) and the
// goals; returns how many goals were missed.
int print_table(const std::vector<const variant*>& chosen, const std::vector<stats>& st, std::uint64_t lines,
                std::uint64_t want_bytes, const std::string& dir_parent, int reps);

}  // namespace log_bench
