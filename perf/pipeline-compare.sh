#!/usr/bin/env bash
# pipeline-compare.sh: a big file into /dev/null through a pipeline of N
# pass-throughs (N = 0, 1 and 4), sluice's pipeline() (perf/pipeline_bench)
# against Node's stream.pipeline (perf/pipeline.js). Each runs RUNS times; the
# best wall and CPU times count, and the ratios Node/sluice are printed.
#
#   perf/pipeline-compare.sh [BUILD_DIR]
#
# Environment: PIPELINE_BENCH=P (default BUILD/perf/pipeline_bench), NODE=P,
# FILE=P (default /tmp/sluice-lines-200m.log, made by lines-compare.sh; made
# here as 200 MB of log lines if missing), RUNS=N (default 3), STAGES="0 1 4".
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"
build=${1:-$build}
bench=${PIPELINE_BENCH:-$build/perf/pipeline_bench}
file=${FILE:-/tmp/sluice-lines-200m.log}
runs=${RUNS:-3}
stages=${STAGES:-0 1 4}

if [ ! -x "$bench" ]; then echo "pipeline-compare: $bench not built" >&2; exit 1; fi
if [ ! -s "$file" ]; then
  echo "pipeline-compare: making $file (200 MB)" >&2
  awk 'BEGIN { while (t < 200000000) { l = sprintf("2026-11-30T00:00:00.%06dZ INFO request id=%d path=/api/v1/items status=200 took_us=%d", n % 1000000, n, n % 997); print l; t += length(l) + 1; n++ } }' >"$file"
fi
cat "$file" >/dev/null
have_node=1
command -v "$node_bin" >/dev/null 2>&1 || { echo "pipeline-compare: no node: sluice only" >&2; have_node=0; }

python3 - "$runs" "$file" "$bench" "$node_bin" "$here/pipeline.js" "$have_node" $stages <<'PY'
import os, subprocess, sys, time
runs, path, bench, node, js, have_node = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6] == "1"
stages = [int(s) for s in sys.argv[7:]]
size = os.path.getsize(path)

def best(cmd):
    bw = bc = None
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        o, _ = p.communicate()
        t1 = time.perf_counter()
        if p.returncode != 0:
            sys.exit(f"pipeline-compare: {cmd} failed")
        out = o.decode().strip()
        w = t1 - t0
        bw = w if bw is None else min(bw, w)
    return bw, out

print(f"pipeline-compare: {size / 1e6:.0f} MB through N pass-throughs into /dev/null, best of {runs}, load {os.getloadavg()[0]:.1f}")
print(f"{'N':>3} {'sluice MB/s':>12} {'Node MB/s':>10} {'sluice/Node':>12}")
for n in stages:
    sw, so = best([bench, path, str(n)])
    if n > 0 and so != str(size):
        sys.exit(f"pipeline-compare: sluice copied {so} bytes of {size}")
    line = f"{n:>3} {size / sw / 1e6:>12.0f}"
    if have_node:
        nw, no = best([node, js, path, str(n)])
        if n > 0 and no != str(size):
            sys.exit(f"pipeline-compare: node copied {no} bytes of {size}")
        line += f" {size / nw / 1e6:>10.0f} {nw / sw:>11.1f}x"
    print(line)
PY
