#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Three dynconfd replicas on one Kafka-topic store (librdkafka's mock
# cluster, 3 brokers, in its own process): one writes, the others follow;
# Metadata on every replica lists the live replicas with the writer as
# controller; an alter sent to a follower is forwarded to the writer and
# answered as if served there (history names the client, not the
# follower); when the writer is killed (-9), paused (SIGSTOP past its
# session) or stopped cleanly, another replica takes over and alters on
# any live replica work again; a paused writer resumes as a follower; a
# replica restarted from its cache rejoins as a follower with every
# change.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v kcat >/dev/null || tap_bail "kcat is needed (apt-get install kcat)"

dc_mock_start
SESSION=3000
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000
  --store-session-timeout-ms "$SESSION")

declare -A PID PORT
start() { # start NODE: replica NODE on its own data dir
  dc_start_daemon "$DC_TMP/n$1" "${STORE[@]}" --node-id "$1" ||
    tap_bail "replica $1 did not start"
  PID[$1]=$DC_PID PORT[$1]=$DC_PORT
}
cli() { # cli NODE ARGS...
  local n=$1
  shift
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:${PORT[$n]}" \
    --timeout-ms 30000 "$@"
}
alter() { # alter NODE ENTITY CONFIG: rc of one alter (its words if it fails)
  local out
  out=$(cli "$1" --entity-type clients --entity-name "$2" --alter \
    --add-config "$3" 2>&1) || {
    tap_diag "alter on node $1: $out"
    return 1
  }
}
value_of() { # value_of NODE ENTITY KEY
  cli "$1" --entity-type clients --entity-name "$2" --describe 2>/dev/null |
    sed -n "s/^ *$3=\([^ ]*\) .*/\1/p"
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
# metadata NODE: "controller=C brokers=A,B,..." as kcat sees it there.
metadata() {
  local out
  out=$(timeout 30 kcat -L -b "127.0.0.1:${PORT[$1]}" -m 10 2>/dev/null)
  printf 'controller=%s brokers=%s' \
    "$(sed -n 's/^ *broker \([0-9]*\) at .*(controller).*/\1/p' <<<"$out")" \
    "$(sed -n 's/^ *broker \([0-9]*\) at .*/\1/p' <<<"$out" | sort -n |
      paste -sd, -)"
}
await_metadata() { # await_metadata NODE WANT: polls for up to 30 s
  local i v=
  for ((i = 0; i < 300; i++)); do
    v=$(metadata "$1")
    [ "$v" = "$2" ] && break
    sleep 0.1
  done
  printf '%s' "$v"
}
tap_isnt() { tap_ok "$([ "$1" != "$2" ] && echo 0 || echo 1)" "$3"; }
writer_now() { # the node whose log last said it writes, among $@
  grep -hoE 'writing _dynconf_configs as node [0-9]+' "$DC_DAEMON_LOG" |
    tail -1 | grep -oE '[0-9]+$'
}

# ---- three replicas: node 1 writes, 2 and 3 follow ---------------------------
start 1
start 2
start 3
tap_is "$(writer_now)" 1 "node 1, first on the empty topic, writes"
for n in 1 2 3; do
  tap_is "$(await_metadata $n "controller=1 brokers=1,2,3")" \
    "controller=1 brokers=1,2,3" \
    "Metadata on node $n: all three replicas, node 1 the controller"
done

alter 2 app acks=1
tap_is $? 0 "an alter sent to follower 2 is acknowledged"
tap_is "$(value_of 1 app acks)" 1 "  the writer has it"
for n in 2 3; do
  tap_is "$(await_value $n app acks 1)" 1 "  node $n serves it"
done
hist=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/n1" --history)
tap_is "$(grep -c 'client:app acks' <<<"$hist")" 1 \
  "the writer's history lists the forwarded change once"
tap_like "$hist" "User:ANONYMOUS 127\\.0\\.0\\.1:[0-9]+ IncrementalAlterConfigs client:app acks SET \\(unset\\) -> 1" \
  "  with the client's principal and address"
alter 3 app 'acks=2' # not a valid acks: the writer's validation answers
tap_isnt $? 0 "an invalid value sent to follower 3 is refused"
out=$(cli 3 --entity-type clients --entity-name app --alter \
  --add-config 'acks=2' 2>&1)
tap_like "$out" "INVALID_CONFIG" "  with the writer's own error: $out"

