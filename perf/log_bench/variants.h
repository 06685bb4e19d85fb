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

// glibc serves aligned_alloc(64 KiB, 64 KiB) (a byte_arena block) with mmap,
// and never adapts its threshold to it, so a stream that cycles through more
// blocks than the arena keeps munmaps and page-faults them every time. With
// the threshold above the request, blocks come from the heap: this variant
// shows what the worker costs without that churn.
constexpr const char* heap_blocks_env = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576";

// All variants, in the table's order.
const std::vector<variant>& variants();

// Runs variant `name` in this process: `n` lines into `path`.
timing run_variant(std::string_view name, const char* path, std::uint64_t n);

}  // namespace log_bench
