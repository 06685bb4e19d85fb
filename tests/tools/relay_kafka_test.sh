#!/usr/bin/env bash
# sluice-logd --forward kafka://, Kafka as a relay's next hop, on a
# librdkafka mock cluster (kafka_mock cluster: 3 brokers, topic "logs" of 4
# partitions, up for the whole test) read back by kafka_mock consume:
#   - two sluice-log relp:// senders (--hostname hosta, hostb) through the
#     relay: every line once; the key is the HOSTNAME, each host's lines in
#     one partition and in order; --stats counts them forwarded;
#   - the brokers down while a sender sends, the relay SIGKILLed then and
#     started again on its port, the brokers up: every line once (this is
#     what fails when the relay answers before the delivery report: the
#     killed relay's answered lines are lost);
#   - -X message.max.bytes=3000 and one line of 5000 bytes among others: the
#     sender hears a RELP error for it (and drops it), the relay counts it
#     refused, every other line arrives;
#   - --give-up-after 1s with no broker: the relay ends, exit 1;
#   - usage.
# Loopback only; every wait is bounded.
#
#   tests/tools/relay_kafka_test.sh SLUICE_LOGD SLUICE_LOG KAFKA_MOCK
set -euo pipefail
logd=$1
log=$2
mock=$3
listen_kind=RELP
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"

# --- usage
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/t --forward kafka://127.0.0.1:2/t
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/t --forward relp://127.0.0.1:2
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/t --window 10
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/t --spool "$dir/spool"
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/t -X acks
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 -X acks=1
bad --listen-relp 127.0.0.1:0 -X acks=1 "$dir/out.log"
bad --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/t -X no.such.property=1
grep -q 'No such configuration property: "no.such.property"' "$dir/usage" || fail "-X: $(cat "$dir/usage")"
"$logd" --help > "$dir/help"
grep -q -- '--forward kafka://BROKER' "$dir/help" || fail "--help has no --forward kafka://"
ok "usage"

# The cluster, its commands through a FIFO held open on fd 7.
mkfifo "$dir/mock.in"
"$mock" cluster 3 logs 4 < "$dir/mock.in" > "$dir/mock.out" 2> "$dir/mock.err" &
pids+=($!)
exec 7> "$dir/mock.in"
for _ in $(seq $((100 * scale))); do [ -s "$dir/mock.out" ] && break; sleep 0.05; done
brokers=$(head -1 "$dir/mock.out")
[ -n "$brokers" ] || fail "no mock cluster: $(cat "$dir/mock.err")"
forward="kafka://$brokers/logs"

# consume N: every message of "logs" so far, into $dir/topic; fails unless
# exactly N.
consume() {
  "$mock" consume "$brokers" logs 4 "$1" $((10 * scale)) > "$dir/topic" 2> "$dir/consume.err" ||
    fail "the topic has $(wc -l < "$dir/topic") messages, not $1: $(tail -3 "$dir/consume.err")"
}
# check PREFIX N HOST...: the lines "PREFIX NNNNNN" 0..N-1 of each HOST are
# in the topic once each, keyed HOST, in one partition, in order.
check() {
  python3 - "$dir/topic" "$@" <<'PY'
import sys, collections
path, prefix, n, hosts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
seen = collections.defaultdict(list)
parts = collections.defaultdict(set)
for line in open(path, encoding="utf-8", errors="replace"):
    part, key, value = line.rstrip("\n").split("\t", 2)
    words = value.split(" ")
    if len(words) < 2 or words[-2] != prefix:
        continue
    # RFC 5424 as sluice-log sends it: <PRI>1 TIMESTAMP HOSTNAME ...
    host = value.split(" ")[2]
    if key != host:
        sys.exit("key %r for a message of HOSTNAME %r" % (key, host))
    seen[host].append(int(words[-1]))
    parts[host].add(part)
for h in hosts:
    if sorted(seen[h]) != list(range(n)):
        c = collections.Counter(seen[h])
        sys.exit("%s: %d of %d lines, %d twice" % (h, len(set(seen[h])), n, sum(1 for v in c.values() if v > 1)))
    if seen[h] != sorted(seen[h]):
        sys.exit("%s: out of order" % h)
    if len(parts[h]) != 1:
        sys.exit("%s: in partitions %s" % (h, sorted(parts[h])))
print("checked:", {h: len(seen[h]) for h in hosts}, "partitions:", {h: sorted(parts[h]) for h in hosts})
PY
}
lines() { python3 -c "import sys; print(''.join('$1 %06d\n' % i for i in range($2)), end='')"; }

