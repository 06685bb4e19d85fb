#!/usr/bin/env bash
# sluice-log as a user meets it: numbered lines fed fast, rotated hundreds of
# times and stopped by SIGTERM mid-stream, must come out of the kept files
# (oldest to newest) exactly once each, in order, none torn, as many as
# --stats says were read; the end of the input, SIGHUP after an external
# rename, --keep, --timestamp, --fsync, and the errors: bad usage (exit 2),
# a file that cannot be opened, a full disk (exit 1, no hang).
#
#   log_test.sh path/to/sluice-log [path/to/libfsync_signal.so]
set -uo pipefail
slog=${1:?usage: log_test.sh SLUICE_LOG [FSYNC_SIGNAL_SO]}
slog=$(realpath "$slog")
fsync_signal=${2:+$(realpath "$2")}

# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"
# The N of --stats' 'sluice-log: N lines, ...' in a file of standard error.
stats_lines() { sed -n 's/^sluice-log: \([0-9]*\) lines, .*/\1/p' "$1"; }
# Waits (up to 60 s) until a file exists and is not empty.
wait_for_content() {
  local i
  for ((i = 0; i < 1200; i++)); do
    [ -s "$1" ] && return 0
    sleep 0.05
  done
  return 1
}

# Feeds sluice-log [OPTION]... LOG through a FIFO from the function FEED, run
# in the background, and sends it SIG once LOG has content: its exit status
# in $status, its standard error in $tmp/err.
feed_and_signal() {  # feed_and_signal SIG FEED LOG [OPTION]...
  local sig=$1 feed=$2 log=$3 fifo gen pid
  shift 3
  fifo=$(mktemp -u "$tmp/feed.XXXXXX")
  mkfifo "$fifo"
  $feed >"$fifo" &
  gen=$!
  bg_pids+=("$gen")
  "$slog" "$@" "$log" <"$fifo" 2>"$tmp/err" &
  pid=$!
  bg_pids+=("$pid")
  wait_for_content "$log"
  kill -"$sig" "$pid"
  wait "$pid"
  status=$?
  kill "$gen" 2>/dev/null
  wait "$gen" 2>/dev/null
}

# The generator: lines 1..N as 'line 0000001 abc...' (a varying tail, so
# that a torn or merged line cannot pass for a good one), written in batches
# of B lines with a pause of S seconds after each, to standard output.
cat >"$tmp/gen.py" <<'PY'
import sys, time
n, batch, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
tail = "abcdefghijklmnopqrstuvwxyz0123456789"
out = sys.stdout.buffer
try:
    for start in range(1, n + 1, batch):
        out.write("".join(f"line {i:07d} {tail[:i % 37]}\n" for i in range(start, min(start + batch, n + 1))).encode())
        out.flush()
        if pause:
            time.sleep(pause)
except BrokenPipeError:
    pass
PY
# The checker: the files given, oldest first, must hold lines 1..k exactly
# (the generator's format), every file ending with a newline and none past
# MAX bytes (0: no limit). Prints k. With --partial-last first, the last
# line may be the start of line k: what a signal found read of it.
cat >"$tmp/verify.py" <<'PY'
import sys
args = sys.argv[1:]
partial_last = args[0] == "--partial-last"
if partial_last:
    args = args[1:]
limit = int(args[0])
tail = "abcdefghijklmnopqrstuvwxyz0123456789"
lines = []
for path in args[1:]:
    data = open(path, "rb").read()
    if limit and len(data) > limit:
        sys.exit(f"{path}: {len(data)} bytes, more than {limit}")
    if data and not data.endswith(b"\n"):
        sys.exit(f"{path}: does not end with a newline")
    lines += [(path, line) for line in data.decode().split("\n")[:-1]]
for i, (path, line) in enumerate(lines, 1):
    want = f"line {i:07d} {tail[:i % 37]}"
    if line != want and not (partial_last and i == len(lines) and want.startswith(line)):
        sys.exit(f"{path}: line {i} is {line!r}, expected {want!r}")
print(len(lines))
PY
# The kept files of FILE, oldest first: FILE.N ... FILE.1, FILE.
kept_files() {
  local f=$1 n=1
  local list=()
  while [ -e "$f.$n" ]; do n=$((n + 1)); done
  for ((n = n - 1; n >= 1; n--)); do list+=("$f.$n"); done
  [ -e "$f" ] && list+=("$f")
  printf '%s\n' "${list[@]}"
}

