#!/usr/bin/env bash
# sluice-fanout as a user meets it, over loopback and a Unix socket: every
# subscriber gets every line whole and in order; under drop a stalled one
# gets whole lines and a count of what it missed, under disconnect it is cut
# off, under pause it holds everyone back and still gets everything; the
# end of the input and SIGTERM end the subscribers and exit 0; --stats
# --json; bad usage (exit 2) and an address in use (exit 1).
#
#   fanout_test.sh path/to/sluice-fanout
set -uo pipefail
fan=${1:?usage: fanout_test.sh SLUICE_FANOUT}
fan=$(realpath "$fan")

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

# A subscriber: connects to ADDR (HOST:PORT or unix:PATH), waits SLEEP
# seconds before reading (a stalled client), then reads to the end into OUT.
cat >"$tmp/client.py" <<'PY'
import socket, sys, time
addr, out, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
if addr.startswith("unix:"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    target = addr[5:]
else:
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if host.startswith("[") else socket.AF_INET, socket.SOCK_STREAM)
    target = (host.strip("[]"), int(port))
if len(sys.argv) > 4:  # a small receive buffer, so that a stalled client fills up soon
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[4]))
s.connect(target)
time.sleep(delay)
with open(out, "wb") as f:
    while True:
        b = s.recv(65536)
        if not b:
            break
        f.write(b)
PY

# Waits (up to 30 s) for "listening on ADDR" in FILE; prints ADDR.
listening_on() {
  local i addr
  for ((i = 0; i < 600; i++)); do
    addr=$(sed -n 's/^sluice-fanout: listening on \(.*\)$/\1/p' "$1" 2>/dev/null)
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    sleep 0.05
  done
  echo "no 'listening on' line in $1:" >&2
  cat "$1" >&2
  return 1
}
json_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1].splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }

# --- usage ---
check "--help exits 0 with an example" bash -c "'$fan' --help | grep -c '^Example: ' >/dev/null"
for bad in "" "--listen" "--listen 127.0.0.1" "--listen 127.0.0.1:70000" "--listen 127.0.0.1:0 --policy slow" \
  "--listen 127.0.0.1:0 --max-buffered 0" "--listen 127.0.0.1:0 --json" "--listen 127.0.0.1:0 extra" "--bogus" \
  "--listen 127.0.0.1:0 --linger 1x" "--listen 127.0.0.1:0 --linger 25h" "--listen 127.0.0.1:0 --idle-timeout -1" "--listen 127.0.0.1:0 --max-connections x"; do
  # shellcheck disable=SC2086
  "$fan" $bad </dev/null >/dev/null 2>"$tmp/err"
  check "bad usage '$bad' exits 2" same "$?" 2
  check "bad usage '$bad' says what and where to look" grep -q "Try 'sluice-fanout --help'" "$tmp/err"
done

seq 1 200000 >"$tmp/lines"
# Enough that a stalled subscriber falls behind whatever the kernel buffers
# (6.9 MB), fed in 100 bursts over two seconds, so that a subscriber that
# reads keeps up, as a healthy one does with a producer of a real rate.
seq 1 1000000 >"$tmp/many"
cat >"$tmp/paced.py" <<'PY'
import sys, time
data = open(sys.argv[1], "rb").read().split(b"\n")
step = len(data) // 100 + 1
for i in range(0, len(data), step):
    chunk = b"\n".join(data[i:i + step])
    sys.stdout.buffer.write(chunk + (b"\n" if i + step < len(data) else b""))
    sys.stdout.buffer.flush()
    time.sleep(0.02)
PY

# --- three TCP subscribers get every line ---
"$fan" --listen 127.0.0.1:0 --wait-for 3 --stats --json <"$tmp/lines" 2>"$tmp/tcp.err" &
pid=$!
bg_pids+=($pid)
addr=$(listening_on "$tmp/tcp.err")
for i in 1 2 3; do python3 "$tmp/client.py" "$addr" "$tmp/tcp.$i" 0 & done
wait $pid
check "TCP: exit 0 at the end of the input" same "$?" 0
wait
for i in 1 2 3; do check "TCP: subscriber $i got every line" cmp -s "$tmp/lines" "$tmp/tcp.$i"; done
totals=$(tail -1 "$tmp/tcp.err")
check "TCP: --stats --json counts lines in" same "$(json_field "$totals" lines_in)" 200000
check "TCP: --stats --json counts lines sent" same "$(json_field "$totals" lines_sent)" 600000
check "TCP: one JSON line per subscriber" same "$(grep -c '"subscriber"' "$tmp/tcp.err")" 3

