#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The dynconf demo (README command 1). Builds the project, then, on
# loopback, starts the config server dynconfd and a Kafka cluster
# (librdkafka's mock cluster), runs the example producer and consumer on
# dynconf's managed clients, changes their configuration with the operator
# CLI while messages flow, and ends with a report: changes seen and applied
# by each client, messages produced, consumed, lost and duplicated.
# Exits non-zero if a message was lost or a step failed.
#
#   ./demo.sh [--kafka] [--python]
#
#   --kafka  the same demo on a real Apache Kafka cluster instead of the
#            mock: 3 KRaft nodes on loopback (scripts/kafka.sh; Java 17,
#            the server's jars fetched through Maven once into
#            ~/.cache/dynconf), topic 'orders' created with 3 partitions,
#            stopped and removed at exit. Shows what the consumer's
#            session-timeout change costs there: the consumption pause it
#            measures, and the brokers' group coordinator telling whether
#            the group rebalanced (a static member rejoins without one).
#   --python the example producer and consumer in Python
#            (examples/python/, the dynconf package of python/ on
#            confluent-kafka from PyPI) in place of the C ones; their venv
#            is BUILD_DIR/pyenv, made on first use
#   --help   this text
#
# Environment:
#   BUILD_DIR      the build directory (default ./build)
#   DEMO_NO_BUILD  1: install no packages and build nothing; run the
#                  binaries already in BUILD_DIR (the tests do)
set -e
src=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$src/build}

usage() {
  cat <<'EOF'
Usage: ./demo.sh [--kafka] [--python]

The dynconf demo: dynconfd, the operator CLI and the example producer and
consumer on dynconf's managed clients, configured live; ends with a report
(exit status 1 when a message was lost).

  --kafka  run it on a real Apache Kafka cluster (3 KRaft nodes on
           loopback, scripts/kafka.sh, Java 17) instead of librdkafka's
           mock cluster, and show the consumer's consumption pause when
           its session timeout changes
  --python the example producer and consumer in Python (the dynconf
           package, python/, in a venv made in BUILD_DIR/pyenv)
  --help   this text

Environment: BUILD_DIR (default ./build); DEMO_NO_BUILD=1 installs no
packages and builds nothing, running the binaries already in BUILD_DIR.
EOF
}

kafka_mode=0
python_mode=0
for arg in "$@"; do
  case $arg in
    --kafka) kafka_mode=1 ;;
    --python) python_mode=1 ;;
    --help | -h) usage; exit 0 ;;
    *) echo "demo.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

if [ "${DEMO_NO_BUILD:-0}" = 1 ]; then
  need="dynconfd dynconf-configs examples/producer examples/consumer"
  [ "$python_mode" = 1 ] && need="dynconfd dynconf-configs .libs/libdynconf.so.0"
  [ "$kafka_mode" = 1 ] || need="$need examples/mock_cluster"
  for b in $need; do
    [ -e "$build/$b" ] || {
      echo "demo.sh: $build/$b is not built (DEMO_NO_BUILD=1 builds nothing)" >&2
      exit 1
    }
  done
else
  "$src/scripts/install-deps.sh"
  echo "== building dynconf in $build"
  "$src/scripts/build.sh" "$build"
fi

work=$(mktemp -d)
pids=""
kdir="" # --kafka: the cluster's directory, once it is being started
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  # What has not exited 15 s later (a librdkafka handle can hang in its
  # destroy) is killed: the cluster and $work go in any case.
  (
    n=15
    while [ "$n" -gt 0 ]; do sleep 1; n=$((n - 1)); done
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
  ) &
  watchdog=$!
  for p in $pids; do wait "$p" 2>/dev/null || true; done
  kill "$watchdog" 2>/dev/null || true
  # SIGKILLs the nodes and removes their directory (nothing to keep).
  [ -z "$kdir" ] || "$src/scripts/kafka.sh" -d "$kdir" destroy || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }
say() { printf '%s\n' "$*" | fold -s -w 78; }
fail() { echo "demo: $*" >&2; exit 1; }

