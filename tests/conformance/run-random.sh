#!/usr/bin/env bash
# Runs the cached random scenarios (a bundle written by gen.mjs corpus) through
# sluice-trace and compares each with Node's trace stored beside it, so that
# the seeded random differential test runs in CI without Node.
#
#   run-random.sh path/to/sluice-trace BUNDLE
#
# The bundle holds cases "=== NAME", the scenario's lines, "--- node", Node's
# trace; lines before the first case that start with # are comments. Each case
# is split into NAME.scn and NAME.trace and checked by run-conformance.sh.
set -euo pipefail

trace_bin=${1:?usage: run-random.sh SLUICE_TRACE BUNDLE}
bundle=${2:?usage: run-random.sh SLUICE_TRACE BUNDLE}
[ -f "$bundle" ] || { echo "run-random.sh: no bundle $bundle" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

awk -v dir="$dir" '
  /^=== / { name = substr($0, 5); out = dir "/" name ".scn"; printf "" > out; cases++; next }
  /^--- node$/ && out != "" { close(out); out = dir "/" name ".trace"; printf "" > out; next }
  out != "" { print > out }
  END { if (cases == 0) { print "run-random.sh: the bundle has no cases" > "/dev/stderr"; exit 2 } }
' "$bundle"

exec "$(dirname "$0")/run-conformance.sh" "$trace_bin" "$dir"