# --- a Unix socket, a last line without a newline ---
printf 'one\ntwo\nthree' >"$tmp/short"
"$fan" --listen "unix:$tmp/fan.sock" --wait-for 2 <"$tmp/short" 2>"$tmp/unix.err" &
pid=$!
addr=$(listening_on "$tmp/unix.err")
check "unix: the address is printed as given" same "$addr" "unix:$tmp/fan.sock"
for i in 1 2; do python3 "$tmp/client.py" "$addr" "$tmp/unix.$i" 0 & done
wait $pid
check "unix: exit 0" same "$?" 0
wait
for i in 1 2; do check "unix: subscriber $i got the lines, the last with its newline" same "$(cat "$tmp/unix.$i")" "$(printf 'one\ntwo\nthree')"; done
check "unix: a newline ends the last line" same "$(tail -c1 "$tmp/unix.1" | od -An -c | tr -d ' ')" '\n'

# --- drop: a stalled subscriber gets whole lines and a count; the other gets all ---
python3 "$tmp/paced.py" "$tmp/many" | "$fan" --listen 127.0.0.1:0 --wait-for 2 --policy drop --max-buffered 1M --stats --json 2>"$tmp/drop.err" &
pid=$!
addr=$(listening_on "$tmp/drop.err")
python3 "$tmp/client.py" "$addr" "$tmp/drop.fast" 0 &
python3 "$tmp/client.py" "$addr" "$tmp/drop.slow" 4 4096 &
wait $pid
check "drop: exit 0" same "$?" 0
wait
check "drop: the reading subscriber got every line" cmp -s "$tmp/many" "$tmp/drop.fast"
check "drop: the stalled one got only whole lines, in order, and notices" python3 -c '
import sys, re
got = open(sys.argv[1]).read()
assert got.endswith("\n"), "torn last line"
last, dropped, told = 0, 0, 0
for line in got.splitlines():
    m = re.fullmatch(r"sluice-fanout: dropped (\d+) lines", line)
    if m:
        told += int(m.group(1)); continue
    n = int(line)
    dropped += n - last - 1
    last = n
dropped += 1000000 - last
assert dropped > 0, "nothing was dropped: the test did not stall the subscriber"
assert told == dropped, ("every drop is told, the last ones before the end", told, dropped, last)
' "$tmp/drop.slow"
totals=$(tail -1 "$tmp/drop.err")
check "drop: lines dropped are counted" python3 -c 'import sys; assert int(sys.argv[1]) > 0' "$(json_field "$totals" lines_dropped)"
check "drop: nobody was cut off" same "$(json_field "$totals" cut_off)" 0

# --- disconnect: the stalled subscriber is cut off, the other gets all ---
python3 "$tmp/paced.py" "$tmp/many" | "$fan" --listen 127.0.0.1:0 --wait-for 2 --policy disconnect --max-buffered 1M --stats --json 2>"$tmp/disc.err" &
pid=$!
addr=$(listening_on "$tmp/disc.err")
python3 "$tmp/client.py" "$addr" "$tmp/disc.fast" 0 &
python3 "$tmp/client.py" "$addr" "$tmp/disc.slow" 4 4096 &
wait $pid
check "disconnect: exit 0" same "$?" 0
wait
check "disconnect: the reading subscriber got every line" cmp -s "$tmp/many" "$tmp/disc.fast"
totals=$(tail -1 "$tmp/disc.err")
check "disconnect: one subscriber cut off" same "$(json_field "$totals" cut_off)" 1
check "disconnect: the cut-off one got a prefix of the lines" bash -c "cmp -s '$tmp/disc.slow' <(head -c \$(stat -c %s '$tmp/disc.slow') '$tmp/many')"

# --- pause: a slow subscriber holds everyone back, and everyone gets everything ---
"$fan" --listen 127.0.0.1:0 --wait-for 2 --policy pause --stats --json <"$tmp/lines" 2>"$tmp/pause.err" &
pid=$!
addr=$(listening_on "$tmp/pause.err")
python3 "$tmp/client.py" "$addr" "$tmp/pause.fast" 0 &
python3 "$tmp/client.py" "$addr" "$tmp/pause.slow" 1 4096 &
wait $pid
check "pause: exit 0" same "$?" 0
wait
check "pause: the fast subscriber got every line" cmp -s "$tmp/lines" "$tmp/pause.fast"
check "pause: the slow subscriber got every line" cmp -s "$tmp/lines" "$tmp/pause.slow"
check "pause: nothing dropped" same "$(json_field "$(tail -1 "$tmp/pause.err")" lines_dropped)" 0

