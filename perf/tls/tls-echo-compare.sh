#!/usr/bin/env bash
# tls-echo-compare.sh: TLS echo ping-pong over loopback against sluice's
# tls::server and Node's tls.createServer, with one Node client for both
# (100 connections x 128 B by default). The figure is the server's CPU time
# per round trip (from /proc/PID/stat around the measured run), best of
# RUNS; the ratio sluice/node is printed (goal: at most 0.6).
#
#   perf/tls/tls-echo-compare.sh [BUILDDIR]        (default: build)
#
# Environment: ROUND_TRIPS (default 200000), CONNECTIONS (100), SIZE (128),
# RUNS (3), NODE (node binary).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
round_trips=${ROUND_TRIPS:-200000}
connections=${CONNECTIONS:-100}
size=${SIZE:-128}
runs=${RUNS:-3}
server=$build/perf/sluice_tls_echo_server
hz=$(getconf CLK_TCK)

[ -x "$server" ] || { echo "tls-echo-compare: $server not built (-Dperf=true, -Dtls)" >&2; exit 1; }
pki=$(mktemp -d)
trap 'rm -rf "$pki"' EXIT
sh "$root/tests/tls/make_ca.sh" "$pki"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# measure NAME COMMAND...: prints "NAME rt_per_s cpu_us_per_trip".
measure() {
  local name=$1; shift
  local out; out=$(mktemp)
  "$@" >"$out" 2>&1 &
  local pid=$! port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "tls-echo-compare: $name did not start:" >&2; cat "$out" >&2; kill "$pid"; exit 1; }
  "$node_bin" "$here/tls_echo_client.mjs" "$port" "$pki/ca.crt" "$connections" "$size" $((round_trips / 5)) >/dev/null
  local best_cpu="" best_rate=""
  for _ in $(seq "$runs"); do
    local before after json seconds cpu rate
    before=$(cpu_ticks "$pid")
    json=$("$node_bin" "$here/tls_echo_client.mjs" "$port" "$pki/ca.crt" "$connections" "$size" "$round_trips")
    after=$(cpu_ticks "$pid")
    seconds=$(sed 's/.*"seconds":\([0-9.e-]*\).*/\1/' <<<"$json")
    cpu=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$round_trips" 'BEGIN { printf "%.2f", t / hz / n * 1e6 }')
    rate=$(awk -v s="$seconds" -v n="$round_trips" 'BEGIN { printf "%.0f", n / s }')
    if [ -z "$best_cpu" ] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then best_cpu=$cpu; fi
    if [ -z "$best_rate" ] || [ "$rate" -gt "$best_rate" ]; then best_rate=$rate; fi
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$out"
  echo "$name $best_rate $best_cpu"
}

s=$(measure sluice "$server" "$pki")
n=$(measure node "$node_bin" "$here/tls_echo_server.mjs" "$pki")
echo "TLS echo ping-pong: $connections connections x $size B, $round_trips round trips, best of $runs"
printf '%-8s %14s %24s\n' server "round trips/s" "server CPU us / trip"
for r in "$s" "$n"; do
  read -r name rate cpu <<<"$r"
  printf '%-8s %14s %24s\n' "$name" "$rate" "$cpu"
done
read -r _ _ scpu <<<"$s"
read -r _ _ ncpu <<<"$n"
awk -v a="$scpu" -v b="$ncpu" 'BEGIN { printf "sluice/node CPU per round trip: %.2fx (goal <= 0.6x)\n", a / b }'
