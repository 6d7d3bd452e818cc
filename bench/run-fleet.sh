#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of what the fleet view costs dynconfd under
# hostile load (ClientReport, DescribeFleet and its parked form).
#
#   bench/run-fleet.sh [BUILDDIR]               (or: make bench-fleet)
#   FLEET_BASE=OLD_BUILDDIR bench/run-fleet.sh BUILDDIR
#
# With FLEET_BASE set, OLD_BUILDDIR's dynconfd is measured first, as the
# baseline, then BUILDDIR's; bench/fleet (BUILDDIR's) is the client of
# both. Each step starts a fresh dynconfd (loopback, default settings
# unless said), and a probe sends a DescribeConfigs every 5 ms throughout
# (its p50/p99 while each step ran is what other clients saw):
#   1. N ClientReports of distinct instance ids on one connection, then M
#      more once the fleet is full (each drops the longest gone entry);
#      then on that fleet: R DescribeFleet v1 pages of one client after
#      random cursors, one at a time; P such pages sent at once; one v1
#      page without a count (as many agents as max.response.bytes lets
#      in: how many, bytes each); one v0 listing of the whole fleet
#      (answer, time, RSS before and peak);
#      W DescribeFleet parked (pages of 100) and one report waking them.
#      The parked step runs with the caps raised to W (so both dynconfd do
#      the same work), and again with the default caps.
#   2. N ClientReports whose instance ids' unseeded FNV-1a hashes share
#      their low 20 bits (bench/fnv_collide.h), then M more: against the
#      distinct ids of step 1, in the same run.
#   3. N ClientReports with every field as long as dynconfd takes, from
#      one unauthenticated connection: dynconfd's RSS before and after;
#      then the pages of step 1 once each, on that fleet (how many such
#      agents one page without a count holds).
# Prints one table: every figure for each dynconfd side by side.
#
# Environment: FLEET_N (100000), FLEET_EXTRA (2000), FLEET_REQUESTS (50),
# FLEET_PIPELINE (100), FLEET_WAITS (100), FLEET_BASE (none). About 20 s
# for a current dynconfd on two cores; several minutes for one without
# the bounds. Exits non-zero only when something failed outright.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
N=${FLEET_N:-100000}
EXTRA=${FLEET_EXTRA:-2000}
REQUESTS=${FLEET_REQUESTS:-50}
PIPELINE=${FLEET_PIPELINE:-100}
WAITS=${FLEET_WAITS:-100}
BASE=${FLEET_BASE:+$(cd "$FLEET_BASE" && pwd)}

for bin in dynconfd bench/fleet; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd bench/fleet)" >&2
    exit 2
  fi
done
if [ -n "$BASE" ] && [ ! -x "$BASE/dynconfd" ]; then
  echo "bench: $BASE/dynconfd not built" >&2
  exit 2
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-fleetbench.XXXXXX")
DPID=
. "$(dirname "$0")/lib.sh"

