#!/usr/bin/env bash
# sluice-log --compress (issue 34): --compress without rotation or kept
# files is bad usage; two sluice-log processes compressing one FILE keep
# every line once; a rotated file that cannot be compressed is said, counted
# and tried again; the start keeps a plain FILE.N beside a FILE.N.gz that is
# not its whole copy. Every wait is bounded.
#
#   log_compress_test.sh path/to/sluice-log
set -uo pipefail
slog=${1:?usage: log_compress_test.sh SLUICE_LOG}
slog=$(realpath "$slog")

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

# Every line of FILE, FILE.N and FILE.N.gz, one a line.
all_lines() {  # all_lines FILE
  local f
  for f in "$1" "$1".*; do
    [ -f "$f" ] || continue
    case $f in
      *.gz) gzip -dc < "$f" ;;
      *.tmp) ;;
      *) cat "$f" ;;
    esac
  done
}

# ---- usage (item 19): compression needs rotated, kept files.
for args in "--compress gzip" "--compress zstd:3 --keep 3" "--compress gzip --max-size 1K --keep 0"; do
  # shellcheck disable=SC2086
  echo x | "$slog" $args "$tmp/u.log" 2>"$tmp/err"
  st=$?
  check "$args: exit 2 (got $st)" test $st -eq 2
  check "$args: says why" grep -q -- "^sluice-log: --compress goes with" "$tmp/err"
done
echo x | "$slog" --compress none "$tmp/u.log" 2>"$tmp/err"
check "--compress none without --max-size: accepted" test $? -eq 0

# ---- two processes, one FILE (item 4): each line once, every .gz whole.
n=200000
for who in a b; do
  seq -f "$who %07.0f the quick brown fox jumps over the lazy dog" 1 $n |
    "$slog" --max-size 64K --keep 100000 --compress gzip --stats "$tmp/two.log" 2>"$tmp/two-$who.err" &
  eval "pid_$who=$!"
done
# shellcheck disable=SC2154
wait "$pid_a"; st_a=$?
# shellcheck disable=SC2154
wait "$pid_b"; st_b=$?
check "two processes: both exit 0 ($st_a, $st_b)" test "$st_a$st_b" = 00
bad=0
for f in "$tmp"/two.log.*.gz; do gzip -t "$f" 2>/dev/null || bad=$((bad + 1)); done
check "two processes: every FILE.N.gz decompresses ($bad do not)" test $bad -eq 0
all_lines "$tmp/two.log" > "$tmp/two.all"
total=$(wc -l < "$tmp/two.all")
distinct=$(sort -u "$tmp/two.all" | wc -l)
check "two processes: $((2 * n)) lines once each (got $total, $distinct distinct)" same "$total $distinct" "$((2 * n)) $((2 * n))"
check "two processes: no temporary left" test ! -e "$tmp/two.log.gz.tmp"

# ---- a rotated file that cannot be compressed (item 14): FILE.gz.tmp is a
# directory. Said (once, then rate-limited), counted, tried again once it is
# gone: in the end every rotated file is compressed.
fifo=$tmp/feed
mkfifo "$fifo"
mkdir "$tmp/stuck.log.gz.tmp"
"$slog" --max-size 16K --keep 1000 --compress gzip --stats "$tmp/stuck.log" <"$fifo" 2>"$tmp/stuck.err" &
pid=$!
bg_pids+=("$pid")
exec 3>"$fifo"
seq -f "%07.0f a line that goes into a rotated file" 1 20000 >&3
for _ in $(seq 200); do grep -q "not compressed" "$tmp/stuck.err" && break; sleep 0.05; done
check "not compressible: said on stderr" grep -q "^sluice-log: $tmp/stuck.log.[0-9]*: not compressed: Is a directory; it stays plain, and is tried again" "$tmp/stuck.err"
check "not compressible: said once in 10 s" test "$(grep -c "not compressed" "$tmp/stuck.err")" -eq 1
rmdir "$tmp/stuck.log.gz.tmp"
# Tried again 1 s after the first failure, 2 s after the second...: within 10 s.
plain_left() { local f n=0; for f in "$tmp"/stuck.log.[0-9]*; do [ "${f%.gz}" = "$f" ] && n=$((n + 1)); done; echo $n; }
for _ in $(seq 200); do
  [ "$(plain_left)" -eq 0 ] && break
  sleep 0.05
