#!/usr/bin/env bash
# fanout-compare.sh: 100 subscribers over loopback, 10 of which stop reading
# for STALL seconds while lines stream at RATE, through sluice-fanout under
# each policy and through the Asio chat-server pattern (an unbounded deque
# per subscriber). For each: what the reading subscribers kept receiving
# while the others stalled (vs the feed rate), their longest gap, the
# stalled ones cut off and how soon, and the server's RSS growth.
#
#   perf/fanout/fanout-compare.sh [BUILDDIR]      (default: build)
#
# Environment: STALL (seconds, default 20), RATE (lines/s, default 10000),
# SIZE (bytes a line, default 100), CAP (--max-buffered, default 256K),
# DEADLINE (--write-deadline for disconnect, default 2000ms; a bare number is seconds), SNDBUF
# (sluice-fanout's --send-buffer, default 64K: the kernel's share of a
# stalled subscriber's backlog, which comes before the cap and the deadline).
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"

build=${1:-$build}
stall=${STALL:-20}
rate=${RATE:-10000}
size=${SIZE:-100}
cap=${CAP:-256K}
deadline=${DEADLINE:-2000ms}
sndbuf=${SNDBUF:-64K}
client=$build/perf/fanout_client
fan=$build/tools/sluice-fanout
asio=$build/perf/asio_fanout_server
for p in "$client" "$fan" "$asio"; do
  [ -x "$p" ] || { echo "fanout-compare: $p not built (meson setup with -Dperf=true -Dtools=true)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cap_bytes=$(numfmt --from=iec "$cap")
feed_mb=$(awk -v r="$rate" -v s="$size" 'BEGIN { printf "%.3f", r * s / 1e6 }')

# run NAME SERVER...: one case. Prints "NAME healthy min gap cut cut_ms rss_mb".
run() {
  local name=$1; shift
  local err=$tmp/$name.err
  : >"$err"
  "$client" feed --rate "$rate" --size "$size" --seconds $((stall + 4)) |
    "$@" 2> >(while IFS= read -r line; do echo "$(date +%s.%N) $line"; done >"$err") &
  local pid=$!  # a background pipeline's $! is its last command: the server
  local port="" i
  for ((i = 0; i < 200; i++)); do
    port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\)$/\1/p' "$err" | head -1)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "fanout-compare: $name did not start" >&2; cat "$err" >&2; exit 1; }
  local start; start=$(date +%s.%N)
  "$client" subscribe "$port" --subscribers 100 --stalled 10 --stall-seconds "$stall" --seconds $((stall + 2)) \
    >"$tmp/$name.json" &
  local sub=$!
  # The server's RSS: a baseline once the subscribers are in, then the peak.
  sleep 0.5
  local base; base=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
  local peak=$base rss
  while kill -0 "$sub" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss
    sleep 0.2
  done
  wait "$sub"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local json; json=$(cat "$tmp/$name.json")
  local cut cut_ms
  cut=$(grep -c 'cut off' "$err" || true)
  cut_ms=$(grep 'cut off' "$err" | awk -v s="$start" 'BEGIN { m = 0 } { t = ($1 - s) * 1000; if (t > m) m = t } END { printf "%.0f", m }')
  [ "$cut" -gt 0 ] || cut_ms=-
  python3 -c 'import json, sys
j = json.loads(sys.argv[2])
print(sys.argv[1], j["healthy_mb_per_s"], j["healthy_min_mb_per_s"], j["healthy_max_gap_ms"], sys.argv[3], sys.argv[4],
      "%.1f" % ((int(sys.argv[6]) - int(sys.argv[5])) / 1024))' "$name" "$json" "$cut" "$cut_ms" "$base" "$peak"
}

results=()
results+=("$(run pause "$fan" --listen 127.0.0.1:0 --send-buffer "$sndbuf" --policy pause)")
results+=("$(run drop "$fan" --listen 127.0.0.1:0 --send-buffer "$sndbuf" --policy drop --max-buffered "$cap")")
results+=("$(run disconnect "$fan" --listen 127.0.0.1:0 --send-buffer "$sndbuf" --policy disconnect --max-buffered "$cap" \
  --write-deadline "$deadline")")
results+=("$(run asio-deque "$asio" "$(numfmt --from=iec "$sndbuf")")")

sndbuf_bytes=$(numfmt --from=iec "$sndbuf")
bound_mb=$(awk -v c="$cap_bytes" -v k="$sndbuf_bytes" 'BEGIN { printf "%.1f", 10 * (c + k) / 1048576 }')
echo "fan-out: 100 subscribers, 10 stalled for ${stall} s, ${rate} lines/s x ${size} B (${feed_mb} MB/s each)"
echo "sluice-fanout: --max-buffered ${cap}, --write-deadline ${deadline} (disconnect), --send-buffer ${sndbuf}"
printf '%-11s %16s %12s %12s %9s %13s %15s\n' server "healthy MB/s" "of feed" "min MB/s" "max gap" "cut off (ms)" "RSS growth MB"
for r in "${results[@]}"; do
  read -r name healthy min gap cut cut_ms rss <<<"$r"
  share=$(awk -v h="$healthy" -v f="$feed_mb" 'BEGIN { printf "%.0f%%", 100 * h / f }')
  printf '%-11s %16s %12s %12s %9s %13s %15s\n' "$name" "$healthy" "$share" "$min" "${gap}ms" "$cut ($cut_ms)" "$rss"
done
echo "the issue's bound on growth: 10 x (cap + send buffer) = ${bound_mb} MB"
