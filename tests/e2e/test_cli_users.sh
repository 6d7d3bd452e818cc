#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# TAP tests for dynconf-configs --entity-type users, alone and paired with
# clients (kafka-configs.sh style), against a live dynconfd on loopback:
# alter and describe (plain, --all, --json) of user and user+client
# entities, the resolved view and its sources, names that need encoding,
# a client describe resolved for the caller (PLAINTEXT = User:ANONYMOUS),
# cross-level validation, usage errors, persistence across a restart, and
# authorization errors from a daemon started with --acl-file.
. "$(dirname "$0")/../lib.sh"

rc=0
# cli ARGS...: the CLI against the running daemon; $rc, $DC_TMP/out, err.
cli() {
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" "$@" \
    >"$DC_TMP/out" 2>"$DC_TMP/err"
  rc=$?
}
# has_line DESC LINE: the last output has exactly that line.
has_line() {
  grep -qxF -- "$2" "$DC_TMP/out"
  tap_ok $? "$1" || {
    tap_diag "  no line '$2' in (exit $rc):"
    sed 's/^/#     /' "$DC_TMP/out" "$DC_TMP/err"
  }
}
# rc_err DESC WANT_RC TEXT: exit status and a piece of stderr.
rc_err() {
  [ "$rc" -eq "$2" ] && grep -qF -- "$3" "$DC_TMP/err"
  tap_ok $? "$1" || {
    tap_diag "  exit $rc (want $2), stderr:"
    sed 's/^/#     /' "$DC_TMP/err"
  }
}
lines() { wc -l <"$DC_TMP/out" | tr -d ' '; }

U=(--entity-type users)
C=(--entity-type clients)
UC=(--entity-type users --entity-name alice --entity-type clients --entity-name app)

dc_start_daemon "$DC_TMP/data" || tap_bail "dynconfd did not start"

# ---- the user entity -----------------------------------------------------
cli "${U[@]}" --entity-name alice --describe
tap_is "$rc/$(lines)" "0/1" "describe of an unconfigured user: header only"
has_line "header names the user-principal" \
  "Dynamic configs for user-principal 'alice' are:"
cli "${U[@]}" --entity-name alice --alter --add-config 'acks=all,linger.ms=5'
has_line "alter a user" "Completed updating config for user-principal 'alice'."
cli "${U[@]}" --entity-name alice --describe
has_line "a user's own value, source DYNAMIC_USER_CONFIG" \
  "  acks=all sensitive=false synonyms={DYNAMIC_USER_CONFIG:acks=all}"
cli "${U[@]}" --entity-name alice --alter --delete-config linger.ms --dry-run
has_line "--dry-run on a user" \
  "Validated config for user-principal 'alice' (dry run, nothing changed)."
cli "${U[@]}" --entity-name alice --describe
tap_is "$(lines)" 3 "... nothing changed"

# ---- user + client-id ----------------------------------------------------
cli "${C[@]}" --entity-default --alter --add-config 'acks=1,batch.size=1000'
tap_is "$rc" 0 "set <default>"
cli "${C[@]}" --entity-name app --alter --add-config 'acks=0,linger.ms=7'
tap_is "$rc" 0 "set client app"
cli "${UC[@]}" --alter --add-config acks=-1
has_line "alter a user-principal + client-id" \
  "Completed updating config for user-principal 'alice', client-id 'app'."
cli "${UC[@]}" --describe
has_line "pair header" \
  "Dynamic configs for user-principal 'alice', client-id 'app' are:"
has_line "its own value first, every shadowed level as a synonym, in order" \
  "  acks=-1 sensitive=false synonyms={DYNAMIC_USER_CLIENT_CONFIG:acks=-1, DYNAMIC_USER_CONFIG:acks=all, DYNAMIC_CLIENT_CONFIG:acks=0, DYNAMIC_DEFAULT_CLIENT_CONFIG:acks=1}"
