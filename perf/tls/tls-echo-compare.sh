#!/usr/bin/env bash
# tls-echo-compare.sh: TLS echo ping-pong over loopback against sluice's
# tls::server and Node's tls.createServer, with one Node client for all
# (100 connections x 128 B by default). The figure is the server's CPU time
# per round trip (from /proc/PID/stat around the measured run), user and
# kernel apart. The servers run side by side and are measured in turn,
# RUNS rounds, so that a change in the machine's load falls on all of them;
# each one's median is printed, and the ratio sluice/node (goal: at most
# 0.6) of the medians and of each round.
#
#   perf/tls/tls-echo-compare.sh [BUILDDIR]        (default: build)
#
# Environment: ROUND_TRIPS (default 200000), CONNECTIONS (100), SIZE (128),
# RUNS (5), NODE (node binary), BEFORE (another build folder: its server is
# measured too, as "before", in the same rounds), ASIO (1: sluice's server
# also with --asio, its loop run by Asio's epoll engine, as "asio").
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
round_trips=${ROUND_TRIPS:-200000}
connections=${CONNECTIONS:-100}
size=${SIZE:-128}
runs=${RUNS:-5}
server=$build/perf/sluice_tls_echo_server
hz=$(getconf CLK_TCK)

[ -x "$server" ] || { echo "tls-echo-compare: $server not built (-Dperf=true, -Dtls)" >&2; exit 1; }
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
sh "$root/tests/tls/make_ca.sh" "$dir"

names=(sluice)
commands=("$server $dir")
if [ -n "${BEFORE:-}" ]; then
  [ -x "$BEFORE/perf/sluice_tls_echo_server" ] || { echo "tls-echo-compare: no $BEFORE/perf/sluice_tls_echo_server" >&2; exit 1; }
  names+=(before)
  commands+=("$BEFORE/perf/sluice_tls_echo_server $dir")
fi
if [ "${ASIO:-0}" = 1 ]; then
  names+=(asio)
  commands+=("$server --asio $dir")
fi
names+=(node)
commands+=("$node_bin $here/tls_echo_server.mjs $dir")

# Starts every server, and warms each up with fresh connections.
ports=()
for i in "${!names[@]}"; do
  ${commands[$i]} >"$dir/out.$i" 2>&1 &
  pids+=($!)
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$dir/out.$i" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "tls-echo-compare: ${names[$i]} did not start:" >&2; cat "$dir/out.$i" >&2; exit 1; }
  ports+=("$port")
  "$node_bin" "$here/tls_echo_client.mjs" "$port" "$dir/ca.crt" "$connections" "$size" $((round_trips / 5)) >/dev/null
done

# One measured run of server i: appends "user_us sys_us rate" a trip to $dir/r.i.
measure() {
  local i=$1 pid=${pids[$1]} before after json seconds
  before=$(awk '{ print $14, $15 }' "/proc/$pid/stat")
  json=$("$node_bin" "$here/tls_echo_client.mjs" "${ports[$i]}" "$dir/ca.crt" "$connections" "$size" "$round_trips")
  after=$(awk '{ print $14, $15 }' "/proc/$pid/stat")
  seconds=$(sed 's/.*"seconds":\([0-9.e-]*\).*/\1/' <<<"$json")
  awk -v b="$before" -v a="$after" -v hz="$hz" -v n="$round_trips" -v s="$seconds" 'BEGIN {
    split(b, x, " "); split(a, y, " ")
    printf "%.2f %.2f %.0f\n", (y[1] - x[1]) / hz / n * 1e6, (y[2] - x[2]) / hz / n * 1e6, n / s }' >>"$dir/r.$i"
}
for r in $(seq "$runs"); do
  for i in "${!names[@]}"; do measure "$i"; done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "TLS echo ping-pong: $connections connections x $size B, $round_trips round trips, $runs rounds, medians (load: $(cut -d' ' -f1-3 /proc/loadavg))"
for i in "${!names[@]}"; do echo "${names[$i]}: $(grep -m1 '^cipher' "$dir/out.$i" || echo 'cipher ?')"; done
printf '%-8s %14s %10s %10s %10s\n' server "round trips/s" "user us" "sys us" "CPU us"
last=$(( ${#names[@]} - 1 ))
for i in "${!names[@]}"; do
  awk '{ print $1 + $2 }' "$dir/r.$i" >"$dir/cpu.$i"
  printf '%-8s %14s %10s %10s %10s\n' "${names[$i]}" "$(cut -d' ' -f3 "$dir/r.$i" | median)" \
    "$(cut -d' ' -f1 "$dir/r.$i" | median)" "$(cut -d' ' -f2 "$dir/r.$i" | median)" "$(median <"$dir/cpu.$i")"
done
for i in "${!names[@]}"; do
  [ "$i" = "$last" ] && continue
  rounds=$(paste "$dir/cpu.$i" "$dir/cpu.$last" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2 }')
  awk -v a="$(median <"$dir/cpu.$i")" -v b="$(median <"$dir/cpu.$last")" -v n="${names[$i]}" -v r="$rounds" \
    'BEGIN { printf "%s/node CPU per round trip: %.2fx (goal <= 0.6x); each round: %s\n", n, a / b, r }'
done
