#!/usr/bin/env bash
# --metrics (issue 36) on sluice-logd, sluice-fanout and sluice-log, over
# loopback: after N messages each counter of /metrics equals what --stats
# --json prints at the exit (one table behind both); promtool accepts the
# text; a real prometheus, started here on a loopback port with its own
# config and data directory, scrapes sluice-logd (up == 1, and the count
# of messages); 404 for another path, 405 for another method; a 1 MiB
# request, a 17th connection at once and a request not whole within 10 s
# are closed and counted; sluice-log's oldest waiting line's age; sluice-log
# into a FILE, into relp:// (sluice-logd --listen-relp), with --follow (its
# sluice_log_follow_* rows equal the one --stats --json object's keys, its
# gauges served, the bytes left unread while held back); a port in use is
# bad usage (exit 2).
#
#   tests/tools/metrics_test.sh SLUICE_LOGD SLUICE_FANOUT SLUICE_LOG
set -euo pipefail
logd=$1
fan=$2
slog=$3
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
n=2000

# The port of "TOOL: serving metrics on http://127.0.0.1:PORT/metrics"
# in FILE, within 10 s (scaled).
metrics_port() {
  local p=
  for _ in $(seq $((200 * scale))); do
    p=$(sed -n 's|^sluice-[a-z]*: serving metrics on http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' "$1")
    [ -n "$p" ] && break
    sleep 0.05
  done
  [ -n "$p" ] || fail "no 'serving metrics' line in $1: $(cat "$1")"
  echo "$p"
}
# Waits up to 30 s (scaled) for FILE to have N lines.
wait_lines() {
  for _ in $(seq $((600 * scale))); do
    [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "$1 has $(wc -l < "$1") lines, not $2"
}
scrape() { curl -sS --max-time $((10 * scale)) "http://127.0.0.1:$1/metrics"; }
# Starts sluice-log --metrics --stats --json ARG... reading the FIFO
# $dir/NAME.in, held open on fd 8 (its input ends at `exec 8>&-`): its
# standard error in $dir/NAME.err, its pid in $fed, its metrics port in
# $fed_port.
start_fed() {
  local name=$1
  shift
  mkfifo "$dir/$name.in"
  : > "$dir/$name.err"
  "$slog" --metrics 127.0.0.1:0 --stats --json "$@" < "$dir/$name.in" 2>> "$dir/$name.err" &
  fed=$!
  pids+=("$fed")
  exec 8> "$dir/$name.in"
  fed_port=$(metrics_port "$dir/$name.err")
}
# Scrapes PORT into FILE until it has the line LINE, within 30 s (scaled):
# a count that reached its end, so that the scrape is the last word.
scrape_until() {
  for _ in $(seq $((600 * scale))); do
    scrape "$1" > "$2"
    grep -qx "$3" "$2" && return 0
    sleep 0.05
  done
  fail "no '$3' in /metrics: $(cat "$2")"
}
# Each JSON key of --stats --json (the last line of ERR) against its metric
# in the scraped text, by the mapping given as KEY=METRIC arguments; every
# key of the JSON object must be mapped, and each metric must equal it.
# KEY=METRIC+1: the exit's value is one more than the scrape's (--follow's
# last save, made after the metrics server has closed).
cat > "$dir/same.py" <<'PY'
import json, re, sys
err, scraped = sys.argv[1], sys.argv[2]
mapping = dict(a.split("=", 1) for a in sys.argv[3:])
stats = json.loads(open(err).read().strip().splitlines()[-1])
samples = {}
for line in open(scraped):
    if line.startswith("#") or not line.strip():
        continue
    name, value = line.rsplit(" ", 1)
    samples[name] = value
unmapped = set(stats) - set(mapping)
assert not unmapped, f"--stats --json keys with no metric in the test: {unmapped}"
for key, metric in mapping.items():
    assert key in stats, f"{key} not in --stats --json: {stats}"
    want = stats[key]
    if metric.endswith("+1"):
        metric, want = metric[:-2], want - 1
    got = samples.get(metric)
    assert got is not None, f"{metric} not in /metrics"
    if isinstance(want, str):  # a text row: an info gauge with the text as label
        continue
    assert float(got) == want, f"{metric} is {got}, --stats --json's {key} is {want}"
print(len(mapping), "counters agree")
PY

# --- usage: a bad address, a Unix socket, --help
for t in "$logd --listen 127.0.0.1:0" "$fan --listen 127.0.0.1:0" "$slog"; do
  for bad in nope 127.0.0.1:70000 unix:/x; do
    st=0
    # shellcheck disable=SC2086
    $t --metrics "$bad" "$dir/u.log" < /dev/null 2> "$dir/usage.err" || st=$?
    [ "$st" -eq 2 ] || fail "$t --metrics $bad: exit $st"
    grep -q "^Try '.*--help' for more information.$" "$dir/usage.err" || fail "--metrics $bad: $(cat "$dir/usage.err")"
  done
  ${t%% *} --help > "$dir/help"
  grep -q -- '--metrics HOST:PORT' "$dir/help" || fail "${t%% *} --help has no --metrics"
done
ok "usage: a bad --metrics is exit 2; --help has it"

# --- sluice-logd: N messages, the scrape, promtool, 404, 405, 1 MiB
: > "$dir/logd.err"
"$logd" --listen 127.0.0.1:0 --listen-relp 127.0.0.1:0 --metrics 127.0.0.1:0 --stats --json "$dir/logd.log" \
  2>> "$dir/logd.err" &
lp=$!
pids+=("$lp")
mport=$(metrics_port "$dir/logd.err")
port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/logd.err")
[ -n "$port" ] || fail "no listening line: $(cat "$dir/logd.err")"
seq "$n" | timeout $((60 * scale)) "$slog" "syslog://127.0.0.1:$port" 2> "$dir/slog.err" || fail "sluice-log: $(cat "$dir/slog.err")"
wait_lines "$dir/logd.log" "$n"

# A port in use: bad usage, said with the reason, for each tool.
for t in "$logd --listen 127.0.0.1:0 $dir/u.log" "$fan --listen 127.0.0.1:0" "$slog $dir/u.log"; do
  st=0
  # shellcheck disable=SC2086
  timeout $((20 * scale)) $t --metrics "127.0.0.1:$mport" < /dev/null 2> "$dir/inuse.err" || st=$?
  [ "$st" -eq 2 ] || fail "${t%% *} --metrics on a port in use: exit $st: $(cat "$dir/inuse.err")"
  grep -q "^sluice-[a-z]*: --metrics 127.0.0.1:$mport: cannot listen: Address already in use$" "$dir/inuse.err" ||
    fail "port in use: $(cat "$dir/inuse.err")"
done
ok "a --metrics port in use: exit 2 with the reason"

curl -sS -D "$dir/headers" -o "$dir/logd.metrics" --max-time $((10 * scale)) "http://127.0.0.1:$mport/metrics"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$dir/headers" || fail "Content-Type: $(cat "$dir/headers")"
grep -qx "sluice_logd_messages_received_total $n" "$dir/logd.metrics" || fail "messages: $(grep messages "$dir/logd.metrics")"
grep -qx "sluice_logd_messages_written_total $n" "$dir/logd.metrics" || fail "written: $(cat "$dir/logd.metrics")"
grep -qx '# TYPE sluice_logd_open_connections gauge' "$dir/logd.metrics" || fail "no open_connections gauge"
ok "sluice-logd: /metrics after $n messages"
promtool check metrics < "$dir/logd.metrics" > "$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
ok "promtool check metrics passes on sluice-logd's"

code=$(curl -s -o /dev/null -w '%{http_code}' --max-time $((10 * scale)) "http://127.0.0.1:$mport/other")
[ "$code" = 404 ] || fail "/other: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time $((10 * scale)) -X POST -d x "http://127.0.0.1:$mport/metrics")
[ "$code" = 405 ] || fail "POST /metrics: $code"
ok "404 for another path, 405 for POST"

# 1 MiB of request headers: closed, no answer, and counted.
python3 - "$mport" "$scale" <<'PY' || fail "1 MiB request: answered, or not closed"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10 * int(sys.argv[2]))
got = b""
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
except (BrokenPipeError, ConnectionResetError):
    pass
