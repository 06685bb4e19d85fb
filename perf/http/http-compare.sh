#!/usr/bin/env bash
# http-compare.sh: wrk against three keep-alive HTTP/1.1 "hello world"
# servers on this machine, one after another, each on a free port of its
# own choosing (port 0): sluice's (tests/examples/http_hello.cc: net::server
# with callbacks on sluice's poll loop), Node's http (hello_server.js) and
# Boost.Beast's (beast_hello_server.cc), all single-threaded. The server is
# pinned to one core and wrk to the other (taskset, when there are two), so
# that they do not fight for one; the figure that counts is requests per CPU
# second of the server (utime + stime from /proc/PID/stat around the
# measured run), with requests/s beside it.
#
#   perf/http/http-compare.sh [BUILDDIR]        (default: build)
#
# Environment: DURATION (seconds per run, default 5), CONNECTIONS (100),
# RUNS (best of, default 3), PIPELINE (requests per write, default 1: plain
# keep-alive; more uses pipeline.lua), NODE (node binary), WRK (wrk binary).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
duration=${DURATION:-5}
connections=${CONNECTIONS:-100}
runs=${RUNS:-3}
pipeline=${PIPELINE:-1}
wrk_bin=${WRK:-wrk}
hz=$(getconf CLK_TCK)

command -v "$wrk_bin" >/dev/null || { echo "http-compare: $wrk_bin not found (Debian: wrk)" >&2; exit 1; }
for b in http_hello_server beast_hello_server; do
  [ -x "$build/perf/$b" ] || { echo "http-compare: $build/perf/$b not built (meson setup with -Dperf=true)" >&2; exit 1; }
done

server_cpu=() client_cpu=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
wrk_args=(-t1 -c"$connections")
[ "$pipeline" -gt 1 ] && wrk_args+=(-s "$here/pipeline.lua")

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# measure NAME COMMAND...: starts the server, waits for "listening on PORT",
# warms it up for a second, then keeps the best of RUNS runs. Prints
# "NAME requests_per_s requests_per_cpu_s".
measure() {
  local name=$1; shift
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "$1" ]; then
    echo "$name - -"; echo "http-compare: $name: $1 not found, skipped" >&2; return
  fi
  local out; out=$(mktemp)
  "${server_cpu[@]}" "$@" >"$out" 2>&1 &
  local pid=$! port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "http-compare: $name did not start:" >&2; cat "$out" >&2; kill "$pid" 2>/dev/null || true; exit 1
  fi
  local url=http://127.0.0.1:$port/
  # Every server must answer the same 200 with the same body.
  if command -v curl >/dev/null && [ "$(curl -s "$url")" != "hello world" ]; then
    echo "http-compare: $name does not answer 'hello world'" >&2; kill "$pid"; exit 1
  fi
  PIPELINE=$pipeline "${client_cpu[@]}" "$wrk_bin" "${wrk_args[@]}" -d1 "$url" >/dev/null
  local best_rate="" best_per_cpu=""
  for _ in $(seq "$runs"); do
    local before after report
    before=$(cpu_ticks "$pid")
    report=$(PIPELINE=$pipeline "${client_cpu[@]}" "$wrk_bin" "${wrk_args[@]}" -d"$duration" "$url")
    after=$(cpu_ticks "$pid")
    if grep -q "Non-2xx\|Socket errors" <<<"$report"; then
      echo "http-compare: $name: wrk saw errors:" >&2; echo "$report" >&2
    fi
    local requests seconds rate per_cpu
    requests=$(sed -n 's/^ *\([0-9][0-9]*\) requests in \([0-9.]*\)s.*/\1/p' <<<"$report")
    seconds=$(sed -n 's/^ *\([0-9][0-9]*\) requests in \([0-9.]*\)s.*/\2/p' <<<"$report")
    rate=$(awk -v n="$requests" -v s="$seconds" 'BEGIN { printf "%.0f", n / s }')
    per_cpu=$(awk -v n="$requests" -v t=$((after - before)) -v hz="$hz" 'BEGIN { printf "%.0f", (t > 0 ? n / (t / hz) : 0) }')
    if [ -z "$best_rate" ] || [ "$rate" -gt "$best_rate" ]; then best_rate=$rate; fi
    if [ -z "$best_per_cpu" ] || [ "$per_cpu" -gt "$best_per_cpu" ]; then best_per_cpu=$per_cpu; fi
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$out"
  echo "$name $best_rate $best_per_cpu"
}

results=()
results+=("$(measure sluice "$build/perf/http_hello_server")")
results+=("$(measure node "$node_bin" "$here/hello_server.js")")
results+=("$(measure beast "$build/perf/beast_hello_server")")

pinned="not pinned"; [ ${#server_cpu[@]} -gt 0 ] && pinned="server on CPU 0, wrk on CPU 1"
echo "HTTP/1.1 hello world, wrk -t1 -c$connections, ${duration}s, pipeline $pipeline, best of $runs ($pinned)"
printf '%-8s %12s %18s %14s %14s\n' server "requests/s" "requests/CPU s" "vs node" "vs beast"
node_cpu=$(printf '%s\n' "${results[@]}" | awk '$1 == "node" { print $3 }')
beast_cpu=$(printf '%s\n' "${results[@]}" | awk '$1 == "beast" { print $3 }')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "" || b == "-" || b == 0) print "n/a"; else printf "%.2fx", a / b }'; }
for r in "${results[@]}"; do
  read -r name rate per_cpu <<<"$r"
  printf '%-8s %12s %18s %14s %14s\n' "$name" "$rate" "$per_cpu" "$(ratio "$per_cpu" "$node_cpu")" "$(ratio "$per_cpu" "$beast_cpu")"
done
