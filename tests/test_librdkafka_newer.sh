#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The agent and the managed clients on a newer librdkafka than Debian's
# 2.0.2, as an application that links one runs them: the suite's agent,
# managed-client and rotation programs, built against 2.0.2's headers,
# run with DC_RDKAFKA_DIR/librdkafka.so.1 (scripts/build-librdkafka.sh)
# loaded in its place. ./run-tests.sh runs it, not make check (it needs
# the built library). librdkafka's own admin API is not among them: from
# 2.10 it writes CLIENT and USER resources as type 0 and refuses the
# answer (test_rdkafka_admin and test_security_e2e use it as a client).
. "$(dirname "$0")/lib.sh"

dir=${DC_RDKAFKA_DIR:?DC_RDKAFKA_DIR names the directory of the newer librdkafka.so.1}
[ -f "$dir/librdkafka.so.1" ] || tap_bail "no $dir/librdkafka.so.1 (scripts/build-librdkafka.sh $dir)"
want=$(cat "$dir/VERSION")

# Those of the suite's programs that load librdkafka (test_agent_conf and
# test_agent_resolve do not).
PROGRAMS="test_agent_wire test_agent_e2e test_agent_failures
  test_agent_hostile test_agent_security test_agent_consumer
  test_managed_producer test_managed_consumer test_cert_rotation"
SCRIPTS="test_kafka_store_agents.sh"

# shellcheck disable=SC2086
make -s -C "$DC_BUILDDIR" $(for p in $PROGRAMS; do echo "tests/$p"; done) \
  dynconfd dynconf-configs examples/mock_cluster >"$DC_TMP/make.log" 2>&1 ||
  tap_bail "building the test programs failed: $(tail -5 "$DC_TMP/make.log")"

# A program passes when it exits 0 and printed no failed test.
passes() { [ "$1" = 0 ] && ! grep -q '^not ok' "$2"; }

for p in $PROGRAMS; do
  exe="$DC_BUILDDIR/tests/$p"
  loaded=$(LD_LIBRARY_PATH="$dir" ldd "$exe" | sed -n 's/.*librdkafka\.so\.1 => \([^ ]*\).*/\1/p')
  tap_is "$loaded" "$dir/librdkafka.so.1" "$p loads the newer librdkafka"
  LD_LIBRARY_PATH="$dir" "$exe" >"$DC_TMP/$p.tap" 2>&1
  rc=$?
  passes $rc "$DC_TMP/$p.tap"
  tap_ok $? "$p passes on librdkafka $want (exit $rc)" ||
    tap_diag "$(grep -A3 '^not ok' "$DC_TMP/$p.tap" | head -20)"
done

# The version test_agent_e2e saw is the one it ran on, and on it
# group.protocol=consumer is a real property the agent reads.
grep -q "^ok [0-9]* - librdkafka $want knows group.protocol" \
  "$DC_TMP/test_agent_e2e.tap"
tap_ok $? "the agent ran on librdkafka $want, which knows group.protocol"
grep -q "^ok [0-9]* - group.protocol: outcome of session.timeout.ms is ignored" \
  "$DC_TMP/test_agent_e2e.tap"
tap_ok $? "  and with group.protocol=consumer it left session.timeout.ms to the broker"

for s in $SCRIPTS; do
  LD_LIBRARY_PATH="$dir" "$DC_SRCDIR/tests/$s" >"$DC_TMP/$s.tap" 2>&1
  rc=$?
  passes $rc "$DC_TMP/$s.tap"
  tap_ok $? "$s passes with dynconfd and the agents on librdkafka $want (exit $rc)" ||
    tap_diag "$(grep -A3 '^not ok' "$DC_TMP/$s.tap" | head -20)"
done
tap_done
