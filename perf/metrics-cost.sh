#!/usr/bin/env bash
# metrics-cost.sh: what serving --metrics costs sluice-logd's data path.
# sluice-logd's rate receiving LINES LF-framed syslog messages (about 40
# bytes each) from one TCP sender into a file, without --metrics and with
# --metrics scraped every 100 ms by curl (and without, curl refused every
# 100 ms), the two runs alternating (ABBA), REPS times each; the rate is the messages over the time from the sender's
# connect until FILE holds every byte of them.
#
#   perf/metrics-cost.sh [LINES]
#
# Environment:
#   SLUICE_LOGD=P  the sluice-logd binary (default $BUILD/tools/sluice-logd, build/ by default)
#   TMPDIR=D       where the input and the log go (/tmp)
#   REPS=N         runs of each variant (default 5)
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"
bin=${SLUICE_LOGD:-$build/tools/sluice-logd}
lines=${1:-2000000}
reps=${REPS:-5}
[ -x "$bin" ] || { echo "metrics-cost: sluice-logd not found at $bin (ninja -C build tools/sluice-logd)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/metrics-cost.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

python3 -c 'import sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write("<14>1 - host app - - - message number %d\n" % i)' "$work/in" "$lines"
size=$(stat -c %s "$work/in")

# One run: sluice-logd with "$@", the input sent, the seconds until FILE
# holds it all on standard output.
run() {
  rm -f "$work/out.log"
  : > "$work/err"
  "$bin" --listen 127.0.0.1:0 "$@" "$work/out.log" 2> "$work/err" &
  local lp=$! port= mport= sp=
  pids+=("$lp")
  for _ in $(seq 200); do grep -q 'listening on' "$work/err" && break; sleep 0.05; done
  port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/err")
  mport=$(sed -n 's|^sluice-logd: serving metrics on http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' "$work/err")
  # The run without --metrics has the same curl loop, refused (port 1), so
  # that both runs share the machine with it: what differs is the serving.
  (while :; do curl -s -o /dev/null "http://127.0.0.1:${mport:-1}/metrics"; sleep 0.1; done) &
  sp=$!
  pids+=("$sp")
  python3 -c 'import socket, sys, time
data = open(sys.argv[1], "rb").read()
size, path = int(sys.argv[3]), sys.argv[4]
t0 = time.monotonic()
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
s.sendall(data)
import os
while True:
    try:
        if os.stat(path).st_size >= size:
            break
    except FileNotFoundError:
        pass
    time.sleep(0.002)
print("%.3f" % (time.monotonic() - t0))
s.close()' "$work/in" "$port" "$size" "$work/out.log"
  kill "$sp"
  wait "$sp" 2>/dev/null || true
  kill -TERM "$lp"
  wait "$lp" || { echo "metrics-cost: sluice-logd exited $?: $(cat "$work/err")" >&2; exit 1; }
}

echo "sluice-logd, $lines messages ($size bytes) over one TCP connection, $reps runs each"
printf '%-34s %s\n' "run" "seconds  messages/s"
declare -A times=([plain]="" [metrics]="")
for i in $(seq "$reps"); do
  # ABBA: each variant first in every other round.
  order="plain metrics"
  [ $((i % 2)) -eq 1 ] || order="metrics plain"
  for variant in $order; do
    if [ "$variant" = plain ]; then t=$(run); else t=$(run --metrics 127.0.0.1:0); fi
    times[$variant]+=" $t"
    printf '%-34s %7s  %.2fM\n' "$i: $([ "$variant" = plain ] && echo "without --metrics" || echo "--metrics, scraped every 100 ms")" \
      "$t" "$(python3 -c "print($lines / $t / 1e6)")"
  done
done
# The medians, and their ratio.
python3 -c 'import statistics, sys
lines, plain, metrics = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
p, m = statistics.median(map(float, plain)), statistics.median(map(float, metrics))
print("median: without %.2fM messages/s, with --metrics scraped %.2fM messages/s (%.2fx)" % (lines / p / 1e6, lines / m / 1e6, p / m))' \
  "$lines" "${times[plain]}" "${times[metrics]}"
