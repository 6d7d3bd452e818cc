#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The dynconf demo (README command 1). Builds the project, then, on
# loopback, starts the config server dynconfd and a Kafka cluster
# (librdkafka's mock cluster), runs the example producer and consumer on
# dynconf's managed clients, changes their configuration with the operator
# CLI while messages flow, and ends with a report: changes seen and applied
# by each client, messages produced, consumed, lost and duplicated.
# Exits non-zero if a message was lost or a step failed.
#   BUILD_DIR (default ./build)
set -e
src=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$src/build}
"$src/scripts/install-deps.sh"
echo "== building dynconf in $build"
"$src/scripts/build.sh" "$build"

work=$(mktemp -d)
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  for p in $pids; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }
say() { printf '%s\n' "$*" | fold -s -w 78; }
fail() { echo "demo: $*" >&2; exit 1; }

# wait_for FILE REGEX [SECONDS]: waits until a line of FILE matches.
wait_for() {
  n=$((${3:-10} * 10))
  while [ "$n" -gt 0 ]; do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
    n=$((n - 1))
  done
  return 1
}

# The applications write to files; show_new prints the lines they added
# since the last call, so each step shows what its command caused.
p_seen=0
c_seen=0
show_new() {
  n=$(wc -l <"$work/producer.out")
  [ "$n" -gt "$p_seen" ] && sed -n "$((p_seen + 1)),${n}p" "$work/producer.out" | sed 's/^/  /'
  p_seen=$n
  n=$(wc -l <"$work/consumer.out")
  [ "$n" -gt "$c_seen" ] && sed -n "$((c_seen + 1)),${n}p" "$work/consumer.out" | sed 's/^/  /'
  c_seen=$n
  return 0
}

cli() {
  echo "\$ dynconf-configs --bootstrap-server $cfg $*"
  "$build/dynconf-configs" --bootstrap-server "$cfg" "$@" 2>&1 | sed 's/^/  /'
}

step "1. Start the config server (dynconfd) and a Kafka cluster"
"$build/dynconfd" --listen 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/dynconfd.out" 2>"$work/dynconfd.log" &
pids="$pids $!"
"$build/examples/mock_cluster" --topic orders --partitions 3 \
  >"$work/mock.out" 2>"$work/mock.log" &
pids="$pids $!"
wait_for "$work/dynconfd.out" '^listening on' || { cat "$work/dynconfd.log"; fail "dynconfd did not start"; }
wait_for "$work/mock.out" '^bootstrap ' || { cat "$work/mock.log"; fail "the mock cluster did not start"; }
services=$pids
cfg=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/dynconfd.out")
kafka=$(sed -n 's/^bootstrap //p' "$work/mock.out")
echo "dynconfd (config server, Kafka protocol): $cfg"
echo "Kafka cluster (librdkafka's mock, topic 'orders', 3 partitions): $kafka"

step "2. The operator sets fleet-wide defaults on the <default> client entity"
cli --entity-type clients --entity-default --alter \
  --add-config 'session.timeout.ms=6000,heartbeat.interval.ms=2000'

step "3. Start the applications"
say "A producer (client.id orders-p, 200 msg/s over 3 partitions) and a consumer (client.id orders-c, static member of group 'orders'), both examples on dynconf's managed clients. Each fetched its dynamic configuration from dynconfd before creating its librdkafka client; their own lines below show every change they receive."
: >"$work/producer.out"
: >"$work/consumer.out"
"$build/examples/consumer" --bootstrap "$kafka" --config-bootstrap "$cfg" \
  --topic orders --group orders --client-id orders-c --instance-id orders-c-1 \
  --expect "$work/producer.report" --report "$work/consumer.report" \
  >"$work/consumer.out" 2>"$work/consumer.log" &
consumer=$!
pids="$pids $consumer"
"$build/examples/producer" --bootstrap "$kafka" --config-bootstrap "$cfg" \
  --topic orders --client-id orders-p --rate 200 \
  --report "$work/producer.report" \
  >"$work/producer.out" 2>"$work/producer.log" &
producer=$!
pids="$pids $producer"
wait_for "$work/consumer.out" 'joined group' 15 || { cat "$work/consumer.log"; fail "the consumer did not join"; }
wait_for "$work/producer.out" 'producing to' || { cat "$work/producer.log"; fail "the producer did not start"; }
show_new
sleep 2

