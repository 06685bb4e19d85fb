#!/usr/bin/env bash
# relp-compare.sh: durably acknowledged messages per second. SENDERS
# sluice::relp_writable senders (perf/shipping/relp_flood, window WINDOW)
# over loopback into
#   sluice-logd-ack   sluice-logd --listen-relp --fsync ack: a message is
#                     answered once a sync that began after its write
#                     returned (the syncs run behind the writes);
#   rsyslog-sync      rsyslogd imrelp -> omfile sync="on", the main queue
#                     direct: imrelp answers once omfile wrote and synced
#                     the message (rsyslog's comparable setting: answered
#                     means on disk);
#   rsyslog-async     rsyslogd imrelp -> its in-memory main queue -> omfile,
#                     no sync: answered once queued in memory (not durable;
#                     rsyslog's fastest RELP, for scale only);
# and, for scale, plain syslog (perf/shipping/syslog_flood, octet-counted
# TCP, nothing answered) into sluice-logd --listen (no fsync), timed until
# the file holds every line.
# Each receiver is started fresh for each run and writes a file on the same
# disk ($TMPDIR). For each: messages per second (acknowledged ones for
# RELP), the receiver's CPU time per message (all its threads), messages
# missing from its file; then the ratios.
#
#   perf/shipping/relp-compare.sh [BUILDDIR]        (default: build)
#
# Environment: SENDERS (default 4), MESSAGES (per sender, default 100000),
# RSYSLOG_MESSAGES (per sender into rsyslog-sync, which syncs each message:
# default 500), WINDOW (default 4096), SIZE (bytes of MSG, default 120),
# RUNS (best of, default 3), RSYSLOGD, TMPDIR.
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
senders=${SENDERS:-4}
messages=${MESSAGES:-100000}
rs_messages=${RSYSLOG_MESSAGES:-500}
window=${WINDOW:-4096}
size=${SIZE:-120}
runs=${RUNS:-3}
rsyslogd=${RSYSLOGD:-/usr/sbin/rsyslogd}
relp=$build/perf/relp_flood
flood=$build/perf/syslog_flood
logd=$build/tools/sluice-logd
for p in "$relp" "$flood" "$logd"; do
  [ -x "$p" ] || { echo "relp-compare: $p not built (meson setup with -Dperf=true -Dtools=true)" >&2; exit 1; }
