# The TLS tools tests share this: prelude.sh (unless sourced already) and
# a test CA made in $dir by tests/tls/make_ca.sh ($pki: ca.crt,
# server.crt/.key, client.crt/.key and the other CA's, keys mode 600).
# Set make_ca before sourcing:
#   make_ca=$(realpath "$N"); . "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"
[ -n "${dir:-}" ] || . "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"

sh "$make_ca" "$dir" || fail "make_ca.sh: $(cat "$dir/make_ca.log")"
chmod 600 "$dir"/*.key
pki=$dir

# bare_connects PORT N FILE: N TCP connects to PORT that never send a byte
# (no ClientHello), in the background; FILE.up once they are up, then FILE
# gets one line each: the seconds from its connect to its close by the
# server, or "open" if still open after 20 s (scaled).
bare_connects() {  # port, count, file
  timeout $((40 * scale)) python3 - "$1" "$2" "$3" $((20 * scale)) <<'PY' 3>&- &
import socket, sys, time, select
port, n, out, limit = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
conns = [(socket.create_connection(("127.0.0.1", port)), time.monotonic()) for _ in range(n)]
with open(out + ".up", "w"):
    pass
res = {}
while len(res) < n and time.monotonic() - conns[0][1] < limit:
    r, _, _ = select.select([c for c, _ in conns if c.fileno() not in res], [], [], 0.1)
    for c in r:
        try:
            d = c.recv(1)
        except OSError:
            d = b""
        if not d:
            res[c.fileno()] = time.monotonic() - [t for s, t in conns if s is c][0]
with open(out, "w") as f:
    for c, _ in conns:
        f.write("%.2f\n" % res[c.fileno()] if c.fileno() in res else "open\n")
PY
  pids+=($!)
  for _ in $(seq $((200 * scale))); do [ -e "$3.up" ] && break; sleep 0.05; done
}