# --- SIGTERM with the input still open: the subscribers are ended, exit 0 ---
mkfifo "$tmp/fifo"
"$fan" --listen 127.0.0.1:0 --wait-for 1 --stats <"$tmp/fifo" 2>"$tmp/term.err" &
pid=$!
exec 7>"$tmp/fifo"
addr=$(listening_on "$tmp/term.err")
python3 "$tmp/client.py" "$addr" "$tmp/term.1" 0 &
client=$!
seq 1 1000 >&7
for ((i = 0; i < 600; i++)); do [ -f "$tmp/term.1" ] && [ "$(wc -l <"$tmp/term.1")" -ge 1000 ] && break; sleep 0.05; done
kill -TERM $pid
wait $pid
check "SIGTERM: exit 0" same "$?" 0
wait $client
exec 7>&-
check "SIGTERM: the subscriber got the lines, then the end" cmp -s "$tmp/term.1" <(seq 1 1000)

# --- a subscriber that ends its sending side (socat with standard input at
# /dev/null) still gets every line (issue 19, item 9): it sends its FIN once
# the first line is in, and the rest of the lines come after ---
cat >"$tmp/halfclose.py" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=60)
got = b""
with open(sys.argv[2], "wb") as f:
    while True:
        b = s.recv(65536)
        if not b:
            break
        if not got and b:
            s.shutdown(socket.SHUT_WR)  # our FIN, with the lines still coming
        got += b
        f.write(b)
PY
# 1000 lines in 20 bursts over a second: most come after the FIN.
cat >"$tmp/bursts.py" <<'PY'
import sys, time
for i in range(20):
    sys.stdout.write("".join("%d\n" % j for j in range(i * 50 + 1, i * 50 + 51)))
    sys.stdout.flush()
    time.sleep(0.05)
PY
seq 1 1000 >"$tmp/thousand"
python3 "$tmp/bursts.py" | "$fan" --listen 127.0.0.1:0 --wait-for 1 2>"$tmp/half.err" &
pid=$!
bg_pids+=($pid)
addr=$(listening_on "$tmp/half.err")
timeout 60 python3 "$tmp/halfclose.py" "$addr" "$tmp/half.out"
check "half-closed subscriber: it reads to the end" same "$?" 0
wait $pid
check "half-closed subscriber: exit 0" same "$?" 0
check "half-closed subscriber: got all 1000 lines" same "$(wc -l <"$tmp/half.out")" 1000
check "half-closed subscriber: in order" cmp -s "$tmp/thousand" "$tmp/half.out"

# A client that connects and never reads, with a small receive buffer: it
# holds up whatever waits for it. Ends when killed (or after 60 s).
cat >"$tmp/stall.py" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((host, int(port)))
time.sleep(60)
PY
# Seconds since the epoch, with a fraction.
now() { date +%s.%N; }
elapsed_below() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) < float(sys.argv[3]) else 1)' "$@"; }

# --- drop: a stalled subscriber does not hold up the end of the input past
# --linger (issue 19, item 10); the reading one still gets everything ---
python3 "$tmp/paced.py" "$tmp/many" |
  "$fan" --listen 127.0.0.1:0 --wait-for 2 --policy drop --linger 1s --stats --json 2>"$tmp/linger.err" &
pid=$!
bg_pids+=($pid)
addr=$(listening_on "$tmp/linger.err")
python3 "$tmp/stall.py" "$addr" &
stall=$!
bg_pids+=($stall)
python3 "$tmp/client.py" "$addr" "$tmp/linger.fast" 0 &
fast=$!
start=$(now)
wait $fast
for ((i = 0; i < 600; i++)); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
end=$(now)
kill -0 $pid 2>/dev/null && { echo "  (sluice-fanout still running 30 s after the input's end)"; kill -9 $pid; }
wait $pid
check "drop + stalled subscriber: exit 0 at the end of the input" same "$?" 0
check "drop + stalled subscriber: ended within --linger 1000 ms (and a generous margin) of the reader's end" \
  elapsed_below "$start" "$end" 20