tap_is "$(lines)" 2 "without --all only the pair's own values"
cli "${UC[@]}" --describe --all
has_line "--all header" \
  "All configs for user-principal 'alice', client-id 'app' are:"
has_line "--all: linger.ms from the user over the client" \
  "  linger.ms=5 source=DYNAMIC_USER_CONFIG sensitive=false synonyms={DYNAMIC_USER_CONFIG:linger.ms=5, DYNAMIC_CLIENT_CONFIG:linger.ms=7}"
has_line "--all: batch.size from <default>" \
  "  batch.size=1000 source=DYNAMIC_DEFAULT_CLIENT_CONFIG sensitive=false synonyms={DYNAMIC_DEFAULT_CLIENT_CONFIG:batch.size=1000}"
cli "${C[@]}" --entity-name app --entity-type users --entity-name alice --describe
has_line "clients then users: the same entity" \
  "Dynamic configs for user-principal 'alice', client-id 'app' are:"
cli "${U[@]}" "${C[@]}" --entity-name alice --entity-name app --describe
has_line "types first, then names, paired in order" \
  "Dynamic configs for user-principal 'alice', client-id 'app' are:"
cli "${UC[@]}" --describe --all --json
got=$(python3 -c 'import json,sys
d=json.load(sys.stdin); c={x["name"]:x for x in d["configs"]}
print(d["entity_type"], d["entity_name"], d["client_id"], c["acks"]["source"],
      len(c["acks"]["synonyms"]), c["linger.ms"]["source"])' <"$DC_TMP/out" 2>&1)
tap_is "$got" "users alice app DYNAMIC_USER_CLIENT_CONFIG 4 DYNAMIC_USER_CONFIG" \
  "--json names the pair and carries sources and synonyms"
cli "${U[@]}" --entity-name alice --alter --add-config acks=1 --json
got=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["entity_type"], d["entity_name"], "client_id" in d, d["result"])' <"$DC_TMP/out" 2>&1)
tap_is "$got" "users alice False ok" "--json alter of a user"

# ---- names that need percent-encoding -------------------------------------
cli "${U[@]}" --entity-name 'CN=bob smith,O=x' "${C[@]}" --entity-name 'a/b%' \
  --alter --add-config acks=all
has_line "a DN user and a client-id with '/' and '%'" \
  "Completed updating config for user-principal 'CN=bob smith,O=x', client-id 'a/b%'."
cli "${U[@]}" --entity-name 'CN=bob smith,O=x' "${C[@]}" --entity-name 'a/b%' --describe
has_line "... described back under the same names" \
  "  acks=all sensitive=false synonyms={DYNAMIC_USER_CLIENT_CONFIG:acks=all, DYNAMIC_DEFAULT_CLIENT_CONFIG:acks=1}"

# ---- a client describe is resolved for the caller -------------------------
cli "${U[@]}" --entity-name ANONYMOUS --alter --add-config linger.ms=9
tap_is "$rc" 0 "set user ANONYMOUS (the PLAINTEXT principal)"
cli "${C[@]}" --entity-name app --describe --all
has_line "describing client app as User:ANONYMOUS includes its user level" \
  "  linger.ms=9 source=DYNAMIC_USER_CONFIG sensitive=false synonyms={DYNAMIC_USER_CONFIG:linger.ms=9, DYNAMIC_CLIENT_CONFIG:linger.ms=7}"
cli "${C[@]}" --entity-name app --describe
tap_is "$(lines)" 3 "without --all: the client's own two values only"
has_line "... its own linger.ms, though the caller's user shadows it" \
  "  linger.ms=7 sensitive=false synonyms={DYNAMIC_CLIENT_CONFIG:linger.ms=7}"

# ---- validation across levels ---------------------------------------------
cli "${C[@]}" --entity-default --alter --add-config session.timeout.ms=30000
tap_is "$rc" 0 "<default> session 30000"
cli "${U[@]}" --entity-name alice --alter --add-config heartbeat.interval.ms=50000
rc_err "a user heartbeat above the inherited session is refused" 1 \
  "INVALID_CONFIG: heartbeat.interval.ms (50000) must be lower than session.timeout.ms (30000) for user 'alice'"
