#!/usr/bin/env bash
# sluice-cat and sluice-lines as a user meets them, against the tools they
# imitate: sluice-cat's output is byte for byte cat's (sha256) on binary data
# of every awkward size, from files, standard input and '-'; sluice-lines
# counts as wc -l does (and one more for a last line without a newline, as
# documented), -F prints what grep -F prints, -c -F counts as grep -cF.
# Errors: a message naming the file and exit 1; bad usage: exit 2.
#
#   cat_lines_test.sh path/to/sluice-cat path/to/sluice-lines
set -uo pipefail
scat=${1:?usage: cat_lines_test.sh SLUICE_CAT SLUICE_LINES}
slines=${2:?usage: cat_lines_test.sh SLUICE_CAT SLUICE_LINES}
scat=$(realpath "$scat")
slines=$(realpath "$slines")

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"
sha() { sha256sum | cut -d' ' -f1; }

# ---- sluice-cat

"$scat" --help >"$tmp/out" 2>&1
check "cat --help exits 0" test $? -eq 0
check "cat --help prints usage" grep -q '^usage: sluice-cat' "$tmp/out"
check "cat --help gives an example" grep -q '^Example: sluice-cat ' "$tmp/out"
check "cat --help gives the exit status" grep -q 'Exit status' "$tmp/out"

for args in "--bogus" "-x" "--chunk-size" "--chunk-size 0" "--chunk-size x" "--chunk-size=-5"; do
  # shellcheck disable=SC2086
  "$scat" $args </dev/null >"$tmp/out" 2>"$tmp/err"
  status=$?
  check "cat $args exits 2" test $status -eq 2
  check "cat $args says why" grep -q '^sluice-cat: ' "$tmp/err"
  check "cat $args writes nothing" test ! -s "$tmp/out"
done

# Binary data of awkward sizes: empty, one byte, around the 64 KiB chunk and
# the 128 KiB read, and big.
sizes="0 1 65535 65536 65537 131071 131072 131073 5242880"
for n in $sizes; do
  head -c "$n" /dev/urandom >"$tmp/bin$n"
  check "cat of $n bytes is byte-exact" same "$("$scat" "$tmp/bin$n" | sha)" "$(sha <"$tmp/bin$n")"
  check "cat of $n bytes from stdin is byte-exact" same "$("$scat" <"$tmp/bin$n" | sha)" "$(sha <"$tmp/bin$n")"
done
check "cat with a small --chunk-size is byte-exact" \
  same "$("$scat" --chunk-size 7 "$tmp/bin65537" | sha)" "$(sha <"$tmp/bin65537")"
"$scat" "$tmp/bin5242880" >"$tmp/copy"
check "cat into a file is byte-exact" cmp -s "$tmp/copy" "$tmp/bin5242880"

# Several files, standard input as '-' among them, in order.
files=()
for n in $sizes; do files+=("$tmp/bin$n"); done
check "cat of several files is cat's" same "$("$scat" "${files[@]}" | sha)" "$(cat "${files[@]}" | sha)"
check "cat with - among the files is cat's" \
  same "$("$scat" "$tmp/bin1" - "$tmp/bin65537" <"$tmp/bin131073" | sha)" \
       "$(cat "$tmp/bin1" - "$tmp/bin65537" <"$tmp/bin131073" | sha)"
check "cat -- takes what follows as files" same "$(cd "$tmp" && "$scat" -- bin1 | sha)" "$(sha <"$tmp/bin1")"

# Unreadable files: reported like cat, skipped, exit 1; the others still copied.
mkdir "$tmp/dir"
"$scat" "$tmp/bin65537" "$tmp/missing" "$tmp/dir" "$tmp/bin1" >"$tmp/out" 2>"$tmp/err"
check "cat of an unreadable file exits 1" test $? -eq 1
check "cat names a missing file" grep -qx "sluice-cat: $tmp/missing: No such file or directory" "$tmp/err"
check "cat names a directory" grep -qx "sluice-cat: $tmp/dir: Is a directory" "$tmp/err"
check "cat still copies the other files" same "$(sha <"$tmp/out")" "$(cat "$tmp/bin65537" "$tmp/bin1" | sha)"
cat "$tmp/bin65537" "$tmp/missing" "$tmp/dir" "$tmp/bin1" 2>"$tmp/err-cat" >/dev/null
check "cat's messages are cat's, but for the name" same "$(sed 's/^sluice-cat:/cat:/' "$tmp/err")" "$(cat "$tmp/err-cat")"

