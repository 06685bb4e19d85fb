# rsyslogd in the tools tests: as the sender of the tests that receive
# (sluice-logd, a relay), a feeder of octet-counted messages into it, and as
# a RELP-over-TLS receiver. Sourced after prelude.sh:
#   . "$(dirname "${BASH_SOURCE[0]}")/rsyslog.sh"

# Whether rsyslogd and its omrelp are installed (package rsyslog-relp).
have_omrelp() {
  [ -x /usr/sbin/rsyslogd ] && { [ -e /usr/lib/x86_64-linux-gnu/rsyslog/omrelp.so ] || [ -e /usr/lib/rsyslog/omrelp.so ]; }
}

# Whether rsyslogd and its imrelp are installed (package rsyslog-relp).
have_imrelp() {
  [ -x /usr/sbin/rsyslogd ] && { [ -e /usr/lib/x86_64-linux-gnu/rsyslog/imrelp.so ] || [ -e /usr/lib/rsyslog/imrelp.so ]; }
}

# start_omrelp PORT WINDOW BATCH: rsyslogd reading octet-counted messages on
# a free TCP port ($tport) and sending each unchanged (%rawmsg%) with omrelp
# to 127.0.0.1:PORT, WINDOW its windowSize, BATCH its main queue's dequeue
# batch (what it sends again at once after a break); omrelp retries for
# ever every 100 ms. Sets $rs, its pid (in pids); its stderr in $dir/rs.err.
start_omrelp() {
  tport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$dir/rs.conf" <<CONF
global(workDirectory="$dir")
main_queue(queue.dequeueBatchSize="$3")
module(load="imptcp")
module(load="omrelp")
template(name="fwd" type="string" string="%rawmsg%")
ruleset(name="r") {
  action(type="omrelp" target="127.0.0.1" port="$1" template="fwd" windowSize="$2"
         action.resumeRetryCount="-1" action.resumeInterval="1" conn.timeout="2" timeout="5")
}
input(type="imptcp" address="127.0.0.1" port="$tport" ruleset="r")
CONF
  # rsyslogd signals its parent: a subshell of its own takes it.
  (trap '' TERM; exec /usr/sbin/rsyslogd -n -f "$dir/rs.conf" -i "$dir/rs.pid") 2> "$dir/rs.err" &
  rs=$!
  pids+=("$rs")
}

# send_octet PORT TOTAL WORD [STEP]: TOTAL octet-counted messages
# '<14>1 2026-12-01T00:00:00.000001Z h app - - - WORD NNNNNN' into
# 127.0.0.1:PORT (waiting up to 20 s for it to listen): at once, or STEP
# messages every 20 ms.
send_octet() {
  python3 - "$@" <<'PY'
import socket, sys, time
port, total, word = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
step = int(sys.argv[4]) if len(sys.argv) > 4 else total
for _ in range(400):
    try:
        s = socket.create_connection(("127.0.0.1", port)); break
    except OSError:
        time.sleep(0.05)
for i in range(0, total, step):
    s.sendall(b"".join(b"%d %s" % (len(m), m) for m in
              (b"<14>1 2026-12-01T00:00:00.000001Z h app - - - %s %06d" % (word, j) for j in range(i, min(total, i + step)))))
    if step < total:
        time.sleep(0.02)
s.close()
PY
}

# start_imrelp_tls OUT: rsyslogd's imrelp with tls="on" on a free port
# ($rport), the test CA's server certificate ($pki, tls_check.sh), and
# tls.authMode="certvalid" (a client must present a certificate of that
# CA); each message's MSG a line of OUT, through omfile with a Direct queue
# (imrelp answers once omfile wrote it). Waits until it accepts a
# connection; sets $rs, its pid (in pids); its stderr in $dir/rr.err.
start_imrelp_tls() {
  rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$dir/rr.conf" <<CONF
global(workDirectory="$dir")
main_queue(queue.type="Direct")
module(load="imrelp" tls.tlslib="openssl")
template(name="m" type="string" string="%msg%\n")
ruleset(name="r") { action(type="omfile" file="$1" template="m") }
input(type="imrelp" address="127.0.0.1" port="$rport" ruleset="r" tls="on" tls.caCert="$pki/ca.crt"
      tls.myCert="$pki/server.crt" tls.myPrivKey="$pki/server.key" tls.authMode="certvalid")
CONF
  (trap '' TERM; exec /usr/sbin/rsyslogd -n -f "$dir/rr.conf" -i "$dir/rr.pid") 2> "$dir/rr.err" &
  rs=$!
  pids+=("$rs")
  for _ in $(seq $((400 * scale))); do
    python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$rport" \
      2>/dev/null && break
    sleep 0.05
  done
}