cli "${U[@]}" --entity-name alice --alter --add-config heartbeat.interval.ms=10000
tap_is "$rc" 0 "alice heartbeat 10000"
cli "${C[@]}" --entity-name app --alter --add-config session.timeout.ms=8000
rc_err "a client session below a user's heartbeat is refused" 1 \
  "would break user 'alice' with client-id 'app'"

# ---- usage errors ---------------------------------------------------------
usage() { # usage DESC TEXT ARGS...
  local desc=$1 text=$2
  shift 2
  cli "$@" --describe
  rc_err "$desc" 2 "$text"
}
usage "users has no --entity-default" "no default user entity" \
  "${U[@]}" --entity-default
usage "users + brokers" "only as users and clients" \
  "${U[@]}" --entity-name a --entity-type brokers --entity-name 1
usage "clients + clients" "only as users and clients" \
  "${C[@]}" --entity-name a "${C[@]}" --entity-name b
usage "a pair needs two names" "needs two --entity-name" \
  "${U[@]}" --entity-name a "${C[@]}"
usage "a pair with --entity-default" "does not combine" \
  "${U[@]}" --entity-name a "${C[@]}" --entity-default
usage "three entity types" "more than twice" \
  "${U[@]}" "${C[@]}" "${C[@]}" --entity-name a
usage "user with the <default> client-id" "drop --entity-type clients" \
  "${U[@]}" --entity-name a "${C[@]}" --entity-name '<default>'
usage "user named <default>" "no default user entity" \
  "${U[@]}" --entity-name '<default>'
usage "a 256-byte user" "1 to 255 bytes" \
  "${U[@]}" --entity-name "$(printf 'u%.0s' $(seq 256))"
usage "two names for one type" "more than once" \
  "${U[@]}" --entity-name a --entity-name b
usage "unknown type" "clients, users or brokers" --entity-type topics \
  --entity-name t

# ---- persistence, then authorization ---------------------------------------
dc_stop_daemon
tap_is "$?" 0 "dynconfd stops cleanly"
printf '# only reading\nallow User:ANONYMOUS describe user:*\nallow User:ANONYMOUS describe client:app\n' >"$DC_TMP/acl"
dc_start_daemon "$DC_TMP/data" --acl-file "$DC_TMP/acl" ||
  tap_bail "dynconfd with --acl-file did not start"
cli "${UC[@]}" --describe
has_line "user+client entity survives a restart" \
  "  acks=-1 sensitive=false synonyms={DYNAMIC_USER_CLIENT_CONFIG:acks=-1, DYNAMIC_USER_CONFIG:acks=1, DYNAMIC_CLIENT_CONFIG:acks=0, DYNAMIC_DEFAULT_CLIENT_CONFIG:acks=1}"
cli "${U[@]}" --entity-name alice --alter --add-config acks=0
rc_err "alter without a grant: CLUSTER_AUTHORIZATION_FAILED with the reason" 1 \
  "CLUSTER_AUTHORIZATION_FAILED: principal User:ANONYMOUS is not authorized to alter user 'alice' (no ACL rule allows it)"
cli "${U[@]}" --entity-name alice --describe
has_line "... and nothing changed" \
  "  acks=1 sensitive=false synonyms={DYNAMIC_USER_CONFIG:acks=1}"
cli "${U[@]}" --entity-name alice "${C[@]}" --entity-name other --describe
rc_err "user+client describe also needs describe on the client" 1 \
  "not authorized to describe user 'alice' with client-id 'other' (no ACL rule allows it on client 'other')"
cli "${C[@]}" --entity-name app2 --describe
rc_err "describing another client is denied" 1 "CLUSTER_AUTHORIZATION_FAILED"
dc_daemon_alive
tap_ok $? "dynconfd is still running"
tap_done
