#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The soak test: dynconfd + the librdkafka mock cluster + the example
# producer and consumer (dynconf's managed clients) under steady load, while
# a driver flips the producer's acks and the consumer's session.timeout.ms
# and heartbeat.interval.ms at varying intervals. At the end it checks, in
# TAP, that nothing was lost, reordered or leaked:
#
#   tests/soak.sh [SECONDS]      (default 60; `tests/soak.sh 3600` for a long run)
#
# Environment: DC_BUILDDIR (the build directory, default ./build),
# SOAK_RATE (messages/s, default 500), SOAK_PARTITIONS (default 4),
# SOAK_STATIC=1 (the consumer is a static group member: longer pauses on
# the mock, see below), SOAK_POLICY
# (ordered|fast, default ordered), SOAK_VERBOSE=1 (print every flip),
# SOAK_KEEP=DIR (copy the clients' reports and output there at the end).
#
# About the mock cluster: librdkafka 2.0.2's mock has no static membership
# and, after a member leaves or a new one joins, waits for the group's old
# session.timeout.ms minus 1 s before it hands out partitions again. So the
# driver keeps the consumer's session timeout small (3000/4000 ms, dynconfd
# started with --session-timeout-min-ms 2000) and never lowers it by more
# than 1 s at once (a bigger drop lets the mock expire the joining member
# while it waits, and the join then hangs until max.poll.interval.ms,
# which the consumer sets to 20000 to bound that). Each consumer rebuild
# still pauses consumption for a few seconds; the consumer catches up.
# The mock also answers a Fetch with one record batch per partition and
# finds it by scanning its log from the start, so the producer batches
# (linger.ms=50, SOAK_LINGER_MS): with tiny batches a long run's consumer
# falls further and further behind, and the mock's retention (5 MiB per
# partition) would then delete what it has not read yet.
DC_BUILDDIR=${DC_BUILDDIR:-./build}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

DURATION=${1:-60}
RATE=${SOAK_RATE:-500}
PARTITIONS=${SOAK_PARTITIONS:-4}
POLICY=${SOAK_POLICY:-ordered}
STATIC=${SOAK_STATIC:-0}
EX="$DC_BUILDDIR/examples"
case $DURATION in '' | *[!0-9]*) tap_bail "usage: $0 [SECONDS]" ;; esac
[ "$DURATION" -ge 15 ] || tap_bail "run for at least 15 s"
for b in "$DC_DYNCONFD" "$DC_CONFIGS" "$EX/producer" "$EX/consumer" "$EX/mock_cluster"; do
  [ -x "$b" ] || tap_bail "$b is not built (DC_BUILDDIR=$DC_BUILDDIR)"
done