# ---- usage

"$slog" --help >"$tmp/out" 2>"$tmp/err"
check "--help exits 0" test $? -eq 0
check "--help prints usage on stdout" grep -q '^usage: sluice-log' "$tmp/out"
check "--help gives an example" grep -q '^Example: .*sluice-log ' "$tmp/out"
check "--help gives the exit status" grep -q 'Exit status' "$tmp/out"
check "--help says nothing on stderr" test ! -s "$tmp/err"
check "--help says the suffixes are 1024-based" grep -q '1024-based' "$tmp/out"
check "--help documents the fsync policies" grep -q 'bytes=SIZE' "$tmp/out"
check "--help documents a line too long" grep -q 'longer than the maximum' "$tmp/out"

mkdir "$tmp/usage"
for args in "" "--bogus f" "-x f" "--max-size 12Q f" "--max-size -5 f" "--max-size f" "--max-size 1KB f" \
    "--max-size" "--keep -1 f" "--keep x f" "--keep 1.5 f" "--fsync sometimes f" "--fsync bytes= f" \
    "--fsync ms=0 f" "--fsync ms=-1 f" "--fsync bytes=1X f" "--fsync f" "--max-line-length 0 f" "--json f" "f g"; do
  # shellcheck disable=SC2086
  (cd "$tmp/usage" && "$slog" $args </dev/null >"$tmp/out" 2>"$tmp/err")
  status=$?
  check "'$args' exits 2" test $status -eq 2
  check "'$args' says why in one line, then where to look" \
    same "$(grep -c '^sluice-log: ' "$tmp/err"):$(grep -c -- '--help' "$tmp/err")" "1:1"
  check "'$args' writes nothing" test ! -s "$tmp/out"
  check "'$args' creates no file" same "$(ls -A "$tmp/usage")" ""
done

# ---- the end of the input

printf 'one\ntwo\r\nlast without newline' | "$slog" "$tmp/eof.log"
check "the end of the input exits 0" test $? -eq 0
check "every line lands; a last line gets its newline; CRLF becomes LF" \
  same "$(od -c <"$tmp/eof.log")" "$(printf 'one\ntwo\nlast without newline\n' | od -c)"
printf 'appended\n' | "$slog" "$tmp/eof.log"
check "FILE is appended to" same "$(tail -n 2 "$tmp/eof.log")" "$(printf 'last without newline\nappended')"
"$slog" "$tmp/empty.log" </dev/null
check "no input: exits 0" test $? -eq 0
check "no input: FILE is created empty" test -f "$tmp/empty.log" -a ! -s "$tmp/empty.log"

# 300,000 lines from a file and from a pipe, as fast as they come: all of
# them, once each, in order.
python3 "$tmp/gen.py" 300000 300000 0 >"$tmp/input"
"$slog" --stats "$tmp/file.log" <"$tmp/input" 2>"$tmp/err"
check "300000 lines from a file: exits 0" test $? -eq 0
check "300000 lines from a file: byte for byte" cmp -s "$tmp/file.log" "$tmp/input"
check "300000 lines from a file: --stats counts them" same "$(stats_lines "$tmp/err")" 300000
cat "$tmp/input" | "$slog" --max-size 64K --keep 1000 --stats "$tmp/pipe.log" 2>"$tmp/err"
check "300000 lines from a pipe, rotating: exits 0" test $? -eq 0
mapfile -t files < <(kept_files "$tmp/pipe.log")
check "300000 lines from a pipe: rotated many times (${#files[@]} files)" test "${#files[@]}" -gt 50
check "300000 lines from a pipe: every line once, in order, none torn, no file past 64K" \
  same "$(python3 "$tmp/verify.py" 65536 "${files[@]}")" 300000
check "300000 lines from a pipe: --stats counts them" same "$(stats_lines "$tmp/err")" 300000

printf 'a\nbb\n' | "$slog" --stats --json "$tmp/json.log" 2>"$tmp/err"
check "--stats --json: one JSON object" python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1])) == {"lines": 2, "bytes": 5, "rotations": 0, "reopens": 0} else 1)' "$tmp/err"

# A line longer than the maximum: the lines before it land, then exit 1.
printf 'short\n0123456789\n01234567890\nafter\n' | "$slog" --max-line-length 10 "$tmp/long.log" 2>"$tmp/err"
check "a line too long exits 1" test $? -eq 1
check "a line too long is named" \
  grep -qx 'sluice-log: standard input: line 3 is longer than 10 bytes (ERR_SLUICE_LINE_TOO_LONG)' "$tmp/err"
