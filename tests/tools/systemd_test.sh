#!/usr/bin/env bash
# sluice-logd and sluice-fanout under systemd (issue 36): sockets passed by
# systemd-socket-activate (what a socket unit does) and served as --listen
# fd:NAME, TCP on 127.0.0.1 and a Unix socket, their messages in FILE; a
# name that was not passed, a socket that does not listen, a datagram
# socket: bad usage naming what was passed; sd_notify (READY=1 after every
# listener, STATUS= with the counts, WATCHDOG=1 every half WATCHDOG_USEC,
# none for another WATCHDOG_PID, STOPPING=1 at SIGTERM) read from a
# NOTIFY_SOCKET this test binds, and nothing without NOTIFY_SOCKET; the unit
# files checked by systemd-analyze verify. Every wait is bounded (scaled by
# SLUICE_TIME_SCALE).
#
#   tests/tools/systemd_test.sh SLUICE_LOGD SLUICE_FANOUT SLUICE_LOG systemd|nosystemd UNIT_DIR UNIT_SOURCE_DIR
set -euo pipefail
logd=$1 fanout=$2 slog=$3 built=$4 unit_dir=$5 unit_src=$6
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"

if [[ $built != systemd ]]; then
  # Without libsystemd: fd:NAME is bad usage, said so.
  st=0; "$logd" --listen fd:syslog "$dir/out.log" 2>"$dir/err" || st=$?
  [[ $st -eq 2 ]] && grep -q "socket activation is not built in" "$dir/err" || fail "fd:NAME without libsystemd: exit $st: $(cat "$dir/err")"
  ok "fd:NAME in a build without libsystemd: bad usage"
  echo "systemd_test: skipped the rest: built without libsystemd (-Dsystemd, libsystemd-dev)"
  exit 0
fi
command -v systemd-socket-activate >/dev/null || { echo "systemd_test: skipped: no systemd-socket-activate (apt-get install systemd)"; exit 77; }

# systemd-socket-activate gives its child PATH, TERM, USER and HOME only, and
# what -E says: the sanitizers' options go through -E too.
pass_env=()
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [[ -n ${!v:-} ]] && pass_env+=(-E "$v=${!v}")
done

logd_extra=()
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# wait_for WHAT FILE PATTERN: until FILE has a line matching PATTERN (bounded).
wait_for() {
  for _ in $(seq $((200 * scale))); do
    grep -qE "$3" "$2" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "$1: no '$3' in $2: $(cat "$2" 2>/dev/null)"
}
# wait_lines FILE N: until FILE has N lines (bounded).
wait_lines() {
  for _ in $(seq $((200 * scale))); do
    [[ $(wc -l <"$1" 2>/dev/null || echo 0) -ge $2 ]] && return 0
    sleep 0.05
  done
  fail "$1 has $(wc -l <"$1" 2>/dev/null || echo no) lines, not $2"
}
# send_tcp PORT MESSAGE...: one connection, each MESSAGE a line (LF framing).
send_tcp() {
  local port=$1
  shift
  python3 - "$port" "$@" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"".join(m.encode() + b"\n" for m in sys.argv[2:]))
s.close()
PY
}
send_unix() {
  local path=$1
  shift
  python3 - "$path" "$@" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(b"".join(m.encode() + b"\n" for m in sys.argv[2:]))
s.close()
PY
}
# wait_exit PID WHAT: its exit status in $st, once it has exited (bounded).
wait_exit() {
  st=0
  for _ in $(seq $((200 * scale))); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$1" 2>/dev/null && fail "$2: pid $1 still runs"
  wait "$1" || st=$?
}
# stop_it PID: SIGTERM, then its exit status in $st (bounded).
stop_it() {
  kill -TERM "$1"
  wait_exit "$1" "after SIGTERM"
}

