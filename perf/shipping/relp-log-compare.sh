#!/usr/bin/env bash
# sluice-log relp:// into sluice-logd --listen-relp --fsync ack (each line
# acknowledged only once fsynced) against sluice-log syslog:// into
# sluice-logd --listen (nothing acknowledged), N lines of 80 bytes, RUNS
# runs side by side. The plain rate is timed until every line is in the
# file, the RELP one until sluice-log exits (every line answered, so synced).
#   perf/shipping/relp-log-compare.sh [BUILD] [N] [RUNS] [WINDOW]
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"
build=${1:-build} n=${2:-500000} runs=${3:-3} window=${4:-4096}
tools=$build/tools
. "$here/shipping.sh"
make_lines "$tmp/in.txt" "$n"
for r in $(seq "$runs"); do
  rm -f "$tmp"/out-*.log
  p1=$(free_port) p2=$(free_port)
  "$tools/sluice-logd" --stats --listen-relp "127.0.0.1:$p1" --fsync ack "$tmp/out-relp.log" 2>"$tmp/relp.err" & l1=$!
  "$tools/sluice-logd" --listen "127.0.0.1:$p2" "$tmp/out-tcp.log" 2>"$tmp/tcp.err" & l2=$!
  for _ in $(seq 100); do grep -q listening "$tmp/relp.err" && grep -q listening "$tmp/tcp.err" && break; sleep 0.05; done
  t0=$(date +%s.%N)
  "$tools/sluice-log" --window "$window" "relp://127.0.0.1:$p1" <"$tmp/in.txt"
  t1=$(date +%s.%N)
  "$tools/sluice-log" "syslog://127.0.0.1:$p2" <"$tmp/in.txt"
  while [ "$(wc -l <"$tmp/out-tcp.log")" -lt "$n" ]; do sleep 0.005; done
  t2=$(date +%s.%N)
  c1=$(ticks $l1) c2=$(ticks $l2)
  kill $l1 $l2; wait $l1 $l2 2>/dev/null || true
  fsyncs=$(grep -o '[0-9]* fsyncs' "$tmp/relp.err" | tail -1)
  python3 - "$n" "$t0" "$t1" "$t2" "$c1" "$c2" "$(getconf CLK_TCK)" "$fsyncs" <<'PY'
import sys
n, t0, t1, t2, c1, c2, hz = int(sys.argv[1]), *map(float, sys.argv[2:5]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
relp, plain = n / (t1 - t0), n / (t2 - t1)
fsyncs = int(sys.argv[8].split()[0]) if sys.argv[8] else 0
# Messages a fsync: what one sync covers, which the load does not move as
# it moves the rates (two syncs run at once behind the writes, so it is
# less than WINDOW / 2: each covers what came since the last one began).
per = f", {n / fsyncs:,.0f} messages a fsync" if fsyncs else ""
print(f"relp + --fsync ack: {relp:,.0f} msgs/s, receiver {c1 / hz / n * 1e6:.2f} us CPU a message ({sys.argv[8]}{per}); "
      f"plain syslog: {plain:,.0f} msgs/s, {c2 / hz / n * 1e6:.2f} us; ratio {relp / plain:.2f}x")
PY
done
