#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of the Kafka-topic store against the SQLite store,
# all on loopback in one run:
#
#   bench/run-store.sh [BUILDDIR]        (or: make bench-store)
#
# Starts librdkafka's mock cluster (examples/mock_cluster, 3 brokers, the
# one-partition topic _dynconf_configs) in its own process, then:
#
# 1. Alter latency: bench/store_alter sends STORE_ALTERS sequential
#    IncrementalAlterConfigs (one client entity, linger.ms, a new value each
#    time) after STORE_WARMUP unrecorded ones, timing each send -> response,
#    against
#      (a) dynconfd with the SQLite store,
#      (b) dynconfd with the Kafka store on the mock cluster (the store's
#          default fetch.wait.max.ms=100),
#      (c) the same with --store-config setting fetch.wait.max.ms=5.
#    An alter on the Kafka store is acknowledged once its record is written
#    (idempotent, acks=all) and applied to the cache: directly when its
#    offset follows what the store applied, else after reading the log
#    back to it, which on the mock waits out the fetch in flight (the mock
#    answers a fetch that finds nothing only when its wait ends; a real
#    broker answers as soon as a record is there). (c) shows whether the
#    fetch wait still matters.
# 2. Reads: bench/loadgen (DescribeConfigs v1 of a client with one
#    override, STORE_CONNECTIONS x STORE_PIPELINE in flight, STORE_SECONDS
#    per run) against the SQLite dynconfd and against a Kafka-store
#    replica (its own data dir and node id; it heartbeats, follows the
#    log and, once the first writer has stopped, writes it) on the same
#    topic, STORE_ROUNDS rounds each in alternating order (A B, B A, ...).
#    The first Kafka-store writer is stopped first; the SQLite dynconfd,
#    the replica and the mock cluster run throughout, so every read run
#    shares the cores with the same processes.
#
# Prints a summary table with the ratios and the read target (replica
# req/s >= 0.9 x SQLite req/s). Never fails on a number: exits non-zero
# only when a run fails outright (a server does not start or dies, an
# alter or read errs, nothing completes). About 2 minutes with the
# defaults.
#
# Environment: STORE_ALTERS (500), STORE_WARMUP (20), STORE_SECONDS (5),
# STORE_ROUNDS (3), STORE_CONNECTIONS (16), STORE_PIPELINE (32),
# STORE_SHORT_WAIT_MS (5: fetch.wait.max.ms of run (c)).
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
ALTERS=${STORE_ALTERS:-500}
WARMUP=${STORE_WARMUP:-20}
SECS=${STORE_SECONDS:-5}
ROUNDS=${STORE_ROUNDS:-3}
CONNS=${STORE_CONNECTIONS:-16}
PIPE=${STORE_PIPELINE:-32}
SHORT_WAIT=${STORE_SHORT_WAIT_MS:-5}
TOPIC=_dynconf_configs

for bin in dynconfd dynconf-configs bench/loadgen bench/store_alter \
  examples/mock_cluster; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench-store: $BUILDDIR/$bin not built (make dynconfd dynconf-configs bench/loadgen bench/store_alter examples/mock_cluster)" >&2
    exit 2
  fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-bench-store.XXXXXX")
PIDS=
cleanup() {
  for p in $PIDS; do
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "bench-store: $*" >&2
  exit 1
}

# stop PID: SIGTERM and wait for it.
stop() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# ---- the mock cluster -------------------------------------------------------
"$BUILDDIR/examples/mock_cluster" --brokers 3 --topic "$TOPIC" \
  --partitions 1 --topic "${TOPIC}_history" --partitions 1 \
  >"$TMP/mock.out" 2>"$TMP/mock.err" &
MOCK_PID=$!
PIDS="$PIDS $MOCK_PID"
BS=
i=0
while [ $i -lt 100 ]; do
  BS=$(sed -n 's/^bootstrap //p' "$TMP/mock.out" | head -n 1)
  [ -n "$BS" ] && break
  kill -0 "$MOCK_PID" 2>/dev/null || {
    cat "$TMP/mock.err" >&2
    fail "the mock cluster exited during start-up"
  }
  sleep 0.1
  i=$((i + 1))