# --- a TCP socket passed as fd:syslog: what is sent to it lands in FILE
# activate LOG SOCKET-ACTIVATE-OPTION...: sluice-logd --listen fd:syslog LOG
# (and the options in logd_extra)
# under systemd-socket-activate, which binds $port ($sa: its pid, sluice-logd's
# once it execs). It starts sluice-logd at the first connection, which waits
# in the backlog meanwhile, as under a socket unit.
activate() {
  local log=$1
  shift
  : >"$dir/err"  # no line of the last run is read as this one's
  systemd-socket-activate "${pass_env[@]}" "$@" "$logd" "${logd_extra[@]}" --listen fd:syslog "$log" 2>"$dir/err" &
  sa=$!
  pids+=("$sa")
  wait_for "socket-activate" "$dir/err" "Listening on 127.0.0.1:$port"
}
# logged WHAT LOG LINE...: LOG gets the LINEs, in this order, and SIGTERM to $sa
# ends it with exit 0.
logged() {
  local what=$1 log=$2
  shift 2
  wait_lines "$log" $#
  stop_it "$sa"
  [[ $st -eq 0 ]] || fail "$what: exit $st: $(cat "$dir/err")"
  [[ $(cat "$log") == "$(printf '%s\n' "$@")" ]] || fail "$what: $log: $(cat "$log")"
}
port=$(free_port)
activate "$dir/tcp.log" -l "127.0.0.1:$port" --fdname=syslog
send_tcp "$port" "<13>first over the passed socket" "<13>second"
wait_for "sluice-logd on fd:syslog" "$dir/err" "listening on fd:syslog \(127\.0\.0\.1:$port\)"
send_tcp "$port" "<13>third"
logged "sluice-logd on fd:syslog" "$dir/tcp.log" "<13>first over the passed socket" "<13>second" "<13>third"
ok "a TCP socket passed as fd:syslog: every message in FILE, exit 0 at SIGTERM"

# --- a Unix socket, and two sockets under one name (a socket unit with two
# ListenStream=): both served
port=$(free_port)
activate "$dir/unix.log" -l "$dir/logd.sock" -l "127.0.0.1:$port" --fdname=syslog:syslog
send_unix "$dir/logd.sock" "<13>over the Unix socket"
wait_for "sluice-logd on a Unix fd:syslog" "$dir/err" "listening on fd:syslog \(unix:$dir/logd.sock\)"
wait_for "sluice-logd on a TCP fd:syslog" "$dir/err" "listening on fd:syslog \(127\.0\.0\.1:$port\)"
wait_lines "$dir/unix.log" 1
send_tcp "$port" "<13>over TCP"
logged "sluice-logd on two fd:syslog" "$dir/unix.log" "<13>over the Unix socket" "<13>over TCP"
[[ -S $dir/logd.sock ]] || fail "sluice-logd removed the Unix socket systemd made"
ok "a Unix socket and a TCP socket under one name: both served; the socket file left to its owner"

