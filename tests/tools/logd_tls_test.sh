#!/usr/bin/env bash
# sluice-logd --listen-tls (RFC 5425: octet-counted syslog over TLS) with
# --tls-client-ca: a client with a certificate of that CA (openssl s_client)
# has every line written once; a client with a certificate of another CA,
# one without a certificate, and a plaintext client have nothing written
# and sluice-logd goes on; the usage errors of the --tls-* options (exit 2)
# and the warning for a key others may read; Python senders that unwrap()
# (close_notify, then wait for sluice-logd's) each get theirs back, every
# line written once; rsyslog's omfwd over TLS
# (the ossl stream driver, x509/name) into it. Loopback only; every wait is
# bounded.
#
#   tests/tools/logd_tls_test.sh SLUICE_LOGD MAKE_CA_SH
set -euo pipefail
logd=$1
make_ca=$(realpath "$2")
listen_kind=TLS
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/rsyslog.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"

# --- usage: exit 2, with the reason
usage() {  # expected message, args...
  local want=$1 st=0
  shift
  timeout $((20 * scale)) "$logd" "$@" "$dir/u.log" > /dev/null 2> "$dir/uerr" || st=$?
  [ "$st" -eq 2 ] || fail "sluice-logd $* exited $st, not 2: $(cat "$dir/uerr")"
  grep -qF -- "$want" "$dir/uerr" || fail "sluice-logd $*: no '$want' in: $(cat "$dir/uerr")"
}
usage "--listen-tls needs --tls-cert FILE" --listen-tls 127.0.0.1:0 --tls-key "$pki/server.key"
usage "--listen-tls needs --tls-key FILE" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt"
usage "--tls-key $dir/nothing.key: No such file or directory" \
  --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$dir/nothing.key"
usage "--tls-client-ca $dir/nothing.crt: No such file or directory" \
  --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" --tls-client-ca "$dir/nothing.crt"
usage "--tls-cert $dir: Is a directory" --listen-tls 127.0.0.1:0 --tls-cert "$dir" --tls-key "$pki/server.key"
usage "--tls-cert, --tls-key and --tls-client-ca go with --listen-tls" \
  --listen 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key"
usage "--listen-tls wants HOST:PORT" --listen-tls unix:/tmp/x --tls-cert "$pki/server.crt" --tls-key "$pki/server.key"
# A key that does not go with the certificate: OpenSSL's reason.
usage "key values mismatch" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/client.key"
# A FIFO (nobody writes to it): refused at once, not opened and waited on.
mkfifo "$dir/fifo.crt"
usage "--tls-cert $dir/fifo.crt: not a regular file" --listen-tls 127.0.0.1:0 --tls-cert "$dir/fifo.crt" \
  --tls-key "$pki/server.key"
usage "--tls-client-ca $dir/fifo.crt: not a regular file" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" \
  --tls-key "$pki/server.key" --tls-client-ca "$dir/fifo.crt"
ok "usage: --tls-cert/--tls-key missing, a missing file, a FIFO, a mismatched key: exit 2 with the reason"

lines() { cat "$1" 2>/dev/null | wc -l; }
# N octet-counted frames: "LEN <14>1 ... TAG I".
frames() {  # tag, count
  python3 - "$1" "$2" <<'PY'
import sys
tag, n = sys.argv[1].encode(), int(sys.argv[2])
try:
    sys.stdout.buffer.write(b"".join(b"%d %s" % (len(m), m) for m in
        (b"<14>1 2026-12-01T00:00:00.000001Z h app - - - %s %06d" % (tag, i) for i in range(n))))
except BrokenPipeError:  # a refused client's s_client is gone
    pass
PY
}
# openssl s_client with "$@" sends stdin and ends at its EOF.
s_client() {
  timeout $((20 * scale)) openssl s_client -connect "127.0.0.1:$port" -CAfile "$pki/ca.crt" -verify_return_error \
    -quiet -no_ign_eof "$@" > /dev/null 2>> "$dir/sc.err" || true
}

# --- the key readable by others: a warning, and it still serves
chmod 644 "$pki/server.key"
start --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" "$dir/w.log"
grep -q "warning: --tls-key $pki/server.key may be read by others (mode 644)" "$dir/err" ||
  fail "no warning for a key of mode 644: $(cat "$dir/err")"
stop
chmod 600 "$pki/server.key"
start --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" "$dir/w.log"
grep -q "warning" "$dir/err" && fail "a warning for a key of mode 600: $(cat "$dir/err")"
stop
ok "a --tls-key readable by others: warned; of mode 600: not"

# --- --tls-client-ca: who may write
out=$dir/out.log
start --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" \
  --tls-client-ca "$pki/ca.crt" --stats --json "$out"
