#!/usr/bin/env bash
# sluice-log's network destinations as a user meets them, on loopback only:
# syslog:// and syslog+unix: into a real sluice-logd (every line arrives
# once, whole, in order; the header options), SIGTERM under load (every line
# sluice-log read reached sluice-logd, the unfinished last one too), a
# receiver that is down at start (standard input is held back, then all
# arrives), the receiver away at SIGTERM (--grace, then the drops counted,
# exit 1), --give-up-after, bad usage (exit 2), kafka:// on librdkafka's mock
# cluster (when built with Kafka), and a real rsyslogd (when installed).
# Every wait is bounded.
#
#   log_dest_test.sh SLUICE_LOG SLUICE_LOGD kafka|nokafka
set -uo pipefail
slog=$(realpath "${1:?usage: log_dest_test.sh SLUICE_LOG SLUICE_LOGD kafka|nokafka}")
logd=$(realpath "${2:?}")
kafka=${3:?}

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts sluice-logd with "$@" (its stderr in $tmp/logd.err); sets $lp and,
# for a TCP address, $port. Waits (up to 30 s) for every 'listening on'.
start_logd() {
  : >"$tmp/logd.err"
  "$logd" "$@" 2>"$tmp/logd.err" &
  lp=$!
  bg_pids+=("$lp")
  local want
  want=$(printf '%s\n' "$@" | grep -c -- '^--listen$')
  for _ in $(seq 600); do
    [ "$(grep -c 'listening on' "$tmp/logd.err")" -ge "$want" ] && break
    sleep 0.05
  done
  port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/logd.err" | head -1)
}
stop_logd() {
  kill -TERM "$lp"
  wait "$lp"
}

