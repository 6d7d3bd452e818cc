#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Agents against replicas of the Kafka-topic store: three replicas on a
# 3-broker mock cluster (its own process); a real agent
# (examples/agent_watch, refreshing every second) lists all three in its
# bootstrap list. Alters go through the followers (forwarded to the
# writer); the agent applies every change while a follower and then the
# writer die (kill -9, another replica taking over), and ends UP.
. "$(dirname "$0")/../lib.sh"

WATCH="$DC_BUILDDIR/examples/agent_watch"
for b in "$WATCH" "$DC_CONFIGS"; do
  [ -x "$b" ] || tap_bail "$b not built"
done

dc_mock_start
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000
  --store-session-timeout-ms 3000)

# Three replicas: node 1 writes (first on the empty topic), 2 and 3 follow.
dc_start_daemon "$DC_TMP/n1" "${STORE[@]}" --node-id 1 || tap_bail "node 1 did not start"
P1=$DC_PID PORT1=$DC_PORT
dc_start_daemon "$DC_TMP/n2" "${STORE[@]}" --node-id 2 || tap_bail "node 2 did not start"
P2=$DC_PID PORT2=$DC_PORT
dc_start_daemon "$DC_TMP/n3" "${STORE[@]}" --node-id 3 || tap_bail "node 3 did not start"
P3=$DC_PID PORT3=$DC_PORT

# alter PORT VALUE: acks=VALUE for ha-app through the replica at PORT,
# retried for up to 60 s in all (while the replicas elect a writer; the CLI
# itself retries NOT_CONTROLLER for up to its 10 s timeout).
alter() {
  local end=$((SECONDS + 60)) out
  while ((SECONDS < end)); do
    out=$(timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$1" \
      --timeout-ms 10000 --entity-type clients --entity-name ha-app --alter \
      --add-config "acks=$2" 2>&1) && return 0
    sleep 0.1
  done
  tap_diag "alter acks=$2 on port $1, the last answer: $out"
  return 1
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

"$WATCH" "127.0.0.1:$PORT2,127.0.0.1:$PORT3,127.0.0.1:$PORT1" ha-app 120 \
  >"$DC_TMP/agent.out" 2>"$DC_TMP/agent.err" &
AGENT=$!

alter "$PORT2" 0
tap_is $? 0 "acks=0 set through follower 2 (forwarded to the writer)"
seen "acks app->0 \[client-override, applied\]"
tap_is $? 0 "the agent applies it (served by a follower)"

kill9 "$P2"
alter "$PORT3" 1
tap_is $? 0 "follower 2 killed: acks=1 set through follower 3"
seen "acks 0->1 \[client-override, applied\]"
tap_is $? 0 "  the agent applies it"

kill9 "$P1"
alter "$PORT3" -1
tap_is $? 0 "the writer killed too: node 3 takes over and takes acks=-1"
seen "acks 1->-1 \[client-override, applied\]"
tap_is $? 0 "  the agent applies it from the one replica left"

kill -TERM "$AGENT"
wait "$AGENT"
tap_is $? 0 "the agent stops cleanly"
stats=$(grep '^stats: ' "$DC_TMP/agent.out")
tap_like "$stats" '"state":"up"' "and ends UP"
tap_like "$stats" "\"server\":\"127\\.0\\.0\\.1:$PORT3\"" \
  "its last answer came from node 3, the one server left"
sets=$(grep -c 'change set applied' "$DC_TMP/agent.out")
tap_is "$sets" 3 "three change sets, each applied once"
[ "$sets" = 3 ] || sed 's/^/# agent: /' "$DC_TMP/agent.out" >&2
kill -TERM "$P3"
{ wait "$P3"; } 2>/dev/null

dc_mock_stop
tap_done
