#!/usr/bin/env bash
# lines-compare.sh: line counting and copying side by side on one big log
# file: sluice-lines -c against wc -l, a std::getline loop and Node's
# readline; sluice-cat against cat into /dev/null; then sluice-cat's memory
# while a slow reader drains its output. Prints the ratios the README quotes
# and whether each goal is met.
#
# The line counters (wc -l, sluice-lines -c, the std::getline loop, Node)
# run interleaved, RUNS rounds of one run each, so that a change in the
# machine's load falls on all of them alike; their medians count. The cat
# peers run RUNS times each, one after the other; their best counts. Times
# are wall and CPU (user + system, all its threads). The goals are judged on
# CPU time: on a shared machine, wall time also measures the scheduler, and
# it favours a program with threads (Node) over one without when the cores
# are busy. Both ratios are printed.
#
#   perf/lines-compare.sh [BUILD_DIR]
#
# Environment:
#   BUILD=D          the build directory (default build; the argument wins)
#   SLUICE_LINES=P SLUICE_CAT=P GETLINE_COUNT=P
#                    the programs (default: under BUILD)
#   NODE=P           node binary (default: node on PATH; skipped if absent)
#   FILE=P           the log file (default /tmp/sluice-lines-200m.log); made
#                    once, SIZE_MB megabytes (default 200), and then reused
#   RUNS=N           timed runs per program (default 5)
#   BEFORE_LINES=P   another sluice-lines (say, a build of the commit
#                    before) to count in the same rounds, for a before and
#                    after in one go
#   SLOW_SECONDS=S   how long to watch sluice-cat under a slow reader
#                    (default 5; 0 skips it); SLOW_RATE=R its rate for pv
#                    (default 1m, i.e. 1 MiB/s)
#   STRICT=1         exit 1 when a goal is missed or a program is missing
#
# Needs python3 (it times the runs) and awk; pv for the slow reader if
# present, else a python3 one.
#
# A program that is missing is skipped with a message and its ratios print
# n/a; a program that fails or miscounts makes the script exit 1.
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"

build=${1:-$build}
lines_bin=${SLUICE_LINES:-$build/tools/sluice-lines}
cat_bin=${SLUICE_CAT:-$build/tools/sluice-cat}
getline_bin=${GETLINE_COUNT:-$build/perf/getline_count}
file=${FILE:-/tmp/sluice-lines-200m.log}
size_mb=${SIZE_MB:-200}
runs=${RUNS:-5}
slow_seconds=${SLOW_SECONDS:-5}
slow_rate=${SLOW_RATE:-1m}
strict=${STRICT:-0}

say() { echo "lines-compare: $*" >&2; }

# The log file: made once, deterministic, lines like
#   2026-11-30T00:00:00.123456Z INFO request id=12345 path=/api/v1/items status=200 took_us=345
if [ ! -s "$file" ]; then
  say "making $file ($size_mb MB, once)"
  awk -v bytes=$((size_mb * 1000 * 1000)) 'BEGIN {
    srand(1)
    split("INFO INFO INFO INFO WARN ERROR DEBUG", level, " ")
    split("/api/v1/items /api/v1/users /api/v2/orders /health /login", path, " ")
    split("200 200 200 200 201 304 404 500", status, " ")
    while (total < bytes) {
      line = sprintf("2026-11-30T%02d:%02d:%02d.%06dZ %s request id=%d path=%s status=%s took_us=%d",
                     int(n / 3600000) % 24, int(n / 60000) % 60, int(n / 1000) % 60, (n * 7919) % 1000000,
                     level[int(rand() * 7) + 1], n, path[int(rand() * 5) + 1], status[int(rand() * 8) + 1],
                     int(rand() * 99990) + 10)
      print line
      total += length(line) + 1
      n++
    }
  }' >"$file.tmp"
  mv "$file.tmp" "$file"
fi
bytes=$(stat -c %s "$file")
cat "$file" >/dev/null  # into the page cache: every program reads from memory

failed=0
missing=0
declare -A wall cpu best out rss