# --- two hosts, every line once, keyed, one partition each, in order
ERR=$dir/relay.err start --listen-relp 127.0.0.1:0 --forward "$forward" --stats
rp=$port
lines a 5000 | "$log" --hostname hosta "relp://127.0.0.1:$rp" 2> "$dir/loga.err" &
sa=$!
lines a 5000 | "$log" --hostname hostb "relp://127.0.0.1:$rp" 2> "$dir/logb.err" &
sb=$!
pids+=("$sa" "$sb")
wait "$sa" || fail "sluice-log hosta: $(cat "$dir/loga.err")"
wait "$sb" || fail "sluice-log hostb: $(cat "$dir/logb.err")"
ERR=$dir/relay.err stop
grep -q "10000 RELP answered, .*; 10000 forwarded, 0 refused by the next hop" "$dir/relay.err" ||
  fail "relay --stats: $(tail -1 "$dir/relay.err")"
consume 10000
check a 5000 hosta hostb || fail "two hosts through the relay"
ok "two hosts: every line once, keyed by HOSTNAME, one partition each, in order"

# --- the brokers away, the relay killed and started again: nothing lost
echo down >&7
ERR=$dir/relay.err start --listen-relp 127.0.0.1:0 --forward "$forward"
rp=$port relay=$lp
(lines b 2000 | "$log" --hostname hostc "relp://127.0.0.1:$rp" 2> "$dir/logc.err") &
sc=$!
pids+=("$sc")
sleep $((2 * scale))
kill -0 "$sc" 2>/dev/null || fail "sluice-log was not held back with the brokers down: $(cat "$dir/logc.err")"
kill -9 "$relay"
wait "$relay" 2>/dev/null || true
ERR=$dir/relay2.err start --listen-relp "127.0.0.1:$rp" --forward "$forward"
sleep 1
echo up >&7
for _ in $(seq $((600 * scale))); do kill -0 "$sc" 2>/dev/null || break; sleep 0.05; done
wait "$sc" || fail "sluice-log through the restarted relay: $(cat "$dir/logc.err")"
ERR=$dir/relay2.err stop
consume 12000
check b 2000 hostc || fail "brokers down, relay killed and restarted"
ok "brokers down, relay SIGKILLed and restarted, brokers up: every line once"

# --- a message the brokers refuse: a RELP error, counted; the rest goes on
ERR=$dir/relay3.err start --listen-relp 127.0.0.1:0 --forward "$forward" -X message.max.bytes=3000 --stats
{ lines c 10; python3 -c "print('x' * 5000)"; lines c 20 | tail -10; } |
  "$log" --hostname hostd --max-message 8K --stats "relp://127.0.0.1:$port" 2> "$dir/logd.err" && st=0 || st=$?
[ "$st" -eq 1 ] || fail "sluice-log with a refused line: exit $st: $(cat "$dir/logd.err")"
grep -q "the receiver refused 1 message (answered other than 200)" "$dir/logd.err" ||
  fail "sluice-log heard no refusal: $(cat "$dir/logd.err")"
grep -q "refused a message (MSG_SIZE_TOO_LARGE: .*): answered to its sender with a RELP error" "$dir/relay3.err" ||
  fail "the relay did not say the refusal: $(cat "$dir/relay3.err")"
grep -q "21 lines, 20 acked, .* 1 refused" "$dir/logd.err" || fail "sluice-log --stats: $(tail -1 "$dir/logd.err")"
kill -TERM "$lp"
wait "$lp" && st=0 || st=$?
[ "$st" -eq 1 ] || fail "a relay with a refused message exits $st"
grep -q "1 of 21 messages not written" "$dir/relay3.err" || fail "relay: $(cat "$dir/relay3.err")"
grep -q "20 forwarded, 1 refused by the next hop" "$dir/relay3.err" || fail "relay --stats: $(tail -1 "$dir/relay3.err")"
consume 12020
check c 20 hostd || fail "the lines around the refused one"
ok "a message above message.max.bytes: a RELP error, counted, the rest delivered"

# --- --give-up-after with no broker at all: the relay ends, exit 1
ERR=$dir/relay4.err start --listen-relp 127.0.0.1:0 --forward kafka://127.0.0.1:1/logs --give-up-after 1s \
  -X log_level=0
relay=$lp
# sluice-log itself in the background (not a subshell), so that the
# cleanup's kill ends it and nothing holds the test's output open.
lines d 5 > "$dir/d5"
"$log" "relp://127.0.0.1:$port" < "$dir/d5" 2> /dev/null &
pids+=($!)
for _ in $(seq $((200 * scale))); do kill -0 "$relay" 2>/dev/null || break; sleep 0.05; done
kill -0 "$relay" 2>/dev/null && fail "--give-up-after 1s: the relay still runs: $(cat "$dir/relay4.err")"
wait "$relay" && st=0 || st=$?
[ "$st" -eq 1 ] || fail "--give-up-after: exit $st"
grep -q "_MSG_TIMED_OUT" "$dir/relay4.err" && grep -q "5 of 5 messages not written" "$dir/relay4.err" ||
  fail "--give-up-after: $(cat "$dir/relay4.err")"
ok "--give-up-after 1s with no broker: said, exit 1"

exec 7>&-
echo "relay_kafka: $pass passed"