done
[ -n "$BS" ] || fail "the mock cluster did not print its bootstrap list within 10 s"

# start_dynconfd NAME ARGS...: starts a dynconfd on a free loopback port
# and waits (up to 30 s) for it to listen; sets D_PID and D_PORT.
start_dynconfd() {
  name=$1
  shift
  "$BUILDDIR/dynconfd" --listen 127.0.0.1:0 "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err" &
  D_PID=$!
  PIDS="$PIDS $D_PID"
  D_PORT=
  i=0
  while [ $i -lt 300 ]; do
    D_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' \
      "$TMP/$name.out" | head -n 1)
    [ -n "$D_PORT" ] && return 0
    if ! kill -0 "$D_PID" 2>/dev/null; then
      tail -n 20 "$TMP/$name.err" >&2
      fail "dynconfd $name exited during start-up"
    fi
    sleep 0.1
    i=$((i + 1))
  done
  tail -n 20 "$TMP/$name.err" >&2
  fail "dynconfd $name did not report its port within 30 s"
}

# alive PID NAME: fails the benchmark when the server has died.
alive() {
  if ! kill -0 "$1" 2>/dev/null; then
    tail -n 20 "$TMP/$2.err" >&2
    fail "dynconfd $2 died during the benchmark"
  fi
}

# field FILE KEY: a value from the RESULT line in FILE ("-" when missing).
field() {
  v=$(grep '^RESULT ' "$1" 2>/dev/null | tail -n 1 | tr ' ' '\n' |
    sed -n "s/^$2=//p")
  echo "${v:--}"
}

# seed PORT: the DescribeConfigs-visible override loadgen reads.
seed() {
  "$BUILDDIR/dynconf-configs" --bootstrap-server "127.0.0.1:$1" \
    --timeout-ms 30000 --entity-type clients --entity-name bench-client \
    --alter --add-config session.timeout.ms=30000 >"$TMP/seed.out" 2>&1 || {
    cat "$TMP/seed.out" >&2
    fail "seeding bench-client on port $1 failed"
  }
}

KSTORE="--store kafka --store-bootstrap $BS --store-topic $TOPIC --store-timeout-ms 20000"
CORES=$(nproc 2>/dev/null || echo '?')
echo "dynconf store benchmark: mock cluster (3 brokers, own process) at $BS"
echo "alters: $ALTERS sequential after $WARMUP warm-up per store; reads: ${SECS}s x $ROUNDS rounds per replica,"
echo "$CONNS connections x $PIPE in flight; everything shares this machine's $CORES core(s)"
echo

# ---- 1. alter latency ---------------------------------------------------------
# alter_run NAME PORT BASE: bench/store_alter against PORT; RESULT in NAME.alter.
alter_run() {
  echo "--- alters: $1"
  set +e
  "$BUILDDIR/bench/store_alter" --target "127.0.0.1:$2" --alters "$ALTERS" \
    --warmup "$WARMUP" --base "$3" --max-seconds 100 \
    >"$TMP/$1.alter" 2>"$TMP/$1.alter.err"
  rc=$?
  set -e
  sed 's/^/    /' "$TMP/$1.alter"
  sed 's/^/    stderr: /' "$TMP/$1.alter.err"
  [ "$rc" -eq 0 ] || fail "alter run $1 failed (store_alter exit $rc)"
}

mkdir "$TMP/sqlite" "$TMP/kafka" "$TMP/replica"
start_dynconfd sqlite --data-dir "$TMP/sqlite"
SQL_PID=$D_PID SQL_PORT=$D_PORT
alter_run sqlite "$SQL_PORT" 100000
alive "$SQL_PID" sqlite

# shellcheck disable=SC2086 # KSTORE is a list of words
start_dynconfd kafka $KSTORE --data-dir "$TMP/kafka" --node-id 1
K_PID=$D_PID
alter_run kafka "$D_PORT" 200000
alive "$K_PID" kafka
stop "$K_PID"

printf 'fetch.wait.max.ms=%s\n' "$SHORT_WAIT" >"$TMP/short.properties"
# shellcheck disable=SC2086
start_dynconfd kafka_short $KSTORE --store-config "$TMP/short.properties" \
  --data-dir "$TMP/kafka" --node-id 1