try:
    while True:
        c = s.recv(65536)
        if not c:
            break
        got += c
except ConnectionResetError:
    pass
sys.exit(1 if got else 0)
PY
scrape "$mport" > "$dir/after.metrics"
grep -qx 'sluice_logd_metrics_requests_closed_total{reason="too_large"} 1' "$dir/after.metrics" ||
  fail "too_large: $(grep closed "$dir/after.metrics")"
grep -qx 'sluice_logd_metrics_requests_total{code="404"} 1' "$dir/after.metrics" || fail "404 not counted"
ok "a 1 MiB request is closed without an answer, and counted"

# 16 connections at once that send nothing: the 17th is closed at once,
# counted; once they go, /metrics answers again.
python3 - "$mport" "$scale" <<'PY' || fail "the 17th connection was not closed"
import socket, sys, time
port, scale = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
time.sleep(0.2 * scale)  # accepted, each one
extra = socket.create_connection(("127.0.0.1", port))
extra.settimeout(5 * scale)
try:
    closed = extra.recv(1) == b""
except ConnectionResetError:
    closed = True
for s in held:
    s.close()
sys.exit(0 if closed else 1)
PY
for _ in $(seq $((100 * scale))); do
  scrape "$mport" > "$dir/after.metrics" 2>/dev/null && break
  sleep 0.05
