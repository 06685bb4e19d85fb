// The variants: sluice (print into an fd writable or a worker), fmt, stdio,
// iostreams, spdlog (when found), Node, and references; each one writes the
// lines (lines.h) into a file, run in a child process of its own (child.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace log_bench {

struct timing {
  double total_s = 0;     // first line until all is in the file
  double producer_s = 0;  // first line until the last log call returned
};

enum class kind { cxx, node, reference_no_file };

struct variant {
  const char* name;          // for --only and --child
  const char* label;         // in the table
  const char* producer_label;  // a second row for the producer's time, or null
  kind k;
  const char* child_env = nullptr;  // one more NAME=VALUE for the child
};

// A raised mmap threshold: byte_arena's blocks no longer come from malloc
// (the pool maps them itself, 16 at a time), so this variant now shows only
// what the threshold does to the rest of the worker's allocations; it was
// made when each block was an aligned_alloc() that glibc served with mmap.
constexpr const char* heap_blocks_env = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576";

// All variants, in the table's order.
const std::vector<variant>& variants();

// Runs variant `name` in this process: `n` lines into `path`.
timing run_variant(std::string_view name, const char* path, std::uint64_t n);

}  // namespace log_bench
