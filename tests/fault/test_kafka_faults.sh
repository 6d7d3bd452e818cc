#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Faults of the replicated store on a REAL Kafka cluster (scripts/kafka.sh:
# 3 KRaft nodes), judged by histories (tests/kstore_history.py): three
# dynconfd replicas on one config topic, three clients altering and
# reading on random replicas the whole time, every operation logged with
# its outcome; after every fault a checker compares that log with what
# every replica serves and stores (state and audit history):
#   a. the writer SIGSTOPped while alters are queued at it (one in its
#      commit, forwarded by a follower; others sent to it directly and by
#      the other follower, waiting in its socket backlog), held until
#      another replica writes, then SIGCONTed: each queued alter is
#      acknowledged (and then everywhere), refused with NOT_CONTROLLER
#      (41, retriable) and then nowhere, or, forwarded by a follower whose
#      answer from the stopped writer never came, of unknown outcome
#      (REQUEST_TIMED_OUT, 7); the woken replica follows the new writer;
#   b. the writer SIGKILLed with alters in flight, restarted from its data
#      directory: it rejoins as a follower, and no two replicas ever write
#      at one epoch;
#   c. the Kafka broker leading the config topic killed and restarted; the
#      active KRaft controller killed and restarted; the whole Kafka
#      cluster down for 10 s.
# The clients' reads carry the highest store position they have read at
# (as the agent does), and no read may be older than an earlier one.
# Odd rounds of a and b hold the config topic's leader broker (SIGSTOP)
# while the alters are queued, so that one alter is inside the writer's
# commit, its record on its way to Kafka, when the writer stops; even
# rounds stop the writer between alters.
# DC_KAFKA_LONG=1 runs 20 rounds of a and b (default 2). The failover time
# (the writer stopped -> the first alter acknowledged by another replica)
# is printed as p50/p99.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v kcat >/dev/null || tap_bail "kcat is needed (apt-get install kcat)"
command -v ss >/dev/null || tap_bail "ss is needed (iproute2)"
command -v python3 >/dev/null || tap_bail "python3 is needed"

T_START=$SECONDS
ROUNDS=2
[ "${DC_KAFKA_LONG:-0}" = 1 ] && ROUNDS=20
SESSION_MS=3000
. "$DC_SRCDIR/tests/kafka_faults_lib.sh"

dc_kafka_start 3
tap_diag "Kafka cluster up at $KBS in $((SECONDS - T_START)) s"
kf_store_args


