#!/usr/bin/env bash
# sluice-logd --listen-relp as RELP senders meet it: a session answered per
# message (open's offers, syslog, close), bad input on a raw socket
# (garbage, a wrong transaction number, a frame over the maximum, no open
# first: the connection closed with the reason, what was answered is in the
# file, sluice-logd goes on), --fsync ack's answers only after the fsync
# that covers their message, serverclose at SIGTERM, --max-connections,
# --idle-timeout and EMFILE on RELP, and rsyslog's omrelp sending into it while
# sluice-logd is SIGKILLed and restarted twice: nothing lost, the duplicates
# counted and within omrelp's window. Loopback only; every wait is bounded.
#
#   tests/tools/logd_relp_test.sh SLUICE_LOGD FSYNC_LOG_SO
set -euo pipefail
logd=$1
fsync_log=$(realpath "$2")
listen_kind=RELP
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/rsyslog.sh"

# A small RELP sender for the cases below: frames, a reader of answers.
cat > "$dir/relp.py" <<'PY'
import os, re, socket, time
SCALE = int(os.environ.get("SLUICE_TIME_SCALE", "1"))
def frame(txnr, cmd, data=b""):
    return b"%d %s %d%s\n" % (txnr, cmd, len(data), (b" " + data) if data else b"")
class Peer:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(10 * SCALE)
        self.buf = b""
    def send(self, b): self.s.sendall(b)
    def open(self):
        self.send(frame(1, b"open", b"relp_version=0\nrelp_software=test\ncommands=syslog"))
        t, cmd, data = self.read()
        assert (t, cmd) == (1, b"rsp") and data.startswith(b"200 OK\n") and b"commands=syslog" in data, data
        return data
    def read(self):
        """The next frame (txnr, command, data); None at EOF."""
        while True:
            # "TXNR SP COMMAND SP DATALEN" and the byte after it (LF when
            # DATALEN is 0, else SP, DATA and LF).
            m = re.match(rb"(\d+) ([A-Za-z]+) (\d+)([ \n])", self.buf)
            if m:
                n = int(m[3])
                need = m.end() + (n + 1 if n else 0)
                if len(self.buf) >= need:
                    data = self.buf[m.end():m.end() + n]
                    assert n == 0 or self.buf[need - 1:need] == b"\n", self.buf[:need]
                    self.buf = self.buf[need:]
                    return int(m[1]), m[2], data
            c = self.s.recv(65536)
            if not c:
                return None
            self.buf += c
    def closed(self):
        """True once the peer closed (EOF or reset), within 10 s."""
        try:
            while True:
                c = self.s.recv(65536)
                if not c:
                    return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
PY

# --- usage
st=0; "$logd" --listen-relp nope "$dir/out.log" 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "bad --listen-relp: exit $st"
st=0; "$logd" --listen-relp unix:/x "$dir/out.log" 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "--listen-relp unix: exit $st"
st=0; "$logd" --listen-relp 127.0.0.1:70000 "$dir/out.log" 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "--listen-relp port 70000: exit $st"
st=0; "$logd" --listen-relp 127.0.0.1:0 --fsync acks "$dir/out.log" 2>/dev/null || st=$?; [ "$st" -eq 2 ] || fail "--fsync acks: exit $st"
"$logd" --help > "$dir/help"  # (not into grep -q, which may leave before the help is all written)
grep -q -- '--listen-relp HOST:PORT' "$dir/help" || fail "--help has no --listen-relp"
grep -q -- 'or ack: FILE is synced after each batch' "$dir/help" || fail "--help has no --fsync ack"
ok "usage"
rm -f "$dir/out.log"

# --- a session: open's offers, 1000 messages each answered once in order,
# close answered last, then the connection closed; the file has them all
start --listen-relp 127.0.0.1:0 --listen 127.0.0.1:0 --stats "$dir/out.log"
PYTHONPATH=$dir python3 - "$port" <<'PY'
import sys
from relp import Peer, frame
p = Peer(int(sys.argv[1]))
p.open()
p.send(b"".join(frame(i, b"syslog", b"<14>1 - h app - - - msg %d" % i) for i in range(2, 1002)))
for i in range(2, 1002):
    assert p.read() == (i, b"rsp", b"200 OK"), i
