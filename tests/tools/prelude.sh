# The daemon-driving shell tests share this: $scale (SLUICE_TIME_SCALE), a
# directory $dir removed at the exit, the pids in `pids` killed then (and
# `cleanup_more`, when the test defines it, run first), fail and ok.
# Sourced: . "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
scale=${SLUICE_TIME_SCALE:-1}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if declare -F cleanup_more > /dev/null; then cleanup_more; fi
  rm -rf "$dir"
}
trap cleanup EXIT
# In a command substitution, its standard output is the caller's variable:
# the reason goes to standard error too, or a failure there is silent.
fail() {
  echo "FAIL: $*"
  [ "$BASH_SUBSHELL" = 0 ] || echo "FAIL: $*" >&2
  exit 1
}
pass=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