done
exec 3>&-
wait "$pid"
st=$?
check "not compressible: exit 0 (got $st)" test $st -eq 0
left=$(plain_left)
check "not compressible: tried again, none left plain ($left)" test "$left" -eq 0
check "not compressible: --stats counts the failures" grep -Eq "^sluice-log: 20000 lines, .* reopens, [0-9]+ compressed, [1-9][0-9]* failed compressions$" "$tmp/stuck.err"
check "not compressible: every line once" same "$(all_lines "$tmp/stuck.log" | sort -u | wc -l)" 20000

# ... and a full disk (ENOSPC while writing the .gz): a 1 MiB tmpfs with
# room for FILE and FILE.1 but not FILE.1.gz beside them (random lines do
# not compress). Needs mount (root).
if mkdir -p "$tmp/full" && mount -t tmpfs -o size=1m tmpfs "$tmp/full" 2>/dev/null; then
  head -c $((1024 * 1024 - 400 * 1024)) /dev/zero > "$tmp/full/ballast" 2>/dev/null
  python3 -c '
import base64, os, sys
for i in range(2200): sys.stdout.write(base64.b64encode(os.urandom(96)).decode() + "\n")' > "$tmp/random"
  "$slog" --max-size 200K --keep 5 --compress gzip --stats "$tmp/full/x.log" < "$tmp/random" 2>"$tmp/full.err"
  st=$?
  check "full disk: exit 0 (got $st)" test $st -eq 0
  check "full disk: said" grep -q "x.log.1: not compressed: No space left on device; it stays plain" "$tmp/full.err"
  check "full disk: counted" grep -Eq "0 compressed, [1-9][0-9]* failed compressions$" "$tmp/full.err"
  check "full disk: FILE.1 stays plain, whole" same "$(cat "$tmp/full/x.log.1" "$tmp/full/x.log" | wc -l)" 2200
  check "full disk: no temporary left" test ! -e "$tmp/full/x.log.gz.tmp"
  umount "$tmp/full"
else
  echo "SKIP the full disk: mount -t tmpfs needs root"
fi

# ---- the start-up recovery (item 2): compressed, then plain, then
# compressed again; FILE.N.gz beside FILE.N are then older files.
seq -f "one %07.0f" 1 10000 | "$slog" --max-size 8K --keep 1000 --compress gzip "$tmp/regime.log"
seq -f "two %07.0f" 1 10000 | "$slog" --max-size 8K --keep 1000 "$tmp/regime.log"
seq -f "three %07.0f" 1 10000 | "$slog" --max-size 8K --keep 1000 --compress gzip "$tmp/regime.log" 2>"$tmp/regime.err"
st=$?
check "compressed, plain, compressed: exit 0 (got $st)" test $st -eq 0
all_lines "$tmp/regime.log" > "$tmp/regime.all"
check "compressed, plain, compressed: 30000 lines once each" \
  same "$(wc -l < "$tmp/regime.all") $(sort -u "$tmp/regime.all" | wc -l)" "30000 30000"
# (Rotations go on while the start looks, so the pair may have moved up.)
check "compressed, plain, compressed: said" grep -Eq "^sluice-log: $tmp/regime.log.([0-9]+).gz is not a whole compressed copy of $tmp/regime.log.\1: both kept" "$tmp/regime.err"

# A dangling link, a directory, an empty file at FILE.N.gz: the plain file stays.
for i in 1 2 3; do seq -f "r$i %05.0f" 1 100 > "$tmp/junk.log.$i"; done
ln -s "$tmp/nowhere" "$tmp/junk.log.1.gz"
mkdir "$tmp/junk.log.2.gz"
: > "$tmp/junk.log.3.gz"
echo new | "$slog" --max-size 1M --keep 5 --compress gzip "$tmp/junk.log" 2>"$tmp/junk.err"
for i in 1 2 3; do
  check "junk twin $i: FILE.$i kept" same "$(cat "$tmp/junk.log.$i")" "$(seq -f "r$i %05.0f" 1 100)"
done
check "junk twin: the link stays a link" test -L "$tmp/junk.log.1.gz"

echo "log_compress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
