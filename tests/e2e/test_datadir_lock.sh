#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# TAP tests: a data directory has one dynconfd. A second dynconfd on the
# same directory refuses to start, names the first one's pid and exits with
# the status of any other startup failure; the first keeps serving and its
# writes survive a restart; --history still reads the store meanwhile; the
# lock goes with the process (kill -9), so a new dynconfd can then start.
set -u
DC_DAEMON_WRAPPER=${DC_DAEMON_WRAPPER:-} # lib.sh reads it unset-or-not
. "$(dirname "$0")/../lib.sh"

DATA="$DC_TMP/data"

cli() { # cli ARGS...: dynconf-configs against the running daemon
  timeout 30 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" \
    --timeout-ms 5000 "$@"
}
value_of() { # value_of ENTITY KEY: its resolved value, or ""
  cli --entity-type clients --entity-name "$1" --describe --all 2>/dev/null |
    sed -n "s/^ *$2=\([^ ]*\) .*/\1/p"
}
# second DIR: a dynconfd that should not get going; $rc and $DC_TMP/err2.
# timeout bounds a dynconfd that wrongly starts serving.
second() {
  timeout 10 "$DC_DYNCONFD" --listen 127.0.0.1:0 --data-dir "$1" \
    >"$DC_TMP/out2" 2>"$DC_TMP/err2" </dev/null
  rc=$?
}

# The status dynconfd exits with when its store cannot be opened.
: >"$DC_TMP/plainfile"
second "$DC_TMP/plainfile"
FAIL_RC=$rc
[ "$FAIL_RC" -ne 0 ] && [ "$FAIL_RC" -ne 124 ] &&
  grep -q "cannot open the store" "$DC_TMP/err2"
tap_ok $? "a data dir that is a file: startup failure, exit $FAIL_RC"

dc_start_daemon "$DATA" || tap_bail "dynconfd did not start"
FIRST=$DC_PID
cli --entity-type clients --entity-name X --alter --add-config acks=1 >/dev/null
tap_is $? 0 "the first dynconfd sets acks=1 for X"

second "$DATA"
tap_is "$rc" "$FAIL_RC" "a second dynconfd on the same data dir exits $FAIL_RC"
grep -Eq "data directory $DATA is in use by another dynconfd \(pid $FIRST\); two servers on one store would lose writes" \
  "$DC_TMP/err2"
tap_ok $? "... saying the directory is in use by pid $FIRST" ||
  sed 's/^/#     /' "$DC_TMP/err2"
! grep -q '^listening on' "$DC_TMP/out2"
tap_ok $? "... without ever listening"

dc_daemon_alive
tap_ok $? "the first dynconfd still runs"
cli --entity-type clients --entity-name X --alter --add-config linger.ms=5 \
  >/dev/null
tap_is $? 0 "... and serves: sets linger.ms=5 for X"
tap_is "$(value_of X acks)" 1 "... and still has acks=1"

hist=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DATA" --history)
tap_is $? 0 "--history works while the daemon runs"
tap_like "$hist" "client:X linger\.ms .*-> 5" "... and shows the latest change"

dc_kill9_daemon
dc_start_daemon "$DATA"
tap_ok $? "after kill -9 of the first, a new dynconfd starts on the data dir"
tap_is "$(value_of X acks)" 1 "acks=1 survived the restart"
tap_is "$(value_of X linger.ms)" 5 "linger.ms=5 too"
tap_is "$(cat "$DATA/.lock")" "$DC_PID" "the lock file names the new owner"

second "$DATA"
grep -q "(pid $DC_PID)" "$DC_TMP/err2"
tap_ok $? "a second dynconfd now names the new owner's pid" ||
  sed 's/^/#     /' "$DC_TMP/err2"

dc_stop_daemon
tap_is $? 0 "SIGTERM: exit status 0"
dc_start_daemon "$DATA"
tap_ok $? "after a clean stop the data dir is free again"
dc_stop_daemon
tap_done
