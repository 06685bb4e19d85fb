#!/usr/bin/env python3
"""A small RELP receiver for the shell tests, on loopback: answers `open`,
answers each `syslog` message 200, or 500 when its message contains
REFUSE, and `close` 200; appends each message's text (after the RFC 5424
header) to OUT, one a line, flushed, in the order received. Its port goes
to PORTFILE once it listens. It serves one session at a time and exits
by itself after LIFETIME seconds.

    relp_peer.py PORTFILE OUT [REFUSE [LIFETIME]]
"""
import os
import socket
import sys
import time

port_file, out_path = sys.argv[1], sys.argv[2]
refuse = sys.argv[3].encode() if len(sys.argv) > 3 and sys.argv[3] else None
deadline = time.monotonic() + (float(sys.argv[4]) if len(sys.argv) > 4 else 120.0)

srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(8)
srv.settimeout(0.5)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
out = open(out_path, "ab")


def parse(buf):
    """The first frame of buf and the rest, or None: it needs more."""
    # TXNR SP COMMAND SP DATALEN [SP DATA] LF
    i1 = buf.find(b" ")
    i2 = buf.find(b" ", i1 + 1) if i1 >= 0 else -1
    if i2 < 0:
        return None
    j = i2 + 1
    while j < len(buf) and buf[j:j + 1].isdigit():
        j += 1
    if j == len(buf):
        return None
    n = int(buf[i2 + 1:j])
    data = j if n == 0 else j + 1
    if len(buf) < data + n + 1:
        return None
    return (int(buf[:i1]), buf[i1 + 1:i2].decode(), buf[data:data + n]), buf[data + n + 1:]


def frames(conn):
    """Yields (txnr, command, data) until the peer closes."""
    buf = b""
    while True:
        got = parse(buf)
        while got:
            frame, buf = got
            yield frame
            got = parse(buf)
        chunk = conn.recv(65536)
        if not chunk:
            return
        buf += chunk


def answer(conn, txnr, text):
    data = text.encode()
    conn.sendall(b"%d rsp %d %s\n" % (txnr, len(data), data))


while time.monotonic() < deadline:
    try:
        conn, _ = srv.accept()
    except socket.timeout:
        continue
    conn.settimeout(max(1.0, deadline - time.monotonic()))
    try:
        for txnr, command, data in frames(conn):
            if command == "open":
                answer(conn, txnr, "200 OK\nrelp_version=0\ncommands=syslog")
            elif command == "close":
                answer(conn, txnr, "200 OK")
                break
            elif command == "syslog":
                # The message: after the header's seven fields.
                out.write(data.split(b" ", 7)[-1] + b"\n")
                out.flush()
                answer(conn, txnr, "500 not today" if refuse and refuse in data else "200 OK")
    except (OSError, ValueError) as e:
        print("relp_peer:", e, file=sys.stderr)
    conn.close()
