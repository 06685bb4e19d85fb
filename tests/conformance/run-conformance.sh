#!/usr/bin/env bash
# Runs every scenario (*.scn) of the given folders through sluice-trace and
# compares its trace with the stored one (NAME.trace, made by Node's oracle)
# byte for byte. A mismatch prints the scenario's name and a diff.
#
#   run-conformance.sh path/to/sluice-trace DIR...
#
# Every scenario must run: any exit status other than 0 is a failure.
# Exit 1 if any scenario fails.
set -uo pipefail

trace_bin=${1:?usage: run-conformance.sh SLUICE_TRACE DIR...}
shift
[ $# -gt 0 ] || { echo "usage: run-conformance.sh SLUICE_TRACE DIR..." >&2; exit 2; }

passed=0 failed=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

for dir in "$@"; do
  if [ ! -d "$dir" ]; then
    echo "conformance: no folder $dir" >&2
    failed=$((failed + 1))
    continue
  fi
  for scn in "$dir"/*.scn; do
    [ -e "$scn" ] || continue
    name=$(basename "$scn" .scn)
    expected="${scn%.scn}.trace"
    "$trace_bin" "$scn" >"$out" 2>"$err"
    status=$?
    if [ ! -f "$expected" ]; then
      echo "FAIL $name: no stored trace $expected"
      failed=$((failed + 1))
    elif [ $status -ne 0 ]; then
      echo "FAIL $name: sluice-trace exited $status: $(head -n 3 "$err")"
      failed=$((failed + 1))
    elif ! diff -u --label "node: $name.trace" --label "sluice: $name" "$expected" "$out"; then
      echo "FAIL $name"
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
  done
done

echo "conformance: $passed passed, $failed failed"
[ $failed -eq 0 ]
