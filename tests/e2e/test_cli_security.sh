#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# TAP tests for dynconf-configs over secured dynconfd listeners: SSL,
# SASL_PLAINTEXT (SCRAM-SHA-512, PLAIN), SASL_SSL (SCRAM-SHA-256), the
# errors an operator meets (wrong password, unknown user, untrusted
# certificate, TLS port spoken to in plaintext, bad --command-config), and
# --reload-keystore (rotation, a bad new key, a bad credentials file
# beside a good ACL file, authorization, what a server without TLS says).
set -u
DC_DAEMON_WRAPPER=${DC_DAEMON_WRAPPER:-} # lib.sh reads it unset-or-not
. "$(dirname "$0")/../lib.sh"

CERTS="$DC_TMP/certs"
SRV="$DC_TMP/srv" # the server's own copies, rotated during the test
CREDS="$DC_TMP/users.creds"

command -v openssl >/dev/null || {
  echo "1..0 # SKIP openssl not installed"
  exit 0
}
sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" || tap_bail "gen_certs.sh failed"
mkdir -p "$SRV"
cp "$CERTS/server.pem" "$CERTS/server.key" "$CERTS/ca.pem" "$SRV/"

# run ARGS...: the CLI, bounded by timeout; $rc, $DC_TMP/out, $DC_TMP/err.
run() {
  timeout 60 "$DC_CONFIGS" "$@" >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
# props NAME KEY=VALUE...: writes $DC_TMP/NAME.props.
props() {
  local f="$DC_TMP/$1.props"
  shift
  printf '%s\n' "# written by test_cli_security.sh" "$@" >"$f"
}
port_of() { # port_of LISTENER_NAME
  sed -n "s/^listening on [^ ]*:\([0-9]*\) ($1 .*/\1/p" "$DC_DAEMON_OUT"
}

# ---- users and the daemon -----------------------------------------------
echo 'admin-secret' | "$DC_DYNCONFD" --credentials "$CREDS" --add-user admin \
  --iterations 4096 >/dev/null
tap_ok $? "dynconfd --add-user admin"
echo 'alice-pw' | "$DC_DYNCONFD" --credentials "$CREDS" --add-user alice \
  --iterations 4096 >/dev/null
tap_ok $? "dynconfd --add-user alice"
! grep -q 'admin-secret' "$CREDS"
tap_ok $? "the credentials file does not hold the password"

cat >"$DC_TMP/acl" <<'EOF'
allow User:admin all *
allow User:ANONYMOUS describe client:*
EOF

dc_start_daemon "$DC_TMP/data" \
  --listeners SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0 \
  --ssl-cert "$SRV/server.pem" --ssl-key "$SRV/server.key" \
  --ssl-ca "$SRV/ca.pem" --credentials "$CREDS" --acl-file "$DC_TMP/acl" ||
  tap_bail "dynconfd did not start"
PLAIN_PORT=$DC_PORT
SSL_PORT=$(port_of SSL)
SASL_PORT=$(port_of SASL_PLAINTEXT)
SASL_SSL_PORT=$(port_of SASL_SSL)
[ -n "$SSL_PORT" ] && [ -n "$SASL_PORT" ] && [ -n "$SASL_SSL_PORT" ]
tap_ok $? "dynconfd reports the SSL, SASL_PLAINTEXT and SASL_SSL listeners" ||
  tap_bail "listener ports missing"

props ssl security.protocol=SSL "ssl.ca.location=$CERTS/ca.pem"
props scram512 security.protocol=SASL_PLAINTEXT sasl.mechanism=SCRAM-SHA-512 \
  sasl.username=admin sasl.password=admin-secret
props plain security.protocol=SASL_PLAINTEXT sasl.mechanisms=PLAIN \
  sasl.username=admin sasl.password=admin-secret
props scram256tls security.protocol=SASL_SSL "ssl.ca.location=$CERTS/ca.pem" \
  sasl.mechanism=SCRAM-SHA-256 sasl.username=admin sasl.password=admin-secret
D=(--entity-type clients --entity-default)

# ---- each protocol ------------------------------------------------------
run --bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/scram512.props" \
  "${D[@]}" --alter --add-config acks=1
dc_expect 0 "^Completed updating config for the default client-id" "$DC_TMP/out" \
  "SASL_PLAINTEXT SCRAM-SHA-512: alter"
run --bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/plain.props" \
  "${D[@]}" --describe
dc_expect 0 "^  acks=1 " "$DC_TMP/out" "SASL_PLAINTEXT PLAIN: describe sees it"
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --describe
dc_expect 0 "^  acks=1 " "$DC_TMP/out" "SSL: describe"
run --bootstrap-server "localhost:$SSL_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --describe
dc_expect 0 "^  acks=1 " "$DC_TMP/out" "SSL by host name (certificate SAN localhost)"
run --bootstrap-server "127.0.0.1:$SASL_SSL_PORT" \
  --command-config "$DC_TMP/scram256tls.props" "${D[@]}" --alter \
  --add-config acks=all
dc_expect 0 "^Completed updating" "$DC_TMP/out" "SASL_SSL SCRAM-SHA-256: alter"
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --alter --add-config acks=0
dc_expect 1 "CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "SSL without a client certificate is User:ANONYMOUS: alter denied"

# ---- failures with clear errors -----------------------------------------
props badpw security.protocol=SASL_SSL "ssl.ca.location=$CERTS/ca.pem" \
  sasl.mechanism=SCRAM-SHA-256 sasl.username=admin sasl.password=wrong
run --bootstrap-server "127.0.0.1:$SASL_SSL_PORT" \
  --command-config "$DC_TMP/badpw.props" "${D[@]}" --describe
dc_expect 1 "^Error: SASL authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256$" \
  "$DC_TMP/err" "SCRAM wrong password: clear error, exit 1"
[ ! -s "$DC_TMP/out" ]
tap_ok $? "... and nothing on stdout"
props nouser security.protocol=SASL_SSL "ssl.ca.location=$CERTS/ca.pem" \
  sasl.mechanism=SCRAM-SHA-256 sasl.username=mallory sasl.password=wrong
run --bootstrap-server "127.0.0.1:$SASL_SSL_PORT" \
  --command-config "$DC_TMP/nouser.props" "${D[@]}" --describe
dc_expect 1 "invalid credentials with SASL mechanism SCRAM-SHA-256$" "$DC_TMP/err" \
  "SCRAM unknown user: the same error as a wrong password"
props plainbad security.protocol=SASL_PLAINTEXT sasl.mechanism=PLAIN \
  sasl.username=admin sasl.password=wrong
run --bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/plainbad.props" \
  "${D[@]}" --describe
dc_expect 1 "^Error: SASL authentication failed: Authentication failed: Invalid username or password$" \
  "$DC_TMP/err" "PLAIN wrong password: clear error, exit 1"
run --bootstrap-server "127.0.0.1:$SASL_PORT" "${D[@]}" --describe
dc_expect 1 "^Error: .*authenticate with --command-config" "$DC_TMP/err" \
  "SASL listener without credentials: refused, with a hint"
props rogue security.protocol=SSL "ssl.ca.location=$CERTS/rogue-ca.pem"
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/rogue.props" \
  "${D[@]}" --describe
dc_expect 1 "^Error: TLS handshake with 127\.0\.0\.1:$SSL_PORT failed: certificate verify failed" \
  "$DC_TMP/err" "untrusted server certificate: clear error, exit 1"
run --bootstrap-server "127.0.0.1:$SSL_PORT" "${D[@]}" --describe
dc_expect 1 "set security.protocol=SSL" "$DC_TMP/err" \
  "plaintext to a TLS listener: the error suggests SSL"
run --bootstrap-server "127.0.0.1:$PLAIN_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --describe
dc_expect 1 "TLS handshake with .* failed" "$DC_TMP/err" \
  "TLS to a plaintext listener: clear error"
props unknown security.protocol=SSL ssl.truststore.location=/x
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/unknown.props" \
  "${D[@]}" --describe
dc_expect 2 "unknown property 'ssl.truststore.location'" "$DC_TMP/err" \
  "--command-config: an unknown key is a usage error naming it"
props noca security.protocol=SSL ssl.ca.location=/nonexistent/ca.pem
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/noca.props" \
  "${D[@]}" --describe
dc_expect 2 "cannot load CA file /nonexistent/ca.pem: No such file or directory" \
  "$DC_TMP/err" "--command-config: a missing CA file is named"
props nomech security.protocol=SASL_SSL sasl.mechanism=AWS_MSK_IAM \
  sasl.username=a sasl.password=b
run --bootstrap-server "127.0.0.1:$SASL_SSL_PORT" \
  --command-config "$DC_TMP/nomech.props" "${D[@]}" --describe
dc_expect 2 "unsupported SASL mechanism 'AWS_MSK_IAM'" "$DC_TMP/err" \
  "--command-config: an unsupported mechanism is refused"
# kafka-configs.sh's habit: the credentials in sasl.jaas.config.
props jaas security.protocol=SASL_PLAINTEXT sasl.mechanism=SCRAM-SHA-512 \
  'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
run --bootstrap-server "127.0.0.1:$SASL_PORT" \
  --command-config "$DC_TMP/jaas.props" "${D[@]}" --describe
dc_expect 0 "^  acks=" "$DC_TMP/out" \
  "sasl.jaas.config (ScramLoginModule username/password) authenticates"
props jaasbad security.protocol=SASL_PLAINTEXT sasl.mechanism=SCRAM-SHA-512 \
  'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret'
run --bootstrap-server "127.0.0.1:$SASL_PORT" \
  --command-config "$DC_TMP/jaasbad.props" "${D[@]}" --describe
dc_expect 2 "sasl.jaas.config: unterminated quote" "$DC_TMP/err" \
  "sasl.jaas.config with an open quote: a usage error saying so"
props jaasother security.protocol=SASL_PLAINTEXT sasl.mechanism=OAUTHBEARER \
  'sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;'
run --bootstrap-server "127.0.0.1:$SASL_PORT" \
  --command-config "$DC_TMP/jaasother.props" "${D[@]}" --describe
dc_expect 2 "login module org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule is not read here" \
  "$DC_TMP/err" "sasl.jaas.config with another login module: refused, naming it"

# ---- --reload-keystore ---------------------------------------------------
A=(--bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/scram512.props")
run "${A[@]}" --reload-keystore
dc_expect 0 "^reloaded listener SSL: subject CN=localhost,O=dynconf-test, valid until [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$" \
  "$DC_TMP/out" "--reload-keystore: one line per TLS listener (SSL)"
grep -q "^reloaded listener SASL_SSL: " "$DC_TMP/out"
tap_ok $? "... and SASL_SSL"
grep -qx "reloaded ACL file $DC_TMP/acl" "$DC_TMP/out" &&
  grep -qx "reloaded credentials $CREDS" "$DC_TMP/out"
tap_ok $? "... and one line per security file: the ACL file and the credentials"

# Rotate: a new certificate with another CN, then reload one listener.
sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" leaf rotated localhost-rotated ||
  tap_bail "minting a new certificate failed"
cp "$CERTS/rotated.key" "$SRV/server.key.new"
cp "$CERTS/rotated.pem" "$SRV/server.pem.new"
mv "$SRV/server.key.new" "$SRV/server.key"
mv "$SRV/server.pem.new" "$SRV/server.pem"
run "${A[@]}" --reload-keystore --listener SSL
dc_expect 0 "^reloaded listener SSL: subject CN=localhost-rotated,O=dynconf-test, valid until " \
  "$DC_TMP/out" "--listener SSL: the rotated certificate is served"
[ "$(grep -c listener "$DC_TMP/out")" -eq 1 ]
tap_ok $? "... and only that listener is reported"
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --describe
dc_expect 0 "^  acks=all " "$DC_TMP/out" "SSL still works after the reload"
run "${A[@]}" --reload-keystore --listener SSL --json
dc_expect 0 '^\{"listeners":\[\{"listener":"SSL","ok":true,"error":null,"subject":"CN=localhost-rotated,O=dynconf-test","not_after":"' \
  "$DC_TMP/out" "--reload-keystore --json"
grep -qF "],\"files\":[{\"what\":\"ACL file\",\"path\":\"$DC_TMP/acl\",\"ok\":true,\"error\":null},{\"what\":\"credentials\",\"path\":\"$CREDS\",\"ok\":true,\"error\":null}]}" \
  "$DC_TMP/out"
tap_ok $? "... with the files"

# A bad new key: the reload fails, the old material stays in use.
echo "not a key" >"$SRV/server.key"
run "${A[@]}" --reload-keystore
dc_expect 1 "^listener SSL: reload failed: " "$DC_TMP/out" \
  "a bad key: 'reload failed' line, exit 1"
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --describe
dc_expect 0 "^  acks=all " "$DC_TMP/out" "... and SSL keeps serving the previous certificate"
cp "$CERTS/rotated.key" "$SRV/server.key"

# A certificate for another name: the client's host check refuses it
# unless ssl.endpoint.identification.algorithm=none.
(cd "$CERTS" &&
  openssl req -new -newkey rsa:2048 -nodes -keyout other.key \
    -subj "/O=dynconf-test/CN=other.example" -out other.csr 2>/dev/null &&
  printf 'subjectAltName=DNS:other.example\n' >other.ext &&
  openssl x509 -req -in other.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -sha256 -extfile other.ext -out other.pem 2>/dev/null) ||
  tap_bail "minting a certificate for another name failed"
cp "$CERTS/other.key" "$SRV/server.key"
cp "$CERTS/other.pem" "$SRV/server.pem"
run "${A[@]}" --reload-keystore --listener SSL
dc_expect 0 "^reloaded listener SSL: subject CN=other.example," "$DC_TMP/out" \
  "reload to a certificate for another host name"
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/ssl.props" \
  "${D[@]}" --describe
dc_expect 1 "failed: certificate verify failed \(IP address mismatch\)" "$DC_TMP/err" \
  "the client checks the IP against the certificate"
props nohost security.protocol=SSL "ssl.ca.location=$CERTS/ca.pem" \
  ssl.endpoint.identification.algorithm=none
run --bootstrap-server "127.0.0.1:$SSL_PORT" --command-config "$DC_TMP/nohost.props" \
  "${D[@]}" --describe
dc_expect 0 "^  acks=all " "$DC_TMP/out" \
  "ssl.endpoint.identification.algorithm=none skips only the name check"
props nohost_rogue security.protocol=SSL "ssl.ca.location=$CERTS/rogue-ca.pem" \
  ssl.endpoint.identification.algorithm=none
run --bootstrap-server "127.0.0.1:$SSL_PORT" \
  --command-config "$DC_TMP/nohost_rogue.props" "${D[@]}" --describe
dc_expect 1 "certificate verify failed" "$DC_TMP/err" \
  "... the chain is still verified"

# A broken credentials file beside a new ACL rule: the rule is reloaded,
# the credentials in use stay, and the CLI says which is which.
props alice security.protocol=SASL_PLAINTEXT sasl.mechanism=SCRAM-SHA-512 \
  sasl.username=alice sasl.password=alice-pw
AL=(--bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/alice.props")
run "${AL[@]}" --entity-type clients --entity-name alice-app --alter \
  --add-config acks=1
dc_expect 1 "CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "alice may not alter alice-app yet"
cp "$CREDS" "$DC_TMP/users.creds.good"
echo "bob SCRAM-SHA-256 nonsense" >"$CREDS"
echo "allow User:alice alter client:alice-app" >>"$DC_TMP/acl"
run "${A[@]}" --reload-keystore --listener SSL
dc_expect 1 "^credentials $CREDS: not reloaded, old credentials kept: credentials file $CREDS line 1: " \
  "$DC_TMP/out" "a broken credentials file: not reloaded, why, exit 1"
grep -qx "reloaded ACL file $DC_TMP/acl" "$DC_TMP/out"
tap_ok $? "... the ACL file beside it is reloaded"
run "${AL[@]}" --entity-type clients --entity-name alice-app --alter \
  --add-config acks=1
dc_expect 0 "^Completed updating" "$DC_TMP/out" \
  "... so its new rule applies, and alice logs in with the credentials kept"
cp "$DC_TMP/users.creds.good" "$CREDS"

run "${A[@]}" --reload-keystore --listener NOPE
dc_expect 1 "NOPE" "$DC_TMP/err" "--listener with an unknown name fails"
run "${AL[@]}" --reload-keystore
dc_expect 1 "^Error: CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "--reload-keystore without alter on broker is denied"
run --bootstrap-server "127.0.0.1:$SASL_PORT" --reload-keystore --describe
dc_expect 2 "is a command of its own" "$DC_TMP/err" \
  "--reload-keystore does not mix with --describe"
run --help
dc_expect 0 "--command-config FILE" "$DC_TMP/out" "--help documents --command-config"
grep -q -- "--reload-keystore" "$DC_TMP/out"
tap_ok $? "--help documents --reload-keystore"

dc_stop_daemon
tap_is "$?" 0 "dynconfd stops cleanly"

# ---- a mechanism the server does not enable ------------------------------
dc_start_daemon "$DC_TMP/data2" --listeners SASL_PLAINTEXT://127.0.0.1:0 \
  --credentials "$CREDS" --sasl-enabled-mechanisms SCRAM-SHA-512 ||
  tap_bail "second dynconfd did not start"
SASL_PORT=$(port_of SASL_PLAINTEXT)
run --bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/plain.props" \
  "${D[@]}" --describe
dc_expect 1 "SASL mechanism PLAIN is not enabled on 127\.0\.0\.1:$SASL_PORT \(enabled: SCRAM-SHA-512\)" \
  "$DC_TMP/err" "a mechanism the server does not enable: clear error"
run --bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/scram512.props" \
  "${D[@]}" --describe
dc_expect 0 "^Dynamic configs for the default client-id are:" "$DC_TMP/out" \
  "the enabled mechanism works"
# No TLS listener, but a credentials file: that is what is reloaded.
run --bootstrap-server "127.0.0.1:$SASL_PORT" --command-config "$DC_TMP/scram512.props" \
  --reload-keystore
dc_expect 0 "^reloaded credentials $CREDS$" "$DC_TMP/out" \
  "--reload-keystore without TLS: says the credentials were reloaded"
! grep -q "nothing to reload" "$DC_TMP/out"
tap_ok $? "... and not that there was nothing to reload"
dc_stop_daemon

# Neither a TLS listener nor a security file: nothing to reload.
dc_start_daemon "$DC_TMP/data3" || tap_bail "third dynconfd did not start"
run --bootstrap-server "127.0.0.1:$DC_PORT" --reload-keystore
dc_expect 0 "^no TLS listener on 127\.0\.0\.1:$DC_PORT and no security file: nothing to reload$" \
  "$DC_TMP/out" "--reload-keystore with nothing to reload says so, exit 0"
dc_stop_daemon

tap_done
