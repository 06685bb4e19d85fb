#!/usr/bin/env bash
# The same chain of three, sluice against rsyslog, side by side:
#   sluice:  sluice-log relp:// -> sluice-logd --listen-relp --forward relp://
#            -> sluice-logd --listen-relp --fsync ack FILE
#   rsyslog: sluice-log relp:// -> rsyslogd imrelp -> omrelp (the relay)
#            -> rsyslogd imrelp -> omfile sync="on" (the final), both with
#            the main queue Direct, so each hop works in its input's thread.
# What an answer means differs, and that is the point of the comparison:
# sluice's relay answers once the final has the line fsynced (end to end);
# rsyslog's relay answers once omrelp has taken the line into its own RELP
# window (per hop: a relay killed then loses what it held). Each run is
# timed until the final's FILE holds every line (sluice-log's exit alone
# would flatter rsyslog's per-hop answers). rsyslog's final fsyncs each
# message, so it gets RS_N lines (default N/100); the rates are comparable,
# the counts are not. Prints lines/s of each, the ratio, and each relay's
# CPU a line; the chains alternate which goes first.
#   perf/shipping/relay-rsyslog-compare.sh [BUILD] [N] [RUNS] [RS_N]
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"
build=${1:-build} n=${2:-200000} runs=${3:-3} rs_n=${4:-$((${2:-200000} / 100))}
tools=$build/tools
rsyslogd=${RSYSLOGD:-/usr/sbin/rsyslogd}
. "$here/shipping.sh"
# rsyslogd 8.2302 may send SIGTERM to the process that started it.
trap '' TERM
make_lines "$tmp/in.txt" "$n"
head -n "$rs_n" "$tmp/in.txt" >"$tmp/in-rs.txt"
listening() { for _ in $(seq 200); do grep -q listening "$1" && return; sleep 0.05; done; echo "no listening line in $1" >&2; exit 1; }
accepting() { for _ in $(seq 400); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.05; done; echo "rsyslogd on $1 did not start: $(cat "$2")" >&2; exit 1; }
# until_lines FILE N: waits until FILE has N lines (120 s at most).
until_lines() {
  for _ in $(seq 12000); do [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] && return; sleep 0.01; done
  echo "$1 has $(wc -l <"$1") of $2 lines" >&2; exit 1
}
# rsyslog_conf DIR INPUT_PORT ACTION: a Direct main queue, imrelp on
# INPUT_PORT, every message to ACTION.
rsyslog_conf() {
  mkdir -p "$1"
  cat >"$1/rsyslog.conf" <<EOF
global(workDirectory="$1" parser.escapeControlCharactersOnReceive="off")
main_queue(queue.type="Direct")
module(load="imrelp")
module(load="omrelp")
template(name="raw" type="string" string="%rawmsg%\n")
template(name="fwd" type="string" string="%rawmsg%")
ruleset(name="r") { $3 }
input(type="imrelp" address="127.0.0.1" port="$2" ruleset="r")
EOF
}
secs() { awk "BEGIN { print $2 - $1 }"; }
for r in $(seq "$runs"); do
  rm -rf "$tmp"/run && mkdir -p "$tmp/run"
  d=$tmp/run
  pf=$(free_port) pr=$(free_port)
  "$tools/sluice-logd" --listen-relp "127.0.0.1:$pf" --fsync ack "$d/sluice-final.log" 2>"$d/final.err" & sf=$!
  "$tools/sluice-logd" --listen-relp "127.0.0.1:$pr" --forward "relp://127.0.0.1:$pf" 2>"$d/relay.err" & sr=$!
  listening "$d/final.err"; listening "$d/relay.err"
  qf=$(free_port) qr=$(free_port)
  rsyslog_conf "$d/rf" "$qf" "action(type=\"omfile\" file=\"$d/rsyslog-final.log\" template=\"raw\" sync=\"on\" flushOnTXEnd=\"on\")"
  rsyslog_conf "$d/rr" "$qr" "action(type=\"omrelp\" target=\"127.0.0.1\" port=\"$qf\" template=\"fwd\")"
  setsid "$rsyslogd" -n -f "$d/rf/rsyslog.conf" -i "$d/rf/pid" 2>"$d/rf/err" & rf=$!
  accepting "$qf" "$d/rf/err"
  setsid "$rsyslogd" -n -f "$d/rr/rsyslog.conf" -i "$d/rr/pid" 2>"$d/rr/err" & rr=$!
  accepting "$qr" "$d/rr/err"
  order="sluice rsyslog"
  [ $((r % 2)) -eq 1 ] || order="rsyslog sluice"
  for chain in $order; do
    t0=$(date +%s.%N)
    if [ "$chain" = sluice ]; then
      "$tools/sluice-log" "relp://127.0.0.1:$pr" <"$tmp/in.txt"
      until_lines "$d/sluice-final.log" "$n"
      sluice_s=$(secs "$t0" "$(date +%s.%N)")
    else
      "$tools/sluice-log" "relp://127.0.0.1:$qr" <"$tmp/in-rs.txt"
      until_lines "$d/rsyslog-final.log" "$rs_n"
      rsyslog_s=$(secs "$t0" "$(date +%s.%N)")
    fi
  done
  cs=$(ticks $sr) cq=$(ticks $rr)
  kill $sf $sr $rf $rr 2>/dev/null || true
  wait $sf $sr 2>/dev/null || true
  python3 - "$n" "$sluice_s" "$rs_n" "$rsyslog_s" "$cs" "$cq" "$(getconf CLK_TCK)" <<'PY' | tee -a "$tmp/ratios"
import sys
n, ss, rn, rs, cs, cq, hz = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
s, q = n / ss, rn / rs
print(f"sluice chain (end to end): {s:,.0f} lines/s, relay CPU {cs / hz / n * 1e6:.2f} us a line; "
      f"rsyslog chain (per hop): {q:,.0f} lines/s, relay CPU {cq / hz / rn * 1e6:.2f} us a line; ratio {s / q:.1f}x")
PY
done
python3 - "$tmp/ratios" <<'PY'
import re, statistics, sys
r = [float(m[1]) for m in re.finditer(r"ratio ([0-9.]+)x", open(sys.argv[1]).read())]
print(f"median ratio of {len(r)} runs, sluice's chain / rsyslog's: {statistics.median(r):.1f}x")
PY
