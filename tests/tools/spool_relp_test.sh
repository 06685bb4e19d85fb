#!/usr/bin/env bash
# sluice-log --spool with relp:// into a small RELP receiver
# (relp_peer.py) on loopback: a line the receiver refuses (rsp 500) is
# dropped from the spool, said and counted, the rest delivered, and the
# next run has nothing to send; --stats adds up (N = acked + dropped + left
# in spool, refused of dropped) with the receiver up, with one refused, and
# with the receiver away; a corrupt record length in a segment (1 GiB, the
# maximum) ends that segment, counted, under `ulimit -v`, and the records
# before it and the new input are sent; a buffer that cannot be had (a
# record as long as its segment, under `ulimit -v`) is one message and exit
# 1, not a crash. Every wait is bounded.
#
#   spool_relp_test.sh SLUICE_LOG
set -uo pipefail
slog=$(realpath "${1:?usage: spool_relp_test.sh SLUICE_LOG}")
peer="$(dirname "${BASH_SOURCE[0]}")/relp_peer.py"
scale=${SLUICE_TIME_SCALE:-1}

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A JSON field of sluice-log's --stats --json line in FILE.
stat() { python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }
segments() { find "$1" -name 'seg-*' | wc -l; }
# The address space of a sanitizer's process cannot be bounded.
sanitized=no
grep -qaE '__asan_init|__tsan_init' "$slog" && sanitized=yes

# The receiver: answers 500 to a message with "refuse me" in it.
python3 "$peer" "$tmp/port" "$tmp/got" "refuse me" $((120 * scale)) 2>"$tmp/peer.err" &
bg_pids+=("$!")
for _ in $(seq $((200 * scale))); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
dest="relp://127.0.0.1:$port"
: >>"$tmp/got"

# ---- one line refused

{ for i in 1 2; do echo "line $i"; done; echo "refuse me"; for i in $(seq 4 10); do echo "line $i"; done; } >"$tmp/in1"
timeout $((60 * scale)) "$slog" --stats --json --spool "$tmp/s1" "$dest" <"$tmp/in1" 2>"$tmp/err1"
st=$?
check "refused: exit 1, a line was dropped (got $st)" test $st -eq 1
check "refused: said once ($(head -c 400 "$tmp/err1"))" \
  same "$(grep -c 'refused a message: rsp 500 not today: dropped from the spool, not sent again' "$tmp/err1")" 1
check "refused: the receiver had all 10, once each, in order" cmp -s "$tmp/got" "$tmp/in1"
check "refused: the spool is emptied" same "$(segments "$tmp/s1")" 0
check "refused: lines 10" same "$(stat "$tmp/err1" lines)" 10
check "refused: acked 9" same "$(stat "$tmp/err1" acked)" 9
check "refused: dropped 1" same "$(stat "$tmp/err1" dropped)" 1
check "refused: refused 1, of dropped" same "$(stat "$tmp/err1" refused)" 1
check "refused: the spool's acked is the receiver's" same "$(stat "$tmp/err1" acked_from_spool)" 9
check "refused: the spool's refused" same "$(stat "$tmp/err1" refused_from_spool)" 1
check "refused: nothing left in the spool" same "$(stat "$tmp/err1" left_in_spool)" 0
# The next run on DIR: nothing to send, exit 0.
timeout $((60 * scale)) "$slog" --stats --json --spool "$tmp/s1" "$dest" </dev/null 2>"$tmp/err2"
st=$?
check "refused, next run: exit 0 (got $st; $(head -c 300 "$tmp/err2"))" test $st -eq 0
check "refused, next run: nothing sent from the spool" same "$(stat "$tmp/err2" sent_from_spool)" 0
check "refused, next run: the receiver got nothing more" same "$(wc -l <"$tmp/got")" 10

# ---- the receiver away: what the spool keeps is counted

away=$(free_port)
seq -f 'away %.0f' 10 >"$tmp/in3"
timeout $((60 * scale)) "$slog" --stats --json --give-up-after 1s --spool "$tmp/s3" "relp://127.0.0.1:$away" \
  <"$tmp/in3" 2>"$tmp/err3"
