#!/usr/bin/env bash
# sluice-logd as senders meet it: many concurrent senders (TCP and Unix),
# malformed frames, a sender gone mid-frame, SIGTERM under load (every
# message it read is in the file, none torn), usage, and rsyslog forwarding
# (omfwd, octet-counted) into it when rsyslogd is installed. Loopback only;
# every wait is bounded.
#
#   tests/tools/logd_test.sh SLUICE_LOGD
set -euo pipefail
logd=$1
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
pass=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }

# Starts sluice-logd with "$@"; sets $lp (pid) and $port (the TCP port).
start() {
  : > "$dir/err"
  "$logd" "$@" 2> "$dir/err" &
  lp=$!
  pids+=("$lp")
  for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do grep -q "listening on 127.0.0.1" "$dir/err" && break; sleep 0.05; done
  port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/err" | head -1)
  [ -n "$port" ] || fail "no listening line: $(cat "$dir/err")"
}
stop() {
  kill -TERM "$lp"
  local st=0
  wait "$lp" || st=$?
  [ "$st" -eq 0 ] || fail "sluice-logd exited $st: $(cat "$dir/err")"
}

# --- usage
st=0; "$logd" out.log 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "no --listen: exit $st"
st=0; "$logd" --listen nope out.log 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "bad --listen: exit $st"
st=0; "$logd" --listen 127.0.0.1:0 --framing x out.log 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "bad --framing: exit $st"
"$logd" --help | grep -q '^Example: ' || fail "--help has no Example line"
"$logd" --help | grep -q '^Exit status: ' || fail "--help has no Exit status"
ok "usage"

# --- 8 concurrent senders (6 TCP octet-counted, 2 Unix LF), 3000 messages each
start --listen 127.0.0.1:0 --listen "unix:$dir/s.sock" --max-size 200K --keep 100 "$dir/out.log"
python3 - "$port" "$dir/s.sock" <<'PY'
import socket, sys, threading
port, path = int(sys.argv[1]), sys.argv[2]
def send(k):
    if k < 6:
        s = socket.create_connection(("127.0.0.1", port))
        frames = b"".join(b"%d %s" % (len(m), m) for m in (b"<14>1 - h app - - - sender %d msg %d" % (k, i) for i in range(3000)))
    else:
        s = socket.socket(socket.AF_UNIX); s.connect(path)
        frames = b"".join(b"<14>1 - h app - - - sender %d msg %d\n" % (k, i) for i in range(3000))
    s.sendall(frames); s.close()
