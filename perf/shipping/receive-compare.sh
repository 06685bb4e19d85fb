#!/usr/bin/env bash
# receive-compare.sh: issue 12's receiving benchmark. SENDERS senders over
# loopback TCP (perf/shipping/syslog_flood), each sending MESSAGES RFC 5424
# messages of SIZE bytes, octet-counted, as fast as they are taken, into
# sluice-logd and into rsyslogd (imptcp -> omfile), each receiver started
# fresh for each run. A run ends when the receiver's file holds every line.
# For each receiver: messages per second, the receiver's CPU time per
# message (all its threads, /proc/PID/stat), its peak RSS (VmHWM) and the
# messages lost (lines missing from its file after it stopped: must be 0).
#
# rsyslog writes each message as received (a "%rawmsg%\n" template, as
# sluice-logd does: no reformatting on either side), twice:
#   rsyslog          omfile's defaults (ioBufferSize 4k, flushOnTXEnd on,
#                    no asyncWriting), the main queue's defaults;
#   rsyslog-tuned    omfile ioBufferSize="256k" (one write per dequeued
#                    batch), the main queue dequeuing batches of up to
#                    1024 (queue.dequeueBatchSize); imptcp as by default.
# Neither fsyncs, as sluice-logd does not by default.
#
# What each side runs: sluice-logd one event loop (reads, frames, escapes)
# and FILE's writer thread; `sluice-logd-t2` (THREADS2=1) two loops
# (--threads 2, SO_REUSEPORT) and the one writer; rsyslogd imptcp's
# default of 2 worker threads (threads="2"), its main queue's worker and
# omfile in it, and its other threads. The senders run on the same cores,
# so on a small machine the rate is theirs as much as the receiver's; the
# CPU a message is the receiver's own.
#
#   perf/shipping/receive-compare.sh [BUILDDIR]        (default: build)
#
# Environment: SENDERS (default 8), MESSAGES (per sender, default 125000),
# SIZE (bytes a message, default 120), RUNS (the figures are medians,
# default 3), RSYSLOGD (default /usr/sbin/rsyslogd), TMPDIR; THREADS2=1
# adds sluice-logd --threads 2; BEFORE=PATH adds another sluice-logd
# binary as `before` (a build of the code before a change), alternated
# with the rest run by run.
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
senders=${SENDERS:-8}
messages=${MESSAGES:-125000}
size=${SIZE:-120}
runs=${RUNS:-3}
rsyslogd=${RSYSLOGD:-/usr/sbin/rsyslogd}
flood=$build/perf/syslog_flood
logd=$build/tools/sluice-logd
before=${BEFORE:-}
for p in "$flood" "$logd"; do
  [ -x "$p" ] || { echo "receive-compare: $p not built (meson setup with -Dperf=true -Dtools=true)" >&2; exit 1; }
done
tmp=$(mktemp -d)
# shellcheck source=rsyslog.sh
. "$here/rsyslog.sh"

total=$((senders * messages))
bytes=$((total * (size + 1)))  # each message as one line

# start NAME DIR OUT: starts the receiver, sets server_pid and port.
start() {
  local name=$1 dir=$2 out=$3
  case $name in
    sluice-logd*|before)
      local bin=$logd args=()
      [ "$name" = before ] && bin=$before
      [ "$name" = sluice-logd-t2 ] && args=(--threads 2)
      # The file exists before sed reads it (the child opens it after the fork).
      : >"$dir/err"
      "$bin" "${args[@]}" --listen 127.0.0.1:0 "$out" 2>"$dir/err" &
      server_pid=$!
      port=""
      for ((i = 0; i < 200; i++)); do
        port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9][0-9]*\)$/\1/p' "$dir/err" | head -1)
        # --threads: once every loop listens.
        [ -n "$port" ] && { [ -z "${args[*]}" ] || grep -q "threads listening" "$dir/err"; } && break
        sleep 0.05
      done
      [ -n "$port" ] || { echo "receive-compare: sluice-logd did not start:" >&2; cat "$dir/err" >&2; exit 1; }
      ;;
    rsyslog*)
      start_rsyslog "$dir" "$out" "$([ "$name" = rsyslog-tuned ] && echo 1 || echo 0)"
      ;;
  esac
}

