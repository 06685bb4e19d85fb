#!/usr/bin/env bash
# The options the tools share mean and say the same in each (issue 35):
# one HOST:PORT parser (tools/args.h), so a bad address is bad usage (exit 2)
# with the same words in sluice-log, sluice-logd and sluice-fanout; one
# duration parser, so --idle-timeout 2 is 2 s in sluice-logd and in
# sluice-fanout (it was 2 ms in sluice-fanout), and 500ms is taken by both.
#   tests/tools/args_test.sh SLUICE_LOG SLUICE_LOGD SLUICE_FANOUT
set -u
log=$1 logd=$2 fan=$3
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"

# --- a bad HOST:PORT: exit 2, the same message in every tool. OPT is the
# option (or sluice-log's scheme) named, MIN the lowest port it takes (0 for
# a listener: any free port).
bad_addrs=("127.0.0.1:70000" "127.0.0.1:x" "bad!host:514" "nohost" "[::1:514" "[::1]:" ":514")
expect() {  # ADDR OPT MIN: the message for ADDR
  local a=$1 opt=$2 min=$3
  case $a in
    127.0.0.1:70000) echo "$opt wants a port from $min to 65535, got '70000'" ;;
    127.0.0.1:x) echo "$opt wants a port from $min to 65535, got 'x'" ;;
    "[::1]:") echo "$opt wants a port from $min to 65535, got ''" ;;
    bad!host:514) echo "$opt wants a host name or an IP address ([...] for IPv6) as HOST, got 'bad!host'" ;;
    "[::1:514") echo "$opt wants a host name or an IP address ([...] for IPv6) as HOST, got '[::1'" ;;
    nohost | :514) echo "$opt wants HOST:PORT ([...] for an IPv6 address), got '$a'" ;;
  esac
}
usage_says() {  # WANT TOOL ARGS...: exit 2 and WANT as the first line
  local want=$1 name=$2
  shift 2
  local st=0
  "$@" < /dev/null > /dev/null 2> "$dir/err" || st=$?
  [ "$st" -eq 2 ] || fail "$name ${*:2}: exit $st, not 2: $(cat "$dir/err")"
  [ "$(head -1 "$dir/err")" = "$name: $want" ] || fail "$name ${*:2}: said '$(head -1 "$dir/err")', not '$name: $want'"
}
for a in "${bad_addrs[@]}"; do
  usage_says "$(expect "$a" --listen 0)" sluice-logd "$logd" --listen "$a" "$dir/out.log"
  usage_says "$(expect "$a" --listen-relp 0)" sluice-logd "$logd" --listen-relp "$a" "$dir/out.log"
  usage_says "$(expect "$a" --listen 0)" sluice-fanout "$fan" --listen "$a"
  usage_says "$(expect "$a" syslog:// 1)" sluice-log "$log" "syslog://$a"
  usage_says "$(expect "$a" relp:// 1)" sluice-log "$log" "relp://$a"
done
usage_says "syslog:// wants a port from 1 to 65535, got '0'" sluice-log "$log" syslog://127.0.0.1:0
ok "a bad HOST:PORT (${#bad_addrs[@]} kinds): exit 2 and the same message in sluice-logd, sluice-fanout and sluice-log"

# --- durations: the same words for a bad one, a bare number is seconds
for t in 2x -1 25h 1.5s ""; do
  usage_says "--idle-timeout wants a time from 0 to 24h, e.g. 30s, 500ms or 10m (a bare number: seconds), got '$t'" \
    sluice-fanout "$fan" --listen 127.0.0.1:0 --idle-timeout "$t"
  st=0
  "$logd" --listen 127.0.0.1:0 --idle-timeout "$t" "$dir/out.log" < /dev/null 2> /dev/null || st=$?
  [ "$st" -eq 2 ] || fail "sluice-logd --idle-timeout '$t': exit $st, not 2"
done
ok "a bad --idle-timeout (2x, -1, 25h, 1.5s, empty) is bad usage in both servers"

# A client that connects, sends nothing and prints how long the server took
# to end the connection (EOF or reset), in seconds; "open" if it did not
# within the bound.
cat > "$dir/idle.py" <<'PY'
import socket, sys, time
port, bound = int(sys.argv[1]), float(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
start = time.monotonic()
s.settimeout(bound)
try:
    while s.recv(4096):
        pass
    print("%.3f" % (time.monotonic() - start))
except ConnectionResetError:
    print("%.3f" % (time.monotonic() - start))
except socket.timeout:
    print("open")
PY
listening_port() {  # ERRFILE TOOL
  for _ in $(seq $((200 * scale))); do grep -q "listening on" "$1" && break; sleep 0.05; done
  sed -n "s/^$2: listening on 127\.0\.0\.1:\([0-9]*\)\$/\1/p" "$1" | head -1
}
# idle_close TOOL VALUE LOW HIGH: the silent connection ends after LOW to
# HIGH seconds (HIGH generous: only the lower bound tells 2 s from 2 ms).
idle_close() {
  local name=$1 value=$2 low=$3 high=$4 pid port t
  rm -f "$dir/in" "$dir/err"
  mkfifo "$dir/in"
  if [ "$name" = sluice-logd ]; then
    "$logd" --listen 127.0.0.1:0 --idle-timeout "$value" "$dir/out.log" < /dev/null 2> "$dir/err" &
  else
    # A quiet input (the FIFO held open, nothing written): the subscriber
    # gets nothing and sends nothing, so it is idle.
    "$fan" --listen 127.0.0.1:0 --idle-timeout "$value" < "$dir/in" 2> "$dir/err" &
  fi
  pid=$!
  pids+=("$pid")
  # Opening the FIFO blocks until sluice-fanout has it open: logd's is /dev/null.
  if [ "$name" = sluice-fanout ]; then exec 3> "$dir/in"; else exec 3> /dev/null; fi
  port=$(listening_port "$dir/err" "$name")
  [ -n "$port" ] || fail "$name: no listening line: $(cat "$dir/err")"
  t=$(timeout $((60 * scale)) python3 "$dir/idle.py" "$port" "$high" 3>&-)
  exec 3>&-
  kill "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  python3 -c 'import sys; t = sys.argv[1]; assert t != "open" and float(sys.argv[2]) <= float(t) <= float(sys.argv[3]), t' \
    "$t" "$low" "$high" || fail "$name --idle-timeout $value: the silent connection ended after '$t' s, not $low to $high: $(cat "$dir/err")"
  ok "$name --idle-timeout $value: the silent connection ended after $t s"
}
high=$((2 * scale + 10))
idle_close sluice-logd 2 1.9 "$high"
idle_close sluice-fanout 2 1.9 "$high"
idle_close sluice-logd 500ms 0.45 "$high"
idle_close sluice-fanout 500ms 0.45 "$high"

echo "args: $pass checks passed"
