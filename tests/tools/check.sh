# The tools' shell tests share these: check NAME COMMAND... counts a pass or
# prints "FAIL NAME"; same GOT EXPECTED shows both when they differ; $tmp is
# a directory removed at the exit, and the pids in bg_pids are killed then.
# Sourced: . "$(dirname "${BASH_SOURCE[0]}")/check.sh"
passed=0 failed=0
tmp=$(mktemp -d)
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

check() {  # check NAME COMMAND...: the command must succeed
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name"
  fi
}
same() { [ "$1" = "$2" ] || { echo "  got:      $(printf '%q' "$1" | head -c 300)"; echo "  expected: $(printf '%q' "$2" | head -c 300)"; return 1; }; }