APP_PIDS=() # the mock cluster and the clients, while running
soak_cleanup() {
  local rc=$? i p
  # Newest first: the clients close while the mock cluster still answers.
  for ((i = ${#APP_PIDS[@]} - 1; i >= 0; i--)); do
    p=${APP_PIDS[i]}
    kill "$p" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null # stuck in librdkafka's close
    wait "$p" 2>/dev/null
  done
  (exit $rc) # dc_cleanup (lib.sh: the daemon, $DC_TMP) exits with $?
  dc_cleanup
}
trap soak_cleanup EXIT

now_ms() { date +%s%3N; }
rand_between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); } # inclusive
rep() { sed -n "s/^$2=//p" "$DC_TMP/$1.report"; }

tap_diag "soak: ${DURATION}s, $RATE msg/s over $PARTITIONS partitions, $POLICY switches, static consumer=$STATIC"
dc_start_daemon "$DC_TMP/data" --session-timeout-min-ms 2000 || tap_bail "dynconfd did not start"
CFG="127.0.0.1:$DC_PORT"
"$EX/mock_cluster" --topic soak --partitions "$PARTITIONS" \
  >"$DC_TMP/mock.out" 2>"$DC_TMP/mock.log" &
MOCK=$!
APP_PIDS+=($MOCK)
for _ in $(seq 100); do grep -q '^bootstrap ' "$DC_TMP/mock.out" && break; sleep 0.1; done
KAFKA=$(sed -n 's/^bootstrap //p' "$DC_TMP/mock.out")
[ -n "$KAFKA" ] || tap_bail "the mock cluster did not start"

cli() { "$DC_CONFIGS" --bootstrap-server "$CFG" --entity-type clients "$@" >>"$DC_TMP/cli.log" 2>&1; }
# The consumer starts from the same values the driver flips between.
cli --entity-name soak-c --alter --add-config 'session.timeout.ms=3000,heartbeat.interval.ms=1000' ||
  tap_bail "the CLI failed: $(tail -1 "$DC_TMP/cli.log")"

static_args=()
[ "$STATIC" = 1 ] && static_args=(--instance-id soak-c-1)
"$EX/consumer" --bootstrap "$KAFKA" --config-bootstrap "$CFG" --topic soak \
  --group soak --client-id soak-c "${static_args[@]}" --refresh-ms 500 \
  --warmup-ms 5000 -X max.poll.interval.ms=20000 \
  --expect "$DC_TMP/producer.report" --catchup-timeout 90 \
  --report "$DC_TMP/consumer.report" >"$DC_TMP/consumer.out" 2>"$DC_TMP/consumer.log" &
CONSUMER=$!
APP_PIDS+=($CONSUMER)
"$EX/producer" --bootstrap "$KAFKA" --config-bootstrap "$CFG" --topic soak \
  --client-id soak-p --rate "$RATE" --partitions "$PARTITIONS" \
  --policy "$POLICY" --refresh-ms 500 --warmup-ms 5000 --duration "$DURATION" \
  -X "linger.ms=${SOAK_LINGER_MS:-50}" \
  --report "$DC_TMP/producer.report" >"$DC_TMP/producer.out" 2>"$DC_TMP/producer.log" &
PRODUCER=$!
APP_PIDS+=($PRODUCER)

# ---- the driver ---------------------------------------------------------
# acks every 1-4 s; the consumer's keys every 6-12 s (each consumer rebuild
# costs the mock's rejoin pause, see above). Every flip changes a value, and
# flips of one client are further apart than its refresh interval (500 ms),
# so each flip is exactly one applied change set and one handle switch.
acks_vals=(all 1 0)
acks=unset
session=3000
heartbeat=1000
acks_flips=0
consumer_flips=0
cli_failures=0
t0=$(now_ms)
stop_at=$((t0 + (DURATION - 3) * 1000))
next_acks=$((t0 + $(rand_between 1000 4000)))
next_consumer=$((t0 + $(rand_between 6000 12000)))
flip() { # what, then the CLI arguments
  local what=$1
  shift
  if cli "$@"; then
    [ "${SOAK_VERBOSE:-0}" = 1 ] && tap_diag "t=$((($(now_ms) - t0) / 1000))s $what"
    return 0
  fi
  cli_failures=$((cli_failures + 1))
  tap_diag "flip failed ($what): $(tail -1 "$DC_TMP/cli.log")"
  return 1
}
while :; do
  now=$(now_ms)
  [ "$now" -ge "$stop_at" ] && break
  kill -0 "$PRODUCER" 2>/dev/null || break
  if [ "$now" -ge "$next_acks" ]; then
    v=${acks_vals[RANDOM % 3]}
    while [ "$v" = "$acks" ]; do v=${acks_vals[RANDOM % 3]}; done
    flip "acks=$v" --entity-name soak-p --alter --add-config "acks=$v" &&
      acks=$v && acks_flips=$((acks_flips + 1))
    next_acks=$((now + $(rand_between 1000 4000)))
  fi
  if [ "$now" -ge "$next_consumer" ]; then
    s=$session h=$heartbeat
    case $((RANDOM % 3)) in
      0) s=$((7000 - session)) ;;                       # 3000 <-> 4000
      1) h=$((1500 - heartbeat)) ;;                     # 500 <-> 1000
      2) s=$((7000 - session)) h=$((1500 - heartbeat)) ;;
    esac
    flip "session.timeout.ms=$s heartbeat.interval.ms=$h" --entity-name soak-c \
      --alter --add-config "session.timeout.ms=$s,heartbeat.interval.ms=$h" &&
      session=$s heartbeat=$h consumer_flips=$((consumer_flips + 1))
    next_consumer=$((now + $(rand_between 6000 12000)))
  fi
  sleep 0.1
