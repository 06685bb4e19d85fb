#!/usr/bin/env bash
# sluice-logd --compress gzip|zstd with --max-size: the rotated files are
# FILE.N.gz / FILE.N.zst (none left plain), FILE itself is plain, and the
# rotated files decompressed by gzip and zstd, oldest first, followed by
# FILE, are the messages sent, exactly; --keep counts the compressed files;
# a bad --compress is bad usage (exit 2). Loopback only; every wait is
# bounded.
#
#   tests/tools/logd_compress_test.sh SLUICE_LOGD
set -euo pipefail
logd=$1
. "$(dirname "${BASH_SOURCE[0]}")/logd_check.sh"

# --- usage
st=0
"$logd" --listen 127.0.0.1:0 --compress xz "$dir/u.log" > /dev/null 2> "$dir/uerr" || st=$?
[ "$st" -eq 2 ] || fail "--compress xz exited $st, not 2: $(cat "$dir/uerr")"
grep -qF "sluice-logd: --compress wants none, gzip[:1-9] or zstd[:1-22], got 'xz'" "$dir/uerr" || fail "--compress xz: $(cat "$dir/uerr")"
ok "--compress xz: exit 2 with the reason"
for bad in gzip:0 gzip:10 zstd:23 zstd:-1 zstd: none:3 gzip:1x; do
  st=0
  "$logd" --listen 127.0.0.1:0 --compress "$bad" "$dir/u.log" > /dev/null 2> "$dir/uerr" || st=$?
  [ "$st" -eq 2 ] || fail "--compress $bad exited $st, not 2: $(cat "$dir/uerr")"
  grep -qF "got '$bad'" "$dir/uerr" || fail "--compress $bad: $(cat "$dir/uerr")"
done
ok "--compress with a level out of range or malformed: exit 2 with the reason"
# Compression acts on rotated, kept files only (issue 34, item 19).
for args in "--compress gzip" "--compress zstd --keep 3" "--compress gzip --max-size 1K --keep 0"; do
  st=0
  # shellcheck disable=SC2086
  "$logd" --listen 127.0.0.1:0 $args "$dir/u.log" > /dev/null 2> "$dir/uerr" || st=$?
  [ "$st" -eq 2 ] || fail "$args exited $st, not 2: $(cat "$dir/uerr")"
  grep -q -- "^sluice-logd: --compress goes with" "$dir/uerr" || fail "$args: $(cat "$dir/uerr")"
done
ok "--compress without --max-size, or with --keep 0: exit 2 with the reason"

# The start keeps a plain FILE.N beside a FILE.N.gz that is not its whole
# copy (issue 34, item 2), and says so; beside a whole copy it goes.
seq -f "old %05.0f" 1 1000 > "$dir/r.log.1"
printf 'older\n' | gzip -c > "$dir/r.log.1.gz"
seq -f "crash %05.0f" 1 1000 > "$dir/r.log.2"
gzip -c < "$dir/r.log.2" > "$dir/r.log.2.gz"
start --listen 127.0.0.1:0 --max-size 1M --compress gzip "$dir/r.log"
stop
[ "$(cat "$dir/r.log.1")" = "$(seq -f "old %05.0f" 1 1000)" ] || fail "recovery: FILE.1 beside an older FILE.1.gz was not kept"
[ "$(gzip -dc < "$dir/r.log.1.gz")" = older ] || fail "recovery: the older FILE.1.gz changed"
grep -q "r.log.1.gz is not a whole compressed copy of .*r.log.1: both kept" "$dir/err" || fail "recovery: not said: $(cat "$dir/err")"
[ ! -e "$dir/r.log.2" ] || fail "recovery: FILE.2 beside its whole copy stayed"
ok "the start keeps FILE.N beside a FILE.N.gz that is not its copy, and says so; removes it beside its whole copy"

# Sends N octet-counted messages over one connection, in order, and waits
# for sluice-logd to close it after the sender's FIN (every message read).
send() {  # count, tag
  python3 - "$port" "$1" "$2" <<'PY'
import socket, sys
port, n, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
s = socket.create_connection(("127.0.0.1", port))
msgs = (b"<14>1 2026-12-02T04:00:00.000001Z host app - - - %s request %07d took %d ms" % (tag, i, i % 997)
        for i in range(n))
s.sendall(b"".join(b"%d %s" % (len(m), m) for m in msgs))
s.shutdown(socket.SHUT_WR)
s.settimeout(30)
while s.recv(4096):
    pass
PY
}
expected() {  # count, tag
  python3 - "$1" "$2" <<'PY'
import sys
n, tag = int(sys.argv[1]), sys.argv[2].encode()
sys.stdout.buffer.write(b"".join(b"<14>1 2026-12-02T04:00:00.000001Z host app - - - %s request %07d took %d ms\n"
                                 % (tag, i, i % 997) for i in range(n)))
PY
}
# The chain FILE.N.EXT ... FILE.1.EXT, oldest first, decompressed, then FILE.
chain() {  # file, ext, tool
  local f=$1 ext=$2 tool=$3 n=0
  while [ -e "$f.$((n + 1)).$ext" ]; do n=$((n + 1)); done
  for ((i = n; i >= 1; i--)); do $tool -dc < "$f.$i.$ext"; done
  cat "$f"
}

