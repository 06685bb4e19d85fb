#!/usr/bin/env bash
# devnull-compare.sh: sluice, Node and a bare writev() loop writing 56-byte
# chunks to /dev/null, one after the other on the same machine, with the
# ratios the README quotes and whether each goal is met.
#
#   perf/devnull-compare.sh [path/to/sluice-devnull]
#
# Environment:
#   DURATION=S        seconds per program (default 3)
#   SLUICE_DEVNULL=P  sluice-devnull to run (default build/tools/sluice-devnull;
#                     the first argument wins over both)
#   RAW_WRITEV=P      raw_writev to run (default build/perf/raw_writev)
#   NODE=P            node binary (default: node on PATH); NODE_ARGS=--buffer
#                     makes devnull.js write a Buffer instead of a string
#   STRICT=1          exit 1 when a goal is missed or a program is missing
#   JSON_TOOL=T       parse with T (python3, node or jq) instead of the first found
#
# A program that is missing is skipped with a message and its ratios print
# n/a; a program that fails makes the script exit 1.
. "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"

duration=${DURATION:-3}
sluice_bin=${1:-${SLUICE_DEVNULL:-$root/build/tools/sluice-devnull}}
raw_bin=${RAW_WRITEV:-$root/build/perf/raw_writev}
strict=${STRICT:-0}

# JSON parsing: python3 first, then node, then jq. Only flat objects with
# numeric and string values are read.
json_tool=${JSON_TOOL:-}
if [ -n "$json_tool" ]; then
  :  # forced, to test the fallbacks
elif command -v python3 >/dev/null 2>&1; then
  json_tool=python3
elif command -v "$node_bin" >/dev/null 2>&1; then
  json_tool=node
elif command -v jq >/dev/null 2>&1; then
  json_tool=jq
else
  echo "devnull-compare: need python3, node or jq to read the programs' JSON" >&2
  exit 1
fi

# parse KEYS NAME JSON [NAME JSON]...: prints "NAME KEY VALUE" for each key
# of each non-empty JSON object (VALUE empty when the key is absent). One
# process for all of them: interpreters are slow to start on these machines.
parse() {
  case $json_tool in
    python3)
      python3 -c 'import json, sys
keys = sys.argv[1].split()
for name, text in zip(sys.argv[2::2], sys.argv[3::2]):
    if not text:
        continue
    obj = json.loads(text)
    for k in keys:
        v = obj.get(k)
        print(name, k, "" if v is None else v)' "$@" ;;
    node)
      "$node_bin" -e 'const [keys, ...rest] = process.argv.slice(1);
for (let i = 0; i + 1 < rest.length; i += 2) {
  if (!rest[i + 1]) continue;
  const obj = JSON.parse(rest[i + 1]);
  for (const k of keys.split(" "))
    console.log(rest[i], k, obj[k] === undefined || obj[k] === null ? "" : String(obj[k]));
}' "$@" ;;
    jq)
      local keys=$1
      shift
      while [ $# -ge 2 ]; do
        if [ -n "$2" ]; then
          printf '%s' "$2" | jq -r --arg name "$1" --arg keys "$keys" \
            '. as $o | $keys | split(" ")[] | "\($name) \(.) \($o[.] // "")"'
        fi
        shift 2
      done ;;
  esac
}

# run NAME CMD...: runs one program, keeps the last line of its stdout (its
# JSON) in result_NAME. Its stderr goes through.
failed=0
run() {
  local name=$1
  shift
  echo "devnull-compare: running $name: $*" >&2
  local out
  if ! out=$("$@"); then
    echo "devnull-compare: $name failed" >&2
    failed=1
    return
  fi
  out=$(printf '%s\n' "$out" | grep '^{' | tail -n 1 || true)
  if [ -z "$out" ]; then
    echo "devnull-compare: $name printed no JSON line" >&2
    failed=1
    return
  fi
  printf -v "result_$name" '%s' "$out"
}

result_sluice='' result_node='' result_raw=''
missing=0

if [ -x "$sluice_bin" ]; then
  run sluice "$sluice_bin" --json --duration "$duration"
else
  echo "devnull-compare: sluice-devnull not found at $sluice_bin: skipping it" \
       "(build it with 'ninja -C build tools/sluice-devnull', or pass its path)" >&2
  missing=1
