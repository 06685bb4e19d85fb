#!/usr/bin/env bash
# tls-ship-instructions.sh: the user-space instructions a message costs
# sluice-log and sluice-logd (valgrind's callgrind), plain TCP against TLS
# (mutual TLS with a test CA), the figure that a loaded machine does not
# blur as it does tls-compare.sh's rates and CPU times. Each side is counted
# in its own runs (the other side runs natively) of N1 and N2 lines; the
# difference over N2 - N1 takes out the start and the handshake.
#
#   perf/tls/tls-ship-instructions.sh [BUILDDIR] [N1] [N2]   (build 20000 100000)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
n1=${2:-20000} n2=${3:-100000}
tools=$build/tools
command -v valgrind >/dev/null || { echo "tls-ship-instructions: needs valgrind" >&2; exit 1; }
tmp=$(mktemp -d)
lp=
trap '[ -n "$lp" ] && kill "$lp" 2>/dev/null; rm -rf "$tmp"' EXIT
sh "$root/tests/tls/make_ca.sh" "$tmp" >/dev/null && chmod 600 "$tmp"/*.key
for n in "$n1" "$n2"; do
  python3 - "$tmp/in-$n.txt" "$n" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    for i in range(int(sys.argv[2])):
        f.write('line %07d the quick brown fox jumps over the lazy dog and some padding text here\n' % i)
PY
done
total() { sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1"; }
# run MODE WHO N: the instructions of WHO (sender or receiver) for N lines.
run() {
  local mode=$1 who=$2 n=$3 largs sargs scheme
  if [ "$mode" = tls ]; then
    largs="--listen-tls 127.0.0.1:0 --tls-cert $tmp/server.crt --tls-key $tmp/server.key --tls-client-ca $tmp/ca.crt"
    sargs="--tls-ca $tmp/ca.crt --tls-cert $tmp/client.crt --tls-key $tmp/client.key" scheme=syslog+tls
  else
    largs="--listen 127.0.0.1:0" sargs="" scheme=syslog
  fi
  local vg="valgrind --tool=callgrind --callgrind-out-file=$tmp/cg.out"
  local lvg="" svg=""
  if [ "$who" = receiver ]; then lvg=$vg; else svg=$vg; fi
  rm -f "$tmp/out.log" "$tmp/cg.out"
  # shellcheck disable=SC2086
  $lvg "$tools/sluice-logd" $largs "$tmp/out.log" 2>"$tmp/logd.err" & lp=$!
  local port=
  for _ in $(seq 1200); do
    port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/logd.err" | head -1)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "sluice-logd did not listen: $(cat "$tmp/logd.err")" >&2; exit 1; }
  # shellcheck disable=SC2086
  $svg "$tools/sluice-log" $sargs "$scheme://127.0.0.1:$port" <"$tmp/in-$n.txt" 2>/dev/null
  for _ in $(seq 12000); do
    [ "$(wc -l <"$tmp/out.log")" -ge "$n" ] && break
    sleep 0.01
  done
  [ "$(wc -l <"$tmp/out.log")" -ge "$n" ] || { echo "sluice-logd ($mode): not every line arrived" >&2; exit 1; }
  kill "$lp"
  wait "$lp" 2>/dev/null || true
  lp=
  total "$tmp/cg.out"
}
for who in sender receiver; do
  for mode in plain tls; do
    a=$(run $mode $who "$n1")
    b=$(run $mode $who "$n2")
    eval "${who}_$mode=$(( (b - a) / (n2 - n1) ))"
  done
done
echo "sluice-log into sluice-logd, user-space instructions a message (80-byte lines):"
echo "sender:   plain $sender_plain, tls $sender_tls ($(python3 -c "print(f'{$sender_tls / $sender_plain:.2f}')")x)"
echo "receiver: plain $receiver_plain, tls $receiver_tls ($(python3 -c "print(f'{$receiver_tls / $receiver_plain:.2f}')")x)"
