#!/usr/bin/env bash
# sluice-logd CPU for N octet-counted messages (issue 19, item 14): MODE 0 plain,
# 1 each with a trailing LF (dropped now), 2 each with a backslash and a TAB inside
# (the escaping path). Prints user and system CPU seconds (/usr/bin/time).
#
#   perf/shipping/logd-escape-cpu.sh SLUICE_LOGD MODE [N=500000]
logd=$1; lf=$2
d=$(mktemp -d)
python3 - "$d/frames" "$lf" "${3:-500000}" <<'PY'
import sys
lf = sys.argv[2] == "1"
with open(sys.argv[1], "wb") as f:
    out = []
    for i in range(int(sys.argv[3])):
        m = b"<14>1 2026-12-01T00:00:00.000001Z host app 1234 - - message number %d with some text" % i
        if sys.argv[2] == "1": m += b"\n"
        if sys.argv[2] == "2": m = m.replace(b"some", b"so\\me\tx")
        out.append(b"%d %s" % (len(m), m))
    f.write(b"".join(out))
PY
/usr/bin/time -f "%U %S" -o "$d/time" "$logd" --listen 127.0.0.1:0 "$d/out.log" 2> "$d/err" &
tp=$!
for _ in $(seq 200); do grep -q "listening on" "$d/err" && break; sleep 0.05; done
port=$(sed -n 's/^sluice-logd: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$d/err")
python3 -c '
import socket,sys
s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(open(sys.argv[2],"rb").read()); s.close()' "$port" "$d/frames"
for _ in $(seq 600); do [ "$(wc -l < "$d/out.log")" -ge ${3:-500000} ] && break; sleep 0.05; done
kill -TERM "$(pgrep -P "$tp")"
wait $tp
echo "lf=$lf lines=$(wc -l < "$d/out.log") user_sys=$(cat "$d/time")"
rm -rf "$d"