# Waits (up to 30 s) for PID to exit and returns its status; one that is
# still there is killed, and the status is 137.
wait_exit() {
  for _ in $(seq 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$1" 2>/dev/null && echo "  (pid $1 did not exit: killed)"
  wait "$1"
}

# How far PID has read its standard input, a regular file (0 until then).
stdin_pos() { sed -n 's/^pos:[[:space:]]*//p' "/proc/$1/fdinfo/0" 2>/dev/null || echo 0; }

# Waits (up to 30 s) until FILE has N lines.
wait_lines() {
  for _ in $(seq 600); do
    [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] && return
    sleep 0.05
  done
}

# The MSG of each RFC 5424 line sluice-logd wrote: what follows
# '<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD '.
msgs() { cut -d' ' -f8- "$1"; }

# A JSON field of sluice-log's --stats --json line in FILE.
stat() { python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }

# ---- usage

"$slog" --help >"$tmp/out" 2>"$tmp/err"
check "--help exits 0" test $? -eq 0
for word in 'syslog://HOST:PORT' 'syslog+unix:PATH' 'kafka://BROKER' '--framing' '--facility' '--severity' \
    '--app-name' '--hostname' '--give-up-after' '--grace' '-X KEY=VALUE' '"delivered"' '"reconnects"' \
    '--max-message SIZE' '"maybe_lost"' '"truncated"' 'Lost connections'; do
  check "--help documents $word" grep -qF -- "$word" "$tmp/out"
done

mkdir "$tmp/usage"
for args in "--max-size 1M syslog://127.0.0.1:514" "--keep 3 syslog+unix:/x" "--fsync end kafka://k:9092/t" \
    "--framing lf f" "--facility user f" "--app-name a f" "--give-up-after 1s f" "--grace 1s f" "-X acks=1 f" \
    "-X acks=1 syslog://127.0.0.1:514" "syslog://a/b:514" "syslog://127.0.0.1" "syslog://127.0.0.1:0" \
    "syslog://127.0.0.1:65536" "syslog://[::1:514" "syslog:127.0.0.1:514" "syslog+unix:" "kafka://k:9092" \
    "kafka:///t" "kafka://k:9092/" "kafka://k:9092/a/b" "kafka:k/t" "--framing octets syslog://127.0.0.1:514" \
    "--facility local8 syslog://127.0.0.1:514" "--severity 8 syslog://127.0.0.1:514" \
    "--give-up-after 0 syslog://127.0.0.1:514" "--grace soon syslog://127.0.0.1:514" "-X acks kafka://k:9092/t" \
    "-X =1 kafka://k:9092/t" "syslog://127.0.0.1:514 f" "--max-message 64K f" "--max-message 0 syslog://127.0.0.1:514" \
    "--max-message 2G syslog://127.0.0.1:514" "--max-message 1X syslog://127.0.0.1:514"; do
  # shellcheck disable=SC2086
  (cd "$tmp/usage" && "$slog" $args </dev/null >"$tmp/out" 2>"$tmp/err")
  status=$?
  check "'$args' exits 2 (got $status)" test $status -eq 2
  check "'$args' says why in one line, then where to look" \
    same "$(grep -c '^sluice-log: ' "$tmp/err"):$(grep -c -- '--help' "$tmp/err")" "1:1"
  check "'$args' creates no file" same "$(ls -A "$tmp/usage")" ""
done
"$slog" --max-size 1M syslog://127.0.0.1:514 </dev/null 2>"$tmp/err"
check "a FILE option with a network DEST is named" grep -q -- "--max-size applies to a FILE only" "$tmp/err"
"$slog" "syslog://a b:514" </dev/null 2>"$tmp/err"
check "a HOST that is no name nor IP address is refused, saying why" grep -q "wants a host name or an IP address" "$tmp/err"
echo hi | timeout 30 "$slog" --give-up-after 1s syslog://sluice-test-$$.invalid:514 >"$tmp/out" 2>"$tmp/err"
status=$?
check "a host name is looked up: one that does not resolve gives up, exit 1 (got $status)" test $status -eq 1
check "a host name that does not resolve: the resolver's answer is said" grep -q "getaddrinfo ENOTFOUND sluice-test-$$.invalid" "$tmp/err"
"$slog" kafka:k/t </dev/null 2>"$tmp/err"
check "a near-miss DEST points at ./ for a file of that name" grep -qF "./kafka:k/t" "$tmp/err"

if [ "$kafka" = kafka ]; then
  "$slog" -X no.such.property=1 kafka://127.0.0.1:1/t </dev/null 2>"$tmp/err"
  check "an unknown -X property exits 2 (got $?)" test $? -eq 2
  check "an unknown -X property: librdkafka's reason" grep -q 'No such configuration property: "no.such.property"' "$tmp/err"
else
  "$slog" kafka://127.0.0.1:9092/t </dev/null 2>"$tmp/err"
  check "kafka:// without Kafka built exits 2 (got $?)" test $? -eq 2
  check "kafka:// without Kafka built says so" grep -q "built without it" "$tmp/err"
fi

# ---- syslog:// into sluice-logd: every line once, whole, in order

seq 1 50000 | sed 's/$/ a line of the log/' >"$tmp/lines"
start_logd --listen 127.0.0.1:0 "$tmp/tcp.log"
timeout 60 "$slog" --stats --json "syslog://127.0.0.1:$port" <"$tmp/lines" 2>"$tmp/err"
check "syslog://: exit 0 (got $?)" test $? -eq 0
wait_lines "$tmp/tcp.log" 50000
stop_logd
check "syslog://: the 50000 lines arrive, once each, in order" cmp -s <(msgs "$tmp/tcp.log") "$tmp/lines"
check "syslog://: --json says 50000 sent, none dropped" \
  same "$(stat "$tmp/err" lines) $(stat "$tmp/err" sent) $(stat "$tmp/err" dropped) $(stat "$tmp/err" reconnects)" "50000 50000 0 0"
check "syslog://: the default header: user.info, no APP-NAME" \
  grep -qE '^<14>1 [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z [^ ]+ - [0-9]+ - - 1 a line of the log$' "$tmp/tcp.log"

# ---- syslog+unix: with LF framing and the header options; --timestamp

start_logd --listen "unix:$tmp/logd.sock" "$tmp/unix.log"
printf 'first\nsecond\r\nwith\ttab\nlast, no newline' |
  timeout 60 "$slog" --framing lf --facility local0 --severity warning --app-name web --hostname h1 \
    --timestamp --stats "syslog+unix:$tmp/logd.sock" 2>"$tmp/err"
check "syslog+unix:: exit 0 (got $?)" test $? -eq 0
check "syslog+unix:: --stats" \
  same "$(cat "$tmp/err")" "sluice-log: 4 lines, 4 sent, 0 dropped, 0 reconnects, 0 maybe lost, 0 truncated"
wait_lines "$tmp/unix.log" 4
stop_logd
check "syslog+unix:: the header options (local0.warning = 132, HOSTNAME, APP-NAME)" \
  same "$(cut -d' ' -f1,3,4 "$tmp/unix.log" | sort -u)" "<132>1 h1 web"
check "syslog+unix:: the lines in order, stamped, CRLF and the last line whole" \
  same "$(msgs "$tmp/unix.log" | sed -E 's/^[0-9T:.-]{26}Z //')" "$(printf 'first\nsecond\nwith\\ttab\nlast, no newline')"
check "syslog+unix:: --timestamp stamps the message" \
  test "$(msgs "$tmp/unix.log" | grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z ')" -eq 4

# ---- SIGTERM under load: every line sluice-log read reached sluice-logd,
# the unfinished last one included, in order; exit 0.

cat >"$tmp/gen.py" <<'PY'
import os, sys
# Numbered lines as fast as the pipe takes them, in writes that end
# mid-line, until the reader goes away.
i, buf = 0, bytearray()
try:
    while True:
        while len(buf) < 50000:
            buf += b"%d load line\n" % i
            i += 1
        n = os.write(1, buf[:40001])
        del buf[:n]
except (BrokenPipeError, OSError):
    pass
PY
start_logd --listen 127.0.0.1:0 "$tmp/term.log"
python3 "$tmp/gen.py" 2>/dev/null | "$slog" --stats --json "syslog://127.0.0.1:$port" 2>"$tmp/err" &
sp=$!
bg_pids+=("$sp")
wait_lines "$tmp/term.log" 20000
kill -TERM "$sp"
wait_exit "$sp"
status=$?
check "SIGTERM under load: exit 0 (got $status)" test $status -eq 0
read_lines=$(stat "$tmp/err" lines)
check "SIGTERM under load: --json says every line read was sent" same "$(stat "$tmp/err" sent)" "$read_lines"
wait_lines "$tmp/term.log" "$read_lines"
stop_logd
check "SIGTERM under load: sluice-logd has every line read ($read_lines)" \
  same "$(wc -l <"$tmp/term.log")" "$read_lines"
check "SIGTERM under load: in order, whole; the last may be the unfinished line" python3 - "$tmp/term.log" <<'PY'
import sys
msgs = [l.rstrip("\n").split(" ", 7)[7] for l in open(sys.argv[1])]
for i, m in enumerate(msgs[:-1]):
    assert m == "%d load line" % i, (i, m)
last = "%d load line" % (len(msgs) - 1)
assert last.startswith(msgs[-1]) and msgs[-1], msgs[-1]
PY

# ---- a receiver down at start: standard input is held back (the writer
# stays blocked), then everything arrives once it is up.

port=$(free_port)
cat >"$tmp/writer.py" <<'PY'
import sys
# 2 MB of lines: more than the pipe and sluice-log's buffers can hold.
for i in range(150000):
    sys.stdout.buffer.write(b"%d held back\n" % i)
sys.stdout.flush()
open(sys.argv[1], "wb").close()
PY
rm -f "$tmp/writer.done"
python3 "$tmp/writer.py" "$tmp/writer.done" 2>/dev/null | "$slog" --stats --json "syslog://127.0.0.1:$port" 2>"$tmp/err" &
sp=$!
bg_pids+=("$sp")
sleep 1  # sluice-log connects and is refused, meanwhile (not an assertion)
check "receiver down: the writer is held back (its input is not read)" test ! -e "$tmp/writer.done"
check "receiver down: sluice-log waits" kill -0 "$sp"
start_logd --listen "127.0.0.1:$port" "$tmp/late.log"
wait_exit "$sp"
status=$?
check "receiver up later: exit 0 (got $status)" test $status -eq 0
check "receiver up later: all 150000 sent" same "$(stat "$tmp/err" sent) $(stat "$tmp/err" dropped)" "150000 0"
wait_lines "$tmp/late.log" 150000
stop_logd
check "receiver up later: every line arrived once, in order" cmp -s <(msgs "$tmp/late.log") <(seq 0 149999 | sed 's/$/ held back/')

# ---- the receiver away at SIGTERM: --grace, then the rest is dropped,
# counted, and the exit is 1; a second signal ends the wait.

# sluice-log "$@" reads N lines from an input that stays open (a FIFO held
# by fd 7), as a service's would, then gets SIGTERM; sets $status.
term_with_input_open() {
  local n=$1
  shift
  rm -f "$tmp/in"
  mkfifo "$tmp/in"
  "$slog" "$@" <"$tmp/in" 2>"$tmp/err" &
  sp=$!
  bg_pids+=("$sp")
  exec 7>"$tmp/in"
  seq 1 "$n" >&7
  sleep 0.5  # time to read them (not an assertion)
  kill -TERM "$sp"
  wait_exit "$sp"
  status=$?
  exec 7>&-
}

port=$(free_port)
term_with_input_open 10 --stats --json --grace 1s "syslog://127.0.0.1:$port"
check "away at SIGTERM: exit 1 after --grace (got $status)" test $status -eq 1
check "away at SIGTERM: the drops are reported with their count" \
  grep -qx "sluice-log: syslog://127.0.0.1:$port: 10 of 10 messages not sent: the receiver did not take them within --grace 1s of the signal" "$tmp/err"
check "away at SIGTERM: --json counts them" same "$(stat "$tmp/err" sent) $(stat "$tmp/err" dropped)" "0 10"

# Many lines waiting, past the high-water mark, input paused (standard
# input a regular file: its offset shows what was read): a second SIGINT
# ends a long --grace at once, and every line read is counted.
seq 0 149999 | sed 's/$/ held back/' >"$tmp/held"
"$slog" --stats --json --grace 10m "syslog://127.0.0.1:$port" <"$tmp/held" 2>"$tmp/err" &
sp=$!
bg_pids+=("$sp")
for _ in $(seq 600); do [ "$(stdin_pos "$sp")" -gt 0 ] && break; sleep 0.05; done
sleep 0.5  # time to read more, if it would (not an assertion)
pos=$(stdin_pos "$sp")
check "receiver away: standard input is held back ($pos of $(wc -c <"$tmp/held") bytes read)" \
  test "$pos" -gt 0 -a "$pos" -lt 1000000
kill -INT "$sp"
# Again until it ends: a second signal that comes before the first was
# handled may be merged with it.
for _ in $(seq 150); do sleep 0.2; kill -INT "$sp" 2>/dev/null || break; done
wait_exit "$sp"
status=$?
check "a second SIGINT ends --grace: exit 1 (got $status)" test $status -eq 1
n=$(stat "$tmp/err" lines)
check "a second SIGINT: every line read is counted as dropped ($n)" \
  same "$(stat "$tmp/err" sent) $(stat "$tmp/err" dropped)" "0 $n"
check "a second SIGINT: says why" grep -q "of $n messages not sent: a second signal ended the wait" "$tmp/err"
check "a second SIGINT: the lines counted are those read" test "$n" -gt 0 -a "$n" -le 150000

# ---- --give-up-after: the receiver never comes

seq 1 3000 | timeout 60 "$slog" --give-up-after 300ms "syslog://127.0.0.1:$port" 2>"$tmp/err"
check "--give-up-after: exit 1 (got $?)" test $? -eq 1
check "--give-up-after: the count and the connect error" \
  grep -qx "sluice-log: syslog://127.0.0.1:$port: 3000 of 3000 messages not sent: Connection refused" "$tmp/err"

# ---- a receiver that refuses a long message (issue 19, item 3): it closes
# the connection, what was in flight after it is lost, and sluice-log says
# so and exits 1, every run; with the default --max-message the long line
# is sent cut to 64 KiB instead, and everything arrives.

# An octet-counting receiver with a 64 KiB limit: a longer frame closes the
# connection at once, unread bytes and all (as sluice-logd's did); it takes
# the next connection. The messages it took go to OUT, one a line.
cat >"$tmp/refuser.py" <<'PY'
import socket, sys
out, portfile = open(sys.argv[1], "wb"), sys.argv[2]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
open(portfile, "w").write("%d\n" % srv.getsockname()[1])
srv.settimeout(60)
conns = 0
while True:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        break
    conns += 1
    c.settimeout(10 if conns == 1 else 3)
    buf = b""
    try:
        while True:
            sp = buf.find(b" ")
            if sp > 0:
                n = int(buf[:sp])
                if n > 65536:
                    break  # refused: closed with the rest unread
                if len(buf) >= sp + 1 + n:
                    out.write(buf[sp + 1:sp + 1 + n].split(b" ", 7)[7] + b"\n")
                    out.flush()
                    buf = buf[sp + 1 + n:]
                    continue
            b = c.recv(4096)
            if not b:
                break
            buf += b
    except socket.timeout:
        pass
    c.close()
    if conns > 1:
        srv.settimeout(3)
PY
python3 -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 2001):
        f.write("line %d\n" % i)
        if i == 1000:
            f.write("x" * 100000 + "\n")