# start_dynconfd BUILD [ARGS...]: a fresh dynconfd; sets DPID, ADDR and
# METRICS.
start_dynconfd() {
  build=$1
  shift
  rm -rf "$TMP/data"
  mkdir -p "$TMP/data"
  : >"$TMP/out"
  "$build/dynconfd" --listen 127.0.0.1:0 --data-dir "$TMP/data" \
    --metrics-listen 127.0.0.1:0 "$@" >"$TMP/out" 2>"$TMP/err" &
  DPID=$!
  ADDR=
  i=0
  while [ -z "$ADDR" ] || [ -z "$METRICS" ]; do
    ADDR=$(sed -n 's/^listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$TMP/out" | head -n 1)
    METRICS=$(sed -n 's/^metrics on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$TMP/out" | head -n 1)
    if ! kill -0 "$DPID" 2>/dev/null || [ $i -gt 3000 ]; then
      echo "bench: dynconfd did not start:" >&2
      cat "$TMP/err" >&2
      exit 1
    fi
    sleep 0.01
    i=$((i + 1))
  done
}

# fleet CMD ARGS...: bench/fleet against the dynconfd running; its RESULT
# lines appended to $RES.
fleet() {
  cmd=$1
  shift
  "$BUILDDIR/bench/fleet" "$cmd" --target "$ADDR" --pid "$DPID" "$@" \
    >"$TMP/fleet.out" || {
    cat "$TMP/fleet.out"
    echo "bench: bench/fleet $cmd failed" >&2
    exit 1
  }
  sed 's/^/    /' "$TMP/fleet.out" | grep -v RESULT || true
  grep '^RESULT' "$TMP/fleet.out" | sed "s/ phase=/ phase=$TAG/" >>"$RES"
}

# measure BUILD NAME: every step against BUILD's dynconfd.
measure() {
  build=$1
  echo "== $2: $build/dynconfd"
  caps=
  if "$build/dynconfd" --help 2>&1 | grep -q -- --fleet-max-waits; then
    caps="--fleet-max-waits $WAITS --fleet-max-waits-per-principal $WAITS"
  fi
  # shellcheck disable=SC2086 # caps: words, or none
  start_dynconfd "$build" $caps
  TAG=""
  fleet reports --n "$N" --extra "$EXTRA"
  fleet pages --requests "$REQUESTS" --pipeline "$PIPELINE"
  fleet waits --metrics "$METRICS" --waits "$WAITS" --max 100
  stop_dynconfd
  if [ -n "$caps" ]; then
    start_dynconfd "$build"
    TAG="default_caps_"
    fleet reports --n 1000
    fleet waits --metrics "$METRICS" --waits "$WAITS" --max 100
    TAG=""
    stop_dynconfd
  fi
  start_dynconfd "$build"
  fleet reports --n "$N" --extra "$EXTRA" --colliding
  stop_dynconfd
  start_dynconfd "$build"
  fleet reports --n "$N" --fat
  TAG="fat_"
  fleet pages --requests 1 --pipeline 1
  TAG=""
  stop_dynconfd
}

: >"$TMP/base.res"
: >"$TMP/this.res"
if [ -n "$BASE" ]; then
  RES=$TMP/base.res
  measure "$BASE" baseline
fi
RES=$TMP/this.res
measure "$BUILDDIR" this

# The table: the figures that tell, a column per dynconfd.
echo
echo "N=$N reports (+$EXTRA once full), $REQUESTS pages one by one, $PIPELINE at once, $WAITS parked"
awk -v base="$TMP/base.res" -v this="$TMP/this.res" '
function load(file, col,   line, f, i, kv, phase) {
  while ((getline line < file) > 0) {
    split(line, f, " ")
    for (i = 2; i in f; i++) {
      split(f[i], kv, "=")
      if (kv[1] == "phase") phase = kv[2]
      else val[phase " " kv[1], col] = kv[2]
    }
  }
}
function row(label, key,   b, t) {
  b = ((key, 1) in val) ? val[key, 1] : "-"
  t = ((key, 2) in val) ? val[key, 2] : "-"
  if (b == "-1.00") b = "-"
  if (t == "-1.00") t = "-"
  if (b != "-" || t != "-")
    printf "%-58s %12s %12s\n", label, b, t
}
BEGIN {
  load(base, 1); load(this, 2)
  printf "%-58s %12s %12s\n", "", "baseline", "this build"
  row("distinct ids: dynconfd CPU for N reports (s)", "reports_distinct cpu_s")
  row("  probe p50 meanwhile (ms)", "reports_distinct probe_p50_ms")
  row("  probe p99 meanwhile (ms)", "reports_distinct probe_p99_ms")
  row("  M more (the fleet full at 100,000): CPU each (ms)",
      "reports_distinct_full cpu_ms_each")
  row("colliding ids: dynconfd CPU for N reports (s)", "reports_colliding cpu_s")
  row("  probe p50 meanwhile (ms)", "reports_colliding probe_p50_ms")
  row("  probe p99 meanwhile (ms)", "reports_colliding probe_p99_ms")
  row("  M more (the fleet full at 100,000): CPU each (ms)",
      "reports_colliding_full cpu_ms_each")
  row("largest reports: dynconfd RSS before (MB)", "fat_memory rss0_mb")
  row("  after N of them (MB)", "fat_memory rss_mb")
  row("DescribeFleet v1 page of 1: p50 (ms)", "page_latency p50_ms")
  row("  p99 (ms)", "page_latency p99_ms")
  row("  P pages sent at once: until the last answer (s)",
      "pages_at_once wall_s")
  row("  dynconfd CPU for them (s)", "pages_at_once cpu_s")
  row("  probe p99 meanwhile (ms)", "pages_at_once probe_p99_ms")
  row("v1 page without a count: agents in it", "full_page clients")
  row("  bytes per agent listed", "full_page bytes_each")
  row("  the same, every field at its longest: agents", "fat_full_page clients")
  row("  bytes per agent listed", "fat_full_page bytes_each")
  row("v0 of the whole fleet: until answered (s)", "v0_whole_fleet wall_s")
  row("  dynconfd RSS before (MB)", "v0_memory rss0_mb")
  row("  dynconfd peak RSS after (MB)", "v0_memory hwm_mb")
  row("parked DescribeFleet (caps raised): parked", "waits parked")
  row("  one report: until all answered (s)", "waits_answered wall_s")
  row("  dynconfd CPU for it (s)", "waits_answered cpu_s")
  row("  probe p99 meanwhile (ms)", "waits_answered probe_p99_ms")
  row("default caps, as ANONYMOUS: parked", "default_caps_waits parked")
  row("  refused at once", "default_caps_waits refused")
}'
