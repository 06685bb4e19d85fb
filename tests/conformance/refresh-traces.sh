#!/usr/bin/env bash
# Regenerate (default) or verify (--check) the Node traces of the conformance scenarios.
#
#   tests/conformance/refresh-traces.sh           rewrite every tests/conformance/*.trace (shared
#                                                 oracle) and ext/*.trace (ext/oracle-ext.mjs)
#   tests/conformance/refresh-traces.sh --check   diff Node's output against the stored traces;
#                                                 print the names that differ, exit 1 if any.
#                                                 Also runs ext/oracle-ext.mjs on the base
#                                                 scenarios: its base commands must print the
#                                                 shared oracle's traces byte for byte.
#
# Works from any current directory. Skips (exit 0) when `node` is not installed.
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

# The oracle lives beside the repository: <repo root>/../shared/conformance/oracle.mjs.
oracle=""
if root=$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null); then
  if [[ -f "$root/../shared/conformance/oracle.mjs" ]]; then
    oracle="$root/../shared/conformance/oracle.mjs"
  fi
fi
if [[ -z $oracle && -f "$script_dir/../../../shared/conformance/oracle.mjs" ]]; then
  oracle="$script_dir/../../../shared/conformance/oracle.mjs"
fi
if [[ -z $oracle ]]; then
  echo "refresh-traces.sh: cannot find shared/conformance/oracle.mjs next to the repository" >&2
  exit 2
fi

ext_oracle="$script_dir/ext/oracle-ext.mjs"

shopt -s nullglob
# Each job: oracle, scenario, stored trace, and whether it is only checked
# (the ext oracle on a base scenario never rewrites the base trace).
jobs=()
for scn in "$script_dir"/*.scn; do jobs+=("$oracle|$scn|0"); done
for scn in "$script_dir"/ext/*.scn; do jobs+=("$ext_oracle|$scn|0"); done
if ((check)); then
  for scn in "$script_dir"/*.scn; do jobs+=("$ext_oracle|$scn|1"); done
fi
if ((${#jobs[@]} == 0)); then
  echo "refresh-traces.sh: no scenarios in $script_dir" >&2
  exit 0
fi

tmp_out=$(mktemp)
tmp_err=$(mktemp)
trap 'rm -f -- "$tmp_out" "$tmp_err"' EXIT

differ=()   # --check: scenarios whose trace differs (or whose oracle run failed)
failed=()   # scenarios the oracle could not run cleanly
for job in "${jobs[@]}"; do
  IFS='|' read -r job_oracle scn check_only <<<"$job"
  name=${scn#"$script_dir"/}
  name=${name%.scn}
  if ((check_only)); then name="$name (ext oracle)"; fi
  trace="${scn%.scn}.trace"
  rc=0
  node "$job_oracle" "$scn" >"$tmp_out" 2>"$tmp_err" || rc=$?
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
