#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The agent, the managed clients and the plugin on a newer librdkafka
# than Debian's 2.0.2, as an application that links one runs them: the
# suite's agent, managed-client, rotation and plugin programs (the plugin
# loaded by that librdkafka), built against 2.0.2's headers,
# run with DC_RDKAFKA_DIR/librdkafka.so.1 (scripts/build-librdkafka.sh)
# loaded in its place. ./run-tests.sh runs it, not make check (it needs
# the built library). librdkafka's own admin API is not among them: from
# 2.10 it writes CLIENT and USER resources as type 0 and refuses the
# answer (test_rdkafka_admin and test_security_e2e use it as a client).
. "$(dirname "$0")/../lib.sh"

dir=${DC_RDKAFKA_DIR:?DC_RDKAFKA_DIR names the directory of the newer librdkafka.so.1}
[ -f "$dir/librdkafka.so.1" ] || tap_bail "no $dir/librdkafka.so.1 (scripts/build-librdkafka.sh $dir)"
want=$(cat "$dir/VERSION")

# Those of the suite's programs that load librdkafka (test_agent_conf and
# test_agent_resolve do not).
PROGRAMS="test_agent_wire test_agent_watch test_agent_e2e test_agent_failures
  test_agent_hostile test_agent_security test_agent_consumer
  test_managed_producer test_managed_consumer test_cert_rotation
  test_plugin"
# Under tests/; test_kafka_clients.sh runs a real Kafka cluster
# (scripts/kafka.sh).
SCRIPTS="e2e/test_kafka_store_agents.sh clients/test_kafka_clients.sh"

# shellcheck disable=SC2086
make -s -C "$DC_BUILDDIR" $(for p in $PROGRAMS; do echo "tests/$p"; done) \
  tests/kafka_clients_probe dynconfd dynconf-configs examples/mock_cluster \
  >"$DC_TMP/make.log" 2>&1 ||
  tap_bail "building the test programs failed: $(tail -5 "$DC_TMP/make.log")"

# run_tap NAME PROGRAM: runs a TAP program on the newer librdkafka into
# $DC_TMP/NAME.tap; it passes when it exits 0 and printed no failed test.
run_tap() {
  LD_LIBRARY_PATH="$dir" "$2" >"$DC_TMP/$1.tap" 2>&1
  local rc=$?
  [ $rc = 0 ] && ! grep -q '^not ok' "$DC_TMP/$1.tap"
  tap_ok $? "$1 passes on librdkafka $want (exit $rc)" || {
    # On stderr too: prove shows it where it hides the comments.
    tap_diag "$(grep -A6 '^not ok' "$DC_TMP/$1.tap" | head -40)" | tee /dev/stderr
    tail -n 15 "$DC_TMP/$1.tap" | sed 's/^/#   /' >&2
  }
}

for p in $PROGRAMS; do
  exe="$DC_BUILDDIR/tests/$p"
  loaded=$(LD_LIBRARY_PATH="$dir" ldd "$exe" | sed -n 's/.*librdkafka\.so\.1 => \([^ ]*\).*/\1/p')
  tap_is "$loaded" "$dir/librdkafka.so.1" "$p loads the newer librdkafka"
  run_tap "$p" "$exe"
done

# The version test_agent_e2e saw is the one it ran on, and on it
# group.protocol=consumer is a real property the agent reads.
grep -q "^ok [0-9]* - librdkafka $want knows group.protocol" \
  "$DC_TMP/test_agent_e2e.tap"
tap_ok $? "the agent ran on librdkafka $want, which knows group.protocol"
grep -q "^ok [0-9]* - group.protocol: outcome of session.timeout.ms is ignored" \
  "$DC_TMP/test_agent_e2e.tap"
tap_ok $? "  and with group.protocol=consumer it left session.timeout.ms to the broker"

# dynconfd's Kafka store and the agents, all on the newer librdkafka.
for s in $SCRIPTS; do
  run_tap "${s##*/}" "$DC_SRCDIR/tests/$s"
done
# The managed clients on a real Kafka cluster: there the KIP-848 check
# runs on the newer librdkafka itself.
grep -q "^ok [0-9]* - kip848: librdkafka $want knows group.protocol=consumer" \
  "$DC_TMP/test_kafka_clients.sh.tap"
tap_ok $? "  and test_kafka_clients.sh ran its group.protocol=consumer member on it"
tap_done
