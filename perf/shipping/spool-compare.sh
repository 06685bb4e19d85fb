#!/usr/bin/env bash
# Throughput of sluice-log into sluice-logd over syslog:// straight and
# through --spool (the receiver up all along: every line goes through the
# segment files and back), and the peak RSS of sluice-log --spool while the
# receiver is away and the whole input is spooled. Each rate is the best of
# RUNS runs: N lines / wall time of sluice-log, and its user+sys CPU.
#
#   perf/shipping/spool-compare.sh SLUICE_LOG SLUICE_LOGD [N=1000000] [RUNS=3]
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"
# Not -e: it reads the tools' exit statuses itself.
set +e
slog=$(realpath "${1:?usage: spool-compare.sh SLUICE_LOG SLUICE_LOGD [N] [RUNS]}")
logd=$(realpath "${2:?}")
n=${3:-1000000}
runs=${4:-3}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
seq -f 'line %.0f of the spool benchmark, some text to make it 80 bytes long or so....' 1 "$n" >"$d/lines"

start_logd() {
  "$logd" --listen 127.0.0.1:0 "$d/out.log" 2>"$d/logd.err" &
  lp=$!
  for _ in $(seq 200); do grep -q "listening on" "$d/logd.err" && break; sleep 0.05; done
  port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$d/logd.err")
}
stop_logd() { kill -TERM "$lp"; wait "$lp"; }

run() {  # run LABEL [OPTION...]: the best rate of $runs runs
  local label=$1 best=0 cpu=""
  shift
  for _ in $(seq "$runs"); do
    rm -rf "$d/spool" "$d/out.log"
    start_logd
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$d/time" "$slog" "$@" "syslog://127.0.0.1:$port" <"$d/lines" 2>"$d/err" || echo "sluice-log failed: $(cat "$d/err")"
    t1=$(date +%s.%N)
    for _ in $(seq 600); do [ "$(wc -l <"$d/out.log")" -ge "$n" ] && break; sleep 0.05; done
    stop_logd
    local got rate
    got=$(wc -l <"$d/out.log")
    [ "$got" -eq "$n" ] || echo "  $label: $got of $n lines arrived"
    rate=$(python3 -c "print(int($n / ($t1 - $t0)))")
    if [ "$rate" -gt "$best" ]; then best=$rate; cpu=$(cat "$d/time"); fi
  done
  echo "$label: $best lines/s (user+sys of sluice-log: $cpu s for $n lines)"
}

run "syslog:// straight    "
run "syslog:// --spool     " --spool "$d/spool"

# The receiver away: the whole input goes to the spool; peak RSS then.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -rf "$d/spool"
t0=$(date +%s.%N)
"$slog" --spool "$d/spool" "syslog://127.0.0.1:$port" <"$d/lines" 2>"$d/err" &
sp=$!
size=$(stat -c %s "$d/lines")
for _ in $(seq 1200); do
  pos=$(awk '/^pos:/ {print $2}' "/proc/$sp/fdinfo/0" 2>/dev/null)
  [ "${pos:-0}" -eq "$size" ] && break
  sleep 0.05
done
t1=$(date +%s.%N)
sleep 1
echo "outage: $n lines ($size bytes) spooled in $(python3 -c "print(round($t1 - $t0, 2))") s; peak RSS $(awk '/^VmHWM:/ {print $2}' "/proc/$sp/status") kB; spool $(du -sk "$d/spool" | cut -f1) kB on disk"
kill -KILL "$sp"
wait "$sp" 2>/dev/null