ts = [threading.Thread(target=send, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
PY
for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do [ "$(cat "$dir"/out.log* | wc -l)" -ge 24000 ] && break; sleep 0.05; done
stop
python3 - "$dir" <<'PY'
import glob, sys, re
seen = {}
for f in glob.glob(sys.argv[1] + "/out.log*"):
    for line in open(f, "rb"):
        m = re.fullmatch(rb"<14>1 - h app - - - sender (\d) msg (\d+)\n", line)
        assert m, line
        seen.setdefault(int(m[1]), []).append(int(m[2]))
for k in range(8):
    assert sorted(seen[k]) == list(range(3000)), k
PY
[ "$(ls "$dir"/out.log.* | wc -l)" -ge 1 ] || fail "no rotation"
ok "8 concurrent senders, 24000 messages, each once, rotated"
rm -f "$dir"/out.log*

# --- malformed frames and a sender gone mid-frame: others go on
start --listen 127.0.0.1:0 --max-message 100 "$dir/out.log"
python3 - "$port" <<'PY'
import socket, sys
port = int(sys.argv[1])
def conn(data):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(data); s.close()
conn(b"5 first0 bad")
conn(b"101 " + b"x" * 101)
conn(b"hello\n")
conn(b"12 with\nnewline20 torn-at-the-end")
conn(b"<1>lf one\n<1>lf two\n")
PY
for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do [ "$(wc -l < "$dir/out.log")" -ge 4 ] && grep -q "mid-frame" "$dir/err" && break; sleep 0.05; done
stop
[ "$(cat "$dir/out.log")" = "$(printf 'first\nwith\\nnewline\n<1>lf one\n<1>lf two')" ] || fail "malformed: got $(cat "$dir/out.log")"
grep -q "malformed frame: bad frame length '0'" "$dir/err" || fail "no reason for a bad length"
grep -q "malformed frame: message longer than 100 bytes" "$dir/err" || fail "no reason for an oversize message"
grep -q "malformed frame: neither octet counting nor LF framing" "$dir/err" || fail "no reason for unknown framing"
grep -q "disconnected mid-frame" "$dir/err" || fail "no word of the torn frame"
ok "malformed frames close their connection with a reason; a torn frame is reported; the rest is written"
rm -f "$dir"/out.log*

# --- SIGTERM under load: exit 0, every line whole, each sender's lines a
# gapless prefix of what it sent
start --listen 127.0.0.1:0 --stats "$dir/out.log"
python3 - "$port" <<'PY' &
import socket, sys, threading
port = int(sys.argv[1])
def send(k):
    try:
        s = socket.create_connection(("127.0.0.1", port))
        for i in range(200000):
            m = b"<14>1 - h app - - - sender %d msg %d" % (k, i)
            s.sendall(b"%d %s" % (len(m), m))
    except OSError:
        pass
ts = [threading.Thread(target=send, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
PY
sender=$!
pids+=("$sender")
for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do [ -s "$dir/out.log" ] && [ "$(wc -l < "$dir/out.log")" -ge 20000 ] && break; sleep 0.05; done
stop
wait "$sender" || true
python3 - "$dir/out.log" <<'PY'
import sys, re
seen = {}
for line in open(sys.argv[1], "rb"):
    m = re.fullmatch(rb"<14>1 - h app - - - sender (\d) msg (\d+)\n", line)
    assert m, line
    seen.setdefault(int(m[1]), []).append(int(m[2]))
for k, v in seen.items():
    assert v == list(range(len(v))), k
print("  after SIGTERM:", {k: len(v) for k, v in sorted(seen.items())})
PY
grep -Eq "^sluice-logd: [0-9]+ messages" "$dir/err" || fail "no --stats totals"
n=$(sed -n 's/^sluice-logd: \([0-9]*\) messages, .* connections.*/\1/p' "$dir/err")
[ "$n" -eq "$(wc -l < "$dir/out.log")" ] || fail "read $n messages but the file has $(wc -l < "$dir/out.log")"
ok "SIGTERM under load: exit 0, every message read ($n) in the file, none torn"
rm -f "$dir"/out.log*

# --- SIGHUP reopens FILE (after an external rename)
start --listen 127.0.0.1:0 "$dir/out.log"
send_one() {
  python3 - "$port" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); m = sys.argv[2].encode()
s.sendall(b"%d %s" % (len(m), m)); s.close()
PY
}
send_one before
for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do [ -s "$dir/out.log" ] && break; sleep 0.05; done
mv "$dir/out.log" "$dir/old.log"
kill -HUP "$lp"
for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do [ -e "$dir/out.log" ] && break; sleep 0.05; done
send_one after
for _ in $(seq $((200 * ${SLUICE_TIME_SCALE:-1}))); do [ -s "$dir/out.log" ] && break; sleep 0.05; done
stop
[ "$(cat "$dir/old.log")" = before ] && [ "$(cat "$dir/out.log")" = after ] || fail "SIGHUP: old '$(cat "$dir/old.log")' new '$(cat "$dir/out.log" 2>/dev/null)'"
ok "SIGHUP reopens FILE"
rm -f "$dir"/out.log* "$dir/old.log"

# --- rsyslog forwarding (omfwd, octet-counted) into sluice-logd
if [ -x /usr/sbin/rsyslogd ]; then
  start --listen 127.0.0.1:0 "$dir/out.log"
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$dir/rs.conf" <<CONF
global(workDirectory="$dir")
module(load="imptcp")
template(name="fwd" type="string" string="%rawmsg%")
ruleset(name="r") { action(type="omfwd" target="127.0.0.1" port="$port" protocol="tcp" TCP_Framing="octet-counted" template="fwd") }
input(type="imptcp" address="127.0.0.1" port="$rport" ruleset="r")
CONF
  # rsyslogd signals its parent: a subshell of its own takes it.
  (trap '' TERM; exec /usr/sbin/rsyslogd -n -f "$dir/rs.conf" -i "$dir/rs.pid") 2> "$dir/rs.err" &
  rp=$!
  pids+=("$rp")
  python3 - "$rport" <<'PY'
import socket, sys, time
for _ in range(400):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); break
    except OSError:
        time.sleep(0.05)
frames = b"".join(b"%d %s" % (len(m), m) for m in (b"<14>1 2026-12-01T00:00:00.000001Z h app - - - forwarded %d" % i for i in range(5000)))
s.sendall(frames); s.close()
PY
  for _ in $(seq $((400 * ${SLUICE_TIME_SCALE:-1}))); do [ "$(wc -l < "$dir/out.log")" -ge 5000 ] && break; sleep 0.05; done
  kill -TERM "$rp"; wait "$rp" || true
  stop
  python3 - "$dir/out.log" <<'PY'
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
want = [b"<14>1 2026-12-01T00:00:00.000001Z h app - - - forwarded %d" % i for i in range(5000)]
assert lines == want, (len(lines), lines[:2])
PY
  ok "rsyslog omfwd (octet-counted) into sluice-logd: 5000 of 5000, byte for byte"
else
  echo "skip: rsyslog forwarding (rsyslogd is not installed: apt-get install rsyslog)"
fi

echo "logd: $pass passed"