check "the lines before the line too long land" same "$(cat "$tmp/long.log")" "$(printf 'short\n0123456789')"

# ---- SIGTERM in the middle of a fast stream. The last line may be the part
# of a line read when the signal came: it is written, as the end of the
# input would write it.

total=2000000
mkdir "$tmp/term"
mkfifo "$tmp/term/in"
python3 "$tmp/gen.py" $total 5000 0.002 >"$tmp/term/in" &
gen_pid=$!
bg_pids+=("$gen_pid")
"$slog" --max-size 256K --keep 1000 --stats "$tmp/term/app.log" <"$tmp/term/in" 2>"$tmp/term/err" &
log_pid=$!
bg_pids+=("$log_pid")
# After 20 rotations, while the input still flows (the generator needs
# seconds for its 2,000,000 lines, 400 files' worth).
wait_for_content "$tmp/term/app.log.20"
kill -TERM "$log_pid"
wait "$log_pid"
status=$?
kill "$gen_pid" 2>/dev/null
wait "$gen_pid" 2>/dev/null
check "SIGTERM mid-stream exits 0" test $status -eq 0
mapfile -t files < <(kept_files "$tmp/term/app.log")
check "SIGTERM mid-stream: rotated many times (${#files[@]} files)" test "${#files[@]}" -gt 20
k=$(python3 "$tmp/verify.py" --partial-last 262144 "${files[@]}")
check "SIGTERM mid-stream: lines 1..k, once each, in order, none torn but the last read, no file past 256K" \
  test -n "$k"
read_lines=$(stats_lines "$tmp/term/err")
check "SIGTERM mid-stream: k ($k) is what --stats says was read ($read_lines)" same "$k" "$read_lines"
check "SIGTERM mid-stream: the bytes --stats counts are the files' bytes" \
  same "$(sed -n 's/^sluice-log: [0-9]* lines, \([0-9]*\) bytes, .*/\1/p' "$tmp/term/err")" "$(cat "${files[@]}" | wc -c)"
check "SIGTERM mid-stream: 0 < k < $total (the signal came mid-stream)" test "${k:-0}" -gt 0 -a "${k:-0}" -lt $total

# SIGINT does the same.
feed_slowly() { python3 "$tmp/gen.py" 100000 100 0.01; }
feed_and_signal INT feed_slowly "$tmp/int.log" --stats
check "SIGINT exits 0" test $status -eq 0
k=$(python3 "$tmp/verify.py" --partial-last 0 "$tmp/int.log")
check "SIGINT: lines 1..k land, as --stats says" same "${k:-x}" "$(stats_lines "$tmp/err")"

# SIGTERM loses nothing that was read (issue 10, defect 1): not the stream's
# read-ahead, not the unfinished last line. FILE is a FIFO that nobody reads
# until the signal, so that sluice-log stalls with its buffers full; its
# standard input is a regular file, whose offset (shared with this checker)
# says exactly how many bytes it read. What comes out of the FIFO must be
# those bytes, the last line ending with a newline as at the end of the input.
cat >"$tmp/term_prefix.py" <<'PY'
import fcntl, os, signal, struct, subprocess, sys, termios, time
slog, data_path, fifo, sig = sys.argv[1], sys.argv[2], sys.argv[3], getattr(signal, sys.argv[4])
data = open(data_path, "rb").read()
os.mkfifo(fifo)
out_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so that sluice-log's open() does not wait
in_fd = os.open(data_path, os.O_RDONLY)
p = subprocess.Popen([slog, fifo], stdin=in_fd, stderr=subprocess.PIPE)
def in_pipe():
    return struct.unpack("i", fcntl.ioctl(out_fd, termios.FIONREAD, b"\0\0\0\0"))[0]
# Until the FIFO is full (nothing more goes in): the worker waits, so does
# the reading, with the stream's read-ahead in hand.
last = -1
while (n := in_pipe()) != last or n == 0:
    if p.poll() is not None:
        sys.exit(f"sluice-log ended early: {p.returncode}")
    last = n
    time.sleep(0.2)
p.send_signal(sig)
os.set_blocking(out_fd, True)
out = b""
while chunk := os.read(out_fd, 1 << 16):
    out += chunk
