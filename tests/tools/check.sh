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

# check_skeleton NAME TOOL: what every tool shares (tools/tool.h): --help on
# standard output, exit 0, and exit 1 with the reason when it cannot be
# written; bad usage is one line naming the option as written, then the
# pointer to --help, exit 2.
check_skeleton() {
  local name=$1 bin=$2 args out
  "$bin" --help >"$tmp/skel.out" 2>"$tmp/skel.err"
  check "$name --help exits 0" test $? -eq 0
  check "$name --help prints its usage" grep -q "^usage: $name" "$tmp/skel.out"
  "$bin" --help >/dev/full 2>"$tmp/skel.err"
  check "$name --help to /dev/full exits 1" test $? -eq 1
  check "$name --help to /dev/full says why" same "$(cat "$tmp/skel.err")" "$name: write error: No space left on device"
  for args in "--no-such-option:unknown option '--no-such-option'" "-Zh:unknown option '-Z'" \
      "--help=x:option '--help' takes no value"; do
    "$bin" "${args%%:*}" </dev/null >"$tmp/skel.out" 2>"$tmp/skel.err"
    check "$name ${args%%:*} exits 2" test $? -eq 2
    out=$(printf '%s: %s\n%s' "$name" "${args#*:}" "Try '$name --help' for more information.")
    check "$name ${args%%:*}: one line, then --help" same "$(cat "$tmp/skel.err")" "$out"
  done
}
not() { ! "$@"; }  # not COMMAND...: for check, which takes a command, not a pipeline