# inject ROUND KIND W F1 F2 SLOW SIG: alters queued at writer W, then W
# sent SIG (STOP or KILL, logged as event SIG-ROUND-KIND). Three clients
# connect to W first (W accepts them while it runs: clients that keep a
# connection); their alters are sent only once W is busy or stopped.
# With SLOW, the workload is paused and the config topic's leader broker
# stopped, an alter forwarded by F1 is taken into W's commit (its record
# held at the stopped broker), the three direct alters and one forwarded
# by F2 then wait in W's sockets, W gets SIG, and broker and workload go
# on. Without SLOW, W gets SIG first, then the direct alters and one
# forwarded by each follower are sent. Each outcome goes to
# $DC_TMP/q.ROUND.KIND.*; QPIDS holds the clients; QUEUED counts W's
# connections with unread requests; INFLIGHT says whether the forwarded
# alter was seen taken into W's commit (SLOW).
QPIDS=()
L_PAUSED=
inject() {
  local r=$1 kind=$2 w=$3 f1=$4 f2=$5 slow=$6 sig=$7 ent="q$2-$1" i pe b q
  local hold="$DC_TMP/hold.$1.$2"
  QPIDS=() INFLIGHT=- QUEUED=0
  for i in 1 2 3; do
    next_qv
    kh op --log "$LOG" --client "q$kind-direct$i" --replica "$(addr "$w")" \
      --entity "$ent" --value "$QV" --timeout-ms 25000 --hold-file "$hold" \
      >"$DC_TMP/q.$r.$kind.$i" &
    QPIDS+=($!)
  done
  for ((i = 0; i < 200; i++)); do
    [ "$(ls "$hold".ready.* 2>/dev/null | wc -l)" -ge 3 ] && break
    sleep 0.05
  done
  kh await-accepted --port "${PORT[$w]}" --timeout-s 10 >/dev/null ||
    tap_diag "node $w did not accept the clients' connections"
  if [ "$slow" = 1 ]; then
    # The followers' forwarding connections to W, made before W blocks.
    for i in "$f1" "$f2"; do
      next_qv
      kh op --log "$LOG" --client warm --replica "$(addr "$i")" \
        --entity "$ent" --value "$QV" --timeout-ms 10000 >/dev/null
    done
    read -r pe b q < <(kh conn --port "${PORT[$w]}" --peer-pid "${PID[$f1]}")
    pause_workload || tap_diag "the workload did not pause"
    L=$(kafka_leader)
    [ -n "$L" ] && dc_kafka pause "$L" && L_PAUSED=$L
    next_qv
    kh op --log "$LOG" --client "q$kind-fwd1" --replica "$(addr "$f1")" \
      --entity "$ent" --value "$QV" --timeout-ms 25000 >"$DC_TMP/q.$r.$kind.0" &
    QPIDS+=($!)
    INFLIGHT=0
    [ -n "$pe" ] && [ -n "$L_PAUSED" ] &&
      kh await-read --port "${PORT[$w]}" --peer-port "$pe" --more-than "$b" \
        --timeout-s 10 >/dev/null && INFLIGHT=1
    touch "$hold"
    next_qv
    kh op --log "$LOG" --client "q$kind-fwd2" --replica "$(addr "$f2")" \
      --entity "$ent" --value "$QV" --timeout-ms 25000 >"$DC_TMP/q.$r.$kind.4" &
    QPIDS+=($!)
    QUEUED=$(kh queued --port "${PORT[$w]}" --n 3 --timeout-s 10)
    signal_node "$sig" "$w" "$sig-$r-$kind"
    resume_workload
    resume_leader
  else
    signal_node "$sig" "$w" "$sig-$r-$kind"
    touch "$hold"
    next_qv
    kh op --log "$LOG" --client "q$kind-fwd1" --replica "$(addr "$f1")" \
      --entity "$ent" --value "$QV" --timeout-ms 25000 >"$DC_TMP/q.$r.$kind.0" &
    QPIDS+=($!)
    next_qv
    kh op --log "$LOG" --client "q$kind-fwd2" --replica "$(addr "$f2")" \
      --entity "$ent" --value "$QV" --timeout-ms 25000 >"$DC_TMP/q.$r.$kind.4" &
    QPIDS+=($!)
    [ "$sig" = STOP ] &&
      QUEUED=$(kh queued --port "${PORT[$w]}" --n 5 --timeout-s 10)
  fi
  return 0
}

# The Kafka broker stopped by inject, running again.
resume_leader() {
  [ -n "$L_PAUSED" ] && dc_kafka resume "$L_PAUSED"
  L_PAUSED=
}
# outcomes ROUND KIND: one line per injected alter: client outcome code error
outcomes() {
  cat "$DC_TMP"/q."$1"."$2".* 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        r = json.loads(line)
    except ValueError:
        continue
    print(r["client"], r["value"], r["outcome"], r.get("code", "-"),
          (r.get("error") or "")[:150])'
}


# ---- start ------------------------------------------------------------------

# The first replica creates the store's topics on the new cluster.
start_replica 1
tap_ok $? "the first replica creates the store's topics on a new Kafka cluster and serves" || {
  tap_diag "$(grep -v GETPID "$DC_TMP/n1.log" | tail -4)"
  for ((i = 0; i < 3; i++)); do start_replica 1 && break; sleep 1; done
  [ -n "${PID[1]}" ] || tap_bail "replica 1 did not start"
}
start_replica 2 || tap_bail "replica 2 did not start"
start_replica 3 || tap_bail "replica 3 did not start"
W=$(await_writer "" 30)
tap_ok $? "the replicas agree on a writer (node $W)"
start_workload
kh wait-acks --log "$LOG" --n 10 --timeout-s 30 >/dev/null
tap_ok $? "the workload's alters are acknowledged"
stop_workload
check "start"

