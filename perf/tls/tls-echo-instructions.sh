#!/usr/bin/env bash
# tls-echo-instructions.sh: the user-space instructions sluice's TLS echo
# server spends per round trip (valgrind's callgrind), the figure that a
# loaded machine does not blur as it does tls-echo-compare.sh's CPU times.
# The same Node client and connections; the handshakes are taken out: two
# measured runs of CONNECTIONS fresh connections, of 100 and of ROUND_TRIPS
# round trips, and the difference divided by ROUND_TRIPS - 100. The kernel's
# share (recv, sendmsg, poll) is not in it.
#
#   perf/tls/tls-echo-instructions.sh [BUILDDIR]    (default: build)
#
# Environment: ROUND_TRIPS (default 20000), CONNECTIONS (100), SIZE (128),
# PROFILE (a file to keep the long run's callgrind output in, and the
# short run's in PROFILE.short, for callgrind_annotate), CIPHERS (the
# suites the client offers: tls_echo_client.mjs), ASIO (1: the server with
# --asio, its loop run by Asio's epoll engine).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
round_trips=${ROUND_TRIPS:-20000}
connections=${CONNECTIONS:-100}
size=${SIZE:-128}
server=$build/perf/sluice_tls_echo_server
[ -x "$server" ] || { echo "tls-echo-instructions: $server not built (-Dperf=true, -Dtls)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "tls-echo-instructions: needs valgrind" >&2; exit 1; }
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
sh "$root/tests/tls/make_ca.sh" "$dir"
server_args=()
[ "${ASIO:-0}" = 1 ] && server_args=(--asio)

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/cg.out" "$server" "${server_args[@]}" "$dir" >"$dir/out" 2>/dev/null &
pid=$!
port=
for _ in $(seq 600); do
  port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$dir/out" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "tls-echo-instructions: the server did not start" >&2; exit 1; }
client() { node "$here/tls_echo_client.mjs" "$port" "$dir/ca.crt" "$connections" "$size" "$1" >/dev/null; }
client 2000  # warm-up
measure() {  # round trips: prints the instructions of that run (each dump is cg.out.N)
  local n
  n=$(( $(find "$dir" -name 'cg.out.*' | wc -l) + 1 ))
  callgrind_control -z "$pid" >/dev/null
  callgrind_control -i on "$pid" >/dev/null
  client "$1"
  callgrind_control -i off "$pid" >/dev/null
  callgrind_control -d "$pid" >/dev/null
  for _ in $(seq 100); do [ -s "$dir/cg.out.$n" ] && break; sleep 0.1; done
  sleep 0.5
  callgrind_annotate "$dir/cg.out.$n" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
short=$(measure 100)
long=$(measure "$round_trips")
if [ -n "${PROFILE:-}" ]; then  # the short run's too: the difference is the round trips'
  cp "$(ls -v "$dir"/cg.out.* | tail -2 | head -1)" "$PROFILE.short"
  cp "$(ls -v "$dir"/cg.out.* | tail -1)" "$PROFILE"
fi
echo "TLS echo ping-pong, sluice's server: $connections connections x $size B"
echo "user-space instructions per round trip: $(( (long - short) / (round_trips - 100) ))"