# kafka-python's admin client (Debian's 2.0.2) bootstrapped from follower 3:
# it sends the alter to a node of its choice among those Metadata lists.
/usr/bin/python3 - "${PORT[3]}" <<'PY'
import logging, sys
logging.basicConfig(level=logging.ERROR)  # says which connection failed
from kafka.admin import ConfigResource, KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:" + sys.argv[1],
                         request_timeout_ms=20000)
r = ConfigResource("TOPIC", "py-app", {"linger.ms": "11"})
r.resource_type = 9  # CLIENT: kafka-python's enum lacks it
resp = admin.alter_configs([r])
errors = [res[0] for res in resp.resources]
sys.exit(0 if errors == [0] else 1)
PY
tap_is $? 0 "kafka-python's AlterConfigs through follower 3 is acknowledged"
for n in 1 2 3; do
  tap_is "$(await_value $n py-app linger.ms 11)" 11 "  node $n serves it"
done

# ---- kill -9 the writer ------------------------------------------------------
kill -9 "${PID[1]}"
{ wait "${PID[1]}"; } 2>/dev/null
# One dynconf-configs call: it retries NOT_CONTROLLER (no writer known, or
# the writer gone while forwarding) within its --timeout-ms, as Kafka's
# admin client does.
alter 3 app acks=0
tap_is $? 0 "writer killed: one alter on node 3 succeeds once another writes"
W=$(writer_now)
tap_ok "$([ "$W" = 2 ] || [ "$W" = 3 ] && echo 0 || echo 1)" \
  "  node $W took over"
S=$((W == 2 ? 3 : 2))
for n in 2 3; do
  tap_is "$(await_metadata $n "controller=$W brokers=2,3")" \
    "controller=$W brokers=2,3" \
    "Metadata on node $n: the dead node is gone, node $W the controller"
  tap_is "$(await_value $n app acks 0)" 0 "  node $n serves the new value"
done

# ---- a paused writer ---------------------------------------------------------
# An alter forwarded to the paused writer when another takes over has an
# unknown outcome (the paused one may have stored it before it stopped):
# the CLI says so, and the operator retries it.
kill -STOP "${PID[$W]}"
out=$(cli "$S" --entity-type clients --entity-name app --alter \
  --add-config acks=-1 2>&1)
rc=$?
if [ $rc != 0 ] && grep -q "may or may not have been applied" <<<"$out"; then
  tap_diag "the first alter's outcome was unknown ($out); retried"
  out=$(cli "$S" --entity-type clients --entity-name app --alter \
    --add-config acks=-1 2>&1)
  rc=$?
fi
tap_is $rc 0 "writer $W paused: one alter on node $S succeeds once it takes over (retried once if its outcome was unknown)" ||
  tap_diag "$out"
kill -CONT "${PID[$W]}"
tap_is "$(await_value "$W" app acks -1)" -1 \
  "resumed, node $W serves what node $S wrote"
alter "$W" paused 'linger.ms=3'
tap_is $? 0 "an alter on the resumed node $W is forwarded to node $S"
tap_is "$(await_value "$S" paused linger.ms 3)" 3 "  and node $S has it"
tap_is "$(await_metadata "$W" "controller=$S brokers=2,3")" \
  "controller=$S brokers=2,3" "Metadata on node $W: node $S the controller"

# ---- a replica restarted from its cache rejoins ------------------------------
start 1
tap_is "$(value_of 1 app acks)" -1 "node 1 restarted: it serves the latest value"
tap_is "$(await_value 1 paused linger.ms 3)" 3 "  and every change since"
tap_is "$(await_metadata 1 "controller=$S brokers=1,2,3")" \
  "controller=$S brokers=1,2,3" "  and follows node $S"
alter 1 back acks=1
tap_is $? 0 "an alter on node 1 is forwarded"

# ---- the writer stops cleanly: its goodbye lets the others take over ----------
mark=$(wc -l <"$DC_DAEMON_LOG")
kill -TERM "${PID[$S]}"
{ wait "${PID[$S]}"; } 2>/dev/null
tap_is $? 0 "writer $S stops cleanly"
alter 1 back acks=0
tap_is $? 0 "  one alter on node 1 succeeds under the next writer"
# Its goodbye precedes the next writer's claim in the log.
tap_like "$(tail -n "+$((mark + 1))" "$DC_DAEMON_LOG")" "node $S left" \
  "  the others read its goodbye"

for n in 1 "$W"; do
  kill -TERM "${PID[$n]}"
  { wait "${PID[$n]}"; } 2>/dev/null
done
dc_mock_stop
tap_done
