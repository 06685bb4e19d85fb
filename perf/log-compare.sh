#!/usr/bin/env bash
# log-compare.sh: the log-line benchmark at full size — 5,000,000 lines into a
# file through sluice print (fd writable and worker thread), fmt::output_file,
# fmt + fwrite, fprintf, std::ofstream, spdlog (sync and async) and Node's
# fs.createWriteStream, and sluice print and fmt once more with compiled
# format strings (FMT_COMPILE) — one table with ratios against sluice print
# and the goals, PASS or MISS (for runtime and for compiled formats).
#
#   perf/log-compare.sh [log_bench options]     e.g. --lines 1000000 --reps 1
#
# Environment:
#   LOG_BENCH=P   the log_bench binary (default build/perf/log_bench)
#   NODE=P        node binary (default: node on PATH); without node the Node
#                 row is skipped with a message
#   TMPDIR=D      where the temporary directory of output files goes (/tmp)
#
# log_bench does the work: each variant runs in a child process of its own,
# Node (perf/log_bench.js) as one more child, so each peak RSS is its own; the
# rounds interleave the variants and keep each one's best time; every output
# file is checked byte for byte against the expected lines, then deleted.
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"

bin=${LOG_BENCH:-$root/build/perf/log_bench}

if [ ! -x "$bin" ]; then
  echo "log-compare: log_bench not found at $bin (build it with 'ninja -C build perf/log_bench'," \
       "or set LOG_BENCH)" >&2
  exit 1
fi

node_args=()
if command -v "$node_bin" >/dev/null 2>&1; then
  node_args=(--node "$(command -v "$node_bin")" --node-script "$here/log_bench.js")
else
  echo "log-compare: node not found (set NODE=/path/to/node): skipping the Node run" >&2
fi

exec "$bin" "${node_args[@]}" "$@"