done
tap_diag "driver: $acks_flips acks flips, $consumer_flips consumer flips, $cli_failures CLI failures"

# wait_bounded PID SECONDS: its exit status, or 124 (and SIGKILL) when it
# is still running after SECONDS.
wait_bounded() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$1" 2>/dev/null; then
    tap_diag "pid $1 still running after $2 s: killed"
    kill -9 "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    return 124
  fi
  wait "$1"
}
# The producer flushes for at most 60 s and closes within 30 s; the
# consumer catches up for at most 90 s after the producer's report.
wait_bounded "$PRODUCER" 120
producer_rc=$?
wait_bounded "$CONSUMER" 150
consumer_rc=$?
APP_PIDS=($MOCK)

show_logs() {
  local f
  for f in producer.out producer.log consumer.out consumer.log; do
    tap_diag "--- $f (last lines)"
    tail -n 8 "$DC_TMP/$f" | sed 's/^/#   /'
  done
}
[ -f "$DC_TMP/producer.report" ] && [ -f "$DC_TMP/consumer.report" ] || {
  show_logs
  tap_bail "a client wrote no report (producer rc=$producer_rc, consumer rc=$consumer_rc)"
}

# ---- checks ------------------------------------------------------------
produced=$(rep producer produced)
delivered=$(rep producer delivered)
failed=$(rep producer failed)
consumed=$(rep consumer consumed)
unique=$(rep consumer unique)
missing=$(rep consumer missing)
dups=$(rep consumer duplicates)
rebuilds=$(rep consumer rebuilds)
tap_diag "producer: produced $produced, delivered $delivered, failed $failed," \
  "switches $(rep producer switches) (longest $(rep producer switch_ms_max) ms; produce paused avg $(rep producer paused_us_avg) us, max $(rep producer paused_us_max) us)," \
  "longest produce call $(rep producer max_produce_wait_us) us"
for who in producer consumer; do
  tap_diag "$who samples (start -> end): allocated $(rep $who allocated_start) -> $(rep $who allocated_end) B," \
    "rss $(rep $who rss_kb_start) -> $(rep $who rss_kb_end) kB, fds $(rep $who fds_start) -> $(rep $who fds_end)," \
    "threads $(rep $who threads_start) -> $(rep $who threads_end)"
done
tap_diag "consumer: consumed $consumed, unique $unique, duplicates $dups, missing $missing," \
  "rebuilds $rebuilds (longest $(rep consumer rebuild_ms_max) ms), longest pause until consuming again $(rep consumer resume_ms_max) ms"

tap_is "$cli_failures" 0 "the driver's dynconf-configs commands all succeeded"
[ "$produced" -gt $((RATE * (DURATION - 5) / 2)) ]
tap_ok $? "the producer kept up a steady load ($produced messages in ${DURATION}s at $RATE/s)"
[ "$producer_rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$delivered" -eq "$produced" ]
tap_ok $? "every produced message has a successful delivery report ($delivered of $produced, $failed failed)"
[ "$consumer_rc" -eq 0 ] && [ "$(rep consumer missing_basis)" = producer-report ] && [ "$missing" -eq 0 ] &&
  [ "$unique" -eq "$produced" ] && [ "$(rep consumer corrupt)" -eq 0 ]
tap_ok $? "every produced message was consumed at least once ($unique of $produced, $missing missing; consumer exit status $consumer_rc)"
if [ "$POLICY" = ordered ]; then
  [ "$(rep consumer order_violations)" -eq 0 ] && [ "$(rep producer dr_order_violations)" -eq 0 ]
  tap_ok $? "per-partition order preserved across switches (consumer: $(rep consumer order_violations) violations, producer delivery reports: $(rep producer dr_order_violations))"
