#!/usr/bin/env bash
# cat-compare.sh: sluice-cat against cat(1) on one big file in the page
# cache, into a file on the same file system, into a pipe (read by wc -c) and
# into /dev/null. Each runs RUNS times, alternating; the best wall time and
# the best CPU time (user + system of the copying process only, not of the
# pipe's reader) count, and the ratios cat/sluice-cat are printed (> 1: sluice
# is faster). Every copy is checked for its byte count.
#
#   perf/cat-compare.sh [BUILD_DIR]
#
# Environment: SLUICE_CAT=P (default BUILD/tools/sluice-cat), CAT=P (default
# cat), FILE=P (default /tmp/sluice-cat-256m.bin, made here if missing: 256 MiB
# of log lines), OUT=P (the output file, default beside FILE), RUNS=N
# (default 3), SINKS="file pipe null".
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"
build=${1:-$build}
sluice_cat=${SLUICE_CAT:-$build/tools/sluice-cat}
cat_bin=${CAT:-cat}
file=${FILE:-/tmp/sluice-cat-256m.bin}
out=${OUT:-$file.out}
runs=${RUNS:-3}
sinks=${SINKS:-file pipe null}

if [ ! -x "$sluice_cat" ]; then echo "cat-compare: $sluice_cat not built" >&2; exit 1; fi
if [ ! -s "$file" ]; then
  echo "cat-compare: making $file (256 MiB)" >&2
  awk 'BEGIN { while (t < 268435456) { l = sprintf("2026-11-30T00:00:00.%06dZ INFO request id=%d path=/api/v1/items status=200 took_us=%d", n % 1000000, n, n % 997); print l; t += length(l) + 1; n++ } }' |
    head -c 268435456 >"$file"
fi
cat "$file" >/dev/null  # into the page cache

python3 - "$runs" "$file" "$out" "$sluice_cat" "$cat_bin" $sinks <<'PY'
import os, subprocess, sys, time
runs, path, out, sluice, cat = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
sinks = sys.argv[6:]
size = os.path.getsize(path)

def once(tool, sink):
    """Wall seconds of the whole copy and CPU seconds of the copier."""
    if os.path.exists(out):
        os.unlink(out)  # not the copy's work: freeing the last copy's blocks
    t0 = time.perf_counter()
    if sink == "file":
        with open(out, "wb") as f:
            p = subprocess.Popen([tool, path], stdout=f)
            _, status, ru = os.wait4(p.pid, 0)
        got = os.path.getsize(out)
    elif sink == "null":
        with open("/dev/null", "wb") as f:
            p = subprocess.Popen([tool, path], stdout=f)
            _, status, ru = os.wait4(p.pid, 0)
        got = size
    else:
        p = subprocess.Popen([tool, path], stdout=subprocess.PIPE)
        wc = subprocess.Popen(["wc", "-c"], stdin=p.stdout, stdout=subprocess.PIPE)
        p.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        got = int(wc.communicate()[0])
    wall = time.perf_counter() - t0
    if status != 0 or got != size:
        sys.exit(f"cat-compare: {tool} into {sink}: status {status}, {got} bytes of {size}")
    return wall, ru.ru_utime + ru.ru_stime

print(f"cat-compare: {size / 2**20:.0f} MiB, best of {runs}, load {os.getloadavg()[0]:.1f}")
print(f"{'into':>5} {'cat wall':>9} {'sluice wall':>12} {'wall x':>7} {'cat cpu':>8} {'sluice cpu':>11} {'cpu x':>6}")
for sink in sinks:
    best = {cat: [9e9, 9e9], sluice: [9e9, 9e9]}
    for _ in range(runs):
        for tool in (cat, sluice):
            w, c = once(tool, sink)
            best[tool] = [min(best[tool][0], w), min(best[tool][1], c)]
    (cw, cc), (sw, sc) = best[cat], best[sluice]
    print(f"{sink:>5} {cw:>8.3f}s {sw:>11.3f}s {cw / sw:>6.2f}x {cc:>7.3f}s {sc:>10.3f}s {cc / max(sc, 1e-4):>5.2f}x")
if os.path.exists(out):
    os.unlink(out)
PY
