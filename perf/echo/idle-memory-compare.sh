#!/usr/bin/env bash
# idle-memory-compare.sh: what an idle connection costs, sluice beside Node's
# net in one run. For each N, N loopback connections (both ends in one
# process) each echo SIZE bytes once and stay open and quiet; heap in use and
# RSS per socket (both ends counted: 2N sockets), over a baseline taken after
# a warm-up round. The cost per socket should not grow with N.
#
#   perf/echo/idle-memory-compare.sh [BUILDDIR]     (default: build)
#
# Environment: COUNTS (default "1000 4000 8000"), SIZE (100), RUNS (median
# of, default 1), NODE (node binary). Raises the soft fd limit to the hard one
# (8,000 connections need 16,000 fds).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
counts=${COUNTS:-1000 4000 8000}
size=${SIZE:-100}
runs=${RUNS:-1}
sluice=$build/perf/idle_memory

[ -x "$sluice" ] || { echo "idle-memory-compare: $sluice not built (meson setup with -Dperf=true)" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
have_node=1
command -v "$node_bin" >/dev/null 2>&1 || { have_node=0; echo "idle-memory-compare: $node_bin not found, Node skipped" >&2; }

field() { sed "s/.*\"$1\":\\([0-9.-]*\\).*/\\1/" <<<"$2"; }
# median VALUES...: the middle one (the lower middle for an even count).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run NAME N: prints "heap rss" per socket, the median of RUNS runs.
run() {
  local name=$1 n=$2 heaps=() rsss=() out
  for _ in $(seq "$runs"); do
    if [ "$name" = sluice ]; then
      out=$("$sluice" --connections "$n" --size "$size")
    else
      out=$("$node_bin" --expose-gc "$here/idle_memory.js" --connections "$n" --size "$size")
    fi
    heaps+=("$(field heap_per_socket "$out")")
    rsss+=("$(field rss_per_socket "$out")")
  done
  echo "$(median "${heaps[@]}") $(median "${rsss[@]}")"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2fx", a / b }'; }

echo "idle connections after one $size-byte echo, both ends in one process, per socket (median of $runs)"
printf '%-8s %14s %14s %8s %14s %14s %8s\n' connections "sluice heap B" "node heap B" ratio "sluice RSS B" "node RSS B" ratio
for n in $counts; do
  read -r sh sr < <(run sluice "$n")
  nh=- nr=-
  [ "$have_node" = 1 ] && read -r nh nr < <(run node "$n")
  printf '%-11s %14s %14s %8s %14s %14s %8s\n' "$n" "$sh" "$nh" "$(ratio "$sh" "$nh")" "$sr" "$nr" "$(ratio "$sr" "$nr")"
done