' "$tmp/long.in"
refused_run() {  # refused_run TAG SLUICE-LOG-OPTION...: sets $status, $rport; stderr in $tmp/ref.TAG.err
  local tag=$1
  shift
  rm -f "$tmp/rport"
  python3 "$tmp/refuser.py" "$tmp/ref.$tag.out" "$tmp/rport" &
  local rp=$!
  bg_pids+=("$rp")
  for _ in $(seq 600); do [ -s "$tmp/rport" ] && break; sleep 0.05; done
  rport=$(cat "$tmp/rport")
  timeout 60 "$slog" --stats --json "$@" "syslog://127.0.0.1:$rport" <"$tmp/long.in" 2>"$tmp/ref.$tag.err"
  status=$?
  kill "$rp" 2>/dev/null  # sluice-log is done: so is what it sent
  wait "$rp" 2>/dev/null
}
ok_runs=0
for run in $(seq 10); do
  refused_run "$run" --max-message 1M
  e="$tmp/ref.$run.err"
  if [ $status -eq 1 ] &&
      grep -qE "^sluice-log: syslog://127.0.0.1:$rport: the receiver (reset|closed) the connection.* with up to [0-9]+ messages in flight: they may be lost$" "$e" &&
      grep -qE "^sluice-log: syslog://127.0.0.1:$rport: up to [1-9][0-9]* of the 2001 messages sent may be lost: the receiver broke [1-9][0-9]* connections? with messages in flight$" "$e" &&
      [ "$(stat "$e" maybe_lost)" -ge $((2001 - $(wc -l <"$tmp/ref.$run.out"))) ] &&
      [ "$(stat "$e" sent)" = 2001 ]; then
    ok_runs=$((ok_runs + 1))
  else
    echo "  run $run: exit $status, $(wc -l <"$tmp/ref.$run.out") lines received:"; sed 's/^/    /' "$e"
  fi
