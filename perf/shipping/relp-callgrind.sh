#!/usr/bin/env bash
# Instructions a message on both ends, under callgrind (counts do not drift
# with the machine's load): sluice-log relp:// into sluice-logd
# --listen-relp --fsync ack, and sluice-log syslog:// into sluice-logd
# --listen for comparison, N lines of 80 bytes. Whole processes, start and
# handshake included (about 0.1 M instructions of each figure at 200k lines
# is the start: run two N and take the difference for the per-message part).
#   perf/shipping/relp-callgrind.sh [BUILD] [N] [WINDOW]
# RELP_ONLY=1 skips the plain pair; KEEP=DIR keeps the callgrind files there.
. "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"
build=${1:-build} n=${2:-200000} window=${3:-4096}
tools=$build/tools
. "$here/shipping.sh"
make_lines "$tmp/in.txt" "$n"
cg() { valgrind --tool=callgrind --callgrind-out-file="$1" "${@:2}"; }
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
run() {  # run NAME SCHEME LISTEN-OPTION [OPTIONS...]
  local name=$1 scheme=$2 listen=$3 p; shift 3
  p=$(free_port)
  cg "$tmp/$name-recv.cg" "$tools/sluice-logd" "$@" "$listen" "127.0.0.1:$p" "$tmp/out-$name.log" 2>"$tmp/$name.err" & local l=$!
  for _ in $(seq 400); do grep -q listening "$tmp/$name.err" && break; sleep 0.05; done
  local w=(); [ "$scheme" = relp ] && w=(--window "$window")
  cg "$tmp/$name-send.cg" "$tools/sluice-log" "${w[@]}" "$scheme://127.0.0.1:$p" <"$tmp/in.txt" 2>"$tmp/$name-send.err"
  while [ "$(wc -l <"$tmp/out-$name.log")" -lt "$n" ]; do sleep 0.05; done
  kill $l; wait $l 2>/dev/null || true
  local s r
  s=$(total "$tmp/$name-send.cg") r=$(total "$tmp/$name-recv.cg")
  python3 -c "import sys; n,s,r=map(int,sys.argv[1:]); print(f'$name: sender {s/n:,.0f} instructions a message, receiver {r/n:,.0f} ({n:,} lines)')" "$n" "$s" "$r"
  if [ -n "${KEEP:-}" ]; then cp "$tmp/$name-send.cg" "$tmp/$name-recv.cg" "$KEEP/"; fi
}
run relp relp --listen-relp --fsync ack
[ -n "${RELP_ONLY:-}" ] || run syslog syslog --listen