done
grep -qx 'sluice_logd_metrics_requests_closed_total{reason="too_many"} 1' "$dir/after.metrics" ||
  fail "too_many: $(grep closed "$dir/after.metrics")"
ok "past 16 connections at once: closed, counted, and served again after"

# A request that never ends (no blank line): closed 10 s after it began,
# and counted. Its wait runs beside the rest of the test; it is checked at
# the end.
python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.monotonic()
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
s.settimeout(60)
try:
    while s.recv(65536):
        pass
except ConnectionResetError:
    pass
open(sys.argv[2], "w").write("%.1f" % (time.monotonic() - t0))' "$mport" "$dir/slow.took" &
slow=$!
pids+=("$slow")

# --- a real prometheus scrapes it: up == 1, and the count of messages
pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sluice-logd
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
prometheus --config.file="$dir/prometheus.yml" --web.listen-address="127.0.0.1:$pport" \
  --storage.tsdb.path="$dir/tsdb" > "$dir/prometheus.log" 2>&1 &
pp=$!
pids+=("$pp")
query() {  # the value of the first sample of QUERY, or nothing
  curl -s --max-time 5 -G "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null || true
}
up=
for _ in $(seq $((120 * scale))); do
  up=$(query up)
  [ "$up" = 1 ] && break
  sleep 0.25
done
[ "$up" = 1 ] || fail "prometheus: up is '$up' after $((30 * scale)) s: $(tail -5 "$dir/prometheus.log")"
got=$(query sluice_logd_messages_received_total)
[ "$got" = "$n" ] || fail "prometheus: sluice_logd_messages_received_total is '$got'"
ok "prometheus scrapes sluice-logd: up == 1, $n messages"
kill -TERM "$pp"
wait "$pp" 2>/dev/null || true