done
check "a refused long message: exit 1, the break reported, the loss counted (at least what was lost), 10 of 10 runs" \
  same "$ok_runs" 10
check "a refused long message: the receiver lost lines (the test broke a connection)" \
  test "$(wc -l <"$tmp/ref.1.out")" -lt 2001

refused_run default
e="$tmp/ref.default.err"
check "default --max-message 64K: the long line is cut, everything arrives, exit 0 (got $status)" test $status -eq 0
check "default --max-message 64K: 2001 messages received" same "$(wc -l <"$tmp/ref.default.out")" 2001
check "default --max-message 64K: the long line cut so that the message is 65536 bytes" python3 -c '
import sys
m = open(sys.argv[1], "rb").read().split(b"\n")[1000]
assert m == b"x" * len(m) and 65000 < len(m) < 65536, len(m)
' "$tmp/ref.default.out"
check "default --max-message 64K: counted, nothing lost" \
  same "$(stat "$e" truncated) $(stat "$e" maybe_lost) $(stat "$e" sent)" "1 0 2001"
check "default --max-message 64K: one note" \
  same "$(grep -c "was sent truncated" "$e")" 1
python3 -c 'import sys; sys.stdout.write("\u00e9" * 1000 + "\n")' >"$tmp/long.in"
# Two limits of either parity: one of them falls inside a character.
for max in 1001 1002; do
  refused_run utf8 --max-message $max
  check "--max-message $max: a cut never splits a UTF-8 character, and the message fits" python3 -c '
