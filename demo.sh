#!/bin/sh
# The dynconf demo: starts dynconfd on a free loopback port with a fresh
# store, sets dynamic client configs with the operator CLI, and reads them
# back both with the CLI and through a real librdkafka client (the exact
# DescribeConfigs path the dynconf agent uses).
set -e
src=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$src/build}
"$src/scripts/install-deps.sh"
echo "== building dynconf in $build"
"$src/scripts/build.sh" "$build"

work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM
"$build/dynconfd" --listen 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/out" 2>"$work/log" &
pid=$!
for _ in $(seq 100); do grep -q '^listening on' "$work/out" && break; sleep 0.1; done
addr=$(sed -n 's/^listening on //p' "$work/out")
[ -n "$addr" ] || { cat "$work/log"; echo "dynconfd did not start" >&2; exit 1; }
echo "== dynconfd is listening on $addr (store: $work/data)"

cli() { echo "\$ dynconf-configs $*"; "$build/dynconf-configs" --bootstrap-server "$addr" "$@"; }
step() { printf '\n== %s\n' "$*"; }

step "An operator sets fleet-wide defaults on the <default> client entity"
cli --entity-type clients --entity-default --alter \
    --add-config 'session.timeout.ms=45000,heartbeat.interval.ms=3000,acks=all'
step "A running consumer application with client.id 'orders' starts a dynconf agent"
echo "(examples/agent_watch: the agent fetched before the consumer would be created; it"
echo " re-fetches every second and prints each change event it receives)"
"$build/examples/agent_watch" --consumer "$addr" orders 600 >"$work/agent.out" 2>"$work/agent.log" &
agent=$!
trap 'kill $agent $pid 2>/dev/null; wait $agent $pid 2>/dev/null; rm -rf "$work"' EXIT INT TERM
show_agent() {
  # Wait (up to 10 s) for the agent's Nth event line, then print the new ones.
  for _ in $(seq 100); do [ "$(grep -c 'change set' "$work/agent.out")" -ge "$1" ] && break; sleep 0.1; done
  grep 'change set' "$work/agent.out" | sed -n "$1,\$p" | sed 's/^/  agent> /'
}
show_agent 1
step "The operator overrides the session timeout for client.id 'orders' only"
cli --entity-type clients --entity-name orders --alter --add-config 'session.timeout.ms=30000'
show_agent 2
step "The CLI shows the override, then everything 'orders' resolves to"
cli --entity-type clients --entity-name orders --describe
cli --entity-type clients --entity-name orders --describe --all
step "A librdkafka 2.0.2 client asks dynconfd over the Kafka protocol (DescribeConfigs, resource type 9)"
"$build/examples/rdkafka_describe" "$addr" orders
step "Bad values are refused with the reason, and nothing changes"
cli --entity-type clients --entity-name orders --alter --add-config 'heartbeat.interval.ms=60000' || true
cli --entity-type clients --entity-name orders --alter --add-config 'acks=2' || true
step "Deleting the override makes 'orders' inherit the default again"
cli --entity-type clients --entity-name orders --alter --delete-config session.timeout.ms
show_agent 3
step "The agent's statistics (dynconf_stats_json)"
kill -TERM $agent; wait $agent 2>/dev/null || true
sed -n 's/^stats: //p' "$work/agent.out" | python3 -m json.tool
step "Every change is in the audit history (dynconfd --history)"
"$build/dynconfd" --data-dir "$work/data" --history
printf '\n== demo finished: dynconfd served the CLI, librdkafka and a live agent; stopping it\n'
