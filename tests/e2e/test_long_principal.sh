#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# TAP tests: certificate principals are compared whole. Two client
# certificates from the test CA whose RFC 2253 subjects are over 600 bytes
# and differ only at the end (a long run of OUs, then CN=victim-1 or
# CN=attacker-1; and a CN of 64 CJK characters, which escape to 9 bytes
# each) are two principals to the ACLs and in the audit history. A subject
# whose principal is exactly DC_PRINCIPAL_MAX (4096) bytes is served; one
# byte more fails the TLS handshake, dynconfd logs why and serves on. SASL
# names are whole too: two 255-byte user names that differ in their last
# byte are two principals, and a longer name fails with a clear error.
# Uses dynconf-configs with --command-config for certificates and SASL.
set -u
DC_DAEMON_WRAPPER=${DC_DAEMON_WRAPPER:-} # lib.sh reads it unset-or-not
. "$(dirname "$0")/../lib.sh"

command -v openssl >/dev/null || {
  echo "1..0 # SKIP openssl not installed"
  exit 0
}
CERTS="$DC_TMP/certs"
DATA="$DC_TMP/data"
LIMIT=4096
sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" || tap_bail "gen_certs.sh failed"

# mint NAME SUBJECT: a client certificate with that subject from the test CA.
mint() {
  sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" leaf-subject "$1" "$2" ||
    tap_bail "minting certificate $1 failed"
}
# principal NAME: the principal dynconfd derives (User: + RFC 2253 subject).
principal() {
  local s
  s=$(openssl x509 -in "$CERTS/$1.pem" -noout -subject -nameopt RFC2253)
  printf 'User:%s' "${s#subject=}"
}
repeat() { # repeat COUNT TEXT
  local i out=
  for ((i = 0; i < $1; i++)); do out+=$2; done
  printf '%s' "$out"
}

# RFC 2253 prints the last RDN first, so the CN given first comes last.
OU=$(repeat 60 o)
OUS=$(repeat 10 "/OU=$OU")
mint victim "/CN=victim-1$OUS"
mint attacker "/CN=attacker-1$OUS"
HAN=$(repeat 63 中)
mint cjkvictim "/CN=${HAN}甲/O=dynconf-test"
mint cjkattacker "/CN=${HAN}乙/O=dynconf-test"
# Exactly LIMIT bytes: 5 ("User:") + 63 * 64 (OU=...,) + 3 ("CN=") + 56.
EDGE_OUS=$(repeat 63 "/OU=$OU")
mint edge "/CN=edge-$(repeat 51 e)$EDGE_OUS"
mint over "/CN=over-$(repeat 52 e)$EDGE_OUS"