p.send(frame(1002, b"close"))
assert p.read() == (1002, b"rsp", b"200 OK")
assert p.closed(), "not closed after close"
PY
stop
python3 - "$dir/out.log" <<'PY'
import sys
assert open(sys.argv[1], "rb").read() == b"".join(b"<14>1 - h app - - - msg %d\n" % i for i in range(2, 1002))
PY
grep -q "1000 RELP answered" "$dir/err" || fail "no RELP count in --stats: $(tail -1 "$dir/err")"
ok "a RELP session: open's offers, 1000 messages answered in order, close answered, then closed"
rm -f "$dir"/out.log*

# --- bad input: each connection closed with its reason; what was answered
# before is in the file; sluice-logd goes on (a good session after them)
start --listen-relp 127.0.0.1:0 "$dir/out.log"
PYTHONPATH=$dir python3 - "$port" <<'PY'
import sys
from relp import Peer, frame
port = int(sys.argv[1])
def good_then(bad, name):
    p = Peer(port)
    p.open()
    p.send(frame(2, b"syslog", b"%s before" % name))
    assert p.read() == (2, b"rsp", b"200 OK"), name
    p.send(bad)
    assert p.closed(), name + b" not closed"
good_then(b"hello world\n", b"garbage")
good_then(frame(4, b"syslog", b"skips 3"), b"wrong-txnr")
good_then(frame(2, b"syslog", b"again 2"), b"repeated-txnr")
good_then(b"3 syslog 200000 " + b"x" * 1000, b"oversize")
good_then(frame(3, b"starttls"), b"unknown-command")
good_then(frame(3, b"open", b"relp_version=0"), b"second-open")
p = Peer(port)  # no open first
p.send(frame(1, b"syslog", b"no open"))
assert p.closed(), "no-open not closed"
p = Peer(port)  # the ones after these are still served
p.open()
p.send(frame(2, b"syslog", b"after all"))
assert p.read() == (2, b"rsp", b"200 OK")
PY
stop
want="garbage before
wrong-txnr before
repeated-txnr before
oversize before
unknown-command before
second-open before
after all"
[ "$(cat "$dir/out.log")" = "$want" ] || fail "bad input: the file has $(cat "$dir/out.log")"
for why in "a frame starts with a byte that is not a transaction number digit" \
           "transaction number 4 where 3 was due" "transaction number 2 where 3 was due" \
           "DATALEN 200000... over the maximum of 131072" "command 'starttls' was not offered" \
           "a second open" \
           "the session did not start with open (got 'syslog')"; do
  grep -q "RELP: $why.*; closing the connection" "$dir/err" || fail "no reason '$why' on stderr: $(cat "$dir/err")"
done
ok "garbage, a wrong or repeated transaction number, a frame over the maximum, a command not offered, a second open, no open: closed with the reason; the answered ones kept; it goes on"
rm -f "$dir"/out.log*

# --- --fsync ack: each answer comes after the fsync that covers its
# message (the fsync_log preload writes the synced size at each fsync; the
# sender reads it when the answer arrives); and one fsync serves many
# messages (a batch). Then --fsync never: each answer after its message is
# in the file.
for policy in ack never; do
  rm -f "$dir/fsyncs" "$dir"/out.log*
  FSYNC_LOG=$dir/fsyncs LD_PRELOAD=$fsync_log ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    start --listen-relp 127.0.0.1:0 --fsync "$policy" --stats "$dir/out.log"
  PYTHONPATH=$dir python3 - "$port" "$dir/out.log" "$dir/fsyncs" "$policy" <<'PY'
import os, sys, threading
from relp import Peer, frame
port, out, fsyncs, policy = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
N = 20000
msgs = [b"<14>1 - h app - - - message %06d" % i for i in range(N)]
line_end = []  # the file's size once message i is in it
total = 0
for m in msgs:
    total += len(m) + 1
    line_end.append(total)
p = Peer(port)
p.open()
def send():
    for k in range(0, N, 500):
        p.send(b"".join(frame(i + 2, b"syslog", msgs[i]) for i in range(k, min(N, k + 500))))