# wait_for FILE REGEX [SECONDS]: waits until a line of FILE matches.
# The real cluster gets more time by default than the mock.
wait_s=10
[ "$kafka_mode" = 1 ] && wait_s=30
wait_for() {
  n=$((${3:-$wait_s} * 10))
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

# --kafka: the brokers' logs (the group coordinator's lines).
broker_log() { grep -h -- "$1" "$kdir"/node*/server.log 2>/dev/null || true; }

# --python: the examples run in a venv with confluent-kafka (pinned; its
# wheel bundles its own librdkafka) and the dynconf package, which loads
# the libdynconf just built.
# run_example producer|consumer ARGS...: in the background (`&`), it
# becomes the example's process, so $! is the example's pid.
run_example() {
  local ex=$1
  shift
  if [ "$python_mode" = 1 ]; then
    exec "$build/pyenv/bin/python" "$src/examples/python/$ex.py" "$@"
  fi
  exec "$build/examples/$ex" "$@"
}
examples_what="both examples on dynconf's managed clients"
if [ "$python_mode" = 1 ]; then
  venv=$build/pyenv
  echo "== the Python examples: venv $venv"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" ||
    fail "python3 -m venv failed (Debian package python3-venv)"
  # A copy: pip builds in the tree it is given.
  cp -R "$src/python" "$work/python"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    confluent-kafka==2.16.1 "$work/python" ||
    fail "could not install confluent-kafka and the dynconf package"
  export DYNCONF_LIBRARY="$build/.libs/libdynconf.so.0"
  examples_what="both Python examples on dynconf.Producer and dynconf.Consumer (confluent-kafka, rebuilt live)"
fi

step "1. Start the config server (dynconfd) and a Kafka cluster"
"$build/dynconfd" --listen 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/dynconfd.out" 2>"$work/dynconfd.log" &
pids="$pids $!"
if [ "$kafka_mode" = 1 ]; then
  kver=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' \
    "$src/scripts/kafka/pom.xml")
  "$src/scripts/kafka.sh" fetch || fail "could not fetch Apache Kafka $kver"
  echo "starting Apache Kafka $kver: 3 KRaft nodes (broker+controller) on loopback"
  kdir=$work/kafka
  kafka=$("$src/scripts/kafka.sh" -d "$kdir" start 2>"$work/kafka.log") ||
    { cat "$work/kafka.log"; fail "the Kafka cluster did not start"; }
  "$src/scripts/kafka.sh" -d "$kdir" topics --create --topic orders \
    --partitions 3 --replication-factor 3 >"$work/topics.out" 2>&1 ||
    { cat "$work/topics.out"; fail "could not create the topic orders"; }
else
  "$build/examples/mock_cluster" --topic orders --partitions 3 \
    >"$work/mock.out" 2>"$work/mock.log" &
  pids="$pids $!"
fi
wait_for "$work/dynconfd.out" '^listening on' || { cat "$work/dynconfd.log"; fail "dynconfd did not start"; }
if [ "$kafka_mode" = 0 ]; then
  wait_for "$work/mock.out" '^bootstrap ' || { cat "$work/mock.log"; fail "the mock cluster did not start"; }
  kafka=$(sed -n 's/^bootstrap //p' "$work/mock.out")
fi
services=$pids
cfg=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/dynconfd.out")
echo "dynconfd (config server, Kafka protocol): $cfg"
if [ "$kafka_mode" = 1 ]; then
  echo "Kafka cluster (Apache Kafka $kver, 3 nodes, topic 'orders', 3 partitions, replicated 3 times): $kafka"
else
  echo "Kafka cluster (librdkafka's mock, topic 'orders', 3 partitions): $kafka"
fi

step "2. The operator sets fleet-wide defaults on the <default> client entity"
cli --entity-type clients --entity-default --alter \
  --add-config 'session.timeout.ms=6000,heartbeat.interval.ms=2000'

step "3. Start the applications"
say "A producer (client.id orders-p, 200 msg/s over 3 partitions) and a consumer (client.id orders-c, static member of group 'orders'), $examples_what. Each fetched its dynamic configuration from dynconfd before creating its librdkafka client; their own lines below show every change they receive."
: >"$work/producer.out"
: >"$work/consumer.out"
run_example consumer --bootstrap "$kafka" --config-bootstrap "$cfg" \
  --topic orders --group orders --client-id orders-c --instance-id orders-c-1 \
  --expect "$work/producer.report" --report "$work/consumer.report" \
  >"$work/consumer.out" 2>"$work/consumer.log" &
consumer=$!
pids="$pids $consumer"
run_example producer --bootstrap "$kafka" --config-bootstrap "$cfg" \
  --topic orders --client-id orders-p --rate 200 \
  --report "$work/producer.report" \
  >"$work/producer.out" 2>"$work/producer.log" &
producer=$!
pids="$pids $producer"
join_s=15
[ "$kafka_mode" = 1 ] && join_s=60
wait_for "$work/consumer.out" 'joined group' "$join_s" || { cat "$work/consumer.log"; fail "the consumer did not join"; }
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
if [ "$kafka_mode" = 1 ]; then
  wait_for "$work/consumer.out" 'consumption paused' ||
    fail "the consumer did not consume again after the change"
  show_new
  say "The managed consumer committed what it had processed, closed its handle and rejoined with the new timeouts. The brokers' group coordinator on group orders, the first join and then this rejoin:"
  n=$((wait_s * 10))
  until [ -n "$(broker_log 'groupInstanceId=orders-c-1 .* joins group orders in Stable state')" ]; do
    [ "$n" -gt 0 ] || fail "the group coordinator logged no rejoin of orders-c-1"
    sleep 0.1
    n=$((n - 1))
  done
  broker_log ' group orders[ .]' | sort -s |
    sed 's/^\[[0-9-]* \([0-9:,]*\)\] [A-Z]* \[[^]]*\] /\1 /; s/ ([a-z][a-zA-Z.]*)$//; s/^/  /'
  if [ -z "$(broker_log 'Preparing to rebalance group orders .* old generation [1-9]')" ]; then
    say "A static member (group.instance.id) that rejoins a Stable group gets its partitions back at once: the coordinator swapped in its new member id, no rebalance, no new generation. (Without group.instance.id the consumer would leave the group and rejoin through a rebalance.)"
  else
    say "The coordinator rebalanced the group for this rejoin (its lines above): a static member should have got its partitions back without one."
  fi
  pause=$(sed -n 's/.*consumption paused \([0-9.]*\) ms.*/\1/p' "$work/consumer.out" | tail -n 1)
  say "The consumer's consumption paused $pause ms, from its last message on the old handle to its first on the new one."
else
  show_new
  say "The managed consumer committed what it had processed, closed its handle and rejoined with the new timeouts. (On a real broker a static member gets its partitions back at once, without a rebalance. librdkafka 2.0.2's mock cluster does not implement static membership, so here the consumer waits until the mock expires its old member: about 11 s. Nothing is lost meanwhile.)"
fi
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
if [ "$kafka_mode" = 1 ]; then
  # The group coordinator logs each rebalance it starts; the first join
  # starts one from generation 0.
  gen=$(broker_log 'Stabilized group orders generation ' |
    sed -n 's/.*Stabilized group orders generation \([0-9]*\) .*/\1/p' | tail -n 1)
  rebalances=$(broker_log 'Preparing to rebalance group orders .* old generation [1-9]' | wc -l)
  echo "consumer pause at its session-timeout change: $(get consumer pause_ms_max) ms" \
    "(last message before the rebuild to the first after it)"
  echo "group orders on the brokers: generation ${gen:-none}, $rebalances rebalance(s)" \
    "after the first join"
fi
if [ "$lost" -ne 0 ] || [ "$order" -ne 0 ] || [ "$unique" -ne "$produced" ]; then
  printf '\n== demo FAILED: messages were lost or reordered\n'
  exit 1
fi
printf '\n== demo finished: every change applied live, nothing lost\n'
