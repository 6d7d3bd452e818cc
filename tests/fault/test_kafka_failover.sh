#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Killing the writer (-9) again and again while clients alter: three
# dynconfd replicas on one Kafka-topic store (librdkafka's mock cluster in
# its own process); three clients, each altering its own entity with an
# increasing value (linger.ms = 1, 2, 3, ...) on the replicas in turn and
# retrying each value until it is acknowledged, as a client would; the
# writer killed DC_KILLS times (default 3; `make check-ha` runs 20), each
# time restarted from its data directory once another replica writes.
# Afterwards every replica serves each client's last acknowledged value,
# the replicas' stores are identical, and every replica's history (and
# the history topic, dynconfd --history --store kafka) lists each
# client's values in the order they were acknowledged: every
# acknowledged value once, nothing a client did not send, nothing out of
# order (a value whose acknowledgement was lost with the writer was
# written; its retry finds it set and writes nothing).
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v kcat >/dev/null || tap_bail "kcat is needed (apt-get install kcat)"
KILLS=${DC_KILLS:-3}
CLIENTS=3

dc_mock_start
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 5000
  --store-session-timeout-ms 3000)

declare -A PID PORT
start() { # start NODE [PORT]: replica NODE on its data dir (and port)
  local listen=()
  [ -n "$2" ] && listen=(--listen "127.0.0.1:$2")
  dc_start_daemon "$DC_TMP/n$1" "${STORE[@]}" --node-id "$1" "${listen[@]}" ||
    tap_bail "replica $1 did not start"
  PID[$1]=$DC_PID PORT[$1]=$DC_PORT
}
controller() { # the controller Metadata on NODE names ("" when none)
  timeout 10 kcat -L -b "127.0.0.1:${PORT[$1]}" -m 5 2>/dev/null |
    sed -n 's/^ *broker \([0-9]*\) at .*(controller).*/\1/p'
}
start 1
start 2
start 3
ALL="127.0.0.1:${PORT[1]} 127.0.0.1:${PORT[2]} 127.0.0.1:${PORT[3]}"

# client I: alters entity fo-I with linger.ms = 1, 2, ... until the stop
# file appears, each value retried (on the next replica) until
# acknowledged; acknowledged values go to $DC_TMP/acked.I, one a line.
# A value that failed is retried even after the stop file appears (it may
# have been written), up to 300 more tries.
client() {
  local i=$1 seq=1 n=0 failed=0 late=0 addrs
  read -ra addrs <<<"$ALL"
  while [ ! -e "$DC_TMP/stop" ] || { [ "$failed" = 1 ] && [ $((late++)) -lt 300 ]; }; do
    if timeout 30 "$DC_CONFIGS" --bootstrap-server "${addrs[n % 3]}" \
      --timeout-ms 10000 --entity-type clients --entity-name "fo-$i" --alter \
      --add-config "linger.ms=$seq" >/dev/null 2>&1; then
      echo "$seq" >>"$DC_TMP/acked.$i"
      seq=$((seq + 1))
      failed=0
    else
      failed=1
      sleep 0.05
    fi
    n=$((n + 1))
  done
}
acked() { cat "$DC_TMP"/acked.* 2>/dev/null | wc -l; }
# await_acks N: waits up to 60 s until N more alters were acknowledged.
await_acks() {
  local want=$(($(acked) + $1)) i
  for ((i = 0; i < 600; i++)); do
    [ "$(acked)" -ge "$want" ] && return 0
    sleep 0.1
  done
  return 1
}
for ((c = 1; c <= CLIENTS; c++)); do
  client "$c" &
  CPID[c]=$!
done

await_acks 3
tap_is $? 0 "three clients alter through the replicas"
killed_ok=0 took_over=0
for ((k = 1; k <= KILLS; k++)); do
  W=
  for n in 1 2 3; do
    W=$(controller "$n")
    [ -n "$W" ] && break
  done
  [ -n "$W" ] || break
  kill -9 "${PID[$W]}"
  { wait "${PID[$W]}"; } 2>/dev/null
  killed_ok=$((killed_ok + 1))
  # Another replica takes over and the clients' alters go on.
  await_acks "$CLIENTS" && took_over=$((took_over + 1))
  start "$W" "${PORT[$W]}"
done
tap_is "$killed_ok" "$KILLS" "the writer was killed $KILLS times"
tap_is "$took_over" "$KILLS" "  each time the alters went on under another writer"
await_acks 3
tap_is $? 0 "the restarted replicas serve again"
touch "$DC_TMP/stop"
for ((c = 1; c <= CLIENTS; c++)); do
  wait "${CPID[c]}"
done

value_of() { # value_of NODE ENTITY
  timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:${PORT[$1]}" \
    --timeout-ms 10000 --entity-type clients --entity-name "$2" --describe \
    2>/dev/null | sed -n 's/^ *linger\.ms=\([^ ]*\) .*/\1/p'
}
all_serve_last=0
for ((c = 1; c <= CLIENTS; c++)); do
  last=$(tail -1 "$DC_TMP/acked.$c")
  for n in 1 2 3; do
    for ((i = 0; i < 300; i++)); do
      [ "$(value_of "$n" "fo-$c")" = "$last" ] && break
      sleep 0.1
    done
    [ "$(value_of "$n" "fo-$c")" = "$last" ] || {
      tap_diag "node $n serves fo-$c linger.ms=$(value_of "$n" "fo-$c"), last acknowledged $last"
      all_serve_last=1
    }
  done
done
tap_is "$all_serve_last" 0 "every replica serves each client's last acknowledged value ($(acked) alters)"

for n in 1 2 3; do
  kill -TERM "${PID[$n]}"
  { wait "${PID[$n]}"; } 2>/dev/null
done
for n in 1 2 3; do
  timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/n$n" --export - \
    >"$DC_TMP/export.$n"
done
same=0
cmp -s "$DC_TMP/export.1" "$DC_TMP/export.2" &&
  cmp -s "$DC_TMP/export.1" "$DC_TMP/export.3" || same=1
tap_is "$same" 0 "the three replicas' stores are identical"

# history_ok NODE CLIENT: the values NODE's history (NODE "topic": the
# history topic's) lists for fo-CLIENT, in order, are the acknowledged
# ones in order, each once.
history_ok() {
  local from=(--data-dir "$DC_TMP/n$1")
  [ "$1" = topic ] && from=(--store kafka --store-bootstrap "$BS")
  timeout 30 "$DC_DYNCONFD" "${from[@]}" --history \
    --entity "fo-$2" | sed -n 's/.* linger\.ms SET .* -> \([0-9]*\)$/\1/p' |
    awk -v acked="$DC_TMP/acked.$2" '
      BEGIN { while ((getline v < acked) > 0) want[++n] = v; i = 1 }
      { if ($1 == want[i]) i++
        else { print "unexpected " $1 " (want " want[i] ")"; bad = 1; exit } }
      END { if (!bad && i <= n) print "missing " want[i] }'
}
hist_bad=0
for n in 1 2 3 topic; do
  for ((c = 1; c <= CLIENTS; c++)); do
    out=$(history_ok "$n" "$c")
    [ -z "$out" ] || {
      tap_diag "node $n, fo-$c: $out"
      hist_bad=1
    }
  done
done
tap_is "$hist_bad" 0 "every replica's history and the history topic list each client's acknowledged values once, in order"

dc_mock_stop
tap_done