# --- sluice-fanout: a subscriber, N lines, then the scrape before the end
mkfifo "$dir/fan.in"
: > "$dir/fan.err"
"$fan" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --wait-for 1 --stats --json < "$dir/fan.in" 2>> "$dir/fan.err" &
fp=$!
pids+=("$fp")
exec 7> "$dir/fan.in"
fmport=$(metrics_port "$dir/fan.err")
for _ in $(seq $((200 * scale))); do grep -q 'listening on 127.0.0.1:' "$dir/fan.err" && break; sleep 0.05; done
fport=$(sed -n 's/^sluice-fanout: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/fan.err")
[ -n "$fport" ] || fail "fanout: no listening line: $(cat "$dir/fan.err")"
python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
with open(sys.argv[2], "wb") as f:
    while True:
        b = s.recv(65536)
        if not b:
            break
        f.write(b)' "$fport" "$dir/sub.out" 7>&- &
pids+=($!)
seq "$n" >&7
wait_lines "$dir/sub.out" "$n"
scrape "$fmport" > "$dir/fan.metrics"
promtool check metrics < "$dir/fan.metrics" > "$dir/promtool.out" 2>&1 || fail "promtool (fanout): $(cat "$dir/promtool.out")"
grep -qx 'sluice_fanout_policy_info{policy="pause"} 1' "$dir/fan.metrics" || fail "no policy_info: $(cat "$dir/fan.metrics")"
grep -qx 'sluice_fanout_subscribers 1' "$dir/fan.metrics" || fail "subscribers gauge: $(cat "$dir/fan.metrics")"
exec 7>&-
wait "$fp" || fail "sluice-fanout exited $?: $(cat "$dir/fan.err")"
python3 "$dir/same.py" "$dir/fan.err" "$dir/fan.metrics" lines_in=sluice_fanout_lines_received_total \
  lines_sent=sluice_fanout_lines_sent_total lines_dropped=sluice_fanout_lines_dropped_total \
  subscribers=sluice_fanout_subscribers_total cut_off=sluice_fanout_cut_off_total \
  policy='sluice_fanout_policy_info{policy="pause"}' > "$dir/same.out" 2>&1 || fail "sluice-fanout: $(cat "$dir/same.out")"
ok "sluice-fanout: promtool passes, every --stats --json count equals its metric"

# --- sluice-log into a FILE: N lines, the scrape while its input is open
start_fed log --max-size 4K --keep 2 "$dir/out.log"
sp=$fed
lmport=$fed_port
seq "$n" >&8
scrape_until "$lmport" "$dir/log.metrics" "sluice_log_lines_written_total $n"
promtool check metrics < "$dir/log.metrics" > "$dir/promtool.out" 2>&1 || fail "promtool (log): $(cat "$dir/promtool.out")"
grep -qx 'sluice_log_oldest_pending_age_seconds 0.000' "$dir/log.metrics" || fail "age with every line written: $(grep age "$dir/log.metrics")"
exec 8>&-
wait "$sp" || fail "sluice-log exited $?: $(cat "$dir/log.err")"
python3 "$dir/same.py" "$dir/log.err" "$dir/log.metrics" lines=sluice_log_lines_written_total \
  bytes=sluice_log_written_bytes_total rotations=sluice_log_rotations_total reopens=sluice_log_reopens_total \
  > "$dir/same.out" 2>&1 || fail "sluice-log: $(cat "$dir/same.out")"
ok "sluice-log: promtool passes, every --stats --json count equals its metric"

# --- sluice-log --follow into a FILE: the follower's counts are rows of
# the same table, so /metrics' sluice_log_follow_* equal --stats --json's
# keys at the exit (one object), and its gauges are there
mkdir "$dir/follow"
seq 300 > "$dir/follow/app.log"
: > "$dir/follow.err"
"$slog" --follow "$dir/follow/app.log" --state "$dir/follow/state" --metrics 127.0.0.1:0 --stats --json \
  "$dir/follow/out.log" < /dev/null 2>> "$dir/follow.err" &
fp=$!
pids+=("$fp")
fmport=$(metrics_port "$dir/follow.err")
# Scraped once every line is written and its position saved: nothing
# changes after that but the last save at the exit.
size=$(stat -c %s "$dir/follow/app.log")
for _ in $(seq $((600 * scale))); do
  scrape "$fmport" > "$dir/follow.metrics"
  grep -qx 'sluice_log_lines_written_total 300' "$dir/follow.metrics" &&
    awk -v size="$size" 'NR == 2 && $6 == size { found = 1 } END { exit !found }' "$dir/follow/state/positions" 2>/dev/null &&
    break
  sleep 0.05
done
scrape "$fmport" > "$dir/follow.metrics"
grep -qx 'sluice_log_lines_written_total 300' "$dir/follow.metrics" || fail "--follow: $(cat "$dir/follow.metrics")"
kill -TERM "$fp"
wait "$fp" || fail "sluice-log --follow exited $?: $(cat "$dir/follow.err")"
promtool check metrics < "$dir/follow.metrics" > "$dir/promtool.out" 2>&1 || fail "promtool (--follow): $(cat "$dir/promtool.out")"
[ "$(grep -c '^{' "$dir/follow.err")" -eq 1 ] || fail "--follow: not one --stats --json object: $(cat "$dir/follow.err")"
python3 "$dir/same.py" "$dir/follow.err" "$dir/follow.metrics" lines=sluice_log_lines_written_total \
  bytes=sluice_log_written_bytes_total rotations=sluice_log_rotations_total reopens=sluice_log_reopens_total \
  follow_files=sluice_log_follow_files_opened_total follow_rotations=sluice_log_follow_rotations_total \
  truncations=sluice_log_follow_truncations_total reread=sluice_log_follow_reread_lines_total \
  partial_lines=sluice_log_follow_partial_lines_total state_saves=sluice_log_follow_state_saves_total+1 \
  state_failures=sluice_log_follow_state_failures_total > "$dir/same.out" 2>&1 ||
  fail "sluice-log --follow: $(cat "$dir/same.out")"
grep -qx 'sluice_log_follow_files 1' "$dir/follow.metrics" || fail "--follow files now: $(grep follow "$dir/follow.metrics")"
grep -qx 'sluice_log_follow_unread_bytes 0' "$dir/follow.metrics" || fail "--follow unread: $(grep follow "$dir/follow.metrics")"
grep -q '^sluice_log_follow_state_age_seconds [0-9.]*$' "$dir/follow.metrics" || fail "--follow state age: $(grep follow "$dir/follow.metrics")"
ok "sluice-log --follow: one --stats --json object, its follow counts equal /metrics', the gauges there, promtool passes"

# --- sluice-log into relp:// (sluice-logd --listen-relp): scraped once
# every line is acknowledged, after which no count changes
: > "$dir/relpd.err"
"$logd" --listen-relp 127.0.0.1:0 "$dir/relpd.log" 2>> "$dir/relpd.err" &
rdp=$!
pids+=("$rdp")
for _ in $(seq $((200 * scale))); do
  rport=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\) (RELP)$/\1/p' "$dir/relpd.err")
  [ -n "$rport" ] && break
  sleep 0.05
