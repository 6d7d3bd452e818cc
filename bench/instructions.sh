#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Instructions per request, the figure that does not move with the
# machine's load: dynconfd and bench/ceiling each run under valgrind's
# callgrind, which counts every instruction they execute. For each kind
# of request, the counters are zeroed, bench/loadgen sends that request
# for a few seconds, and the instructions counted are divided by the
# requests answered. The same binary with the same input gives the same
# count to within a fraction of a percent.
#
#   bench/instructions.sh [BUILDDIR]      (or: make bench-instructions)
#
# Kinds: DescribeConfigs v1 and v4 (CLIENT bench-client, synonyms), v1
# over TLS 1.3,
# Metadata v2, a Watch answered at once (v1, the client knowing no
# version) and a validate-only IncrementalAlterConfigs v1 against
# dynconfd; DescribeConfigs v1 against bench/ceiling, which replays
# dynconfd's answers and does nothing else.
#
# Environment: INSTR_SECONDS (3) per kind; INSTR_CONNECTIONS (4) x
# INSTR_PIPELINE (8) requests in flight. Needs valgrind (installed with
# apt-get when missing and running as root). Exits non-zero when a run
# fails; never on a count.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
SECS=${INSTR_SECONDS:-3}
CONNS=${INSTR_CONNECTIONS:-4}
PIPE=${INSTR_PIPELINE:-8}

for bin in dynconfd dynconf-configs bench/loadgen bench/ceiling; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "instructions: $BUILDDIR/$bin not built (make bench-instructions)" >&2
    exit 2
  fi
done
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -q valgrind >/dev/null
  else
    echo "instructions: valgrind is needed (apt-get install valgrind)" >&2
    exit 2
  fi
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-instr.XXXXXX")
DPID=
PIDS=
. "$(dirname "$0")/lib.sh"
cleanup() {
  for p in $PIDS; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$TMP"
}

# start NAME CMD...: CMD under callgrind, counting nothing until asked;
# waits for its "listening on" line and sets PID and ADDR.
start() {
  name=$1
  shift
  valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$TMP/$name.cg.%p" "$@" >"$TMP/$name.out" \
    2>"$TMP/$name.err" &
  PID=$!
  PIDS="$PIDS $PID"
  ADDR=$(await_listening "$TMP/$name.out" "$PID") || {
    echo "instructions: $name did not start under valgrind:" >&2
    tail -n 20 "$TMP/$name.err" >&2
    exit 1
  }
}

# count NAME PID TARGET LOADGEN-ARGS...: instructions per request of one
# kind; prints a row and keeps the figure in $TMP/NAME.ipr.
count() {
  name=$1 pid=$2 target=$3
  shift 3
  callgrind_control -z "$pid" >/dev/null 2>&1
  callgrind_control -i on "$pid" >/dev/null 2>&1
  "$BUILDDIR/bench/loadgen" --duration "$SECS" --connections "$CONNS" \
    --pipeline "$PIPE" --target "$target" "$@" >"$TMP/$name.lg" 2>&1 || {
    echo "instructions: the load for $name failed:" >&2
    tail -n 5 "$TMP/$name.lg" >&2
    exit 1
  }
  callgrind_control -i off "$pid" >/dev/null 2>&1
  rm -f "$TMP"/*.cg.*
  callgrind_control -d "$pid" >/dev/null 2>&1
  ir=$(cat "$TMP"/*.cg.* 2>/dev/null | sed -n 's/^totals: *\([0-9]*\).*/\1/p' | head -n 1)
  n=$(tr ' ' '\n' <"$TMP/$name.lg" | sed -n 's/^requests=//p' | tail -n 1)
  if [ -z "$ir" ] || [ -z "$n" ] || [ "$n" -eq 0 ]; then
    echo "instructions: no count for $name (ir '$ir', requests '$n')" >&2
    exit 1
  fi
  awk -v ir="$ir" -v n="$n" 'BEGIN { printf "%.0f\n", ir / n }' >"$TMP/$name.ipr"
  printf '%-34s %12s %10s %12s\n' "$name" "$ir" "$n" "$(cat "$TMP/$name.ipr")"
}

sh "$(dirname "$0")/../tests/gen_certs.sh" "$TMP/certs" >"$TMP/certs.log" 2>&1 || {
  echo "instructions: making certificates failed:" >&2
  cat "$TMP/certs.log" >&2
  exit 1
}
mkdir "$TMP/data"
start dynconfd "$BUILDDIR/dynconfd" --data-dir "$TMP/data" \
  --listeners "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0" \
  --ssl-cert "$TMP/certs/server.pem" --ssl-key "$TMP/certs/server.key"
DPID=$PID
DADDR=$(await_listening "$TMP/dynconfd.out" "$DPID" PLAINTEXT) &&
  SADDR=$(await_listening "$TMP/dynconfd.out" "$DPID" SSL) || {
  echo "instructions: dynconfd did not name its two listeners" >&2
  exit 1
}
"$BUILDDIR/dynconf-configs" --bootstrap-server "$DADDR" --timeout-ms 60000 \
  --entity-type clients --entity-name bench-client \
  --alter --add-config session.timeout.ms=30000 >"$TMP/seed.out" 2>&1 || {
  echo "instructions: seeding bench-client failed:" >&2
  cat "$TMP/seed.out" >&2
  exit 1
}
start ceiling "$BUILDDIR/bench/ceiling" --upstream "$DADDR"
CPID=$PID CADDR=$ADDR

echo "instructions per request under callgrind, ${SECS} s per kind, $CONNS x $PIPE in flight"
printf '%-34s %12s %10s %12s\n' kind instructions requests 'per request'
count "dynconfd DescribeConfigs v1" "$DPID" "$DADDR" --api describe --version 1
count "dynconfd DescribeConfigs v4" "$DPID" "$DADDR" --api describe --version 4
# Over TLS the count includes the connections' handshakes (made by the
# load generator once the counting has started).
count "dynconfd DescribeConfigs v1 TLS" "$DPID" "$SADDR" --api describe \
  --version 1 --tls-ca "$TMP/certs/ca.pem"
count "dynconfd Metadata v2" "$DPID" "$DADDR" --api metadata --version 2
count "dynconfd Watch v1 answer" "$DPID" "$DADDR" --api watch --version 1
count "dynconfd alter v1 validate-only" "$DPID" "$DADDR" --api alter --version 1
# The ceiling records its answers on first sight: warm it, then count.
"$BUILDDIR/bench/loadgen" --duration 1 --connections 1 --pipeline 1 \
  --target "$CADDR" --api describe --version 1 >/dev/null 2>&1 || true
count "ceiling DescribeConfigs v1" "$CPID" "$CADDR" --api describe --version 1
awk -v d="$(cat "$TMP/dynconfd DescribeConfigs v1.ipr")" \
  -v c="$(cat "$TMP/ceiling DescribeConfigs v1.ipr")" \
  'BEGIN { printf "DescribeConfigs v1: dynconfd %d instructions per request, the ceiling %d: %.2f of dynconfd'"'"'s count\n", d, c, c / d }'
