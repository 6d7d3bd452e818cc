#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark: dynconfd against librdkafka's mock cluster.
#
#   bench/run.sh [BUILDDIR]        (or: make bench, in the build directory)
#
# Starts a dynconfd on a free loopback port with a throw-away data dir,
# stores one override for client-id bench-client with dynconf-configs, then
# runs bench/loadgen, each run for the same duration:
#   (a) DescribeConfigs v1 (CLIENT bench-client, synonyms) against dynconfd,
#       alternating round by round with
#   (d) the same requests against bench/ceiling, which answers each with
#       dynconfd's own answer, recorded once, and does nothing else: the
#       fastest server of that answer on this machine, and with
#   (e) the same requests against dynconfd's SSL listener (TLS 1.3)
#       (BENCH_ROUNDS rounds of the three; the ratios a/d and e/a of each
#       round, and their medians)
#   (b) Metadata (empty topic list) against dynconfd
#   (c) Metadata against the librdkafka mock cluster (the baseline; it only
#       speaks ApiVersions 0-2 and Metadata 0-2, no config APIs)
# and prints a side-by-side table plus the ratios (a)/(d) and (a)/(c).
#
# Environment: BENCH_SECONDS (10), BENCH_CONNECTIONS (16), BENCH_PIPELINE
# (32), BENCH_ROUNDS (3), BENCH_METADATA_VERSION (2, the highest the mock
# serves).
# Exits non-zero only when a run fails outright (an error, or no request
# completed) or a server dies; never on speed.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNECTIONS:-16}
PIPE=${BENCH_PIPELINE:-32}
MDV=${BENCH_METADATA_VERSION:-2}
ROUNDS=${BENCH_ROUNDS:-3}

for bin in dynconfd dynconf-configs bench/loadgen bench/ceiling; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd dynconf-configs bench/loadgen bench/ceiling)" >&2
    exit 2
  fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-bench.XXXXXX")
DPID=
CPID=
. "$(dirname "$0")/lib.sh"
cleanup() {
  if [ -n "$CPID" ]; then
    kill -TERM "$CPID" 2>/dev/null || true
    wait "$CPID" 2>/dev/null || true
  fi
  stop_dynconfd
  rm -rf "$TMP"
}

if ! command -v openssl >/dev/null 2>&1; then
  echo "bench: openssl (the command) is needed to make test certificates" >&2
  exit 2
fi
CERTS=$TMP/certs
sh "$SRCDIR/tests/gen_certs.sh" "$CERTS" >"$TMP/certs.log" 2>&1 || {
  echo "bench: making certificates failed:" >&2
  cat "$TMP/certs.log" >&2
  exit 1
}
mkdir "$TMP/data"
"$BUILDDIR/dynconfd" --data-dir "$TMP/data" \
  --listeners "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0" \
  --ssl-cert "$CERTS/server.pem" --ssl-key "$CERTS/server.key" \
  >"$TMP/dynconfd.out" 2>"$TMP/dynconfd.err" &
DPID=$!
TARGET=$(await_listening "$TMP/dynconfd.out" "$DPID" PLAINTEXT) &&
  TLS_TARGET=$(await_listening "$TMP/dynconfd.out" "$DPID" SSL) || {
  echo "bench: dynconfd did not start:" >&2
  cat "$TMP/dynconfd.err" >&2
  exit 1
}

# A real, DescribeConfigs-visible override, so (a) returns a config entry.
"$BUILDDIR/dynconf-configs" --bootstrap-server "$TARGET" \
  --entity-type clients --entity-name bench-client \
  --alter --add-config session.timeout.ms=30000 >"$TMP/seed.out" 2>&1 || {
  echo "bench: seeding the bench-client config failed:" >&2
  cat "$TMP/seed.out" >&2
  exit 1
}

# The ceiling: dynconfd's answers, replayed.
"$BUILDDIR/bench/ceiling" --upstream "$TARGET" >"$TMP/ceiling.out" \
  2>"$TMP/ceiling.err" &
CPID=$!
CEILING=$(await_listening "$TMP/ceiling.out" "$CPID") || {
  echo "bench: bench/ceiling did not start:" >&2
  cat "$TMP/ceiling.err" >&2
  exit 1
}