# Output errors: a full disk and a reader that goes away (exit 1, not SIGPIPE).
"$scat" "$tmp/bin65537" >/dev/full 2>"$tmp/err"
check "cat to /dev/full exits 1" test $? -eq 1
check "cat to /dev/full says why" grep -q '^sluice-cat: write error: No space left on device' "$tmp/err"
"$scat" "$tmp/bin5242880" 2>"$tmp/err" | head -c 10 >/dev/null
status=${PIPESTATUS[0]}
check "cat into a closed pipe exits 1, not by SIGPIPE" test "$status" -eq 1
check "cat into a closed pipe says why" grep -q '^sluice-cat: write error: Broken pipe' "$tmp/err"

# A slow reader: the output is still exact, and memory stays bounded (the
# file is 40 MiB; sluice-cat holds a few 128 KiB chunks). ASan's quarantine
# would keep freed chunks, so it is kept small for this run.
head -c $((40 << 20)) /dev/zero | tr '\0' 'z' >"$tmp/big"
if [ -x /usr/bin/time ]; then
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1 \
    /usr/bin/time -f %M -o "$tmp/rss" "$scat" "$tmp/big" 2>/dev/null |
    python3 -c 'import sys, time, hashlib
h = hashlib.sha256()
while True:
    b = sys.stdin.buffer.read(1 << 20)
    if not b:
        break
    h.update(b)
    time.sleep(0.01)
print(h.hexdigest())' >"$tmp/slow-sha"
  check "cat through a slow reader is byte-exact" same "$(cat "$tmp/slow-sha")" "$(sha <"$tmp/big")"
  rss_kb=$(tail -n 1 "$tmp/rss")
  small_rss_kb=$( { ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1 \
    /usr/bin/time -f %M "$scat" "$tmp/bin1" >/dev/null; } 2>&1 | tail -n 1)
  check "cat's memory through a slow reader stays bounded ($rss_kb KiB vs $small_rss_kb KiB for 1 byte)" \
    test $((rss_kb - small_rss_kb)) -lt 8192
fi

# A FILE that is standard output itself: refused as cat 9.1 refuses it (the
# output a regular file, the input the same one and not read to its end),
# the other FILEs still copied, exit 1; never a copy that fills the disk
# (ulimit -f bounds the damage should it start).
mkdir "$tmp/self"
printf 'abc\n' >"$tmp/self/f"
printf 'x\n' >"$tmp/self/g"
: >"$tmp/self/empty"
(cd "$tmp/self" && ulimit -f 1024 && "$scat" f >>f 2>"$tmp/err")
check "cat f >> f exits 1" test $? -eq 1
check "cat f >> f says what cat says" grep -qx 'sluice-cat: f: input file is output file' "$tmp/err"
check "cat f >> f leaves f alone" same "$(cat "$tmp/self/f")" abc
(cd "$tmp/self" && ulimit -f 1024 && "$scat" - <f >>f 2>"$tmp/err")
check "cat - < f >> f exits 1" test $? -eq 1
check "cat - < f >> f names -" grep -qx 'sluice-cat: -: input file is output file' "$tmp/err"
(cd "$tmp/self" && ulimit -f 1024 && "$scat" f 1<>f 2>"$tmp/err")
check "cat f 1<> f (not appending) is refused too" grep -qx 'sluice-cat: f: input file is output file' "$tmp/err"
(cd "$tmp/self" && ulimit -f 1024 && "$scat" f g >>g 2>"$tmp/err")
check "cat f g >> g exits 1" test $? -eq 1
check "cat f g >> g copies f" same "$(cat "$tmp/self/g")" "$(printf 'x\nabc')"
(cd "$tmp/self" && "$scat" empty >>empty 2>"$tmp/err")
check "cat of an empty file onto itself is no error, as for cat" test $? -eq 0 -a ! -s "$tmp/err"
printf 'abc\n' >"$tmp/self/f"
(cd "$tmp/self" && exec 3<f && read -r _ <&3 && "$scat" - <&3 >>f 2>"$tmp/err")
check "cat of an input read to its end onto itself is no error, as for cat" test $? -eq 0 -a ! -s "$tmp/err"
for how in "f >> f" "- < f >> f" "f g >> g" "empty >> empty" "f 1<> f"; do
  printf 'abc\n' >"$tmp/self/f"
  printf 'x\n' >"$tmp/self/g"
  (cd "$tmp/self" && eval "cat $how" 2>"$tmp/err-cat"; echo "$?" >>"$tmp/err-cat")
  printf 'abc\n' >"$tmp/self/f"
  printf 'x\n' >"$tmp/self/g"
  (cd "$tmp/self" && ulimit -f 1024 && eval "\"$scat\" $how" 2>"$tmp/err"; echo "$?" >>"$tmp/err")
  check "cat $how: status and message are cat's" same "$(sed 's/^sluice-cat:/cat:/' "$tmp/err")" "$(cat "$tmp/err-cat")"