fi

if command -v "$node_bin" >/dev/null 2>&1; then
  # shellcheck disable=SC2086  # NODE_ARGS is a list of flags
  run node "$node_bin" "$here/devnull.js" --duration "$duration" ${NODE_ARGS:-}
else
  echo "devnull-compare: node not found (set NODE=/path/to/node): skipping the Node run" >&2
  missing=1
fi

if [ -x "$raw_bin" ]; then
  run raw "$raw_bin" --duration "$duration"
else
  echo "devnull-compare: raw_writev not found at $raw_bin: skipping it" \
       "(build it with 'ninja -C build perf/raw_writev', or set RAW_WRITEV)" >&2
  missing=1
fi

# Pull the figures out: writes/s and peak RSS per program ("" when skipped).
declare -A val
keys="cleared_per_s peak_rss_bytes issued cleared mb_per_s max_buffered_bytes drains"
for p in sluice node raw; do
  for k in $keys; do val[$p.$k]=; done
done
if ! parsed=$(parse "$keys" sluice "$result_sluice" node "$result_node" raw "$result_raw"); then
  echo "devnull-compare: could not parse the programs' JSON with $json_tool" >&2
  failed=1
fi
while read -r p k v; do
  [ -n "$p" ] && val[$p.$k]=$v
done <<<"$parsed"
for p in sluice node raw; do
  # Every write's callback must have been called: issued == cleared.
  if [ -n "${val[$p.issued]}" ] && [ "${val[$p.issued]}" != "${val[$p.cleared]}" ]; then
    echo "devnull-compare: $p issued ${val[$p.issued]} writes but cleared ${val[$p.cleared]}" >&2
    failed=1
  fi
done
extra_sluice=
if [ -n "$result_sluice" ]; then
  extra_sluice="MB/s ${val[sluice.mb_per_s]}, max buffered ${val[sluice.max_buffered_bytes]} bytes, drains ${val[sluice.drains]}"
fi

# The table and the goals; awk does the arithmetic.
awk -v duration="$duration" \
    -v s_rate="${val[sluice.cleared_per_s]}" -v s_rss="${val[sluice.peak_rss_bytes]}" \
    -v n_rate="${val[node.cleared_per_s]}" -v n_rss="${val[node.peak_rss_bytes]}" \
    -v r_rate="${val[raw.cleared_per_s]}" -v r_rss="${val[raw.peak_rss_bytes]}" \
    -v extra="$extra_sluice" -v node_args="${NODE_ARGS:-}" '
function mib(b) { return b == "" ? "-" : sprintf("%.1f", b / 1048576) }
function num(x) { return x == "" ? "-" : sprintf("%.0f", x) }
function row(name, r, m) { printf "%-14s %18s %14s\n", name, num(r), mib(m) }
# goal(label, a, b, want): the ratio a/b against a floor of `want`.
function goal(label, a, b, want,    ratio, verdict) {
  if (a == "" || b == "" || b == 0) {
    printf "%-28s %9s   >= %-6s %s\n", label, "n/a", want "x", "SKIP"
    skipped++
    return
  }
  ratio = a / b
  verdict = ratio >= want ? "PASS" : "MISS"
  if (verdict == "MISS") missed++
  printf "%-28s %8.2fx   >= %-6s %s\n", label, ratio, want "x", verdict
}
BEGIN {
  printf "devnull-compare: %s s per program, 56-byte writes to /dev/null\n\n", duration
  printf "%-14s %18s %14s\n", "name", "cleared writes/s", "peak RSS MiB"
  row("sluice", s_rate, s_rss)
  row("node" (node_args != "" ? " " node_args : ""), n_rate, n_rss)
  row("raw-writev", r_rate, r_rss)
  if (extra != "") printf "(sluice: %s)\n", extra
  printf "\n%-28s %10s   %-9s %s\n", "ratio", "value", "goal", "result"
  goal("sluice/node writes/s", s_rate, n_rate, 20)
  goal("sluice/raw writes/s", s_rate, r_rate, 0.5)
  goal("node RSS / sluice RSS", n_rss, s_rss, 10)
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
