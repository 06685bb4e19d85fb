#!/usr/bin/env bash
# echo-instructions.sh: the user-space instructions each echo server spends
# per round trip (valgrind's callgrind), the figure a loaded machine does not
# blur as it does echo-compare.sh's CPU times: sluice's callbacks server, its
# coroutine server on an attached io_context, and the plain Asio coroutine
# server, under the same echo_client. Connecting and the first messages are
# taken out: two measured runs of CONNECTIONS fresh connections, of 1,000
# and of ROUND_TRIPS round trips, and the difference divided by
# ROUND_TRIPS - 1,000. The kernel's share (recv, sendmsg, epoll) is not in
# it: SYSCALLS=1 also counts the server's syscalls over the long run
# (strace -c -f; strace is slow, so its run is a separate one).
#
#   perf/echo/echo-instructions.sh [BUILDDIR]        (default: build)
#
# Environment: ROUND_TRIPS (default 20000), CONNECTIONS (100), SIZE (128),
# SERVERS (default "sluice sluice-coro asio"; sluice-coro-when-full awaits
# the room only when write() returned false), KEEP=DIR (keep the profiles,
# for callgrind_annotate), SYSCALLS (0), SLUICE_SERVER (another build's
# sluice_echo_server, say one built from the commit before a change: put it
# in BUILDDIR/perf/, where it finds its libsluice), RUNS (1: measures each
# server RUNS times, one after the other).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
round_trips=${ROUND_TRIPS:-20000}
connections=${CONNECTIONS:-100}
size=${SIZE:-128}
servers=${SERVERS:-sluice sluice-coro asio}
client=$build/perf/echo_client
sluice_server=${SLUICE_SERVER:-$build/perf/sluice_echo_server}
runs=${RUNS:-1}
for b in echo_client sluice_echo_server asio_echo_server; do
  [ -x "$build/perf/$b" ] || { echo "echo-instructions: $build/perf/$b not built (-Dperf=true)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "echo-instructions: needs valgrind" >&2; exit 1; }
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

command_of() {  # NAME: the server's command line
  case $1 in
    sluice) echo "$sluice_server" ;;
    sluice-coro) echo "$sluice_server --coroutines" ;;
    sluice-coro-when-full) echo "$sluice_server --coroutines --when-full" ;;
    asio) echo "$build/perf/asio_echo_server" ;;
    *) echo "echo-instructions: unknown server $1" >&2; exit 2 ;;
  esac
}

wait_port() {  # OUTFILE: prints the port the server listens on
  local port=
  for _ in $(seq 600); do
    port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$1" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "echo-instructions: the server did not start" >&2; cat "$1" >&2; exit 1; }
  echo "$port"
}

stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
}

echo "echo ping-pong, $connections connections x $size B: user-space instructions a round trip"
i=0
for name in $(for n in $servers; do for _ in $(seq "$runs"); do echo "$n"; done; done); do
  i=$((i + 1))
  out=$dir/$i.out cg=$dir/$i.cg
  # shellcheck disable=SC2046
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$cg" $(command_of "$name") >"$out" 2>/dev/null &
  pid=$!
  port=$(wait_port "$out")
  "$client" "$port" --connections "$connections" --size "$size" --round-trips 2000 >/dev/null  # warm-up
  measure() {  # ROUND_TRIPS N: prints the instructions of that run, the Nth dump (I.cg.N)
    local n=$2
    callgrind_control -z "$pid" >/dev/null 2>&1
    callgrind_control -i on "$pid" >/dev/null 2>&1
    "$client" "$port" --connections "$connections" --size "$size" --round-trips "$1" >/dev/null
    callgrind_control -i off "$pid" >/dev/null 2>&1
    callgrind_control -d "$pid" >/dev/null 2>&1
    for _ in $(seq 100); do [ -s "$cg.$n" ] && break; sleep 0.1; done
    sleep 0.5
    callgrind_annotate "$cg.$n" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
  }
  short=$(measure 1000 1)
  long=$(measure "$round_trips" 2)
  stop
  printf '  %-12s %7d\n' "$name" $(( (long - short) / (round_trips - 1000) ))
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$cg.2" "$KEEP/$name.cg"; fi
done

if [ "${SYSCALLS:-0}" = 1 ]; then
  command -v strace >/dev/null || { echo "echo-instructions: SYSCALLS=1 needs strace" >&2; exit 1; }
  echo "syscalls a round trip, over $round_trips round trips (strace -c -f)"
  for name in $servers; do
    out=$dir/$name.sout
    # shellcheck disable=SC2046
    $(command_of "$name") >"$out" 2>&1 &
    pid=$!
    port=$(wait_port "$out")
    "$client" "$port" --connections "$connections" --size "$size" --round-trips 2000 >/dev/null
    strace -c -f -o "$dir/$name.strace" -p "$pid" 2>/dev/null &
    spid=$!
    sleep 1
    "$client" "$port" --connections "$connections" --size "$size" --round-trips "$round_trips" >/dev/null
    kill -INT "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    stop
    printf '  %-12s' "$name"
    # strace -c's rows: % time, seconds, usecs/call, calls, [errors,] syscall.
    awk -v n="$round_trips" 'NF >= 5 && $1 ~ /^[0-9.]+$/ && $NF != "total" {
        printf " %s %.2f", $NF, $4 / n; if (NF == 6 && $5 > 0) printf " (%.2f failed)", $5 / n }' "$dir/$name.strace"
    echo
  done
fi