err = p.stderr.read().decode()
status = p.wait()
read = os.lseek(in_fd, 0, os.SEEK_CUR)
want = data[:read] + (b"\n" if read and not data[:read].endswith(b"\n") else b"")
if status != 0 or err:
    sys.exit(f"exit {status}, stderr {err!r}")
if not 0 < read < len(data):
    sys.exit(f"the signal did not come mid-stream: {read} of {len(data)} bytes read")
if out != want:
    sys.exit(f"{len(out)} bytes written, {read} read: not the bytes read (+ a newline)")
print(read)
PY
python3 "$tmp/gen.py" 200000 200000 0 >"$tmp/prefix-input"
for sig in SIGTERM SIGINT; do
  read_bytes=$(python3 "$tmp/term_prefix.py" "$slog" "$tmp/prefix-input" "$tmp/prefix-$sig.fifo" $sig)
  check "$sig with the reading held back: every byte read is written, none more (${read_bytes:-none} bytes)" \
    test -n "$read_bytes"
done

# The unfinished last line is written when the signal comes, as at the end
# of the input.
feed_unfinished() { printf 'one\ntwo\nno newline yet'; sleep 30; }
feed_and_signal TERM feed_unfinished "$tmp/partial.log" --stats
check "SIGTERM with an unfinished line exits 0" test $status -eq 0
check "SIGTERM with an unfinished line: it is written, with a newline" \
  same "$(od -c <"$tmp/partial.log")" "$(printf 'one\ntwo\nno newline yet\n' | od -c)"
check "SIGTERM with an unfinished line: --stats counts it" same "$(stats_lines "$tmp/err")" 3

# A quiet writer: SIGTERM is handled at once, not at the next line.
mkfifo "$tmp/quiet-in"
(printf 'only line\n'; sleep 30) >"$tmp/quiet-in" &
gen_pid=$!
bg_pids+=("$gen_pid")
"$slog" "$tmp/quiet.log" <"$tmp/quiet-in" &
log_pid=$!
bg_pids+=("$log_pid")
wait_for_content "$tmp/quiet.log"
start=$(date +%s%N)
kill -TERM "$log_pid"
wait "$log_pid"
status=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
kill "$gen_pid" 2>/dev/null
check "SIGTERM with a quiet writer exits 0" test $status -eq 0
check "SIGTERM with a quiet writer is handled at once (${took_ms} ms)" test $took_ms -lt 5000
check "SIGTERM with a quiet writer: the line landed" same "$(cat "$tmp/quiet.log")" "only line"

# ---- SIGHUP: reopen after an external rename

mkfifo "$tmp/hup-in"
python3 "$tmp/gen.py" 30000 100 0.01 >"$tmp/hup-in" &
gen_pid=$!
bg_pids+=("$gen_pid")
"$slog" --stats "$tmp/hup.log" <"$tmp/hup-in" 2>"$tmp/hup-err" &
log_pid=$!
bg_pids+=("$log_pid")
wait_for_content "$tmp/hup.log"
mv "$tmp/hup.log" "$tmp/hup.log.moved"
kill -HUP "$log_pid"
wait "$log_pid"
status=$?
check "SIGHUP: exits 0 at the end of the input" test $status -eq 0
check "SIGHUP: lines went on to the moved file until the signal" test -s "$tmp/hup.log.moved"
check "SIGHUP: then to a new FILE" test -s "$tmp/hup.log"
check "SIGHUP: nothing lost across the two files" \
  same "$(python3 "$tmp/verify.py" 0 "$tmp/hup.log.moved" "$tmp/hup.log")" 30000
check "SIGHUP: --stats counts one reopen" grep -q '^sluice-log: 30000 lines, .* 1 reopens$' "$tmp/hup-err"

# ---- --keep

python3 "$tmp/gen.py" 2000 2000 0 | "$slog" --max-size 1K --keep 3 "$tmp/keep.log"
check "--keep 3: exits 0" test $? -eq 0
check "--keep 3: FILE and FILE.1 to FILE.3 only" \
  same "$(cd "$tmp" && ls -d keep.log*)" "$(printf 'keep.log\nkeep.log.1\nkeep.log.2\nkeep.log.3')"
cat "$tmp/keep.log.3" "$tmp/keep.log.2" "$tmp/keep.log.1" "$tmp/keep.log" >"$tmp/keep-all"
check "--keep 3: the kept files are the input's last lines, in order" \
  same "$(tail -c "$(stat -c %s "$tmp/keep-all")" <(python3 "$tmp/gen.py" 2000 2000 0) | sha256sum)" \
       "$(sha256sum <"$tmp/keep-all")"
