#!/usr/bin/env bash
# The service files in dist/: the systemd unit passes `systemd-analyze
# verify` without a warning (with ExecStart pointed at the built dynconfd)
# and asks for what a service like this needs (Type=notify, its own user,
# a state directory, the hardening options); the sample configuration
# names every key dynconfd reads, and dynconfd starts on it as written and
# with every commented default switched on.
. "$(dirname "$0")/lib.sh"

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
keys=$(grep -o 'strcmp(key, "[a-z.]*")' "$DC_SRCDIR/tools/dynconfd.c" |
  sed 's/.*"\(.*\)")/\1/' | grep -vx 'listen\|advertise' | sort -u)
missing=
for k in $keys; do
  grep -qE "^#?$k=" "$CONF" || missing="$missing $k"
done
tap_is "$missing" "" "the sample names every key ($(echo "$keys" | wc -l) keys)"

# start FILE: dynconfd on FILE with the listeners and data dir moved to
# the test's; prints its first "listening on" line.
start_on() {
  sed -e 's|^#*listeners=.*|listeners=127.0.0.1:0|' \
    -e "s|^#*data.dir=.*|data.dir=$DC_TMP/data-$2|" \
    -e 's|^#*metrics.listen=.*|metrics.listen=127.0.0.1:0|' "$1" \
    >"$DC_TMP/$2.conf"
  dc_start_daemon "$DC_TMP/data-$2" --config "$DC_TMP/$2.conf" ||
    return 1
  head -1 "$DC_DAEMON_OUT"
}
tap_like "$(start_on "$CONF" asis)" "^(listening|metrics) on 127\.0\.0\.1:" \
  "dynconfd starts on the sample as written"
dc_stop_daemon
# Every commented key with a value, switched on: the defaults it states
# must be values dynconfd accepts.
sed 's/^#\([a-z.]*=..*\)$/\1/' "$CONF" >"$DC_TMP/all.conf"
tap_like "$(start_on "$DC_TMP/all.conf" all)" "on 127\.0\.0\.1:" \
  "and with every stated default switched on"
dc_stop_daemon
tap_done
