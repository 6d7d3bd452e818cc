#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One-command failover benchmark of dynconfd replicas on the Kafka-topic
# store, all on loopback:
#
#   bench/run-failover.sh [BUILDDIR]        (or: make bench-failover)
#
# On each cluster of FO_CLUSTERS (default "mock kafka": librdkafka's mock
# cluster, examples/mock_cluster with 3 brokers in its own process, then a
# real Apache Kafka 4.1.1 cluster of 3 KRaft nodes, scripts/kafka.sh),
# starts three replicas (--store-session-timeout-ms FO_SESSION_MS), and a
# probe that
# sends one IncrementalAlterConfigs after another (dynconf-configs, each
# with --timeout-ms FO_PROBE_TIMEOUT_MS) to the replicas in turn. Then,
# FO_KILLS times each:
#   - kill -9 of the writer (the controller Metadata names): how long
#     alters are refused = from the kill to the end of the first alter
#     acknowledged after it;
#   - SIGTERM of the writer (a clean stop: it says goodbye in the log, so
#     the others need not wait out the session): the same measure.
# The killed or stopped replica is restarted (same data dir and port)
# before the next round. Prints p50 / p99 / max of both per cluster, side
# by side, beside the session timeout in use, and the goal (p99 of kill -9
# <= session + 2 s). Never fails on a number: exits non-zero only when a
# run fails outright. About 3 minutes per cluster with the defaults.
#
# Environment: FO_CLUSTERS ("mock kafka"), FO_KILLS (20), FO_SESSION_MS
# (6000), FO_PROBE_TIMEOUT_MS (2000).
set -u
B=$(cd "${1:-build}" && pwd)
KILLS=${FO_KILLS:-20}
CLUSTERS=${FO_CLUSTERS:-mock kafka}
SRC=$(cd "$(dirname "$0")/.." && pwd)
SESSION=${FO_SESSION_MS:-6000}
PROBE_TMO=${FO_PROBE_TIMEOUT_MS:-2000}
DYNCONFD=$B/dynconfd CONFIGS=$B/dynconf-configs MOCK=$B/examples/mock_cluster
for b in "$DYNCONFD" "$CONFIGS" "$MOCK"; do
  [ -x "$b" ] || { echo "missing $b (make first)" >&2; exit 1; }