import sys
m = open(sys.argv[1], "rb").read().split(b"\n")[0]
t = m.decode("utf-8")
assert t == "\u00e9" * len(t) and 0 < len(m) < int(sys.argv[2]), len(m)
' "$tmp/ref.utf8.out" $max
done

# ---- sluice-logd never follows a symbolic link (issue 19, item 11): one
# named at start is refused; one swapped in for FILE (mv FILE x; ln -s
# TARGET FILE) is refused at the next message's rotation check (with
# --max-size) or at SIGHUP, and the target (a file of the daemon's user)
# gets no sender's bytes.
mkdir "$tmp/sym"
printf 'precious\n' >"$tmp/sym/target"
ln -s target "$tmp/sym/link.log"
timeout 60 "$logd" --listen 127.0.0.1:0 "$tmp/sym/link.log" 2>"$tmp/sym.err"
check "sluice-logd, a symlink FILE at start: exit 1 (got $?)" test $? -eq 1
check "sluice-logd, a symlink FILE at start: refused, saying why" \
  grep -qx "sluice-logd: $tmp/sym/link.log: a symbolic link: refusing to follow it (ELOOP)" "$tmp/sym.err"
for how in max-size sighup; do
  rm -f "$tmp/sym/app.log" "$tmp/sym/app.moved"
  opts=()
  [ $how = max-size ] && opts=(--max-size 1M)
  start_logd --listen 127.0.0.1:0 "${opts[@]}" "$tmp/sym/app.log"
  echo before | timeout 60 "$slog" "syslog://127.0.0.1:$port" 2>/dev/null
  wait_lines "$tmp/sym/app.log" 1
  mv "$tmp/sym/app.log" "$tmp/sym/app.moved"
  ln -s target "$tmp/sym/app.log"
  # SIGHUP: the reopen comes before or after the next message; either way
  # the path is opened again.
  [ $how = sighup ] && kill -HUP "$lp"
  echo "ssh-ed25519 AAAA attacker" | timeout 60 "$slog" --give-up-after 5s "syslog://127.0.0.1:$port" 2>/dev/null
  for _ in $(seq 600); do
    grep -q "refusing to follow" "$tmp/logd.err" && break
    grep -q attacker "$tmp/sym/target" "$tmp/sym/app.moved" && break
    sleep 0.05
  done
  kill -TERM "$lp" 2>/dev/null
  wait_exit "$lp" >/dev/null
  check "sluice-logd, a symlink swapped in ($how): the target is untouched" same "$(cat "$tmp/sym/target")" precious
  check "sluice-logd, a symlink swapped in ($how): refused, saying why" \
    grep -qx "sluice-logd: $tmp/sym/app.log: a symbolic link: refusing to follow it (ELOOP)" "$tmp/logd.err"
  check "sluice-logd, a symlink swapped in ($how): still a symlink" test -L "$tmp/sym/app.log"
