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
step "...and overrides the session timeout for one service, client.id 'orders'"
cli --entity-type clients --entity-name orders --alter --add-config 'session.timeout.ms=30000'
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
"$build/examples/rdkafka_describe" "$addr" orders
step "Every change is in the audit history (dynconfd --history)"
"$build/dynconfd" --data-dir "$work/data" --history
printf '\n== demo finished: dynconfd served the CLI and librdkafka; stopping it\n'
