# SPDX-License-Identifier: BSD-2-Clause
# Sourced (after lib.sh) by the fault tests of the replicated store on a
# real Kafka cluster: test_kafka_faults.sh and test_kafka_partition.sh.
# Three dynconfd replicas on one config topic, a workload of clients that
# alter and read on random replicas (tests/kstore_history.py), and the
# history checker's verdict as TAP assertions.
# Before sourcing, the caller sets SESSION_MS (the store session); it may
# set, per node N, KF_HOST[N] (the address N listens on; default
# 127.0.0.1) and KF_WRAP[N] (a command N runs under, e.g. "ip netns exec
# NS"), and KF_ON_EXIT (a command run at exit before the replicas go).
# After the Kafka cluster is up (KBS), it calls kf_store_args.

H="$DC_SRCDIR/tests/kstore_history.py"
LOG="$DC_TMP/history.jsonl"
kh() { python3 "$H" "$@"; }
declare -A KF_HOST KF_WRAP
KF_ON_EXIT=${KF_ON_EXIT:-}

# kf_store_args: the replicas' store options, on the cluster at $KBS.
kf_store_args() {
  STORE=(--store kafka --store-bootstrap "$KBS" --store-timeout-ms 10000
    --store-session-timeout-ms "$SESSION_MS")
}

# ---- the replicas -----------------------------------------------------------

declare -A PID PORT
WL_PID=
kf_cleanup() {
  local rc=$? n
  [ -n "$WL_PID" ] && kill "$WL_PID" 2>/dev/null
  for n in "${!PID[@]}"; do
    [ -n "${PID[$n]}" ] || continue
    kill -CONT "${PID[$n]}" 2>/dev/null
    kill -9 "${PID[$n]}" 2>/dev/null
    { wait "${PID[$n]}"; } 2>/dev/null
  done
  [ -n "$L_PAUSED" ] && dc_kafka resume "$L_PAUSED"
  [ -n "$KF_ON_EXIT" ] && $KF_ON_EXIT
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ]; then
    for n in 1 2 3; do
      [ -f "$DC_TMP/n$n.log" ] || continue
      tap_diag "--- node $n's log (last 15 lines) ---" >&2
      tail -n 15 "$DC_TMP/n$n.log" | sed 's/^/#   /' >&2
    done
  fi
  DC_DAEMON_LOG=/dev/null
  (exit "$rc")
  dc_cleanup
}
trap kf_cleanup EXIT

