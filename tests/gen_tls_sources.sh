#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Adds client-side TLS material in other shapes to a directory made by
# gen_certs.sh (ca.pem ca.key rogue-ca.pem alice.* bob.*):
#   gen_tls_sources.sh DIR
#   alice.enc.key     alice.key as encrypted PKCS#8, password key-pw
#   alice.trad.key    alice.key as encrypted traditional PEM, password key-pw
#   alice.p12 bob.p12 PKCS#12 keystores (key, certificate, ca.pem as chain),
#                     password ks-pw
#   inter.pem/.key    an intermediate CA signed by ca.pem
#   carol.pem/.key    a client certificate CN=carol signed by the
#                     intermediate (the server trusts only ca.pem)
#   carol-chain.pem   carol.pem followed by inter.pem
#   carol.p12         carol's key, certificate and inter.pem, password ks-pw
#   cadir/ roguedir/  ca.pem, rogue-ca.pem in directories hashed with
#                     openssl rehash; plaindir/ holds ca.pem not hashed
set -eu
cd "$1"
days=30

openssl pkey -in alice.key -aes256 -passout pass:key-pw -out alice.enc.key
openssl rsa -in alice.key -aes256 -traditional -passout pass:key-pw \
  -out alice.trad.key 2>/dev/null
for c in alice bob; do
  openssl pkcs12 -export -in "$c.pem" -inkey "$c.key" -certfile ca.pem \
    -passout pass:ks-pw -out "$c.p12"
done

openssl req -new -newkey rsa:2048 -nodes -keyout inter.key \
  -subj "/O=dynconf-test/CN=dynconf test intermediate" -out inter.csr 2>/dev/null
printf 'basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n' >inter.ext
openssl x509 -req -in inter.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
  -days $days -sha256 -extfile inter.ext -out inter.pem 2>/dev/null
openssl req -new -newkey rsa:2048 -nodes -keyout carol.key \
  -subj "/O=dynconf-test/CN=carol" -out carol.csr 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >carol.ext
openssl x509 -req -in carol.csr -CA inter.pem -CAkey inter.key \
  -CAcreateserial -days $days -sha256 -extfile carol.ext -out carol.pem 2>/dev/null
rm -f inter.csr inter.ext carol.csr carol.ext
cat carol.pem inter.pem >carol-chain.pem
openssl pkcs12 -export -in carol.pem -inkey carol.key -certfile inter.pem \
  -passout pass:ks-pw -out carol.p12

mkdir -p cadir roguedir plaindir
cp ca.pem cadir/
cp rogue-ca.pem roguedir/
cp ca.pem plaindir/
openssl rehash cadir roguedir