done

# Its own output: --help to a full disk, a closed standard output.
"$scat" --help >/dev/full 2>"$tmp/err"
check "cat --help to /dev/full exits 1" test $? -eq 1
check "cat --help to /dev/full says why" grep -qx 'sluice-cat: write error: No space left on device' "$tmp/err"
"$scat" "$tmp/bin65537" >&- 2>"$tmp/err"
check "cat to a closed stdout exits 1" test $? -eq 1
check "cat to a closed stdout says why" grep -qx 'sluice-cat: write error: Bad file descriptor' "$tmp/err"

# A file past `ulimit -f`: EFBIG reported and exit 1, not death by SIGXFSZ.
(ulimit -f 1 && exec "$scat" "$tmp/bin65537" >"$tmp/limited" 2>"$tmp/err")
status=$?
check "cat past ulimit -f exits 1 (got $status)" test $status -eq 1
check "cat past ulimit -f says why" grep -qx 'sluice-cat: write error: File too large' "$tmp/err"

# ---- sluice-lines

"$slines" --help >"$tmp/out" 2>&1
check "lines --help exits 0" test $? -eq 0
check "lines --help prints usage" grep -q '^usage: sluice-lines' "$tmp/out"
check "lines --help gives an example" grep -q '^Example: sluice-lines ' "$tmp/out"
check "lines --help gives the exit status" grep -q 'Exit status' "$tmp/out"
check "lines --help documents the last line without a newline" grep -q 'one line more than' "$tmp/out"

for args in "--bogus" "-x" "-F" "--max-line-length 0" "--max-line-length x" "--max-line-length" "-F a -F b"; do
  # shellcheck disable=SC2086
  "$slines" $args </dev/null >"$tmp/out" 2>"$tmp/err"
  status=$?
  check "lines $args exits 2" test $status -eq 2
  check "lines $args says why" grep -q '^sluice-lines: ' "$tmp/err"
done

# Generated text: a log, CRLF lines, empty lines, long lines, binary.
python3 - "$tmp" <<'PY'
import random, sys
d = sys.argv[1]
random.seed(7)
levels = ["INFO", "INFO", "WARN", "ERROR", "DEBUG"]
paths = ["/api/v1/items", "/api/v1/users", "/health", "/api/v2/orders"]
with open(f"{d}/log", "w") as f:
    for i in range(100000):
        f.write(f"2026-11-30T00:00:{i % 60:02d}.{i:06d}Z {random.choice(levels)} request id={i} "
                f"path={random.choice(paths)} status={random.choice([200, 200, 404, 500])} took_us={random.randint(10, 99999)}\n")
with open(f"{d}/crlf", "wb") as f:
    for i in range(1000):
        f.write(b"crlf line %d status=%d\r\n" % (i, random.choice([200, 500])))
with open(f"{d}/empties", "w") as f:
    f.write("\n" * 777 + "x\n" + "\n" * 3)
with open(f"{d}/long", "w") as f:
    for i in range(20):
        f.write("L" * random.randint(100000, 900000) + " match\n")
with open(f"{d}/binary", "wb") as f:
    f.write(random.randbytes(3 << 20) + b"\n")
with open(f"{d}/oneline", "w") as f:
    f.write("just one\n")
PY
: >"$tmp/empty"
printf '\n' >"$tmp/newline"
texts=(log crlf empties long binary oneline empty newline)