done
[ -n "$rport" ] || fail "no RELP listening line: $(cat "$dir/relpd.err")"
start_fed relp "relp://127.0.0.1:$rport"
rp=$fed
rmport=$fed_port
seq "$n" >&8
scrape_until "$rmport" "$dir/relp.metrics" "sluice_log_messages_acked_total $n"
exec 8>&-
wait "$rp" || fail "sluice-log relp:// exited $?: $(cat "$dir/relp.err")"
kill -TERM "$rdp"
wait "$rdp" || fail "sluice-logd --listen-relp exited $?: $(cat "$dir/relpd.err")"
promtool check metrics < "$dir/relp.metrics" > "$dir/promtool.out" 2>&1 || fail "promtool (relp://): $(cat "$dir/promtool.out")"
python3 "$dir/same.py" "$dir/relp.err" "$dir/relp.metrics" lines=sluice_log_lines_read_total \
  acked=sluice_log_messages_acked_total resent=sluice_log_messages_resent_total \
  dropped=sluice_log_messages_dropped_total reconnects=sluice_log_reconnects_total \
  refused=sluice_log_messages_refused_total truncated=sluice_log_messages_truncated_total > "$dir/same.out" 2>&1 ||
  fail "sluice-log relp://: $(cat "$dir/same.out")"