check "--keep 3: no file past 1K" same "$(find "$tmp" -name 'keep.log*' -size +1024c)" ""
python3 "$tmp/gen.py" 2000 2000 0 | "$slog" --max-size 1K --keep 0 "$tmp/keep0.log"
check "--keep 0: exits 0" test $? -eq 0
check "--keep 0: FILE only" same "$(cd "$tmp" && ls -d keep0.log*)" "keep0.log"
check "--keep 0: FILE holds the last lines" same "$(tail -n 1 "$tmp/keep0.log")" "line 0002000 $(printf abcdefghijklmnopqrstuvwxyz0123456789 | head -c $((2000 % 37)))"
python3 "$tmp/gen.py" 5000 5000 0 | "$slog" --max-size 1M --keep 3 "$tmp/big.log"
check "--max-size 1M: no rotation for 100 KB" same "$(cd "$tmp" && ls -d big.log*)" "big.log"

# ---- a symbolic link is never followed (issue 19, item 11): named at
# start it is refused, exit 1; swapped in for FILE while sluice-log runs
# (mv FILE x; ln -s TARGET FILE), the next write's rotation check (with
# --max-size) or SIGHUP refuses it; the target is untouched either way.
mkdir "$tmp/kinds"
ln -s /dev/null "$tmp/kinds/null.log"
seq 100000 | "$slog" --max-size 1K --keep 2 "$tmp/kinds/null.log" 2>"$tmp/err"
check "a symlink to /dev/null: exits 1" test $? -eq 1
check "a symlink to /dev/null: still that symlink" same "$(readlink "$tmp/kinds/null.log")" /dev/null
check "a symlink to /dev/null: refused, saying why" \
  same "$(cat "$tmp/err")" "sluice-log: $tmp/kinds/null.log: a symbolic link: refusing to follow it (ELOOP)"
printf 'precious\n' >"$tmp/kinds/target"
ln -s target "$tmp/kinds/link.log"
seq 1000 | "$slog" "$tmp/kinds/link.log" 2>"$tmp/err"
check "a symlink to a file: exits 1" test $? -eq 1
check "a symlink to a file: the target is untouched" same "$(cat "$tmp/kinds/target")" precious
check "a symlink to a file: refused, saying why" \
  same "$(cat "$tmp/err")" "sluice-log: $tmp/kinds/link.log: a symbolic link: refusing to follow it (ELOOP)"
for how in max-size sighup; do
  rm -f "$tmp/in" "$tmp/kinds/swap.log" "$tmp/kinds/swap.moved"
  mkfifo "$tmp/in"
  opts=()
  [ $how = max-size ] && opts=(--max-size 1M)
  "$slog" "${opts[@]}" "$tmp/kinds/swap.log" <"$tmp/in" 2>"$tmp/err" &
  sp=$!
  bg_pids+=("$sp")
  exec 7>"$tmp/in"
  echo before >&7
  wait_for_content "$tmp/kinds/swap.log" before
  mv "$tmp/kinds/swap.log" "$tmp/kinds/swap.moved"
  ln -s target "$tmp/kinds/swap.log"
  [ $how = sighup ] && kill -HUP "$sp"
  echo "ssh-ed25519 AAAA attacker" >&7
  for _ in $(seq 600); do kill -0 "$sp" 2>/dev/null || break; sleep 0.05; done
  exec 7>&-
  wait "$sp"
  status=$?
  check "a symlink swapped in ($how): exits 1 (got $status)" test $status -eq 1
  check "a symlink swapped in ($how): the target is untouched" same "$(cat "$tmp/kinds/target")" precious
  check "a symlink swapped in ($how): the moved file has what came before" same "$(head -n 1 "$tmp/kinds/swap.moved")" before
  check "a symlink swapped in ($how): refused, saying why" \
    grep -qx "sluice-log: $tmp/kinds/swap.log: a symbolic link: refusing to follow it (ELOOP)" "$tmp/err"