threading.Thread(target=send).start()
checked = 0
for i in range(N):
    f = p.read()
    assert f == (i + 2, b"rsp", b"200 OK"), (i, f)
    # Checking every answer would slow the sender to a crawl: every 50th,
    # and every one of the first 200.
    if i < 200 or i % 50 == 0:
        if policy == "ack":
            synced = [int(l) for l in open(fsyncs).read().split()] if os.path.exists(fsyncs) else []
            assert synced and max(synced) >= line_end[i], ("answered before its fsync", i, synced[-3:], line_end[i])
        else:
            assert os.path.getsize(out) >= line_end[i], ("answered before it was in the file", i)
        checked += 1
print("  --fsync %s: %d answers checked" % (policy, checked))
p.send(frame(N + 2, b"close"))
assert p.read() == (N + 2, b"rsp", b"200 OK")
PY
  stop
  n=$(wc -l < "$dir/out.log")
  [ "$n" -eq 20000 ] || fail "--fsync $policy: $n lines"
  syncs=$(sed -n 's/.* \([0-9]*\) fsyncs, .*/\1/p' "$dir/err")
  if [ "$policy" = ack ]; then
    [ "$syncs" -ge 1 ] && [ "$syncs" -lt 10000 ] || fail "--fsync ack: $syncs fsyncs for 20000 messages (one a batch?)"
    echo "  --fsync ack: 20000 messages, $syncs fsyncs"
  else
    [ "$syncs" -eq 0 ] || fail "--fsync never: $syncs fsyncs"
  fi
done
ok "--fsync ack: every answer checked came after the fsync that covers it, a batch an fsync; --fsync never: after the write"
rm -f "$dir"/out.log* "$dir/fsyncs"

# --- SIGTERM: the messages read are written and answered, then serverclose
start --listen-relp 127.0.0.1:0 --fsync ack "$dir/out.log"
PYTHONPATH=$dir python3 - "$port" "$lp" <<'PY' > "$dir/answered"
import os, signal, sys
from relp import Peer, frame
port, pid = int(sys.argv[1]), int(sys.argv[2])
p = Peer(port)
p.open()
p.send(b"".join(frame(i, b"syslog", b"term %d" % i) for i in range(2, 3002)))
assert p.read() == (2, b"rsp", b"200 OK")
os.kill(pid, signal.SIGTERM)
answered = 1
while True:
    f = p.read()
    assert f is not None, "closed without serverclose"
    if f[1] == b"serverclose":
        assert f == (0, b"serverclose", b""), f
        break
    assert f == (answered + 2, b"rsp", b"200 OK"), f
    answered += 1
assert p.closed()
print(answered)
PY
st=0; wait "$lp" || st=$?
[ "$st" -eq 0 ] || fail "SIGTERM with a RELP sender: exit $st: $(cat "$dir/err")"
n=$(wc -l < "$dir/out.log")
[ "$n" -eq "$(cat "$dir/answered")" ] || fail "SIGTERM: $(cat "$dir/answered") answered, $n in the file"
ok "SIGTERM: every message read ($n) written and answered, then serverclose, exit 0"
rm -f "$dir"/out.log*

# --- --max-connections and --idle-timeout hold for RELP connections too
start --listen-relp 127.0.0.1:0 --max-connections 2 --idle-timeout 1s --stats "$dir/out.log"
PYTHONPATH=$dir python3 - "$port" <<'PY'
import sys, time
from relp import Peer, frame
port = int(sys.argv[1])
a, b = Peer(port), Peer(port)
a.open(); b.open()
c = Peer(port)
assert c.closed(), "the third connection was not refused"
time.sleep(0.6)
a.send(frame(2, b"syslog", b"a talks"))
assert a.read() == (2, b"rsp", b"200 OK")
time.sleep(0.6)
a.send(frame(3, b"syslog", b"a talks again"))
assert a.read() == (3, b"rsp", b"200 OK")
assert b.closed(), "b was silent and stays open"
PY
stop
grep -q "idle for 1s; closing the connection" "$dir/err" || fail "no idle close: $(cat "$dir/err")"
grep -q " 1 idle closed, 1 refused" "$dir/err" || fail "counts: $(tail -1 "$dir/err")"
ok "--max-connections refuses a RELP connection past it; --idle-timeout closes the silent one"
rm -f "$dir"/out.log*

