#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Forwarding between replicas as themselves (dynconfd --forward-config) on
# librdkafka's mock cluster. Usage errors, each before the store opens: a
# file with an unknown property, a SASL forward listener without
# credentials, one the file's security.protocol does not match, credentials
# with no SASL listener, a mechanism without its password.
# mTLS: replicas with only an SSL listener requiring client certificates
# and an ACL file; a follower whose --forward-config presents the replica
# certificate (User:CN=replica,..., a super user) forwards alice's alter,
# stored as alice; one forwarding with its default (the server's own
# certificate, not a super user) is refused by the writer.
# OAUTHBEARER: replicas with only a SASL_PLAINTEXT listener taking unsigned
# tokens, sessions of 3 s (--connections-max-reauth-ms); the follower's
# token file is read at each connection to the writer: alters forward,
# again after the writer's session on the kept connection has ended; with
# an expired token in the file the writer refuses the replica (logged,
# NOT_CONTROLLER to the client); with a fresh one it forwards again, no
# restart.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v openssl >/dev/null || tap_bail "openssl is needed"
command -v python3 >/dev/null || tap_bail "python3 is needed"

CERTS=$DC_TMP/certs
CLIENTS="alice replica" sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" ||
  tap_bail "gen_certs.sh failed"
dc_mock_start --topic oauth --partitions 1 --topic oauth_history --partitions 1
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000
  --store-session-timeout-ms 3000)
TLS=(--ssl-cert "$CERTS/server.pem" --ssl-key "$CERTS/server.key"
  --ssl-ca "$CERTS/ca.pem")
props() { # props NAME KEY=VALUE...: $DC_TMP/NAME.properties
  local f=$DC_TMP/$1.properties
  shift
  printf '%s\n' "$@" >"$f"
}
token() { # token SUB LIFE_S: an unsigned JWT (alg none)
  python3 -c 'import base64, json, sys, time
def b(d):
    return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
now = int(time.time())
print(b({"alg": "none"}) + "." + b({"sub": sys.argv[1], "iat": now,
      "exp": now + int(sys.argv[2])}) + ".")' "$1" "$2"
}
put_token() { # put_token SUB LIFE_S: into the replicas' token file, whole
  token "$1" "$2" >"$DC_TMP/token.tmp" && mv "$DC_TMP/token.tmp" "$DC_TMP/token"
}

