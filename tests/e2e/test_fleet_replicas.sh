#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The fleet across dynconfd replicas (the Kafka-topic store on librdkafka's
# mock cluster): real agents (examples/agent_watch), one on each replica
# and one given both, are listed once each whichever replica
# dynconf-configs asks; --alter --wait through one replica waits for the
# agents of the other too; after the first replica is killed, the agent
# given both moves and is still counted once, and when the replica comes
# back on its port its own agent returns to it.
. "$(dirname "$0")/../lib.sh"

AGENT="$DC_BUILDDIR/examples/agent_watch"
[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
[ -x "$AGENT" ] || tap_bail "$AGENT not built"

dc_mock_start
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000
  --store-session-timeout-ms 3000)
declare -A PID PORT APID
start() { # start NODE [dynconfd args...]
  local n=$1
  shift
  dc_start_daemon "$DC_TMP/n$n" "${STORE[@]}" --node-id "$n" "$@" ||
    tap_bail "replica $n did not start"
  PID[$n]=$DC_PID PORT[$n]=$DC_PORT
}
agent() { # agent NAME BOOTSTRAP: a producer agent with client-id NAME
  "$AGENT" "$2" "$1" >"$DC_TMP/agent-$1.out" 2>&1 </dev/null &
  APID[$1]=$!
}
stop_all() { # the agents and replicas (not the mock cluster: dc_mock_stop)
  local p
  for p in "${APID[@]}" "${PID[@]}"; do
    kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  APID=() PID=()
}
trap 'x=$?; stop_all; (exit $x); dc_cleanup' EXIT

cli() { # cli NODE ARGS...
  local n=$1
  shift
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:${PORT[$n]}" \
    --timeout-ms 30000 "$@"
}
# fleet NODE: "client-id:connected" of every listed instance, sorted, then
# "|" and how many instance ids were listed more than once; "no answer"
# when the command printed nothing (its error is in cli.err).
fleet() {
  cli "$1" --describe-fleet --json 2>>"$DC_TMP/cli.err" | python3 -c '
import json, sys
text = sys.stdin.read()
if not text:
    print("no answer")
    sys.exit(0)
cs = json.loads(text)["clients"]
print(" ".join(sorted("%s:%s" % (c["client_id"], c["connected"]) for c in cs)))
print(len(cs) - len({c["instance_id"] for c in cs}))' |
    paste -sd'|'
}
await_fleet() { # await_fleet NODE WANT: polls for up to 60 s
  local i v=
  for ((i = 0; i < 600; i++)); do
    v=$(fleet "$1")
    [ "$v" = "$2" ] && break
    sleep 0.1
  done
  printf '%s' "$v"
}

start 1
start 2
agent one "127.0.0.1:${PORT[1]}"
agent two "127.0.0.1:${PORT[2]}"
agent both "127.0.0.1:${PORT[1]},127.0.0.1:${PORT[2]}"
ALL="both:True one:True two:True|0"
tap_is "$(await_fleet 1 "$ALL")" "$ALL" \
  "through replica 1: the three agents, each once, all connected"
tap_is "$(fleet 2)" "$ALL" "  and the same through replica 2"

out=$(cli 1 --entity-default --entity-type clients --alter \
  --add-config acks=0 --wait 2>&1)
rc=$?
tap_is $rc 0 "--alter --wait through replica 1 exits 0"
tap_like "$out" "^3 clients applied the change" \
  "  once the agents of both replicas applied it"
tap_like "$(cat "$DC_TMP/agent-two.out")" "acks .*->0" \
  "  replica 2's own agent has the change"

# ---- replica 1 dies: the agent given both moves, counted once ---------------
kill -9 "${PID[1]}"
wait "${PID[1]}" 2>/dev/null
unset 'PID[1]'
MOVED="both:True two:True|0"
tap_is "$(await_fleet 2 "$MOVED")" "$MOVED" \
  "replica 1 killed: replica 2 lists the agent that moved, once"
out=$(cli 2 --entity-default --entity-type clients --alter \
  --add-config acks=1 --wait 2>&1)
tap_is $? 0 "--alter --wait through replica 2 exits 0 while replica 1 is down"
tap_like "$out" "^2 clients applied the change" "  counting the two left"

# ---- replica 1 comes back on its port; its own agent returns -----------------
start 1 --listen "127.0.0.1:${PORT[1]}"
tap_is "$(await_fleet 1 "$ALL")" "$ALL" \
  "replica 1 back: its agent returns, every agent listed once through it"
out=$(cli 1 --entity-default --entity-type clients --alter \
  --add-config acks=all --wait 2>&1)
tap_is $? 0 "--alter --wait through replica 1 exits 0 again"
tap_like "$out" "^3 clients applied the change" "  counting all three"

stop_all
dc_mock_stop
tap_done
