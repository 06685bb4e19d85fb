#!/usr/bin/env bash
# The Unix listeners of sluice-logd and sluice-fanout (issue 19, items 8
# and 13): after a SIGKILL the socket file stays, and a restart listens on it
# again; a regular file at the path is refused and left as it was; a live
# listener is EADDRINUSE; --socket-mode and --socket-group set the socket's
# permissions and group; bad values are usage errors (exit 2). Unix sockets
# in a temporary directory only; every wait is bounded (scaled by
# SLUICE_TIME_SCALE).
#
#   tests/tools/unix_socket_test.sh SLUICE_LOGD SLUICE_FANOUT
set -euo pipefail
logd=$1 fanout=$2
scale=${SLUICE_TIME_SCALE:-1}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

# sluice-fanout ends at the end of its input: give it a FIFO that never ends
# (held open for writing by this shell).
mkfifo "$dir/in"
exec 3<>"$dir/in"

# run TOOL PATH [OPTION]...: starts TOOL on unix:PATH in the background
# ($tp: its pid, $dir/err.$tp: its stderr).
run() {
  local tool=$1 path=$2
  shift 2
  # Emptied here, not only by the child's redirection: wait_listening must
  # not read the previous run's "listening on" before the child opens it.
  : >"$dir/err"
  if [[ $tool == logd ]]; then
    "$logd" --listen "unix:$path" "$@" "$dir/out.log" 2>"$dir/err" &
  else
    "$fanout" --listen "unix:$path" "$@" <&3 2>"$dir/err" &
  fi
  tp=$!
  pids+=("$tp")
}
# Waits (bounded) until $tp says it listens, or has exited.
wait_listening() {
  local tries=$((200 * scale))
  for _ in $(seq "$tries"); do
    grep -q "listening on" "$dir/err" && return 0
    kill -0 "$tp" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# Whether a client can connect to the Unix socket PATH.
connects() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.close()
PY
}
# run_to_end TOOL PATH [OPTION]...: runs TOOL in the foreground (it must end
# by itself: an error); sets $st and leaves its stderr in $dir/err.
run_to_end() {
  local tool=$1 path=$2
  shift 2
  st=0
  if [[ $tool == logd ]]; then
    timeout $((30 * scale)) "$logd" --listen "unix:$path" "$@" "$dir/out.log" 2>"$dir/err" || st=$?
  else
    timeout $((30 * scale)) "$fanout" --listen "unix:$path" "$@" </dev/null 2>"$dir/err" || st=$?
  fi
}

for tool in logd fanout; do
  name=sluice-$tool
  sock=$dir/$tool.sock

  # --- a SIGKILL leaves the socket; the restart takes it over and listens
  run "$tool" "$sock" --socket-mode 660
  wait_listening || fail "$name did not listen: $(cat "$dir/err")"
  [[ $(stat -c %a "$sock") == 660 ]] || fail "$name --socket-mode 660: the socket is $(stat -c %a "$sock")"
  connects "$sock" || fail "$name: cannot connect"
  kill -9 "$tp"
  wait "$tp" 2>/dev/null || true
  [[ -S $sock ]] || fail "$name: no socket file left after SIGKILL (the test needs one)"
  run "$tool" "$sock"
  wait_listening || fail "$name restarted after SIGKILL did not listen: $(cat "$dir/err")"
  connects "$sock" || fail "$name restarted: cannot connect"
  ok "$name: a SIGKILL's leftover socket is taken over at restart"

  # --- a live listener: EADDRINUSE, exit 1; the first one goes on
  run_to_end "$tool" "$sock"
  [[ $st -eq 1 ]] || fail "$name on a live listener's path: exit $st: $(cat "$dir/err")"
  grep -q "Address already in use" "$dir/err" || fail "$name on a live listener's path: $(cat "$dir/err")"
  connects "$sock" || fail "$name: the live listener lost its socket"
  kill -TERM "$tp"
  wait "$tp" || fail "$name: exit $? after SIGTERM"
  [[ ! -e $sock ]] || fail "$name: the socket stays after SIGTERM"
  ok "$name: a live listener's path is EADDRINUSE and stays its"

  # --- a regular file at the path: refused, untouched
  printf 'not a socket\n' >"$dir/file"
  run_to_end "$tool" "$dir/file"
  [[ $st -eq 1 ]] || fail "$name on a regular file: exit $st: $(cat "$dir/err")"
  grep -q "Address already in use" "$dir/err" || fail "$name on a regular file: $(cat "$dir/err")"
  [[ -f $dir/file && $(cat "$dir/file") == "not a socket" ]] || fail "$name changed the regular file at its path"
  ok "$name: a regular file at the path is refused and left as it was"

  # --- --socket-group (by number and by name) and a mode without group bits
  group=$(id -gn) gid=$(id -g)
  for g in "$gid" "$group"; do
    run "$tool" "$sock" --socket-group "$g" --socket-mode 0600
    wait_listening || fail "$name --socket-group $g did not listen: $(cat "$dir/err")"
    [[ $(stat -c '%g %a' "$sock") == "$gid 600" ]] || fail "$name --socket-group $g: $(stat -c '%g %a' "$sock")"
    kill -TERM "$tp"
    wait "$tp" || fail "$name: exit $? after SIGTERM"
  done
  ok "$name: --socket-group by number and name, --socket-mode 0600"

  # --- usage
  for bad in "--socket-mode 8" "--socket-mode 1777" "--socket-mode x" "--socket-mode=" "--socket-group no-such-group-here" "--socket-group 99999999999"; do
    # shellcheck disable=SC2086  # an option and its value
    run_to_end "$tool" "$sock" $bad
    [[ $st -eq 2 ]] || fail "$name $bad: exit $st"
    [[ $(wc -l <"$dir/err") -eq 2 ]] && grep -q "^Try '$name --help'" "$dir/err" || fail "$name $bad: $(cat "$dir/err")"
  done
  st=0
  if [[ $tool == logd ]]; then
    "$logd" --listen 127.0.0.1:0 --socket-mode 660 "$dir/out.log" 2>"$dir/err" || st=$?
  else
    "$fanout" --listen 127.0.0.1:0 --socket-mode 660 </dev/null 2>"$dir/err" || st=$?
  fi
  [[ $st -eq 2 ]] || fail "$name --socket-mode without a unix: listener: exit $st"
  "${!tool}" --help | grep -- "--socket-mode MODE" >/dev/null || fail "$name --help does not say --socket-mode"
  "${!tool}" --help | grep -- "--socket-group GROUP" >/dev/null || fail "$name --help does not say --socket-group"
  ok "$name: bad --socket-mode and --socket-group values exit 2"
done
echo "all passed"
