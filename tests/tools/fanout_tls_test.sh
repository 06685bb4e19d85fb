#!/usr/bin/env bash
# sluice-fanout --listen-tls with --tls-client-ca, beside --listen: a
# subscriber with a certificate of that CA (openssl s_client, Node's tls)
# and one on the plain port get every line, exactly; a subscriber with a
# certificate of another CA, one without a certificate and a plaintext
# client on the TLS port get no line, are said with the reason, and
# sluice-fanout goes on; the --tls-* usage errors (exit 2) and the warning
# for a key others may read. Loopback only; every wait is bounded.
#
#   tests/tools/fanout_tls_test.sh SLUICE_FANOUT MAKE_CA_SH
set -euo pipefail
fan=$1
make_ca=$(realpath "$2")
. "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"
tls=(--tls-cert "$pki/server.crt" --tls-key "$pki/server.key")

# --- usage: exit 2, with the reason (the checks sluice-logd shares)
usage() {  # expected message, args...
  local want=$1 st=0
  shift
  timeout $((20 * scale)) "$fan" "$@" < /dev/null > /dev/null 2> "$dir/uerr" || st=$?
  [ "$st" -eq 2 ] || fail "sluice-fanout $* exited $st, not 2: $(cat "$dir/uerr")"
  grep -qF -- "$want" "$dir/uerr" || fail "sluice-fanout $*: no '$want' in: $(cat "$dir/uerr")"
}
usage "--listen ADDR (or --listen-tls HOST:PORT) is required" --tls-cert "$pki/server.crt"
usage "--listen-tls needs --tls-cert FILE" --listen-tls 127.0.0.1:0 --tls-key "$pki/server.key"
usage "--listen-tls needs --tls-key FILE" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt"
usage "--tls-key $dir/nothing.key: No such file or directory" \
  --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$dir/nothing.key"
usage "--tls-client-ca $dir/nothing.crt: No such file or directory" \
  --listen-tls 127.0.0.1:0 "${tls[@]}" --tls-client-ca "$dir/nothing.crt"
usage "--tls-cert $dir: Is a directory" --listen-tls 127.0.0.1:0 --tls-cert "$dir" --tls-key "$pki/server.key"
usage "--tls-cert, --tls-key and --tls-client-ca go with --listen-tls" --listen 127.0.0.1:0 "${tls[@]}"
usage "--listen-tls wants HOST:PORT" --listen-tls unix:/tmp/x "${tls[@]}"
usage "--listen-tls wants a port from 0 to 65535, got '70000'" --listen-tls 127.0.0.1:70000 "${tls[@]}"
usage "key values mismatch" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" --tls-key "$pki/client.key"
# A FIFO (nobody writes to it): refused at once, not opened and waited on.
mkfifo "$dir/fifo.key"
usage "--tls-key $dir/fifo.key: not a regular file" --listen-tls 127.0.0.1:0 --tls-cert "$pki/server.crt" \
  --tls-key "$dir/fifo.key"
ok "usage: --tls-cert/--tls-key missing, a missing file, a directory, a FIFO, a bad address, a mismatched key: exit 2 with the reason"

# --- a key others may read: a warning, and it still serves (the input at
# /dev/null ends at once: exit 0)
chmod 644 "$pki/server.key"
st=0
timeout $((20 * scale)) "$fan" --listen-tls 127.0.0.1:0 "${tls[@]}" < /dev/null 2> "$dir/werr" || st=$?
[ "$st" -eq 0 ] || fail "a key of mode 644: exit $st: $(cat "$dir/werr")"
grep -q "sluice-fanout: warning: --tls-key $pki/server.key may be read by others (mode 644); chmod 600 it" "$dir/werr" ||
  fail "no warning for a key of mode 644: $(cat "$dir/werr")"