# timed NAME CMD...: runs CMD RUNS times with stdout to $sink (a file whose
# first line is kept in out[NAME], unless sink=/dev/null), and keeps the best
# wall time in wall[NAME] and the best CPU time (user + system, the child's
# threads included) in cpu[NAME], in seconds. One python3 process times every
# run with wait4(), so interpreter start-up is never measured. The peak RSS
# of one more run goes to rss[NAME] (KiB) when GNU time exists (a child of
# python3 would count python's own pages until its exec).
sink=
timed() {
  local name=$1
  shift
  say "running $name: $* > $sink (best of $runs)"
  local result
  if ! result=$(python3 - "$runs" "$sink" "$tmp/err" "$@" <<'PY'
import os, sys, time
runs, sink, err, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
best_wall = best_cpu = None
for _ in range(runs):
    out_fd = os.open(sink, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err_fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[
        (os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)])
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter()
    os.close(out_fd)
    os.close(err_fd)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(1)
    w, c = t1 - t0, ru.ru_utime + ru.ru_stime
    best_wall = w if best_wall is None else min(best_wall, w)
    best_cpu = c if best_cpu is None else min(best_cpu, c)
print(f"{best_wall:.4f} {best_cpu:.4f}")
PY
  ); then
    say "$name failed: $(head -c 300 "$tmp/err")"
    failed=1
    return
  fi
  read -r "wall[$name]" "cpu[$name]" <<<"$result"
  if [ "$sink" != /dev/null ]; then out[$name]=$(head -n 1 "$sink"); fi
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f %M -o "$tmp/rss" "$@" >/dev/null 2>&1 && rss[$name]=$(tail -n 1 "$tmp/rss")
  fi
}