done
mkfifo "$tmp/kinds/fifo.log"
cat "$tmp/kinds/fifo.log" >"$tmp/kinds/from-fifo" &
cat_pid=$!
seq 10000 | "$slog" --max-size 1K --keep 2 "$tmp/kinds/fifo.log" 2>"$tmp/err"
status=$?
wait $cat_pid
check "a FIFO: exits 0" test $status -eq 0
check "a FIFO: still a FIFO" test -p "$tmp/kinds/fifo.log"
check "a FIFO: every line through it" same "$(cat "$tmp/kinds/from-fifo")" "$(seq 10000)"
check "a FIFO: no rotated file" same "$(cd "$tmp/kinds" && ls -d fifo.log*)" fifo.log
check "a FIFO: one note" same "$(cat "$tmp/err")" "sluice-log: $tmp/kinds/fifo.log: a FIFO: written without rotation"
seq 10 | "$slog" --max-size 1K /dev/null 2>"$tmp/err"
check "a character device: exits 0, one note" \
  same "$?:$(cat "$tmp/err")" "0:sluice-log: /dev/null: a character device: written without rotation"
seq 10 | "$slog" /dev/null 2>"$tmp/err"
check "no --max-size, no note" test ! -s "$tmp/err"

# ---- two processes rotating one FILE (issue 10, defect 8): every line of
# both lands exactly once, in each one's order, none torn, no file past
# --max-size. The two start together and write as fast as they can.
mkdir "$tmp/two"
for who in a b; do
  python3 -c '
import sys
who = sys.argv[1]
sys.stdout.write("".join(f"{who} {i:06d} " + "x" * (i % 23) + "\n" for i in range(1, 20001)))' $who >"$tmp/two/in-$who"
done
"$slog" --max-size 4K --keep 100000 "$tmp/two/app.log" <"$tmp/two/in-a" 2>"$tmp/two/err-a" &
pid_a=$!
"$slog" --max-size 4K --keep 100000 "$tmp/two/app.log" <"$tmp/two/in-b" 2>"$tmp/two/err-b" &
pid_b=$!
wait $pid_a
status_a=$?
wait $pid_b
status_b=$?
check "two writers: both exit 0, silently" same "$status_a:$status_b:$(cat "$tmp/two/err-a" "$tmp/two/err-b")" "0:0:"
mapfile -t files < <(kept_files "$tmp/two/app.log")
check "two writers: rotated many times (${#files[@]} files)" test "${#files[@]}" -gt 100
check "two writers: every line once, in each one's order, none torn, no file past 4K" python3 -c '
import sys
seen = {"a": 0, "b": 0}
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    if len(data) > 4096 or not data.endswith(b"\n"):
        sys.exit(f"{path}: {len(data)} bytes, or no final newline")
    for line in data.decode().split("\n")[:-1]:
        who, num, tail = line.split(" ")
        i = int(num)
        if i != seen[who] + 1 or tail != "x" * (i % 23):
            sys.exit(f"{path}: {line!r} after {who} {seen[who]}")
        seen[who] = i
if seen != {"a": 20000, "b": 20000}:
    sys.exit(f"lines: {seen}")' "${files[@]}"

# ---- --timestamp

before=$(date -u +%s)
printf 'hello\n\nworld' | "$slog" --timestamp "$tmp/ts.log"
check "--timestamp: exits 0" test $? -eq 0
after=$(date -u +%s)
stamp='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z'
check "--timestamp: RFC 3339, UTC, microseconds, a space, the line" \
  same "$(grep -cE "^$stamp (hello|world|)$" "$tmp/ts.log"):$(wc -l <"$tmp/ts.log")" "3:3"
first=$(head -c 19 "$tmp/ts.log")
secs=$(date -u -d "$first" +%s)
check "--timestamp: the time is now, in UTC ($first)" test "$secs" -ge "$before" -a "$secs" -le "$after"
python3 "$tmp/gen.py" 20000 20000 0 | "$slog" --timestamp "$tmp/ts2.log"
check "--timestamp: never decreasing" python3 -c '
import sys
stamps = [l[:27] for l in open(sys.argv[1])]
sys.exit(0 if stamps == sorted(stamps) and len(stamps) == 20000 else 1)' "$tmp/ts2.log"
check "--timestamp: the lines after the stamps are the input" \
  same "$(cut -c 29- "$tmp/ts2.log" | sha256sum)" "$(python3 "$tmp/gen.py" 20000 20000 0 | sha256sum)"

# ---- --fsync

for policy in never end bytes=0 bytes=4K bytes=1M ms=1 ms=1000; do
  python3 "$tmp/gen.py" 20000 1000 0 | "$slog" --fsync "$policy" --max-size 64K --keep 100 "$tmp/fsync-$policy.log"
  check "--fsync $policy: exits 0" test $? -eq 0
  mapfile -t files < <(kept_files "$tmp/fsync-$policy.log")
  check "--fsync $policy: every line lands" same "$(python3 "$tmp/verify.py" 65536 "${files[@]}")" 20000
