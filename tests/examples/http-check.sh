#!/usr/bin/env bash
# http-check.sh SERVER: starts tests/examples/http_hello.cc's server on a free
# loopback port (port 0: the kernel's choice) and talks HTTP/1.1 to it: curl's
# keep-alive (one connection for several requests, when curl is installed),
# raw requests over bash's /dev/tcp (pipelined in one write, split across
# writes, with a body, HTTP/1.0, a bad request), then SIGTERM with an idle
# keep-alive connection open. Waits are bounded and scaled by
# $SLUICE_TIME_SCALE.
set -uo pipefail
server=${1:?usage: http-check.sh SERVER}
scale=${SLUICE_TIME_SCALE:-1}
tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

"$server" >"$tmp/out" 2>&1 &
pid=$!
port=""
for ((i = 0; i < 100 * scale; i++)); do
  port=$(sed -n 's/^listening on \([0-9][0-9]*\)$/\1/p' "$tmp/out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "the server did not start:"; cat "$tmp/out"; exit 1; }

ok_response=$'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\nhello world\n'
close_response=$'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhello world\n'
bad_response=$'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'
get=$'GET / HTTP/1.1\r\nHost: x\r\n\r\n'
get_close=$'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'

# exchange NAME EXPECTED PART...: one connection; writes each PART (a short
# pause between them, so that they arrive as separate reads), then reads
# until the server closes the connection, and compares the bytes.
exchange() {
  local name=$1 expected=$2; shift 2
  exec 3<>"/dev/tcp/127.0.0.1/$port" || { fail "$name: no connection"; return; }
  timeout $((5 * scale)) cat <&3 >"$tmp/got" &
  local reader=$!
  local first=1
  for part in "$@"; do
    [ $first = 1 ] || sleep 0.05
    first=0
    printf '%s' "$part" >&3
  done
  if ! wait $reader; then
    fail "$name: the server did not close the connection"
  elif [ "$(cat "$tmp/got"; echo .)" != "$expected." ]; then
    fail "$name: got:"; od -c "$tmp/got" | head -20
  else
    pass "$name"
  fi
  exec 3>&-
}

# Three requests in one write: three responses in order, the connection
# closed after the one that asked for it.
exchange "pipelined, one write" "$ok_response$ok_response$close_response" "$get$get$get_close"
# A request cut in the middle of its head and one cut in its request line.
exchange "pipelined, split across writes" "$ok_response$ok_response$close_response" \
  $'GET / HTTP/1.1\r\nHo' $'st: x\r\n\r\nGET /a HT' $'TP/1.1\r\nHost: x\r\n\r\n' "$get_close"
# A body is skipped by its Content-Length, also when it comes later.
exchange "request bodies" "$ok_response$ok_response$close_response" \
  $'POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab\r\n' $'\r\nGET' $'POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\n\r\n\r\n'"$get_close"
# HTTP/1.0 closes after one response unless it asks for keep-alive.
exchange "HTTP/1.0" "$close_response" $'GET / HTTP/1.0\r\n\r\n'
exchange "HTTP/1.0 keep-alive" "$ok_response$close_response" \
  $'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n' $'GET / HTTP/1.0\r\n\r\n'
# What is not HTTP/1.x: 400, and the connection closes (what follows is not read).
exchange "bad request" "$ok_response$bad_response" "$get" $'HELLO\r\n\r\n' "$get"
exchange "bad header" "$bad_response" $'GET / HTTP/1.1\r\nno colon\r\n\r\n'
exchange "bad Content-Length" "$bad_response" $'POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n'
# A head that never ends is cut off past 8 KiB.
big=$(printf 'X-Filler: %08190d\r\n' 0)
exchange "head too large" $'HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' \
  $'GET / HTTP/1.1\r\n'"$big"

# Keep-alive as a client does it: a response, then the next request on the
# same connection once that response has been read.
exec 4<>"/dev/tcp/127.0.0.1/$port"
keep_alive_ok=1
for round in 1 2 3; do
  printf '%s' "$get" >&4
  lines=()
  while IFS= read -r -t $((5 * scale)) line <&4; do
    lines+=("$line")
    [ "$line" = "hello world" ] && break
  done
  [ "${lines[*]:-}" = $'HTTP/1.1 200 OK\r Content-Type: text/plain\r Content-Length: 12\r \r hello world' ] || {
    keep_alive_ok=0
    fail "keep-alive: response $round: ${lines[*]:-nothing}"
    break
  }
done
[ $keep_alive_ok = 1 ] && pass "keep-alive, one request at a time"

# curl: several URLs on one command line share one connection.
if command -v curl >/dev/null 2>&1; then
  url="http://127.0.0.1:$port/"
  got=$(curl -sS --http1.1 --max-time $((5 * scale)) -w '[%{http_code} %{num_connects}]\n' "$url" "$url" "$url" 2>&1)
  want=$'hello world\n[200 1]\nhello world\n[200 0]\nhello world\n[200 0]'
  [ "$got" = "$want" ] && pass "curl, 3 requests on one connection" || fail "curl: got: $got"
  got=$(curl -sS -0 --max-time $((5 * scale)) -D - -o /dev/null "$url" 2>&1 | tr -d '\r' | grep -ci '^connection: close$')
  [ "$got" = 1 ] && pass "curl -0 (HTTP/1.0): Connection: close" || fail "curl -0: no Connection: close"
else
  echo "skipped: curl is not installed (the raw /dev/tcp requests above still ran)"
fi

# SIGTERM with the keep-alive connection above still open and idle: the
# server ends it and exits 0.
kill -TERM "$pid"
if timeout $((5 * scale)) cat <&4 >"$tmp/tail"; then
  [ -s "$tmp/tail" ] && fail "SIGTERM: unexpected bytes on the idle connection" || pass "SIGTERM ends the idle connection"
else
  fail "SIGTERM: the idle connection was not ended"
fi
exec 4>&-
status=0
for ((i = 0; i < 100 * scale; i++)); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
if kill -0 "$pid" 2>/dev/null; then
  fail "SIGTERM: the server did not exit"
else
  wait "$pid"; status=$?
  pid=""
  [ $status = 0 ] && grep -qx stopped "$tmp/out" && pass "SIGTERM: exit 0" || { fail "SIGTERM: exit $status"; cat "$tmp/out"; }
fi

[ $failures = 0 ] || { echo "$failures failed"; exit 1; }
