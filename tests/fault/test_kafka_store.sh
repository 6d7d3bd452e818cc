#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# dynconfd --store kafka against librdkafka's mock cluster (3 brokers, in
# its own process, driven through mock_cluster --control): alters land in
# the one-partition topic and in the local cache; a restart resumes from
# the cache's offset; a server with an empty data directory rebuilds the
# same state (configs, history, export) from the topic; a topic with more
# than one partition is refused; with the store's brokers down an alter
# fails within --store-timeout-ms naming the store while reads go on, and
# writes resume by themselves once the brokers are back; a commit written
# but not read back in time (fetches failing) is answered "may or may not
# have been applied" within the timeout, later alters NOT_CONTROLLER until
# it is read, then it is served and writes resume; a writer paused
# while another claimed the topic gets nothing applied anywhere, then
# follows the new writer and forwards alters to it; a read replica follows
# what the writer writes,
# refuses alters and keeps serving when the writer is killed.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"

dc_mock_start --topic wide --partitions 4

# A generous store timeout where writes must succeed (a loaded machine can
# make the first idempotent produce slow), a short one for the outage.
# A 2 s session: a writer not heard of that long loses the topic.
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000
  --store-session-timeout-ms 2000)
STORE_SHORT=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 3000
  --store-session-timeout-ms 2000)
cli() {
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" \
    --timeout-ms 30000 "$@"
}
value_of() { # value_of ENTITY KEY: resolved value, or ""
  cli --entity-type clients --entity-name "$1" --describe --all 2>/dev/null |
    sed -n "s/^ *$2=\([^ ]*\) .*/\1/p"
}
export_of() { timeout 30 "$DC_DYNCONFD" --data-dir "$1" --export -; }
# await_value ENTITY KEY WANT [TRIES]: polls value_of (on $DC_PORT) every
# 0.1 s until it is WANT; prints the last value read.
await_value() {
  local i v=
  for ((i = 0; i < ${4:-100}; i++)); do
    v=$(value_of "$1" "$2")
    [ -n "$3" ] && [ "$v" = "$3" ] && break
    sleep 0.1
  done
  printf '%s' "$v"
}

# log_mark: the daemons' log's length now. await_log PATTERN MARK: polls
# the lines after MARK every 0.1 s, for up to 30 s, until one matches;
# prints the last matching line.
log_mark() { wc -l <"$DC_DAEMON_LOG"; }
await_log() {
  local i
  for ((i = 0; i < 300; i++)); do
    tail -n "+$(($2 + 1))" "$DC_DAEMON_LOG" | grep -qE "$1" && break
    sleep 0.1
  done
  tail -n "+$(($2 + 1))" "$DC_DAEMON_LOG" | grep -E "$1" | tail -1
}

# ---- writes land in the topic ---------------------------------------------
dc_start_daemon "$DC_TMP/a" "${STORE[@]}" || tap_bail "dynconfd A did not start"
tap_like "$(cat "$DC_DAEMON_LOG")" "kafka store: applied _dynconf_configs from offset 0 to 0" \
  "A starts on an empty topic"
cli --entity-type clients --entity-name app-1 --alter \
  --add-config 'acks=all,linger.ms=5' >/dev/null &&
  cli --entity-type clients --entity-default --alter \
    --add-config 'session.timeout.ms=30000' >/dev/null &&
  cli --entity-type users --entity-name alice --alter \
    --add-config 'acks=1' >/dev/null &&
  cli --entity-type clients --entity-name gone --alter \
    --add-config 'acks=0' >/dev/null &&
  cli --entity-type clients --entity-name gone --alter \
    --delete-config 'acks' >/dev/null
tap_is $? 0 "five alters acknowledged (one empties an entity: a tombstone)"
tap_is "$(value_of app-1 acks)" all "A serves app-1's acks"
tap_is "$(value_of app-1 session.timeout.ms)" 30000 "and the inherited default"
dc_stop_daemon
tap_is $? 0 "A stops cleanly"
want=$(export_of "$DC_TMP/a")
tap_like "$want" '"name":"app-1"' "A's cache exports app-1"
tap_unlike() { tap_ok "$(grep -qE "$2" <<<"$1" && echo 1 || echo 0)" "$3"; }
tap_unlike "$want" '"name":"gone"' "and not the emptied entity"
if command -v kcat >/dev/null; then
  # Without the servers' heartbeats (node:ID):
  log=$(timeout 30 kcat -C -b "$BS" -t _dynconf_configs -e -q -f '%o %k %S\n' |
    grep -v ' node:')
  tap_like "$(tail -2 <<<"$log" | tr '\n' ' ')" \
    "^[0-9]+ client:gone [1-9][0-9]* [0-9]+ client:gone -1 $" \
    "the emptied entity's change is followed by a tombstone"
  tap_like "$(head -2 <<<"$log" | tr '\n' ' ')" \
    "^0 claim [0-9]+ [0-9]+ client:app-1 [0-9]+ $" \
    "the writer's claim comes first, then records keyed by entity"
