#!/usr/bin/env bash
# echo-compare.sh: echo ping-pong over loopback, 100 connections x 128 B,
# against sluice's echo servers, the plain Asio coroutine echo server and
# Node's net. On 2 cores the client saturates first, so the fair figure is
# the server's CPU time per 100k round trips (read from /proc/PID/stat
# around the measured run); round trips per second are printed beside it.
# With two CPUs or more, the server is pinned to CPU 0 and the client to
# CPU 1 (taskset), so that the client's wake-ups do not preempt the server
# on its own core (PIN=0: not pinned).
#
#   perf/echo/echo-compare.sh [BUILDDIR]        (default: build)
#
# Environment: ROUND_TRIPS (default 300000), CONNECTIONS (100), SIZE (128),
# RUNS (best of, default 3), NODE (node binary), PIN (1).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
round_trips=${ROUND_TRIPS:-300000}
connections=${CONNECTIONS:-100}
size=${SIZE:-128}
runs=${RUNS:-3}
client=$build/perf/echo_client
hz=$(getconf CLK_TCK)

[ -x "$client" ] || { echo "echo-compare: $client not built (meson setup with -Dperf=true)" >&2; exit 1; }

# cpu_ticks PID: user + system clock ticks the process has used so far.
server_cpu=() client_cpu=()
if [ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# measure NAME COMMAND...: starts the server, waits for "listening on PORT",
# warms it up, then keeps the best of RUNS measured runs. Prints
# "NAME rt_per_s cpu_s_per_100k".
measure() {
  local name=$1; shift
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "$1" ]; then
    echo "$name - -" ; echo "echo-compare: $name: $1 not found, skipped" >&2; return
  fi
  local out; out=$(mktemp)
  "${server_cpu[@]}" "$@" >"$out" 2>&1 &
  local pid=$!
  local port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "echo-compare: $name did not start:" >&2; cat "$out" >&2; kill "$pid" 2>/dev/null || true; exit 1
  fi
  "${client_cpu[@]}" "$client" "$port" --connections "$connections" --size "$size" --round-trips $((round_trips / 5)) >/dev/null
  local best_cpu="" best_rate=""
  for _ in $(seq "$runs"); do
    local before after json
    before=$(cpu_ticks "$pid")
    json=$("${client_cpu[@]}" "$client" "$port" --connections "$connections" --size "$size" --round-trips "$round_trips")
    after=$(cpu_ticks "$pid")
    local seconds; seconds=$(sed 's/.*"seconds":\([0-9.]*\).*/\1/' <<<"$json")
    local cpu rate
    cpu=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$round_trips" 'BEGIN { printf "%.3f", t / hz / n * 100000 }')
    rate=$(awk -v s="$seconds" -v n="$round_trips" 'BEGIN { printf "%.0f", n / s }')
    if [ -z "$best_cpu" ] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu=$cpu; fi
    if [ -z "$best_rate" ] || [ "$rate" -gt "$best_rate" ]; then best_rate=$rate; fi
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$out"
  echo "$name $best_rate $best_cpu"
}

results=()
for server in sluice_echo_server:sluice sluice_echo_server:sluice-coro asio_echo_server:asio; do
  bin=${server%%:*} name=${server##*:}
  args=()
  [ "$name" = sluice-coro ] && args=(--coroutines)
  results+=("$(measure "$name" "$build/perf/$bin" "${args[@]}")")
done
results+=("$(measure node "$node_bin" "$here/echo_server.js")")

pinned="not pinned"; [ ${#server_cpu[@]} -gt 0 ] && pinned="server on CPU 0, client on CPU 1"
echo "echo ping-pong: $connections connections x $size B, $round_trips round trips, best of $runs ($pinned)"
printf '%-12s %14s %22s %10s %10s\n' server "round trips/s" "CPU s / 100k trips" "vs asio" "vs node"
asio_cpu=$(printf '%s\n' "${results[@]}" | awk '$1 == "asio" { print $3 }')
node_cpu=$(printf '%s\n' "${results[@]}" | awk '$1 == "node" { print $3 }')
for r in "${results[@]}"; do
  read -r name rate cpu <<<"$r"
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "" || b == "-" || b == 0) print "n/a"; else printf "%.2fx", a / b }'; }
  printf '%-12s %14s %22s %10s %10s\n' "$name" "$rate" "$cpu" "$(ratio "$cpu" "$asio_cpu")" "$(ratio "$cpu" "$node_cpu")"
done
