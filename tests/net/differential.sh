#!/usr/bin/env bash
# The Node differential test of sluice's net (issue 11, "Checked against
# Node"): each scenario is played by a server and a client, each printing its
# events (peer.mjs on Node's net, net_peer on sluice's), over loopback.
# Every pairing must print the trace Node's server and Node's client print,
# which is stored in expected.trace, so that CI needs no Node:
#   sluice server + sluice client   always
#   sluice server + Node client     when node is installed
#   Node server   + sluice client   when node is installed
#   Node server   + Node client     when node is installed (the reference itself)
#
# Scenarios that need one process (a server and its own clients, or none:
# a refused connection, unref(), an exit status) are played by `local`, by
# sluice always and by Node when installed, against expected-local.trace,
# whose every section ends with the program's exit status.
#
#   tests/net/differential.sh NET_PEER            compare
#   tests/net/differential.sh --record NET_PEER   rewrite both traces (Node v20)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
record=false
if [ "${1:-}" = --record ]; then
  record=true
  shift
fi
peer=${1:?usage: differential.sh [--record] NET_PEER}
expected="$here/expected.trace"
expected_local="$here/expected-local.trace"
scenarios=(half-close server-ends-first reset timeout server-close
  connect-write-destroy held-write-destroy end-then-bad-write connect-destroy reset-connecting)
local_scenarios=(refused-writes destroy-error-writes destroy-error-inflight addresses-after-close listen-order close-twice
  close-not-listening end-after-destroy-connecting end-after-destroy-in-connect end-after-destroy-idle unref-server unref-connection ref-again set-timeout-callback is-ip
  unhandled-listen-error unhandled-listen-error-asio lookup-localhost lookup-not-found lookup-destroy)
have_node=false
if command -v node >/dev/null 2>&1; then have_node=true; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# play SERVER CLIENT SCENARIO: the two traces, server's first.
play() {
  local server=$1 client=$2 scenario=$3 port="" i
  rm -f "$tmp/port" "$tmp/server.out" "$tmp/client.out"
  timeout 30 $server server "$scenario" "$tmp/port" >"$tmp/server.out" 2>"$tmp/server.err" &
  local pid=$!
  for i in $(seq 1 300); do
    if [ -s "$tmp/port" ]; then port=$(cat "$tmp/port"); break; fi
    sleep 0.05
  done
  if [ -z "$port" ]; then
    echo "differential: $server did not listen for $scenario" >&2
    cat "$tmp/server.err" >&2
    return 1
  fi
  local client_rc=0 server_rc=0
  timeout 30 $client client "$scenario" "$port" >"$tmp/client.out" 2>"$tmp/client.err" || client_rc=$?
  wait "$pid" || server_rc=$?
  echo "## $scenario"
  cat "$tmp/server.out" "$tmp/client.out"
  # A peer that fails (a sanitizer's report, a hang) fails the comparison.
  if [ "$server_rc$client_rc" != 00 ]; then
    echo "exit: server $server_rc, client $client_rc"
    cat "$tmp/server.err" "$tmp/client.err"
  fi
}

trace_of() {
  local server=$1 client=$2 s
  for s in "${scenarios[@]}"; do play "$server" "$client" "$s"; done
}

# local_of PEER: every local scenario's trace and exit status (a hang is
# timeout's 124; stderr, where Node prints its uncaught error, is not compared).
local_of() {
  local peer=$1 s rc
  for s in "${local_scenarios[@]}"; do
    echo "## $s"
    rc=0
    timeout 30 $peer local "$s" 2>"$tmp/local.err" || rc=$?
    echo "exit $rc"
  done
}

if $record; then
  $have_node || { echo "differential: --record needs node" >&2; exit 1; }
  trace_of "node $here/peer.mjs" "node $here/peer.mjs" >"$expected"
  local_of "node $here/peer.mjs" >"$expected_local"
  echo "differential: wrote $expected and $expected_local ($(node --version))"
  exit 0
fi

pairs=("$peer|$peer|sluice server, sluice client")
if $have_node; then
  pairs+=("$peer|node $here/peer.mjs|sluice server, Node client")
  pairs+=("node $here/peer.mjs|$peer|Node server, sluice client")
  pairs+=("node $here/peer.mjs|node $here/peer.mjs|Node server, Node client")
else
  echo "differential: node not found; comparing sluice with the stored Node trace only"
fi
failed=0
for p in "${pairs[@]}"; do
  IFS='|' read -r server client name <<<"$p"
  trace_of "$server" "$client" >"$tmp/got.trace"
  if diff -u "$expected" "$tmp/got.trace" >"$tmp/diff"; then
    echo "ok: $name"
  else
    echo "FAIL: $name differs from Node's trace:"
    cat "$tmp/diff"
    failed=1
  fi
done
locals=("$peer|sluice, one process")
if $have_node; then locals+=("node $here/peer.mjs|Node, one process"); fi
for p in "${locals[@]}"; do
  IFS='|' read -r who name <<<"$p"
  local_of "$who" >"$tmp/got.trace"
  if diff -u "$expected_local" "$tmp/got.trace" >"$tmp/diff"; then
    echo "ok: $name"
  else
    echo "FAIL: $name differs from Node's trace:"
    cat "$tmp/diff"
    failed=1
  fi
done
exit $failed