# ---- a. the writer stopped with alters queued; b. killed; in rounds ------------

for ((r = 1; r <= ROUNDS; r++)); do
  slow=$((r % 2))
  how=$([ $slow = 1 ] && echo "one alter inside its commit" || echo "stopped between alters")

  # -- a: SIGSTOP, held until another replica writes, SIGCONT --
  W=$(log_writer)
  [ -n "$W" ] || tap_bail "no replica logged which node writes"
  said=$(await_writer "" 30)
  tap_is "$said" "$W" "round $r a: every replica's Metadata names node $W, the writer of the highest epoch, as controller"
  F=()
  for n in 1 2 3; do [ "$n" != "$W" ] && F+=("$n"); done
  mark_logs
  start_workload
  kh event --log "$LOG" --name "round-$r-a"
  kh wait-acks --log "$LOG" --n 3 --after "round-$r-a" --timeout-s 10 >/dev/null
  inject "$r" a "$W" "${F[0]}" "${F[1]}" "$slow" STOP
  [ "${QUEUED:-0}" -ge 3 ] && [ "$INFLIGHT" != 0 ]
  tap_ok $? "round $r a: alters queued at the stopped writer node $W ($how; $QUEUED connections with unread requests)"
  fo=$(kh probe --log "$LOG" --replicas "$(addr "${F[0]}"),$(addr "${F[1]}")" \
    --since "STOP-$r-a" --timeout-s 30 --op-timeout-ms 2000)
  tap_ok $? "round $r a: another replica takes alters while node $W is stopped (failover $fo ms)" &&
    FAILOVER+=("$fo")
  # Held until another replica says it writes.
  took=$(await_log "writing _dynconf_configs as node [^$W], epoch" 30)
  tap_ok $? "round $r a: another replica writes: $took"
  signal_node CONT "$W" "CONT-$r-a"
  for p in "${QPIDS[@]}"; do wait "$p"; done
  out=$(outcomes "$r" a)
  # A forwarded alter the stopped writer had received may have been stored
  # by it before it stopped: its follower says the outcome is unknown
  # (REQUEST_TIMED_OUT, 7), and the history checker accepts either.
  bad=$(awk '$3 != "ok" && !($3 == "fail" && $4 == 41) &&
             !($3 == "unknown" && $4 == 7)' <<<"$out")
  [ -n "$out" ] && [ -z "$bad" ]
  tap_ok $? "round $r a: each alter queued at the stopped writer is acknowledged, refused with NOT_CONTROLLER (41) or, forwarded, of unknown outcome (7)" ||
    tap_diag "$out"
  # Woken, it follows the new writer: alters on it are forwarded (or
  # refused with NOT_CONTROLLER until it has read the new claim).
  follow=bad end=$((SECONDS + 15)) seen=
  while [ $SECONDS -lt $end ]; do
    next_qv
    o=$(kh op --log "$LOG" --client "follow" --replica "$(addr "$W")" \
      --entity "follow-$r" --value "$QV" --timeout-ms 10000)
    oc=$(sed -n 's/.*"outcome": "\([a-z]*\)".*/\1/p' <<<"$o")
    code=$(sed -n 's/.*"code": \(-*[0-9]*\).*/\1/p' <<<"$o")
    if [ "$oc" = ok ]; then follow=ok; break; fi
    seen+="$o"$'\n'
    [ "$oc" = fail ] && [ "$code" = 41 ] || break
    sleep 0.2
  done
  tap_is "$follow" ok "round $r a: the woken node $W takes alters by forwarding them to the new writer" ||
    tap_diag "$(tail -n 2 <<<"$seen")"
  kh wait-acks --log "$LOG" --n 5 --after "CONT-$r-a" --timeout-s 15 >/dev/null
  stop_workload
  no_lost_track "round $r a"
  check "round $r a (SIGSTOP, $how)" "round-$r-a" "qa-$r"
  restart_as_asked "round $r a"

  # -- b: SIGKILL with alters in flight, restart from the data dir --
  W=$(log_writer)
  [ -n "$W" ] || tap_bail "no replica logged which node writes"
  said=$(await_writer "" 30)
  tap_is "$said" "$W" "round $r b: every replica's Metadata names node $W, the writer of the highest epoch, as controller"
  F=()
  for n in 1 2 3; do [ "$n" != "$W" ] && F+=("$n"); done
  mark_logs
  start_workload
  kh event --log "$LOG" --name "round-$r-b"
  kh wait-acks --log "$LOG" --n 3 --after "round-$r-b" --timeout-s 10 >/dev/null
  if [ $slow = 1 ]; then
    inject "$r" b "$W" "${F[0]}" "${F[1]}" 1 KILL
    tap_ok "$([ "${QUEUED:-0}" -ge 3 ] && [ "$INFLIGHT" = 1 ] && echo 0 || echo 1)" \
      "round $r b: alters in flight at the writer node $W when it is killed ($QUEUED connections with unread requests)"
  else
    QPIDS=()
    signal_node KILL "$W" "KILL-$r-b"
  fi
  fo=$(kh probe --log "$LOG" --replicas "$(addr "${F[0]}"),$(addr "${F[1]}")" \
    --since "KILL-$r-b" --timeout-s 30 --op-timeout-ms 2000)
  tap_ok $? "round $r b: another replica takes alters once node $W is killed (failover $fo ms)" &&
    FAILOVER+=("$fo")
  took=$(await_log "writing _dynconf_configs as node [^$W], epoch" 30)
  tap_ok $? "round $r b: another replica writes: $took"
  for p in "${QPIDS[@]}"; do wait "$p"; done
  QPIDS=()
  [ -n "$(ls -A "$DC_TMP/n$W" 2>/dev/null)" ]
  tap_ok $? "round $r b: node $W's data dir is kept (not empty)"
  mark_logs
  start_replica "$W" "${PORT[$W]}" || tap_bail "node $W did not restart"
  applied=$(since_mark | grep -m1 "node $W: .*kafka store: applied _dynconf_configs from offset")
  tap_like "$applied" "from offset [1-9][0-9]* to" \
    "round $r b: node $W restarts from its cache, not from offset 0"
  nw=$(await_writer "$W" 30)
  tap_ok $? "round $r b: every replica names node $nw the writer; the restarted node $W follows it" ||
    tap_diag "$nw"
  claimed=$(since_mark | grep "node $W: .*writing _dynconf_configs as node $W,")
  tap_is "$claimed" "" "round $r b: the restarted node $W claims no epoch"
  one_writer_per_epoch "round $r b"
  kh event --log "$LOG" --name "restarted-$r-b"
  kh wait-acks --log "$LOG" --n 5 --after "restarted-$r-b" --timeout-s 20 >/dev/null
  tap_ok $? "round $r b: the workload's alters go on after the restart"
  stop_workload
  no_lost_track "round $r b"
  check "round $r b (SIGKILL$([ $slow = 1 ] && echo ", one alter inside its commit"))" \
    "round-$r-b" "$([ $slow = 1 ] && echo "qb-$r")"
  restart_as_asked "round $r b"
done

# ---- c. Kafka's own faults -----------------------------------------------------

# kafka_node_fault ROUND EVENT WHAT FINDER CHECK: kills the Kafka node
# FINDER names (kafka_leader or "dc_kafka controller"), waits until
# FINDER names another, checks that alters resume, restarts the node and
# checks the workload goes on; then the round's history.
kafka_node_fault() {
  local r=$1 ev=$2 what=$3 finder=$4 label=$5 n newn end fo
  mark_logs
  start_workload
  kh event --log "$LOG" --name "round-$r"
  kh wait-acks --log "$LOG" --n 3 --timeout-s 10 >/dev/null
  n=$($finder 2>/dev/null)
  [ -n "$n" ] || tap_bail "$r: no $what found"
  kh event --log "$LOG" --name "$ev-kill" node="$n"
  dc_kafka kill "$n"
  newn= end=$((SECONDS + 60))
  while [ $SECONDS -lt $end ]; do
    newn=$($finder 2>/dev/null)
    [ -n "$newn" ] && [ "$newn" != "$n" ] && break
    sleep 0.5
  done
  tap_ok "$([ -n "$newn" ] && [ "$newn" != "$n" ] && echo 0 || echo 1)" \
    "$r: $what (node $n) killed; node $newn takes its place"
  fo=$(kh probe --log "$LOG" --replicas "$(addr 1),$(addr 2),$(addr 3)" \
    --since "$ev-kill" --timeout-s 60 --op-timeout-ms 3000)
  tap_ok $? "$r: alters are acknowledged again $fo ms after the kill"
  dc_kafka start-node "$n" >/dev/null 2>&1
  tap_ok $? "$r: node $n restarted"
  kh event --log "$LOG" --name "$ev-back"
  kh wait-acks --log "$LOG" --n 5 --after "$ev-back" --timeout-s 20 >/dev/null
  tap_ok $? "$r: the workload's alters go on with node $n back"
  stop_workload
  no_lost_track "$r"
  check "$r ($label)" "round-$r"
  restart_as_asked "$r"
}
controller_now() { dc_kafka controller; }

# c1: the config topic's leader broker killed, then restarted.
kafka_node_fault c1 kafka-leader "the config topic's leader broker" \
  kafka_leader "config topic's leader broker killed"
# c2: the active KRaft controller killed, then restarted.
kafka_node_fault c2 kafka-controller "the KRaft controller" controller_now \
  "KRaft controller killed"

# c3: the whole cluster down for 10 s (the fault's length, not a wait).
mark_logs
start_workload
kh event --log "$LOG" --name round-c3
kh wait-acks --log "$LOG" --n 3 --timeout-s 10 >/dev/null
kh event --log "$LOG" --name "kafka-all-down"
dc_kafka kill-all
sleep 10
KBS2=$(dc_kafka start 2>"$DC_TMP/kafka-restart.err")
tap_ok $? "c3: the Kafka cluster restarted after 10 s down" ||
  sed 's/^/#   /' "$DC_TMP/kafka-restart.err"
kh event --log "$LOG" --name "kafka-all-back"
fo=$(kh probe --log "$LOG" --replicas "$(addr 1),$(addr 2),$(addr 3)" \
  --since kafka-all-back --timeout-s 60 --op-timeout-ms 3000)
tap_ok $? "c3: alters are acknowledged again $fo ms after the cluster is back"
kh wait-acks --log "$LOG" --n 5 --after kafka-all-back --timeout-s 20 >/dev/null
tap_ok $? "c3: the workload's alters go on"
stop_workload
no_lost_track "c3"
check "c3 (the whole Kafka cluster down for 10 s)" round-c3
restart_as_asked c3

one_writer_per_epoch "the whole run"
check "the whole history"

# ---- figures ------------------------------------------------------------------

tap_diag "failover (writer stopped or killed -> first alter acknowledged by another replica), $ROUNDS rounds of a and b: ${#FAILOVER[@]} samples, p50 $(pctl 50 "${FAILOVER[@]}") ms, p99 $(pctl 99 "${FAILOVER[@]}") ms (all: ${FAILOVER[*]})"
tap_diag "reads older than the reader's own alter acknowledged on another replica (no promise covers them): $STALE_UNPROMISED in the whole history"
tap_diag "history: $(grep -c '"op": "alter"' "$LOG") alters, $(grep -c '"op": "read"' "$LOG") reads; run time $((SECONDS - T_START)) s"
tap_done