chmod 600 "$pki/server.key"
timeout $((20 * scale)) "$fan" --listen-tls 127.0.0.1:0 "${tls[@]}" < /dev/null 2> "$dir/werr" || fail "mode 600: $(cat "$dir/werr")"
grep -q warning "$dir/werr" && fail "a warning for a key of mode 600: $(cat "$dir/werr")"
ok "a --tls-key readable by others: warned; of mode 600: not"

# --- who gets the lines
have_node=
node --version > /dev/null 2>&1 && have_node=1
subs=2
[ -n "$have_node" ] && subs=3
mkfifo "$dir/in"
"$fan" --listen 127.0.0.1:0 --listen-tls 127.0.0.1:0 "${tls[@]}" --tls-client-ca "$pki/ca.crt" \
  --wait-for "$subs" --stats --json < "$dir/in" 2> "$dir/err" &
fp=$!
pids+=("$fp")
exec 3> "$dir/in"  # the input stays open until the test closes it (the children get no copy: 3>&-)
for _ in $(seq $((200 * scale))); do [ "$(grep -c 'listening on' "$dir/err")" -ge 2 ] && break; sleep 0.05; done
tport=$(sed -n 's/^sluice-fanout: listening on 127.0.0.1:\([0-9]*\) (TLS)$/\1/p' "$dir/err")
pport=$(sed -n 's/^sluice-fanout: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/err")
[ -n "$tport" ] && [ -n "$pport" ] || fail "no listening lines: $(cat "$dir/err")"

# A subscriber with openssl s_client: -quiet ignores the end of its stdin,
# so it reads until sluice-fanout ends the connection.
s_client() {  # out, args...
  local out=$1
  shift
  timeout $((60 * scale)) openssl s_client -connect "127.0.0.1:$tport" -CAfile "$pki/ca.crt" \
    -verify_return_error -quiet "$@" < /dev/null > "$out" 2>> "$dir/sc.err" 3>&- || true
}
s_client "$dir/good.out" -cert "$pki/client.crt" -key "$pki/client.key" 3>&- &
pids+=($!)
sc=$!
# Node's tls: what it reads, to a file, until the end.
cat > "$dir/sub.mjs" <<'JS'
import { readFileSync, createWriteStream } from 'node:fs';
import tls from 'node:tls';
const [port, dir, out] = process.argv.slice(2);
const s = tls.connect({ port: Number(port), host: '127.0.0.1', ca: readFileSync(`${dir}/ca.crt`),
  key: readFileSync(`${dir}/client.key`), cert: readFileSync(`${dir}/client.crt`) });
s.on('error', (e) => { console.error(`error ${e.code} ${e.message}`); process.exitCode = 1; });
s.pipe(createWriteStream(out));
s.on('end', () => console.error(`end authorized=${s.authorized} ${s.getProtocol()}`));
JS
if [ -n "$have_node" ]; then
  timeout $((60 * scale)) node "$dir/sub.mjs" "$tport" "$pki" "$dir/node.out" 2> "$dir/node.err" 3>&- &
  np=$!
  pids+=("$np")
else
  echo "skip: Node's tls as a subscriber (node not found)"
fi
timeout $((60 * scale)) python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
with open(sys.argv[2], "wb") as f:
    while True:
        b = s.recv(65536)
        if not b: break
        f.write(b)
' "$pport" "$dir/plain.out" 3>&- &
pp=$!
pids+=("$pp")

lines() { cat "$1" 2>/dev/null | wc -l; }
n1=20000 n2=30000
python3 -c 'import sys; sys.stdout.write("".join("line %06d of the first part, some text to fill it\n" % i for i in range(int(sys.argv[1]))))' \
  "$n1" > "$dir/part1"
python3 -c 'import sys; sys.stdout.write("".join("line %06d of the second part\n" % i for i in range(int(sys.argv[1]))))' \
  "$n2" > "$dir/part2"
cat "$dir/part1" >&3
good_outs=("$dir/good.out" "$dir/plain.out")
[ -n "$have_node" ] && good_outs+=("$dir/node.out")
for f in "${good_outs[@]}"; do
  for _ in $(seq $((400 * scale))); do [ "$(lines "$f")" -ge "$n1" ] && break; sleep 0.05; done
  [ "$(lines "$f")" -ge "$n1" ] || fail "$f: $(lines "$f") of $n1 lines: $(cat "$dir/err" "$dir/sc.err")"
done

# Another CA's certificate, none, plaintext: on the TLS port, each kept
# open (s_client -quiet, a reader to the end) while the second part flows,
# so that one let in would get its lines; each must get none.
s_client "$dir/other.out" -cert "$pki/other-client.crt" -key "$pki/other-client.key" 3>&- &
bad=($!)
# Its refusal first, the one said (those within 10 s after are counted).
for _ in $(seq $((100 * scale))); do grep -q "TLS handshake failed" "$dir/err" && break; sleep 0.05; done
s_client "$dir/nocert.out" 3>&- &
bad+=($!)
timeout $((60 * scale)) python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"hello, I speak plaintext\n")
got = b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        got += b
except OSError:
    pass
