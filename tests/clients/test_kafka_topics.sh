#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# dynconfd --store kafka on a real Apache Kafka cluster (3 KRaft nodes,
# scripts/kafka.sh): it creates the config topic (one partition, compact,
# replication factor 3, min.insync.replicas 2) and the history topic
# (delete, 90 days) itself, as Kafka's own tools show; it refuses an
# existing config topic with cleanup.policy=delete, naming the
# kafka-configs command that fixes it, and one with several partitions;
# a second replica follows the writer; only committed records are in the
# topic (read_committed and read_uncommitted readers agree); a writer
# restarted from its data directory fences its earlier self and carries on.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
dc_kafka_start 3

STORE=(--store kafka --store-bootstrap "$KBS" --store-timeout-ms 20000
  --store-session-timeout-ms 3000)
cli() {
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$1" \
    --timeout-ms 30000 "${@:2}"
}
value_of() { # value_of PORT ENTITY KEY: the value served, or ""
  cli "$1" --entity-type clients --entity-name "$2" --describe 2>/dev/null |
    sed -n "s/^ *$3=\([^ ]*\) .*/\1/p"
}
# await_value PORT ENTITY KEY WANT: polls for up to 20 s; prints the last.
await_value() {
  local i v=
  for ((i = 0; i < 200; i++)); do
    v=$(value_of "$1" "$2" "$3")
    [ "$v" = "$4" ] && break
    sleep 0.1
  done
  printf '%s' "$v"
}

# ---- the topics, created by dynconfd -----------------------------------------
dc_start_daemon "$DC_TMP/a" "${STORE[@]}" --node-id 1 ||
  tap_bail "dynconfd A did not start"
A_PID=$DC_PID A_PORT=$DC_PORT A_LOG=$DC_DAEMON_LOG
DC_MORE_PIDS=$A_PID
log=$(cat "$A_LOG")
tap_like "$log" "created topic _dynconf_configs \(1 partition, replication factor 3, cleanup.policy=compact\)" \
  "A creates the config topic"
tap_like "$log" "created topic _dynconf_configs_history \(1 partition, replication factor 3, cleanup.policy=delete\)" \
  "and the history topic"
tap_like "$log" "writing _dynconf_configs as node 1" "A writes the topic"
desc=$(dc_kafka topics --describe --topic _dynconf_configs 2>&1)
tap_like "$desc" "PartitionCount: 1.*ReplicationFactor: 3" \
  "kafka-topics: one partition, three replicas"
tap_like "$desc" "min.insync.replicas=2" "  min.insync.replicas=2"
tap_like "$desc" "cleanup.policy=compact" "  cleanup.policy=compact"
hdesc=$(dc_kafka topics --describe --topic _dynconf_configs_history 2>&1)
tap_like "$hdesc" "cleanup.policy=delete" "the history topic: cleanup.policy=delete"
tap_like "$hdesc" "retention.ms=7776000000" "  kept 90 days"

# ---- topics it must refuse ----------------------------------------------------
dc_kafka topics --create --topic cfg-deleted --partitions 1 \
  --replication-factor 3 --config cleanup.policy=delete >/dev/null 2>&1
tap_is $? 0 "kafka-topics creates cfg-deleted with cleanup.policy=delete"
out=$(timeout 60 "$DC_DYNCONFD" --listen 127.0.0.1:0 --data-dir "$DC_TMP/x" \
  "${STORE[@]}" --store-topic cfg-deleted --node-id 9 2>&1 </dev/null)
tap_is $? 1 "dynconfd refuses a config topic with cleanup.policy=delete"
tap_like "$out" "cleanup.policy=delete; the config log needs cleanup.policy=compact" \
  "  saying why"
tap_like "$out" "kafka-configs.sh --alter --entity-type topics --entity-name cfg-deleted --add-config cleanup.policy=compact" \
  "  and the command that fixes it"
dc_kafka topics --create --topic cfg-wide --partitions 3 \
  --replication-factor 3 --config cleanup.policy=compact >/dev/null 2>&1
out=$(timeout 60 "$DC_DYNCONFD" --listen 127.0.0.1:0 --data-dir "$DC_TMP/y" \
  "${STORE[@]}" --store-topic cfg-wide --node-id 9 2>&1 </dev/null)
tap_is $? 1 "dynconfd refuses a config topic with 3 partitions"
tap_like "$out" "has 3 partitions; the store needs exactly one" "  saying why"

# ---- writes, a follower -------------------------------------------------------
cli "$A_PORT" --entity-type clients --entity-name app-1 --alter \
  --add-config 'acks=all,linger.ms=5' >/dev/null
tap_is $? 0 "an alter on the writer"
dc_start_daemon "$DC_TMP/b" "${STORE[@]}" --node-id 2 ||
  tap_bail "dynconfd B did not start"
B_PID=$DC_PID B_PORT=$DC_PORT
DC_MORE_PIDS="$A_PID $B_PID"
tap_is "$(value_of "$B_PORT" app-1 linger.ms)" 5 "B starts with what A wrote"
cli "$B_PORT" --entity-type clients --entity-name app-1 --alter \
  --add-config 'linger.ms=6' >/dev/null
tap_is $? 0 "an alter on the follower B (forwarded to A)"
tap_is "$(value_of "$A_PORT" app-1 linger.ms)" 6 "A serves it"
tap_is "$(await_value "$B_PORT" app-1 linger.ms 6)" 6 "B serves it"

# The topic holds only committed records: a read_uncommitted reader sees
# the same changes as a read_committed one (no aborted write in between).
records() { # records ISOLATION: the change records' keys and values
  timeout 30 kcat -C -b "$KBS" -t _dynconf_configs -e -q \
    -X "isolation.level=$1" -f '%k %s\n' | grep '^client:'
}
committed=$(records read_committed)
tap_like "$committed" '"linger.ms":"6"' "kcat (read_committed) reads the change"
tap_is "$(records read_uncommitted)" "$committed" \
  "  and a read_uncommitted reader reads nothing more"

# ---- a restarted writer fences its earlier self ---------------------------------
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null
DC_PID=
dc_start_daemon "$DC_TMP/a" "${STORE[@]}" --node-id 1 ||
  tap_bail "dynconfd A did not restart"
A_PID=$DC_PID A_PORT=$DC_PORT
DC_MORE_PIDS="$A_PID $B_PID"
# It wrote the topic last: it claims at once, the epoch after its own.
dc_await_grep "$DC_DAEMON_LOG" "writing _dynconf_configs as node 1, epoch 2"
tap_is $? 0 "A, restarted from its data dir after SIGKILL, writes at the next epoch"
w=$(grep -oE "writing _dynconf_configs as node [0-9]+, epoch [0-9]+" "$DC_DAEMON_LOG" |
  sed 's/.*epoch //' | sort -n | uniq -d)
tap_is "$w" "" "no epoch is taken by two writers"
cli "$A_PORT" --entity-type clients --entity-name app-1 --alter \
  --add-config 'linger.ms=7' >/dev/null
tap_is $? 0 "an alter on A after its restart"
tap_is "$(await_value "$B_PORT" app-1 linger.ms 7)" 7 "B serves it"
tap_is "$(await_value "$A_PORT" app-1 linger.ms 7)" 7 "A serves it"
hist=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/b" --history --entity app-1 2>&1)
tap_like "$hist" "linger.ms SET 6 -> 7" "B's history has the change after the restart"
kill "$B_PID" "$A_PID" 2>/dev/null
tap_done
