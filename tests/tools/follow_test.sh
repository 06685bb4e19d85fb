#!/usr/bin/env bash
# sluice-log --follow as a service meets it: a writer appends numbered
# lines while a real logrotate (private config and state) rotates the file,
# once in `create` mode and once in `copytruncate` mode, and sluice-log is
# SIGKILLed (with a rotation while it is down) and started again on the
# same --state, sending into sluice-logd --listen-relp --fsync ack: every
# line the files held arrives, duplicates only within the bound and counted
# (--stats re-read). Also: deletion and recreation, a file whose inode came
# back under another content (the fingerprint), a last line waiting for its
# newline, and one sent as it is after 5 s in a rotated file, a rotated
# file moved away (seen by the poll), a copytruncate while sluice-log is
# held back (the unread part read from the copy), --spool, standard input
# not read, a line too long, and bad input: a directory or FIFO as PATH,
# options without --follow, a --state DIR that is a symbolic link, one that
# cannot be saved into or is on a full disk (said once, following goes on,
# the last save kept), a symbolic link planted in it (not followed), a
# state file that is not one, a PATH that is a symbolic link. Loopback
# only; every wait is bounded.
#
#   tests/tools/follow_test.sh SLUICE_LOG SLUICE_LOGD
set -euo pipefail
slog=$(realpath "${1:?usage: follow_test.sh SLUICE_LOG SLUICE_LOGD}")
logd=$(realpath "${2:?usage: follow_test.sh SLUICE_LOG SLUICE_LOGD}")
listen_kind=RELP
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"
logrotate=$(command -v logrotate || echo /usr/sbin/logrotate)
[ -x "$logrotate" ] || fail "logrotate is not installed (.ci/install-deps installs it)"