done

# ---- files that cannot be opened or written

"$slog" /nonexistent/dir/x </dev/null 2>"$tmp/err"
check "an unopenable FILE exits 1" test $? -eq 1
check "an unopenable FILE is named" grep -qx 'sluice-log: /nonexistent/dir/x: No such file or directory' "$tmp/err"
"$slog" "$tmp" </dev/null 2>"$tmp/err"
check "a directory as FILE exits 1" test $? -eq 1
check "a directory as FILE is named" grep -qx "sluice-log: $tmp: Is a directory" "$tmp/err"

printf 'a\nb\n' | timeout 20 "$slog" /dev/full 2>"$tmp/err"
check "/dev/full exits 1" test $? -eq 1
check "/dev/full says why" grep -qx 'sluice-log: /dev/full: No space left on device' "$tmp/err"
check "/dev/full says it once" same "$(wc -l <"$tmp/err")" 1
yes 'an endless line' | timeout 20 "$slog" --timestamp /dev/full 2>"$tmp/err"
check "/dev/full with endless input exits 1, without hanging" test "${PIPESTATUS[1]}" -eq 1
check "/dev/full with endless input says why" grep -qx 'sluice-log: /dev/full: No space left on device' "$tmp/err"

# --stats counts the lines that landed, not those the file refused.
printf 'a\nb\n' | "$slog" --stats /dev/full 2>"$tmp/err"
check "--stats on /dev/full exits 1" test $? -eq 1
check "--stats on /dev/full counts no line written" grep -qx 'sluice-log: 0 lines, 0 bytes, 0 rotations, 0 reopens' "$tmp/err"

# Its own standard output (--help only) is checked too.
"$slog" --help >/dev/full 2>"$tmp/err"
check "--help to /dev/full exits 1" test $? -eq 1
check "--help to /dev/full says why" grep -qx 'sluice-log: write error: No space left on device' "$tmp/err"

# A file past `ulimit -f`: EFBIG reported and exit 1, not death by SIGXFSZ.
(ulimit -f 1 && python3 "$tmp/gen.py" 1000 1000 0 | "$slog" "$tmp/limited.log" 2>"$tmp/err")
status=$?
check "a FILE past ulimit -f exits 1 (got $status)" test $status -eq 1
check "a FILE past ulimit -f says why" grep -qx "sluice-log: $tmp/limited.log: File too large" "$tmp/err"

# ---- resources that run out (issue 10, defect 7): a clear message and exit
# 1, never std::terminate (exit 134). With few fds, each of sluice-log's
# needs in turn finds none: the signals' eventfds, FILE, the loop's eventfd.
seq 10 >"$tmp/ten"
emfile=0
# UBSan checks a vptr through a pipe of its own: with no fd left it reports
# valid objects as bad ('invalid vptr', 'memory cannot be printed'). Those
# lines are the sanitizer's, not sluice-log's.
# So under a sanitizer these runs report without halting (CI sets
# halt_on_error=1, which would end sluice-log at the first false report) and
# without stack traces, and the reports are filtered out: the report line,
# its notes, and the bytes and marker it prints when a later probe finds an
# fd after all. LeakSanitizer's scan at exit needs fds of its own too (it
# reads /proc/self/task), and when it finds none it exits 1 itself, so it is
# off for these runs; every other test runs with it.
sanitizer_noise='runtime error: .* address 0x[0-9a-f]+ which does not point to an object of type|^0x[0-9a-f]+: note: |^<memory cannot be printed>$|^ +#[0-9]+ |^SUMMARY: UndefinedBehaviorSanitizer|^ [0-9a-f ]+$|^ +\^~*$|^ +vptr for '
for n in 4 5 6 7 8 9 10 12 16; do
  (ulimit -n $n && UBSAN_OPTIONS=halt_on_error=0:print_stacktrace=0 ASAN_OPTIONS=detect_leaks=0 exec "$slog" "$tmp/fds-$n.log") <"$tmp/ten" 2>"$tmp/err-raw"
  status=$?
  grep -Ev "$sanitizer_noise" "$tmp/err-raw" >"$tmp/err"
  check "ulimit -n $n: exits 0 or 1, never aborts (got $status)" test $status -eq 0 -o $status -eq 1
  if [ $status -eq 1 ]; then
    check "ulimit -n $n: says why in one line" grep -qx 'sluice-log: .*Too many open files' "$tmp/err"
    check "ulimit -n $n: says it once" same "$(wc -l <"$tmp/err")" 1
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || sed 's/^/  stderr: /' "$tmp/err" | head -20
    emfile=$((emfile + 1))
  else
    check "ulimit -n $n: every line lands" cmp -s "$tmp/fds-$n.log" "$tmp/ten"
  fi
