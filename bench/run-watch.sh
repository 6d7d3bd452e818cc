#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of Watch fan-out: how fast one alter of <default>
# reaches N parked watchers (dynconf's API 20001), beside one
# DescribeConfigs by the same N clients at once, both measured in the same
# run, plus dynconfd's memory per parked watch and CPU per woken one.
#
#   bench/run-watch.sh [BUILDDIR]   (or: make bench-watch)
#
# Then real agents (bench/agent_fleet, libdynconf in worker processes):
# BENCH_AGENTS of them with dynconf.watch=true (a one-hour refresh as the
# safety net) and the same number polling every second, five alters of
# <default> each, the delay of every agent's change event counted from the
# alter CLI's return: the pushed figure beside the polling one, same run;
# then the pushed agents again with each alter run as --alter --wait.
#
# Environment: BENCH_WATCHERS (10000, or what the open-file limit allows),
# BENCH_ROUNDS (3), BENCH_AGENTS (500; 0 skips the real agents). About
# 100 s on two cores. Exits non-zero when a watcher was not answered or
# answered wrong, or an agent missed an alter; never on speed.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
ROUNDS=${BENCH_ROUNDS:-3}
AGENTS=${BENCH_AGENTS:-500}
for bin in dynconfd dynconf-configs bench/watch_fanout bench/agent_fleet; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd dynconf-configs" \
      "bench/watch_fanout bench/agent_fleet)" >&2
    exit 2
  fi
done
# Each watcher is a connection at both ends: the open-file limit bounds N.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
LIMIT=$(ulimit -n)
N=${BENCH_WATCHERS:-10000}
[ "$N" -le $((LIMIT - 200)) ] || N=$((LIMIT - 200))

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-watchbench.XXXXXX")
DPID=
cleanup() {
  [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$BUILDDIR/dynconfd" --data-dir "$TMP/data" --listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
DPID=$!
i=0
while [ $i -lt 100 ]; do
  ADDR=$(sed -n 's/^listening on \(127\.0\.0\.1:[0-9]*\) .*/\1/p' "$TMP/out" | head -n 1)
  METRICS=$(sed -n 's/^metrics on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$TMP/out" | head -n 1)
  [ -n "$ADDR" ] && [ -n "$METRICS" ] && break
  sleep 0.1
  i=$((i + 1))
done
if [ -z "$ADDR" ] || [ -z "$METRICS" ]; then
  echo "bench: dynconfd did not start:" >&2
  cat "$TMP/out" "$TMP/err" >&2
  exit 1
fi
echo "dynconf Watch fan-out: dynconfd (pid $DPID) on $ADDR, $N watchers," \
  "$ROUNDS rounds; $(nproc 2>/dev/null || echo '?') core(s) shared with the" \
  "client; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILDDIR/bench/watch_fanout" --target "$ADDR" --metrics "$METRICS" \
  --watchers "$N" --rounds "$ROUNDS" --pid "$DPID"
[ "$AGENTS" -gt 0 ] || exit 0
# Each mode alters session.timeout.ms from its own base, so the second
# run's values are changes too.
# The third run alters with --wait: the CLI returns once every agent has
# reported the change, and the delays show how long before it they had it.
for mode in on off wait; do
  wait=off
  case $mode in
    on) refresh=3600000 base=100000 what="dynconf.watch=true" ;;
    off) refresh=1000 base=200000 what="dynconf.watch=false" ;;
    wait) mode=on wait=on refresh=3600000 base=150000
      what="dynconf.watch=true, each alter with --wait" ;;
  esac
  echo
  echo "real agents, $what:"
  rc=0
  "$BUILDDIR/bench/agent_fleet" --bootstrap "$ADDR" \
    --configs-cli "$BUILDDIR/dynconf-configs" --agents "$AGENTS" \
    --watch $mode --cli-wait $wait --refresh-ms $refresh --stagger-ms 1000 \
    --value-base $base --daemon-pid "$DPID" >"$TMP/fleet" || rc=$?
  grep -v '^ALTER ' "$TMP/fleet" || true
  [ $rc = 0 ] || exit $rc
done
