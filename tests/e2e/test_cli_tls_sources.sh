#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# TAP tests for dynconf-configs --command-config with each TLS source
# librdkafka knows, against a dynconfd SSL listener that requires client
# certificates and authorizes by their subject: alice may alter, bob only
# describe. A hashed CA directory, ssl.ca.pem, certificate and key as PEM
# text, an encrypted key with its password, a PKCS#12 keystore,
# ssl.cipher.suites, and the error sentences for each mistake.
set -u
DC_DAEMON_WRAPPER=${DC_DAEMON_WRAPPER:-} # lib.sh reads it unset-or-not
. "$(dirname "$0")/../lib.sh"

CERTS="$DC_TMP/certs"
command -v openssl >/dev/null || {
  echo "1..0 # SKIP openssl not installed"
  exit 0
}
{ sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" &&
  sh "$DC_SRCDIR/tests/gen_tls_sources.sh" "$CERTS"; } ||
  tap_bail "making test certificates failed"

cat >"$DC_TMP/acl" <<'EOF'
allow "User:CN=alice,O=dynconf-test" all *
allow "User:CN=bob,O=dynconf-test" describe client:*
EOF
dc_start_daemon "$DC_TMP/data" --listeners SSL://127.0.0.1:0 \
  --ssl-cert "$CERTS/server.pem" --ssl-key "$CERTS/server.key" \
  --ssl-ca "$CERTS/ca.pem" --ssl-client-auth required \
  --acl-file "$DC_TMP/acl" || tap_bail "dynconfd did not start"
SSL_PORT=$(sed -n 's/^listening on [^ ]*:\([0-9]*\) (SSL .*/\1/p' "$DC_DAEMON_OUT")
[ -n "$SSL_PORT" ]
tap_ok $? "dynconfd reports its SSL listener" || tap_bail "no SSL port"

