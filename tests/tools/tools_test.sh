#!/usr/bin/env bash
# The tools as a user meets them: help, bad usage, the JSON summary, I/O
# errors named in a message and a non-zero exit (never a signal death), and
# sluice-trace's answer to malformed scenarios.
#
#   tools_test.sh path/to/sluice-devnull path/to/sluice-trace
set -uo pipefail
devnull=${1:?usage: tools_test.sh SLUICE_DEVNULL SLUICE_TRACE}
trace=${2:?usage: tools_test.sh SLUICE_DEVNULL SLUICE_TRACE}

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

json_field() {  # json_field FILE KEY
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# --help: exit 0, usage on stdout.
"$devnull" --help >"$tmp/out" 2>&1
check "devnull --help exits 0" test $? -eq 0
check "devnull --help prints usage" grep -q '^usage: sluice-devnull' "$tmp/out"
check "devnull --help gives an example" grep -q '^Example: sluice-devnull ' "$tmp/out"
check "devnull --help gives the exit status" grep -q 'Exit status' "$tmp/out"

# Bad usage: exit 2 and a message naming the problem.
for args in "--bogus" "--batch 0" "--chunk-size x" "--duration -1" "--count" "--json=1" "extra"; do
  # shellcheck disable=SC2086
  "$devnull" $args >"$tmp/out" 2>"$tmp/err"
  status=$?
  check "devnull $args exits 2" test $status -eq 2
  check "devnull $args says why" test -s "$tmp/err"
done

# The JSON summary: one object with the documented keys; every write cleared.
"$devnull" --count 5000 --json --quiet >"$tmp/json" 2>"$tmp/err"
check "devnull --json exits 0" test $? -eq 0
for key in issued cleared cleared_per_s mb_per_s peak_rss_bytes max_buffered_bytes drains; do
  check "devnull --json has $key" python3 -c 'import json,sys; assert sys.argv[2] in json.load(open(sys.argv[1]))' "$tmp/json" "$key"
done
check "devnull --count 5000 issues 5000" test "$(json_field "$tmp/json" issued)" = 5000
check "devnull --count 5000 clears 5000" test "$(json_field "$tmp/json" cleared)" = 5000

# The other modes still land every byte.
for mode in "" "--no-callback" "--cork" "--hwm 1 --batch 7"; do
  # shellcheck disable=SC2086
  "$devnull" --count 3001 --chunk-size 10 --quiet --target "$tmp/file" $mode >/dev/null 2>"$tmp/err"
  check "devnull $mode to a file exits 0" test $? -eq 0
  check "devnull $mode writes every byte" test "$(stat -c %s "$tmp/file")" = 30010
done

# A progress line on a long run.
"$devnull" --duration 1.3 >/dev/null 2>"$tmp/err"
check "devnull prints progress" grep -q 'writes/s' "$tmp/err"

# A full disk: exit 1, the error named.
"$devnull" --target /dev/full --quiet >/dev/null 2>"$tmp/err"
check "devnull /dev/full exits 1" test $? -eq 1
check "devnull /dev/full names ENOSPC" grep -q ENOSPC "$tmp/err"

# A reader that goes away: exit 1 with EPIPE, not death by SIGPIPE (141).
"$devnull" --target - --duration 2 --quiet 2>"$tmp/err" | head -c 10 >/dev/null
status=${PIPESTATUS[0]}
check "devnull closed pipe exits 1 (got $status)" test "$status" -eq 1
check "devnull closed pipe names EPIPE" grep -q EPIPE "$tmp/err"

# A path it cannot open.
"$devnull" --target /no/such/dir/file --quiet >/dev/null 2>"$tmp/err"
check "devnull unopenable target exits 1" test $? -eq 1
check "devnull unopenable target says so" grep -q 'cannot open' "$tmp/err"

# sluice-trace: a malformed line names its number, prints nothing, exit 2.
printf 'writable w\nwrite w\n' >"$tmp/bad.scn"
"$trace" "$tmp/bad.scn" >"$tmp/out" 2>"$tmp/err"
check "trace malformed exits 2" test $? -eq 2
check "trace malformed names line 2" grep -q 'line 2' "$tmp/err"
check "trace malformed prints no trace" test ! -s "$tmp/out"

printf 'writable w\nwrite x a\n' >"$tmp/unknown.scn"
"$trace" "$tmp/unknown.scn" >/dev/null 2>"$tmp/err"
check "trace unknown stream exits 2" test $? -eq 2
check "trace unknown stream says so" grep -q "unknown stream 'x'" "$tmp/err"

# `complete` with nothing pending is found at run time: the trace so far, then exit 2.
printf 'writable w sync\nwrite w a\ncomplete w\n' >"$tmp/nothing.scn"
"$trace" "$tmp/nothing.scn" >"$tmp/out" 2>"$tmp/err"
check "trace complete-nothing exits 2" test $? -eq 2
check "trace complete-nothing prints the trace so far" grep -q '^write w a -> true$' "$tmp/out"
check "trace complete-nothing names line 3" grep -q 'line 3' "$tmp/err"

# Standard input, CRLF line ends and comments.
printf 'writable w sync # a comment\r\nwrite w ab cb\r\n' | "$trace" - >"$tmp/out" 2>"$tmp/err"
check "trace reads stdin" test $? -eq 0
check "trace stdin output" test "$(cat "$tmp/out")" = "$(printf '_write w ab\nwrite w ab -> true\ncb w ab ok')"

"$trace" --help >"$tmp/out"
check "trace --help exits 0" test $? -eq 0
check "trace --help gives an example" grep -q '^Example: sluice-trace ' "$tmp/out"
check "trace --help gives the exit status" grep -q 'Exit status' "$tmp/out"
"$trace" /no/such.scn >/dev/null 2>&1
check "trace unreadable file exits 2" test $? -eq 2

# Sizes that cannot be honoured are usage errors (exit 2), not an abort by
# bad_alloc; --help states the bounds.
for args in "--chunk-size 99999999999999" "--chunk-size 1073741825" "--batch 1000001" \
    "--chunk-size 2000000" "--chunk-size 1073741824 --batch 2"; do
  # shellcheck disable=SC2086
  "$devnull" $args --count 1 --quiet >"$tmp/out" 2>"$tmp/err"
  status=$?
  check "devnull $args exits 2 (got $status)" test $status -eq 2
  check "devnull $args says why" grep -q '^sluice-devnull: --' "$tmp/err"
done
"$devnull" --help >"$tmp/out"
check "devnull --help states the size bounds" grep -q '1 to 1073741824' "$tmp/out"
"$devnull" --chunk-size 1048576 --batch 1024 --count 3 --quiet --target "$tmp/mib" >/dev/null 2>"$tmp/err"
check "devnull 1 MiB chunks in batches of 1 GiB are accepted" test "$(stat -c %s "$tmp/mib")" = 3145728

# Its own output: a summary that cannot be written is exit 1 with a message,
# whether standard output is full or closed; --help too.
"$devnull" --count 10 --quiet >/dev/full 2>"$tmp/err"
check "devnull summary to /dev/full exits 1" test $? -eq 1
check "devnull summary to /dev/full says why" grep -qx 'sluice-devnull: write error: No space left on device' "$tmp/err"
"$devnull" --count 10 --quiet --json >&- 2>"$tmp/err"
check "devnull summary to a closed stdout exits 1" test $? -eq 1
check "devnull summary to a closed stdout says why" grep -qx 'sluice-devnull: write error: Bad file descriptor' "$tmp/err"
"$devnull" --help >/dev/full 2>"$tmp/err"
check "devnull --help to /dev/full exits 1" test $? -eq 1
check "devnull --help to /dev/full says why" grep -qx 'sluice-devnull: write error: No space left on device' "$tmp/err"

# A file past `ulimit -f`: EFBIG reported and exit 1, not death by SIGXFSZ.
(ulimit -f 1 && exec "$devnull" --count 100 --quiet --target "$tmp/limited" >/dev/null 2>"$tmp/err")
status=$?
check "devnull past ulimit -f exits 1 (got $status)" test $status -eq 1
check "devnull past ulimit -f names EFBIG" grep -q 'File too large (EFBIG)' "$tmp/err"

# sluice-trace: a number too large for its field is a malformed line.
printf 'writable w\nwritable v hwm=18446744073709551616\n' >"$tmp/huge.scn"
"$trace" "$tmp/huge.scn" >"$tmp/out" 2>"$tmp/err"
status=$?
check "trace hwm too large exits 2 (got $status)" test $status -eq 2
check "trace hwm too large names line 2" \
  grep -qx "sluice-trace: line 2: writable: hwm 18446744073709551616 is too large (at most 18446744073709551615)" "$tmp/err"
printf 'writable w hwm=18446744073709551615\nwrite w a\n' | "$trace" >"$tmp/out" 2>"$tmp/err"
check "trace hwm of SIZE_MAX runs" test $? -eq 0

# A bare `hwm` (no =N) is an unknown option: the fuzzer found it thrown out
# of the parser as std::out_of_range (before, it was silently ignored).
printf 'writable w\nwritable v hwm\n' | "$trace" >"$tmp/out" 2>"$tmp/err"
status=$?
check "trace bare hwm exits 2 (got $status)" test $status -eq 2
check "trace bare hwm is an unknown option" grep -qx "sluice-trace: line 2: writable: unknown option 'hwm'" "$tmp/err"

# A directory: exit 2, as for a missing file, with the reason.
"$trace" "$tmp" >"$tmp/out" 2>"$tmp/err"
check "trace DIR exits 2" test $? -eq 2
check "trace DIR says why" grep -qx "sluice-trace: cannot read $tmp: Is a directory" "$tmp/err"
"$trace" - <"$tmp" >"$tmp/out" 2>"$tmp/err"
check "trace - < DIR exits 2" test $? -eq 2
check "trace - < DIR says why" grep -qx "sluice-trace: cannot read standard input: Is a directory" "$tmp/err"
"$trace" "$tmp/no-such.scn" >"$tmp/out" 2>"$tmp/err"
check "trace missing file says why" grep -qx "sluice-trace: cannot read $tmp/no-such.scn: No such file or directory" "$tmp/err"

# The trace must land: a full or closed standard output is exit 1.
printf 'writable w sync\nwrite w a cb\n' >"$tmp/ok.scn"
"$trace" "$tmp/ok.scn" >/dev/full 2>"$tmp/err"
check "trace to /dev/full exits 1" test $? -eq 1
check "trace to /dev/full says why" grep -qx 'sluice-trace: write error: No space left on device' "$tmp/err"
"$trace" "$tmp/ok.scn" >&- 2>"$tmp/err"
check "trace to a closed stdout exits 1" test $? -eq 1
check "trace to a closed stdout says why" grep -qx 'sluice-trace: write error: Bad file descriptor' "$tmp/err"
"$trace" --help >/dev/full 2>"$tmp/err"
check "trace --help to /dev/full exits 1" test $? -eq 1

# The skeleton every tool shares (check.sh).
check_skeleton sluice-devnull "$devnull"
check_skeleton sluice-trace "$trace"

echo "tools: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
