#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Makes throw-away test certificates with openssl: gen_certs.sh DIR
#   ca.pem ca.key            the test CA (trusted by servers and clients)
#   rogue-ca.pem             a CA nobody trusts, and rogue.pem/.key signed by it
#   server.pem server.key    CN=localhost, SAN localhost + 127.0.0.1 (+ ::1)
#   NAME.pem NAME.key        client certificates CN=NAME for NAME in
#                            ${CLIENTS:-alice bob}
# Extra: gen_certs.sh DIR leaf NAME [CN] signs one more leaf with DIR's CA
# (used by rotation tests to mint a fresh certificate mid-test), and
# gen_certs.sh DIR leaf-subject NAME SUBJECT one with any subject, given as
# for openssl req -subj in UTF-8 (e.g. long or non-ASCII principals).
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
days=30

leaf() { # leaf NAME SUBJECT CAFILE CAKEY
  openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key.tmp" -utf8 \
    -subj "$2" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3" -CAkey "$4" -CAcreateserial \
    -days $days -sha256 -extfile "$1.ext" -out "$1.pem.tmp" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
  # Rename into place so a watcher never sees a half-written file.
  mv "$1.key.tmp" "$1.key"
  mv "$1.pem.tmp" "$1.pem"
}

if [ "${2:-}" = leaf ]; then
  leaf "$3" "/O=dynconf-test/CN=${4:-$3}" ca.pem ca.key
  exit 0
fi
if [ "${2:-}" = leaf-subject ]; then
  leaf "$3" "$4" ca.pem ca.key
  exit 0
fi

ca() { # ca NAME CN
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -days $days \
    -subj "/O=dynconf-test/CN=$2" -out "$1.pem" 2>/dev/null
}
ca ca "dynconf test CA"
ca rogue-ca "rogue CA"
leaf server /O=dynconf-test/CN=localhost ca.pem ca.key
leaf rogue /O=dynconf-test/CN=rogue rogue-ca.pem rogue-ca.key
for c in ${CLIENTS:-alice bob}; do
  leaf "$c" "/O=dynconf-test/CN=$c" ca.pem ca.key
done