# --- --threads 2 on a passed Unix socket (and a TCP one): the main loop
# accepts and hands the connections to both loops in turn; 8 connections
# of 8,000 lines over the Unix one,
# every line once, and the second loop (sluice-loop1) read its share.
logd_extra=(--threads 2)
port=$(free_port)
activate "$dir/threads.log" -l "$dir/threads.sock" -l "127.0.0.1:$port" --fdname=syslog:syslog
send_unix "$dir/threads.sock" "<13>first"
wait_for "sluice-logd --threads 2 on fd:syslog" "$dir/err" "2 threads listening"
loop1_ns() {
  local t
  for t in /proc/"$sa"/task/*; do
    [[ $(cat "$t/comm") == sluice-loop1 ]] && { cut -d' ' -f1 "$t/schedstat"; return; }
  done
  fail "no thread sluice-loop1 in $sa"
}
idle_ns=$(loop1_ns)
python3 - "$dir/threads.sock" <<'PY'
import socket, sys
for c in range(8):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    s.sendall(b"".join(b"<13>c%d %05d %s\n" % (c, i, b"x" * 100) for i in range(8000)))
    s.close()
PY
wait_lines "$dir/threads.log" 64001
busy_ns=$(loop1_ns)
stop_it "$sa"
[[ $st -eq 0 ]] || fail "--threads 2 on fd:syslog: exit $st: $(cat "$dir/err")"
[[ $(wc -l <"$dir/threads.log") -eq 64001 && $(sort -u "$dir/threads.log" | wc -l) -eq 64001 ]] ||
  fail "--threads 2 on fd:syslog: $(wc -l <"$dir/threads.log") lines, $(sort -u "$dir/threads.log" | wc -l) different, not 64001"
((busy_ns - idle_ns > 1000000)) || fail "--threads 2 on fd:syslog: sluice-loop1 did not read ($(((busy_ns - idle_ns) / 1000)) us on a CPU)"
ok "--threads 2 on a passed Unix socket: 64,001 lines once each, sluice-loop1 read ($(((busy_ns - idle_ns) / 1000000)) ms on a CPU)"
logd_extra=()

# --- bad usage: a name not passed; a socket that does not listen (Accept=yes);
# a datagram socket. Each exits 2 with one message and the pointer to --help.
usage_case() {
  local what=$1 want=$2
  shift 2
  st=0
  : >"$dir/err"  # no line of the last run is read as this one's
  "$@" 2>"$dir/err" &
  local p=$!
  pids+=("$p")
  wait_for "$what" "$dir/err" "Listening on"
  # The first connection (or datagram) starts the tool.
  python3 - "$port" "$what" <<'PY' || true
import socket, sys
port = int(sys.argv[1])
if "datagram" in sys.argv[2]:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", port))
else:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.recv(1)
    except OSError:
        pass
PY
  if [[ $* == *" -a "* ]]; then
    # With --accept the tool is a child, and systemd-socket-activate stays.
    wait_for "$what" "$dir/err" "died with code"
    grep -q "died with code 2" "$dir/err" || fail "$what: $(cat "$dir/err")"
    kill "$p"
  else
    wait_exit "$p" "$what"
    [[ $st -eq 2 ]] || fail "$what: exit $st: $(cat "$dir/err")"
  fi
  grep -v '^Listening on\|^Communication attempt\|^Execing\|^Connection from\|^Spawned\|^Child ' "$dir/err" >"$dir/err.tool" || true
  grep -qF -- "$want" "$dir/err.tool" || fail "$what: no '$want' in: $(cat "$dir/err.tool")"
  grep -q "Try '.* --help' for more information" "$dir/err.tool" || fail "$what: no pointer to --help: $(cat "$dir/err.tool")"
}
port=$(free_port)
usage_case "a name not passed" "systemd passed no socket named 'relp' (passed: 'syslog')" \
  systemd-socket-activate "${pass_env[@]}" -l "127.0.0.1:$port" --fdname=syslog "$logd" --listen fd:relp "$dir/x.log"
port=$(free_port)
usage_case "--listen-relp, a name not passed" "--listen-relp fd:relp: systemd passed no socket named 'relp'" \
  systemd-socket-activate "${pass_env[@]}" -l "127.0.0.1:$port" --fdname=syslog "$logd" --listen-relp fd:relp "$dir/x.log"
port=$(free_port)
usage_case "a connection, not a listener (Accept=yes)" "does not listen (SO_ACCEPTCONN is off)" \
  systemd-socket-activate "${pass_env[@]}" -a -l "127.0.0.1:$port" --fdname=syslog "$logd" --listen fd:syslog "$dir/x.log"
port=$(free_port)
usage_case "a datagram socket" "is not a stream socket" \
  systemd-socket-activate "${pass_env[@]}" -d -l "127.0.0.1:$port" --fdname=syslog "$logd" --listen fd:syslog "$dir/x.log"
st=0; "$logd" --listen fd:syslog "$dir/x.log" 2>"$dir/err" || st=$?
[[ $st -eq 2 ]] && grep -q "no socket named 'syslog' (none was: LISTEN_FDS is unset" "$dir/err" || fail "no LISTEN_FDS: exit $st: $(cat "$dir/err")"
st=0; "$fanout" --listen fd:subs </dev/null 2>"$dir/err" || st=$?
[[ $st -eq 2 ]] && grep -q "sluice-fanout: --listen fd:subs: systemd passed no socket named 'subs'" "$dir/err" || fail "fanout, no LISTEN_FDS: exit $st: $(cat "$dir/err")"
ok "a name not passed, a connection, a datagram socket, no LISTEN_FDS: exit 2, naming what was passed"

# --- sd_notify, read from a NOTIFY_SOCKET bound here: one line a datagram
notify_reader() {
  python3 - "$1" "$2" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(65536).decode().replace("\n", " ") + "\n")
        out.flush()
PY
  pids+=($!)
  disown $!  # killed at the exit, without a word
  for _ in $(seq $((200 * scale))); do [[ -S $1 ]] && return 0; sleep 0.05; done
  fail "the notify reader did not bind $1"
}
notify_reader "$dir/notify.sock" "$dir/notes"
# WATCHDOG_USEC=300 ms: a ping every 150 ms; WATCHDOG_PID is its own pid.
: >"$dir/err"  # no line of the last run is read as this one's
NOTIFY_SOCKET=$dir/notify.sock WATCHDOG_USEC=300000 \
  bash -c 'export WATCHDOG_PID=$$; exec "$@"' - "$logd" --listen 127.0.0.1:0 --listen "unix:$dir/n.sock" "$dir/n.log" 2>"$dir/err" &
lp=$!
pids+=("$lp")
wait_for "READY=1" "$dir/notes" "^READY=1 STATUS=0 messages"
grep -c "listening on" "$dir/err" | grep -qx 2 || fail "READY=1 before every listener listened: $(cat "$dir/err")"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$dir/err")
send_tcp "$port" "<13>a" "<13>b" "<13>c"
wait_lines "$dir/n.log" 3
# STATUS= every 2 s when the counts changed.
wait_for "STATUS= with the counts" "$dir/notes" "^STATUS=3 messages, 3 written, 1 connections"
wait_for "WATCHDOG=1" "$dir/notes" "^WATCHDOG=1"
[[ $(grep -c "^WATCHDOG=1" "$dir/notes") -ge 3 ]] || fail "fewer than 3 WATCHDOG=1 in 2 s at 150 ms: $(cat "$dir/notes")"
stop_it "$lp"
[[ $st -eq 0 ]] || fail "sluice-logd with NOTIFY_SOCKET: exit $st: $(cat "$dir/err")"
wait_for "STOPPING=1" "$dir/notes" "^STOPPING=1 STATUS=stopping: 3 messages"
[[ $(grep -c "^READY=1" "$dir/notes") -eq 1 ]] || fail "READY=1 not once: $(cat "$dir/notes")"
ok "sd_notify: READY=1 after both listeners, STATUS= with the counts, WATCHDOG=1, STOPPING=1 at SIGTERM"

# Another process's WATCHDOG_PID: no WATCHDOG=1, the rest as before.
: >"$dir/notes"
: >"$dir/err"  # no line of the last run is read as this one's
NOTIFY_SOCKET=$dir/notify.sock WATCHDOG_USEC=100000 WATCHDOG_PID=1 \
  "$logd" --listen 127.0.0.1:0 "$dir/n.log" 2>"$dir/err" &
lp=$!
pids+=("$lp")
wait_for "READY=1" "$dir/notes" "^READY=1"
sleep "$(awk "BEGIN { print 0.5 * $scale }")"
stop_it "$lp"
wait_for "STOPPING=1" "$dir/notes" "^STOPPING=1"
! grep -q "WATCHDOG=1" "$dir/notes" || fail "WATCHDOG=1 for another process's WATCHDOG_PID: $(cat "$dir/notes")"
ok "WATCHDOG_PID of another process: no WATCHDOG=1"

# Without NOTIFY_SOCKET nothing is sent (WATCHDOG_USEC alone asks nothing).
: >"$dir/notes"
: >"$dir/err"  # no line of the last run is read as this one's
env -u NOTIFY_SOCKET WATCHDOG_USEC=100000 "$logd" --listen 127.0.0.1:0 "$dir/q.log" 2>"$dir/err" &
lp=$!
pids+=("$lp")
wait_for "sluice-logd" "$dir/err" "listening on"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$dir/err")
send_tcp "$port" "<13>quiet"
wait_lines "$dir/q.log" 1
stop_it "$lp"
[[ $st -eq 0 ]] || fail "sluice-logd without NOTIFY_SOCKET: exit $st"
# A datagram on its way would be there by now: a last one from here shows
# the reader is alive and has read all before it.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"MARK=1", sys.argv[1])' "$dir/notify.sock"
wait_for "the reader" "$dir/notes" "^MARK=1"
[[ $(cat "$dir/notes") == "MARK=1" ]] || fail "sent without NOTIFY_SOCKET: $(cat "$dir/notes")"
ok "without NOTIFY_SOCKET: nothing sent"

# sluice-log too: READY=1 once its FILE is open, STOPPING=1 at SIGTERM with
# the lines it read.
: >"$dir/notes"
mkfifo "$dir/log-in"
NOTIFY_SOCKET=$dir/notify.sock "$slog" "$dir/slog.log" <"$dir/log-in" 2>"$dir/err.log" &
lp=$!
pids+=("$lp")
exec 4>"$dir/log-in"
wait_for "READY=1 from sluice-log" "$dir/notes" "^READY=1 STATUS=0 lines"
printf 'one\ntwo\n' >&4
wait_lines "$dir/slog.log" 2
stop_it "$lp"
exec 4>&-
[[ $st -eq 0 ]] || fail "sluice-log with NOTIFY_SOCKET: exit $st: $(cat "$dir/err.log")"
# (Lines read: their writes may still be on their way back from the worker.)
wait_for "STOPPING=1 from sluice-log" "$dir/notes" "^STOPPING=1 STATUS=stopping: 2 lines, "
ok "sluice-log: READY=1 once FILE is open, STOPPING=1 at SIGTERM"

# --- sluice-fanout on a passed socket, with sd_notify: a subscriber gets the lines
: >"$dir/notes"
mkfifo "$dir/in"
port=$(free_port)
: >"$dir/err"  # no line of the last run is read as this one's
NOTIFY_SOCKET=$dir/notify.sock systemd-socket-activate "${pass_env[@]}" -E "NOTIFY_SOCKET=$dir/notify.sock" \
  -l "127.0.0.1:$port" --fdname=subs "$fanout" --listen fd:subs <"$dir/in" 2>"$dir/err" &
fp=$!
pids+=("$fp")
exec 3>"$dir/in"
wait_for "socket-activate" "$dir/err" "Listening on 127.0.0.1:$port"
# (Not holding the FIFO open, whose end is the end of the input.)
python3 - "$port" "$dir/got" 3>&- <<'PY' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
with open(sys.argv[2], "wb") as out:
    while True:
        d = s.recv(65536)
        if not d:
            break
        out.write(d)
        out.flush()
PY
sub=$!
pids+=("$sub")
wait_for "sluice-fanout on fd:subs" "$dir/err" "listening on fd:subs \(127\.0\.0\.1:$port\)"
wait_for "READY=1 from sluice-fanout" "$dir/notes" "^READY=1 STATUS=0 lines in"
printf 'one\ntwo\n' >&3
wait_lines "$dir/got" 2
exec 3>&-
wait_exit "$fp" "sluice-fanout at the end of its input"
[[ $st -eq 0 ]] || fail "sluice-fanout on fd:subs: exit $st: $(cat "$dir/err")"
[[ $(cat "$dir/got") == $'one\ntwo' ]] || fail "the subscriber got: $(cat "$dir/got")"
wait_for "STOPPING=1 from sluice-fanout" "$dir/notes" "^STOPPING=1 STATUS=stopping: 2 lines in, 2 sent"
ok "sluice-fanout on a passed socket: the subscriber gets every line; READY=1, STOPPING=1"

# --- the logrotate config beside the units (tools/systemd/sluice-logd.logrotate),
# with this test's paths and a SIGHUP for `systemctl reload`: twice rotated by
# logrotate while a sender writes, every message once, in order, the oldest
# compressed (delaycompress), none lost between the rename and the reopen.
if command -v logrotate >/dev/null; then
  mkdir "$dir/logs"
  "$logd" --listen 127.0.0.1:0 "$dir/logs/messages.log" 2>"$dir/err.rotate" &
  lp=$!
  pids+=("$lp")
  wait_for "sluice-logd" "$dir/err.rotate" "listening on"
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$dir/err.rotate")
  sed -e "s|/var/log/sluice-logd/|$dir/logs/|" -e "s|systemctl reload sluice-logd.service|kill -HUP $lp|" \
    "$unit_src/sluice-logd.logrotate" >"$dir/logrotate.conf"
  grep -q "kill -HUP $lp" "$dir/logrotate.conf" || fail "the logrotate config has no postrotate reload"
  # A sender that does not stop while logrotate renames and sluice-logd reopens.
  python3 - "$port" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
for i in range(3000):
    s.sendall(b"<13>msg %d\n" % i)
    time.sleep(0.001)
s.close()
PY
  sender=$!
  pids+=("$sender")
  for round in 1 2; do
    wait_for "sluice-logd" "$dir/logs/messages.log" "msg"
    logrotate -f -s "$dir/logrotate.state" "$dir/logrotate.conf" || fail "logrotate, round $round"
  done
  wait "$sender"
  all() { { zcat "$dir"/logs/messages.log.*.gz 2>/dev/null || true; cat "$dir/logs/messages.log.1" "$dir/logs/messages.log"; }; }
  for _ in $(seq $((200 * scale))); do [[ $(all | wc -l) -ge 3000 ]] && break; sleep 0.05; done
  [[ -f $dir/logs/messages.log.2.gz && -f $dir/logs/messages.log.1 ]] || fail "after two rotations: $(ls "$dir/logs")"
  all | python3 -c '
import sys
lines = sys.stdin.read().splitlines()
want = ["<13>msg %d" % i for i in range(3000)]
assert lines == want, "%d lines, first wrong one: %r" % (len(lines), next((l for l, w in zip(lines, want) if l != w), None))
' || fail "the messages across two logrotate runs"
  stop_it "$lp"
  [[ $st -eq 0 ]] || fail "sluice-logd under logrotate: exit $st: $(cat "$dir/err.rotate")"
  ok "logrotate with the shipped config, twice under a sender: 3000 messages once, in order (.2.gz, .1, FILE)"
else
  echo "systemd_test: skipped the logrotate config: no logrotate (apt-get install logrotate)"
fi

# --- the unit files: systemd-analyze verify, with ExecStart= pointing at
# this build's tools (it checks that the program exists).
units=$dir/units
mkdir "$units"
for u in "$unit_dir"/sluice-logd.service "$unit_dir"/sluice-log@.service "$unit_src"/sluice-logd.socket; do
  sed "s|^ExecStart=[^ ]*/sluice-|ExecStart=$(cd "$(dirname "$logd")" && pwd)/sluice-|" "$u" >"$units/$(basename "$u")"
done
cp "$units/sluice-log@.service" "$units/sluice-log@var-log-app.log.service"
for u in sluice-logd.service sluice-logd.socket sluice-log@var-log-app.log.service; do
  grep -q '^NoNewPrivileges=yes' "$units/$u" || [[ $u == *.socket ]] || fail "$u: not NoNewPrivileges=yes"
done
for key in Type=notify WatchdogSec= ProtectSystem=strict ReadWritePaths=/var/log/sluice-logd PrivateTmp=yes ProtectHome=yes DynamicUser=yes; do
  grep -q "^$key" "$units/sluice-logd.service" || fail "sluice-logd.service has no $key"
done
grep -q '^ExecStart=.*--listen fd:syslog' "$units/sluice-logd.service" || fail "sluice-logd.service does not serve fd:syslog"
grep -q '^FileDescriptorName=syslog' "$units/sluice-logd.socket" || fail "sluice-logd.socket does not name its sockets syslog"
if SYSTEMD_LOG_LEVEL=notice timeout $((60 * scale)) systemd-analyze verify --man=no \
     "$units/sluice-logd.socket" "$units/sluice-logd.service" "$units/sluice-log@var-log-app.log.service" >"$dir/verify" 2>&1; then
  ok "systemd-analyze verify: the three units"
  # The hardening, as systemd rates it: exposure at most 2.5 of 10 ("OK").
  for u in sluice-logd.service sluice-log@var-log-app.log.service; do
    systemd-analyze security --offline=yes --threshold=25 "$units/$u" >"$dir/security" 2>&1 ||
      fail "$u: exposure above 2.5: $(tail -3 "$dir/security")"
  done
  ok "systemd-analyze security: each service's exposure at most 2.5"
elif grep -qiE "Failed to (initialize manager|connect|setup)|No such file or directory.*/run/systemd|Operation not permitted" "$dir/verify"; then
  # It needs a manager's environment (cgroups, /run/systemd): said, and the
  # checks above (the hardening keys, fd:syslog) stand alone.
  echo "systemd_test: systemd-analyze verify cannot run here: $(head -3 "$dir/verify")"
  ok "the unit files' keys (systemd-analyze verify skipped)"
else
  fail "systemd-analyze verify: $(cat "$dir/verify")"
fi

echo "systemd_test: $pass checks passed"
