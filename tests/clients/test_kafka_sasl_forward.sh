#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Forwarding between replicas that have only SASL_SSL listeners, on a real
# Apache Kafka cluster (3 KRaft nodes, PLAINTEXT to the replicas): three
# dynconfd replicas, each with one SASL_SSL listener, SCRAM credentials,
# an ACL file and their own principal (User:replica) a super user, forward
# as User:replica with --forward-config (SCRAM-SHA-512). An alter sent to
# a follower by alice (SCRAM-SHA-256 over SASL_SSL, dynconf-configs
# --command-config) is forwarded, stored, served by every replica, and the
# history names alice, not the replica; one by mallory, whom the ACL file
# does not let alter, is refused as mallory. A fourth replica whose forward
# password is wrong answers the client NOT_CONTROLLER (retriable), logs
# the SASL failure, and stores nothing. A SASL forward listener without
# --forward-config is a usage error naming the option.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v openssl >/dev/null || tap_bail "openssl is needed"
CERTS=$DC_TMP/certs
sh "$DC_SRCDIR/tests/gen_certs.sh" "$CERTS" || tap_bail "gen_certs.sh failed"
CREDS=$DC_TMP/users.creds
for u in replica:replica-pw alice:alice-pw mallory:mallory-pw; do
  echo "${u#*:}" | "$DC_DYNCONFD" --credentials "$CREDS" --add-user "${u%%:*}" \
    --iterations 4096 >/dev/null || tap_bail "--add-user ${u%%:*} failed"
done
printf 'allow User:alice all client:*\nallow User:mallory describe client:*\n' \
  >"$DC_TMP/acl"
props() { # props NAME KEY=VALUE...: $DC_TMP/NAME.properties
  local f=$DC_TMP/$1.properties
  shift
  printf '%s\n' "$@" >"$f"
}
props forward security.protocol=SASL_SSL sasl.mechanism=SCRAM-SHA-512 \
  sasl.username=replica sasl.password=replica-pw
props badforward sasl.mechanism=SCRAM-SHA-512 sasl.username=replica \
  sasl.password=not-the-password
for u in alice mallory; do
  props "$u" security.protocol=SASL_SSL "ssl.ca.location=$CERTS/ca.pem" \
    sasl.mechanism=SCRAM-SHA-256 "sasl.username=$u" "sasl.password=$u-pw"
done

dc_kafka_start 3
# --listen (not --listeners), so that dc_start_daemon adds no PLAINTEXT one.
SECURITY=(--listen SASL_SSL://127.0.0.1:0 --ssl-cert "$CERTS/server.pem"
  --ssl-key "$CERTS/server.key" --ssl-ca "$CERTS/ca.pem"
  --credentials "$CREDS" --acl-file "$DC_TMP/acl" --super-users User:replica)
STORE=(--store kafka --store-bootstrap "$KBS" --store-timeout-ms 20000
  --store-session-timeout-ms 6000)

# ---- a SASL listener and no credentials -----------------------------------
timeout 60 "$DC_DYNCONFD" --data-dir "$DC_TMP/u" "${STORE[@]}" "${SECURITY[@]}" \
  --forward-listener SASL_SSL >"$DC_TMP/u.out" 2>"$DC_TMP/u.err"
rc=$?
tap_is "$rc" 2 "--forward-listener SASL_SSL without --forward-config: a usage error"
tap_like "$(cat "$DC_TMP/u.err")" "forward-listener SASL_SSL is a SASL_SSL listener: .*--forward-config FILE" \
  "  naming --forward-config"

declare -A PID PORT
start() { # start NODE FORWARD_CONFIG_NAME
  dc_start_daemon "$DC_TMP/n$1" "${STORE[@]}" "${SECURITY[@]}" --node-id "$1" \
    --forward-config "$DC_TMP/$2.properties" ||
    tap_bail "replica $1 did not start"
  PID[$1]=$DC_PID PORT[$1]=$DC_PORT
  DC_MORE_PIDS="${PID[*]}"
}
cli() { # cli NODE USER TIMEOUT_MS ARGS...
  timeout 90 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:${PORT[$1]}" \
    --command-config "$DC_TMP/$2.properties" --timeout-ms "$3" "${@:4}"
}
value_of() { # value_of NODE ENTITY KEY
  cli "$1" alice 30000 --entity-type clients --entity-name "$2" --describe \
    2>/dev/null | sed -n "s/^ *$3=\([^ ]*\) .*/\1/p"
}
await_value() { # await_value NODE ENTITY KEY WANT: polls for up to 30 s
  local i v=
  for ((i = 0; i < 300; i++)); do
    v=$(value_of "$1" "$2" "$3")
    [ "$v" = "$4" ] && break
    sleep 0.1
  done
  printf '%s' "$v"
}