done

# ---- kafka:// on librdkafka's mock cluster

if [ "$kafka" = kafka ]; then
  mock=(-X test.mock.num.brokers=1 -X log_level=3)
  timeout 120 "$slog" "${mock[@]}" --stats --json kafka://127.0.0.1:9092/logs <"$tmp/lines" 2>"$tmp/err"
  check "kafka://: exit 0 (got $?)" test $? -eq 0
  check "kafka://: --json: every line delivered" \
    same "$(stat "$tmp/err" lines) $(stat "$tmp/err" delivered) $(stat "$tmp/err" failed)" "50000 50000 0"
  # A small librdkafka queue: write() false drives the backpressure.
  timeout 120 "$slog" "${mock[@]}" -X queue.buffering.max.messages=100 --stats kafka://127.0.0.1:9092/logs \
    <"$tmp/lines" 2>"$tmp/err"
  check "kafka:// with a full queue: exit 0 (got $?)" test $? -eq 0
  check "kafka:// with a full queue: every line delivered" \
    same "$(tail -1 "$tmp/err")" "sluice-log: 50000 lines, 50000 delivered, 0 failed"
  # No broker at all: SIGTERM, --grace, then the purged messages are counted.
  term_with_input_open 100 -X log_level=0 --stats --json --grace 500ms kafka://127.0.0.1:1/logs
  check "kafka:// broker away at SIGTERM: exit 1 (got $status)" test $status -eq 1
  check "kafka:// broker away at SIGTERM: 100 failed, reported" \
    same "$(stat "$tmp/err" delivered) $(stat "$tmp/err" failed) $(grep -c '100 of 100 messages not sent' "$tmp/err")" "0 100 1"
