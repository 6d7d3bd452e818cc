#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The managed producer and consumer on a real Apache Kafka cluster (3
# KRaft nodes, scripts/kafka.sh), configured live through dynconfd on its
# SQLite store. The checks are tests/clients/kafka_clients_probe.c's, one run per
# mode, their TAP lines renumbered into this test's:
#   producers  acks changed live on an idempotent (pinned) and a plain
#              managed producer while each produces a numbered sequence;
#              read back: nothing lost, duplicated or out of order
#   groups     session.timeout.ms/heartbeat.interval.ms changed 10 times
#              on a static member: no rebalance; the same on a member
#              without group.instance.id as the control; the consumption
#              pauses of both printed ("# pause ...")
#   kip848     group.protocol=consumer (librdkafka 2.4 and later): the
#              timeouts left to the broker, the cluster's configs named
#              instead. On an older librdkafka it runs on the newer one in
#              $DC_RDKAFKA_DIR or $DC_BUILDDIR/librdkafka-newer
#              (scripts/build-librdkafka.sh) when there is one.
. "$(dirname "$0")/../lib.sh"

probe="$DC_BUILDDIR/tests/kafka_clients_probe"
[ -x "$probe" ] || tap_bail "$probe not built (make check-kafka builds it)"
started=$SECONDS

# run_probe LABEL COMMAND...: runs a probe and passes its checks on as
# this test's, LABEL first; then checks that it ran to its plan.
run_probe() {
  local label=$1 out="$DC_TMP/$1.tap" err="$DC_TMP/$1.err" rc line n=0 plan=
  shift
  "$@" >"$out" 2>"$err"
  rc=$?
  while IFS= read -r line; do
    case $line in
      "ok "*) n=$((n + 1)) && tap_ok 0 "$label: ${line#ok * - }" ;;
      "not ok "*) n=$((n + 1)) && tap_ok 1 "$label: ${line#not ok * - }" ;;
      1..*) plan=${line#1..} ;;
      "#"*) printf '%s\n' "$line" ;;
      *) printf '# %s\n' "$line" ;;
    esac
  done <"$out"
  [ "$rc" = 0 ] && [ "$plan" = "$n" ]
  tap_ok $? "$label: the probe ran its $n checks to the end (exit $rc, plan ${plan:-none})" ||
    tail -n 20 "$err" | sed 's/^/#   /' >&2
}

dc_kafka_start
tap_diag "Kafka cluster up after $((SECONDS - started)) s: $KBS"
dc_start_daemon "$DC_TMP/data" || tap_bail "dynconfd did not start"

run_probe producers "$probe" producers "$KBS" "$DC_PORT"
run_probe groups "$probe" groups "$KBS" "$DC_PORT"

# KIP-848 needs librdkafka 2.4; Debian 12's is 2.0.2.
read -r hex ver < <("$probe" version)
kip848=("$probe")
if ((hex < 0x020400ff)); then
  newer=${DC_RDKAFKA_DIR:-$DC_BUILDDIR/librdkafka-newer}
  kip848=()
  [ -f "$newer/librdkafka.so.1" ] && kip848=(env LD_LIBRARY_PATH="$newer" "$probe")
fi
if [ ${#kip848[@]} = 0 ]; then
  tap_diag "kip848: not run: librdkafka $ver has no group.protocol=consumer" \
    "(2.4 and later); scripts/build-librdkafka.sh $newer builds 2.15.1," \
    "on which this test runs it"
else
  read -r _ kver < <("${kip848[@]}" version)
  tap_diag "kip848 on librdkafka $kver"
  run_probe kip848 "${kip848[@]}" kip848 "$KBS" "$DC_PORT"
  # The operator follows the agent's reason with Kafka's own tool.
  out=$(dc_kafka configs --alter --entity-type groups --entity-name kc-848-group \
    --add-config consumer.session.timeout.ms=50000 2>&1)
  tap_like "$out" "Completed updating config" \
    "kip848: kafka-configs sets consumer.session.timeout.ms on the group, as the agent's reason says"
fi

dc_daemon_alive
tap_ok $? "dynconfd still running"
tap_diag "test_kafka_clients: $((SECONDS - started)) s"
tap_done