stop() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# run NAME R: one fresh run. Prints "rate cpu_us_per_msg hwm_kb lost sys_us_per_msg".
run() {
  local name=$1 r=$2
  local dir=$tmp/$name.$r
  mkdir -p "$dir"
  local out=$dir/out.log
  start "$name" "$dir" "$out"
  local json
  json=$("$flood" "$port" --senders "$senders" --messages "$messages" --size "$size" \
    --pid "$server_pid" --file "$out" --bytes "$bytes")
  stop
  local lines; lines=$(wc -l <"$out" 2>/dev/null || echo 0)
  rm -rf "$dir"
  python3 -c 'import json, sys
j = json.loads(sys.argv[1])
print("%.0f %.3f %d %d %.3f" % (j["messages"] / j["seconds"], j["cpu_seconds"] * 1e6 / j["messages"], j["hwm_kb"],
                                int(sys.argv[2]) - int(sys.argv[3]), j["sys_seconds"] * 1e6 / j["messages"]))' "$json" "$total" "$lines"
}

echo "receive-compare: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
names=(sluice-logd)
[ "${THREADS2:-0}" = 1 ] && names+=(sluice-logd-t2)
if [ -n "$before" ]; then
  [ -x "$before" ] || { echo "receive-compare: BEFORE=$before is not a program" >&2; exit 1; }
  names+=(before)
fi
if [ -x "$rsyslogd" ]; then names+=(rsyslog rsyslog-tuned)
else echo "receive-compare: $rsyslogd not found, rsyslog skipped" >&2; fi
declare -A rates cpus syss best_rate best_cpu best_sys max_hwm lost
# Alternated run by run, so that a busy moment of the machine hits all.
for ((r = 1; r <= runs; r++)); do
  for name in "${names[@]}"; do
    read -r rate cpu hwm l sys < <(run "$name" "$r")
    echo "receive-compare: $name run $r: $rate msg/s, $cpu us CPU/msg ($sys in the kernel), VmHWM $hwm kB, $l lost" >&2
    rates[$name]+=" $rate"
    cpus[$name]+=" $cpu"
    syss[$name]+=" $sys"
    [ "$hwm" -gt "${max_hwm[$name]:-0}" ] && max_hwm[$name]=$hwm
    lost[$name]=$((${lost[$name]:-0} + l))
  done
done
# The median of each (of an even count, the upper one): one busy moment
# moves a run 2x on a shared machine, and a best-of keeps its luck.
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }'; }
for name in "${names[@]}"; do
  best_rate[$name]=$(median "${rates[$name]}")
  best_cpu[$name]=$(median "${cpus[$name]}")
  best_sys[$name]=$(median "${syss[$name]}")
done

echo "receiving: $senders senders x $messages messages x $size B, octet-counted, loopback; medians of $runs"
printf '%-14s %12s %16s %12s %14s %10s %14s %12s\n' receiver "msgs/s" "CPU us / msg" "of it sys" "peak RSS MB" lost "rate vs" "CPU vs"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2fx", a / b }'; }
for name in "${names[@]}"; do
  printf '%-14s %12s %16s %12s %14s %10s %14s %12s\n' "$name" "${best_rate[$name]}" "${best_cpu[$name]}" "${best_sys[$name]}" \
    "$(awk -v k="${max_hwm[$name]}" 'BEGIN { printf "%.1f", k / 1024 }')" "${lost[$name]}" \
    "$(ratio "${best_rate[$name]}" "${best_rate[rsyslog]:-}")/$(ratio "${best_rate[$name]}" "${best_rate[rsyslog-tuned]:-}")" \
    "$(ratio "${best_cpu[$name]}" "${best_cpu[rsyslog]:-}")/$(ratio "${best_cpu[$name]}" "${best_cpu[rsyslog-tuned]:-}")"
done
echo "(rate vs, CPU vs: against rsyslog / rsyslog-tuned; of it sys: the CPU a message spent in the kernel (the"
echo " socket's reads, the file's writes, the wake-ups); peak RSS: the largest of the runs; lost: all runs)"
