#!/usr/bin/env bash
# sluice-log syslog+tls:// (RFC 5425: octet-counted syslog over TLS):
# into sluice-logd --listen-tls --tls-client-ca, every line once, in order;
# trusting another CA, or verifying another name: exit 1, the reason said,
# nothing delivered, not tried again; into a real rsyslogd (imtcp, the ossl
# driver, x509/certvalid: a client certificate required) every line in
# order, and trusting another CA or without a client certificate nothing;
# relp+tls:// into rsyslogd's imrelp with TLS, every line acknowledged in
# order, another CA refused; the --tls-* usage errors (exit 2)
# and the warning for a key others may read. Loopback only; every wait is
# bounded and scaled by SLUICE_TIME_SCALE.
#
#   tests/tools/log_tls_test.sh SLUICE_LOG SLUICE_LOGD MAKE_CA_SH
set -euo pipefail
log=$1
logd=$2
make_ca=$(realpath "$3")
. "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/rsyslog.sh"
client=(--tls-ca "$pki/ca.crt" --tls-cert "$pki/client.crt" --tls-key "$pki/client.key")

# --- usage: exit 2, with the reason
usage() {  # expected message, args...
  local want=$1 st=0
  shift
  echo x | timeout $((20 * scale)) "$log" "$@" > /dev/null 2> "$dir/uerr" || st=$?
  [ "$st" -eq 2 ] || fail "sluice-log $* exited $st, not 2: $(cat "$dir/uerr")"
  grep -qF -- "$want" "$dir/uerr" || fail "sluice-log $*: no '$want' in: $(cat "$dir/uerr")"
}
usage "--tls-ca applies to syslog+tls:// and relp+tls:// only" --tls-ca "$pki/ca.crt" syslog://127.0.0.1:9
usage "--tls-ca $dir/nothing.crt: No such file or directory" --tls-ca "$dir/nothing.crt" syslog+tls://127.0.0.1:9
usage "--tls-key $dir/nothing.key: No such file or directory" \
  --tls-cert "$pki/client.crt" --tls-key "$dir/nothing.key" syslog+tls://127.0.0.1:9
usage "--tls-cert needs --tls-key FILE" --tls-cert "$pki/client.crt" syslog+tls://127.0.0.1:9
usage "--tls-key goes with --tls-cert FILE" --tls-key "$pki/client.key" syslog+tls://127.0.0.1:9
usage "--tls-cert $dir: Is a directory" --tls-cert "$dir" --tls-key "$pki/client.key" syslog+tls://127.0.0.1:9
usage "key values mismatch" --tls-cert "$pki/client.crt" --tls-key "$pki/server.key" syslog+tls://127.0.0.1:9
usage "--framing applies to syslog:// and syslog+unix: only" --framing lf syslog+tls://127.0.0.1:9
# A FIFO (nobody writes to it): refused at once, not opened and waited on.
mkfifo "$dir/fifo.crt"
usage "--tls-ca $dir/fifo.crt: not a regular file" --tls-ca "$dir/fifo.crt" syslog+tls://127.0.0.1:9
usage "--tls-cert $dir/fifo.crt: not a regular file" --tls-cert "$dir/fifo.crt" --tls-key "$pki/client.key" \
  relp+tls://127.0.0.1:9
ok "usage: --tls-* with syslog://, a missing file, a FIFO, a cert without its key, a mismatched key: exit 2 with the reason"

# --- the receiver down: the give-up, or the end of --grace, ends the run;
# no handshake timeout (30 s) is waited for
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ms() { date +%s%3N; }
for scheme in syslog+tls relp+tls; do
  t0=$(ms)
  st=0
  seq 10 | timeout $((60 * scale)) "$log" "${client[@]}" --give-up-after 2s "$scheme://127.0.0.1:$dead" 2> "$dir/lerr" || st=$?
  took=$(( $(ms) - t0 ))
  [ "$st" -eq 1 ] || fail "$scheme, receiver down, --give-up-after 2s: exit $st, not 1: $(cat "$dir/lerr")"
  grep -q "Connection refused" "$dir/lerr" || fail "$scheme, receiver down: no reason: $(cat "$dir/lerr")"
  [ "$took" -le $((10000 * scale)) ] || fail "$scheme, receiver down, --give-up-after 2s: exited after $took ms"
  # SIGTERM, --grace 1s: the input still open.
  mkfifo "$dir/in.$scheme"
  "$log" "${client[@]}" --grace 1s "$scheme://127.0.0.1:$dead" < "$dir/in.$scheme" 2> "$dir/lerr" &
  sp=$!
  pids+=("$sp")
  exec 4> "$dir/in.$scheme"
  seq 10 >&4
  sleep 0.5
  t0=$(ms)
  kill -TERM "$sp"
  for _ in $(seq $((600 * scale))); do kill -0 "$sp" 2> /dev/null || break; sleep 0.05; done
  took=$(( $(ms) - t0 ))
  exec 4>&-
  st=0
  wait "$sp" || st=$?
  [ "$st" -eq 1 ] || fail "$scheme, receiver down, SIGTERM --grace 1s: exit $st, not 1: $(cat "$dir/lerr")"
  grep -q "within --grace 1s" "$dir/lerr" || fail "$scheme, SIGTERM --grace 1s: no reason: $(cat "$dir/lerr")"
  [ "$took" -le $((10000 * scale)) ] || fail "$scheme, receiver down, SIGTERM --grace 1s: exited $took ms after the signal"
