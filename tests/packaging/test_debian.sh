#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The Debian packages, as a packager and an operator meet them (root
# only; ./run-tests.sh runs it, not make check, as it installs packages):
# from `make dist`'s tarball, dpkg-buildpackage -us -uc -b builds
# libdynconf0 (with the librdkafka plugin), libdynconf-dev, dynconfd and
# dynconf-tools; lintian finds no error; they install, making the dynconfd
# user and /var/lib/dynconfd; dynconfd runs from the installed files as its
# user, the installed CLI alters and describes through it, kcat loads the
# installed plugin by name; a program builds against the installed
# libdynconf-dev with pkg-config and runs; man finds the pages; purging
# removes the files.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || tap_bail "needs root (it installs packages)"
for t in dpkg-buildpackage lintian dh; do
  command -v "$t" >/dev/null || tap_bail "$t is needed (dpkg-dev, lintian, debhelper)"
done
PKGS="libdynconf0 libdynconf-dev dynconfd dynconf-tools"
if dpkg -s dynconfd >/dev/null 2>&1; then
  tap_bail "dynconfd is installed already; not touching it"
fi

work="$DC_TMP/deb"
mkdir -p "$work"
make -s -C "$DC_BUILDDIR" dist >"$work/dist.log" 2>&1 ||
  tap_bail "make dist failed"
tarball=$(ls -t "$DC_BUILDDIR"/dynconf-*.tar.gz | head -1)
tar xzf "$tarball" -C "$work"
src=$(ls -d "$work"/dynconf-*/ | head -1)
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
  dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1)
tap_is $? 0 "dpkg-buildpackage -us -uc -b builds"
[ $? = 0 ] || tap_diag "$(tail -20 "$work/build.log")"
for p in $PKGS; do
  tap_ok "$(ls "$work"/${p}_*.deb >/dev/null 2>&1 && echo 0 || echo 1)" "  $p"
done
lint=$(lintian --tag-display-limit 0 "$work"/*.changes 2>&1 | grep -E '^E: ')
tap_is "$lint" "" "lintian finds no error"

debs=()
for p in $PKGS; do debs+=("$(ls "$work"/${p}_*.deb)"); done
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debs[@]}" \
  >"$work/install.log" 2>&1
tap_is $? 0 "the four packages install"
# shellcheck disable=SC2064 # the list is fixed now
trap "DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $PKGS >/dev/null 2>&1; dc_cleanup" EXIT
tap_ok "$(id dynconfd >/dev/null 2>&1 && echo 0 || echo 1)" "the dynconfd system user exists"
tap_is "$(stat -c %U "/var/lib/dynconfd" 2>&1)" dynconfd \
  "/var/lib/dynconfd belongs to it"
tap_ok "$([ -f /lib/systemd/system/dynconfd.service ] ||
  [ -f /usr/lib/systemd/system/dynconfd.service ] && echo 0 || echo 1)" \
  "the systemd unit is installed"

# dynconfd from the installed files, as its user, on the installed config
# with the listener moved to a free port.
sed 's|^listeners=.*|listeners=127.0.0.1:0|' /etc/dynconf/dynconfd.conf \
  >"$work/dynconfd.conf"
chmod 644 "$work/dynconfd.conf"
chmod 755 "$DC_TMP" "$work"
setpriv --reuid=dynconfd --regid=dynconfd --init-groups \
  /usr/sbin/dynconfd --config "$work/dynconfd.conf" \
  >"$work/out" 2>"$work/err" &
pid=$!
port=
for ((i = 0; i < 100; i++)); do
  port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/out")
  [ -n "$port" ] && break
  sleep 0.1
done
tap_ok "$([ -n "$port" ] && echo 0 || echo 1)" \
  "the installed dynconfd serves as user dynconfd from /var/lib/dynconfd"
/usr/bin/dynconf-configs --bootstrap-server "127.0.0.1:$port" \
  --entity-type clients --entity-name deb-app --alter --add-config acks=1 \
  >/dev/null 2>&1
tap_is $? 0 "the installed dynconf-configs alters through it"
tap_like "$(/usr/bin/dynconf-configs --bootstrap-server "127.0.0.1:$port" \
  --entity-type clients --entity-name deb-app --describe 2>&1)" "acks=1" \
  "  and describes it back"
# The librdkafka plugin from libdynconf0, found by its name as dlopen()
# finds it on the system's library path, in Debian's kcat.
tap_ok "$(ls /usr/lib/*/libdynconf-plugin.so >/dev/null 2>&1 && echo 0 || echo 1)" \
  "libdynconf0 installs the plugin, libdynconf-plugin.so"
if command -v kcat >/dev/null; then
  echo hello | timeout 60 kcat -b 127.0.0.1:1 -X test.mock.num.brokers=1 \
    -X debug=conf -X client.id=deb-app -X plugin.library.paths=libdynconf-plugin \
    -X "dynconf.bootstrap.servers=127.0.0.1:$port" -P -t deb-topic \
    >"$work/kcat.out" 2>"$work/kcat.err"
  tap_is $? 0 "kcat loads it with plugin.library.paths=libdynconf-plugin"
  tap_like "$(cat "$work/kcat.err")" 'request\.required\.acks = 1' \
    "  and its client takes the operator's acks=1"
fi
kill "$pid"
wait "$pid"
tap_is $? 0 "dynconfd stops cleanly"
tap_ok "$([ -f /var/lib/dynconfd/dynconf.db ] && echo 0 || echo 1)" \
  "its store is in /var/lib/dynconfd"

printf '#include <dynconf/dynconf.h>\n#include <stdio.h>\nint main(void) { puts(dynconf_version_str()); return 0; }\n' \
  >"$work/v.c"
# shellcheck disable=SC2046 # pkg-config's words
cc -o "$work/v" "$work/v.c" $(pkg-config --cflags --libs dynconf) \
  >"$work/cc.log" 2>&1
tap_is $? 0 "a program builds against the installed libdynconf-dev (pkg-config)"
tap_is "$("$work/v")" "$(pkg-config --modversion dynconf)" \
  "  and runs on the installed libdynconf0"
for page in dynconfd dynconf-configs libdynconf; do
  tap_like "$(man -w "$page" 2>&1)" "^/usr/share/man/" "man $page finds its page"
done

DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $PKGS >"$work/purge.log" 2>&1
tap_is $? 0 "the packages purge"
tap_ok "$([ ! -e /usr/sbin/dynconfd ] && [ ! -e /usr/include/dynconf/dynconf.h ] &&
  [ ! -e /etc/dynconf/dynconfd.conf ] && echo 0 || echo 1)" \
  "  and their files are gone"
trap dc_cleanup EXIT
tap_done