start 1 forward
dc_await_grep "$DC_DAEMON_LOG" "writing _dynconf_configs as node 1" ||
  tap_bail "node 1 did not take the config topic"
start 2 forward
start 3 forward
for n in 2 3; do
  dc_await_grep "$DC_DAEMON_LOG" "node $n is a replica" ||
    tap_bail "node $n was not seen as a replica"
done
for n in 1 2 3; do
  tap_like "$(cat "$DC_TMP/dynconfd.$n.out")" "^listening on 127\.0\.0\.1:${PORT[$n]} \(SASL_SSL SASL_SSL\)$" \
    "node $n listens on SASL_SSL"
  tap_is "$(grep -c '^listening on' "$DC_TMP/dynconfd.$n.out")" 1 "  and nothing else"
done

# ---- alters through the followers -----------------------------------------
cli 2 alice 30000 --entity-type clients --entity-name app --alter \
  --add-config linger.ms=7 >"$DC_TMP/out" 2>"$DC_TMP/err"
rc=$?
dc_expect 0 "Completed updating config for client-id 'app'" "$DC_TMP/out" \
  "alice's alter sent to follower 2 is forwarded over SASL_SSL and acknowledged"
tap_is "$(value_of 2 app linger.ms)" 7 "  follower 2 serves it at once (read your writes)"
for n in 1 3; do
  tap_is "$(await_value $n app linger.ms 7)" 7 "  node $n serves it"
done
cli 3 alice 30000 --entity-type clients --entity-name app --alter \
  --add-config acks=0 >"$DC_TMP/out" 2>"$DC_TMP/err"
rc=$?
dc_expect 0 "Completed updating config" "$DC_TMP/out" \
  "one sent to follower 3 is forwarded too"
cli 2 mallory 30000 --entity-type clients --entity-name app --alter \
  --add-config linger.ms=666 >"$DC_TMP/out" 2>"$DC_TMP/err"
rc=$?
dc_expect 1 "AUTHORIZATION_FAILED" "$DC_TMP/err" \
  "mallory's alter through follower 2 is refused: the writer authorizes mallory, not the replica"
tap_is "$(value_of 1 app linger.ms)" 7 "  and nothing changed"

hist=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/n1" --history)
tap_like "$hist" "User:alice 127\\.0\\.0\\.1:[0-9]+ IncrementalAlterConfigs client:app linger\\.ms SET \\(unset\\) -> 7" \
  "the writer's history names alice and her address for the forwarded alter"
tap_like "$hist" "User:alice .* client:app acks SET \\(unset\\) -> 0" \
  "  and for the one through follower 3"
tap_is "$(grep -c 'User:replica' <<<"$hist")" 0 "  never the replica's principal"

# ---- wrong forward credentials ---------------------------------------------
mark=$(wc -l <"$DC_DAEMON_LOG")
start 4 badforward
dc_await_grep "$DC_DAEMON_LOG" "node 4 is a replica" ||
  tap_bail "node 4 was not seen as a replica"
cli 4 alice 4000 --entity-type clients --entity-name app --alter \
  --add-config linger.ms=99 >"$DC_TMP/out" 2>"$DC_TMP/err"
rc=$?
dc_expect 1 "NOT_CONTROLLER: cannot authenticate to node 1 at 127\\.0\\.0\\.1:[0-9]+, which writes, with this replica's credentials \\(--forward-config\\): SASL authentication failed" \
  "$DC_TMP/err" \
  "a follower with a wrong forward password answers NOT_CONTROLLER (retried until --timeout-ms), saying why"
log=$(tail -n "+$((mark + 1))" "$DC_DAEMON_LOG")
tap_like "$log" "alter from 127\\.0\\.0\\.1:[0-9]+ not forwarded: cannot authenticate to node 1 .*SASL authentication failed" \
  "  it logs the SASL failure"
tap_is "$(value_of 1 app linger.ms)" 7 "  and nothing was stored"

for n in 1 2 3 4; do
  kill -TERM "${PID[$n]}"
  wait "${PID[$n]}" 2>/dev/null
  tap_is $? 0 "replica $n stops cleanly"
done
tap_done
