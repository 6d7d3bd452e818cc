#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The service files in dist/: the systemd unit passes `systemd-analyze
# verify` without a warning (with ExecStart pointed at the built dynconfd)
# and asks for what a service like this needs (Type=notify, its own user,
# a state directory, the hardening options); the sample configuration
# names every key dynconfd reads, and dynconfd starts on it as written and
# with every commented default switched on; --log-format json writes one
# JSON object a line.
. "$(dirname "$0")/../lib.sh"

UNIT="$DC_SRCDIR/dist/dynconfd.service"
CONF="$DC_SRCDIR/dist/dynconfd.conf"
command -v systemd-analyze >/dev/null ||
  tap_bail "systemd-analyze is needed (apt-get install systemd)"

sed "s|^ExecStart=/usr/sbin/dynconfd|ExecStart=$DC_DYNCONFD|" "$UNIT" \
  >"$DC_TMP/dynconfd.service"
out=$(cd "$DC_TMP" && timeout 60 systemd-analyze verify --man=no \
  ./dynconfd.service 2>&1)
tap_is "$?:$out" "0:" "systemd-analyze verify: no error, no warning"
for want in Type=notify User=dynconfd StateDirectory=dynconfd \
  WatchdogSec= NoNewPrivileges=yes ProtectSystem=strict \
  ReadWritePaths=/var/lib/dynconfd ProtectHome=yes PrivateTmp=yes \
  'CapabilityBoundingSet=$' 'ExecReload=/bin/kill -HUP'; do
  grep -q "^$want" "$UNIT"
  tap_is $? 0 "the unit sets ${want%$}"
done

# Every key dynconfd's settings parser knows (its "key" comparisons; the
# aliases listen and advertise aside) is in the sample, set or commented.
keys=$(grep -ho 'strcmp(key, "[a-z.]*")' "$DC_SRCDIR"/tools/dynconfd*.c |
  sed 's/.*"\(.*\)")/\1/' | grep -vx 'listen\|advertise' | sort -u)
missing=
for k in $keys; do
  grep -qE "^#?$k=" "$CONF" || missing="$missing $k"
done
tap_is "$missing" "" "the sample names every key ($(echo "$keys" | wc -l) keys)"

# start_on FILE NAME: dynconfd on FILE with the listeners and data dir
# moved to the test's (in this shell: it sets DC_PID and friends).
start_on() {
  sed -e 's|^#*listeners=.*|listeners=127.0.0.1:0|' \
    -e "s|^#*data.dir=.*|data.dir=$DC_TMP/data-$2|" \
    -e 's|^#*metrics.listen=.*|metrics.listen=127.0.0.1:0|' "$1" \
    >"$DC_TMP/$2.conf"
  dc_start_daemon "$DC_TMP/data-$2" --config "$DC_TMP/$2.conf"
}
start_on "$CONF" asis
tap_is $? 0 "dynconfd starts on the sample as written"
dc_stop_daemon
tap_is $? 0 "  and stops cleanly"
# Every commented key with a value, switched on: the defaults it states
# must be values dynconfd accepts.
sed 's/^#\([a-z.]*=..*\)$/\1/' "$CONF" >"$DC_TMP/all.conf"
start_on "$DC_TMP/all.conf" all
tap_is $? 0 "and with every stated default switched on"
dc_stop_daemon
tap_is $? 0 "  and stops cleanly"

# --log-format json: every line a log shipper reads is one JSON object.
mark=$(wc -l <"$DC_DAEMON_LOG")
dc_start_daemon "$DC_TMP/data-json" --log-format json ||
  tap_bail "dynconfd --log-format json did not start"
printf 'not a kafka frame, "quoted"\n' |
  timeout 5 bash -c "cat >/dev/tcp/127.0.0.1/$DC_PORT" 2>/dev/null
# The loop logs the refused frame after the sender is gone: stopping the
# daemon before it did would leave no warning to look at.
for ((i = 0; i < 100; i++)); do
  tail -n "+$((mark + 1))" "$DC_DAEMON_LOG" | grep -q 'closing connection from' && break
  sleep 0.1
done
dc_stop_daemon
tail -n "+$((mark + 1))" "$DC_DAEMON_LOG" >"$DC_TMP/json.log"
cat >"$DC_TMP/check.py" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
bad = 0
for l in lines:
    try:
        bad += set(json.loads(l)) != {"ts", "level", "msg"}
    except ValueError:
        bad += 1
print("%d lines, %d bad" % (len(lines), bad))
PY
got=$(/usr/bin/python3 "$DC_TMP/check.py" "$DC_TMP/json.log")
tap_is "$got" "$(wc -l <"$DC_TMP/json.log" | tr -d ' ') lines, 0 bad" \
  "--log-format json: every line one object with ts, level and msg"
tap_like "$(cat "$DC_TMP/json.log")" '"level":"WARN","msg":"closing connection from' \
  "  a warning among them"
tap_done
