#!/usr/bin/env bash
# echo-interleaved.sh: the coroutine echo server (sluice on an attached
# io_context) against plain Asio, and optionally against another build of
# sluice's server (BEFORE=path, say one built from the commit before a
# change), in rounds that run each server once, one after the other, so that
# the machine's load drifts over all of them alike. echo-compare.sh keeps
# each server's best run, which on a shared 2-core machine moves 20% from one
# run to the next; the mean over interleaved rounds tells a change of 5-10%.
# Server CPU seconds per 100k round trips, 100 connections x 128 B, server on
# CPU 0 and client on CPU 1.
#
#   perf/echo/echo-interleaved.sh [BUILDDIR]     (default: build)
#
# Environment: ROUNDS (default 10), ROUND_TRIPS (100000), BEFORE (a second
# sluice_echo_server binary, run with --coroutines too; it must find its
# libsluice, so put it in BUILDDIR/perf/).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$(cd "$here/../.." && pwd)/build}
rounds=${ROUNDS:-10}
round_trips=${ROUND_TRIPS:-100000}
client=$build/perf/echo_client
hz=$(getconf CLK_TCK)
[ -x "$client" ] || { echo "echo-interleaved: $client not built (meson setup with -Dperf=true)" >&2; exit 1; }
pin_server=() pin_client=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_server=(taskset -c 0) pin_client=(taskset -c 1); fi

# cpu COMMAND...: the server's CPU seconds for the measured round trips.
cpu() {
  local out port="" pid before after
  out=$(mktemp)
  "${pin_server[@]}" "$@" > "$out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "echo-interleaved: $* did not start: $(cat "$out")" >&2; kill "$pid"; exit 1; }
  "${pin_client[@]}" "$client" "$port" --connections 100 --size 128 --round-trips $((round_trips / 5)) > /dev/null
  before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  "${pin_client[@]}" "$client" "$port" --connections 100 --size 128 --round-trips "$round_trips" > /dev/null
  after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  rm -f "$out"
  awk -v t=$((after - before)) -v hz="$hz" -v n="$round_trips" 'BEGIN { printf "%.4f", t / hz / n * 100000 }'
}

names=(sluice-coro asio)
cmds=("$build/perf/sluice_echo_server --coroutines" "$build/perf/asio_echo_server")
if [ -n "${BEFORE:-}" ]; then
  names+=(before-coro)
  cmds+=("$BEFORE --coroutines")
fi
sums=()
echo "echo, interleaved: $rounds rounds of ${names[*]}, $round_trips round trips each; server CPU s per 100k"
for r in $(seq "$rounds"); do
  line="round $r:"
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086 # the command and its argument, split
    c=$(cpu ${cmds[$i]})
    sums[$i]=$(echo "${sums[$i]:-0} + $c" | bc -l)
    line+=" ${names[$i]} $c"
  done
  echo "$line"
done
printf 'mean:'
for i in "${!names[@]}"; do printf ' %s %.3f' "${names[$i]}" "$(echo "${sums[$i]} / $rounds" | bc -l)"; done
echo
printf 'sluice-coro / asio %.2fx' "$(echo "${sums[0]} / ${sums[1]}" | bc -l)"
[ -n "${BEFORE:-}" ] && printf ', before-coro / asio %.2fx, sluice-coro / before-coro %.3fx' \
  "$(echo "${sums[2]} / ${sums[1]}" | bc -l)" "$(echo "${sums[0]} / ${sums[2]}" | bc -l)"
echo
