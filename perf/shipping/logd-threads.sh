#!/usr/bin/env bash
# logd-threads.sh: sluice-logd --threads 1 against --threads 2 (issue 38),
# side by side in one run, alternated run by run so that a busy moment of
# the machine hits both. SENDERS senders over loopback TCP
# (perf/shipping/syslog_flood), each MESSAGES octet-counted messages of SIZE
# bytes, as fast as they are taken, into a fresh sluice-logd each run; a run
# ends when FILE holds every line. Prints, for each: messages per second,
# the receiver's CPU time a message (all its threads: the loops and the
# worker), and the messages lost (must be 0). The senders run on the same
# cores as the receiver: on a 2-core machine they take a large share.
# LISTEN=unix: over a Unix socket instead, whose connections sluice-logd's
# main loop accepts and hands to the loops in turn.
#
#   perf/shipping/logd-threads.sh [BUILDDIR]        (default: build)
#
# Environment: LISTEN (tcp, the default, or unix), SENDERS (default 8), MESSAGES (per sender, default 125000),
# SIZE (default 120), RUNS (default 3), THREADS (default "1 2"), TMPDIR
# (FILE's folder: /dev/shm takes the disk out).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
senders=${SENDERS:-8}
messages=${MESSAGES:-125000}
size=${SIZE:-120}
runs=${RUNS:-3}
read -r -a counts <<< "${THREADS:-1 2}"
flood=$build/perf/syslog_flood
logd=$build/tools/sluice-logd
for p in "$flood" "$logd"; do
  [ -x "$p" ] || { echo "logd-threads: $p not built (meson setup with -Dperf=true -Dtools=true)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
total=$((senders * messages))
bytes=$((total * (size + 1)))

# run N R: one fresh run with --threads N. Prints "rate cpu_us_per_msg lost".
run() {
  local n=$1 r=$2
  local dir=$tmp/$n.$r
  mkdir -p "$dir"
  local addr=127.0.0.1:0
  [ "${LISTEN:-tcp}" = unix ] && addr=unix:$dir/logd.sock
  "$logd" --threads "$n" --listen "$addr" "$dir/out.log" 2> "$dir/err" &
  local pid=$! port=""
  for ((i = 0; i < 200; i++)); do
    if grep -q -e "threads listening" -e "listening on" "$dir/err" 2> /dev/null && { [ "$n" = 1 ] || grep -q "threads listening" "$dir/err"; }; then
      port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9][0-9]*\)$/\1/p' "$dir/err" | head -1)
      [ "${LISTEN:-tcp}" = unix ] && port=$addr
      break
    fi
    sleep 0.05
  done
  [ -n "$port" ] || { echo "logd-threads: sluice-logd did not start:" >&2; cat "$dir/err" >&2; exit 1; }
  local json
  json=$("$flood" "$port" --senders "$senders" --messages "$messages" --size "$size" \
    --pid "$pid" --file "$dir/out.log" --bytes "$bytes")
  kill "$pid"
  wait "$pid" || true
  local lines; lines=$(wc -l < "$dir/out.log")
  rm -rf "$dir"
  python3 -c 'import json, sys
j = json.loads(sys.argv[1])
print("%.0f %.3f %d" % (j["messages"] / j["seconds"], j["cpu_seconds"] * 1e6 / j["messages"], int(sys.argv[2]) - int(sys.argv[3])))' \
    "$json" "$total" "$lines"
}

echo "logd-threads: load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2
declare -A rates cpus lost
for ((r = 1; r <= runs; r++)); do
  for n in "${counts[@]}"; do
    read -r rate cpu l < <(run "$n" "$r")
    echo "logd-threads: --threads $n run $r: $rate msg/s, $cpu us CPU/msg, $l lost" >&2
    rates[$n]="${rates[$n]:-} $rate"
    cpus[$n]="${cpus[$n]:-} $cpu"
    lost[$n]=$((${lost[$n]:-0} + l))
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "sluice-logd --threads: $senders senders x $messages messages x $size B, octet-counted, ${LISTEN:-tcp} loopback; median of $runs"
printf '%-12s %12s %14s %8s %10s\n' threads "msgs/s" "CPU us / msg" lost "rate vs 1"
base=$(echo "${rates[${counts[0]}]}" | median)
for n in "${counts[@]}"; do
  rate=$(echo "${rates[$n]}" | median)
  printf '%-12s %12s %14s %8s %10s\n' "$n" "$rate" "$(echo "${cpus[$n]}" | median)" "${lost[$n]}" \
    "$(awk -v a="$rate" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')"
done
