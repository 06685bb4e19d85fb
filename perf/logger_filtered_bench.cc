// logger_filtered_bench: what a SLUICE_LOG_* call below the logger's level
// costs, in a loop of such calls, beside the same loop without the call. The
// logger's level is read from an atomic each call (set_level() may change it
// from any thread), so the loop cannot hoist the test out.
//
//   build/perf/logger_filtered_bench [--calls N]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sluice/log_file/log_writable.h"
#include "sluice/logger/logger.h"

namespace {

volatile std::uint64_t sink_value = 0;  // what the loop body does, so it is not removed

template <class F>
double ns_per_call(std::uint64_t calls, F body) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < calls; ++i) body(i);
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t calls = std::getenv("SLUICE_BENCH_QUICK") ? 10'000'000 : 200'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: logger_filtered_bench [--calls N]\n");
      return 2;
    }
  }
  sluice::logger lg([] { return sluice::make_log_writable("/dev/null"); }, {.level = sluice::log_level::info});
  const double empty = ns_per_call(calls, [](std::uint64_t i) { sink_value = sink_value + i; });
  const double filtered = ns_per_call(calls, [&lg](std::uint64_t i) {
    sink_value = sink_value + i;
    SLUICE_LOG_DEBUG(lg, "iteration {} message {}", i, i * 2);
  });
  std::printf("%llu calls: empty loop %.2f ns a turn; with a filtered SLUICE_LOG_DEBUG %.2f ns (+%.2f ns a call)\n",
              static_cast<unsigned long long>(calls), empty, filtered, filtered - empty);
  return lg.dropped() == 0 ? 0 : 1;
}
