#!/bin/sh
# Makes the test PKI in $1 with the openssl program: a CA, a server
# certificate for 127.0.0.1/localhost, a client certificate, an expired
# server certificate, a self-signed one, and another CA with a server
# certificate of its own. Quiet unless something fails.
set -eu
cd "$1"
exec 2>make_ca.log
days=2
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" ; }
ca() {  # name, subject
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -subj "$2" -days $days -out "$1.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # name, ca, subject, extensions
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$3" -out "$1.csr"
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days $days \
    -extfile "$1.ext" -out "$1.crt"
}
server_ext='subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth'
ca ca "/O=sluice test/CN=sluice test CA"
leaf server ca "/O=sluice test/CN=localhost" "$server_ext"
leaf client ca "/O=sluice test/CN=client one" "extendedKeyUsage=clientAuth"
ca other-ca "/O=elsewhere/CN=another CA"
leaf other-server other-ca "/O=elsewhere/CN=localhost" "$server_ext"
leaf other-client other-ca "/O=elsewhere/CN=client two" "extendedKeyUsage=clientAuth"
# Expired: signed by the CA with a validity that ended in 2021 (openssl ca
# is the command that takes explicit dates).
key expired.key
openssl req -new -key expired.key -subj "/O=sluice test/CN=localhost" -out expired.csr
mkdir -p ca.db && : > ca.db/index.txt && echo 1000 > ca.db/serial
cat > ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = ca.db
database = ca.db/index.txt
serial = ca.db/serial
new_certs_dir = ca.db
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = any
copy_extensions = none
[any]
O = optional
CN = supplied
[server]
subjectAltName = DNS:localhost,IP:127.0.0.1
extendedKeyUsage = serverAuth
CNF
openssl ca -batch -config ca.cnf -extensions server -startdate 20200101000000Z -enddate 20210101000000Z \
  -in expired.csr -out expired.crt
# Self-signed, for DEPTH_ZERO_SELF_SIGNED_CERT.
key self.key
openssl req -x509 -new -key self.key -subj "/CN=localhost" -days $days -out self.crt \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