done
tmp=$(mktemp -d)
server_pid=""
main_shell=$BASHPID
# The main shell's only: a subshell (each run's) that fails must not take
# the directory from the others.
cleanup() {
  [ "$BASHPID" = "$main_shell" ] || return 0
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# rsyslogd 8.2302 may send SIGTERM to the process that started it.
trap '' TERM
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME DIR OUT: starts the receiver, sets server_pid and port.
start() {
  local name=$1 dir=$2 out=$3 i
  case $name in
    sluice-logd-ack | sluice-logd-syslog)
      if [ "$name" = sluice-logd-ack ]; then
        "$logd" --listen-relp 127.0.0.1:0 --fsync ack "$out" 2>"$dir/err" &
      else
        "$logd" --listen 127.0.0.1:0 "$out" 2>"$dir/err" &
      fi
      server_pid=$!
      port=""
      for ((i = 0; i < 200; i++)); do
        # (The file may not be there yet: the receiver's shell makes it.)
        port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9][0-9]*\).*$/\1/p' "$dir/err" 2>/dev/null | head -1 || true)
        [ -n "$port" ] && break
        sleep 0.05
      done
      [ -n "$port" ] || { echo "relp-compare: sluice-logd did not start:" >&2; cat "$dir/err" >&2; exit 1; }
      ;;
    rsyslog-*)
      port=$(free_port)
      {
        echo "global(workDirectory=\"$dir\" parser.escapeControlCharactersOnReceive=\"off\")"
        [ "$name" = rsyslog-sync ] && echo 'main_queue(queue.type="Direct")'
        echo 'module(load="imrelp")'
        echo 'template(name="raw" type="string" string="%rawmsg%\n")'
        if [ "$name" = rsyslog-sync ]; then
          echo "ruleset(name=\"r\") { action(type=\"omfile\" file=\"$out\" template=\"raw\" sync=\"on\" flushOnTXEnd=\"on\") }"
        else
          echo "ruleset(name=\"r\") { action(type=\"omfile\" file=\"$out\" template=\"raw\") }"
        fi
        echo "input(type=\"imrelp\" address=\"127.0.0.1\" port=\"$port\" ruleset=\"r\")"
      } >"$dir/rsyslog.conf"
      setsid "$rsyslogd" -n -f "$dir/rsyslog.conf" -i "$dir/rsyslog.pid" 2>"$dir/err" &
      server_pid=$!
      for ((i = 0; i < 400; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.05
      done
      echo "relp-compare: rsyslogd did not start:" >&2
      cat "$dir/err" >&2
      exit 1
      ;;
  esac
}

stop() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# run NAME R: one fresh run. Prints "rate cpu_us_per_msg lost".
run() {
  local name=$1 r=$2
  local dir=$tmp/$name.$r
  mkdir -p "$dir"
  local out=$dir/out.log json n=$messages
  [ "$name" = rsyslog-sync ] && n=$rs_messages
  start "$name" "$dir" "$out"
  if [ "$name" = sluice-logd-syslog ]; then
    # The bytes of the file when every line is in: syslog_flood's messages
    # are SIZE bytes each, a line one more.
    json=$("$flood" "$port" --senders "$senders" --messages "$n" --size "$size" \
      --pid "$server_pid" --file "$out" --bytes $((senders * n * (size + 1))))
  else
    json=$("$relp" "$port" --senders "$senders" --messages "$n" --size "$size" --window "$window" --pid "$server_pid")
  fi
  stop
  # Distinct (sender, seq) pairs in the file: what is missing is lost.
  local have
  have=$(sed -n 's/.*sender \([0-9]*\) seq \([0-9]*\).*/\1 \2/p' "$out" | sort -u | wc -l)
  rm -rf "$dir"
  python3 -c 'import json, sys
j = json.loads(sys.argv[1])
print("%.0f %.3f %d" % (j["messages"] / j["seconds"], j["cpu_seconds"] * 1e6 / j["messages"], j["messages"] - int(sys.argv[2])))' \
    "$json" "$have"
}

echo "relp-compare: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
names=(sluice-logd-ack rsyslog-sync rsyslog-async sluice-logd-syslog)
if [ ! -x "$rsyslogd" ] || ! { [ -e /usr/lib/x86_64-linux-gnu/rsyslog/imrelp.so ] || [ -e /usr/lib/rsyslog/imrelp.so ]; }; then
  echo "relp-compare: rsyslogd with imrelp not found (apt-get install rsyslog rsyslog-relp), rsyslog skipped" >&2
  names=(sluice-logd-ack sluice-logd-syslog)
fi
declare -A best_rate best_cpu lost
# Alternated run by run, so that a busy moment of the machine hits all.
for ((r = 1; r <= runs; r++)); do
  for name in "${names[@]}"; do
    read -r rate cpu l < <(run "$name" "$r")
    echo "relp-compare: $name run $r: $rate msg/s, $cpu us CPU/msg, $l lost" >&2
    if [ -z "${best_rate[$name]:-}" ] || [ "$rate" -gt "${best_rate[$name]}" ]; then best_rate[$name]=$rate; fi
    if [ -z "${best_cpu[$name]:-}" ] || awk -v a="$cpu" -v b="${best_cpu[$name]}" 'BEGIN { exit !(a < b) }'; then
      best_cpu[$name]=$cpu
    fi
    lost[$name]=$((${lost[$name]:-0} + l))
  done
done

echo "acknowledged delivery: $senders senders x $messages messages ($rs_messages into rsyslog-sync) x $size B, RELP window $window, loopback; best of $runs"
printf '%-20s %12s %14s %6s %14s %14s %14s\n' receiver "msgs/s" "CPU us / msg" lost "vs rs-sync" "vs rs-async" "vs syslog"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2fx", a / b }'; }
for name in "${names[@]}"; do
  printf '%-20s %12s %14s %6s %14s %14s %14s\n' "$name" "${best_rate[$name]}" "${best_cpu[$name]}" "${lost[$name]}" \
    "$(ratio "${best_rate[$name]}" "${best_rate[rsyslog-sync]:-}")" \
    "$(ratio "${best_rate[$name]}" "${best_rate[rsyslog-async]:-}")" \
    "$(ratio "${best_rate[$name]}" "${best_rate[sluice-logd-syslog]:-}")"
done
echo "(vs: the rate's ratio to that receiver's; CPU/msg ratios: sluice-logd-ack / rsyslog-sync" \
  "$(ratio "${best_cpu[sluice-logd-ack]:-}" "${best_cpu[rsyslog-sync]:-}"), / rsyslog-async" \
  "$(ratio "${best_cpu[sluice-logd-ack]:-}" "${best_cpu[rsyslog-async]:-}"), / plain syslog" \
  "$(ratio "${best_cpu[sluice-logd-ack]:-}" "${best_cpu[sluice-logd-syslog]:-}"))"