step "4. Lower the producer's acks to 1 (a client override for orders-p)"
cli --entity-type clients --entity-name orders-p --alter --add-config 'acks=1'
wait_for "$work/producer.out" 'applied acks: .* -> 1 ' || fail "the producer did not apply acks"
show_new
say "The managed producer switched to a new librdkafka handle built with acks=1; the old one delivered everything it held first, so no message was lost or reordered."
sleep 2

step "5. Change the consumer's session timeout and heartbeat"
cli --entity-type clients --entity-name orders-c --alter \
  --add-config 'session.timeout.ms=7000,heartbeat.interval.ms=1000'
wait_for "$work/consumer.out" 'session.timeout.ms: 6000 -> 7000' || fail "the consumer did not apply the change"
show_new
say "The managed consumer committed what it had processed, closed its handle and rejoined with the new timeouts. (On a real broker a static member gets its partitions back at once, without a rebalance. librdkafka 2.0.2's mock cluster does not implement static membership, so here the consumer waits until the mock expires its old member: about 11 s. Nothing is lost meanwhile.)"
sleep 2

step "6. Changes that are refused"
say "dynconfd refuses what is invalid for the client (heartbeat must stay below the session timeout):"
cli --entity-type clients --entity-name orders-c --alter \
  --add-config 'heartbeat.interval.ms=9000' || true
say "The client refuses what conflicts with its own settings (librdkafka needs session.timeout.ms <= max.poll.interval.ms, 300000 here), and keeps its last good configuration:"
cli --entity-type clients --entity-name orders-c --alter --add-config 'session.timeout.ms=400000'
wait_for "$work/consumer.out" 'rejected session.timeout.ms' || fail "the consumer did not reject the change"
show_new
say "The operator puts the value back:"
cli --entity-type clients --entity-name orders-c --alter --add-config 'session.timeout.ms=7000'
wait_for "$work/consumer.out" 'stays 7000' || fail "the consumer did not see the correction"
show_new

step "7. Delete the acks override: the producer returns to its own setting"
cli --entity-type clients --entity-name orders-p --alter --delete-config acks
wait_for "$work/producer.out" "applied acks: 1 ->" || fail "the producer did not apply the deletion"
show_new

step "8. What orders-c resolves to now, and the audit history"
cli --entity-type clients --entity-name orders-c --describe --all
echo "\$ dynconfd --data-dir DIR --history"
"$build/dynconfd" --data-dir "$work/data" --history | sed 's/^/  /'

step "9. The consumer rejoins; stop the producer (it flushes); the consumer catches up"
wait_for "$work/consumer.out" 'rejoined' 30 || true
show_new
kill -TERM "$producer"
prc=0
wait "$producer" || prc=$?
wait "$consumer" || true # its report says why; checked below
pids=$services # the applications are reaped
[ "$prc" -eq 0 ] || fail "the producer reported undelivered messages"
show_new

get() { sed -n "s/^$2=//p" "$work/$1.report"; }
[ -f "$work/producer.report" ] || fail "no producer report"
[ -f "$work/consumer.report" ] || fail "no consumer report"
produced=$(get producer produced)
failed=$(get producer failed)
consumed=$(get consumer consumed)
unique=$(get consumer unique)
missing=$(get consumer missing)
dups=$(get consumer duplicates)
order=$(get consumer order_violations)
lost=$((missing + failed))

step "Report"
printf '%-20s %6s %8s %9s  %s\n' "changes:" seen applied rejected "new librdkafka handles"
printf '%-20s %6s %8s %9s  %s (longest %s ms)\n' "producer orders-p" \
  "$(get producer changes_seen)" "$(get producer changes_applied)" \
  "$(get producer changes_rejected)" "$(get producer switches)" \
  "$(get producer switch_ms_max)"
printf '%-20s %6s %8s %9s  %s (longest %s ms)\n' "consumer orders-c" \
  "$(get consumer changes_seen)" "$(get consumer changes_applied)" \
  "$(get consumer changes_rejected)" "$(get consumer rebuilds)" \
  "$(get consumer rebuild_ms_max)"
echo "messages: produced $produced, consumed $consumed ($unique distinct)," \
  "lost $lost, duplicated $dups, out of order $order"
if [ "$lost" -ne 0 ] || [ "$order" -ne 0 ] || [ "$unique" -ne "$produced" ]; then
  printf '\n== demo FAILED: messages were lost or reordered\n'
  exit 1
fi
printf '\n== demo finished: every change applied live, nothing lost\n'