# props NAME KEY=VALUE...: writes $DC_TMP/NAME.props.
props() {
  local f="$DC_TMP/$1.props"
  shift
  printf '%s\n' security.protocol=SSL "$@" >"$f"
}
# pem FILE: the file's text on one line, each newline written as \n.
pem() { awk '{ printf "%s\\n", $0 }' "$1"; }
# alter NAME: as NAME.props, set acks=1 on client-id app-1 (alice may,
# bob may not); $rc, $DC_TMP/out, $DC_TMP/err.
alter() {
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$SSL_PORT" \
    --command-config "$DC_TMP/$1.props" --entity-type clients \
    --entity-name app-1 --alter --add-config acks=1 \
    >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
ALTERED="^Completed updating config for client-id 'app-1'"
DENIED="CLUSTER_AUTHORIZATION_FAILED"
# Each usage error names the properties file first.
usage() { echo "^Error: --command-config $DC_TMP/$1.props: $2"; }

CA="ssl.ca.location=$CERTS/ca.pem"
ALICE=("ssl.certificate.location=$CERTS/alice.pem" "ssl.key.location=$CERTS/alice.key")

# ---- controls: the listener needs a certificate and tells alice from bob
props files "$CA" "${ALICE[@]}"
alter files
dc_expect 0 "$ALTERED" "$DC_TMP/out" "control: alice's certificate and key files may alter"
props bobfiles "$CA" "ssl.certificate.location=$CERTS/bob.pem" \
  "ssl.key.location=$CERTS/bob.key"
alter bobfiles
dc_expect 1 "$DENIED" "$DC_TMP/err" "control: bob's may not"
props nocert "$CA"
alter nocert
dc_expect 1 "certificate required" "$DC_TMP/err" \
  "control: without a client certificate the server refuses the session"

# ---- trust ---------------------------------------------------------------
props cadir "ssl.ca.location=$CERTS/cadir" "${ALICE[@]}"
alter cadir
dc_expect 0 "$ALTERED" "$DC_TMP/out" "ssl.ca.location = a directory hashed with openssl rehash"
props roguedir "ssl.ca.location=$CERTS/roguedir" "${ALICE[@]}"
alter roguedir
dc_expect 1 "^Error: TLS handshake with 127\.0\.0\.1:$SSL_PORT failed: certificate verify failed" \
  "$DC_TMP/err" "... a hashed directory of another CA: the server is not trusted"
props plaindir "ssl.ca.location=$CERTS/plaindir" "${ALICE[@]}"
alter plaindir
dc_expect 2 "$(usage plaindir "CA directory $CERTS/plaindir holds no hashed certificate names \(run openssl rehash")" \
  "$DC_TMP/err" "... a directory never rehashed: usage error saying so"
props capem "ssl.ca.pem=$(pem "$CERTS/ca.pem")" "${ALICE[@]}"
alter capem
dc_expect 0 "$ALTERED" "$DC_TMP/out" "ssl.ca.pem (one line, \\n escapes)"
props roguepem "ssl.ca.pem=$(pem "$CERTS/rogue-ca.pem")" "${ALICE[@]}"
alter roguepem
dc_expect 1 "certificate verify failed" "$DC_TMP/err" "... ssl.ca.pem of another CA: not trusted"
props badcapem "ssl.ca.pem=no certificate here" "${ALICE[@]}"
alter badcapem
dc_expect 2 "$(usage badcapem "cannot load CA certificates from ssl.ca.pem: no PEM certificate found")" \
  "$DC_TMP/err" "... ssl.ca.pem without a certificate: usage error"

# ---- the client certificate and key ---------------------------------------
props idpem "$CA" "ssl.certificate.pem=$(pem "$CERTS/alice.pem")" \
  "ssl.key.pem=$(pem "$CERTS/alice.key")"
alter idpem
dc_expect 0 "$ALTERED" "$DC_TMP/out" "ssl.certificate.pem + ssl.key.pem: alice may alter"
props bobpem "$CA" "ssl.certificate.pem=$(pem "$CERTS/bob.pem")" \
  "ssl.key.pem=$(pem "$CERTS/bob.key")"
alter bobpem
dc_expect 1 "$DENIED" "$DC_TMP/err" "... bob's as PEM text: denied (the text is the identity)"

props enckey "$CA" "ssl.certificate.location=$CERTS/alice.pem" \
  "ssl.key.location=$CERTS/alice.enc.key" ssl.key.password=key-pw
alter enckey
dc_expect 0 "$ALTERED" "$DC_TMP/out" "encrypted key with the right ssl.key.password"
props badkeypw "$CA" "ssl.certificate.location=$CERTS/alice.pem" \
  "ssl.key.location=$CERTS/alice.enc.key" ssl.key.password=wrong-pw
alter badkeypw
dc_expect 2 "$(usage badkeypw "cannot load client key $CERTS/alice\.enc\.key: it does not decrypt with the password given \(is ssl\.key\.password right\?\)")" \
  "$DC_TMP/err" "... the wrong ssl.key.password: clear error, exit 2"
! grep -q -e wrong-pw -e key-pw "$DC_TMP/err" "$DC_TMP/out"
tap_ok $? "... and the password is not printed"
props nokeypw "$CA" "ssl.certificate.location=$CERTS/alice.pem" \
  "ssl.key.location=$CERTS/alice.enc.key"
alter nokeypw
dc_expect 2 "the key is encrypted and ssl\.key\.password is not set" "$DC_TMP/err" \
  "... no ssl.key.password: says it is needed"
props encpem "$CA" "ssl.certificate.pem=$(pem "$CERTS/alice.pem")" \
  "ssl.key.pem=$(pem "$CERTS/alice.trad.key")" ssl.key.password=key-pw
alter encpem
dc_expect 0 "$ALTERED" "$DC_TMP/out" "encrypted ssl.key.pem with its password"

# ---- PKCS#12 ---------------------------------------------------------------
props p12 "$CA" "ssl.keystore.location=$CERTS/alice.p12" ssl.keystore.password=ks-pw
alter p12
dc_expect 0 "$ALTERED" "$DC_TMP/out" "PKCS#12 keystore (openssl pkcs12 -export): alice may alter"
props bobp12 "$CA" "ssl.keystore.location=$CERTS/bob.p12" ssl.keystore.password=ks-pw
alter bobp12
dc_expect 1 "$DENIED" "$DC_TMP/err" "... bob's keystore: denied (the keystore is the identity)"
props badp12 "$CA" "ssl.keystore.location=$CERTS/alice.p12" ssl.keystore.password=wrong-pw
alter badp12
dc_expect 2 "$(usage badp12 "cannot open PKCS#12 keystore $CERTS/alice\.p12: mac verify failure \(is ssl\.keystore\.password right\?\)")" \
  "$DC_TMP/err" "... the wrong ssl.keystore.password: clear error, exit 2"
! grep -q -e wrong-pw -e ks-pw "$DC_TMP/err" "$DC_TMP/out"
tap_ok $? "... and the password is not printed"

# ---- ciphers and conflicting sources ----------------------------------------
props badcipher "$CA" "${ALICE[@]}" ssl.cipher.suites=NOT-A-CIPHER
alter badcipher
dc_expect 2 "$(usage badcipher "invalid ssl\.cipher\.suites 'NOT-A-CIPHER': no cipher match")" \
  "$DC_TMP/err" "a cipher list OpenSSL rejects: clear error"
props cipher "$CA" "${ALICE[@]}" \
  ssl.cipher.suites=ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384
alter cipher
dc_expect 0 "$ALTERED" "$DC_TMP/out" "... a valid one works"
props both "$CA" "${ALICE[@]}" "ssl.certificate.pem=$(pem "$CERTS/alice.pem")"
alter both
dc_expect 2 "$(usage both "set either ssl\.certificate\.location or ssl\.certificate\.pem, not both")" \
  "$DC_TMP/err" "certificate file and PEM text both set: clear error"
props bothkey "$CA" "${ALICE[@]}" "ssl.key.pem=$(pem "$CERTS/alice.key")"
alter bothkey
dc_expect 2 "set either ssl\.key\.location or ssl\.key\.pem, not both" "$DC_TMP/err" \
  "key file and PEM text both set: clear error"
props ksandcert "$CA" "${ALICE[@]}" "ssl.keystore.location=$CERTS/alice.p12" \
  ssl.keystore.password=ks-pw
alter ksandcert
dc_expect 2 "set either ssl\.keystore\.location or ssl\.certificate\.location, not both" \
  "$DC_TMP/err" "keystore and certificate file both set: clear error"

# ---- documentation ------------------------------------------------------------
props unknown "$CA" ssl.truststore.location=/x
alter unknown
dc_expect 2 "unknown property 'ssl\.truststore\.location' \(known: .*ssl\.ca\.pem.*ssl\.keystore\.password.*ssl\.cipher\.suites" \
  "$DC_TMP/err" "an unknown property: the error lists the new ones"
timeout 60 "$DC_CONFIGS" --help >"$DC_TMP/out" 2>"$DC_TMP/err"
rc=$?
missing=
for p in ssl.ca.pem ssl.certificate.pem ssl.key.pem ssl.key.password \
  ssl.keystore.location ssl.keystore.password ssl.cipher.suites; do
  grep -q -- "$p" "$DC_TMP/out" || missing="$missing $p"
done
[ "$rc" -eq 0 ] && [ -z "$missing" ]
tap_ok $? "--help names every ssl.* property it accepts" ||
  tap_diag "  exit $rc, missing:$missing"

dc_stop_daemon
tap_is "$?" 0 "dynconfd stops cleanly"
tap_done