else
  echo "SKIP kafka://: sluice-log is built without Kafka"
fi

# ---- a real rsyslogd (imptcp -> omfile, each message as received)

if [ -x /usr/sbin/rsyslogd ]; then
  port=$(free_port)
  cat >"$tmp/rsyslog.conf" <<EOF
global(workDirectory="$tmp" parser.escapeControlCharactersOnReceive="off")
module(load="imptcp")
template(name="raw" type="string" string="%rawmsg%\n")
ruleset(name="r") { action(type="omfile" file="$tmp/rsyslog.log" template="raw") }
input(type="imptcp" address="127.0.0.1" port="$port" ruleset="r")
EOF
  # rsyslogd (8.2302) may send SIGTERM to its parent: ignored while it runs.
  trap '' TERM
  (trap - TERM; exec /usr/sbin/rsyslogd -n -f "$tmp/rsyslog.conf" -i "$tmp/rsyslog.pid") 2>"$tmp/rsyslogd.err" &
  rp=$!
  bg_pids+=("$rp")
  seq 1 2000 | sed 's/$/ to rsyslog/' >"$tmp/rlines"
  timeout 60 "$slog" --app-name app "syslog://127.0.0.1:$port" <"$tmp/rlines" 2>"$tmp/err"
  check "rsyslogd: exit 0 (got $?)" test $? -eq 0
  wait_lines "$tmp/rsyslog.log" 2000
  kill -TERM "$rp"
  wait "$rp"
  trap - TERM
  check "rsyslogd: the 2000 lines arrive, once each, in order" cmp -s <(msgs "$tmp/rsyslog.log") "$tmp/rlines"
else
  echo "SKIP rsyslogd: not installed (apt-get install rsyslog)"
fi

# Resources that run out where the streams cannot make an error of them
# (here fds, under `ulimit -n`: the loop, a signal watch, the file, the
# listener) are a message and exit 1, never std::terminate (tool.h's catch).
for n in 4 5 6 7 8; do
  (ulimit -n $n && exec timeout $((3 * ${SLUICE_TIME_SCALE:-1})) "$logd" --listen 127.0.0.1:0 "$tmp/emfile.log") \
    </dev/null >/dev/null 2>"$tmp/emfile.err"
  st=$?
  check "logd under ulimit -n $n: exit 1, or it runs (got $st)" test $st -eq 1 -o $st -eq 124
  check "logd under ulimit -n $n: no terminate" not grep -q terminate "$tmp/emfile.err"
done

# The skeleton every tool shares (check.sh).
check_skeleton sluice-log "$slog"
check_skeleton sluice-logd "$logd"

echo "log_dest: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