done
command -v kcat >/dev/null || { echo "kcat is needed" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-failover.XXXXXX")
declare -A PID PORT
# Stops the replicas, the probe and the cluster of one run.
stop_run() {
  touch "$T/stop"
  for p in "${PID[@]}"; do kill -9 "$p" && wait "$p"; done 2>/dev/null
  [ -n "${PROBE:-}" ] && kill "$PROBE" 2>/dev/null
  [ -n "${MC_PID:-}" ] && kill "$MC_PID" 2>/dev/null
  [ -f "$T/kafka/cluster.env" ] && "$SRC/scripts/kafka.sh" -d "$T/kafka" destroy
  wait 2>/dev/null
  PID=() PROBE= MC_PID=
}
cleanup() {
  stop_run
  rm -rf "$T"
}
trap cleanup EXIT

# start_cluster mock|kafka: sets BS.
start_cluster() {
  if [ "$1" = kafka ]; then
    BS=$("$SRC/scripts/kafka.sh" -d "$T/kafka" start) ||
      { echo "the Kafka cluster did not start" >&2; exit 1; }
    return
  fi
  coproc MC { exec "$MOCK" --brokers 3 --topic _dynconf_configs --partitions 1 \
    --topic _dynconf_configs_history --partitions 1 \
    --control 2>/dev/null; }
  read -r -t 10 first <&"${MC[0]}" || { echo "mock cluster did not start" >&2; exit 1; }
  BS=${first#bootstrap }
}

now_ms() { date +%s%3N; }
start() { # start NODE [PORT]
  local listen=127.0.0.1:${2:-0} i
  mkdir -p "$T/n$1"
  "$DYNCONFD" --listen "$listen" --data-dir "$T/n$1" --node-id "$1" \
    --store kafka --store-bootstrap "$BS" --store-timeout-ms 5000 \
    --store-session-timeout-ms "$SESSION" >"$T/out$1" 2>>"$T/log$1" &
  PID[$1]=$!
  # Up to 30 s: a replica reads the store first, on a loaded machine.
  for ((i = 0; i < 600; i++)); do
    PORT[$1]=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/out$1")
    [ -n "${PORT[$1]}" ] && return 0
    sleep 0.05
  done
  echo "replica $1 did not start; its log ends:" >&2
  tail -n 15 "$T/log$1" >&2
  exit 1
}
controller() {
  local n c
  for n in 1 2 3; do
    c=$(timeout 10 kcat -L -b "127.0.0.1:${PORT[$n]}" -m 5 2>/dev/null |
      sed -n 's/^ *broker \([0-9]*\) at .*(controller).*/\1/p')
    [ -n "$c" ] && { echo "$c"; return; }
  done
}
# The probe: one alter after another; each acknowledged one is logged as
# "START_MS END_MS".
probe() {
  local n=0 seq=0 t0 addrs=("127.0.0.1:${PORT[1]}" "127.0.0.1:${PORT[2]}" "127.0.0.1:${PORT[3]}")
  while [ ! -e "$T/stop" ]; do
    t0=$(now_ms)
    seq=$((seq + 1))
    if timeout 30 "$CONFIGS" --bootstrap-server "${addrs[n % 3]}" \
      --timeout-ms "$PROBE_TMO" --entity-type clients --entity-name probe \
      --alter --add-config "linger.ms=$seq" >/dev/null 2>&1; then
      echo "$t0 $(now_ms)" >>"$T/acks"
    fi
    n=$((n + 1))
  done
}

# outage SIGNAL: signals the writer, waits for the first acknowledged
# alter that started after it, prints the milliseconds in between, and
# restarts the replica.
outage() {
  local w t_kill end i
  w=$(controller)
  [ -n "$w" ] || { echo "no writer found" >&2; exit 1; }
  t_kill=$(now_ms)
  kill -"$1" "${PID[$w]}"
  wait "${PID[$w]}" 2>/dev/null
  for ((i = 0; i < 600; i++)); do
    end=$(awk -v t="$t_kill" '$1 >= t { print $2; exit }' "$T/acks" 2>/dev/null)
    [ -n "$end" ] && break
    sleep 0.05
  done
  [ -n "$end" ] || { echo "alters did not resume after $1" >&2; exit 1; }
  echo $((end - t_kill))
  start "$w" "${PORT[$w]}"
  sleep 1 # the restarted replica heartbeats before the next round
}
stats() { # p50 p99 max of the numbers on stdin
  sort -n | awk '{ v[NR] = $1 } END {
    p50 = v[int((NR + 1) * 0.5)]; i = int(NR * 0.99 + 0.999); if (i < 1) i = 1
    printf "%7d %7d %7d", p50, v[i], v[NR] }'
}
# run_on CLUSTER: the rounds on one cluster; the figures go to
# $T/kill9.CLUSTER and $T/term.CLUSTER.
run_on() {
  start_cluster "$1"
  rm -f "$T/stop" "$T/acks"
  rm -rf "$T"/n[123]
  start 1
  start 2
  start 3
  probe &
  PROBE=$!
  sleep 2
  : >"$T/kill9.$1"
  : >"$T/term.$1"
  for ((k = 1; k <= KILLS; k++)); do
    outage 9 >>"$T/kill9.$1" || exit 1
    outage TERM >>"$T/term.$1" || exit 1
  done
  stop_run
}
for c in $CLUSTERS; do run_on "$c"; done

echo
echo "dynconfd failover on the Kafka-topic store (3 replicas), $KILLS rounds,"
echo "session timeout $SESSION ms, probe timeout $PROBE_TMO ms; mock = librdkafka's"
echo "mock cluster, kafka = Apache Kafka 4.1.1, 3 KRaft nodes on the same machine"
echo "alters refused after the writer goes away (ms):"
printf '  %-36s %7s %7s %7s\n' "" p50 p99 max
for c in $CLUSTERS; do
  printf '  %-36s %s\n' "$c: kill -9 (lease runs out)" "$(stats <"$T/kill9.$c")"
  printf '  %-36s %s\n' "$c: SIGTERM (goodbye record)" "$(stats <"$T/term.$c")"
done
goal=$((SESSION + 2000))
for c in $CLUSTERS; do
  p99=$(stats <"$T/kill9.$c" | awk '{ print $2 }')
  printf '  goal on %s: p99 of kill -9 <= session + 2 s = %d ms: %s\n' "$c" \
    "$goal" "$([ "$p99" -le "$goal" ] && echo met || echo NOT met)"
done
