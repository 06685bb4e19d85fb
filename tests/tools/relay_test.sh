#!/usr/bin/env bash
# sluice-logd --forward, a relay: sluice-log relp:// -> relay -> a final
# sluice-logd --listen-relp --fsync ack FILE. Every line once, as sent; the
# final stopped (SIGSTOP), then the relay and the final SIGKILLed together (twice, 300,000 lines)
# and restarted mid-stream: 0 lost, the duplicates counted and within the
# sender's window (this is what fails when a relay answers before its next
# hop did); two relays in a row, one SIGKILLed twice: 0 lost; a --forward
# that is down and the next one tried, the first SIGKILLed mid-stream and
# the second taking the rest; a next hop's rsp 500 answered rsp 500 to the
# sender, on the same connection; a --listen sender's lines forwarded;
# a stopped next hop holding a --listen sender back through the relay
# (backpressure); --give-up-after with every next hop down; SIGTERM with it
# away and --grace; --spool DIR answering while the next hop is away, and a
# relay SIGKILLed then restarted on DIR: 0 lost; rsyslog's omrelp as the
# sender (skipped without rsyslog-relp); usage.
# Loopback only; every wait is bounded.
#
#   tests/tools/relay_test.sh SLUICE_LOGD SLUICE_LOG
set -euo pipefail
logd=$1
log=$2
listen_kind=RELP
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/rsyslog.sh"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Waits (bounded) until FILE has at least N lines.
wait_lines() {
  for _ in $(seq $((600 * scale))); do [ "$(cat "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0; sleep 0.02; done
  fail "$1 has $(cat "$1" 2>/dev/null | wc -l) lines, not $2"
}
# Waits (bounded) for pid $1 to exit, and fails unless it exits 0.
wait_exit0() {
  for _ in $(seq $((1200 * scale))); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$1" 2>/dev/null && fail "$2 still running: $(tail -3 "$3")"
  local st=0
  wait "$1" || st=$?
  [ "$st" -eq 0 ] || fail "$2 exited $st: $(tail -5 "$3")"
}
# A feeder of N numbered lines at about R lines a second into sluice-log's
# stdin, so that the kills below come mid-stream.
feed() {
  python3 - "$1" "$2" <<'PY'
import sys, time
n, rate = int(sys.argv[1]), int(sys.argv[2])
step = max(1, rate // 50)
for i in range(0, n, step):
    sys.stdout.write("".join("line %06d\n" % j for j in range(i, min(n, i + step))))
    sys.stdout.flush()
    time.sleep(0.02)
PY
}
# FILE has every line 0..N-1 of feed() at least once (a torn line, the end
# of a write(2) cut by a SIGKILL, is allowed once a kill); the duplicates at
# most MAX. Prints the counts.
check_all() { python3 "$(dirname "${BASH_SOURCE[0]}")/count_delivered.py" "$@"; }

# start_final [PORT]: the final receiver, --fsync ack into $final_log, on
# PORT (default: any); sets $fp and $final.
start_final() {
  ERR=$dir/final.err start --listen-relp "127.0.0.1:${1:-0}" --fsync ack "$final_log"
  fp=$port final=$lp
}
# start_relay NAME PORT NEXT [OPTION]...: a relay on PORT (0: any) forwarding
# to 127.0.0.1:NEXT, its stderr in $dir/NAME.err; sets $port and $lp.
start_relay() {
  local name=$1 on=$2 next=$3
  shift 3
  ERR=$dir/$name.err start --listen-relp "127.0.0.1:$on" --forward "relp://127.0.0.1:$next" "$@"
}

# send_bg PORT [OPTION]...: sluice-log sending $total lines of feed() at
# $rate lines/s (default 20k) into 127.0.0.1:PORT, in the background (its
# stderr in $dir/log.err); sets $sender.
send_bg() {
  local to=$1
  shift
  (feed $total "${rate:-20000}" | "$log" --window $window "$@" "relp://127.0.0.1:$to" 2> "$dir/log.err") &
  sender=$!
  pids+=("$sender")
}

# --- usage
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 "$dir/out.log"
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 --fsync ack
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 --max-size 1M
bad --listen-relp 127.0.0.1:0 --forward syslog://127.0.0.1:1
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 --window 0
bad --listen-relp 127.0.0.1:0 --window 10 "$dir/out.log"
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 --forward-tls-ca x
bad --listen-relp 127.0.0.1:0
"$logd" --help > "$dir/help"
grep -q -- '--forward relp://HOST:PORT' "$dir/help" || fail "--help has no --forward"
ok "usage"

final_log=$dir/final.log
window=1024

# --- all lines once, in order, as sent (one header); --stats counts them
start_final
start_relay relay 0 "$fp" --stats
rp=$port relay=$lp
feed 20000 1000000 | "$log" "relp://127.0.0.1:$rp" 2> "$dir/log.err" || fail "sluice-log: $(cat "$dir/log.err")"
lp=$relay ERR=$dir/relay.err stop
grep -q "20000 RELP answered, .*; 20000 forwarded, 0 resent" "$dir/relay.err" || fail "relay --stats: $(tail -1 "$dir/relay.err")"
lp=$final ERR=$dir/final.err stop
check_all "$final_log" 20000 0 0 "20000 lines" || fail "a relay lost or doubled lines"
python3 - "$final_log" <<'PY' || fail "not in order"
import re, sys
n = [int(l.rsplit(b" ", 1)[1]) for l in open(sys.argv[1], "rb")]
assert n == list(range(20000))
PY
ok "sluice-log -> relay -> sluice-logd --fsync ack: 20000 lines once, in order, as sent"
rm -f "$final_log"

# --- a next hop that refuses a message (rsp 500; relp_peer.py refuses
# those with "refuse me"): the relay answers that message rsp 500 to its
# sender, counts it, and keeps the connection, so the messages after it go
# on and the refused one is not sent again (a relay that closed the
# connection instead would have it sent again, and refused again, without end).
python3 "$(dirname "${BASH_SOURCE[0]}")/relp_peer.py" "$dir/peer.port" "$dir/peer.got" "refuse me" $((120 * scale)) \
  2> "$dir/peer.err" &
peer=$!
pids+=("$peer")
for _ in $(seq $((200 * scale))); do [ -s "$dir/peer.port" ] && break; sleep 0.05; done
[ -s "$dir/peer.port" ] || fail "relp_peer.py did not listen: $(cat "$dir/peer.err")"
start_relay refusing 0 "$(cat "$dir/peer.port")" --stats
rp=$port relay=$lp
{ for i in $(seq 1 10); do echo "line $i"; done; echo "refuse me"; for i in $(seq 12 21); do echo "line $i"; done; } \
  > "$dir/refuse.in"
st=0
timeout $((60 * scale)) "$log" --stats "relp://127.0.0.1:$rp" < "$dir/refuse.in" 2> "$dir/log.err" || st=$?
[ "$st" -eq 1 ] || fail "sluice-log with a line the next hop refuses: exit $st (1 wanted): $(cat "$dir/log.err")"
grep -q "the receiver refused 1 message (answered other than 200)" "$dir/log.err" ||
  fail "sluice-log heard no refusal: $(cat "$dir/log.err")"
grep -q "21 lines, 20 acked, .*0 reconnects, 1 refused" "$dir/log.err" ||
  fail "sluice-log --stats (20 acked, the connection kept, 1 refused): $(tail -1 "$dir/log.err")"
grep -q "refused a message (RELP: the receiver refused a message: rsp 500 not today): answered to its sender with a RELP error" \
  "$dir/refusing.err" || fail "the relay did not say the refusal: $(cat "$dir/refusing.err")"
kill -TERM "$relay"
st=0
wait "$relay" || st=$?
[ "$st" -eq 1 ] || fail "a relay with a refused message exits $st (1 wanted: one not written)"
grep -q "1 of 21 messages not written" "$dir/refusing.err" || fail "relay: $(cat "$dir/refusing.err")"
grep -q "1 connections.*; 20 forwarded, 0 resent, 0 reconnects, 1 refused by the next hop" "$dir/refusing.err" ||
  fail "relay --stats: $(tail -1 "$dir/refusing.err")"
cmp -s "$dir/peer.got" "$dir/refuse.in" || fail "the next hop did not get every line once, in order: $(cat "$dir/peer.got")"
kill "$peer" 2>/dev/null || true
wait "$peer" 2>/dev/null || true
ok "a next hop's rsp 500: answered rsp 500 to the sender, counted, the connection kept, the rest delivered"

# --- the final stopped (SIGSTOP) while the relay holds a full window for
# it; then both SIGKILLed and restarted on their ports, twice: what the
# relay had answered is in the final's FILE, the rest comes again from
# sluice-log.
total=300000
start_final
start_relay relay 0 "$fp" --window $window
rp=$port relay=$lp
# 60k lines/s: the 300,000 lines in about 5 s of feeding, as the 100,000
# at 20k/s were, so that the test stays well under a minute (the kills
# still come mid-stream: they wait for the final's lines, not the feed).
rate=60000 send_bg "$rp" --stats
for k in 1 2; do
  wait_lines "$final_log" $((k * total / 3))
  kill -STOP "$final"
  sleep 1  # the relay's window to the final fills, then what it holds
  kill -9 "$relay" "$final"
  kill -CONT "$final" 2>/dev/null || true
  wait "$relay" 2>/dev/null || true
  wait "$final" 2>/dev/null || true
  echo "  SIGSTOP, SIGKILL $k at $(wc -l < "$final_log") lines"
  start_final "$fp"
  start_relay relay "$rp" "$fp" --window $window
  relay=$lp
done
wait_exit0 "$sender" sluice-log "$dir/log.err"
grep -q "^sluice-log: $total lines, $total acked" "$dir/log.err" || fail "sluice-log: $(cat "$dir/log.err")"
lp=$relay ERR=$dir/relay.err stop
lp=$final ERR=$dir/final.err stop
# What may come twice: what sluice-log had unanswered at each kill (its window).
check_all "$final_log" $total 2 $((2 * window)) "final SIGSTOPped, relay and final SIGKILLed twice" || fail "lost lines through a relay"
ok "relay and final SIGKILLed together twice (the final stopped first): 0 lost, duplicates within the windows"
rm -f "$final_log"

# --- two relays in a row, the second SIGKILLed and restarted twice
total=30000
start_final
start_relay relay2 0 "$fp" --window $window
r2p=$port relay2=$lp
start_relay relay1 0 "$r2p" --window $window
r1p=$port relay1=$lp
send_bg "$r1p"
for k in 1 2; do
  wait_lines "$final_log" $((k * total / 3))
  kill -9 "$relay2"; wait "$relay2" 2>/dev/null || true
  echo "  SIGKILL $k of the second relay at $(wc -l < "$final_log") lines"
  start_relay relay2 "$r2p" "$fp" --window $window
  relay2=$lp
done
wait_exit0 "$sender" sluice-log "$dir/log.err"
for p in "$relay1" "$relay2" "$final"; do lp=$p stop; done
# Each kill may bring again what the first relay had unanswered.
check_all "$final_log" $total 0 $((2 * window)) "two relays, the second SIGKILLed twice" || fail "lost lines through two relays"
ok "two relays in a row, one SIGKILLed twice: 0 lost, duplicates within the windows"
rm -f "$final_log"

# --- several --forward: the first down, the next one takes the messages;
# and a --listen sender's lines are forwarded too (unanswered)
start_final
ERR=$dir/relay.err start --listen-relp 127.0.0.1:0 --listen 127.0.0.1:0 \
  --forward "relp://127.0.0.1:$(free_port)" --forward "relp://127.0.0.1:$fp"
rp=$port relay=$lp
sp=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/relay.err")
feed 1000 1000000 | "$log" "relp://127.0.0.1:$rp" 2> "$dir/log.err" || fail "sluice-log: $(cat "$dir/log.err")"
echo "<13>1 - h plain - - - over TCP" | "$log" --framing octet "syslog://127.0.0.1:$sp" 2> "$dir/log.err" ||
  fail "sluice-log syslog://: $(cat "$dir/log.err")"
lp=$relay ERR=$dir/relay.err stop
lp=$final ERR=$dir/final.err stop
[ "$(grep -c ' line ' "$final_log")" -eq 1000 ] || fail "failover: $(grep -c ' line ' "$final_log") lines"
grep -q '<13>1 - h plain - - - over TCP$' "$final_log" || fail "the --listen sender's line was not forwarded"
ok "a --forward that is down: the next one takes the messages; a --listen sender's line forwarded"
rm -f "$final_log"

# --- the first --forward SIGKILLed mid-stream: the relay goes on to the
# second, sending it what the first had not answered; every line is in one
# of the two files
total=20000
first_log=$dir/first.log
ERR=$dir/first.err start --listen-relp 127.0.0.1:0 --fsync ack "$first_log"
p1=$port first=$lp
start_final
start_relay relay 0 "$p1" --forward "relp://127.0.0.1:$fp" --window $window
rp=$port relay=$lp
send_bg "$rp"
wait_lines "$first_log" 5000
kill -9 "$first"; wait "$first" 2>/dev/null || true
wait_exit0 "$sender" sluice-log "$dir/log.err"
lp=$relay ERR=$dir/relay.err stop
lp=$final ERR=$dir/final.err stop
[ "$(wc -l < "$final_log")" -gt 0 ] || fail "the second --forward got nothing"
cat "$first_log" "$final_log" > "$dir/both.log"
check_all "$dir/both.log" $total 1 $window "the first next hop SIGKILLed" || fail "lost lines in a failover"
ok "the first --forward SIGKILLed mid-stream: the second takes the rest, 0 lost"
rm -f "$final_log" "$first_log"

# --- backpressure: with the next hop stopped (SIGSTOP), a --listen sender,
# which has no window of its own, is held back by the relay (its writable's
# high-water mark, then no more reading, then TCP): the feeder stalls far
# short of its input instead of the relay taking it all into memory. Once
# the next hop goes on, every line arrives.
# Lines of 300 bytes, so that the kernel's socket buffers (up to ~10 MB
# on loopback) hold a small part of them.
total=150000
start_final
ERR=$dir/relay.err start --listen 127.0.0.1:0 --listen-relp 127.0.0.1:0 --forward "relp://127.0.0.1:$fp"
rp=$port relay=$lp
sp=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/relay.err")
kill -STOP "$final"
(python3 - $total "$dir/fed" <<'PY' | "$log" "syslog://127.0.0.1:$sp" 2> "$dir/log.err") &
import sys
n, fed = int(sys.argv[1]), sys.argv[2]
for i in range(0, n, 1000):
    sys.stdout.write("".join("%s line %06d\n" % ("x" * 286, j) for j in range(i, i + 1000)))
    sys.stdout.flush()
    with open(fed, "w") as f:
        f.write("%d\n" % (i + 1000))
PY
sender=$!
pids+=("$sender")
# Stalled: the count unchanged for a second (scaled).
last=-1 stalled=
for _ in $(seq $((120 * scale))); do
  sleep 0.5
  now=$(cat "$dir/fed" 2>/dev/null || echo 0)
  if [ "$now" = "$last" ] && [ "$now" -gt 0 ]; then stalled=$now; break; fi
  [ "$now" = "$last" ] || sleep $((scale - 1))
  last=$now
done
[ -n "$stalled" ] && [ "$stalled" -lt $((total / 2)) ] ||
  fail "the sender was not held back: ${stalled:-never stalled}, $(cat "$dir/fed") of $total lines fed"
echo "  the next hop stopped: the feeder held back at $stalled of $total lines; the relay's RSS $(awk '/VmRSS/ {print $2, $3}' "/proc/$relay/status")"
kill -CONT "$final"
wait_exit0 "$sender" sluice-log "$dir/log.err"
lp=$relay ERR=$dir/relay.err stop
lp=$final ERR=$dir/final.err stop
[ "$(grep -c ' line ' "$final_log")" -eq $total ] || fail "after the next hop went on: $(grep -c ' line ' "$final_log") of $total lines"
ok "a stopped next hop holds a --listen sender back through the relay (memory bounded); then every line arrives"
rm -f "$final_log"

# --- --give-up-after with every next hop down: the relay says so and exits
# 1; its RELP sender was never answered (it keeps the messages)
dead1=$(free_port) dead2=$(free_port)
start_relay relay 0 "$dead1" \
  --forward "relp://127.0.0.1:$dead2" --give-up-after 1s
rp=$port relay=$lp
st=0; seq 10 | "$log" --give-up-after ${scale}s "relp://127.0.0.1:$rp" 2> "$dir/log.err" || st=$?
[ "$st" -eq 1 ] && grep -q "10 of 10 messages not acknowledged" "$dir/log.err" || fail "sluice-log: exit $st: $(cat "$dir/log.err")"
st=0; wait "$relay" || st=$?
[ "$st" -eq 1 ] || fail "the relay gave up: exit $st"
grep -q "^sluice-logd: next hops relp://127.0.0.1:$dead1, relp://127.0.0.1:$dead2: Connection refused$" "$dir/relay.err" &&
  grep -q ": 10 of 10 messages not written$" "$dir/relay.err" || fail "the relay's give-up: $(cat "$dir/relay.err")"
ok "--give-up-after with every next hop down: said, exit 1, nothing answered"

# --- SIGTERM with the next hop away: --grace bounds the wait
start_relay relay 0 "$dead1" --grace 1s
rp=$port relay=$lp
(seq 5 | "$log" --give-up-after $((5 * scale))s "relp://127.0.0.1:$rp" 2> /dev/null || true) &
pids+=($!)
sleep "$scale"  # sluice-log connects and sends its 5 lines (a bound on a start, not a measure)
kill -TERM "$relay"
st=0; wait "$relay" || st=$?
[ "$st" -eq 1 ] || fail "SIGTERM with the next hop away and --grace 1s: exit $st: $(cat "$dir/relay.err")"
grep -q ": 5 of 5 messages not written: the next hop did not answer them within --grace 1s of the signal$" "$dir/relay.err" ||
  fail "SIGTERM, --grace: $(cat "$dir/relay.err")"
ok "SIGTERM with the next hop away: --grace 1s ends the wait, said, exit 1"

# --- --spool DIR: with the next hop away, the relay answers from its spool
# (sluice-log ends, every line acknowledged); SIGKILLed, a relay on the same
# DIR sends it all on once the next hop is there
fp=$(free_port)
start_relay relay 0 "$fp" --spool "$dir/spool" --stats
rp=$port relay=$lp
feed 20000 1000000 | "$log" --stats "relp://127.0.0.1:$rp" 2> "$dir/log.err" || fail "sluice-log into a spooling relay: $(cat "$dir/log.err")"
grep -q "^sluice-log: 20000 lines, 20000 acked" "$dir/log.err" || fail "sluice-log: $(cat "$dir/log.err")"
kill -9 "$relay"; wait "$relay" 2>/dev/null || true
start_final "$fp"
start_relay relay 0 "$fp" --spool "$dir/spool" --stats
relay=$lp
wait_lines "$final_log" 20000
lp=$relay ERR=$dir/relay.err stop
grep -q "20000 acked and 0 refused of earlier runs" "$dir/relay.err" || fail "the spool's counts: $(tail -1 "$dir/relay.err")"
lp=$final ERR=$dir/final.err stop
check_all "$final_log" 20000 0 0 "relay --spool, SIGKILLed before the next hop came" || fail "lost lines through a spooling relay"
ok "--spool: answered from the spool while the next hop is away; a relay SIGKILLed, then one on the same DIR: 0 lost"
rm -f "$final_log"
bad --listen-relp 127.0.0.1:0 --spool "$dir/spool" "$dir/out.log"
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 --spool-max 1M

# --- rsyslog's omrelp as the sender into a relay, which is SIGKILLed and
# restarted mid-stream: every message in the final's FILE, as rsyslog sent
# it; the duplicates within omrelp's window and rsyslog's batch (see
# logd_relp_test.sh).
if have_omrelp; then
  total=20000 rwindow=512 batch=128
  start_final
  start_relay relay 0 "$fp" --window $window
  rp=$port relay=$lp
  start_omrelp "$rp" $rwindow $batch
  send_octet "$tport" $total relp 200 &
  feeder=$!
  pids+=("$feeder")
  wait_lines "$final_log" $((total / 3))
  kill -9 "$relay"; wait "$relay" 2>/dev/null || true
  echo "  SIGKILL of the relay at $(wc -l < "$final_log") lines"
  start_relay relay "$rp" "$fp" --window $window
  relay=$lp
  wait "$feeder" || fail "the feeder failed"
  wait_lines "$final_log" $total
  sleep 0.5  # duplicates, if any, come with the last of them
  check_all "$final_log" $total 0 $((rwindow + batch)) "omrelp -> relay, SIGKILLed once" ||
    fail "omrelp through a relay: $(tail -3 "$dir/rs.err")"
  kill -TERM "$rs"; wait "$rs" || true
  lp=$relay ERR=$dir/relay.err stop
  lp=$final ERR=$dir/final.err stop
  ok "rsyslog omrelp -> relay (SIGKILLed once) -> sluice-logd --fsync ack: 0 lost, duplicates within omrelp's window"
  rm -f "$final_log"
else
  echo "skip: rsyslog omrelp (apt-get install rsyslog rsyslog-relp)"
fi

echo "relay: $pass passed"
