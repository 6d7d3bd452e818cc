#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Reads across the replicas of a Kafka-topic store, on a real Apache Kafka
# cluster (3 KRaft nodes), with a follower B that applies the log up to
# 300 ms late: a follower that forwarded an alter answers OK
# only once it serves the change itself (read your writes, 50 rounds); a
# client that has seen store position P (Watch v1) is never answered from
# an older state by a replica that has not applied P yet: the replica,
# paused while the writer took a change and woken with the client's
# Watch already waiting, waits until it catches up (20 rounds); without a
# position (Watch v0) the same replica may answer with the older value,
# which is why positions exist; a replica that cannot catch up in time
# answers REPLICA_NOT_AVAILABLE, never the older state, and so does a
# DescribeConfigs carrying a position it has not reached.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
dc_kafka_start 3
ROUNDS=${DC_READ_ROUNDS:-50}

STORE=(--store kafka --store-bootstrap "$KBS" --store-timeout-ms 20000
  --store-session-timeout-ms 6000)
cli() {
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$1" \
    --timeout-ms 30000 "${@:2}"
}
value_of() { # value_of PORT ENTITY KEY
  cli "$1" --entity-type clients --entity-name "$2" --describe 2>/dev/null |
    sed -n "s/^ *$3=\([^ ]*\) .*/\1/p"
}
kwatch() { python3 "$DC_SRCDIR/tests/kwatch.py" "$@" 2>>"${KW_ERR:-/dev/null}"; }
jget() { python3 -c 'import json, sys; d = json.load(sys.stdin); v = d
for k in sys.argv[1:]: v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@"; }

dc_start_daemon "$DC_TMP/a" "${STORE[@]}" --node-id 1 ||
  tap_bail "dynconfd A did not start"
A_PID=$DC_PID A_PORT=$DC_PORT
DC_MORE_PIDS=$A_PID
# B lags: its store consumer's fetches wait up to 300 ms for 1 MB, so it
# applies each record up to 300 ms after the writer acknowledged it.
printf 'fetch.min.bytes=1000000\nfetch.wait.max.ms=300\n' >"$DC_TMP/lag.conf"
dc_start_daemon "$DC_TMP/b" "${STORE[@]}" --node-id 2 \
  --store-config "$DC_TMP/lag.conf" || tap_bail "dynconfd B did not start"
B_PID=$DC_PID B_PORT=$DC_PORT
DC_MORE_PIDS="$A_PID $B_PID"
dc_await_grep "$DC_DAEMON_LOG" "node 2 is a replica"
cli "$A_PORT" --entity-type clients --entity-name app --alter \
  --add-config 'linger.ms=1' >/dev/null
tap_is $? 0 "an alter on the writer A"

# ---- read your writes on the follower ----------------------------------------
stale=0
for ((i = 2; i < ROUNDS + 2; i++)); do
  cli "$B_PORT" --entity-type clients --entity-name app --alter \
    --add-config "linger.ms=$i" >/dev/null || { stale=-1; break; }
  v=$(value_of "$B_PORT" app linger.ms)
  [ "$v" = "$i" ] || stale=$((stale + 1))
done
tap_is "$stale" 0 "$ROUNDS alters forwarded by B, each read back on B at once: 0 older values"

# ---- monotonic reads: a client ahead of a replica ----------------------------
# waking_watch MODE N: B paused, the writer takes linger.ms=N, a Watch on
# the new version (from A, with A's position) waits in B's socket, B
# wakes. Prints B's answer.
waking_watch() {
  local mode=$1 n=$2 now pos ver
  kill -STOP "$B_PID"
  cli "$A_PORT" --entity-type clients --entity-name app --alter \
    --add-config "linger.ms=$n" >/dev/null
  now=$(kwatch "127.0.0.1:$A_PORT" app -1 1000)
  pos=$(jget position <<<"$now")
  ver=$(jget version <<<"$now")
  [ "$mode" = v0 ] && pos=v0
  : >"$DC_TMP/w.err"
  KW_ERR=$DC_TMP/w.err kwatch "127.0.0.1:$B_PORT" app "$ver" 1000 "$pos" \
    >"$DC_TMP/w.out" &
  local w=$!
  # The request is in B's socket before B runs again.
  for ((k = 0; k < 250; k++)); do
    grep -q sent "$DC_TMP/w.err" && break
    sleep 0.02
  done
  kill -CONT "$B_PID"
  wait "$w"
  printf '%s|%s|%s\n' "$(cat "$DC_TMP/w.out")" "$ver" "$n"
}
older=0 positions_ok=0 answered=0
for ((i = 0; i < 20; i++)); do
  IFS='|' read -r out ver n <<<"$(waking_watch v1 $((1000 + i)))"
  err=$(jget error <<<"$out")
  if [ "$err" = 0 ]; then
    answered=$((answered + 1))
    got=$(jget configs linger.ms <<<"$out")
    changed=$(jget changed <<<"$out")
    # Unchanged (it caught up to the version the client has), or changed
    # to exactly that configuration: never linger.ms older than n.
    if [ "$changed" = True ] && [ "$got" != "$n" ]; then
      older=$((older + 1))
      tap_diag "round $i: B answered linger.ms=$got, the client had seen $n"
    fi
  elif [ "$err" != 9 ]; then
    older=$((older + 1))
    tap_diag "round $i: $out"
  fi
done
tap_is "$older" 0 "20 Watch v1 on B from a client ahead of it: no older configuration"
ok=$([ "$answered" -ge 10 ] && echo 0 || echo 1)
tap_ok "$ok" "  and B caught up within the Watch's timeout in $answered of 20"

# Without positions (v0) the same race may answer the older value: counted,
# not required, to show what the position prevents.
old0=0
for ((i = 0; i < 10; i++)); do
  IFS='|' read -r out ver n <<<"$(waking_watch v0 $((2000 + i)))"
  [ "$(jget changed <<<"$out")" = True ] &&
    [ "$(jget configs linger.ms <<<"$out")" != "$n" ] && old0=$((old0 + 1))
done
tap_diag "Watch v0 (no position) answered an older value in $old0 of 10"

# ---- a replica that cannot catch up answers REPLICA_NOT_AVAILABLE ------------
out=$(kwatch "127.0.0.1:$B_PORT" app -1 300 999999999)
tap_is "$(jget error <<<"$out")" 9 "a position B will not reach in 300 ms: REPLICA_NOT_AVAILABLE"
tap_like "$(jget message <<<"$out")" "behind position 999999999" "  saying so"
tap_is "$(jget configs <<<"$out")" "{}" "  with no configuration"
out=$(kwatch "127.0.0.1:$B_PORT" app -1 0 999999999)
tap_is "$(jget error <<<"$out")" 9 "  at once when the Watch may not wait"
# DescribeConfigs v4 with dynconf's position tag: answered from a state at
# least that new, or refused.
now=$(kwatch "127.0.0.1:$A_PORT" app -1 1000)
pos=$(jget position <<<"$now")
out=$(kwatch --describe "127.0.0.1:$B_PORT" app "$pos")
ok=$([ "$(jget error <<<"$out")" = 0 ] && [ "$(jget position <<<"$out")" -ge "$pos" ] && echo 0 || echo 1)
tap_ok "$ok" "DescribeConfigs v4 asking position $pos of B: answered from position >= it"
out=$(kwatch --describe "127.0.0.1:$B_PORT" app 999999999)
tap_is "$(jget error <<<"$out")" 9 "  asking a position B has not reached: REPLICA_NOT_AVAILABLE"
kill "$A_PID" "$B_PID" 2>/dev/null
tap_done
