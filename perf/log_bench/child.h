// A variant in a child process of its own, so that its peak RSS is its own:
// the child's side (child_main() prints one result line) and the parent's
// (spawn_capture() runs it, parse_result() reads the line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace log_bench {

// One variant's measurement, as the child prints it on one line:
//   result total_s=.. producer_s=.. rss_before=.. peak_rss=.. syscw=.. wchar=.. cpu_s=.. thread_cpu_s=..
// cpu_s is the whole process's CPU time, thread_cpu_s the producing (main)
// thread's: the same for the synchronous variants; for the worker and spdlog
// async, the producer's share (it also runs the completions, for sluice).
struct measurement {
  double total_s = 0, producer_s = 0, cpu_s = 0, thread_cpu_s = 0;
  std::uint64_t rss_before = 0, peak_rss = 0, syscw = 0, wchar = 0;
};

std::optional<measurement> parse_result(const std::string& out);

// log_bench --child NAME: runs the variant here and prints its measurement.
int child_main(std::string_view name, const char* path, std::uint64_t n);

struct spawned {
  bool ok = false;
  std::string out;
};

// Runs argv (posix_spawn: no copy of this process's memory, so the child's
// peak RSS is its own), capturing its standard output.
spawned spawn_capture(const std::vector<std::string>& argv, bool search_path, const char* extra_env = nullptr);

}  // namespace log_bench