done
ok "syslog+tls:// and relp+tls:// with the receiver down: --give-up-after 2s and SIGTERM with --grace 1s end the run at once"

# Starts sluice-logd --listen-tls with "$@"; sets $lp and $port.
start_logd() {
  : > "$dir/err"
  "$logd" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" "$@" 2>> "$dir/err" &
  lp=$!
  pids+=("$lp")
  for _ in $(seq $((200 * scale))); do grep -q "listening on 127.0.0.1:.* (TLS)" "$dir/err" && break; sleep 0.05; done
  port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\) (TLS)$/\1/p' "$dir/err" | tail -1)
  [ -n "$port" ] || fail "no listening line: $(cat "$dir/err")"
}
stop_logd() {
  kill -TERM "$lp"
  local st=0
  for _ in $(seq $((600 * scale))); do kill -0 "$lp" 2>/dev/null || break; sleep 0.05; done
  wait "$lp" || st=$?
  [ "$st" -eq 0 ] || fail "sluice-logd exited $st: $(cat "$dir/err")"
}
lines() { cat "$1" 2>/dev/null | wc -l; }
# The messages' last words (MSG), as sent: L000000 ... in order, each once.
check_order() {  # file, count, what
  awk '{print $NF}' "$1" > "$dir/got"
  seq -f 'L%06g' 0 $(($2 - 1)) > "$dir/want"
  cmp -s "$dir/got" "$dir/want" ||
    fail "$3: not every line once, in order ($(lines "$1") lines; first difference: $(diff "$dir/want" "$dir/got" | sed -n 2p))"
}
# sluice-log "$@" with N lines on stdin; sets $st, stderr in $dir/lerr.
send() {  # n, args...
  local n=$1
  shift
  st=0
  seq -f 'L%06g' 0 $((n - 1)) | timeout $((60 * scale)) "$log" --stats "$@" 2> "$dir/lerr" || st=$?
}

# --- the key readable by others: a warning, and it still sends
chmod 644 "$pki/client.key"
start_logd --tls-client-ca "$pki/ca.crt" "$dir/w.log"
send 10 "${client[@]}" "syslog+tls://127.0.0.1:$port"
[ "$st" -eq 0 ] || fail "a key of mode 644: exit $st: $(cat "$dir/lerr")"
grep -q "warning: --tls-key $pki/client.key may be read by others (mode 644)" "$dir/lerr" ||
  fail "no warning for a key of mode 644: $(cat "$dir/lerr")"
chmod 600 "$pki/client.key"
send 10 "${client[@]}" "syslog+tls://127.0.0.1:$port"
grep -q "warning" "$dir/lerr" && fail "a warning for a key of mode 600: $(cat "$dir/lerr")"
stop_logd
ok "a --tls-key readable by others: warned; of mode 600: not"

# --- into sluice-logd --listen-tls --tls-client-ca
out=$dir/out.log
start_logd --tls-client-ca "$pki/ca.crt" "$out"
n=50000
send "$n" "${client[@]}" "syslog+tls://127.0.0.1:$port"
[ "$st" -eq 0 ] || fail "into sluice-logd: exit $st: $(cat "$dir/lerr")"
grep -q "sluice-log: $n lines, $n sent, 0 dropped, 0 reconnects, 0 maybe lost" "$dir/lerr" ||
  fail "into sluice-logd: the counts: $(cat "$dir/lerr")"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge "$n" ] && break; sleep 0.05; done
