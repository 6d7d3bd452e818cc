#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of Watch fan-out: how fast one alter of <default>
# reaches N parked watchers (dynconf's API 20001), beside one
# DescribeConfigs by the same N clients at once, both measured in the same
# run, plus dynconfd's memory per parked watch and CPU per woken one,
# beside the floor: as many bare loopback sends of an answer's size from
# one thread (bench/send_floor), what the kernel alone costs.
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
# Then the two together: watch_fanout --hold keeps N - BENCH_AGENTS
# watchers parked on the wire (each parks again as soon as it is answered)
# while BENCH_AGENTS real agents watch too, so every alter of <default>
# wakes N watching clients of which the real agents are BENCH_AGENTS; the
# agents' delays (pushed, then polling every second beside the same wire
# watchers) are printed as above and summed up in a last "headline" line.
# The holder's HELD line counts its answers: every one of its watchers
# must be woken once per alter (ten alters).
#
# Environment: BENCH_WATCHERS (10000, or what the open-file limit allows),
# BENCH_ROUNDS (3), BENCH_AGENTS (500; 0 skips the real agents and the
# mixed part). About 105 s on two cores with BENCH_ROUNDS=1 (the mixed
# part about 45 s of it). Exits non-zero when a watcher was not answered
# or answered wrong, an agent missed an alter, or the holder saw an error,
# a dropped connection or a missing wake-up; never on speed.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
ROUNDS=${BENCH_ROUNDS:-3}
AGENTS=${BENCH_AGENTS:-500}
for bin in dynconfd dynconf-configs bench/watch_fanout bench/send_floor \
  bench/agent_fleet; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd dynconf-configs" \
      "bench/watch_fanout bench/send_floor bench/agent_fleet)" >&2
    exit 2
  fi
done
# Each watcher is a connection at both ends: the open-file limit bounds N
# (in the mixed part dynconfd holds N - BENCH_AGENTS wire watchers plus one
# connection per agent, the holder N - BENCH_AGENTS).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
LIMIT=$(ulimit -n)
N=${BENCH_WATCHERS:-10000}
[ "$N" -le $((LIMIT - 200)) ] || N=$((LIMIT - 200))

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-watchbench.XXXXXX")
DPID= HPID=
. "$(dirname "$0")/lib.sh"
cleanup() {
  exec 3>&-
  [ -n "$HPID" ] && kill -TERM "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
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
rc=0
"$BUILDDIR/bench/watch_fanout" --target "$ADDR" --metrics "$METRICS" \
  --watchers "$N" --rounds "$ROUNDS" --pid "$DPID" >"$TMP/fanout" || rc=$?
cat "$TMP/fanout"
[ $rc = 0 ] || exit $rc

# The floor under it, same run: N bare sends of an answer's size on
# loopback from one thread, read by another (no dynconf code at all).
BYTES=$(sed -n 's/^RESULT watchers.* answer_bytes=\([0-9]*\).*/\1/p' "$TMP/fanout")
CPU_US=$(sed -n 's/^RESULT watchers.* mean_cpu_us_per_watcher=\([0-9.]*\).*/\1/p' "$TMP/fanout")
echo
"$BUILDDIR/bench/send_floor" --pairs "$N" --bytes "${BYTES:-150}" \
  --rounds "$ROUNDS" >"$TMP/floor" || rc=$?
cat "$TMP/floor"
[ $rc = 0 ] || exit $rc
FLOOR_US=$(sed -n 's/^RESULT floor.* mean_us_per_send=\([0-9.]*\).*/\1/p' "$TMP/floor")
awk -v d="$CPU_US" -v f="$FLOOR_US" 'BEGIN {
  if (d != "" && f > 0)
    printf "fan-out against the floor: dynconfd %.2f us of CPU per woken " \
      "watcher, a bare send %.2f us: %.2fx\n", d, f, d / f }'
[ "$AGENTS" -gt 0 ] || exit 0

# fleet HEADING WATCH CLI_WAIT REFRESH_MS VALUE_BASE: one agent_fleet run
# (five alters of <default>), its report without the ALTER lines; its
# RESULT line is kept in $TMP/fleet. Fd 3 (the holder's stdin) is not
# passed on: only this script may close it.
fleet() {
  echo
  echo "$1:"
  rc=0
  "$BUILDDIR/bench/agent_fleet" --bootstrap "$ADDR" \
    --configs-cli "$BUILDDIR/dynconf-configs" --agents "$AGENTS" \
    --watch "$2" --cli-wait "$3" --refresh-ms "$4" --stagger-ms 1000 \
    --value-base "$5" --daemon-pid "$DPID" >"$TMP/fleet" 3>&- || rc=$?
  grep -v '^ALTER ' "$TMP/fleet" || true
  [ $rc = 0 ] || exit $rc
}

# Each run alters session.timeout.ms from its own base, so every value is
# a change. The third run alters with --wait: the CLI returns once every
# agent has reported the change, and the delays show how long before it
# they had it.
fleet "real agents, dynconf.watch=true" on off 3600000 100000
fleet "real agents, dynconf.watch=false" off off 1000 200000
fleet "real agents, dynconf.watch=true, each alter with --wait" on on \
  3600000 150000

# The mixed part: N - AGENTS watchers held on the wire, AGENTS real agents.
WIRE=$((N - AGENTS))
if [ "$WIRE" -lt 1 ]; then
  echo
  echo "mixed part skipped: $AGENTS agents leave no wire watchers of $N"
  exit 0
fi
hold_watches "$ADDR" "$METRICS" "$WIRE"
echo
echo "mixed: $WIRE watchers parked on the wire by watch_fanout --hold" \
  "(pid $HPID, after $HELD_AFTER s); load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
AMONG="real agents among $N watchers ($WIRE on the wire)"
fleet "$AMONG, dynconf.watch=true" on off 3600000 250000
PUSHED=$(sed -n 's/^RESULT fleet .* p99_ms=\([0-9.-]*\) .*/\1/p' "$TMP/fleet")
fleet "$AMONG, dynconf.watch=false (polling, the same $WIRE on the wire)" \
  off off 1000 270000
POLLED=$(sed -n 's/^RESULT fleet .* p99_ms=\([0-9.-]*\) .*/\1/p' "$TMP/fleet")
exec 3>&-
hrc=0
wait "$HPID" || hrc=$?
HPID=
echo
echo "holder (watch_fanout --hold, $WIRE watchers), exit $hrc:"
grep '^HELD ' "$TMP/hold.out" || echo "  no HELD line"
cat "$TMP/hold.err" >&2
# Ten alters (five per fleet run), each must wake every wire watcher once.
CHANGED=$(sed -n 's/^HELD .* changed=\([0-9]*\) .*/\1/p' "$TMP/hold.out")
echo "  expected changed=$((10 * WIRE)) (10 alters x $WIRE watchers)"
echo
echo "headline: $N watching clients ($AGENTS real agents, $WIRE on the" \
  "wire), alter CLI returned -> change event in the real agents:" \
  "p99 ${PUSHED:-?} ms pushed by Watch; polling every 1 s in the same run:" \
  "p99 ${POLLED:-?} ms"
if [ "$hrc" != 0 ]; then
  echo "bench: watch_fanout --hold exited $hrc" >&2
  exit 1
fi
if [ "${CHANGED:-0}" != $((10 * WIRE)) ]; then
  echo "bench: the holder's watchers were woken ${CHANGED:-0} times, not" \
    "$((10 * WIRE))" >&2
  exit 1
fi
