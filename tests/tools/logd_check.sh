# The sluice-logd tests share this (on prelude.sh): start and stop one
# sluice-logd. Set logd (the binary) before sourcing, and listen_kind to the
# listener whose port `start` reads: "" (TCP), "TLS" or "RELP".
#   . "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"

# Starts sluice-logd with "$@" (its stderr into $dir/err, or ERR if set);
# sets $lp (pid) and $port, read from its "listening on" line.
start() {
  local err=${ERR:-$dir/err} suffix=
  [ -z "${listen_kind:-}" ] || suffix=" ($listen_kind)"
  : > "$err"
  "$logd" "$@" 2>> "$err" &
  lp=$!
  pids+=("$lp")
  for _ in $(seq $((200 * scale))); do grep -q "listening on 127.0.0.1:[0-9]*$suffix\$" "$err" && break; sleep 0.05; done
  port=$(sed -n "s/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$suffix\$/\1/p" "$err" | tail -1)
  [ -n "$port" ] || fail "no listening line: $(cat "$err")"
}
# bad ARGS...: sluice-logd refuses ARGS as bad usage: exit 2, one line and
# the pointer to --help.
bad() {
  local st=0
  "$logd" "$@" 2> "$dir/usage" || st=$?
  [ "$st" -eq 2 ] || fail "$*: exit $st"
  [ "$(wc -l < "$dir/usage")" -eq 2 ] && grep -q -- "--help" "$dir/usage" || fail "$*: $(cat "$dir/usage")"
}
# SIGTERM, then at most 30 s (scaled) for sluice-logd to exit 0.
stop() {
  kill -TERM "$lp"
  local st=0
  for _ in $(seq $((600 * scale))); do kill -0 "$lp" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$lp" 2>/dev/null && fail "sluice-logd still running after SIGTERM: $(tail -3 "${ERR:-$dir/err}")"
  wait "$lp" || st=$?
  [ "$st" -eq 0 ] || fail "sluice-logd exited $st: $(cat "${ERR:-$dir/err}")"
}