check "drop + stalled subscriber: the stalled one is cut off, reported" \
  grep -qE "^sluice-fanout: cut off 127\.0\.0\.1:[0-9]+: still owed lines 1000 ms after the end of the input \(--linger\)$" "$tmp/linger.err"
check "drop + stalled subscriber: the reading one got every line" cmp -s "$tmp/many" "$tmp/linger.fast"
check "drop + stalled subscriber: --stats counts the cut-off" same "$(json_field "$(tail -1 "$tmp/linger.err")" cut_off)" 1
kill $stall 2>/dev/null

# --- drop: SIGTERM with the input open and a stalled subscriber ends it
# within --linger; the first SIGTERM is enough ---
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$fan" --listen 127.0.0.1:0 --wait-for 1 --policy drop --send-buffer 4K --linger 1000ms <"$tmp/fifo" 2>"$tmp/lterm.err" &
pid=$!
bg_pids+=($pid)
exec 7>"$tmp/fifo"
addr=$(listening_on "$tmp/lterm.err")
python3 "$tmp/stall.py" "$addr" 7>&- &
stall=$!
bg_pids+=($stall)
# Enough that the stalled subscriber holds lines it is owed; the write
# returns once sluice-fanout has read all but a pipe's worth.
head -c 3000000 "$tmp/many" >&7
start=$(now)
kill -TERM $pid
for ((i = 0; i < 600; i++)); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
end=$(now)
kill -0 $pid 2>/dev/null && { echo "  (sluice-fanout still running 30 s after SIGTERM)"; kill -9 $pid; }
wait $pid
check "drop + stalled subscriber + one SIGTERM: exit 0" same "$?" 0
check "drop + stalled subscriber + one SIGTERM: ended within --linger (and a generous margin)" elapsed_below "$start" "$end" 20
check "drop + stalled subscriber + one SIGTERM: the cut-off is reported" grep -q "(--linger)$" "$tmp/lterm.err"
exec 7>&-
kill $stall 2>/dev/null

# --- --max-connections: one more subscriber is closed at once ---
"$fan" --listen 127.0.0.1:0 --max-connections 1 --wait-for 1 <"$tmp/fifo" 2>"$tmp/maxc.err" &
pid=$!
bg_pids+=($pid)
exec 7>"$tmp/fifo"
addr=$(listening_on "$tmp/maxc.err")
# The first subscriber writes what it gets as it comes (client.py buffers).
cat >"$tmp/reader.py" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=60)
with open(sys.argv[2], "wb", buffering=0) as f:
    while True:
        b = s.recv(65536)
        if not b:
            break
        f.write(b)
PY
# (7>&-: a client that held the FIFO open would keep the input from ending.)
python3 "$tmp/reader.py" "$addr" "$tmp/maxc.1" 7>&- &
first=$!
seq 1 10 >&7  # read once the first is in (--wait-for 1)
for ((i = 0; i < 600; i++)); do [ -f "$tmp/maxc.1" ] && [ "$(wc -l <"$tmp/maxc.1")" -ge 10 ] && break; sleep 0.05; done
timeout 60 python3 "$tmp/client.py" "$addr" "$tmp/maxc.2" 0 7>&-
check "--max-connections 1: a second subscriber is closed at once (its read ends)" same "$?" 0
check "--max-connections 1: it got nothing" same "$(wc -c <"$tmp/maxc.2")" 0
seq 11 20 >&7
exec 7>&-
wait $pid
check "--max-connections 1: exit 0" same "$?" 0
wait $first
check "--max-connections 1: the first got every line" cmp -s "$tmp/maxc.1" <(seq 1 20)

# --- --idle-timeout: a subscriber that gets nothing and sends nothing is cut off ---
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$fan" --listen 127.0.0.1:0 --idle-timeout 300ms <"$tmp/fifo" 2>"$tmp/idle.err" &
pid=$!
bg_pids+=($pid)
exec 7>"$tmp/fifo"
addr=$(listening_on "$tmp/idle.err")
timeout 60 python3 "$tmp/client.py" "$addr" "$tmp/idle.1" 0 7>&-
check "--idle-timeout 300ms: the idle subscriber's connection ends" same "$?" 0
check "--idle-timeout: reported" \
  grep -qE "^sluice-fanout: cut off 127\.0\.0\.1:[0-9]+: nothing sent or received for 300 ms \(--idle-timeout\)$" "$tmp/idle.err"