for method in gzip zstd; do
  ext=gz tool="gzip"
  [ "$method" = zstd ] && ext=zst tool="zstd -q"
  out=$dir/$method.log
  n=60000
  start --listen 127.0.0.1:0 --max-size 256K --keep 1000 --compress "$method" --stats "$out"
  send "$n" "$method"
  stop
  rotated=$( (ls "$out".*."$ext" 2>/dev/null || true) | wc -l)
  [ "$rotated" -ge 10 ] || fail "$method: $rotated rotated files: $(ls "$dir")"
  plain=$(ls "$out".* 2>/dev/null | grep -Ev "\.$ext\$" || true)
  [ -z "$plain" ] || fail "$method: rotated files left plain or half-done: $plain"
  $tool -t "$out".*."$ext" 2> /dev/null || fail "$method: a rotated file does not decompress"
  $tool -t < "$out" > /dev/null 2>&1 && fail "$method: the live FILE is compressed"
  head -c 4 "$out" | grep -q "<14>" || fail "$method: the live FILE is not plain: $(head -c 40 "$out" | od -c | head -2)"
  expected "$n" "$method" > "$dir/want"
  chain "$out" "$ext" "$tool" > "$dir/got"
  cmp -s "$dir/want" "$dir/got" || fail "$method: the chain, oldest first, then FILE, is not the input: $(cmp "$dir/want" "$dir/got" 2>&1)"
  raw=$(wc -c < "$dir/want")
  packed=$(cat "$out".*."$ext" | wc -c)
  ok "--compress $method: $rotated rotated files FILE.N.$ext (none plain), FILE plain; oldest first then FILE is the input, exactly ($n messages; $packed bytes compressed for $((raw - $(wc -c < "$out"))) rotated)"
done

# METHOD:LEVEL reaches the codec: gzip's header says so (XFL, its 9th byte:
# 4 for the fastest level, 2 for the best), zstd:19 packs tighter than zstd:1.
for spec in gzip:1 gzip:9 zstd:1 zstd:19; do
  method=${spec%:*} level=${spec#*:}
  ext=gz tool=gzip
  [ "$method" = zstd ] && ext=zst tool="zstd -q"
  out=$dir/$method$level.log
  start --listen 127.0.0.1:0 --max-size 256K --keep 1000 --compress "$spec" "$out"
  send 20000 level
  stop
  expected 20000 level > "$dir/want"
  chain "$out" "$ext" "$tool" > "$dir/got"
  cmp -s "$dir/want" "$dir/got" || fail "--compress $spec: the chain is not the input"
  if [ "$method" = gzip ]; then
    xfl=$(od -An -tu1 -j8 -N1 "$out.1.gz" | tr -d ' ')
    want=4; [ "$level" = 9 ] && want=2
    [ "$xfl" = "$want" ] || fail "--compress $spec: the gzip header's XFL is $xfl, not $want"
  else
    eval "zsize$level=$(cat "$out".*.zst | wc -c)"
  fi
done
[ "$zsize19" -lt "$zsize1" ] || fail "--compress zstd:19 gave $zsize19 bytes, zstd:1 $zsize1: the level did not reach the codec"
ok "--compress gzip:1 / gzip:9 / zstd:1 / zstd:19: the level reaches the codec (gzip's XFL; zstd:19 $zsize19 bytes against zstd:1's $zsize1), the chain is the input"

# --keep counts the compressed files.
out=$dir/keep.log
start --listen 127.0.0.1:0 --max-size 64K --keep 3 --compress zstd "$out"
send 20000 keep
stop
[ "$(ls "$out".* | wc -l)" -eq 3 ] || fail "--keep 3: $(ls "$out".*)"
for i in 1 2 3; do [ -e "$out.$i.zst" ] || fail "--keep 3: no $out.$i.zst: $(ls "$out".*)"; done
# The newest three and FILE are the input's last lines, exactly.
chain "$out" zst "zstd -q" > "$dir/got"
expected 20000 keep | tail -n "$(wc -l < "$dir/got")" > "$dir/want"
cmp -s "$dir/want" "$dir/got" || fail "--keep 3: the kept chain is not the input's end"
ok "--keep 3 with --compress zstd: FILE.1.zst to FILE.3.zst, the newest of the input"

echo "logd_compress: $pass passed"
