#!/usr/bin/env bash
# sluice-log relp:// as a user meets it, on loopback, into a real rsyslogd
# with imrelp (main queue direct: a message is in omfile's file before
# imrelp answers it): every line acknowledged, once, in order; rsyslogd
# SIGKILLed and restarted twice mid-stream: 0 lost, the duplicates counted
# (--stats resent) and within the window; the receiver gone for good:
# --give-up-after, exit 1 with the count of unacknowledged lines; usage.
# Skipped, saying so, without rsyslog-relp. Every wait is bounded.
#
#   log_relp_test.sh SLUICE_LOG
set -uo pipefail
slog=$(realpath "${1:?usage: log_relp_test.sh SLUICE_LOG}")
scale=${SLUICE_TIME_SCALE:-1}

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# The message of each line of rsyslog's file (after the RFC 5424 header).
msgs() { cut -d' ' -f8- "$1"; }
# A JSON field of sluice-log's --stats --json line in FILE.
stat() { python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }
# Waits (up to 30 s, scaled) until FILE has N lines.
wait_lines() {
  for _ in $(seq $((600 * scale))); do
    [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
    sleep 0.05
  done
  return 1
}
# Waits (up to 30 s, scaled) for PID to exit and returns its status; one
# still there is killed, and the status is 137.
wait_exit() {
  for _ in $(seq $((600 * scale))); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$1" 2>/dev/null && echo "  (pid $1 did not exit: killed)"
  wait "$1"
}

# ---- usage (no receiver needed)

"$slog" --window 0 relp://127.0.0.1:2514 </dev/null 2>"$tmp/err"
check "--window 0: exit 2 (got $?)" test $? -eq 2
check "--window 0: the reason" grep -q -- "--window wants a whole number of messages from 1 to 1000000, got '0'" "$tmp/err"
"$slog" --window 8 syslog://127.0.0.1:514 </dev/null 2>"$tmp/err"
check "--window with syslog://: exit 2 (got $?)" test $? -eq 2
check "--window with syslog://: named" grep -q -- "--window applies to relp:// and relp+tls:// only" "$tmp/err"
"$slog" --framing lf relp://127.0.0.1:2514 </dev/null 2>"$tmp/err"
check "--framing with relp://: exit 2 (got $?)" test $? -eq 2
"$slog" relp://-nohost:2514 </dev/null 2>"$tmp/err"
check "relp:// with a HOST that is no name nor IP address: exit 2 (got $?)" test $? -eq 2
check "relp:// with a bad HOST: the reason" grep -q "relp:// wants a host name or an IP address" "$tmp/err"

# ---- a peer that accepts and closes at once: the give-up says so, not
# "Connection timed out"
closer_port=$(free_port)
timeout $((30 * scale)) python3 - "$closer_port" "$tmp/closer.up" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
open(sys.argv[2], "w").close()
s.settimeout(1)
end = time.monotonic() + 25
while time.monotonic() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.close()
PY
bg_pids+=($!)
for _ in $(seq $((200 * scale))); do [ -e "$tmp/closer.up" ] && break; sleep 0.05; done
seq 3 | timeout $((30 * scale)) "$slog" --give-up-after 1s "relp://127.0.0.1:$closer_port" 2>"$tmp/err"
check "relp:// into a peer that accepts and closes: exit 1 (got $?)" test $? -eq 1
check "relp:// into a peer that accepts and closes: the reason" \
  grep -q "RELP: the receiver closed the connection before answering the open" "$tmp/err"
check "relp:// into a peer that accepts and closes: not a timeout" \
  bash -c "! grep -q 'timed out' '$tmp/err'"

if [ ! -x /usr/sbin/rsyslogd ] || { [ ! -e /usr/lib/x86_64-linux-gnu/rsyslog/imrelp.so ] && [ ! -e /usr/lib/rsyslog/imrelp.so ]; }; then
  echo "SKIP rsyslogd with imrelp: not installed (apt-get install rsyslog rsyslog-relp)"
  echo "log_relp: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

port=$(free_port)
cat >"$tmp/rsyslog.conf" <<CONF
global(workDirectory="$tmp" parser.escapeControlCharactersOnReceive="off")
main_queue(queue.type="Direct")
module(load="imrelp")
template(name="raw" type="string" string="%rawmsg%\n")
ruleset(name="r") { action(type="omfile" file="$tmp/rsyslog.log" template="raw") }
input(type="imrelp" address="127.0.0.1" port="$port" ruleset="r")
CONF
# rsyslogd (8.2302) may send SIGTERM to its parent: ignored while it runs.
trap '' TERM
rp=""
start_rsyslog() {
  rm -f "$tmp/rsyslog.pid"
  # Without fd 4, the write end of sluice-log's input, which rsyslogd would
  # otherwise hold open.
  (trap - TERM; exec 4>&-; exec /usr/sbin/rsyslogd -n -f "$tmp/rsyslog.conf" -i "$tmp/rsyslog.pid") 2>>"$tmp/rsyslogd.err" &
  rp=$!
  bg_pids+=("$rp")
  for _ in $(seq $((400 * scale))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "rsyslogd did not start: $(cat "$tmp/rsyslogd.err")"
  return 1
}
kill_rsyslog() {
  kill -9 "$rp"
  wait "$rp" 2>/dev/null
}

# ---- every line acknowledged, once, in order

start_rsyslog
seq 1 20000 | sed 's/$/ to rsyslog over RELP/' >"$tmp/lines"
timeout $((60 * scale)) "$slog" --app-name app --stats --json "relp://127.0.0.1:$port" <"$tmp/lines" 2>"$tmp/err"
check "20000 lines: exit 0 (got $?)" test $? -eq 0
check "20000 lines: all acknowledged, none resent or dropped" \
  same "$(stat "$tmp/err" acked) $(stat "$tmp/err" resent) $(stat "$tmp/err" dropped)" "20000 0 0"
# Acknowledged means in the file (direct queue): no waiting here.
check "20000 lines: in rsyslog's file, once each, in order" cmp -s <(msgs "$tmp/rsyslog.log") "$tmp/lines"

# ---- rsyslogd SIGKILLed and restarted twice mid-stream

: >"$tmp/rsyslog.log"
n=200000
window=512
seq 1 $n | sed 's/$/ mid-stream/' >"$tmp/lines"
mkfifo "$tmp/fifo"
"$slog" --app-name app --stats --json --window $window "relp://127.0.0.1:$port" <"$tmp/fifo" 2>"$tmp/err" &
sp=$!
bg_pids+=("$sp")
exec 4>"$tmp/fifo"
# The input comes in tenths, so that it is still flowing at each kill.
kills=0
for i in $(seq 0 9); do
  sed -n "$((i * n / 10 + 1)),$(((i + 1) * n / 10))p" "$tmp/lines" >&4
  if [ "$i" = 3 ] || [ "$i" = 6 ]; then
    # Mid-stream: rsyslog has written some of this tenth, not all of it.
    for _ in $(seq $((3000 * scale))); do
      [ "$(wc -l <"$tmp/rsyslog.log")" -ge $((i * n / 10 + 2000)) ] && break
      sleep 0.01
    done
    kill_rsyslog
    kills=$((kills + 1))
    sleep 0.2
    start_rsyslog
  fi
done
exec 4>&-
wait_exit "$sp"
status=$?
kill -TERM "$rp"
wait "$rp"
trap - TERM
check "two SIGKILLs: exit 0 (got $status)" test $status -eq 0
check "two SIGKILLs: $kills kills" test $kills -eq 2
acked=$(stat "$tmp/err" acked) resent=$(stat "$tmp/err" resent) dropped=$(stat "$tmp/err" dropped)
reconnects=$(stat "$tmp/err" reconnects)
check "two SIGKILLs: every line acknowledged, none dropped" same "$acked $dropped" "$n 0"
check "two SIGKILLs: reconnects counted (got $reconnects)" test "$reconnects" -ge 2
check "two SIGKILLs: resent within twice the window (got $resent)" test "$resent" -le $((2 * window))
# In rsyslog's file: every line, first seen in order; the rest duplicates,
# no more than were resent.
python3 - "$tmp/rsyslog.log" $n "$resent" >"$tmp/dups" <<'PY'
import sys
path, n, resent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen, nxt, dups = set(), 1, 0
for line in open(path):
    body = line.rstrip("\n").split(" ", 7)[7]
    i = int(body.split(" ")[0])
    assert body == "%d mid-stream" % i, body
    if i in seen:
        dups += 1
        continue
    assert i == nxt, ("out of order", i, nxt)
    seen.add(i)
    nxt += 1
assert nxt == n + 1, ("lost", n + 1 - nxt)
assert dups <= resent, (dups, resent)
print(dups)
PY
order=$?
echo "  two SIGKILLs: $resent resent, $(cat "$tmp/dups") duplicates in rsyslog's file, $reconnects reconnects"
check "two SIGKILLs: 0 lost, in order, duplicates ($(cat "$tmp/dups")) no more than resent ($resent)" test $order -eq 0

# ---- the receiver gone for good: --give-up-after

: >"$tmp/rsyslog.log"
trap '' TERM
start_rsyslog
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$slog" --app-name app --stats --json --give-up-after 1s "relp://127.0.0.1:$port" <"$tmp/fifo" 2>"$tmp/err" &
sp=$!
bg_pids+=("$sp")
exec 4>"$tmp/fifo"
seq 1 3000 >&4
wait_lines "$tmp/rsyslog.log" 3000
sleep 0.2
kill_rsyslog
seq 3001 5000 >&4
exec 4>&-
wait_exit "$sp"
status=$?
trap - TERM
acked=$(stat "$tmp/err" acked) dropped=$(stat "$tmp/err" dropped)
check "gone for good: exit 1 (got $status)" test $status -eq 1
check "gone for good: acked + dropped is every line, at least the 2000 after the kill dropped ($acked + $dropped)" \
  test $((acked + dropped)) -eq 5000 -a "$dropped" -ge 2000
check "gone for good: the unacknowledged counted on stderr" \
  grep -q "sluice-log: relp://127.0.0.1:$port: $dropped of 5000 messages not acknowledged: Connection refused" "$tmp/err"

echo "log_relp: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