for f in "${texts[@]}"; do
  check "lines counts $f as wc -l" same "$("$slines" "$tmp/$f")" "$(wc -l <"$tmp/$f")"
  check "lines -c counts $f as wc -l" same "$("$slines" -c "$tmp/$f")" "$(wc -l <"$tmp/$f")"
  check "lines counts $f from stdin as wc -l" same "$("$slines" <"$tmp/$f")" "$(wc -l <"$tmp/$f")"
done

# Standard input at an offset (a file of 9 MB: mapped, not read): the lines
# from there on, and the offset left at the end, as read() leaves it.
check "lines from stdin after 5000 bytes as wc -l" \
  same "$({ head -c 5000 >/dev/null; "$slines"; } <"$tmp/log")" "$(tail -c +5001 "$tmp/log" | wc -l)"
check "lines from stdin leaves nothing to read after it" \
  same "$({ "$slines" -c; cat; } <"$tmp/log")" "$(wc -l <"$tmp/log")"

# A last line without a newline: one more than wc -l (which counts newline
# characters), as --help says; the same as grep -c ''.
printf 'a\nb' >"$tmp/nonl"
printf 'no newline at all' >"$tmp/nonl1"
head -c -1 "$tmp/log" >"$tmp/log-nonl"
for f in nonl nonl1 log-nonl; do
  check "lines counts $f as wc -l + 1" same "$("$slines" "$tmp/$f")" "$(($(wc -l <"$tmp/$f") + 1))"
  check "lines counts $f as grep -c ''" same "$("$slines" "$tmp/$f")" "$(grep -c '' "$tmp/$f")"
done

# Several files: a count per file and a total, as wc prints them.
"$slines" "$tmp/log" "$tmp/crlf" "$tmp/empty" >"$tmp/out"
wc -l "$tmp/log" "$tmp/crlf" "$tmp/empty" >"$tmp/wc"
check "lines of several files: counts and total as wc -l" \
  same "$(awk '{ print $1, $2 }' "$tmp/out")" "$(awk '{ print $1, $2 }' "$tmp/wc")"

# -F: exactly grep -F's output (on files whose lines end with "\n").
for text in "ERROR" "status=500" "id=4242" "took_us=9" " " "no such text" "Z INFO request id=1"; do
  check "lines -F '$text' is grep -F" same "$("$slines" -F "$text" "$tmp/log" | sha)" "$(grep -F -- "$text" "$tmp/log" | sha)"
  check "lines -c -F '$text' is grep -cF" same "$("$slines" -c -F "$text" "$tmp/log")" "$(grep -cF -- "$text" "$tmp/log")"
done
check "lines -F '' prints every line, as grep -F ''" same "$("$slines" -F '' "$tmp/log" | sha)" "$(grep -F '' "$tmp/log" | sha)"
check "lines -F on long lines is grep -F" same "$("$slines" -F match "$tmp/long" | sha)" "$(grep -F match "$tmp/long" | sha)"
check "lines -cF (clustered) is grep -cF" same "$("$slines" -cF WARN "$tmp/log")" "$(grep -cF WARN "$tmp/log")"
check "lines -FTEXT (attached) is grep -F" same "$("$slines" -FWARN "$tmp/log" | sha)" "$(grep -F WARN "$tmp/log" | sha)"
check "lines -F from stdin is grep -F" same "$("$slines" -F ERROR <"$tmp/log" | sha)" "$(grep -F ERROR <"$tmp/log" | sha)"
check "lines -F on a last line without a newline is grep -F" same "$("$slines" -F b "$tmp/nonl")" "$(grep -F b "$tmp/nonl")"
check "lines -F with several files prefixes FILE: as grep -F" \
  same "$("$slines" -F 'id=777' "$tmp/log" "$tmp/crlf" "$tmp/oneline" | sha)" "$(grep -F 'id=777' "$tmp/log" "$tmp/crlf" "$tmp/oneline" | sha)"
check "lines -c -F with several files is grep -cF" \
  same "$("$slines" -c -F one "$tmp/log" "$tmp/oneline" "$tmp/empty")" "$(grep -cF one "$tmp/log" "$tmp/oneline" "$tmp/empty")"