open(sys.argv[2], "wb").write(got)
' "$tport" "$dir/plaintext.out" 3>&- &
bad+=($!)
pids+=("${bad[@]}")
# The three refusals (one said, the rest counted), or long enough for one
# let in to be a subscriber.
for _ in $(seq $((100 * scale))); do
  alive=0
  for p in "${bad[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
  [ "$alive" -eq 0 ] && break
  sleep 0.05
done
kill -0 "$fp" 2> /dev/null || fail "sluice-fanout is gone: $(cat "$dir/err")"

# sluice-fanout goes on: the rest of the lines, then the end of the input.
cat "$dir/part2" >&3
exec 3>&-
st=0
for _ in $(seq $((600 * scale))); do kill -0 "$fp" 2> /dev/null || break; sleep 0.05; done
kill -0 "$fp" 2> /dev/null && fail "sluice-fanout still running after the end of its input: $(tail -3 "$dir/err")"
wait "$fp" || st=$?
[ "$st" -eq 0 ] || fail "sluice-fanout exited $st: $(cat "$dir/err")"
wait "$sc" || true
[ -n "$have_node" ] && { wait "$np" || fail "Node's subscriber: $(cat "$dir/node.err")"; }
wait "$pp" || true
for p in "${bad[@]}"; do wait "$p" || true; done
for f in other nocert plaintext; do
  grep -q "line " "$dir/$f.out" && fail "$f got lines: $(grep -c "line " "$dir/$f.out")"
done
grep -q "TLS handshake failed: unable to verify the first certificate; connection closed, no line sent" "$dir/err" ||
  fail "another CA's certificate: not refused with the reason: $(cat "$dir/err")"
cat "$dir/part1" "$dir/part2" > "$dir/all"
for f in "${good_outs[@]}"; do
  cmp -s "$dir/all" "$f" || fail "$f is not the input: $(lines "$f") lines, $(cmp "$dir/all" "$f" 2>&1)"
done
[ -n "$have_node" ] && { grep -q "end authorized=true TLSv1.3" "$dir/node.err" || fail "Node: $(cat "$dir/node.err")"; }
totals=$(tail -1 "$dir/err")
grep -q "\"subscribers\":$subs,.*\"tls_refused\":3}" <<< "$totals" || fail "the totals: $totals"
ok "s_client$([ -n "$have_node" ] && echo ", Node's tls") with a certificate of --tls-client-ca and a plain subscriber: all $((n1 + n2)) lines, exactly"
ok "another CA's certificate, no certificate, plaintext on the TLS port: no line, refused with the reason, sluice-fanout goes on"