n=2000
frames good "$n" | s_client -cert "$pki/client.crt" -key "$pki/client.key"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge "$n" ] && break; sleep 0.05; done
[ "$(lines "$out")" -eq "$n" ] || fail "a good client: $(lines "$out") of $n lines: $(cat "$dir/err" "$dir/sc.err")"
python3 - "$out" "$n" <<'PY' || fail "a good client: the lines are not each once, in order"
import sys
got = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
want = [b"<14>1 2026-12-01T00:00:00.000001Z h app - - - good %06d" % i for i in range(int(sys.argv[2]))]
assert got == want, (len(got), got[:2])
PY
ok "a client with a certificate of --tls-client-ca: all $n lines, each once, in order"

# A certificate of another CA, none at all, plaintext: nothing written.
frames other 50 | s_client -cert "$pki/other-client.crt" -key "$pki/other-client.key" || true
frames nocert 50 | s_client || true
frames plain 50 | timeout $((10 * scale)) python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
s.settimeout(5)
try:
    while s.recv(4096): pass
except OSError: pass
' "$port" || true
kill -0 "$lp" || fail "sluice-logd is gone: $(cat "$dir/err")"
# sluice-logd goes on: a good client again.
frames again 10 | s_client -cert "$pki/client.crt" -key "$pki/client.key"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge $((n + 10)) ] && break; sleep 0.05; done
# A client that connects and sends nothing: its handshake would wait 10 s;
# SIGTERM does not wait for it.
python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(120)
' "$port" &
idler=$!
pids+=("$idler")
sleep 0.3
t0=$SECONDS
stop
[ $((SECONDS - t0)) -le $((5 * scale)) ] || fail "SIGTERM waited $((SECONDS - t0)) s for a handshake"
kill "$idler" 2>/dev/null || true
grep -qE " (other|nocert|plain) " "$out" && fail "a refused client's line was written: $(grep -E ' (other|nocert|plain) ' "$out" | head -3)"
[ "$(lines "$out")" -eq $((n + 10)) ] || fail "after the refused: $(lines "$out") lines, not $((n + 10)): $(cat "$dir/err")"
# The first refusal is said with its reason (the rest within 10 s are
# counted in the totals).
grep -q "TLS handshake failed: unable to verify the first certificate; connection closed, nothing written" "$dir/err" ||
  fail "another CA's certificate: no refusal with the reason: $(cat "$dir/err")"
grep -q '"tls_refused":3}' "$dir/err" || fail "not 3 TLS refused in the totals: $(tail -1 "$dir/err")"
ok "another CA's certificate, no certificate, plaintext: refused with the reason, nothing written, sluice-logd goes on"

# --- connections that never send a ClientHello: bounded by --idle-timeout,
# and with --max-connections they keep no sender out
out=$dir/hs.log
start --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" \
  --tls-client-ca "$pki/ca.crt" --max-connections 2 --idle-timeout $((2 * scale))s --stats "$out"
bare_connects "$port" 2 "$dir/bare1"
sleep 0.3
# A real sender gets in, past the two, within a bounded time.
t0=$SECONDS
frames hs 20 | s_client -cert "$pki/client.crt" -key "$pki/client.key"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge 20 ] && break; sleep 0.05; done
[ "$(lines "$out")" -eq 20 ] || fail "a sender behind two bare connects: $(lines "$out") of 20 lines: $(cat "$dir/err")"
[ $((SECONDS - t0)) -le $((10 * scale)) ] || fail "a sender behind two bare connects took $((SECONDS - t0)) s"
# Each bare connect is closed: the oldest for the sender, the other at the
# handshake deadline (--idle-timeout 2s, shorter than 10 s), not at 120 s.
for _ in $(seq $((600 * scale))); do [ -s "$dir/bare1" ] && break; sleep 0.05; done
[ -s "$dir/bare1" ] || fail "the bare connects' report is missing"
grep -q open "$dir/bare1" && fail "a bare connect still open after 20 s: $(cat "$dir/bare1")"
python3 - "$dir/bare1" $((2 * scale)) <<'PY' || fail "bare connects closed after: $(tr '\n' ' ' < "$dir/bare1")"
import sys
t = sorted(float(x) for x in open(sys.argv[1]).read().split())
bound = float(sys.argv[2])
assert t[-1] >= bound * 0.8 and t[-1] <= bound + 5, t  # the handshake deadline: the idle timeout
PY
grep -q "TLS handshake failed: TLS handshake cut off: too many connections in their handshake, this one the oldest" "$dir/err" ||
  fail "the bare connect cut off for the sender: not said: $(cat "$dir/err")"
# Renewed: two more bare connects while a sender sends, again and again.
bare_connects "$port" 2 "$dir/bare2"
frames hs2 20 | s_client -cert "$pki/client.crt" -key "$pki/client.key"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge 40 ] && break; sleep 0.05; done
[ "$(lines "$out")" -eq 40 ] || fail "a second sender behind two bare connects: $(lines "$out") of 40 lines: $(cat "$dir/err")"
stop
ok "bare TCP connects: closed at the handshake deadline (--idle-timeout), and a sender gets in past them with --max-connections 2"

