#!/usr/bin/env bash
# Agents against replicas of the Kafka-topic store: a writer and two read
# replicas on a 3-broker mock cluster (its own process); a real agent
# (examples/agent_watch, refreshing every second) lists the two replicas
# and the writer in its bootstrap list. It applies every change made on
# the writer while the replicas die one after the other (kill -9), and
# ends UP.
. "$(dirname "$0")/lib.sh"

MOCK="$DC_BUILDDIR/examples/mock_cluster"
WATCH="$DC_BUILDDIR/examples/agent_watch"
for b in "$MOCK" "$WATCH" "$DC_CONFIGS"; do
  [ -x "$b" ] || tap_bail "$b not built"
done

coproc MC { exec "$MOCK" --brokers 3 --topic _dynconf_configs --partitions 1 \
  --topic _dynconf_configs_history --partitions 1 \
  --control 2>/dev/null; }
read -r -t 10 first <&"${MC[0]}" || tap_bail "the mock cluster did not start"
BS=${first#bootstrap }
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000)

dc_start_daemon "$DC_TMP/w" "${STORE[@]}" || tap_bail "writer did not start"
W_PID=$DC_PID W_PORT=$DC_PORT
dc_start_daemon "$DC_TMP/r1" "${STORE[@]}" --node-id 2 --store-read-only ||
  tap_bail "replica 1 did not start"
R1_PID=$DC_PID R1_PORT=$DC_PORT
dc_start_daemon "$DC_TMP/r2" "${STORE[@]}" --node-id 3 --store-read-only ||
  tap_bail "replica 2 did not start"
R2_PID=$DC_PID R2_PORT=$DC_PORT

alter() { # alter VALUE: acks=VALUE for ha-app on the writer
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$W_PORT" \
    --timeout-ms 30000 --entity-type clients --entity-name ha-app --alter \
    --add-config "acks=$1" >/dev/null
}
# seen PATTERN: waits up to 30 s for the agent to print a matching line.
seen() {
  local i
  for ((i = 0; i < 300; i++)); do
    grep -qE "$1" "$DC_TMP/agent.out" && return 0
    sleep 0.1
  done
  return 1
}
kill9() { kill -9 "$1"; { wait "$1"; } 2>/dev/null; }

"$WATCH" "127.0.0.1:$R1_PORT,127.0.0.1:$R2_PORT,127.0.0.1:$W_PORT" ha-app 120 \
  >"$DC_TMP/agent.out" 2>"$DC_TMP/agent.err" &
AGENT=$!

alter 0
tap_is $? 0 "acks=0 set on the writer"
seen "acks app->0 \[client-override, applied\]"
tap_is $? 0 "the agent applies it (served by a replica)"

kill9 "$R1_PID"
alter 1
seen "acks 0->1 \[client-override, applied\]"
tap_is $? 0 "replica 1 killed: the agent applies acks=1"

kill9 "$R2_PID"
alter -1
seen "acks 1->-1 \[client-override, applied\]"
tap_is $? 0 "replica 2 killed too: the agent applies acks=-1 from the writer"

kill -TERM "$AGENT"
wait "$AGENT"
tap_is $? 0 "the agent stops cleanly"
stats=$(grep '^stats: ' "$DC_TMP/agent.out")
tap_like "$stats" '"state":"up"' "and ends UP"
tap_like "$stats" "\"server\":\"127\\.0\\.0\\.1:$W_PORT\"" \
  "its last answer came from the writer, the one server left"
tap_is "$(grep -c 'change set applied' "$DC_TMP/agent.out")" 3 \
  "three change sets, each applied once"
kill -TERM "$W_PID"
{ wait "$W_PID"; } 2>/dev/null

exec {MC[1]}>&-
wait "$MC_PID" 2>/dev/null
tap_done