# ---- usage errors -----------------------------------------------------------
usage() { # usage ARGS...: dynconfd as a replica; $rc, $DC_TMP/out, err
  timeout 60 "$DC_DYNCONFD" --data-dir "$DC_TMP/u" "${STORE[@]}" "$@" \
    >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
props typo security.protocol=SASL_SSL sasl.usrname=replica
props ssl security.protocol=SSL
props scram sasl.mechanism=SCRAM-SHA-256 sasl.username=replica \
  sasl.password=pw
props nopass sasl.mechanism=SCRAM-SHA-256 sasl.username=replica
usage --listen SASL_SSL://127.0.0.1:0 "${TLS[@]}" \
  --forward-config "$DC_TMP/typo.properties"
dc_expect 2 "dynconfd: --forward-config: .*typo.properties:2: unknown property 'sasl.usrname'" \
  "$DC_TMP/err" "an unknown property in --forward-config: a usage error naming it"
usage --listen SASL_PLAINTEXT://127.0.0.1:0 --forward-listener SASL_PLAINTEXT
dc_expect 2 "forward-listener SASL_PLAINTEXT is a SASL_PLAINTEXT listener: .*needs its credentials in --forward-config FILE" \
  "$DC_TMP/err" "a SASL forward listener without --forward-config: a usage error naming the option"
usage --listen SASL_SSL://127.0.0.1:0 "${TLS[@]}" --forward-listener SASL_SSL \
  --forward-config "$DC_TMP/ssl.properties"
dc_expect 2 "forward-listener SASL_SSL is a SASL_SSL listener but --forward-config .* says security.protocol=SSL" \
  "$DC_TMP/err" "a forward listener the file's security.protocol does not match"
usage --listen SSL://127.0.0.1:0 "${TLS[@]}" \
  --forward-config "$DC_TMP/scram.properties"
dc_expect 2 "no listener has a protocol it speaks \\(SASL_PLAINTEXT or SASL_SSL\\)" \
  "$DC_TMP/err" "SASL credentials and no SASL listener"
usage --listen SASL_PLAINTEXT://127.0.0.1:0 \
  --forward-config "$DC_TMP/nopass.properties"
dc_expect 2 "forward-config .*nopass.properties: SASL mechanism SCRAM-SHA-256 needs a password" \
  "$DC_TMP/err" "a mechanism without its password"
[ ! -e "$DC_TMP/u/dynconfd.db" ] && [ -z "$(ls -A "$DC_TMP/u" 2>/dev/null)" ]
tap_ok $? "  none of them opened the store"

declare -A PID PORT
start() { # start NODE ARGS...
  local n=$1
  shift
  dc_start_daemon "$DC_TMP/n$n" "${STORE[@]}" --node-id "$n" "$@" ||
    tap_bail "replica $n did not start"
  PID[$n]=$DC_PID PORT[$n]=$DC_PORT
  DC_MORE_PIDS="${PID[*]}"
}
stop() { # stop NODE...: each stops cleanly (exit 0, sanitizers quiet)
  local n rc
  for n in "$@"; do
    kill -TERM "${PID[$n]}"
    wait "${PID[$n]}" 2>/dev/null
    rc=$?
    tap_is "$rc" 0 "replica $n stops cleanly"
  done
}
alter() { # alter NODE PROPS TIMEOUT_MS ENTITY CONFIG: $rc, out, err
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:${PORT[$1]}" \
    --command-config "$DC_TMP/$2.properties" --timeout-ms "$3" \
    --entity-type clients --entity-name "$4" --alter --add-config "$5" \
    >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
history_of() { timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/n$1" --history; }

# ---- mTLS -----------------------------------------------------------------------
ALICE='User:CN=alice,O=dynconf-test'
REPLICA='User:CN=replica,O=dynconf-test'
printf 'allow "%s" all client:*\n' "$ALICE" >"$DC_TMP/acl"
props mtls security.protocol=SSL "ssl.certificate.location=$CERTS/replica.pem" \
  "ssl.key.location=$CERTS/replica.key"
props alice-ssl security.protocol=SSL "ssl.ca.location=$CERTS/ca.pem" \
  "ssl.certificate.location=$CERTS/alice.pem" "ssl.key.location=$CERTS/alice.key"
MTLS=(--listen SSL://127.0.0.1:0 "${TLS[@]}" --ssl-client-auth required
  --acl-file "$DC_TMP/acl" --super-users "$REPLICA")
start 1 "${MTLS[@]}" --forward-config "$DC_TMP/mtls.properties"
dc_await_grep "$DC_DAEMON_LOG" "writing _dynconf_configs as node 1" ||
  tap_bail "node 1 did not take the config topic"
start 2 "${MTLS[@]}" --forward-config "$DC_TMP/mtls.properties"
start 3 "${MTLS[@]}"
alter 2 alice-ssl 30000 app linger.ms=5
dc_expect 0 "Completed updating config" "$DC_TMP/out" \
  "alice's alter sent to follower 2 (SSL only) is forwarded with the replica certificate"
hist=$(history_of 1)
tap_like "$hist" "$ALICE 127\\.0\\.0\\.1:[0-9]+ IncrementalAlterConfigs client:app linger\\.ms SET \\(unset\\) -> 5" \
  "  the writer stored it as alice"
tap_is "$(grep -c 'CN=replica' <<<"$hist")" 0 "  not as the replica"
alter 3 alice-ssl 30000 app acks=0
dc_expect 1 "CLUSTER_AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "follower 3 forwards with its own server certificate by default: not a super user, refused"
tap_is "$(grep -c 'acks' <<<"$(history_of 1)")" 0 "  nothing stored"
stop 1 2 3

# ---- OAUTHBEARER, a token file ------------------------------------------------
printf 'allow User:alice all client:*\n' >"$DC_TMP/acl"
put_token replica 3600
props oauth sasl.mechanism=OAUTHBEARER \
  "sasl.oauthbearer.token.endpoint.url=file://$DC_TMP/token"
props alice-oauth security.protocol=SASL_PLAINTEXT sasl.mechanism=OAUTHBEARER \
  "sasl.oauthbearer.config=principal=alice" \
  enable.sasl.oauthbearer.unsecure.jwt=true
OAUTH=(--store-topic oauth --listen SASL_PLAINTEXT://127.0.0.1:0
  --sasl-oauthbearer-unsecured --sasl-oauthbearer-clock-skew-seconds 0
  --connections-max-reauth-ms 3000 --acl-file "$DC_TMP/acl"
  --super-users User:replica --forward-config "$DC_TMP/oauth.properties")
start 11 "${OAUTH[@]}"
dc_await_grep "$DC_DAEMON_LOG" "writing oauth as node 11" ||
  tap_bail "node 11 did not take the topic"
start 12 "${OAUTH[@]}"
alter 12 alice-oauth 30000 app linger.ms=11
dc_expect 0 "Completed updating config" "$DC_TMP/out" \
  "alice's alter sent to follower 12 (SASL_PLAINTEXT only) is forwarded with the token file's token"
tap_like "$(history_of 11)" "User:alice 127\\.0\\.0\\.1:[0-9]+ IncrementalAlterConfigs client:app linger\\.ms SET \\(unset\\) -> 11" \
  "  the writer stored it as alice"
# The writer ends the follower's session 3 s after it authenticated; a
# request on it after that would be dropped unread.
sleep 3.5
alter 12 alice-oauth 30000 app linger.ms=12
dc_expect 0 "Completed updating config" "$DC_TMP/out" \
  "after the writer's session on the kept connection ended, the next alter is forwarded on a new one"

put_token replica -60
mark=$(wc -l <"$DC_DAEMON_LOG")
alter 12 alice-oauth 3000 app linger.ms=13
dc_expect 1 "NOT_CONTROLLER: cannot authenticate to node 11 at 127\\.0\\.0\\.1:[0-9]+, which writes, with this replica's credentials \\(--forward-config\\): SASL authentication failed" \
  "$DC_TMP/err" "an expired token in the file: the writer refuses the replica, the client is told NOT_CONTROLLER"
tap_like "$(tail -n "+$((mark + 1))" "$DC_DAEMON_LOG")" "not forwarded: cannot authenticate to node 11 .*SASL authentication failed" \
  "  the follower logs the SASL failure"
put_token replica 3600
alter 12 alice-oauth 30000 app linger.ms=14
dc_expect 0 "Completed updating config" "$DC_TMP/out" \
  "a fresh token in the file: forwarded again, without a restart"
hist=$(history_of 11)
tap_like "$hist" "client:app linger\\.ms SET 12 -> 14" "  the refused value never stored"
stop 11 12
dc_mock_stop
tap_done