# --- connections that never send a ClientHello: bounded by --idle-timeout,
# and with --max-connections they keep no subscriber out
mkfifo "$dir/in2"
"$fan" --listen-tls 127.0.0.1:0 "${tls[@]}" --tls-client-ca "$pki/ca.crt" --max-connections 2 \
  --idle-timeout $((2 * scale)) --wait-for 1 < "$dir/in2" 2> "$dir/err2" &
fp=$!
pids+=("$fp")
exec 3> "$dir/in2"
for _ in $(seq $((200 * scale))); do grep -q 'listening on' "$dir/err2" && break; sleep 0.05; done
tport=$(sed -n 's/^sluice-fanout: listening on 127.0.0.1:\([0-9]*\) (TLS)$/\1/p' "$dir/err2")
[ -n "$tport" ] || fail "no listening line: $(cat "$dir/err2")"
bare_connects "$tport" 2 "$dir/bare"
sleep 0.3
s_client "$dir/hs.out" -cert "$pki/client.crt" -key "$pki/client.key" 3>&- &
sc=$!
pids+=("$sc")
# Read once the subscriber is in (--wait-for 1): it gets every line.
seq -f 'hs line %g' 1 20 >&3
exec 3>&-
for _ in $(seq $((200 * scale))); do kill -0 "$fp" 2> /dev/null || break; sleep 0.05; done
kill -0 "$fp" 2> /dev/null && fail "a subscriber behind two bare connects never joined: $(cat "$dir/err2")"
st=0
wait "$fp" || st=$?
[ "$st" -eq 0 ] || fail "sluice-fanout exited $st: $(cat "$dir/err2")"
wait "$sc" || true
[ "$(seq -f 'hs line %g' 1 20)" = "$(cat "$dir/hs.out")" ] || fail "the subscriber got: $(head -3 "$dir/hs.out")"
for _ in $(seq $((600 * scale))); do [ -s "$dir/bare" ] && break; sleep 0.05; done
grep -q open "$dir/bare" && fail "a bare connect still open after 20 s: $(cat "$dir/bare")"
grep -q "TLS handshake failed: TLS handshake cut off: too many connections in their handshake, this one the oldest" \
  "$dir/err2" || fail "the bare connect cut off for the subscriber: not said: $(cat "$dir/err2")"
ok "bare TCP connects with --max-connections 2: a subscriber gets in past them and gets every line"

# The handshake deadline: --idle-timeout when shorter than 10 s.
mkfifo "$dir/in3"
"$fan" --listen-tls 127.0.0.1:0 "${tls[@]}" --idle-timeout $((1000 * scale))ms < "$dir/in3" 2> "$dir/err3" &
fp=$!
pids+=("$fp")
exec 3> "$dir/in3"
for _ in $(seq $((200 * scale))); do grep -q 'listening on' "$dir/err3" && break; sleep 0.05; done
tport=$(sed -n 's/^sluice-fanout: listening on 127.0.0.1:\([0-9]*\) (TLS)$/\1/p' "$dir/err3")
[ -n "$tport" ] || fail "no listening line: $(cat "$dir/err3")"
bare_connects "$tport" 1 "$dir/bare3"
for _ in $(seq $((600 * scale))); do [ -s "$dir/bare3" ] && break; sleep 0.05; done
python3 - "$dir/bare3" "$scale" <<'PY' || fail "a bare connect closed after: $(cat "$dir/bare3")"
import sys
t, scale = open(sys.argv[1]).read().split()[0], float(sys.argv[2])
assert t != "open" and 0.8 * scale <= float(t) <= 1 * scale + 5, t
PY
grep -q "TLS handshake failed: TLS handshake timeout" "$dir/err3" || fail "the deadline: not said: $(cat "$dir/err3")"
exec 3>&-
wait "$fp" || fail "sluice-fanout: $(cat "$dir/err3")"
ok "a bare TCP connect is cut off at the handshake deadline, --idle-timeout 1000ms (not 120 s)"

echo "fanout_tls: $pass passed"