st=$?
check "away: exit 1 (got $st)" test $st -eq 1
check "away: lines 10" same "$(stat "$tmp/err3" lines)" 10
check "away: acked 0" same "$(stat "$tmp/err3" acked)" 0
check "away: dropped 0 (all in the spool)" same "$(stat "$tmp/err3" dropped)" 0
check "away: left in the spool 10" same "$(stat "$tmp/err3" left_in_spool)" 10
check "away: said what the spool keeps" grep -q 'left in the spool, for the next run' "$tmp/err3"
# The next run, the receiver up: the 10, then its own 5; acked counts this run's lines.
seq -f 'then %.0f' 5 >"$tmp/in4"
: >"$tmp/got"
timeout $((60 * scale)) "$slog" --stats --json --spool "$tmp/s3" "$dest" <"$tmp/in4" 2>"$tmp/err4"
st=$?
check "away, next run: exit 0 (got $st; $(head -c 300 "$tmp/err4"))" test $st -eq 0
check "away, next run: the 10 first, then the 5, in order" cmp -s "$tmp/got" <(cat "$tmp/in3" "$tmp/in4")
check "away, next run: lines 5, acked 5" same "$(stat "$tmp/err4" lines),$(stat "$tmp/err4" acked)" 5,5
check "away, next run: 10 of the earlier run acked" same "$(stat "$tmp/err4" earlier_acked)" 10
check "away, next run: 15 acked from the spool" same "$(stat "$tmp/err4" acked_from_spool)" 15

# ---- a corrupt record length: its segment ends, the rest goes on

# 499 lines left in a spool by a run that could not send them.
seq -f 'kept %.0f' 499 >"$tmp/in5"
timeout $((60 * scale)) "$slog" --give-up-after 1s --spool "$tmp/s5" "relp://127.0.0.1:$away" <"$tmp/in5" 2>/dev/null
last=$(find "$tmp/s5" -name 'seg-*' | sort | tail -1)
check "corrupt: the first run left a segment" test -n "$last"
# A record header whose length is 0x40000000 (max_record_payload), its
# checksum garbage, and a few bytes.
printf '\x00\x00\x00\x40crc!payload.' >>"$last"
seq -f 'new %.0f' 100 >"$tmp/in6"
: >"$tmp/got"
limit="ulimit -v 400000;"
[ "$sanitized" = yes ] && limit=""
timeout $((60 * scale)) bash -c "$limit exec \"\$@\"" - "$slog" --stats --json --spool "$tmp/s5" "$dest" \
  <"$tmp/in6" 2>"$tmp/err6"
st=$?
check "corrupt: exit 0 (got $st; $(head -c 300 "$tmp/err6"))" test $st -eq 0
check "corrupt: the 499 before it, then the new 100, in order" cmp -s "$tmp/got" <(cat "$tmp/in5" "$tmp/in6")
check "corrupt: its 16 bytes counted as torn" same "$(stat "$tmp/err6" torn_bytes)" 16
check "corrupt: the spool is emptied" same "$(segments "$tmp/s5")" 0

# ---- out of memory in the loop: one message, exit 1

if [ "$sanitized" = no ]; then
  # One segment holding one record of 512 MiB (sparse): its length is what
  # the segment holds, so the reader wants a buffer of that size.
  mkdir -m 0700 "$tmp/s7"
  python3 - "$tmp/s7/seg-00000000000000000001" <<'PY'
import struct, sys
n = 512 << 20
with open(sys.argv[1], "wb") as f:
    f.write(b"SLSPOOL1" + struct.pack("<Q", 1) + struct.pack("<I", n) + b"crc!")
    f.truncate(16 + 8 + n)
PY
  chmod 0600 "$tmp/s7/seg-00000000000000000001"
  timeout $((60 * scale)) bash -c 'ulimit -v 400000; exec "$@"' - "$slog" --spool "$tmp/s7" "$dest" \
    </dev/null 2>"$tmp/err7"
  st=$?
  check "out of memory: exit 1, not a signal (got $st)" test $st -eq 1
  check "out of memory: one message ($(head -c 300 "$tmp/err7"))" same "$(cat "$tmp/err7")" "sluice-log: out of memory"
else
  echo "SKIP out of memory under ulimit -v: a sanitizer's build"
fi

echo "spool relp: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