# The documented difference: "\r\n" ends a line, so the "\r" is not printed.
check "lines -F on CRLF lines is grep -F without the \\r" \
  same "$("$slines" -F status=500 "$tmp/crlf" | sha)" "$(grep -F status=500 "$tmp/crlf" | tr -d '\r' | sha)"
check "lines -c -F on CRLF lines is grep -cF" same "$("$slines" -c -F status=500 "$tmp/crlf")" "$(grep -cF status=500 "$tmp/crlf")"

# Errors: an unreadable file (named, skipped, exit 1), a line too long.
"$slines" "$tmp/oneline" "$tmp/missing" "$tmp/dir" "$tmp/newline" >"$tmp/out" 2>"$tmp/err"
check "lines of an unreadable file exits 1" test $? -eq 1
check "lines names a missing file" grep -qx "sluice-lines: $tmp/missing: No such file or directory" "$tmp/err"
check "lines names a directory" grep -qx "sluice-lines: $tmp/dir: Is a directory" "$tmp/err"
check "lines still counts the other files" same "$(awk '{ print $1 }' "$tmp/out" | tr '\n' ' ')" "1 1 2 "

printf 'short\n0123456789\n01234567890\nafter\n' >"$tmp/ten"
"$slines" --max-line-length 10 "$tmp/ten" >"$tmp/out" 2>"$tmp/err"
check "lines with a line too long exits 1" test $? -eq 1
check "lines names the line too long" grep -qx "sluice-lines: $tmp/ten: line 3 is longer than 10 bytes (ERR_SLUICE_LINE_TOO_LONG)" "$tmp/err"
check "lines with --max-line-length 11 accepts it" same "$("$slines" --max-line-length 11 "$tmp/ten")" 4
head -c $((2 << 20)) /dev/zero | tr '\0' 'x' >"$tmp/huge-line"
"$slines" -F x "$tmp/huge-line" >"$tmp/out" 2>"$tmp/err"
check "lines: a 2 MiB line is too long by default, exit 1" test $? -eq 1
check "lines: a 2 MiB line is named" grep -q 'line 1 is longer than 1048576 bytes' "$tmp/err"
check "lines: nothing printed for the too long line" test ! -s "$tmp/out"

"$slines" -F '' "$tmp/log" >/dev/full 2>"$tmp/err"
check "lines to /dev/full exits 1" test $? -eq 1
check "lines to /dev/full says why" grep -q '^sluice-lines: write error: No space left on device' "$tmp/err"
"$slines" -F '' "$tmp/log" 2>"$tmp/err" | head -c 10 >/dev/null
status=${PIPESTATUS[0]}
check "lines into a closed pipe exits 1, not by SIGPIPE" test "$status" -eq 1

# Endless input into a reader that goes away: the run ends at the first
# failed write (grep exits at once too), exit 1 with the reason. `timeout`
# only keeps a regression from hanging the suite.
yes | timeout 60 "$slines" -F y 2>"$tmp/err" | head -n 1 >"$tmp/out"
status=${PIPESTATUS[1]}
check "lines -F on endless input ends when its reader goes (exit $status, 124 is a hang)" test "$status" -eq 1
check "lines -F on endless input says why" grep -qx 'sluice-lines: write error: Broken pipe' "$tmp/err"
check "lines -F on endless input printed the first line" same "$(cat "$tmp/out")" y
yes | timeout 60 "$slines" -F y >/dev/full 2>"$tmp/err"
check "lines -F on endless input to /dev/full ends (exit ${PIPESTATUS[1]})" test "${PIPESTATUS[1]}" -eq 1
check "lines -F on endless input to /dev/full says why" grep -qx 'sluice-lines: write error: No space left on device' "$tmp/err"
"$slines" "$tmp/log" >&- 2>"$tmp/err"
check "lines to a closed stdout exits 1" test $? -eq 1
check "lines to a closed stdout says why" grep -qx 'sluice-lines: write error: Bad file descriptor' "$tmp/err"
"$slines" --help >/dev/full 2>"$tmp/err"
check "lines --help to /dev/full exits 1" test $? -eq 1
check "lines --help to /dev/full says why" grep -qx 'sluice-lines: write error: No space left on device' "$tmp/err"

# The skeleton every tool shares (check.sh).
check_skeleton sluice-cat "$scat"
check_skeleton sluice-lines "$slines"

echo "cat_lines: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