else
  tap_ok 0 "# SKIP order is not promised under the fast switch policy ($(rep consumer order_violations) violations seen)"
fi
# Duplicates: the managed consumer commits what was processed, synchronously,
# before it closes a handle, so a rebuild redelivers nothing unless that
# commit fails (the consumer counts the library's warning about it); such a
# rebuild redelivers at most what was consumed since the last successful
# auto-commit (auto.commit.interval.ms = 5 s) plus the backlog drained after
# a pause (at most 20 s of the producer's rate). So: 0 without a failed
# commit, else at most failures x rate x 25 s.
cfail=$(rep consumer rebuild_commit_failures)
dup_bound=$((cfail * RATE * 25))
[ "$dups" -le "$dup_bound" ]
tap_ok $? "duplicates counted and bounded: $dups <= $dup_bound ($cfail failed commits before a rebuild x rate x 25 s)"

# Memory, descriptors and threads: each client samples itself after a 5 s
# warm-up and again at the end (after the producer's flush, before either
# closes), between polls: a switch or rebuild runs inside the poll call, so
# exactly one librdkafka handle exists at both samples.
mem_flat() { # who; the consumer's own record of messages is subtracted
  local who=$1 s e grow=0 bound
  s=$(rep "$who" allocated_start)
  e=$(rep "$who" allocated_end)
  if [ "$s" -lt 0 ]; then
    tap_ok 0 "# SKIP $who memory: not linked with jemalloc"
    return
  fi
  [ "$who" = consumer ] && grow=$(($(rep consumer tracker_bytes_end) - $(rep consumer tracker_bytes_start)))
  bound=$((s / 10 > 1048576 ? s / 10 : 1048576))
  [ $((e - grow - s)) -le "$bound" ]
  tap_ok $? "$who memory flat: jemalloc allocated $s -> $e bytes (record of messages grew $grow), growth within $bound"
}
mem_flat producer
mem_flat consumer
# librdkafka's thread set for one handle is fixed once it knows its brokers
# (main, internal, one per broker, for a consumer the group coordinator
# link), so no slack is needed: the end sample must not exceed the start.
for who in producer consumer; do
  for what in fds threads; do
    s=$(rep $who ${what}_start)
    e=$(rep $who ${what}_end)
    [ "$e" -le "$s" ]
    tap_ok $? "$who $what did not grow: $s at start, $e at end" ||
      tap_diag "  threads at start: $(rep $who thread_names_start); at end: $(rep $who thread_names_end)"
  done
done

pa=$(rep producer changes_applied)
ps=$(rep producer switches)
[ "$pa" -eq "$acks_flips" ] && [ "$ps" -eq "$acks_flips" ] && [ "$(rep producer switch_failures)" -eq 0 ]
tap_ok $? "producer applied every acks flip: $pa change sets applied, $ps handle switches, for $acks_flips flips"
ca=$(rep consumer changes_applied)
[ "$ca" -eq "$consumer_flips" ] && [ "$rebuilds" -eq "$consumer_flips" ] && [ "$consumer_flips" -gt 0 ]
tap_ok $? "consumer applied every flip: $ca change sets applied, $rebuilds rebuilds, for $consumer_flips flips"
[ "$(rep producer changes_rejected)" -eq 0 ] && [ "$(rep consumer changes_rejected)" -eq 0 ]
tap_ok $? "no change was rejected (every flipped value is valid)"

[ "$DC_TAP_FAILED" -ne 0 ] && show_logs
if [ -n "${SOAK_KEEP:-}" ]; then
  mkdir -p "$SOAK_KEEP" && cp "$DC_TMP"/*.report "$DC_TMP"/*.out "$DC_TMP"/*.log "$SOAK_KEEP"/ &&
    tap_diag "reports and logs copied to $SOAK_KEEP"
fi
tap_done