K_PID=$D_PID
alter_run kafka_short "$D_PORT" 300000
alive "$K_PID" kafka_short
seed "$D_PORT"
stop "$K_PID"
seed "$SQL_PORT"

# ---- 2. reads -----------------------------------------------------------------
# shellcheck disable=SC2086
start_dynconfd replica $KSTORE --data-dir "$TMP/replica" --node-id 2
R_PID=$D_PID R_PORT=$D_PORT
seen=
i=0
while [ $i -lt 100 ]; do
  seen=$("$BUILDDIR/dynconf-configs" --bootstrap-server "127.0.0.1:$R_PORT" \
    --entity-type clients --entity-name bench-client --describe 2>/dev/null |
    grep -c 'session.timeout.ms=30000' || true)
  [ "${seen:-0}" -gt 0 ] && break
  sleep 0.1
  i=$((i + 1))
done
[ "${seen:-0}" -gt 0 ] || fail "the replica does not serve bench-client's override"

TICKS=$(getconf CLK_TCK 2>/dev/null || echo 100)
# ticks PID: the process's CPU time so far in clock ticks (utime + stime).
ticks() {
  sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}

# read_run NAME PID PORT: one loadgen run; RESULT in NAME.out, the server's
# CPU seconds in NAME.cpu.
read_run() {
  echo "--- reads: $1 (127.0.0.1:$3)"
  t0=$(ticks "$2")
  set +e
  "$BUILDDIR/bench/loadgen" --target "127.0.0.1:$3" --api describe \
    --version 1 --client bench-client --duration "$SECS" \
    --connections "$CONNS" --pipeline "$PIPE" --quiet \
    >"$TMP/$1.out" 2>"$TMP/$1.err"
  rc=$?
  set -e
  t1=$(ticks "$2")
  awk -v a="${t0:-0}" -v b="${t1:-0}" -v hz="$TICKS" \
    'BEGIN { printf "%.2f\n", (b - a) / hz }' >"$TMP/$1.cpu"
  sed 's/^/    /' "$TMP/$1.out"
  head -n 5 "$TMP/$1.err" | sed 's/^/    stderr: /'
  req=$(field "$TMP/$1.out" requests)
  if [ "$rc" -ne 0 ] || [ "$req" = - ] || [ "$req" -eq 0 ] ||
    [ "$(field "$TMP/$1.out" errors)" != 0 ]; then
    fail "read run $1 failed (loadgen exit $rc)"
  fi
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
  if [ $((r % 2)) -eq 1 ]; then
    read_run "sqlite_r$r" "$SQL_PID" "$SQL_PORT"
    read_run "replica_r$r" "$R_PID" "$R_PORT"
  else
    read_run "replica_r$r" "$R_PID" "$R_PORT"
    read_run "sqlite_r$r" "$SQL_PID" "$SQL_PORT"
  fi
  alive "$SQL_PID" sqlite
  alive "$R_PID" replica
  r=$((r + 1))
done

# ---- summary --------------------------------------------------------------------
ms() { # ms MICROSECONDS
  awk -v u="$1" 'BEGIN { if (u == "-") print "-"; else printf "%.2f", u / 1000 }'
}
ratio() { # ratio A B: A / B
  awk -v a="$1" -v b="$2" \
    'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'
}

echo
echo "=== alter latency: IncrementalAlterConfigs, one key, one at a time, send -> response"
printf '%-44s %6s %9s %9s %9s %9s %14s\n' store n 'p50 ms' 'p99 ms' \
  'max ms' 'mean ms' 'p50 vs (a)'
sp50=$(field "$TMP/sqlite.alter" p50_us)
arow() {
  p50=$(field "$TMP/$2.alter" p50_us)
  printf '%-44s %6s %9s %9s %9s %9s %13sx\n' "$1" "$(field "$TMP/$2.alter" n)" \
    "$(ms "$p50")" "$(ms "$(field "$TMP/$2.alter" p99_us)")" \
    "$(ms "$(field "$TMP/$2.alter" max_us)")" \
    "$(ms "$(field "$TMP/$2.alter" mean_us)")" "$(ratio "$p50" "$sp50")"
}
arow "(a) SQLite" sqlite
arow "(b) Kafka store, mock, fetch.wait.max.ms=100" kafka
arow "(c) Kafka store, mock, fetch.wait.max.ms=$SHORT_WAIT" kafka_short
echo "target: none for alters. A lone writer applies its own record as written"
echo "(nothing else lies between it and what it applied), so an alter costs the"
echo "produce round trip (acks=all) and the cache's commit; it reads the log back"
echo "(one fetch wait on the mock) only when another record came first."

echo
echo "=== reads: DescribeConfigs v1, $CONNS connections x $PIPE in flight, ${SECS}s per run"
printf '%-8s %-30s %12s %9s %9s %9s %14s\n' round target 'req/s' 'p50 us' \
  'p99 us' 'srv CPU' 'CPU us/req'
cpu_row() { # cpu_row LABEL TARGET NAME
  f=$TMP/$3.out
  c=$(cat "$TMP/$3.cpu")
  printf '%-8s %-30s %12s %9s %9s %9s %14s\n' "$1" "$2" "$(field "$f" rps)" \
    "$(field "$f" p50_us)" "$(field "$f" p99_us)" \
    "$(awk -v c="$c" -v s="$(field "$f" seconds)" \
      'BEGIN { if (s + 0 > 0) printf "%.0f%%", 100 * c / s; else print "-" }')" \
    "$(awk -v c="$c" -v n="$(field "$f" requests)" \
      'BEGIN { if (n + 0 > 0) printf "%.2f", 1e6 * c / n; else print "-" }')"
}
# add A B: A + B
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a + b }'; }
r=1
rps_s=0 rps_r=0 cpu_s=0 cpu_r=0 req_s=0 req_r=0 ratios=
while [ "$r" -le "$ROUNDS" ]; do
  cpu_row "$r" "(a) SQLite dynconfd" "sqlite_r$r"
  cpu_row "$r" "(b) Kafka-store replica" "replica_r$r"
  s=$(field "$TMP/sqlite_r$r.out" rps)
  k=$(field "$TMP/replica_r$r.out" rps)
  rps_s=$(add "$rps_s" "$s")
  rps_r=$(add "$rps_r" "$k")
  cpu_s=$(add "$cpu_s" "$(cat "$TMP/sqlite_r$r.cpu")")
  cpu_r=$(add "$cpu_r" "$(cat "$TMP/replica_r$r.cpu")")
  req_s=$(add "$req_s" "$(field "$TMP/sqlite_r$r.out" requests)")
  req_r=$(add "$req_r" "$(field "$TMP/replica_r$r.out" requests)")
  ratios="$ratios $(ratio "$k" "$s")"
  r=$((r + 1))
