#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# End-to-end durability (SPEC §4): every acknowledged change survives a clean
# restart and kill -9, a change set is never half-applied, and each change
# is in the audit history (dynconfd --data-dir DIR --history).
# Uses the operator CLI dynconf-configs to make the changes.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
DATA="$DC_TMP/data"

# cli ARGS...: dynconf-configs against the running daemon, bounded in time.
cli() {
  timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" \
    --timeout-ms 5000 "$@"
}

# value_of ENTITY KEY: the resolved value from `--describe --all`, or "".
value_of() {
  cli --entity-type clients --entity-name "$1" --describe --all 2>/dev/null |
    sed -n "s/^ *$2=\([^ ]*\) .*/\1/p"
}

dc_history() { timeout 30 "$DC_DYNCONFD" --data-dir "$DATA" --history "$@"; }

# ---- (a) CLI changes survive a clean restart and kill -9 ---------------
dc_start_daemon "$DATA" || tap_bail "dynconfd did not start"
cli --entity-type clients --entity-name X --alter \
  --add-config 'session.timeout.ms=30000' >/dev/null
tap_is $? 0 "CLI sets session.timeout.ms=30000 for X"
cli --entity-type clients --entity-default --alter \
  --add-config 'heartbeat.interval.ms=2000' >/dev/null
tap_is $? 0 "CLI sets heartbeat.interval.ms=2000 for <default>"
tap_is "$(value_of X session.timeout.ms)" 30000 "describe X before restart"

out=$(dc_history)
tap_is $? 0 "--history works while the daemon runs"
tap_like "$out" "X.* session\.timeout\.ms .*-> 30000" \
  "live history already shows X's change"

dc_stop_daemon
tap_is $? 0 "SIGTERM: exit status 0"
dc_start_daemon "$DATA" || tap_bail "dynconfd did not restart"
tap_is "$(value_of X session.timeout.ms)" 30000 \
  "after a clean restart X still has session.timeout.ms=30000"
tap_is "$(value_of X heartbeat.interval.ms)" 2000 \
  "after a clean restart X inherits heartbeat.interval.ms=2000"
desc=$(cli --entity-type clients --entity-name X --describe)
tap_like "$desc" "^ *session\.timeout\.ms=30000 " "describe (own only) lists it"

# An acknowledged change followed at once by kill -9.
cli --entity-type clients --entity-name X --alter --add-config 'acks=1' >/dev/null
tap_is $? 0 "CLI sets acks=1 for X"
dc_kill9_daemon
dc_start_daemon "$DATA" || tap_bail "dynconfd did not restart after kill -9"
tap_is "$(value_of X acks)" 1 "acks=1 acknowledged just before kill -9 survived"
tap_is "$(value_of X session.timeout.ms)" 30000 "and the earlier change too"

cli --entity-type clients --entity-name X --alter --delete-config acks >/dev/null
tap_is $? 0 "CLI deletes acks from X"
tap_is "$(value_of X acks)" "" "acks is gone"

# ---- (b) kill -9 in the middle of a burst of two-key changes -----------
# Each change sets both keys from the same counter i, so a half-applied
# change would show as a mismatch. The loop stops at its first failure
# (the daemon is gone) and records every acknowledged i.
ATTEMPTED="$DC_TMP/attempted"
ACKED="$DC_TMP/acked"
: >"$ATTEMPTED"
: >"$ACKED"
burst() {
  local i
  for ((i = 1; i <= 20000; i++)); do
    echo "$i" >>"$ATTEMPTED"
    cli --entity-type clients --entity-name burst --alter \
      --add-config "max.poll.interval.ms=$((100000 + i)),request.timeout.ms=$((200000 + i))" \
      >/dev/null 2>&1 || return 0
    echo "$i" >>"$ACKED"
  done
}
burst &
BURST_PID=$!
for ((w = 0; w < 400; w++)); do # up to 20 s for the first few acks
  [ "$(wc -l <"$ACKED")" -ge 10 ] && break
  sleep 0.05
done
sleep 1
dc_kill9_daemon
wait "$BURST_PID"
n_acked=$(wc -l <"$ACKED")
last_acked=$(tail -n 1 "$ACKED")
last_attempted=$(tail -n 1 "$ATTEMPTED")
tap_diag "burst: $n_acked acknowledged, last acknowledged $last_acked, last attempted $last_attempted"
[ "$n_acked" -ge 10 ]
tap_ok $? "the burst got at least 10 acknowledged changes before kill -9"
[ "$last_attempted" -gt "${last_acked:-0}" ]
tap_ok $? "the burst was cut short by the kill (a change failed)"

dc_start_daemon "$DATA" || tap_bail "dynconfd did not restart after kill -9"
mp=$(value_of burst max.poll.interval.ms)
rt=$(value_of burst request.timeout.ms)
tap_diag "after restart: max.poll.interval.ms=$mp request.timeout.ms=$rt"
i_mp=$((${mp:-0} - 100000))
i_rt=$((${rt:-0} - 200000))
[ -n "$mp" ] && [ -n "$rt" ] && [ "$i_mp" -eq "$i_rt" ]
tap_ok $? "both keys come from the same change (never half-applied)"
[ "$i_mp" -ge "${last_acked:-1}" ] && [ "$i_mp" -le "$last_attempted" ]
tap_ok $? "the value is the last acknowledged change ($last_acked) or the one in flight"

# Writable after recovery.
cli --entity-type clients --entity-name burst --alter \
  --add-config 'max.poll.interval.ms=99999,request.timeout.ms=99999' >/dev/null
tap_is $? 0 "a change after recovery is accepted"
dc_stop_daemon
tap_is $? 0 "SIGTERM: exit status 0"

# ---- the audit history ---------------------------------------------------
out=$(dc_history)
tap_is $? 0 "dynconfd --history exits 0"
tap_like "$out" "127\.0\.0\.1:[0-9]+ .*X.* session\.timeout\.ms SET .*-> 30000$" \
  "history: X session.timeout.ms SET -> 30000 with the peer address"
tap_like "$out" "<default>.* heartbeat\.interval\.ms SET .*-> 2000$" \
  "history: <default> heartbeat.interval.ms SET -> 2000"
tap_like "$out" "X.* acks DELETE 1 -> " "history: X acks DELETE, old value 1"
# One line per change: the burst committed changes 1..i_mp, each touching
# both keys, plus the change after recovery.
n_mp=$(printf '%s\n' "$out" | grep -c "burst.* max\.poll\.interval\.ms ")
n_rt=$(printf '%s\n' "$out" | grep -c "burst.* request\.timeout\.ms ")
tap_is "$n_mp" $((i_mp + 1)) "history: one max.poll.interval.ms line per committed burst change"
tap_is "$n_rt" $((i_rt + 1)) "history: one request.timeout.ms line per committed burst change"
tap_like "$out" "burst.* max\.poll\.interval\.ms .*$((100000 + i_mp)) -> 99999$" \
  "history: the last burst value is the old value of the next change"
only_x=$(dc_history --entity X)
tap_like "$only_x" "session\.timeout\.ms" "--history --entity X lists X's changes"
printf '%s\n' "$only_x" | grep -q "burst"
tap_ok $((!$?)) "--history --entity X leaves out other entities"

tap_done
