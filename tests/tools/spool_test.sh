#!/usr/bin/env bash
# sluice-log --spool against a real rsyslogd (imtcp -> omfile), on loopback:
# no receiver for 8 s (times SLUICE_TIME_SCALE) while 200,000 lines flow in:
# the input is read through during the outage (standard input's offset at
# its end), memory stays bounded (VmHWM), then every line arrives once, in
# order, and the spool is emptied; sluice-log SIGKILLed with a full spool
# and no receiver, run again on the same spool with an empty input and the
# receiver up: every line the spool held arrives, in order; a spool DIR
# that is a symbolic link, and --spool-max without --spool, are refused.
# Every wait is bounded.
#
#   spool_test.sh SLUICE_LOG
set -uo pipefail
slog=$(realpath "${1:?usage: spool_test.sh SLUICE_LOG}")
scale=${SLUICE_TIME_SCALE:-1}

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

if [ ! -x /usr/sbin/rsyslogd ]; then
  echo "SKIP spool: rsyslogd is not installed (apt-get install rsyslog)"
  exit 0
fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
msgs() { cut -d' ' -f8- "$1"; }
wait_lines() {
  for _ in $(seq $((1200 * scale))); do
    [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] && return
    sleep 0.05
  done
}

# rsyslogd on $port writing each message as received to $1, in the order
# received: one imtcp worker and no queue (with imtcp's two workers and the
# main queue's batches, a backlog arriving at once was written with batches
# of 256 out of order).
start_rsyslogd() {
  cat >"$tmp/rsyslog.conf" <<EOF
global(workDirectory="$tmp" parser.escapeControlCharactersOnReceive="off")
main_queue(queue.type="Direct")
module(load="imtcp" workerthreads="1")
template(name="raw" type="string" string="%rawmsg%\n")
ruleset(name="r") { action(type="omfile" file="$1" template="raw") }
input(type="imtcp" address="127.0.0.1" port="$port" ruleset="r")
EOF
  rm -f "$tmp/rsyslog.pid"
  # rsyslogd (8.2302) may send SIGTERM to its parent: ignored while it runs.
  trap '' TERM
  (trap - TERM; exec /usr/sbin/rsyslogd -n -f "$tmp/rsyslog.conf" -i "$tmp/rsyslog.pid") 2>>"$tmp/rsyslogd.err" &
  rp=$!
  bg_pids+=("$rp")
}
stop_rsyslogd() {
  kill -TERM "$rp"
  wait "$rp"
  trap - TERM
}

# ---- an outage of 8 s while 200,000 lines flow through the spool

# ASan's quarantine would keep freed memory: kept small for the RSS checks.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1
port=$(free_port)
# The baseline: sluice-log's peak RSS with 10 lines spooled and no receiver.
seq 10 | "$slog" --spool "$tmp/spool0" "syslog://127.0.0.1:$port" 2>/dev/null &
sp=$!
bg_pids+=("$sp")
sleep "$scale"
base=$(awk '/^VmHWM:/ {print $2}' "/proc/$sp/status")
kill -KILL "$sp"
wait "$sp" 2>/dev/null
seq -f 'line %.0f of the outage test' 1 200000 >"$tmp/lines"
size=$(stat -c %s "$tmp/lines")
t0=$SECONDS
"$slog" --stats --json --spool "$tmp/spool" "syslog://127.0.0.1:$port" <"$tmp/lines" 2>"$tmp/err" &
sp=$!
bg_pids+=("$sp")
# The input is read through while nobody listens: standard input's offset
# reaches its end within the outage.
read_through=no
for _ in $(seq $((80 * scale))); do
  sleep 0.1
  pos=$(awk '/^pos:/ {print $2}' "/proc/$sp/fdinfo/0" 2>/dev/null)
  if [ "${pos:-0}" -eq "$size" ]; then read_through=yes; break; fi