ok "sluice-log relp://: promtool passes, every --stats --json count equals its metric"

# --- sluice-log to a receiver that is away: its lines wait, and the
# oldest one's age grows with the wait
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkfifo "$dir/away.in"
: > "$dir/away.err"
"$slog" --metrics 127.0.0.1:0 --grace 0 "syslog://127.0.0.1:$dead" < "$dir/away.in" 2>> "$dir/away.err" &
ap=$!
pids+=("$ap")
exec 9> "$dir/away.in"
amport=$(metrics_port "$dir/away.err")
seq 5 >&9
sleep 1
scrape "$amport" > "$dir/away.metrics"
kill -TERM "$ap"
exec 9>&-
st=0
wait "$ap" || st=$?
[ "$st" -eq 1 ] || fail "sluice-log, its 5 lines dropped at SIGTERM: exit $st: $(cat "$dir/away.err")"
grep -qx 'sluice_log_messages_sent_total 0' "$dir/away.metrics" || fail "sent while away: $(grep sent "$dir/away.metrics")"
age=$(sed -n 's/^sluice_log_oldest_pending_age_seconds //p' "$dir/away.metrics")
python3 -c 'import sys; sys.exit(0 if 0.9 <= float(sys.argv[1]) < 60 else 1)' "$age" || fail "the oldest line's age after 1 s: '$age'"
ok "sluice-log: the oldest unsent line's age while the receiver is away ($age s)"

# --- --follow held back by that receiver away: the file is read no
# further than the stream takes, and the rest is behind its end, unread
mkdir "$dir/held"
python3 -c 'import sys; open(sys.argv[1], "w").write("".join("line %06d %s\n" % (i, "x" * 40) for i in range(40000)))' \
  "$dir/held/big.log"
: > "$dir/held.err"
"$slog" --follow "$dir/held/big.log" --metrics 127.0.0.1:0 --grace 0 "relp://127.0.0.1:$dead" < /dev/null \
  2>> "$dir/held.err" &
hp=$!
pids+=("$hp")
hmport=$(metrics_port "$dir/held.err")
size=$(stat -c %s "$dir/held/big.log")
# Until it has the file open and has read from it (it then reads no
# further: the stream is full).
for _ in $(seq $((200 * scale))); do
  scrape "$hmport" > "$dir/held.metrics"
  unread=$(sed -n 's/^sluice_log_follow_unread_bytes //p' "$dir/held.metrics")
  grep -qx 'sluice_log_follow_files 1' "$dir/held.metrics" && [ -n "$unread" ] && [ "$unread" -lt "$size" ] && break
  sleep 0.05
done
kill -TERM "$hp"
st=0
wait "$hp" || st=$?
[ "$st" -eq 1 ] || fail "sluice-log --follow, its lines dropped at SIGTERM: exit $st: $(cat "$dir/held.err")"
# Read: at most a few reads of 64 KiB beyond what the stream holds.
[ -n "$unread" ] && [ "$unread" -gt $((size / 2)) ] && [ "$unread" -lt "$size" ] ||
  fail "--follow held back: $unread of $size bytes unread: $(grep follow "$dir/held.metrics")"
grep -qx 'sluice_log_follow_files 1' "$dir/held.metrics" || fail "--follow held back: $(grep follow "$dir/held.metrics")"
ok "sluice-log --follow held back: $unread of $size bytes behind what was read (sluice_log_follow_unread_bytes)"

