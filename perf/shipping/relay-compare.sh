#!/usr/bin/env bash
# sluice-log relp:// into a relay (sluice-logd --listen-relp --forward
# relp://) into a final sluice-logd --listen-relp --fsync ack, against
# sluice-log relp:// straight into such a final: N lines of 80 bytes, RUNS
# runs side by side, each timed until sluice-log exits (every line answered
# end to end, so fsynced by the final). Prints lines/s for both, the ratio
# (the relay's rate / the direct one; goal 0.7x) and the relay's CPU a line,
# then the median ratio. The two paths alternate which goes first.
#   perf/shipping/relay-compare.sh [BUILD] [N] [RUNS] [WINDOW]
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"
build=${1:-build} n=${2:-500000} runs=${3:-3} window=${4:-4096}
tools=$build/tools
. "$here/shipping.sh"
make_lines "$tmp/in.txt" "$n"
listening() { for _ in $(seq 100); do grep -q listening "$1" && return; sleep 0.05; done; echo "no listening line in $1" >&2; exit 1; }
for r in $(seq "$runs"); do
  rm -f "$tmp"/out-*.log
  pd=$(free_port) pf=$(free_port) pr=$(free_port)
  "$tools/sluice-logd" --listen-relp "127.0.0.1:$pd" --fsync ack "$tmp/out-direct.log" 2>"$tmp/direct.err" & ld=$!
  "$tools/sluice-logd" --listen-relp "127.0.0.1:$pf" --fsync ack "$tmp/out-final.log" 2>"$tmp/final.err" & lf=$!
  "$tools/sluice-logd" --listen-relp "127.0.0.1:$pr" --forward "relp://127.0.0.1:$pf" --window "$window" \
    2>"$tmp/relay.err" & lr=$!
  listening "$tmp/direct.err"; listening "$tmp/final.err"; listening "$tmp/relay.err"
  # The order alternates run by run, so that neither path always has the
  # page cache, or the other engineers' load of the moment, to itself.
  order="$pd $pr"
  [ $((r % 2)) -eq 1 ] || order="$pr $pd"
  for p in $order; do
    t0=$(date +%s.%N)
    "$tools/sluice-log" --window "$window" "relp://127.0.0.1:$p" <"$tmp/in.txt"
    t1=$(date +%s.%N)
    if [ "$p" = "$pd" ]; then direct_s=$(awk "BEGIN { print $t1 - $t0 }"); else relay_s=$(awk "BEGIN { print $t1 - $t0 }"); fi
  done
  cr=$(ticks $lr)
  kill $ld $lf $lr; wait $ld $lf $lr 2>/dev/null || true
  [ "$(wc -l <"$tmp/out-direct.log")" -eq "$n" ] && [ "$(wc -l <"$tmp/out-final.log")" -eq "$n" ] ||
    { echo "not every line in the files" >&2; exit 1; }
  python3 - "$n" "$direct_s" "$relay_s" "$cr" "$(getconf CLK_TCK)" <<'PY' | tee -a "$tmp/ratios"
import sys
n, ds, rs, cr, hz = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
direct, relay = n / ds, n / rs
print(f"direct into --fsync ack: {direct:,.0f} lines/s; through a relay: {relay:,.0f} lines/s, "
      f"relay CPU {cr / hz / n * 1e6:.2f} us a line; ratio {relay / direct:.2f}x")
PY
done
python3 - "$tmp/ratios" <<'PY'
import re, statistics, sys
r = [float(m[1]) for m in re.finditer(r"ratio ([0-9.]+)x", open(sys.argv[1]).read())]
print(f"median ratio of {len(r)} runs: {statistics.median(r):.2f}x (goal: at least 0.7x)")
PY
