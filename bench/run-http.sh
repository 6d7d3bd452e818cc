#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of the metrics endpoint under a flood of partial
# requests: /healthz latency polled from 127.0.0.1 (a new connection every
# 50 ms), first quiet (the baseline, same run) and then while 127.0.0.2
# opens BENCH_ROUNDS x BENCH_CONNECTIONS connections that each send part
# of a request and close, BENCH_IDLE of each round staying open and
# silent; then one request with a 1 MiB header. The figures come from
# tests/httpflood.py: p50, p99 and the slowest /healthz, the polls never
# answered (30 s each), the longest stretch with no answer, the ratios to
# the baseline, and the 1 MiB header's status and time.
#
#   bench/run-http.sh [BUILDDIR]   (or: make bench-http)
#
# dynconfd runs with its default limits (--metrics-max-connections etc.).
# Environment: BENCH_CONNECTIONS (2000), BENCH_ROUNDS (5, one every half
# second), BENCH_IDLE (50). About 10 s (minutes where /healthz is lost:
# each lost poll waits 30 s). Exits non-zero when dynconfd fails to start
# or dies, or the quiet baseline lost a poll; never on speed.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$BUILDDIR/dynconfd" ]; then
  echo "bench: $BUILDDIR/dynconfd not built (make dynconfd)" >&2
  exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-bench-http.XXXXXX")
DPID=
cleanup() {
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
    kill -TERM "$DPID" 2>/dev/null || true
    wait "$DPID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$BUILDDIR/dynconfd" --listen 127.0.0.1:0 --data-dir "$TMP/data" \
  --metrics-listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
DPID=$!
METRICS=
i=0
while [ $i -lt 100 ] && [ -z "$METRICS" ]; do
  METRICS=$(sed -n 's/^metrics on \(127\.0\.0\.1:[0-9]*\).*/\1/p' \
    "$TMP/out" 2>/dev/null || true)
  if ! kill -0 "$DPID" 2>/dev/null; then
    echo "bench: dynconfd exited during start-up:" >&2
    cat "$TMP/err" >&2
    exit 1
  fi
  [ -n "$METRICS" ] || sleep 0.1
  i=$((i + 1))
done
[ -n "$METRICS" ] || { echo "bench: no 'metrics on' line within 10 s" >&2; exit 1; }

echo "dynconfd $("$BUILDDIR/dynconfd" --version | cut -d' ' -f2), metrics on $METRICS," \
  "$(nproc) cores shared by dynconfd and the clients"
rc=0
/usr/bin/python3 "$SRCDIR/tests/httpflood.py" "$METRICS" \
  --connections "${BENCH_CONNECTIONS:-2000}" --rounds "${BENCH_ROUNDS:-5}" \
  --idle "${BENCH_IDLE:-50}" || rc=$?
if ! kill -0 "$DPID" 2>/dev/null; then
  echo "bench: dynconfd died during the benchmark:" >&2
  tail -n 20 "$TMP/err" >&2
  exit 1
fi
exit "$rc"
