#!/usr/bin/env bash
# sluice-log syslog+tls:// into sluice-logd --listen-tls (--tls-client-ca:
# mutual TLS, a test CA made here with the openssl program) against
# sluice-log syslog:// into sluice-logd --listen, N lines of 80 bytes, RUNS
# runs, the two alternating in each run. Each rate is timed from the start
# of sluice-log until every line is in sluice-logd's file; the CPU of each
# side (user + system, from /proc) is given a message. Goal: TLS at least
# 0.8x plain's rate.
#   perf/shipping/tls-compare.sh [BUILD] [N] [RUNS]
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"
build=${1:-build} n=${2:-500000} runs=${3:-3}
tools=$build/tools
# here: from the prologue
. "$here/shipping.sh"
sh "$here/../../tests/tls/make_ca.sh" "$tmp" && chmod 600 "$tmp"/*.key
make_lines "$tmp/in.txt" "$n"
# One sluice-log into one sluice-logd; prints "SECONDS SENDER_TICKS RECEIVER_TICKS".
run() {  # name, logd args, DEST scheme, sluice-log args...
  local name=$1 largs=$2 scheme=$3
  shift 3
  rm -f "$tmp/out-$name.log"
  # shellcheck disable=SC2086
  "$tools/sluice-logd" $largs "$tmp/out-$name.log" 2>"$tmp/$name.err" & local lp=$!
  for _ in $(seq 1200); do grep -q listening "$tmp/$name.err" && break; sleep 0.05; done
  local port
  port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/$name.err" | head -1)
  [ -n "$port" ] || { echo "sluice-logd ($name) did not listen: $(cat "$tmp/$name.err")" >&2; exit 1; }
  local t0 t1
  t0=$(date +%s.%N)
  # The sender's CPU: its rusage, in ticks as /proc gives the receiver's.
  local sc
  sc=$(python3 -c '
import os, resource, subprocess, sys
subprocess.run(sys.argv[2:], stdin=open(sys.argv[1]), check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(round((r.ru_utime + r.ru_stime) * os.sysconf("SC_CLK_TCK")))' "$tmp/in.txt" "$tools/sluice-log" "$@" "$scheme://127.0.0.1:$port")
  local waited=0
  while [ "$(wc -l <"$tmp/out-$name.log")" -lt "$n" ]; do
    sleep 0.005
    waited=$((waited + 1))
    [ $waited -lt 12000 ] || { echo "sluice-logd ($name): $(wc -l <"$tmp/out-$name.log") of $n lines after 60 s" >&2; exit 1; }
  done
  t1=$(date +%s.%N)
  local rc
  rc=$(ticks $lp)
  kill $lp; wait $lp 2>/dev/null || true
  echo "$(echo "$t1 - $t0" | bc) $sc $rc"
}
tls_logd="--listen-tls 127.0.0.1:0 --tls-cert $tmp/server.crt --tls-key $tmp/server.key --tls-client-ca $tmp/ca.crt"
for r in $(seq "$runs"); do
  plain=$(run plain "--listen 127.0.0.1:0" syslog)
  tls=$(run tls "$tls_logd" syslog+tls --tls-ca "$tmp/ca.crt" --tls-cert "$tmp/client.crt" --tls-key "$tmp/client.key")
  python3 - "$n" "$(getconf CLK_TCK)" $plain $tls <<'PY'
import sys
n, hz = int(sys.argv[1]), int(sys.argv[2])
ps, psc, prc, ts, tsc, trc = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
us = lambda t: t / hz / n * 1e6
print(f"plain: {n / ps:,.0f} msgs/s (sender {us(psc):.2f} us CPU a message, receiver {us(prc):.2f}); "
      f"tls: {n / ts:,.0f} msgs/s (sender {us(tsc):.2f}, receiver {us(trc):.2f}); ratio {ps / ts:.2f}x")
PY
done