# --- senders that unwrap(): each sends its close_notify and waits for
# sluice-logd's, without closing TCP. sluice-logd pauses its connections
# while FILE is behind; a close_notify read while a connection was paused
# used to be dropped, and that sender waited for ever (its next
# connection's lines never sent).
out=$dir/unwrap.log
start --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" "$out"
senders=()
for k in 1 2 3 4; do
  timeout $((60 * scale)) python3 - "$port" "$pki/ca.crt" "u$k" $((10 * scale)) > "$dir/unwrap$k.out" 2>&1 <<'PY' &
import socket, ssl, sys
port, ca, tag, wait = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
ctx = ssl.create_default_context(cafile=ca)
for c in range(2):
    t = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    t.sendall(b"".join(("<14>1 2026-12-01T00:00:00Z h app - - - %s %d %06d " % (tag, c, i)).encode().ljust(149, b"x")
                       + b"\n" for i in range(2000)))
    t.settimeout(wait)
    try:
        t.unwrap().close()
    except OSError as e:
        sys.exit("connection %d: no close_notify back: %r" % (c, e))
print("ok")
PY
  senders+=($!)
done
pids+=("${senders[@]}")
bad=
for k in 1 2 3 4; do wait "${senders[$((k - 1))]}" || bad+=" u$k: $(cat "$dir/unwrap$k.out")"; done
[ -z "$bad" ] || fail "senders that unwrap(): no close_notify back:$bad"
for _ in $(seq $((200 * scale))); do [ "$(lines "$out")" -ge 16000 ] && break; sleep 0.05; done
[ "$(lines "$out")" -eq 16000 ] || fail "senders that unwrap(): $(lines "$out") of 16000 lines: $(cat "$dir/err")"
[ "$(sort -u "$out" | wc -l)" -eq 16000 ] || fail "senders that unwrap(): a line written twice"
stop
ok "4 senders of 2 connections each that unwrap(): each gets sluice-logd's close_notify, all 16,000 lines written, each once"

# --- rsyslog's omfwd over TLS (ossl, x509/name) into sluice-logd --tls-client-ca
ossl=
for d in /usr/lib/x86_64-linux-gnu/rsyslog /usr/lib/rsyslog; do [ -e "$d/lmnsd_ossl.so" ] && ossl=1; done
if [ -x /usr/sbin/rsyslogd ] && [ -n "$ossl" ]; then
  out=$dir/rs.log
  start --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/server.key" \
    --tls-client-ca "$pki/ca.crt" "$out"
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  total=20000
  cat > "$dir/rs.conf" <<CONF
global(workDirectory="$dir"
       DefaultNetstreamDriver="ossl"
       DefaultNetstreamDriverCAFile="$pki/ca.crt"
       DefaultNetstreamDriverCertFile="$pki/client.crt"
       DefaultNetstreamDriverKeyFile="$pki/client.key")
module(load="imptcp")
template(name="fwd" type="string" string="%rawmsg%")
ruleset(name="r") {
  action(type="omfwd" target="127.0.0.1" port="$port" protocol="tcp" TCP_Framing="octet-counted"
         StreamDriver="ossl" StreamDriverMode="1" StreamDriverAuthMode="x509/name"
         StreamDriverPermittedPeers="localhost" template="fwd"
         action.resumeRetryCount="-1" action.resumeInterval="1")
}
input(type="imptcp" address="127.0.0.1" port="$rport" ruleset="r")
CONF
  # rsyslogd signals its parent: a subshell of its own takes it.
  (trap '' TERM; exec /usr/sbin/rsyslogd -n -f "$dir/rs.conf" -i "$dir/rs.pid") 2> "$dir/rs.err" &
  rp=$!
  pids+=("$rp")
  send_octet "$rport" "$total" omfwd || fail "the feeder failed"
  for _ in $(seq $((600 * scale))); do [ "$(lines "$out")" -ge "$total" ] && break; sleep 0.05; done
  kill -TERM "$rp"; wait "$rp" || true
  stop
  python3 - "$out" "$total" <<'PY' || fail "omfwd over TLS: $(tail -5 "$dir/rs.err"; tail -5 "$dir/err")"
import sys
got = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
want = [b"<14>1 2026-12-01T00:00:00.000001Z h app - - - omfwd %06d" % i for i in range(int(sys.argv[2]))]
assert got == want, (len(got), got[:2])
PY
  ok "rsyslog omfwd over TLS (ossl, x509/name) into sluice-logd --tls-client-ca: all $total lines, each once"
else
  echo "skip: rsyslog omfwd over TLS (apt-get install rsyslog rsyslog-openssl)"
fi

echo "logd_tls: $pass passed"
