# What the shipping compare scripts share, sourced after perf/prologue.sh:
#   . "$here/shipping.sh"
# It sets `tmp`, a folder removed at the exit (when the background jobs,
# the receivers, are killed too).
# make_lines FILE N: N lines of 80 bytes, numbered; free_port: a free TCP
# port on 127.0.0.1; ticks PID: its CPU (user + system) in clock ticks.
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
make_lines() {
  python3 - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    for i in range(int(sys.argv[2])):
        f.write('line %07d the quick brown fox jumps over the lazy dog and some padding text here\n' % i)
PY
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