check_order "$out" "$n" "into sluice-logd"
# By name: localhost, verified against the certificate's DNS name.
send 10 "${client[@]}" "syslog+tls://localhost:$port"
[ "$st" -eq 0 ] || fail "to localhost: exit $st: $(cat "$dir/lerr")"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge $((n + 10)) ] && break; sleep 0.05; done
[ "$(lines "$out")" -eq $((n + 10)) ] || fail "to localhost: $(lines "$out") lines, not $((n + 10))"
ok "into sluice-logd --listen-tls --tls-client-ca: all $n lines, each once, in order; by name too"

# Trusting another CA; verifying a name the certificate does not carry.
before=$(lines "$out")
t0=$SECONDS
send 100 --tls-ca "$pki/other-ca.crt" --tls-cert "$pki/client.crt" --tls-key "$pki/client.key" \
  "syslog+tls://127.0.0.1:$port"
[ "$st" -eq 1 ] || fail "another CA: exit $st, not 1: $(cat "$dir/lerr")"
grep -q "TLS: certificate verify failed: .*; not trying again" "$dir/lerr" ||
  fail "another CA: no reason: $(cat "$dir/lerr")"
grep -q "100 of 100 messages not sent" "$dir/lerr" || fail "another CA: not all dropped: $(cat "$dir/lerr")"
[ $((SECONDS - t0)) -le $((10 * scale)) ] || fail "another CA: took $((SECONDS - t0)) s (retried?)"
send 100 "${client[@]}" --tls-name elsewhere.example "syslog+tls://127.0.0.1:$port"
[ "$st" -eq 1 ] || fail "another name: exit $st, not 1: $(cat "$dir/lerr")"
grep -q "TLS: certificate verify failed: Hostname/IP does not match certificate's altnames (ERR_TLS_CERT_ALTNAME_INVALID)" \
  "$dir/lerr" || fail "another name: no reason: $(cat "$dir/lerr")"
# A client certificate of another CA: in TLS 1.3 sluice-logd refuses it
# after the client's handshake is done; its alert must reach sluice-log
# (not an RST first, which made it retry for ever).
t0=$SECONDS
send 100 --tls-ca "$pki/ca.crt" --tls-cert "$pki/other-client.crt" --tls-key "$pki/other-client.key" \
  "syslog+tls://127.0.0.1:$port"
[ "$st" -eq 1 ] || fail "a client certificate of another CA: exit $st, not 1: $(cat "$dir/lerr")"
grep -q "TLS: the receiver refused this client's certificate: tlsv1 alert unknown ca .*; not trying again" "$dir/lerr" ||
  fail "a client certificate of another CA: no reason: $(cat "$dir/lerr")"
# The first batch was handed to TLS before the refusal came: maybe lost,
# as against rsyslogd, and not sent again.
grep -q "sluice-log: 100 lines, .* 0 reconnects" "$dir/lerr" ||
  fail "a client certificate of another CA: reconnected: $(cat "$dir/lerr")"
[ $((SECONDS - t0)) -le $((10 * scale)) ] || fail "a client certificate of another CA: took $((SECONDS - t0)) s (retried?)"
kill -0 "$lp" 2>/dev/null || fail "sluice-logd is gone after refusing a client: $(cat "$dir/err")"
sleep 0.3
[ "$(lines "$out")" -eq "$before" ] || fail "a refused receiver got $(( $(lines "$out") - before )) lines"
stop_logd
ok "trusting another CA, verifying another name, a client certificate of another CA: exit 1, the reason, nothing delivered"

# --- into rsyslogd: imtcp with the ossl driver, a client certificate required
ossl=
for d in /usr/lib/x86_64-linux-gnu/rsyslog /usr/lib/rsyslog; do [ -e "$d/lmnsd_ossl.so" ] && ossl=1; done
if [ -x /usr/sbin/rsyslogd ] && [ -n "$ossl" ]; then
  rout=$dir/rs.log
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$dir/rs.conf" <<CONF
global(workDirectory="$dir"
       DefaultNetstreamDriver="ossl"
       DefaultNetstreamDriverCAFile="$pki/ca.crt"
       DefaultNetstreamDriverCertFile="$pki/server.crt"
       DefaultNetstreamDriverKeyFile="$pki/server.key")