# --- the same with --spool: the lines wait in the spool, whose rows and
# gauges promtool accepts too
mkfifo "$dir/spool.in"
: > "$dir/spool.err"
"$slog" --metrics 127.0.0.1:0 --grace 0 --spool "$dir/spool" "syslog://127.0.0.1:$dead" < "$dir/spool.in" 2>> "$dir/spool.err" &
sp2=$!
pids+=("$sp2")
exec 9> "$dir/spool.in"
smport=$(metrics_port "$dir/spool.err")
seq 5 >&9
for _ in $(seq $((200 * scale))); do
  scrape "$smport" > "$dir/spool.metrics"
  grep -qx 'sluice_log_spooled_total 5' "$dir/spool.metrics" && break
  sleep 0.05
done
kill -TERM "$sp2"
exec 9>&-
st=0
wait "$sp2" || st=$?
[ "$st" -eq 1 ] || fail "sluice-log --spool, its lines left in the spool: exit $st: $(cat "$dir/spool.err")"
grep -qx 'sluice_log_spooled_total 5' "$dir/spool.metrics" || fail "--spool: $(grep spool "$dir/spool.metrics")"
grep -qx 'sluice_log_spool_segments 1' "$dir/spool.metrics" || fail "--spool segments: $(grep spool "$dir/spool.metrics")"
promtool check metrics < "$dir/spool.metrics" > "$dir/promtool.out" 2>&1 || fail "promtool (--spool): $(cat "$dir/promtool.out")"
ok "sluice-log --spool: the spool's counters and gauges, promtool passes"

# --- the request that never ended: closed after 10 s, counted; then
# sluice-logd's exit: its --stats --json against the last scrape
wait "$slow" || fail "the slow request's client failed"
python3 -c 'import sys; sys.exit(0 if 9.5 <= float(open(sys.argv[1]).read()) < 30 else 1)' "$dir/slow.took" ||
  fail "a request that never ends was closed after $(cat "$dir/slow.took") s, not 10"
scrape "$mport" > "$dir/slow.metrics"
grep -qx 'sluice_logd_metrics_requests_closed_total{reason="timeout"} 1' "$dir/slow.metrics" ||
  fail "timeout: $(grep closed "$dir/slow.metrics")"
ok "a request not whole within 10 s: closed after $(cat "$dir/slow.took") s, and counted"

# The exit's --stats --json against the last scrape: every counter equal.
scrape "$mport" > "$dir/last.metrics"
kill -TERM "$lp"
wait "$lp" || fail "sluice-logd exited $?: $(cat "$dir/logd.err")"
python3 "$dir/same.py" "$dir/logd.err" "$dir/last.metrics" messages=sluice_logd_messages_received_total \
  bytes=sluice_logd_received_bytes_total connections=sluice_logd_connections_total \
  malformed=sluice_logd_malformed_total rotations=sluice_logd_rotations_total reopens=sluice_logd_reopens_total \
  written=sluice_logd_messages_written_total not_written=sluice_logd_messages_not_written \
  truncated=sluice_logd_messages_truncated_total idle_closed=sluice_logd_idle_closed_total \
  refused=sluice_logd_connections_refused_total accept_errors=sluice_logd_accept_errors_total \
  space_waits=sluice_logd_space_waits_total fsyncs=sluice_logd_fsyncs_total \
  relp_answered=sluice_logd_relp_answered_total tls_refused=sluice_logd_tls_refused_total > "$dir/same.out" 2>&1 ||
  fail "sluice-logd: $(cat "$dir/same.out")"
ok "sluice-logd: every --stats --json count equals its metric"

# Under the sanitizers a report may come with an exit status the test
# expected (sluice-log's 1): none in any tool's standard error.
if grep -l 'Sanitizer\|runtime error:' "$dir"/*.err > "$dir/sanitized" 2>/dev/null; then
  fail "sanitizer reports in $(cat "$dir/sanitized")"
fi

echo "metrics_test: $pass passed"