done
check "some ulimit -n ran out of fds ($emfile times)" test $emfile -gt 0
# Whether sluice-log runs under ASan. grep -c reads all of ldd's output:
# with grep -q, ldd could die of SIGPIPE, which pipefail turned into "no".
asan=$(ldd "$slog" | grep -c libasan)
# The eventfd sluice-log's loop makes at its first line, the last fd it
# needs: 0-2, three signals, FILE; the seventh is missing. (Under ASan the
# sanitizer's own fds shift this: the loop above covers it.)
if [ "$asan" -eq 0 ]; then
  (ulimit -n 7 && exec "$slog" "$tmp/fds7.log") <"$tmp/ten" 2>"$tmp/err"
  check "ulimit -n 7: the loop's eventfd is missing: exit 1 (got $?)" test $? -eq 1
  check "ulimit -n 7: named as FILE's error" grep -qx "sluice-log: $tmp/fds7.log: Too many open files" "$tmp/err"
fi

# Memory: under ulimit -v a line of 50 MB cannot be held. ASan reserves
# terabytes of address space, so these run in a build without it.
if [ "$asan" -eq 0 ]; then
  { printf 'first\n'; head -c 50000000 /dev/zero | tr '\0' x; } >"$tmp/huge-line"
  (ulimit -v 60000 && exec "$slog" --max-line-length 1073741824 "$tmp/nomem.log") <"$tmp/huge-line" 2>"$tmp/err"
  status=$?
  check "out of memory for a line: exit 1, not an abort (got $status)" test $status -eq 1
  check "out of memory for a line: says so, with the line" \
    grep -qx 'sluice-log: out of memory at line 2 of standard input' "$tmp/err"
  check "out of memory for a line: the lines before it land" same "$(cat "$tmp/nomem.log")" first
  rm -f "$tmp/huge-line"
  seq 100000 >"$tmp/many"
  for v in 12000 14000 15000 16000 17000 20000; do
    (ulimit -v $v && exec "$slog" --timestamp --max-size 10K --keep 1000 "$tmp/vm-$v.log") <"$tmp/many" 2>"$tmp/err"
    status=$?
    check "ulimit -v $v: exits 0 or 1, never aborts (got $status)" test $status -eq 0 -o $status -eq 1
    check "ulimit -v $v: at most one line on stderr" test "$(wc -l <"$tmp/err")" -le 1
    mapfile -t files < <(kept_files "$tmp/vm-$v.log")
    check "ulimit -v $v: what landed is the input's first lines, in order" \
      same "$(cat /dev/null "${files[@]}" | cut -c 29- | cmp - "$tmp/many" 2>&1 | grep -v '^cmp: EOF on -')" ""
  done
else
  echo "SKIP ulimit -v: ASan's shadow memory needs more"
fi

# ---- a signal during the shutdown: the last fsync raises it (a preload
# that signals at every fsync; with --fsync end the last one is the only
# one), where SIGHUP or a second SIGTERM once found SIG_DFL and killed
# sluice-log (exit 129 or 143) before the file was closed.
if [ -n "$fsync_signal" ]; then
  for sig in HUP TERM; do
    printf 'one\ntwo\n' | FSYNC_SIGNAL=$sig LD_PRELOAD=$fsync_signal \
      ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
      "$slog" --fsync end --stats "$tmp/shutdown-$sig.log" 2>"$tmp/err"
    status=$?
    check "SIG$sig during the last fsync: exits 0 (got $status)" test $status -eq 0
    check "SIG$sig during the last fsync: every line landed" same "$(cat "$tmp/shutdown-$sig.log")" "$(printf 'one\ntwo')"
    check "SIG$sig during the last fsync: the stats are printed" grep -q '^sluice-log: 2 lines' "$tmp/err"
  done
else
  echo "SKIP the signal during the shutdown: no fsync_signal preload given"
fi

echo "log: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
