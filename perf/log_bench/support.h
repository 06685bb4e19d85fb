// Small helpers of the benchmark: time, what the process used (RSS, CPU,
// write syscalls), and the log file.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace log_bench {

using clock_type = std::chrono::steady_clock;

double seconds_between(clock_type::time_point a, clock_type::time_point b);

[[noreturn]] void die(const std::string& msg);

std::size_t current_rss_bytes();

// VmHWM, not getrusage's ru_maxrss (see support.cc).
std::size_t peak_rss_bytes();

// CPU time, user + system: of the whole process (all threads, finished
// ones included), or of the calling thread only (RUSAGE_THREAD).
double cpu_seconds(int who = RUSAGE_SELF);

// write(2) calls and bytes of the whole process, all threads (/proc/self/io).
struct io_counts {
  std::uint64_t syscw = 0, wchar = 0;
};
io_counts read_io();

// Creates (truncates) `path` for appending; dies when it cannot.
int open_log(const char* path);

void write_all(int fd, const char* p, std::size_t n);

// The file system `dir` is on, for the table: "ext2/3/4", "tmpfs", ...
std::string fs_type(const std::string& dir);

}  // namespace log_bench
