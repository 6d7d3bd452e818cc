#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# `./demo.sh --kafka`, the demo on a real Apache Kafka cluster (3 KRaft
# nodes, scripts/kafka.sh), run on the binaries already in $DC_BUILDDIR
# (DEMO_NO_BUILD=1: it installs and builds nothing). Checks:
#   - it exits 0 and its report counts every message produced as consumed
#     once, none lost and none out of order;
#   - the consumer applied the session-timeout change and rebuilt; the
#     brokers' group coordinator logged its static rejoin in Stable state
#     and no rebalance after the first join (the demo shows those lines);
#   - the consumption pause is printed, in ms, below the new session
#     timeout (a rejoin that waited for the old member to expire, as on
#     the mock, takes longer than that);
#   - afterwards no process of the demo runs and its directory is gone
#     (the cluster was destroyed);
#   - the same clean-up when the demo is stopped by SIGTERM while its
#     cluster, dynconfd and both clients run.
. "$(dirname "$0")/../lib.sh"

for b in dynconfd dynconf-configs examples/producer examples/consumer; do
  [ -x "$DC_BUILDDIR/$b" ] || tap_bail "$DC_BUILDDIR/$b not built (make builds it)"
done
started=$SECONDS

# demo_start TMPDIR OUT: the demo in the background, its mktemp directory
# (with the cluster's) under TMPDIR, so that what it leaves can be seen.
demo_pid=
demo_start() {
  mkdir -p "$1"
  TMPDIR=$1 BUILD_DIR=$DC_BUILDDIR DEMO_NO_BUILD=1 \
    "$DC_SRCDIR/demo.sh" --kafka >"$2" 2>&1 </dev/null &
  demo_pid=$!
}
# A demo still running when the test ends is stopped as Ctrl-C would: it
# then stops its cluster itself (SIGKILL would leave the nodes running).
demo_stop() {
  [ -n "$demo_pid" ] || return 0
  kill -TERM "$demo_pid" 2>/dev/null && wait "$demo_pid" 2>/dev/null
  demo_pid=
}
on_exit() {
  local rc=$?
  demo_stop
  (exit "$rc") # dc_cleanup reads the test's exit status from $?
  dc_cleanup
}
trap on_exit EXIT

# left_in DIR: the processes whose command line or working directory
# names DIR (the demo's dynconfd, clients and Kafka nodes all do).
left_in() {
  local d p cmd cwd
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = $$ ] && continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
    cwd=$(readlink "$d/cwd" 2>/dev/null)
    case "$cmd $cwd/" in *"$1/"*) echo "$p" ;; esac
  done
}
# nothing_left DIR LABEL: no process of the demo runs, DIR is empty.
nothing_left() {
  local left files
  left=$(left_in "$1")
  [ -z "$left" ]
  tap_ok $? "$2: no process of the demo is left running" || {
    tap_diag "left: $(for p in $left; do tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | cut -c1-120; echo; done)"
    DC_MORE_PIDS="$DC_MORE_PIDS $left" # killed at exit
  }
  files=$(find "$1" -mindepth 1 -maxdepth 3 2>/dev/null | head -n 5)
  [ -d "$1" ] && [ -z "$files" ]
  tap_ok $? "$2: the demo's directory (the cluster's inside it) is removed" ||
    tap_diag "left in $1: $files"
}

# ---- a whole run --------------------------------------------------------

out=$DC_TMP/demo.out
demo_start "$DC_TMP/run" "$out"
wait "$demo_pid"
rc=$?
demo_pid=
took=$((SECONDS - started))
tap_diag "demo.sh --kafka: exit $rc after $took s"
tap_is "$rc" 0 "demo.sh --kafka exits 0" ||
  tail -n 30 "$out" | sed 's/^/#   /' >&2
text=$(cat "$out")

tap_like "$text" \
  "^messages: produced ([1-9][0-9]*), consumed [0-9]+ \(\1 distinct\), lost 0, duplicated [0-9]+, out of order 0$" \
  "report: every message produced consumed, 0 lost, none out of order"
tap_like "$text" "^== demo finished: every change applied live, nothing lost$" \
  "the demo ends with its finishing line"
tap_like "$text" \
  "^  \[consumer orders-c\] applied heartbeat\.interval\.ms: 2000 -> 1000 \(client override\); applied session\.timeout\.ms: 6000 -> 7000 \(client override\); rebuilt consumer in [0-9.]+ ms, rejoining$" \
  "the consumer applied the session-timeout change by rebuilding its handle"
tap_like "$text" \
  "^  [0-9:,]+ Static member with groupInstanceId=orders-c-1 and unknown member id joins group orders in Stable state\. Replacing previously mapped member orders-c-1-" \
  "the brokers' group coordinator logged the static rejoin in Stable state"
tap_like "$text" "^group orders on the brokers: generation 1, 0 rebalance\(s\) after the first join$" \
  "no rebalance: the group stayed at generation 1, its first join"

# The pause, in the consumer's own line and in the report.
pause=$(sed -n 's/^consumer pause at its session-timeout change: \([0-9]*\.[0-9]\) ms .*/\1/p' "$out")
line=$(sed -n 's/^  \[consumer orders-c\] consumption paused \([0-9]*\.[0-9]\) ms .*/\1/p' "$out")
[ -n "$pause" ] && [ "$pause" = "$line" ]
tap_ok $? "the pause is printed: ${pause:-none} ms (the consumer's line says ${line:-none} ms)"
[ -n "$pause" ] && awk -v p="$pause" 'BEGIN { exit !(p > 0 && p < 7000) }'
tap_ok $? "the pause (${pause:-none} ms) is below the new session timeout (7000 ms)"
tap_diag "consumption pause at the session-timeout change: ${pause:-none} ms"

nothing_left "$DC_TMP/run" "after the run"

# ---- stopped by SIGTERM while everything runs ----------------------------

out2=$DC_TMP/demo-term.out
demo_start "$DC_TMP/term" "$out2"
for ((i = 0; i < 1200; i++)); do # up to 120 s: the cluster starts first
  grep -q '^  \[consumer orders-c\] joined group' "$out2" && break
  kill -0 "$demo_pid" 2>/dev/null || break
  sleep 0.1
done
pidf=$(find "$DC_TMP/term" -path '*/kafka/node1/pid' 2>/dev/null | head -n 1)
node1=$([ -n "$pidf" ] && cat "$pidf")
[ -n "$node1" ] && kill -0 "$node1" 2>/dev/null &&
  grep -q 'joined group' "$out2"
tap_ok $? "second run: the cluster's nodes and the consumer run when SIGTERM comes" ||
  tail -n 20 "$out2" | sed 's/^/#   /' >&2
kill -TERM "$demo_pid"
wait "$demo_pid"
rc=$?
demo_pid=
tap_is "$rc" 130 "second run: SIGTERM ends the demo (exit 130)"
nothing_left "$DC_TMP/term" "after SIGTERM"

tap_diag "test_kafka_demo: $((SECONDS - started)) s"
tap_done