done
rest=$((8 * scale - (SECONDS - t0)))
[ "$rest" -gt 0 ] && sleep "$rest"
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$sp/status")
segs=$(find "$tmp/spool" -name 'seg-*' | wc -l)
check "outage: the input is read through while the receiver is away" same "$read_through" yes
check "outage: the spool holds segments ($segs)" test "$segs" -ge 1
# Memory bounded: the spool's batch and read-ahead, the 1024 messages
# queued for syslog, the input's buffer; not the 200,000 lines (6 MB).
check "outage: peak RSS ${hwm} kB, ${base} kB with 10 lines: less than 3 MB more" test $((hwm - base)) -lt 3072
echo "spool outage: peak RSS ${hwm} kB (${base} kB with 10 lines) with 200000 lines ($size bytes) read during the outage"
start_rsyslogd "$tmp/out.log"
for _ in $(seq $((600 * scale))); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$sp" 2>/dev/null  # still running after 60 s: the check below fails
wait "$sp"
st=$?
check "outage: sluice-log exits 0 once all is sent (got $st; $(head -c 300 "$tmp/err"))" test $st -eq 0
wait_lines "$tmp/out.log" 200000
stop_rsyslogd
msgs "$tmp/out.log" >"$tmp/got"
check "outage: the 200000 lines arrive, once each, in order ($(wc -l <"$tmp/got") lines; first difference: $(cmp "$tmp/got" "$tmp/lines" 2>&1 | head -1))" \
  cmp -s "$tmp/got" "$tmp/lines"
check "outage: the spool is emptied" same "$(find "$tmp/spool" -name 'seg-*' | wc -l)" 0
check "outage: --stats counts 200000 spooled and sent from the spool" \
  grep -q '"spooled":200000,.*"sent_from_spool":200000,"acked_from_spool":200000' "$tmp/err"

# ---- SIGKILLed with a full spool and no receiver; run again

port=$(free_port)
seq -f 'line %.0f of the kill test' 1 100000 >"$tmp/lines2"
"$slog" --spool "$tmp/spool2" --spool-max 1M "syslog://127.0.0.1:$port" <"$tmp/lines2" 2>"$tmp/err2" &
sp=$!
bg_pids+=("$sp")
# Full: the spool holds about 1 MB and the input is held back.
full=no
for _ in $(seq $((100 * scale))); do
  sleep 0.1
  bytes=$(cat "$tmp"/spool2/seg-* 2>/dev/null | wc -c)
  if [ "$bytes" -gt 900000 ]; then full=yes; sleep 0.5; break; fi
done
kill -KILL "$sp"
wait "$sp" 2>/dev/null
check "kill: the spool filled to about --spool-max before the SIGKILL" same "$full" yes
bytes=$(cat "$tmp"/spool2/seg-* | wc -c)
check "kill: the spool stays within --spool-max ($bytes bytes)" test "$bytes" -le 1048576
start_rsyslogd "$tmp/out2.log"
timeout $((120 * scale)) "$slog" --stats --json --spool "$tmp/spool2" "syslog://127.0.0.1:$port" </dev/null 2>"$tmp/err3"
st=$?
check "kill: the second run, empty input, exits 0 (got $st; $(head -c 300 "$tmp/err3"))" test $st -eq 0
got=$(grep -c '"spooled":0' "$tmp/err3")
check "kill: the second run spooled nothing of its own" same "$got" 1
sent=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["sent_from_spool"])' "$tmp/err3")
wait_lines "$tmp/out2.log" "$sent"
stop_rsyslogd
n=$(wc -l <"$tmp/out2.log")
echo "spool kill: $n lines were in the spool at the SIGKILL, $sent sent from it by the second run"
# Everything the spool held: the lines from the first, in order, none lost
# (a prefix of the input: the spool took them in order), none twice.
check "kill: every record the spool held arrived ($sent sent from it, $n arrived)" same "$n" "$sent"
check "kill: the spool held a good part of the input ($n lines)" test "$n" -ge 25000
check "kill: what arrives is the input's first $n lines, once each, in order" \
  cmp -s <(msgs "$tmp/out2.log") <(head -n "$n" "$tmp/lines2")
check "kill: the spool is emptied" same "$(find "$tmp/spool2" -name 'seg-*' | wc -l)" 0

# ---- refusals

ln -s "$tmp/spool" "$tmp/spool-link"
"$slog" --spool "$tmp/spool-link" "syslog://127.0.0.1:$port" </dev/null 2>"$tmp/err4"
st=$?
check "a symbolic link as DIR: exit 1 (got $st)" test $st -eq 1
check "a symbolic link as DIR: said" grep -q 'symbolic link' "$tmp/err4"
"$slog" --spool-max 1M "syslog://127.0.0.1:$port" </dev/null 2>"$tmp/err5"
check "--spool-max without --spool: exit 2" test $? -eq 2
"$slog" --spool "$tmp/spool3" "$tmp/file.log" </dev/null 2>"$tmp/err6"
check "--spool with a FILE: exit 2" test $? -eq 2

echo "spool: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
