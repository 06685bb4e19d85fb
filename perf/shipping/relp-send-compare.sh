#!/usr/bin/env bash
# relp-send-compare.sh: the RELP writable's sending rate
# (perf/shipping/relp_send_bench), MESSAGES messages each run, best of RUNS,
# into three receivers one after the other:
#   in-process     a receiver thread that answers each read at once;
#   in-process+2ms the same, waiting 2 ms before it answers a read (a
#                  receiver that fsyncs each batch before answering it);
#   rsyslog        rsyslogd's imrelp -> omfile ("%rawmsg%\n"), main queue
#                  direct: a message is in the file before it is answered.
# Each: messages per second and the sender thread's CPU per message.
#
#   perf/shipping/relp-send-compare.sh [BENCH]   (default: build/perf/relp_send_bench)
#
# BENCH lets a build of another commit be measured the same way (the window
# before it slid: build relp_send_bench there and pass its path).
# Environment: MESSAGES (default 200000), SIZE (body bytes, default 100),
# WINDOW (default 1024), RUNS (default 3), RSYSLOGD (default /usr/sbin/rsyslogd).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

bench=${1:-$root/build/perf/relp_send_bench}
messages=${MESSAGES:-200000}
size=${SIZE:-100}
window=${WINDOW:-1024}
runs=${RUNS:-3}
rsyslogd=${RSYSLOGD:-/usr/sbin/rsyslogd}
args=(--messages "$messages" --size "$size" --window "$window" --runs "$runs")

echo "in-process: $("$bench" "${args[@]}" | tail -1)"
echo "in-process+2ms: $("$bench" "${args[@]}" --delay-ms 2 | tail -1)"

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# rsyslogd 8.2302 may send SIGTERM to the process that started it.
trap '' TERM
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/rsyslog.conf" <<CONF
global(workDirectory="$tmp" parser.escapeControlCharactersOnReceive="off")
main_queue(queue.type="Direct")
module(load="imrelp")
template(name="raw" type="string" string="%rawmsg%\n")
ruleset(name="r") { action(type="omfile" file="$tmp/out.log" template="raw" ioBufferSize="256k") }
input(type="imrelp" address="127.0.0.1" port="$port" ruleset="r")
CONF
setsid "$rsyslogd" -n -f "$tmp/rsyslog.conf" -i "$tmp/rsyslog.pid" 2>"$tmp/err" &
server_pid=$!
for ((i = 0; i < 400; i++)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.05
done
echo "rsyslog imrelp: $("$bench" "${args[@]}" --port "$port" | tail -1)"
echo "rsyslog wrote $(wc -l <"$tmp/out.log") lines (of $((messages * runs)) sent)"