done
mean_s=$(awk -v a="$rps_s" -v n="$ROUNDS" 'BEGIN { printf "%.0f", a / n }')
mean_r=$(awk -v a="$rps_r" -v n="$ROUNDS" 'BEGIN { printf "%.0f", a / n }')
overall=$(ratio "$mean_r" "$mean_s")
# CPU per request of (a) over (b): above 1 when the replica spends less.
cpu_ratio=$(awk -v cs="$cpu_s" -v ns="$req_s" -v cr="$cpu_r" -v nr="$req_r" \
  'BEGIN { if (ns > 0 && nr > 0 && cr > 0) printf "%.2f", (cs / ns) / (cr / nr); else print "n/a" }')
met=$(awk -v x="$overall" 'BEGIN { if (x == "n/a") print "n/a"; else if (x >= 0.9) print "met"; else print "NOT met" }')
echo "mean req/s: (a) $mean_s, (b) $mean_r; ratio (b)/(a) = $overall (per round:$ratios)"
echo "server CPU per request, (a)/(b): $cpu_ratio (1.00: the same work per request)"
echo "target: replica >= 0.9 x SQLite req/s -- $met"
echo "(both serve reads from memory; the cores are shared, so a round's req/s also"
echo "moves with whatever else runs; the CPU per request is less sensitive to that)"
exit 0