else
  tap_ok 1 "kcat is needed to read the topic (apt-get install kcat)"
  tap_ok 1 "kcat is needed to read the topic (apt-get install kcat)"
fi

# ---- restart: resumes from the cache's offset -------------------------------
dc_start_daemon "$DC_TMP/a" "${STORE[@]}" || tap_bail "dynconfd A did not restart"
last_applied() { grep 'kafka store: applied' "$DC_DAEMON_LOG" | tail -1; }
# What A wrote after its cache's last commit is its goodbye (and maybe a
# heartbeat): at most two records to re-read.
applied=$(last_applied)
from=$(sed -n 's/.*from offset \([0-9]*\) to \([0-9]*\) in.*/\1/p' <<<"$applied")
to=$(sed -n 's/.*from offset \([0-9]*\) to \([0-9]*\) in.*/\2/p' <<<"$applied")
tap_ok "$([ "${from:-0}" -gt 0 ] && [ $((to - from)) -le 2 ] && echo 0 || echo 1)" \
  "A resumes at its cache's offset: nothing but its goodbye to re-read ($applied)"
tap_is "$(value_of app-1 linger.ms)" 5 "A still serves app-1's linger.ms"
dc_stop_daemon

# ---- an empty data directory rebuilds from the topic ------------------------
dc_start_daemon "$DC_TMP/b" "${STORE[@]}" || tap_bail "dynconfd B did not start"
tap_like "$(last_applied)" "from offset 0 to [1-9][0-9]* in" \
  "B reads the whole topic"
tap_is "$(value_of app-1 acks)" all "B serves app-1's acks"
tap_is "$(value_of other session.timeout.ms)" 30000 "and <default> to any client"
tap_like "$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/b" --history)" \
  "IncrementalAlterConfigs client:gone acks DELETE 0 -> \(unset\)" \
  "B's history has every change, the emptying one too"
dc_stop_daemon

