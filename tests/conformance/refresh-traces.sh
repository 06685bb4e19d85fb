#!/usr/bin/env bash
# Regenerate (default) or verify (--check) the Node traces of the conformance scenarios
# with the project's oracle (oracle.mjs, beside this script) on Node v20.
#
#   tests/conformance/refresh-traces.sh           rewrite every tests/conformance/*.trace
#                                                 ext/*.trace and api/*.trace
#   tests/conformance/refresh-traces.sh --check   diff Node's output against the stored traces;
#                                                 print the names that differ, exit 1 if any.
#
# Works from any current directory. Skips (exit 0) when `node` is not installed;
# exit 2 when it is not Node v20 (the traces pin v20's behaviour).
set -euo pipefail

usage() {
  echo "usage: $0 [--check]" >&2
  exit 2
}

check=0
case $# in
  0) ;;
  1) [[ $1 == --check ]] || usage; check=1 ;;
  *) usage ;;
esac

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)

if ! command -v node >/dev/null 2>&1; then
  echo "refresh-traces.sh: node not found; skipping the Node conformance traces" >&2
  exit 0
fi

node_version=$(node --version)
if [[ $node_version != v20.* ]]; then
  echo "refresh-traces.sh: needs Node v20 (the traces are v20's); this is $node_version" >&2
  exit 2
fi
oracle="$script_dir/oracle.mjs"

shopt -s nullglob
jobs=()
for scn in "$script_dir"/*.scn "$script_dir"/ext/*.scn "$script_dir"/api/*.scn; do jobs+=("$scn"); done
if ((${#jobs[@]} == 0)); then
  echo "refresh-traces.sh: no scenarios in $script_dir" >&2
  exit 0
fi

tmp_out=$(mktemp)
tmp_err=$(mktemp)
trap 'rm -f -- "$tmp_out" "$tmp_err"' EXIT

differ=()   # --check: scenarios whose trace differs (or whose oracle run failed)
failed=()   # scenarios the oracle could not run cleanly
for scn in "${jobs[@]}"; do
  name=${scn#"$script_dir"/}
  name=${name%.scn}
  trace="${scn%.scn}.trace"
  rc=0
  node "$oracle" "$scn" >"$tmp_out" 2>"$tmp_err" || rc=$?
  if ((rc != 0)) || [[ -s $tmp_err ]]; then
    # A non-zero exit is a malformed scenario; a message on stderr (e.g. the oracle's
    # warning about another Node version) means the output cannot be trusted as a trace.
    echo "$name: oracle exit $rc: $(tr '\n' ' ' <"$tmp_err")" >&2
    failed+=("$name")
    if ((check)); then differ+=("$name"); fi
    continue
  fi
  if ((check)); then
    if [[ ! -f $trace ]] || ! cmp -s -- "$tmp_out" "$trace"; then
      differ+=("$name")
    fi
  else
    cp -- "$tmp_out" "$trace"
  fi
done

if ((check)); then
  for name in "${differ[@]}"; do
    echo "$name"
  done
  if ((${#differ[@]} > 0)); then
    echo "refresh-traces.sh: ${#differ[@]} of ${#jobs[@]} trace(s) differ (${#failed[@]} of them failed to run)" >&2
    exit 1
  fi
  echo "refresh-traces.sh: all ${#jobs[@]} traces match" >&2
  exit 0
fi

if ((${#failed[@]} > 0)); then
  echo "refresh-traces.sh: ${#failed[@]} scenario(s) failed; their traces were left unchanged" >&2
  exit 1
fi
echo "refresh-traces.sh: wrote ${#jobs[@]} traces" >&2
