#!/usr/bin/env bash
# sluice-logd --forward relp+tls://, a relay whose next hop is RELP over
# TLS: rsyslogd's imrelp with tls="on" and tls.authMode="certvalid" (the
# only RELP-over-TLS receiver here; skipped, saying so, without
# rsyslog-relp). sluice-log relp:// -> relay -> imrelp: every line
# acknowledged end to end and in rsyslog's file, in order; a relay that
# trusts another CA: the reason said, exit 1, nothing answered nor
# delivered. And the --forward-tls-* usage errors. Loopback only.
#
#   tests/tools/relay_tls_test.sh SLUICE_LOGD SLUICE_LOG MAKE_CA_SH
set -euo pipefail
logd=$1
log=$2
make_ca=$(realpath "$3")
listen_kind=RELP
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/rsyslog.sh"

# --- usage
bad --listen-relp 127.0.0.1:0 --forward relp://127.0.0.1:1 --forward-tls-ca "$pki/ca.crt"
bad --listen-relp 127.0.0.1:0 --forward relp+tls://127.0.0.1:1 --forward-tls-ca "$dir/nope.crt"
bad --listen-relp 127.0.0.1:0 --forward relp+tls://127.0.0.1:1 --forward-tls-cert "$pki/client.crt"
bad --listen-relp 127.0.0.1:0 --forward relp+tls://127.0.0.1:1 --forward relp://127.0.0.1:2
bad --listen-relp 127.0.0.1:0 --forward relp+tls://127.0.0.1:1 --forward relp+tls://localhost:2
ok "usage"

if have_imrelp; then
  rout=$dir/rr.log
  start_imrelp_tls "$rout"

  # --- every line through the relay over TLS, acknowledged end to end
  ERR=$dir/relay.err start --listen-relp 127.0.0.1:0 --forward "relp+tls://127.0.0.1:$rport" \
    --forward-tls-ca "$pki/ca.crt" --forward-tls-cert "$pki/client.crt" --forward-tls-key "$pki/client.key"
  rp=$port relay=$lp
  n=5000
  seq -f 'L%06g' 0 $((n - 1)) | timeout $((60 * scale)) "$log" --stats "relp://127.0.0.1:$rp" 2> "$dir/log.err" ||
    fail "sluice-log through a TLS relay: $(cat "$dir/log.err" "$dir/relay.err"; tail -5 "$dir/rr.err")"
  grep -q "^sluice-log: $n lines, $n acked, 0 resent, 0 dropped" "$dir/log.err" || fail "sluice-log: $(cat "$dir/log.err")"
  # Acknowledged means written by rsyslog's omfile (a Direct queue): there now.
  [ "$(seq -f 'L%06g' 0 $((n - 1)))" = "$(cat "$rout")" ] || fail "rsyslog's file: $(wc -l < "$rout") lines, or not in order"
  lp=$relay ERR=$dir/relay.err stop
  ok "sluice-log -> relay -> relp+tls:// imrelp (certvalid): all $n lines acknowledged end to end, in order"

  # --- a relay that trusts another CA: said, exit 1, nothing answered
  ERR=$dir/relay.err start --listen-relp 127.0.0.1:0 --forward "relp+tls://127.0.0.1:$rport" \
    --forward-tls-ca "$pki/other-ca.crt" --forward-tls-cert "$pki/client.crt" --forward-tls-key "$pki/client.key"
  rp=$port relay=$lp
  st=0
  seq 10 | "$log" --give-up-after $((5 * scale))s "relp://127.0.0.1:$rp" 2> "$dir/log.err" || st=$?
  [ "$st" -eq 1 ] || fail "sluice-log through a relay that trusts another CA: exit $st: $(cat "$dir/log.err")"
  for _ in $(seq $((200 * scale))); do kill -0 "$relay" 2>/dev/null || break; sleep 0.05; done
  st=0; wait "$relay" || st=$?
  [ "$st" -eq 1 ] || fail "the relay that trusts another CA: exit $st: $(cat "$dir/relay.err")"
  grep -Eq "^sluice-logd: next hop relp\+tls://127.0.0.1:$rport: .*(self-signed certificate|certificate verify failed|unable to get local issuer)" "$dir/relay.err" ||
    fail "no reason: $(cat "$dir/relay.err")"
  [ "$(wc -l < "$rout")" -eq "$n" ] || fail "another CA: $(( $(wc -l < "$rout") - n )) lines delivered"
  ok "a relay that trusts another CA: the reason said, exit 1, nothing answered nor delivered"
  kill -TERM "$rs"; wait "$rs" || true
else
  echo "skip: rsyslog imrelp over TLS (apt-get install rsyslog rsyslog-relp)"
fi

echo "relay_tls: $pass passed"