# --- out of fds (EMFILE): a RELP session goes on, answered, while accepting
# pauses; accepting resumes once fds are free
: > "$dir/err"
(ulimit -n 32; exec "$logd" --listen-relp 127.0.0.1:0 --stats "$dir/out.log" 2> "$dir/err") &
lp=$!
pids+=("$lp")
for _ in $(seq $((200 * scale))); do grep -q "listening on 127.0.0.1" "$dir/err" && break; sleep 0.05; done
port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\) (RELP)$/\1/p' "$dir/err" | head -1)
PYTHONPATH=$dir python3 - "$port" "$dir/err" "$dir/out.log" <<'PY'
import socket, sys, time
from relp import Peer, frame, SCALE
port, err, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
legit = Peer(port)
legit.open()
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
deadline = time.time() + 30 * SCALE
while b"accepting: Too many open files" not in open(err, "rb").read():
    assert time.time() < deadline, open(err, "rb").read()
    time.sleep(0.05)
legit.send(b"".join(frame(i, b"syslog", b"legit %d" % i) for i in range(2, 102)))
for i in range(2, 102):
    assert legit.read() == (i, b"rsp", b"200 OK"), i
for s in idle: s.close()
deadline = time.time() + 30 * SCALE
while True:  # accepting again: a new session is opened and answered
    try:
        p = Peer(port)
        p.open()
        p.send(frame(2, b"syslog", b"new"))
        if p.read() == (2, b"rsp", b"200 OK"):
            break
    except (OSError, AssertionError, TypeError):
        pass
    assert time.time() < deadline
    time.sleep(0.2)
PY
kill -0 "$lp" || fail "sluice-logd stopped at EMFILE: $(cat "$dir/err")"
stop
[ "$(grep -c '^legit' "$dir/out.log")" -eq 100 ] || fail "the RELP sender lost messages: $(grep -c legit "$dir/out.log")"
grep -q '^new$' "$dir/out.log" || fail "no message after the fds came back"
ok "out of fds: the RELP session goes on, answered; accepting again when fds are free"
rm -f "$dir"/out.log*

# --- rsyslog's omrelp into sluice-logd, which is SIGKILLed and restarted
# twice mid-stream: every message is in the file at least once; the
# duplicates (messages omrelp sent again after a break) are counted, and
# they are within what rsyslog may send again a break: omrelp's window
# (windowSize, unanswered) and the batch rsyslog runs the action again with
# once it resumes (queue.dequeueBatchSize, pinned below).
if have_omrelp; then
  total=200000
  window=512
  batch=128
  ERR=$dir/err0 start --listen-relp 127.0.0.1:0 --fsync ack "$dir/out.log"
  relp_port=$port
  start_omrelp "$relp_port" $window $batch
  rp=$rs
  # As fast as rsyslog takes them: omrelp's window is full when a kill comes.
  send_octet "$tport" $total relp &
  feeder=$!
  pids+=("$feeder")
  lines() { cat "$dir/out.log" 2>/dev/null | wc -l; }
  for restart in 1 2; do
    mark=$((restart * total / 3))
    for _ in $(seq $((600 * scale))); do [ "$(lines)" -ge "$mark" ] && break; sleep 0.02; done
    [ "$(lines)" -ge "$mark" ] || fail "omrelp: only $(lines) lines before restart $restart: $(cat "$dir/rs.err")"
    kill -9 "$lp"; wait "$lp" 2>/dev/null || true
    echo "  SIGKILL $restart at $(lines) lines"
    sleep 0.3
    ERR=$dir/err$restart start --listen-relp "127.0.0.1:$relp_port" --fsync ack "$dir/out.log"
  done
  wait "$feeder" || fail "the feeder failed"
  # Duplicates: what omrelp may send again a break, its window and rsyslog's batch.
  python3 "$(dirname "${BASH_SOURCE[0]}")/count_delivered.py" "$dir/out.log" "$total" 2 $((2 * (window + batch))) \
    "omrelp, 2 SIGKILLs" $((60 * scale)) || fail "omrelp: $(tail -5 "$dir/rs.err")"
  kill -TERM "$rp"; wait "$rp" || true
  stop
  ok "rsyslog omrelp into sluice-logd --fsync ack, SIGKILLed and restarted twice: 0 lost, duplicates within the window"
else
  echo "skip: rsyslog omrelp (apt-get install rsyslog rsyslog-relp)"
fi

echo "logd_relp: $pass passed"