exec 7>&-
wait $pid
check "--idle-timeout: exit 0 at the end of the input" same "$?" 0

# --- memory comes back when subscribers close (issue 19, item 6): 40
# stalled subscribers each hold up to --max-buffered under drop; once they
# close, sluice-fanout's RSS returns near where it started. Not under a
# sanitizer, whose allocator keeps freed memory (quarantine) by design.
if ldd "$fan" 2>/dev/null | grep -E 'lib(a|t|l)san' >/dev/null; then  # no -q: under pipefail it could cut ldd's pipe
  echo "SKIP memory after subscribers close: sluice-fanout runs under a sanitizer"
else
  cat >"$tmp/stalls.py" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
ss = []
for i in range(int(sys.argv[2])):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, int(port)))
    ss.append(s)
open(sys.argv[3], "w").close()
time.sleep(60)
PY
  rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$1/status"; }
  rm -f "$tmp/fifo" "$tmp/stalls.ready"
  mkfifo "$tmp/fifo"
  "$fan" --listen 127.0.0.1:0 --policy drop --max-buffered 1M --send-buffer 4K <"$tmp/fifo" 2>"$tmp/mem.err" &
  pid=$!
  bg_pids+=($pid)
  exec 7>"$tmp/fifo"
  addr=$(listening_on "$tmp/mem.err")
  python3 "$tmp/stalls.py" "$addr" 40 "$tmp/stalls.ready" 7>&- &
  stalls=$!
  bg_pids+=($stalls)
  for ((i = 0; i < 600; i++)); do [ -e "$tmp/stalls.ready" ] && break; sleep 0.05; done
  for ((i = 0; i < 600; i++)); do [ "$(ls /proc/$pid/fd | wc -l)" -ge 44 ] && break; sleep 0.05; done
  start_kb=$(rss_kb $pid)
  # 40 MB of lines: each stalled subscriber fills its 1M.
  seq 1 1500000 | sed 's/$/ a line of the fanout, of some length/' >&7
  for ((i = 0; i < 600; i++)); do [ "$(rss_kb $pid)" -gt $((start_kb + 40000)) ] && break; sleep 0.05; done
  peak_kb=$(rss_kb $pid)
  check "memory: 40 stalled subscribers hold their lines ($start_kb kB -> $peak_kb kB)" test "$peak_kb" -gt $((start_kb + 40000))
  kill $stalls 2>/dev/null
  for ((i = 0; i < 600; i++)); do [ "$(rss_kb $pid)" -lt $((start_kb + 8000)) ] && break; sleep 0.05; done
  end_kb=$(rss_kb $pid)
  check "memory: back within 8 MB of the start once they close ($peak_kb kB -> $end_kb kB)" test "$end_kb" -lt $((start_kb + 8000))
  exec 7>&-
  wait $pid
  check "memory: exit 0" same "$?" 0
fi

# --- an address in use: exit 1 with the reason ---
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"$tmp/port" &
holder=$!
bg_pids+=($holder)
for ((i = 0; i < 200 * ${SLUICE_TIME_SCALE:-1}; i++)); do [ -s "$tmp/port" ] && break; sleep 0.05; done
"$fan" --listen "127.0.0.1:$(cat "$tmp/port")" </dev/null 2>"$tmp/inuse.err"
check "address in use: exit 1" same "$?" 1
check "address in use: says so" grep -q "sluice-fanout: 127.0.0.1:$(cat "$tmp/port"): Address already in use" "$tmp/inuse.err"
kill $holder 2>/dev/null

# Resources that run out where the streams cannot make an error of them
# (fds, under `ulimit -n`) are a message and exit 1, never std::terminate
# (tool.h's catch); with enough, the empty input ends the run: exit 0.
for n in 4 5 6 7; do
  (ulimit -n $n && exec timeout $((10 * ${SLUICE_TIME_SCALE:-1})) "$fan" --listen 127.0.0.1:0) \
    </dev/null >/dev/null 2>"$tmp/emfile.err"
  st=$?
  check "fanout under ulimit -n $n: exit 0 or 1 (got $st)" test $st -le 1
  check "fanout under ulimit -n $n: no terminate" not grep -q terminate "$tmp/emfile.err"
done

# The skeleton every tool shares (check.sh).
check_skeleton sluice-fanout "$fan"

echo "fanout: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