# timed_interleaved NAME CMD... -- NAME CMD... --: RUNS rounds, each
# running every command once (the order turned round every other round),
# stdout to $tmp/out.NAME, whose first line goes to out[NAME]. Keeps the
# median wall and CPU time of each in wall[NAME] and cpu[NAME], the best CPU
# time in best[NAME]; the peak RSS of one more run in rss[NAME].
timed_interleaved() {
  local groups=() names=() name
  while [ $# -gt 0 ]; do
    name=$1
    shift
    names+=("$name")
    groups+=("$name")
    while [ "$1" != -- ]; do
      groups+=("$1")
      shift
    done
    groups+=(--)
    shift
  done
  say "running ${names[*]} interleaved, $runs rounds"
  local result
  if ! result=$(python3 - "$runs" "$tmp" "${groups[@]}" <<'PY'
import os, statistics, sys, time
runs, tmp, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
progs = []
while rest:
    end = rest.index("--")
    progs.append((rest[0], rest[1:end]))
    rest = rest[end + 1:]
times = {name: ([], []) for name, _ in progs}
for r in range(runs):
    for name, cmd in (progs if r % 2 == 0 else progs[::-1]):
        out_fd = os.open(f"{tmp}/out.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err_fd = os.open(f"{tmp}/err.{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        t0 = time.perf_counter()
        pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)])
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter()
        os.close(out_fd)
        os.close(err_fd)
        if os.waitstatus_to_exitcode(status) != 0:
            print(f"{name} failed", file=sys.stderr)
            sys.exit(1)
        times[name][0].append(t1 - t0)
        times[name][1].append(ru.ru_utime + ru.ru_stime)
for name, (w, c) in times.items():
    print(f"{name} {statistics.median(w):.4f} {statistics.median(c):.4f} {min(c):.4f}")
PY
  ); then
    say "a line counter failed: $(cat "$tmp"/err.* 2>/dev/null | head -c 300)"
    failed=1
    return
  fi
  local w c b
  while read -r name w c b; do
    wall[$name]=$w
    cpu[$name]=$c
    best[$name]=$b
    out[$name]=$(head -n 1 "$tmp/out.$name")
  done <<<"$result"
  if [ -x /usr/bin/time ]; then
    set -- "${groups[@]}"
    while [ $# -gt 0 ]; do
      name=$1
      shift
      local cmd=()
      while [ "$1" != -- ]; do
        cmd+=("$1")
        shift
      done
      shift
      /usr/bin/time -f %M -o "$tmp/rss" "${cmd[@]}" >/dev/null 2>&1 && rss[$name]=$(tail -n 1 "$tmp/rss")
    done
  fi
}

tmp=$(mktemp -d)
slow_pid=
cleanup() {
  if [ -n "$slow_pid" ]; then kill "$slow_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

have() {  # have NAME PATH: PATH is executable, else say how to get it
  if [ -x "$2" ]; then return 0; fi
  say "$1 not found at $2: skipping it (build it, or set $3)"
  missing=1
  return 1
}

# ---- line counting, interleaved
counters=(wc wc -l "$file" --)
if have sluice-lines "$lines_bin" SLUICE_LINES; then counters+=(sluice_lines "$lines_bin" -c "$file" --); fi
if [ -n "${BEFORE_LINES:-}" ] && have sluice-lines "$BEFORE_LINES" BEFORE_LINES; then
  counters+=(before "$BEFORE_LINES" -c "$file" --)
fi
if have getline_count "$getline_bin" GETLINE_COUNT; then counters+=(getline "$getline_bin" "$file" --); fi
if command -v "$node_bin" >/dev/null 2>&1; then
  counters+=(node "$node_bin" "$here/lines.js" "$file" --)
else
  say "node not found (set NODE=/path/to/node): skipping the Node readline run"
  missing=1
fi
timed_interleaved "${counters[@]}"

# Every counter must agree: the file ends with a newline, so wc -l's count
# of newlines is the count of lines.
expected=${out[wc]%% *}
for p in sluice_lines before getline node; do
  if [ -n "${out[$p]:-}" ] && [ "${out[$p]}" != "$expected" ]; then
    say "$p counted ${out[$p]} lines, wc -l $expected"
    failed=1
  fi
done

# ---- copying into /dev/null
sink=/dev/null
timed cat cat "$file"
if have sluice-cat "$cat_bin" SLUICE_CAT; then timed sluice_cat "$cat_bin" "$file"; fi

# ---- sluice-cat's memory under a slow reader
slow_line=
if [ "$slow_seconds" != 0 ] && [ -x "$cat_bin" ]; then
  if command -v pv >/dev/null 2>&1; then
    reader="pv -qL $slow_rate"
  else
    reader="python3 slow reader, 1 MiB/s"
  fi
  say "watching sluice-cat's RSS for $slow_seconds s while $reader drains it"
  if command -v pv >/dev/null 2>&1; then
    "$cat_bin" "$file" 2>/dev/null > >(pv -qL "$slow_rate" >/dev/null) &
  else
    "$cat_bin" "$file" 2>/dev/null > >(python3 -c 'import sys, time
while sys.stdin.buffer.read(65536):
    time.sleep(1 / 16)' >/dev/null) &
  fi
  slow_pid=$!
  samples=()
  for ((i = 0; i < slow_seconds * 2; i++)); do
    sleep 0.5
    kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$slow_pid/status" 2>/dev/null || true)
    [ -n "$kb" ] && samples+=("$kb")
  done
  kill "$slow_pid" 2>/dev/null || true
  wait "$slow_pid" 2>/dev/null || true
  slow_pid=
  if [ "${#samples[@]}" -gt 0 ]; then
    slow_line=$(printf '%s\n' "${samples[@]}" | awk -v reader="$reader" '
      NR == 1 { first = $1; min = $1; max = $1 }
      { if ($1 < min) min = $1; if ($1 > max) max = $1; all = all sprintf(" %.1f", $1 / 1024) }
      END { printf "sluice-cat RSS under a slow reader (%s), MiB every 0.5 s:%s\n", reader, all
            printf "  min %.1f MiB, max %.1f MiB, growth after the first sample %.1f MiB: %s\n",
                   min / 1024, max / 1024, (max - first) / 1024, (max - first) <= 1024 ? "flat" : "NOT FLAT" }')
  fi
fi

# ---- the table and the goals; awk does the arithmetic.
args=()
for p in wc sluice_lines before getline node cat sluice_cat; do
  args+=(-v "w_$p=${wall[$p]:-}" -v "c_$p=${cpu[$p]:-}" -v "b_$p=${best[$p]:-}" -v "r_$p=${rss[$p]:-}")
done
awk -v bytes="$bytes" -v lines="$expected" -v file="$file" -v runs="$runs" -v slow="$slow_line" "${args[@]}" '
function mib(k) { return k == "" ? "-" : sprintf("%.1f", k / 1024) }
function row(name, w, c, unit, r, b) {
  if (w == "") { printf "%-24s %8s %8s %8s %15s %9s\n", name, "-", "-", "-", "-", mib(r); return }
  if (b == "") b = c
  if (unit == "lines") printf "%-24s %8.3f %8.3f %8.3f %11.1f M/s %9s\n", name, w, c, b, lines / c / 1e6, mib(r)
  else printf "%-24s %8.3f %8.3f %8.3f %10.0f MB/s %9s\n", name, w, c, b, bytes / c / 1e6, mib(r)
}
# goal(label, a, b, want): how many times less time a takes than b, by CPU
# time (the verdict) and by wall time, against a floor of `want`.
function goal(label, ca, cb, wa, wb, want,    ratio, verdict) {
  if (ca == "" || cb == "" || ca == 0 || wa == 0) {
    printf "%-30s %8s %8s   >= %-6s %s\n", label, "n/a", "n/a", want "x", "SKIP"
    skipped++
    return
  }
  ratio = cb / ca
  verdict = ratio >= want ? "PASS" : "MISS"
  if (verdict == "MISS") missed++
  printf "%-30s %7.2fx %7.2fx   >= %-6s %s\n", label, ratio, wb / wa, want "x", verdict
}
function info(label, ca, cb, wa, wb) {
  if (ca == "" || cb == "" || ca == 0 || wa == 0) printf "%-30s %8s %8s   %-9s %s\n", label, "n/a", "n/a", "-", "(no goal)"
  else printf "%-30s %7.2fx %7.2fx   %-9s %s\n", label, cb / ca, wb / wa, "-", "(no goal)"
}
BEGIN {
  printf "lines-compare: %s, %.1f MB, %d lines, from the page cache; %d runs each:\n", file, bytes / 1e6, lines, runs
  printf "the line counters interleaved (medians, and the best CPU), the cats one after the other (best)\n\n"
  printf "%-24s %8s %8s %8s %15s %9s\n", "program", "wall s", "CPU s", "best CPU", "rate (CPU)", "RSS MiB"
  row("sluice-lines -c", w_sluice_lines, c_sluice_lines, "lines", r_sluice_lines, b_sluice_lines)
  if (w_before != "") row("before: sluice-lines -c", w_before, c_before, "lines", r_before, b_before)
  row("wc -l", w_wc, c_wc, "lines", r_wc, b_wc)
  row("std::getline loop", w_getline, c_getline, "lines", r_getline, b_getline)
  row("node readline", w_node, c_node, "lines", r_node, b_node)
  row("sluice-cat > /dev/null", w_sluice_cat, c_sluice_cat, "bytes", r_sluice_cat)
  row("cat > /dev/null", w_cat, c_cat, "bytes", r_cat)
  printf "\n%-30s %8s %8s   %-9s %s\n", "speed ratio", "CPU", "wall", "goal", "result (by CPU time)"
  goal("sluice-lines vs wc -l", c_sluice_lines, c_wc, w_sluice_lines, w_wc, 1.2)
  if (w_before != "") info("sluice-lines vs before", c_sluice_lines, c_before, w_sluice_lines, w_before)
  goal("sluice-lines vs node readline", c_sluice_lines, c_node, w_sluice_lines, w_node, 10)
  info("sluice-lines vs std::getline", c_sluice_lines, c_getline, w_sluice_lines, w_getline)
  goal("sluice-cat vs cat", c_sluice_cat, c_cat, w_sluice_cat, w_cat, 0.8)
  if (slow != "") printf "\n%s\n", slow
  if (slow ~ /NOT FLAT/) missed++
  printf "\ngoals: %d missed, %d skipped\n", missed, skipped
  exit (missed > 0 ? 3 : 0) + (skipped > 0 ? 4 : 0)
}' || verdict=$?
verdict=${verdict:-0}

if [ "$failed" -ne 0 ]; then
  exit 1
fi
if [ "$strict" = 1 ] && { [ "$verdict" -ne 0 ] || [ "$missing" -ne 0 ]; }; then
  exit 1
fi
exit 0
