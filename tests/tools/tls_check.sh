# The TLS tools tests share this: prelude.sh (unless sourced already) and
# a test CA made in $dir by tests/tls/make_ca.sh ($pki: ca.crt,
# server.crt/.key, client.crt/.key and the other CA's, keys mode 600).
# Set make_ca before sourcing:
#   make_ca=$(realpath "$N"); . "$(dirname "${BASH_SOURCE[0]}")/tls_check.sh"
[ -n "${dir:-}" ] || . "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"

sh "$make_ca" "$dir" || fail "make_ca.sh: $(cat "$dir/make_ca.log")"
chmod 600 "$dir"/*.key
pki=$dir