# start_replica N [PORT]: dynconfd node N on data dir n$N (on PORT, to be
# found again by the clients after a restart); stderr appended to n$N.log.
start_replica() {
  local n=$1 i line
  mkdir -p "$DC_TMP/n$n"
  : >"$DC_TMP/n$n.out"
  # shellcheck disable=SC2086 # the wrappers are deliberately word-split
  ${KF_WRAP[$n]:-} $DC_DAEMON_WRAPPER "$DC_DYNCONFD" \
    --listen "${KF_HOST[$n]:-127.0.0.1}:${2:-0}" \
    --data-dir "$DC_TMP/n$n" "${STORE[@]}" --node-id "$n" \
    >"$DC_TMP/n$n.out" 2>>"$DC_TMP/n$n.log" </dev/null &
  PID[$n]=$!
  for ((i = 0; i < 600; i++)); do
    line=$(grep -m1 '^listening on ' "$DC_TMP/n$n.out" 2>/dev/null)
    if [ -n "$line" ]; then
      line=${line#listening on }
      line=${line%% *}
      PORT[$n]=${line##*:}
      return 0
    fi
    kill -0 "${PID[$n]}" 2>/dev/null || break
    sleep 0.05
  done
  kill -9 "${PID[$n]}" 2>/dev/null
  { wait "${PID[$n]}"; } 2>/dev/null
  PID[$n]=
  return 1
}
addr() { echo "${KF_HOST[$1]:-127.0.0.1}:${PORT[$1]}"; }

# The node of the highest epoch any replica applied (the log's writer).
log_writer() {
  cat "$DC_TMP"/n?.log 2>/dev/null |
    sed -n 's/.*kafka store: node \([0-9]*\) writes _dynconf_configs from epoch \([0-9]*\) on.*/\2 \1/p' |
    sort -n | tail -1 | cut -d' ' -f2
}
# await_writer [EXCEPT] [SECONDS]: waits until every replica's Metadata
# names one controller (the writer), not EXCEPT; prints it. Returns 1 on
# timeout, printing what each said.
await_writer() {
  local except=${1:-} end=$((SECONDS + ${2:-30})) n c w said
  while :; do
    w= said=
    for n in 1 2 3; do
      c=$(kh controller --replica "$(addr "$n")" 2>/dev/null) || c=none
      said+="node $n: $c; "
      if [ -z "$w" ]; then w=$c; elif [ "$w" != "$c" ]; then w=x; fi
    done
    if [[ "$w" =~ ^[1-3]$ ]] && [ "$w" != "$except" ]; then
      echo "$w"
      return 0
    fi
    [ $SECONDS -lt $end ] || { echo "$said"; return 1; }
    sleep 0.2
  done
}

# Log marks: what the daemons logged since mark_logs.
declare -A MARK
mark_logs() {
  local n
  for n in 1 2 3; do MARK[$n]=$(wc -l <"$DC_TMP/n$n.log"); done
}
since_mark() {
  local n
  for n in 1 2 3; do
    tail -n "+$((MARK[$n] + 1))" "$DC_TMP/n$n.log" | sed "s/^/node $n: /"
  done
}
# await_log REGEX SECONDS: polls the lines since the mark; prints the first
# matching one.
await_log() {
  local end=$((SECONDS + $2)) hit
  while :; do
    hit=$(since_mark | grep -E -m1 -- "$1")
    [ -n "$hit" ] && { echo "$hit"; return 0; }
    [ $SECONDS -lt $end ] || return 1
    sleep 0.1
  done
}

# The Kafka broker leading the config topic's partition ("" when none).
kafka_leader() {
  timeout 15 kcat -L -b "$KBS" -t _dynconf_configs -m 5 2>/dev/null |
    sed -n 's/^ *partition 0, leader \([0-9]*\),.*/\1/p' | head -1
}

# ---- the workload -------------------------------------------------------------

ROUND=
start_workload() {
  rm -f "$DC_TMP/stop" "$DC_TMP/pause" "$DC_TMP/pause.idle"
  kh workload --replicas "$(addr 1),$(addr 2),$(addr 3)" --log "$LOG" \
    --stop-file "$DC_TMP/stop" --pause-file "$DC_TMP/pause" \
    --op-timeout-ms 5000 >>"$DC_TMP/workload.out" 2>&1 &
  WL_PID=$!
}
stop_workload() {
  [ -n "$WL_PID" ] || return 0
  touch "$DC_TMP/stop"
  rm -f "$DC_TMP/pause"
  wait "$WL_PID"
  WL_PID=
}
# pause_workload: no operation of the workload in flight until resume.
pause_workload() {
  touch "$DC_TMP/pause"
  local i
  for ((i = 0; i < 200; i++)); do
    [ -e "$DC_TMP/pause.idle" ] && return 0
    sleep 0.05
  done
  return 1
}
resume_workload() { rm -f "$DC_TMP/pause"; }

# check NAME [SINCE [ENTITY]]: the history checker after a fault, with
# TAP assertions on what it found among the operations invoked since the
# event SINCE (the fault's round), and on the replicas' state now; with
# ENTITY (the alters inject queued at the writer), on what it says of
# those. Without SINCE, on the whole history. Reads older than the
# client's own alter acknowledged on another replica (no promise covers
# them) are counted in STALE_UNPROMISED, not failed on.
STALE_UNPROMISED=0
check() {
  local name=$1 since=${2:-} ent=${3:-} out="$DC_TMP/check.$1.txt" rc s bad sfx=
  local args=() n dead=
  [ -n "$since" ] && args=(--since "$since") sfx=_new
  for n in 1 2 3; do
    [ -n "${PID[$n]}" ] && kill -0 "${PID[$n]}" 2>/dev/null || dead+=" $n"
  done
  [ -z "$dead" ]
  tap_ok $? "$name: every replica is running" || for n in $dead; do
    tap_diag "node $n exited: $(grep -v 'Connect to\|FAIL:' "$DC_TMP/n$n.log" | tail -2)"
  done
  kh check --log "$LOG" --converge-timeout-s 10 \
    --max-details 1000 --dynconfd "$DC_DYNCONFD" --history-topic "$KBS" \
    --replica "n1=$(addr 1)@$DC_TMP/n1" --replica "n2=$(addr 2)@$DC_TMP/n2" \
    --replica "n3=$(addr 3)@$DC_TMP/n3" "${args[@]}" >"$out" 2>&1
  rc=$?
  s=$(grep '^summary:' "$out")
  summary_of() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$s"; }
  tap_diag "$name: ${s#summary: }"
  [ -n "$s" ] || sed 's/^/#   /' "$out" | tail -5
  tap_is "$(summary_of "lost$sfx")" 0 "$name: no acknowledged alter lost" ||
    grep -E '^(lost|final):' "$out" | head -6 | sed 's/^/#   /'
  tap_is "$(summary_of "refused_applied$sfx")" 0 \
    "$name: no refused alter applied anywhere" ||
    grep -E '^(refused-applied|dirty-read):' "$out" | tail -6 | sed 's/^/#   /'
  tap_is "$(summary_of "reordered$sfx")/$(summary_of "dirty_reads$sfx")" 0/0 \
    "$name: acknowledged alters in real-time order in every history (reordered/dirty reads)" ||
    grep -E '^(reordered|dirty-read):' "$out" | tail -6 | sed 's/^/#   /'
  tap_is "$(summary_of "stale_reads$sfx")" 0 \
    "$name: no client reads a value older than one it read before (monotonic reads, the store position carried)" ||
    grep -E '^stale-read:' "$out" | head -6 | sed 's/^/#   /'
  tap_is "$(summary_of diverged)" 0 \
    "$name: every replica converges to the same state and history" ||
    grep -E '^diverged:' "$out" | head -6 | sed 's/^/#   /'
  if [ -z "$since" ]; then
    tap_is "$rc" 0 "$name: the history checker finds no violation" ||
      grep -E '^violations:' "$out" | sed 's/^/#   /'
  fi
  STALE_UNPROMISED=$(summary_of stale_unpromised) # the whole history's
  if [ -n "$ent" ]; then
    bad=$(grep -E "^(lost|final|refused-applied): .*\b$ent[=/]" "$out")
    [ -z "$bad" ] && [ -n "$s" ]
    tap_ok $? "$name: of the alters queued at the writer, the acknowledged are in every history and the refused in none" ||
      sed 's/^/#   /' <<<"$bad" | head -8
  fi
}

# No replica logged the signs of a writer that lost track of the log.
no_lost_track() {
  local bad
  bad=$(since_mark | grep -E 'did not write|restart dynconfd' | head -3)
  [ -z "$bad" ]
  tap_ok $? "$1: no replica logs 'did not write' / 'restart dynconfd'" ||
    tap_diag "$bad"
}

# restart_as_asked WHEN: a replica that logged "restart dynconfd" (since
# the mark) is restarted as it asks, and one that exited is started again,
# from its data dir on its port, so that one fault's damage does not wedge
# the next rounds (what it did is in the history and was judged already).
restart_as_asked() {
  local n i
  for n in 1 2 3; do
    if [ -z "${PID[$n]}" ] || ! kill -0 "${PID[$n]}" 2>/dev/null; then
      tap_diag "$1: node $n exited; restarting it"
      { wait "${PID[$n]}"; } 2>/dev/null
      start_replica "$n" "${PORT[$n]}" || tap_bail "node $n did not restart"
      continue
    fi
    since_mark | grep -q "^node $n: .*restart dynconfd" || continue
    tap_diag "$1: node $n asked to be restarted; restarting it"
    kill -TERM "${PID[$n]}" 2>/dev/null
    for ((i = 0; i < 200; i++)); do
      kill -0 "${PID[$n]}" 2>/dev/null || break
      sleep 0.05
    done
    kill -9 "${PID[$n]}" 2>/dev/null
    { wait "${PID[$n]}"; } 2>/dev/null
    start_replica "$n" "${PORT[$n]}" || tap_bail "node $n did not restart"
  done
}

# No two replicas ever said they write at one epoch.
one_writer_per_epoch() {
  local dup
  dup=$(cat "$DC_TMP"/n?.log |
    sed -n 's/.*writing _dynconf_configs as node \([0-9]*\), epoch \([0-9]*\).*/\2 \1/p' |
    sort -u | awk '{ n[$1]++; w[$1] = w[$1] " " $2 } END { for (e in n) if (n[e] > 1) print "epoch " e ": nodes" w[e] }')
  [ -z "$dup" ]
  tap_ok $? "$1: no two replicas wrote at one epoch" || tap_diag "$dup"
}

# Values of the alters injected by the test (unique: the workload's stay
# below 100000).
QV=100000
next_qv() { QV=$((QV + 1)); }

# signal_node SIG NODE EVENT: logs EVENT, then sends SIG to replica NODE;
# a killed one is reaped here (so the shell reports nothing).
signal_node() {
  if [ "$1" = KILL ]; then
    kh event --log "$LOG" --name "$3" node="$2"
    kill -KILL "${PID[$2]}"
    { wait "${PID[$2]}"; } 2>/dev/null
    PID[$2]=
  else
    kh signal --log "$LOG" --name "$3" --pid "${PID[$2]}" --sig "$1" node="$2"
  fi
}

FAILOVER=()
pctl() { # pctl P VALUES...: nearest-rank percentile
  local p=$1
  shift
  printf '%s\n' "$@" | sort -n |
    awk -v p="$p" '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
      i = int(p / 100 * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
