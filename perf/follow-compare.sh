#!/usr/bin/env bash
# follow-compare.sh: sluice-log --follow FILE against `tail -n +1 -F FILE |
# sluice-log` and against `sluice-log < FILE`, each sending a file of N lines
# (in the page cache) to sluice-logd over syslog:// on loopback. Each is
# timed from its start until sluice-logd's file holds every line (then
# --follow and tail are stopped: they never end by themselves); CPU is user
# + system of the sending processes (sluice-log, and tail for the pipe), by
# wait4(). The runs alternate; each variant's best wall and best CPU of RUNS
# count, and the ratios against --follow are printed (> 1: --follow is
# faster, or cheaper).
#
#   perf/follow-compare.sh [BUILD_DIR]
#
# Environment: N=lines (default 1000000), RUNS=N (default 3),
# STATE=yes|no (default yes: --follow with --state, saving positions).
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"
build=${1:-$build}
slog=$build/tools/sluice-log
logd=$build/tools/sluice-logd
n=${N:-1000000}
runs=${RUNS:-3}
for b in "$slog" "$logd"; do
  [ -x "$b" ] || { echo "follow-compare: $b not built (ninja -C $build tools/sluice-log tools/sluice-logd)" >&2; exit 1; }
done
command -v tail >/dev/null || { echo "follow-compare: no tail" >&2; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
seq -f 'line %.0f of the follow benchmark, some text to make it 80 bytes long or so.....' 1 "$n" >"$d/lines"
cat "$d/lines" >/dev/null

python3 - "$slog" "$logd" "$d" "$n" "$runs" "${STATE:-yes}" <<'PY'
import os, re, shutil, signal, subprocess, sys, time
slog, logd, d, n, runs, state = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
lines = os.path.join(d, "lines")
out = os.path.join(d, "out.log")

def start_logd():
    if os.path.exists(out):
        os.unlink(out)
    err = open(os.path.join(d, "logd.err"), "w+")
    p = subprocess.Popen([logd, "--listen", "127.0.0.1:0", out], stderr=err)
    for _ in range(400):
        err.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)$", err.read(), re.M)
        if m:
            return p, int(m[1])
        time.sleep(0.02)
    sys.exit("follow-compare: sluice-logd did not start")

def wait_all(t0, limit=120):
    """Polls out until it holds n lines; the wall time from t0."""
    seen, pos = 0, 0
    while seen < n:
        if time.perf_counter() - t0 > limit:
            sys.exit(f"follow-compare: {seen} of {n} lines after {limit} s")
        try:
            with open(out, "rb") as f:
                f.seek(pos)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        pos += len(chunk)
        seen += chunk.count(b"\n")
        if seen < n:
            time.sleep(0.002)
    return time.perf_counter() - t0

def cpu(pid):
    _, status, ru = os.wait4(pid, 0)
    return status, ru.ru_utime + ru.ru_stime

def once(variant):
    lp, port = start_logd()
    dest = f"syslog://127.0.0.1:{port}"
    t0 = time.perf_counter()
    if variant == "stdin":
        with open(lines, "rb") as f:
            p = subprocess.Popen([slog, dest], stdin=f)
        wall = wait_all(t0)
        status, c = cpu(p.pid)
    elif variant == "tail -F":
        t = subprocess.Popen(["tail", "-n", "+1", "-F", lines], stdout=subprocess.PIPE)
        p = subprocess.Popen([slog, dest], stdin=t.stdout)
        t.stdout.close()
        wall = wait_all(t0)
        t.terminate()
        _, ct = cpu(t.pid)
        status, c = cpu(p.pid)
        c += ct
    else:
        st = os.path.join(d, "state")
        shutil.rmtree(st, ignore_errors=True)
        args = [slog, "--follow", lines] + (["--state", st] if state == "yes" else []) + [dest]
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        wall = wait_all(t0)
        p.send_signal(signal.SIGTERM)
        status, c = cpu(p.pid)
    lp.send_signal(signal.SIGTERM)
    lp.wait()
    if status != 0:
        sys.exit(f"follow-compare: {variant}: sluice-log exited with status {status}")
    return wall, c

variants = ["--follow", "tail -F", "stdin"]
best = {v: [9e9, 9e9] for v in variants}
for _ in range(runs):
    for v in variants:
        w, c = once(v)
        best[v] = [min(best[v][0], w), min(best[v][1], c)]
size = os.path.getsize(lines)
print(f"follow-compare: {n} lines ({size / 2**20:.0f} MiB) into sluice-logd over syslog://, best of {runs}, "
      f"--state {state}, load {os.getloadavg()[0]:.1f}")
# Both ratios are this row's cost over --follow's: > 1, --follow is faster
# (wall) or uses less CPU.
print(f"{'sender':>30} {'lines/s':>10} {'CPU ns/line':>12} {'wall / --follow':>16} {'CPU / --follow':>15}")
fw, fc = best["--follow"]
names = {"--follow": "sluice-log --follow FILE", "tail -F": "tail -F FILE | sluice-log", "stdin": "sluice-log < FILE"}
for v in variants:
    w, c = best[v]
    print(f"{names[v]:>30} {n / w:>10.0f} {c / n * 1e9:>12.0f} {w / fw:>15.2f}x {c / fc:>14.2f}x")
PY
