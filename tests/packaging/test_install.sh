#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# `make install` (into a staging directory): the programs, the library,
# the librdkafka plugin,
# <dynconf/dynconf.h> with dynconf_version.h and the <dynconf.h> that
# includes it, dynconf.pc, the systemd unit, the sample configuration and
# the bash completion land where they belong; a program built against the
# installed files alone (pkg-config) with either include runs and reports
# the installed version.
. "$(dirname "$0")/../lib.sh"

root="$DC_TMP/root"
make -s -C "$DC_BUILDDIR" install DESTDIR="$root" >"$DC_TMP/install.log" 2>&1
tap_is $? 0 "make install DESTDIR=... succeeds"
prefix=$(sed -n 's/^prefix = //p' "$DC_BUILDDIR/Makefile")
sysconf=$(sed -n 's/^sysconfdir = //p' "$DC_BUILDDIR/Makefile" | sed "s|\${prefix}|$prefix|")
p="$root$prefix"
for f in sbin/dynconfd bin/dynconf-configs include/dynconf/dynconf.h \
  include/dynconf/dynconf_version.h include/dynconf.h \
  lib/pkgconfig/dynconf.pc lib/systemd/system/dynconfd.service \
  share/bash-completion/completions/dynconf-configs \
  share/man/man8/dynconfd.8 share/man/man1/dynconf-configs.1 \
  share/man/man3/libdynconf.3; do
  tap_ok "$([ -f "$p/$f" ] && echo 0 || echo 1)" "installed: \$prefix/$f"
done
tap_ok "$([ -f "$root$sysconf/dynconf/dynconfd.conf" ] && echo 0 || echo 1)" \
  "installed: \$sysconfdir/dynconf/dynconfd.conf"
so=$(ls "$p"/lib/libdynconf.so.* 2>/dev/null | head -1)
tap_ok "$([ -n "$so" ] && echo 0 || echo 1)" "installed: the shared library"
tap_ok "$([ -f "$p/lib/libdynconf-plugin.so" ] && echo 0 || echo 1)" \
  "installed: the librdkafka plugin, \$prefix/lib/libdynconf-plugin.so"

for page in dynconfd dynconf-configs libdynconf; do
  tap_like "$(MANPATH="$p/share/man" man -w "$page" 2>&1)" "$p/share/man/man./$page\." \
    "man $page finds the installed page"
done

ver=$(sed -n 's/^PACKAGE_VERSION = //p' "$DC_BUILDDIR/Makefile")
# A sanitizer build's library needs its runtime linked into the program.
san=$(sed -n 's/^SAN_CFLAGS = //p' "$DC_BUILDDIR/Makefile")
pc() { PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --define-variable=prefix="$p" "$@" dynconf; }
for inc in dynconf/dynconf.h dynconf.h; do
  printf '#include <%s>\n#include <stdio.h>\nint main(void) {\n  printf("%%s %%d\\n", dynconf_version_str(), dynconf_version() == DYNCONF_VERSION);\n  return 0;\n}\n' "$inc" >"$DC_TMP/v.c"
  # shellcheck disable=SC2046,SC2086 # pkg-config's and the flags' words
  cc $san -o "$DC_TMP/v" "$DC_TMP/v.c" $(pc --cflags --libs) >"$DC_TMP/cc.log" 2>&1
  tap_is $? 0 "a program with #include <$inc> builds against the installed files"
  tap_is "$(LD_LIBRARY_PATH="$p/lib" "$DC_TMP/v")" "$ver 1" \
    "  and runs: dynconf_version_str() $ver, dynconf_version() == DYNCONF_VERSION"
done
tap_done
