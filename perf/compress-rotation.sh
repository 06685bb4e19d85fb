#!/usr/bin/env bash
# compress-rotation.sh: sluice-log's rate with rotation, with and without
# --compress, on 2,000,000 log lines (about 214 MB) with --max-size 8M; the
# rotated files checked to decompress, oldest first and then FILE, to the
# input exactly, and their size against the raw bytes they hold (goal: under
# 0.3x; compression costing at most half the rate).
#
# Two rates: "taken", the input's bytes over the time until sluice-log has
# read the last of them (the writer's rate: compression runs beside it, on
# its own thread), and "exit", over the time until sluice-log has exited,
# which includes compressing the files still queued at the end (the
# compressor's own rate, when the input comes faster than it compresses).
#
#   perf/compress-rotation.sh [LINES]
#
# Each METHOD of sluice-log's --compress is run, levels among them
# (gzip:1, gzip, zstd, zstd:1; METHODS="..." to choose).
#
# Environment:
#   SLUICE_LOG=P  the sluice-log binary (default build/tools/sluice-log)
#   TMPDIR=D      where the input and the logs go (/tmp)
#   REPS=N        runs of each variant, best kept (default 3)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${SLUICE_LOG:-$(dirname "$here")/build/tools/sluice-log}
lines=${1:-2000000}
reps=${REPS:-3}
[ -x "$bin" ] || { echo "compress-rotation: sluice-log not found at $bin (ninja -C build tools/sluice-log)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/compress-rotation.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 - "$lines" > "$work/in.txt" <<'PY'
import random, sys
r = random.Random(1)
out = sys.stdout
for i in range(int(sys.argv[1])):
    out.write('2026-12-02T01:00:00.%06dZ host app[%d]: request %d took %dms status=%d path=/api/v1/items/%d\n'
              % (i % 1000000, r.randrange(65536), i, r.randrange(1000), 200 + r.randrange(4), r.randrange(100000)))
PY
raw=$(stat -c %s "$work/in.txt")
echo "input: $lines lines, $raw bytes; sluice-log --max-size 8M --keep 1000 [--compress M]; best of $reps"

methods=${METHODS:-none gzip:1 gzip zstd:1 zstd}
best_rate=() best_exit=()
for method in $methods; do
  best="" best_in=""
  for _ in $(seq "$reps"); do
    rm -rf "$work/log" && mkdir "$work/log"
    start=$(date +%s.%N)
    # cat ends once the pipe (64 KiB) holds the last bytes: sluice-log has
    # taken in all but that.
    { cat "$work/in.txt"; date +%s.%N > "$work/t_in"; } |
      "$bin" --max-size 8M --keep 1000 --compress "$method" "$work/log/app.log"
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc -l)
    t_in=$(echo "$(cat "$work/t_in") - $start" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
    if [ -z "$best_in" ] || [ "$(echo "$t_in < $best_in" | bc -l)" = 1 ]; then best_in=$t_in; fi
  done
  # The last run's files: oldest first, then FILE, give the input back.
  n=$(ls "$work/log" | grep -c '^app\.log\.[0-9]' || true)
  case ${method%%:*} in
    none) suffix=""; cat_tool=cat ;;
    gzip) suffix=".gz"; cat_tool="gzip -dc" ;;
    zstd) suffix=".zst"; cat_tool="zstd -qdc" ;;
  esac
  { for i in $(seq "$n" -1 1); do $cat_tool < "$work/log/app.log.$i$suffix"; done; cat "$work/log/app.log"; } |
    cmp -s - "$work/in.txt" && same=yes || same=NO
  rotated=$(( raw - $(stat -c %s "$work/log/app.log") ))
  stored=$(cat "$work/log"/app.log.[0-9]* | wc -c)
  rate=$(echo "$raw / $best / 1000000" | bc -l)
  rate_in=$(echo "$raw / $best_in / 1000000" | bc -l)
  best_rate+=("$rate_in")
  best_exit+=("$rate")
  printf '%-7s %3d rotated  taken %6.2fs %7.1f MB/s  exit %6.2fs %7.1f MB/s  size %.3fx of raw  input back: %s\n' \
    "$method" "$n" "$best_in" "$rate_in" "$best" "$rate" "$(echo "$stored / $rotated" | bc -l)" "$same"
done
# Each against the first METHOD (none, unless METHODS says otherwise).
i=0
for method in $methods; do
  if [ "$i" -gt 0 ]; then
    printf '%-7s taken rate %.2fx of %s, exit rate %.2fx (goal: >= 0.5x)\n' "$method" \
      "$(echo "${best_rate[$i]} / ${best_rate[0]}" | bc -l)" "${methods%% *}" "$(echo "${best_exit[$i]} / ${best_exit[0]}" | bc -l)"
  fi
  i=$((i + 1))
done
