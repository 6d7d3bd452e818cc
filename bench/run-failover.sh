#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One-command failover benchmark of dynconfd replicas on the Kafka-topic
# store, all on loopback:
#
#   bench/run-failover.sh [BUILDDIR]        (or: make bench-failover)
#
# Starts librdkafka's mock cluster (examples/mock_cluster, 3 brokers, the
# one-partition topic _dynconf_configs) in its own process and three
# replicas (--store-session-timeout-ms FO_SESSION_MS), and a probe that
# sends one IncrementalAlterConfigs after another (dynconf-configs, each
# with --timeout-ms FO_PROBE_TIMEOUT_MS) to the replicas in turn. Then,
# FO_KILLS times each:
#   - kill -9 of the writer (the controller Metadata names): how long
#     alters are refused = from the kill to the end of the first alter
#     acknowledged after it;
#   - SIGTERM of the writer (a clean stop: it says goodbye in the log, so
#     the others need not wait out the session): the same measure.
# The killed or stopped replica is restarted (same data dir and port)
# before the next round. Prints p50 / p99 / max of both beside the
# session timeout in use, and the goal (p99 of kill -9 <= session + 2 s).
# Never fails on a number: exits non-zero only when a run fails outright.
# About 3 minutes with the defaults.
#
# Environment: FO_KILLS (20), FO_SESSION_MS (6000), FO_PROBE_TIMEOUT_MS
# (2000).
set -u
B=$(cd "${1:-build}" && pwd)
KILLS=${FO_KILLS:-20}
SESSION=${FO_SESSION_MS:-6000}
PROBE_TMO=${FO_PROBE_TIMEOUT_MS:-2000}
DYNCONFD=$B/dynconfd CONFIGS=$B/dynconf-configs MOCK=$B/examples/mock_cluster
for b in "$DYNCONFD" "$CONFIGS" "$MOCK"; do
  [ -x "$b" ] || { echo "missing $b (make first)" >&2; exit 1; }
done
command -v kcat >/dev/null || { echo "kcat is needed" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-failover.XXXXXX")
declare -A PID PORT
cleanup() {
  touch "$T/stop"
  for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${PROBE:-}" ] && kill "$PROBE" 2>/dev/null
  [ -n "${MC_PID:-}" ] && kill "$MC_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

coproc MC { exec "$MOCK" --brokers 3 --topic _dynconf_configs --partitions 1 \
  --topic _dynconf_configs_history --partitions 1 \
  --control 2>/dev/null; }
read -r -t 10 first <&"${MC[0]}" || { echo "mock cluster did not start" >&2; exit 1; }
BS=${first#bootstrap }

now_ms() { date +%s%3N; }
start() { # start NODE [PORT]
  local listen=127.0.0.1:${2:-0} i
  mkdir -p "$T/n$1"
  "$DYNCONFD" --listen "$listen" --data-dir "$T/n$1" --node-id "$1" \
    --store kafka --store-bootstrap "$BS" --store-timeout-ms 5000 \
    --store-session-timeout-ms "$SESSION" >"$T/out$1" 2>>"$T/log$1" &
  PID[$1]=$!
  for ((i = 0; i < 200; i++)); do
    PORT[$1]=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/out$1")
    [ -n "${PORT[$1]}" ] && return 0
    sleep 0.05
  done
  echo "replica $1 did not start" >&2
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
start 1
start 2
start 3

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
probe &
PROBE=$!

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
sleep 2
: >"$T/kill9"
: >"$T/term"
for ((k = 1; k <= KILLS; k++)); do
  outage 9 >>"$T/kill9" || exit 1
  outage TERM >>"$T/term" || exit 1
done

echo
echo "dynconfd failover on the Kafka-topic store (3 replicas, mock cluster),"
echo "$KILLS rounds, session timeout $SESSION ms, probe timeout $PROBE_TMO ms"
echo "alters refused after the writer goes away (ms):"
printf '  %-30s %7s %7s %7s\n' "" p50 p99 max
printf '  %-30s %s\n' "kill -9 (lease runs out)" "$(stats <"$T/kill9")"
printf '  %-30s %s\n' "SIGTERM (goodbye record)" "$(stats <"$T/term")"
p99=$(stats <"$T/kill9" | awk '{ print $2 }')
goal=$((SESSION + 2000))
printf '  goal: p99 of kill -9 <= session + 2 s = %d ms: %s\n' "$goal" \
  "$([ "$p99" -le "$goal" ] && echo met || echo NOT met)"