main_queue(queue.type="Direct")
module(load="imtcp" StreamDriver.Name="ossl" StreamDriver.Mode="1" StreamDriver.AuthMode="x509/certvalid")
template(name="m" type="string" string="%msg%\n")
ruleset(name="r") { action(type="omfile" file="$rout" template="m") }
input(type="imtcp" address="127.0.0.1" port="$rport" ruleset="r")
CONF
  # rsyslogd signals its parent: a subshell of its own takes it.
  (trap '' TERM; exec /usr/sbin/rsyslogd -n -f "$dir/rs.conf" -i "$dir/rs.pid") 2> "$dir/rs.err" &
  rp=$!
  pids+=("$rp")
  for _ in $(seq $((400 * scale))); do
    python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$rport" \
      2>/dev/null && break
    sleep 0.05
  done
  n=20000
  send "$n" "${client[@]}" "syslog+tls://127.0.0.1:$rport"
  [ "$st" -eq 0 ] || fail "into rsyslogd: exit $st: $(cat "$dir/lerr"; tail -5 "$dir/rs.err")"
  for _ in $(seq $((400 * scale))); do [ "$(lines "$rout")" -ge "$n" ] && break; sleep 0.05; done
  check_order "$rout" "$n" "into rsyslogd (imtcp, ossl, x509/certvalid)"
  ok "into rsyslogd imtcp (ossl, x509/certvalid): all $n lines, in order"

  send 100 --tls-ca "$pki/other-ca.crt" --tls-cert "$pki/client.crt" --tls-key "$pki/client.key" \
    "syslog+tls://127.0.0.1:$rport"
  [ "$st" -ne 0 ] || fail "rsyslogd, another CA: exit 0: $(cat "$dir/lerr")"
  grep -q "TLS: certificate verify failed: .*; not trying again" "$dir/lerr" ||
    fail "rsyslogd, another CA: no reason: $(cat "$dir/lerr")"
  sleep 0.5
  [ "$(lines "$rout")" -eq "$n" ] || fail "rsyslogd, another CA: $(( $(lines "$rout") - n )) lines delivered"
  ok "into rsyslogd trusting another CA: exit $st, the reason said, nothing delivered"

  # No client certificate: rsyslogd refuses it after the TLS 1.3 handshake
  # (its alert, or the reset that follows it, whichever the client sees first).
  send 100 --tls-ca "$pki/ca.crt" "syslog+tls://127.0.0.1:$rport"
  [ "$st" -ne 0 ] || fail "rsyslogd, no client certificate: exit 0: $(cat "$dir/lerr")"
  grep -qE "certificate required|reset the connection" "$dir/lerr" ||
    fail "rsyslogd, no client certificate: no reason: $(cat "$dir/lerr")"
  sleep 0.5
  [ "$(lines "$rout")" -eq "$n" ] || fail "rsyslogd, no client certificate: $(( $(lines "$rout") - n )) lines delivered"
  ok "into rsyslogd without a client certificate: exit $st, refused, nothing delivered"
  kill -TERM "$rp"; wait "$rp" || true
else
  echo "skip: rsyslogd imtcp over TLS (apt-get install rsyslog rsyslog-openssl)"
fi

# --- relp+tls:// into rsyslogd's imrelp with tls="on" (librelp's OpenSSL), certvalid
if have_imrelp; then
  rout=$dir/rr.log
  start_imrelp_tls "$rout"
  rp=$rs
  n=20000
  send "$n" "${client[@]}" "relp+tls://127.0.0.1:$rport"
  [ "$st" -eq 0 ] || fail "relp+tls into rsyslogd: exit $st: $(cat "$dir/lerr"; tail -5 "$dir/rr.err")"
  grep -q "sluice-log: $n lines, $n acked, 0 resent, 0 dropped" "$dir/lerr" || fail "relp+tls: the counts: $(cat "$dir/lerr")"
  check_order "$rout" "$n" "relp+tls into rsyslogd (imrelp, tls, certvalid)"
  ok "relp+tls:// into rsyslogd imrelp (tls, certvalid): all $n lines acknowledged, in order"
  send 100 --tls-ca "$pki/other-ca.crt" --tls-cert "$pki/client.crt" --tls-key "$pki/client.key" \
    "relp+tls://127.0.0.1:$rport"
  [ "$st" -eq 1 ] || fail "relp+tls, another CA: exit $st, not 1: $(cat "$dir/lerr")"
  grep -q "TLS: certificate verify failed: .*; not trying again" "$dir/lerr" ||
    fail "relp+tls, another CA: no reason: $(cat "$dir/lerr")"
  sleep 0.5
  [ "$(lines "$rout")" -eq "$n" ] || fail "relp+tls, another CA: $(( $(lines "$rout") - n )) lines delivered"
  ok "relp+tls:// trusting another CA: exit 1, the reason said, nothing delivered"
  kill -TERM "$rp"; wait "$rp" || true
else
  echo "skip: rsyslogd imrelp over TLS (apt-get install rsyslog rsyslog-relp)"
fi

echo "log_tls: $pass passed"