CORES=$(nproc 2>/dev/null || echo '?')
echo "dynconf benchmark: ${SECS}s per run, $CONNS connections x $PIPE requests in flight"
echo "dynconfd at $TARGET (data dir $TMP/data); bench-client has session.timeout.ms=30000"
echo "note: dynconfd, the mock cluster and the load generator all share this machine's $CORES core(s);"
echo "      the mock cluster's broker thread runs inside the loadgen process."
echo

FAILED=0
TICKS=$(getconf CLK_TCK 2>/dev/null || echo 100)
# The server's CPU time so far, in clock ticks (utime + stime): dynconfd's,
# or bench/ceiling's when SPID names it.
dticks() {
  sed 's/.*) //' "/proc/${SPID:-$DPID}/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}

# run NAME LOADGEN-ARGS...: runs one load, keeps its RESULT line in
# $TMP/NAME.result and dynconfd's CPU seconds during it in $TMP/NAME.dcpu.
run() {
  name=$1
  shift
  echo "--- $name"
  t0=$(dticks)
  set +e
  "$BUILDDIR/bench/loadgen" --duration "$SECS" --connections "$CONNS" \
    --pipeline "$PIPE" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  rc=$?
  set -e
  t1=$(dticks)
  awk -v a="${t0:-0}" -v b="${t1:-0}" -v hz="$TICKS" \
    'BEGIN { printf "%.2f\n", (b - a) / hz }' >"$TMP/$name.dcpu"
  sed 's/^/    /' "$TMP/$name.out"
  echo "    the server used $(cat "$TMP/$name.dcpu") s of CPU during this run"
  if [ -s "$TMP/$name.err" ]; then
    head -n 10 "$TMP/$name.err" | sed 's/^/    stderr: /'
  fi
  grep '^RESULT ' "$TMP/$name.out" | tail -n 1 >"$TMP/$name.result" || true
  if [ "$rc" -ne 0 ] || [ ! -s "$TMP/$name.result" ]; then
    echo "bench: run $name failed (loadgen exit $rc)" >&2
    FAILED=1
  fi
}

# field NAME KEY: a value from a run's RESULT line ("-" when missing).
field() {
  v=$(tr ' ' '\n' <"$TMP/$1.result" 2>/dev/null | sed -n "s/^$2=//p")
  echo "${v:--}"
}

r=1
while [ $r -le "$ROUNDS" ]; do
  run "describe.$r" --target "$TARGET" --api describe --version 1
  SPID=$CPID
  run "ceiling.$r" --target "$CEILING" --api describe --version 1
  SPID=
  run "tls.$r" --target "$TLS_TARGET" --tls-ca "$CERTS/ca.pem" \
    --api describe --version 1
  r=$((r + 1))
done
run metadata --target "$TARGET" --api metadata --version "$MDV"
run mock --mock --api metadata --version "$MDV"

if ! kill -0 "$CPID" 2>/dev/null; then
  echo "bench: bench/ceiling died during the benchmark:" >&2
  tail -n 20 "$TMP/ceiling.err" >&2
  FAILED=1
fi
if ! kill -0 "$DPID" 2>/dev/null; then
  echo "bench: dynconfd died during the benchmark:" >&2
  tail -n 20 "$TMP/dynconfd.err" >&2
  FAILED=1
fi

# median_round NUM DEN: the round whose NUM.r/DEN.r rate ratio is the
# median of the rounds.
median_round() {
  r=1
  while [ $r -le "$ROUNDS" ]; do
    awk -v r=$r -v a="$(field "$1.$r" rps)" -v d="$(field "$2.$r" rps)" \
      'BEGIN { if (a + 0 > 0 && d + 0 > 0) printf "%.4f %d\n", a / d, r }'
    r=$((r + 1))
  done | sort -n | awk '{ v[NR] = $2 } END { if (NR) print v[int((NR + 1) / 2)] }'
}
# The round with the median ratio stands for (a) and (d) below.
MED=$(median_round describe ceiling)
TMED=$(median_round tls describe)
for n in $(r=1; while [ $r -le "$ROUNDS" ]; do echo "describe.$r ceiling.$r tls.$r"; r=$((r + 1)); done) metadata mock; do
  req=$(field $n requests)
  err=$(field $n errors)
  cf=$(field $n conn_failures)
  if [ "$req" = - ] || [ "$req" -eq 0 ] || [ "$err" != 0 ] || [ "$cf" != 0 ]; then
    FAILED=1
  fi
done

# pct CPU_SECONDS RUN: CPU seconds as a percentage of one core over the run.
pct() {
  awk -v c="$1" -v s="$(field "$2" seconds)" \
    'BEGIN { if (s + 0 > 0 && c != "-") printf "%.0f%%", 100 * c / s; else print "-" }'
}

echo
echo "CPU columns: share of one core used by the server and by the loadgen"
echo "process during each run (the mock's server CPU is inside the loadgen's)."
printf '%-30s %-19s %10s %9s %9s %7s %8s %8s\n' target api 'req/s' 'p50 us' \
  'p99 us' errors 'srv CPU' 'lg CPU'
row() {
  if [ "$3" = mock ]; then srv="(in lg)"; else srv=$(pct "$(cat "$TMP/$3.dcpu")" "$3"); fi
  printf '%-30s %-19s %10s %9s %9s %7s %8s %8s\n' "$1" "$2" "$(field "$3" rps)" \
    "$(field "$3" p50_us)" "$(field "$3" p99_us)" "$(field "$3" errors)" \
    "$srv" "$(pct "$(field "$3" cpu_s)" "$3")"
}
MED=${MED:-1}
row "dynconfd $TARGET" "DescribeConfigs v1" "describe.$MED"
row "bench/ceiling $CEILING" "DescribeConfigs v1" "ceiling.$MED"
TMED=${TMED:-1}
row "dynconfd $TLS_TARGET (TLS)" "DescribeConfigs v1" "tls.$TMED"
row "dynconfd $TARGET" "Metadata v$MDV" metadata
row "librdkafka mock cluster" "Metadata v$MDV" mock
echo
r=1
while [ $r -le "$ROUNDS" ]; do
  awk -v r=$r -v a="$(field "describe.$r" rps)" -v d="$(field "ceiling.$r" rps)" \
    -v t="$(field "tls.$r" rps)" \
    'BEGIN { if (a + 0 > 0 && d + 0 > 0 && t + 0 > 0) printf "round %d: dynconfd %s req/s, ceiling %s req/s, ratio %.2f; over TLS %s req/s, TLS/PLAINTEXT %.2f\n", r, a, d, a / d, t, t / a }'
  r=$((r + 1))
done
ceil=$(awk -v a="$(field "describe.$MED" rps)" -v d="$(field "ceiling.$MED" rps)" \
  'BEGIN { if (a + 0 > 0 && d + 0 > 0) printf "%.2f", a / d; else print "n/a" }')
echo "ratio to the ceiling: dynconfd DescribeConfigs v1 req/s / bench/ceiling req/s = $ceil (median of $ROUNDS alternating rounds)"
# Both rates can be held back by the load generator (its CPU column at
# 100%); the server's CPU per request is not.
awk -v dc="$(cat "$TMP/describe.$MED.dcpu")" -v dn="$(field "describe.$MED" requests)" \
  -v cc="$(cat "$TMP/ceiling.$MED.dcpu")" -v cn="$(field "ceiling.$MED" requests)" \
  'BEGIN { if (dn + 0 > 0 && cn + 0 > 0 && dc + 0 > 0) printf "server CPU per request (same rounds): dynconfd %.3f us, ceiling %.3f us: the ceiling needs %.2f of dynconfd'"'"'s\n", 1e6 * dc / dn, 1e6 * cc / cn, (cc / cn) / (dc / dn) }'
tls=$(awk -v a="$(field "describe.$TMED" rps)" -v t="$(field "tls.$TMED" rps)" \
  'BEGIN { if (a + 0 > 0 && t + 0 > 0) printf "%.2f", t / a; else print "n/a" }')
echo "TLS/PLAINTEXT: dynconfd DescribeConfigs v1 req/s over TLS / over PLAINTEXT = $tls (median of $ROUNDS rounds)"
a=$(field "describe.$MED" rps)
c=$(field mock rps)
ratio=$(awk -v a="$a" -v c="$c" \
  'BEGIN { if (a + 0 > 0 && c + 0 > 0) printf "%.2f", a / c; else print "n/a" }')
echo "ratio: dynconfd DescribeConfigs v1 req/s / mock cluster Metadata v$MDV req/s = $ratio"
echo "(same machine, same duration and load shape; the mock shares the loadgen's process)"

if [ "$FAILED" -ne 0 ]; then
  echo "bench: FAILED (a run had errors or completed no requests)" >&2
  exit 1
fi
exit 0