# ---- the store's brokers down: alters fail in time, reads go on -------------
dc_start_daemon "$DC_TMP/b" "${STORE_SHORT[@]}" || tap_bail "dynconfd B did not restart"
for b in 1 2 3; do dc_mock "down $b" >/dev/null; done
t0=$(date +%s%N)
out=$(cli --entity-type clients --entity-name app-1 --alter \
  --add-config 'acks=0' 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
tap_isnt() { tap_ok "$([ "$1" != "$2" ] && echo 0 || echo 1)" "$3"; }
tap_isnt "$rc" 0 "with every store broker down the alter fails"
tap_like "$out" "Kafka store \(topic _dynconf_configs at 127\.0\.0\.1" \
  "  naming the store: $out"
tap_ok "$([ "$ms" -lt 15000 ] && echo 0 || echo 1)" \
  "  within the store timeout (3000 ms, here $ms ms), not the CLI's 30000"
tap_is "$(value_of app-1 acks)" all "reads go on from memory, unchanged"
for b in 1 2 3; do dc_mock "up $b" >/dev/null; done
ok=1
for ((i = 0; i < 60; i++)); do
  if cli --entity-type clients --entity-name app-1 --alter \
    --add-config 'acks=0' >/dev/null 2>&1; then
    ok=0
    break
  fi
  sleep 0.5
done
tap_is "$ok" 0 "with the brokers back, writes resume without a restart"
tap_is "$(value_of app-1 acks)" 0 "and the new value is served"

# ---- written, but the log cannot be read back in time ------------------------
# Fetches fail (the producer is untouched): each failed fetch waits out
# fetch.error.backoff.ms (500 ms), so 40 errors hold the consumer back for
# about 10 s, past the 3 s store timeout and the next alter's 1 s. A commit is read back when
# a record the writer has not read lies before it: its next heartbeat,
# seen at the log's end (ListOffsets, which the errors spare).
end_offset() {
  timeout 10 kcat -Q -b "$BS" -t _dynconf_configs:0:-1 2>/dev/null |
    sed -n 's/.* offset \([0-9]*\).*/\1/p'
}
mark=$(log_mark)
e0=$(end_offset)
errs=$(printf ' NOT_LEADER_FOR_PARTITION%.0s' $(seq 20))
tap_is "$(dc_mock "err 1$errs") $(dc_mock "err 1$errs")" "ok ok" \
  "the mock fails the next 40 fetches"
for ((i = 0; i < 100; i++)); do
  [ "$(end_offset)" -gt "${e0:-0}" ] && break
  sleep 0.1
done
tap_ok "$([ "$(end_offset)" -gt "${e0:-0}" ] && echo 0 || echo 1)" \
  "a heartbeat the writer cannot read lands after offset $e0"
t0=$(date +%s%N)
out=$(cli --entity-type clients --entity-name late-1 --alter \
  --add-config 'acks=1' 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
tap_isnt "$rc" 0 "an alter whose records cannot be read back is not acknowledged"
tap_like "$out" "may or may not have been applied.*could not read the log back" \
  "  its outcome is unknown, and says why: $out"
tap_ok "$([ "$ms" -lt 5000 ] && echo 0 || echo 1)" \
  "  answered within the store timeout (3000 ms, here $ms ms)"
# The CLI retries NOT_CONTROLLER within its --timeout-ms: 1 s here.
out=$(timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" \
  --timeout-ms 1000 --entity-type clients --entity-name late-2 --alter \
  --add-config 'acks=1' 2>&1)
tap_like "$out" "^Error: NOT_CONTROLLER: .*writes resume once this server has read the log past it" \
  "until it is read back, the next alter is refused as retriable: $out"
resumed=$(await_log "read the log past its uncertain change; writes resume" "$mark")
tap_like "$resumed" "writes resume" "once the fetches succeed, writes resume by themselves"
tap_is "$(await_value late-1 acks 1)" 1 "the change written after all is served"
cli --entity-type clients --entity-name late-2 --alter --add-config 'acks=1' >/dev/null
tap_is $? 0 "and the next alter is acknowledged"
dc_stop_daemon
tap_like "$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/b" --export -)" \
  '"name":"late-1".*"acks":"1"' "the cache holds the change read back late"

# ---- a newer writer fences the old one --------------------------------------
dc_start_daemon "$DC_TMP/a" "${STORE[@]}" || tap_bail "writer A did not restart"
A_PID=$DC_PID A_PORT=$DC_PORT
kill -STOP "$A_PID" # paused past anything: it does not know what follows
mark=$(log_mark)
dc_start_daemon "$DC_TMP/f" "${STORE[@]}" --node-id 5 ||
  tap_bail "writer F did not start"
F_PID=$DC_PID F_PORT=$DC_PORT
# F follows A, hears nothing from it for a session, and claims.
tap_like "$(await_log 'writing _dynconf_configs as node 5' "$mark")" \
  "writing _dynconf_configs as node 5, epoch [0-9]+" \
  "F claims the topic once A is silent for a session"
tap_like "$(grep 'not heard of' "$DC_DAEMON_LOG")" \
  "node 1 \(epoch [0-9]+\) not heard of for [0-9]+ ms; node 5 claims" \
  "  saying why"
kill -CONT "$A_PID"
# Resumed, A either has read F's claim (it forwards the alter to F) or
# writes before reading it: then its own read-back meets F's claim, the
# record is ignored by everyone and the alter fails naming F.
out=$(DC_PORT=$A_PORT cli --entity-type clients --entity-name fenced \
  --alter --add-config 'acks=1' 2>&1)
rc=$?
f_has=$(DC_PORT=$F_PORT value_of fenced acks)
if [ "$rc" = 0 ]; then
  tap_is "$f_has" 1 "the resumed old writer's alter was forwarded: F has it"
else
  tap_like "$out" "node 5 claimed it \(epoch [0-9]+\)" \
    "the resumed old writer's alter fails, naming F: $out"
  tap_is "$f_has" "" "  and F does not have it"
fi
DC_PORT=$F_PORT cli --entity-type clients --entity-name fenced --alter \
  --add-config 'acks=0' >/dev/null
tap_is $? 0 "F takes alters"
DC_PORT=$A_PORT cli --entity-type clients --entity-name fenced --alter \
  --add-config 'linger.ms=4' >/dev/null
tap_is $? 0 "the old writer, now a follower, forwards later alters to F"
tap_is "$(DC_PORT=$F_PORT value_of fenced linger.ms)" 4 "  and F has them"
seen=$(DC_PORT=$A_PORT await_value fenced acks 0)
tap_is "$seen" 0 "the fenced writer follows its successor's alters"
# A fenced writer's record that reaches the log is ignored by everyone:
# write one with an old epoch from outside, then a marker through F.
if command -v kcat >/dev/null; then
  printf '%s\n' '{"type":"client","name":"zombie","configs":{"acks":"1"},"time_ms":1,"principal":"User:z","peer":"z","api":"IncrementalAlterConfigs","changes":[{"key":"acks","op":0,"old":null,"new":"1"}]}' |
    timeout 30 kcat -P -b "$BS" -t _dynconf_configs -p 0 -k client:zombie \
      -H dynconf-epoch=1 -H dynconf-node=1 -q
  tap_is $? 0 "a record with a stale epoch written to the topic"
else
  tap_ok 1 "kcat is needed to write the topic (apt-get install kcat)"
fi
DC_PORT=$F_PORT cli --entity-type clients --entity-name marker --alter \
  --add-config 'acks=1' >/dev/null
seen=$(DC_PORT=$A_PORT await_value marker acks 1)
tap_is "$seen" 1 "a later alter on F reaches A"
tap_is "$(DC_PORT=$A_PORT value_of zombie acks)$(DC_PORT=$F_PORT value_of zombie acks)" "" \
  "the stale-epoch record is applied neither by A nor by F"
DC_PORT=$F_PORT cli --entity-type clients --entity-name marker --alter \
  --add-config 'acks=0' >/dev/null
tap_is $? 0 "F still takes alters after it"
kill "$A_PID" "$F_PID"
{ wait "$A_PID" "$F_PID"; } 2>/dev/null
dc_start_daemon "$DC_TMP/g" "${STORE[@]}" --node-id 6 --store-read-only ||
  tap_bail "replica G did not start"
tap_is "$(value_of fenced acks)" 0 "a replica built from the log has F's value, not A's"
tap_is "$(value_of zombie acks)" "" "  and not the stale-epoch record"
dc_stop_daemon

# ---- a read replica follows the writer ---------------------------------------
mark=$(log_mark)
dc_start_daemon "$DC_TMP/a" "${STORE[@]}" || tap_bail "writer A did not restart"
W_PID=$DC_PID W_PORT=$DC_PORT
# F wrote last and is gone: A waits out its session, then claims.
tap_like "$(await_log 'writing _dynconf_configs as node 1' "$mark")" \
  "writing _dynconf_configs as node 1" "A takes over from the vanished F"
dc_start_daemon "$DC_TMP/r" "${STORE[@]}" --node-id 2 --store-read-only ||
  tap_bail "read replica R did not start"
R_PORT=$DC_PORT
tap_is "$(value_of app-1 acks)" 0 "R starts with everything written so far"
DC_PORT=$W_PORT cli --entity-type clients --entity-name app-2 --alter \
  --add-config 'linger.ms=7' >/dev/null
tap_is $? 0 "an alter on the writer"
seen=$(await_value app-2 linger.ms 7)
tap_is "$seen" 7 "R serves it without a restart"
out=$(cli --entity-type clients --entity-name app-2 --alter \
  --add-config 'linger.ms=8' 2>&1)
tap_isnt $? 0 "an alter on R is refused"
tap_like "$out" "read replica of topic _dynconf_configs" "  saying R only reads"
tap_like "$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/r" --history)" \
  "client:app-2 linger.ms SET \(unset\) -> 7" "R's history has the writer's change"
# A backlog longer than one pass (1000 records): R paused while the writer
# takes 2500 alters, then resumed, catches up to the last one.
kill -STOP "$DC_PID"
timeout 120 "$DC_BUILDDIR/bench/store_alter" --target "127.0.0.1:$W_PORT" \
  --entity backlog --alters 2500 --warmup 0 --base 1 >/dev/null 2>&1
tap_is $? 0 "2500 alters on the writer while R is paused"
last=$(DC_PORT=$W_PORT value_of backlog linger.ms)
kill -CONT "$DC_PID"
seen=$(await_value backlog linger.ms "$last" 300)
tap_is "$seen" "$last" "resumed, R applies the whole backlog (last value $last)"
kill -9 "$W_PID"
{ wait "$W_PID"; } 2>/dev/null
tap_is "$(value_of app-2 linger.ms)" 7 "with the writer killed, R still serves"
dc_stop_daemon
tap_is $? 0 "R stops cleanly"

# ---- a topic of more than one partition is refused --------------------------
out=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/c" --listen 127.0.0.1:0 \
  --store kafka --store-bootstrap "$BS" --store-topic wide 2>&1)
tap_is $? 1 "a 4-partition topic: dynconfd exits 1"
tap_like "$out" "store topic wide at .* has 4 partitions; the store needs exactly one" \
  "  saying why"

dc_mock_stop
tap_done
