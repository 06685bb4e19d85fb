# The TLS tools tests share this: a directory removed at the exit (and the
# pids in `pids` killed then), fail/ok, and a test CA made in it by
# tests/tls/make_ca.sh ($pki: ca.crt, server.crt/.key, client.crt/.key and
# the other CA's, keys mode 600). Set make_ca before sourcing:
#   make_ca=$(realpath "$N"); . "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"
scale=${SLUICE_TIME_SCALE:-1}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
pass=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }

sh "$make_ca" "$dir" || fail "make_ca.sh: $(cat "$dir/make_ca.log")"
chmod 600 "$dir"/*.key
pki=$dir