V=$(principal victim)
A=$(principal attacker)
CV=$(principal cjkvictim)
CA=$(principal cjkattacker)
E=$(principal edge)
[ ${#V} -gt 600 ] && [ "$V" != "$A" ] && [ "${V:0:484}" = "${A:0:484}" ]
tap_ok $? "victim/attacker principals: ${#V} bytes, same first 484 (what a 480-byte subject buffer kept)"
[ ${#CV} -gt 580 ] && [ "$CV" != "$CA" ] && [ "${CV:0:484}" = "${CA:0:484}" ]
tap_ok $? "64-character CJK CNs: ${#CV}-byte principals, same first 484"
tap_is "${#E}" "$LIMIT" "the edge certificate's principal is exactly the limit"
tap_is "$(principal over | wc -c)" $((LIMIT + 1)) \
  "the over certificate's principal is one byte more"

# printf, not echo: the CJK principals hold backslashes (\E4\B8...). The
# second and fourth rules name only the first 484 bytes, as a principal cut
# to fit a fixed buffer would read: they must match neither certificate.
{
  printf 'allow "%s" alter client:victim-1\n' "$V"
  printf 'allow "%s" alter client:victim-1\n' "${V:0:484}"
  printf 'allow "%s" alter client:cjk-1\n' "${CV:0:484}"
  printf 'allow "%s" alter client:cjk-1\n' "$CV"
  printf 'allow "%s" alter client:edge\n' "$E"
} >"$DC_TMP/acl"

# Two 255-byte SASL users (the longest accepted) differing at the end.
SU=$(repeat 254 s)
for u in "${SU}a" "${SU}b"; do
  echo pw | "$DC_DYNCONFD" --credentials "$DC_TMP/creds" --add-user "$u" \
    --iterations 4096 >/dev/null || tap_bail "--add-user of a 255-byte name failed"
done
printf 'allow "User:%s" alter client:sasl-1\n' "${SU}a" >>"$DC_TMP/acl"

dc_start_daemon "$DATA" --listeners SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0 \
  --credentials "$DC_TMP/creds" \
  --ssl-cert "$CERTS/server.pem" --ssl-key "$CERTS/server.key" \
  --ssl-ca "$CERTS/ca.pem" --ssl-client-auth required \
  --acl-file "$DC_TMP/acl" || tap_bail "dynconfd did not start"
port_of() { # port_of LISTENER_NAME
  sed -n "s/^listening on [^ ]*:\([0-9]*\) ($1 .*/\1/p" "$DC_DAEMON_OUT"
}
SSL_PORT=$(port_of SSL)
SASL_PORT=$(port_of SASL_PLAINTEXT)
[ -n "$SSL_PORT" ] && [ -n "$SASL_PORT" ]
tap_ok $? "dynconfd reports its SSL and SASL_PLAINTEXT listeners" ||
  tap_bail "listener ports missing"

# as NAME ARGS...: dynconf-configs with NAME's certificate; $rc, out, err.
as() {
  local who=$1
  shift
  printf '%s\n' security.protocol=SSL "ssl.ca.location=$CERTS/ca.pem" \
    "ssl.certificate.location=$CERTS/$who.pem" \
    "ssl.key.location=$CERTS/$who.key" >"$DC_TMP/$who.props"
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$SSL_PORT" \
    --command-config "$DC_TMP/$who.props" "$@" >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
alter() { # alter WHO CLIENT KEY=VALUE
  as "$1" --entity-type clients --entity-name "$2" --alter --add-config "$3"
}

alter victim victim-1 acks=1
dc_expect 0 "^Completed updating config for client-id 'victim-1'" "$DC_TMP/out" \
  "the victim's certificate may alter client:victim-1"
alter attacker victim-1 acks=0
dc_expect 1 "CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "the attacker's certificate (same first 484 bytes) is denied"
as victim --entity-type clients --entity-name victim-1 --describe
dc_expect 0 "^  acks=1 " "$DC_TMP/out" "client:victim-1 keeps the victim's value"

alter cjkvictim cjk-1 linger.ms=5
dc_expect 0 "^Completed updating" "$DC_TMP/out" \
  "the CJK victim's certificate may alter client:cjk-1"
alter cjkattacker cjk-1 linger.ms=9
dc_expect 1 "CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "the CJK attacker's certificate is denied"

alter edge edge acks=all
dc_expect 0 "^Completed updating" "$DC_TMP/out" \
  "a $LIMIT-byte principal is served and matched whole"

hist=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DATA" --history)
tap_is $? 0 "--history works while the daemon runs"
# has_row PRINCIPAL ENTITY: a history row by exactly PRINCIPAL on client:ENTITY.
has_row() {
  printf '%s\n' "$hist" | grep -F -- " $1 " | grep -Fq " client:$2 "
}
has_row "$V" victim-1
tap_ok $? "the audit row carries the whole ${#V}-byte victim principal"
has_row "$CV" cjk-1
tap_ok $? "... the whole ${#CV}-byte CJK principal"
has_row "$E" edge
tap_ok $? "... and the whole $LIMIT-byte one" ||
  printf '%s\n' "$hist" | cut -c1-200 | sed 's/^/#   /'
printf '%s\n' "$hist" | grep -F -q -- " $A "
[ $? -ne 0 ]
tap_ok $? "no audit row names the attacker"

# sasl MECHANISM USER ARGS...: dynconf-configs as USER (password pw).
sasl() {
  local mech=$1 user=$2
  shift 2
  printf '%s\n' security.protocol=SASL_PLAINTEXT "sasl.mechanism=$mech" \
    "sasl.username=$user" sasl.password=pw >"$DC_TMP/sasl.props"
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$SASL_PORT" \
    --command-config "$DC_TMP/sasl.props" "$@" >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
SA=(--entity-type clients --entity-name sasl-1 --alter --add-config)
sasl SCRAM-SHA-256 "${SU}a" "${SA[@]}" acks=1
dc_expect 0 "^Completed updating" "$DC_TMP/out" \
  "SASL: the 255-byte user named in the ACL may alter client:sasl-1"
sasl PLAIN "${SU}b" "${SA[@]}" acks=0
dc_expect 1 "CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "SASL: the user differing in the 255th byte is denied"
printf '%s\n' "$(timeout 30 "$DC_DYNCONFD" --data-dir "$DATA" --history)" |
  grep -F -- " User:${SU}a " | grep -Fq " client:sasl-1 acks "
tap_ok $? "SASL: the audit row carries the whole 260-byte principal"
for mech in PLAIN SCRAM-SHA-256; do
  sasl "$mech" "${SU}ab" "${SA[@]}" acks=0
  dc_expect 1 "the user name is 256 bytes, over the limit of 255" "$DC_TMP/err" \
    "SASL $mech: a 256-byte user name fails with a clear error"
done

# One byte over the limit: refused at the handshake, never shortened.
alter over edge acks=0
[ "$rc" -ne 0 ] && ! grep -q "^Completed" "$DC_TMP/out"
tap_ok $? "a certificate one byte over the limit cannot alter (exit $rc)" ||
  sed 's/^/#     /' "$DC_TMP/err" | cut -c1-300
grep -Eq "WARN TLS handshake with 127\.0\.0\.1:[0-9]+ on listener SSL failed: .*principal would be $((LIMIT + 1)) bytes, 1 over the limit of $LIMIT" \
  "$DC_DAEMON_LOG"
tap_ok $? "dynconfd logs the peer and by how much the subject is over" ||
  dc_log_tail 10
dc_daemon_alive
tap_ok $? "dynconfd still runs"
as edge --entity-type clients --entity-name edge --describe
dc_expect 0 "^  acks=all " "$DC_TMP/out" "... and serves others (edge's value unchanged)"

dc_stop_daemon
tap_is $? 0 "dynconfd stops cleanly"
tap_done