# Waits (up to 30 s, scaled) until FILE has at least N lines.
wait_lines() {
  for _ in $(seq $((600 * scale))); do
    [ "$(cat "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "${3:-$1}: $(cat "$1" 2>/dev/null | wc -l) lines, waited for $2"
}
# SIGTERM to PID, then at most 30 s (scaled) for it to exit; its status
# in $st.
term() {
  kill -TERM "$1"
  for _ in $(seq $((600 * scale))); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  st=0
  wait "$1" || st=$?
}
# A JSON field of the --stats --json object in FILE, which must be the only
# one there: the follower's counts are fields of sluice-log's one object,
# so a script reading one object a run reads them all.
stat_of() {
  python3 - "$1" "$2" <<'PY' || fail "$1: not one --stats --json object: $(cat "$1")"
import json, sys
objs = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith("{")]
if len(objs) != 1:
    sys.exit(1)
# A key twice (a destination's and the follower's) would hide one of them.
def once(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        sys.exit("duplicate keys")
    return dict(pairs)
print(json.loads(objs[0], object_pairs_hook=once)[sys.argv[2]])
PY
}
# Appends lines FROM..TO ("line NNNNNN" and padding) to FILE, ten at a time
# (each batch opening FILE anew, as a program that reopens after a
# rotation), 10 ms apart.
writer() {
  python3 - "$@" <<'PY'
import sys, time
path, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
i = first
while i <= last:
    with open(path, "a") as f:
        for _ in range(10):
            if i > last:
                break
            f.write("line %06d %s\n" % (i, "x" * 40))
            i += 1
    time.sleep(0.01)
PY
}

# ---- bad input: exit 2 with one message and the pointer to --help
mkdir "$dir/adir"
mkfifo "$dir/fifo"
usage() {
  local want=$1; shift
  local st=0
  "$slog" "$@" "$dir/never.log" </dev/null 2>"$dir/usage.err" || st=$?
  [ "$st" -eq 2 ] || fail "$*: exit $st, want 2: $(cat "$dir/usage.err")"
  grep -qF -- "$want" "$dir/usage.err" || fail "$*: no '$want' in: $(cat "$dir/usage.err")"
  grep -qF "Try 'sluice-log --help'" "$dir/usage.err" || fail "$*: no pointer to --help"
}
usage "--follow $dir/adir: a directory" --follow "$dir/adir"
usage "--follow $dir/fifo: a FIFO" --follow "$dir/fifo"
usage "--follow $dir/x.log is given twice" --follow "$dir/x.log" --follow "$dir/x.log"
usage "--state goes with --follow PATH" --state "$dir/st"
usage "--poll-interval goes with --follow PATH" --poll-interval 1s
usage "--poll-interval wants a time above 0" --follow "$dir/x.log" --poll-interval 0
usage "--follow $dir/never.log is DEST itself" --follow "$dir/never.log"
"$slog" --help >"$dir/help"
grep -q -- "--follow PATH" "$dir/help" || fail "--help has no --follow"
grep -q -- "--state DIR" "$dir/help" || fail "--help has no --state"
ok "bad usage: a directory, a FIFO, twice, --state and --poll-interval alone, --poll-interval 0, DEST itself"

# A --state DIR that is a symbolic link: refused, exit 1.
mkdir "$dir/real_state"
ln -s "$dir/real_state" "$dir/link_state"
st=0
timeout $((20 * scale)) "$slog" --follow "$dir/x.log" --state "$dir/link_state" "$dir/out0.log" 2>"$dir/err" || st=$?
[ "$st" -eq 1 ] || fail "--state a symbolic link: exit $st"
grep -q "link_state: a symbolic link" "$dir/err" || fail "--state a symbolic link: $(cat "$dir/err")"
ok "a --state DIR that is a symbolic link is refused"

# In the background while the rest runs: a last line without its newline,
# in a file then rotated away: sent as it is once that file has been quiet
# for 5 s (the documented bound), after the new file's line; checked at
# the end.
mkdir "$dir/partial"
printf 'a tail without its newline' >"$dir/partial/c.log"
"$slog" --follow "$dir/partial/c.log" --stats --json "$dir/partial/out.log" 2>"$dir/partial/err" </dev/null &
partial_pid=$!
pids+=("$partial_pid")
sleep 0.5
mv "$dir/partial/c.log" "$dir/partial/c.log.1"
printf 'next\n' >"$dir/partial/c.log"

# ---- rotation under a writer, SIGKILL and restart, into a RELP receiver
rotation_run() {
  local mode=$1 d="$dir/$1"
  mkdir "$d"
  cat >"$d/lr.conf" <<CONF
$d/app.log {
  rotate 20
  $mode
  missingok
  nocompress
}
CONF
  ERR="$d/logd.err" start --listen-relp 127.0.0.1:0 --fsync ack "$d/recv.log"
  local lines=3000
  writer "$d/app.log" 1 $lines &
  local wp=$!
  pids+=("$wp")
  # --window 1024: the bound on what is re-read below counts it.
  local args=(--follow "$d/app.log" --state "$d/state" --poll-interval 200ms --stats --json --window 1024
              "relp://127.0.0.1:$port")
  "$slog" "${args[@]}" 2>"$d/err1" &
  local sp=$!
  pids+=("$sp")
  wait_lines "$d/recv.log" 400 "$mode: first run"
  "$logrotate" -s "$d/lr.state" -f "$d/lr.conf"  # rotated while it runs
  wait_lines "$d/recv.log" 900 "$mode: after the first rotation"
  kill -9 "$sp"
  wait "$sp" 2>/dev/null || true
  sleep 0.2
  "$logrotate" -s "$d/lr.state" -f "$d/lr.conf"  # rotated while it is down
  sleep 0.2
  "$slog" "${args[@]}" 2>"$d/err2" &
  sp=$!
  pids+=("$sp")
  wait_lines "$d/recv.log" 1800 "$mode: second run"
  "$logrotate" -s "$d/lr.state" -f "$d/lr.conf"  # and again while it runs
  wait "$wp"
  # What the files hold is what must arrive (copytruncate loses the lines
  # written between its copy and its truncation: logrotate's, not ours).
  cat "$d"/app.log* | grep -o '^line [0-9]*' | sort -u >"$d/want"
  local want
  want=$(wc -l <"$d/want")
  for _ in $(seq $((600 * scale))); do
    [ "$(grep -o 'line [0-9]*' "$d/recv.log" | sort -u | comm -23 "$d/want" - | wc -l)" -eq 0 ] && break
    sleep 0.05
  done
  local st
  term "$sp"
  [ "$st" -eq 0 ] || fail "$mode: sluice-log exited $st: $(cat "$d/err2")"
  stop
  grep -o 'line [0-9]*' "$d/recv.log" | sort >"$d/got"
  local missing dups extra reread
  missing=$(sort -u "$d/got" | comm -23 "$d/want" - | wc -l)
  extra=$(sort -u "$d/got" | comm -13 "$d/want" - | wc -l)
  dups=$(( $(wc -l <"$d/got") - $(sort -u "$d/got" | wc -l) ))
  reread=$(stat_of "$d/err2" reread)
  [ "$missing" -eq 0 ] || fail "$mode: $missing of $want lines missing, e.g. $(sort -u "$d/got" | comm -23 "$d/want" - | head -3 | tr '\n' ' ')"
  # Lines sent that no file holds any more: copytruncate's lost window
  # only; with create, none.
  [ "$mode" = copytruncate ] || [ "$extra" -eq 0 ] || fail "$mode: $extra lines not in any file"
  # The duplicates: what the first run had sent and not saved as
  # acknowledged, each counted (re-read: the lines read again that the
  # first run had read, so at most a read's 64 KiB, 1260 of these lines,
  # and the RELP window, 1024, more than the duplicates).
  [ "$dups" -le "$reread" ] || fail "$mode: $dups duplicates, $reread counted re-read"
  [ "$reread" -le $((dups + 1260 + 1024)) ] || fail "$mode: $reread re-read for $dups duplicates"
  local rotations
  rotations=$(stat_of "$d/err2" "$([ "$mode" = create ] && echo follow_rotations || echo truncations)")
  [ "$rotations" -ge 1 ] || fail "$mode: the second run saw no rotation: $(cat "$d/err2")"
  ok "$mode: $want lines in the files, all arrived; SIGKILL and a rotation while down: $dups duplicates, $reread counted re-read"
}
rotation_run create
rotation_run copytruncate

# ---- copytruncate while sluice-log is held back (no receiver yet): what it
# had not read is read from the copy, found by its fingerprint.
d="$dir/held"
mkdir "$d"
cat >"$d/lr.conf" <<CONF
$d/app.log {
  rotate 5
  copytruncate
  nocompress
}
CONF
hport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# At once: far more than the RELP window (--window 1024) and the stream's
# buffer hold.
python3 -c 'import sys; open(sys.argv[1], "w").write("".join("line %06d %s\n" % (i, "x" * 40) for i in range(1, 5001)))' "$d/app.log"
"$slog" --follow "$d/app.log" --stats --json --window 1024 "relp://127.0.0.1:$hport" 2>"$d/err" &
sp=$!
pids+=("$sp")
sleep 0.5
"$logrotate" -s "$d/lr.state" -f "$d/lr.conf"
writer "$d/app.log" 5001 5010
ERR="$d/logd.err" start --listen-relp "127.0.0.1:$hport" --fsync ack "$d/recv.log"
wait_lines "$d/recv.log" 5010 "held back, then the copy"
term "$sp"
[ "$st" -eq 0 ] || fail "held: exit $st: $(cat "$d/err")"
stop
[ "$(grep -o 'line [0-9]*' "$d/recv.log" | sort -u | wc -l)" -eq 5010 ] || fail "held: $(grep -o 'line [0-9]*' "$d/recv.log" | sort -u | wc -l) of 5010 distinct lines"
[ "$(stat_of "$d/err" truncations)" -eq 1 ] || fail "held: truncations: $(cat "$d/err")"
ok "copytruncate while held back: the unread part read from the copy, then the new lines"

# ---- through --spool into syslog:// (sluice-logd --listen)
d="$dir/spool"
mkdir "$d"
seq -f 'spooled %.0f' 1 500 >"$d/s.log"
listen_kind="" ERR="$d/logd.err" start --listen 127.0.0.1:0 "$d/recv.log"
"$slog" --follow "$d/s.log" --state "$d/state" --spool "$d/spool" --stats "syslog://127.0.0.1:$port" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
wait_lines "$d/recv.log" 500 "through --spool"
term "$sp"
[ "$st" -eq 0 ] || fail "--spool: exit $st: $(cat "$d/err")"
stop
[ "$(grep -c 'spooled [0-9]*$' "$d/recv.log")" -eq 500 ] || fail "--spool: $(grep -c spooled "$d/recv.log") of 500"
# Fields: current, device, inode, fingerprint's length and hash, acknowledged, sent, PATH.
awk -v size="$(stat -c %s "$d/s.log")" 'NR == 2 && $6 == size { found = 1 } END { exit !found }' "$d/state/positions" ||
  fail "--spool: the position saved is not the end: $(cat "$d/state/positions")"
ok "through --spool into syslog://: every line, the position saved at the end"

# ---- into a FILE: deletion and recreation, a partial line, stdin not read
d="$dir/plain"
mkdir "$d"
printf 'one\ntwo\n' >"$d/a.log"
echo "from stdin" | "$slog" --follow "$d/a.log" --state "$d/state" --poll-interval 100ms "$d/out.log" 2>"$d/err" &
sp=$!
pids+=("$sp")
wait_lines "$d/out.log" 2
# One sluice-log a state DIR.
st=0
timeout $((20 * scale)) "$slog" --follow "$d/a.log" --state "$d/state" "$d/other.log" </dev/null 2>"$d/err2" || st=$?
[ "$st" -eq 1 ] || fail "a second sluice-log on one --state: exit $st"
grep -q "another sluice-log follows with it" "$d/err2" || fail "a second sluice-log on one --state: $(cat "$d/err2")"
rm "$d/a.log"
sleep 0.3
printf 'three\n' >"$d/a.log"
wait_lines "$d/out.log" 3
printf 'four without' >>"$d/a.log"
sleep 0.5
printf ' its end\n' >>"$d/a.log"
wait_lines "$d/out.log" 4
term "$sp"
[ "$st" -eq 0 ] || fail "deletion: exit $st: $(cat "$d/err")"
printf 'one\ntwo\nthree\nfour without its end\n' | cmp - "$d/out.log" || fail "deletion: got $(cat "$d/out.log")"
ok "deleted and created again: read to its end, then the new one; a last line waits for its newline; stdin not read; one sluice-log a state DIR"

# A rotated file moved to another directory, and written there: inotify on
# PATH's directory says nothing of it; the --poll-interval look reads it.
mkdir "$d/elsewhere"
printf 'p1\n' >"$d/b.log"
"$slog" --follow "$d/b.log" --poll-interval 100ms "$d/out_poll.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
wait_lines "$d/out_poll.log" 1
mv "$d/b.log" "$d/elsewhere/b.log"
sleep 0.3
printf 'p2\np3\n' >>"$d/elsewhere/b.log"
wait_lines "$d/out_poll.log" 3 "a rotated file moved away"
term "$sp"
[ "$st" -eq 0 ] || fail "poll: exit $st: $(cat "$d/err")"
printf 'p1\np2\np3\n' | cmp - "$d/out_poll.log" || fail "poll: got $(cat "$d/out_poll.log")"
ok "a rotated file moved to another directory and written there: seen by the --poll-interval look"

# The inode of a file gone may come back for a new one: the fingerprint
# tells them apart, and the new one is read from its start.
cp "$d/state/positions" "$d/positions.kept"
rm "$d/a.log"
printf 'another file %s\n' a b c >"$d/a.log"
"$slog" --follow "$d/a.log" --state "$d/state" "$d/out.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
wait_lines "$d/out.log" 7
term "$sp"
[ "$st" -eq 0 ] || fail "new file: exit $st: $(cat "$d/err")"
tail -3 "$d/out.log" | cmp - <(printf 'another file %s\n' a b c) || fail "new file: got $(cat "$d/out.log")"
ok "a new file at PATH (inode $(stat -c %i "$d/a.log"), was $(awk 'NR == 2 { print $3 }' "$d/positions.kept")) is read from its start"

# Restarted with nothing new: nothing sent again.
printf 'another file d\n' >>"$d/a.log"
"$slog" --follow "$d/a.log" --state "$d/state" --stats "$d/out.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
wait_lines "$d/out.log" 8
term "$sp"
[ "$st" -eq 0 ] || fail "resume: exit $st"
# --stats is one line: the FILE's counts, then the follower's.
[ "$(grep -c '^sluice-log: [0-9]* lines, .*, followed 1 files through 0 rotations and 0 truncations, .* state saves, 0 state failures$' "$d/err")" -eq 1 ] &&
  [ "$(grep -c '^sluice-log: .*[0-9]' "$d/err")" -eq 1 ] || fail "resume: not one --stats line: $(cat "$d/err")"
[ "$(grep -c 'another file' "$d/out.log")" -eq 4 ] || fail "resume: sent again: $(cat "$d/out.log")"
ok "a restart goes on after the last acknowledged line"

# PATH a symbolic link (as /var/log/app.log may be): followed, and found
# again by a restart.
mkdir "$d/real"
printf 'l1\nl2\n' >"$d/real/app.log"
ln -s real/app.log "$d/link.log"
for more in l3 l4; do
  "$slog" --follow "$d/link.log" --state "$d/link_state" "$d/out_link.log" 2>"$d/err" </dev/null &
  sp=$!
  pids+=("$sp")
  wait_lines "$d/out_link.log" $(( $(wc -l <"$d/real/app.log") ))
  term "$sp"
  [ "$st" -eq 0 ] || fail "link: exit $st: $(cat "$d/err")"
  echo "$more" >>"$d/real/app.log"
done
"$slog" --follow "$d/link.log" --state "$d/link_state" "$d/out_link.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
wait_lines "$d/out_link.log" 4
term "$sp"
printf 'l1\nl2\nl3\nl4\n' | cmp - "$d/out_link.log" || fail "link: got $(tr '\n' ' ' <"$d/out_link.log")"
ok "PATH a symbolic link: followed, and found again by each restart"

# ---- the state DIR cannot be saved into: said once, following goes on,
# the last save kept; a symbolic link planted there is not followed.
cp "$d/state/positions" "$d/positions.kept"
mkdir "$d/state/positions.tmp"
"$slog" --follow "$d/a.log" --state "$d/state" --poll-interval 100ms "$d/out.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
for i in 1 2 3; do echo "unsaved $i" >>"$d/a.log"; sleep 0.4; done
wait_lines "$d/out.log" 11
term "$sp"
[ "$st" -eq 0 ] || fail "unsavable state: exit $st"
[ "$(grep -c 'cannot save the positions' "$d/err")" -eq 1 ] || fail "unsavable state: said $(grep -c 'cannot save' "$d/err") times: $(cat "$d/err")"
cmp "$d/positions.kept" "$d/state/positions" || fail "unsavable state: the last save changed"
rmdir "$d/state/positions.tmp"
ln -s "$d/victim" "$d/state/positions.tmp"
"$slog" --follow "$d/a.log" --state "$d/state" "$d/out.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
echo "linked" >>"$d/a.log"
wait_lines "$d/out.log" 12
term "$sp"
[ ! -e "$d/victim" ] || fail "a symbolic link in the state DIR was followed"
grep -q 'positions.tmp: Too many levels of symbolic links' "$d/err" || fail "planted link: $(cat "$d/err")"
rm "$d/state/positions.tmp"
ok "a state DIR that cannot be saved into: said once, lines go on, the last save kept; a planted link not followed"

# A full disk under the state DIR (a small tmpfs, filled; needs root):
# ENOSPC said once, following goes on, the last save kept.
mkdir "$d/full"
if mount -t tmpfs -o size=256k tmpfs "$d/full" 2>/dev/null; then
  full_mount="$d/full"
  cleanup_more() { umount "$full_mount" 2>/dev/null || true; }
  printf 'f1\n' >"$d/f.log"
  "$slog" --follow "$d/f.log" --state "$d/full/state" "$d/out_full.log" 2>"$d/err" </dev/null &
  sp=$!
  pids+=("$sp")
  wait_lines "$d/out_full.log" 1
  term "$sp"
  cp "$d/full/state/positions" "$d/positions.full"
  head -c $((1024 * 1024)) /dev/zero >"$d/full/ballast" 2>/dev/null || true
  "$slog" --follow "$d/f.log" --state "$d/full/state" "$d/out_full.log" 2>"$d/err" </dev/null &
  sp=$!
  pids+=("$sp")
  for i in 2 3 4; do echo "f$i" >>"$d/f.log"; sleep 0.3; done
  wait_lines "$d/out_full.log" 4 "a full state DIR"
  term "$sp"
  [ "$st" -eq 0 ] || fail "full state DIR: exit $st: $(cat "$d/err")"
  [ "$(grep -c 'cannot save the positions (positions.tmp: write: No space left on device)' "$d/err")" -eq 1 ] ||
    fail "full state DIR: $(cat "$d/err")"
  cmp "$d/positions.full" "$d/full/state/positions" || fail "full state DIR: the last save changed"
  umount "$d/full"
  ok "a full state DIR (ENOSPC): said once, following goes on, the last save kept"
else
  echo "SKIP a full state DIR: mount -t tmpfs needs root"
fi

# A state file that is not one: said, every file read from its start.
echo garbage >"$d/state/positions"
"$slog" --follow "$d/a.log" --state "$d/state" "$d/out2.log" 2>"$d/err" </dev/null &
sp=$!
pids+=("$sp")
wait_lines "$d/out2.log" 8
term "$sp"
grep -q 'not a sluice-log state file: every file is read from its start' "$d/err" || fail "garbage state: $(cat "$d/err")"
ok "a state file that is not one: said, read from the start"

# A line too long ends the run as on standard input.
printf 'short\n%s\n' "$(head -c 100 /dev/zero | tr '\0' y)" >"$d/long.log"
st=0
timeout $((20 * scale)) "$slog" --follow "$d/long.log" --max-line-length 50 "$d/out3.log" 2>"$d/err" </dev/null || st=$?
[ "$st" -eq 1 ] || fail "line too long: exit $st"
grep -q 'is longer than 50 bytes' "$d/err" || fail "line too long: $(cat "$d/err")"
printf 'short\n' | cmp - "$d/out3.log" || fail "line too long: the line before it"
ok "a line longer than --max-line-length: the lines before it, exit 1"

wait_lines "$dir/partial/out.log" 2 "the partial line"
term "$partial_pid"
[ "$st" -eq 0 ] || fail "partial: exit $st: $(cat "$dir/partial/err")"
printf 'next\na tail without its newline\n' | cmp - "$dir/partial/out.log" || fail "partial: got $(cat "$dir/partial/out.log")"
[ "$(stat_of "$dir/partial/err" partial_lines)" -eq 1 ] || fail "partial: not counted: $(cat "$dir/partial/err")"
ok "a last line without its newline, its file rotated away: sent as it is after 5 s quiet, counted"

echo "follow: $pass passed"
