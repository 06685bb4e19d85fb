#!/usr/bin/env bash
# restart-loss.sh: how much a plain-TCP syslog receiver restart loses.
# sluice-log sends LINES numbered lines (paced, RATE lines/s) to a real
# rsyslogd (imptcp -> omfile, %rawmsg%), which is stopped with SIGTERM once
# a third of them has arrived and started again at once on the same port;
# sluice-log reconnects and sends the rest. Each run prints the lines and
# bytes lost (numbers that never arrived), duplicates, and what sluice-log
# said (exit status, its maybe_lost count).
#
#   perf/shipping/restart-loss.sh [SLUICE_LOG]     (default build/tools/sluice-log)
#
# Environment: RUNS (3), LINES (300000), RATE (100000 lines/s), RSYSLOGD
# (/usr/sbin/rsyslogd). Loopback only; every wait is bounded.
set -uo pipefail
slog=$(realpath "${1:-build/tools/sluice-log}")
runs=${RUNS:-3} lines=${LINES:-300000} rate=${RATE:-100000}
rsyslogd=${RSYSLOGD:-/usr/sbin/rsyslogd}
[ -x "$rsyslogd" ] || { echo "restart-loss: no rsyslogd at $rsyslogd (apt-get install rsyslog)" >&2; exit 1; }
[ -x "$slog" ] || { echo "restart-loss: no sluice-log at $slog (ninja -C build tools/sluice-log)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
# rsyslogd (8.2302) may send SIGTERM to its parent: ignored here.
trap '' TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/rsyslog.conf" <<EOF
global(workDirectory="$tmp" parser.escapeControlCharactersOnReceive="off")
module(load="imptcp")
template(name="raw" type="string" string="%rawmsg%\n")
ruleset(name="r") { action(type="omfile" file="$tmp/rsyslog.log" template="raw") }
input(type="imptcp" address="127.0.0.1" port="$port" ruleset="r")
EOF
start_rsyslogd() {
  (trap - TERM; exec "$rsyslogd" -n -f "$tmp/rsyslog.conf" -i "$tmp/rsyslog.pid") 2>>"$tmp/rsyslogd.err" &
  rp=$!
  pids+=("$rp")
  for _ in $(seq 200); do [ -s "$tmp/rsyslog.pid" ] && break; sleep 0.05; done
}
count() { if [ -f "$tmp/rsyslog.log" ]; then wc -l <"$tmp/rsyslog.log"; else echo 0; fi; }
cat >"$tmp/gen.py" <<'PY'
import sys, time
n, rate = int(sys.argv[1]), int(sys.argv[2])
step = max(1, rate // 100)  # 100 bursts a second
t0 = time.monotonic()
for i in range(0, n, step):
    sys.stdout.write("".join("%d restart-loss line, padded to about 60 bytes ........\n" % j
                             for j in range(i, min(n, i + step))))
    sys.stdout.flush()
    delay = t0 + (i + step) / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
PY
echo "restart-loss: $runs runs, $lines lines at $rate lines/s, one rsyslogd SIGTERM + restart each, port $port"
for run in $(seq "$runs"); do
  rm -f "$tmp/rsyslog.log" "$tmp/rsyslog.pid"
  start_rsyslogd
  python3 "$tmp/gen.py" "$lines" "$rate" | "$slog" --stats --json --app-name loss "syslog://127.0.0.1:$port" \
    2>"$tmp/slog.err" &
  sp=$!
  pids+=("$sp")
  for _ in $(seq 1200); do [ "$(count)" -ge $((lines / 3)) ] && break; sleep 0.025; done
  kill -TERM "$rp"
  for _ in $(seq 400); do kill -0 "$rp" 2>/dev/null || break; sleep 0.05; done
  wait "$rp" 2>/dev/null
  rm -f "$tmp/rsyslog.pid"
  start_rsyslogd
  for _ in $(seq 1200); do kill -0 "$sp" 2>/dev/null || break; sleep 0.05; done
  wait "$sp"
  status=$?
  # The file is complete once it stops growing (rsyslog writes behind).
  prev=-1
  for _ in $(seq 100); do c=$(count); [ "$c" = "$prev" ] && break; prev=$c; sleep 0.2; done
  kill -TERM "$rp"
  wait "$rp" 2>/dev/null
  python3 - "$tmp/rsyslog.log" "$lines" "$tmp/slog.err" "$status" "$run" <<'PY'
import json, sys
path, n, err, status, run = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
seen, total = set(), 0
for line in open(path, "rb"):
    msg = line.rstrip(b"\n").split(b" ", 7)[-1]
    num = msg.split(b" ", 1)[0]
    if num.isdigit():
        seen.add(int(num)); total += 1
lost = [i for i in range(n) if i not in seen]
size = lambda i: len("%d restart-loss line, padded to about 60 bytes ........" % i)
stats = {}
for l in open(err):
    if l.startswith("{"):
        stats = json.loads(l)
print("run %s: lost %d lines (%d bytes of MSG), %d duplicated; sluice-log exit %s, maybe_lost %s, reconnects %s"
      % (run, len(lost), sum(map(size, lost)), total - len(seen), status, stats.get("maybe_lost"),
         stats.get("reconnects")))
PY
done
