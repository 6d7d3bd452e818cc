#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# libdynconf.so exports exactly the public API: every function
# include/dynconf.h declares, and none of the library's internals (the
# dc_* codec, client and agent functions, OpenSSL-facing helpers); its
# version is configure.ac's everywhere; dynconf.pc links it statically.
# The plugin, libdynconf-plugin.so, exports conf_init alone.
. "$(dirname "$0")/../lib.sh"

so="$DC_BUILDDIR/.libs/libdynconf.so"
[ -f "$so" ] || tap_bail "no shared library at $so"

exported=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | sort -u)
declared=$(grep -oE '\bdynconf_[a-z0-9_]+\(' "$DC_SRCDIR/include/dynconf.h" |
  tr -d '(' | sort -u)

tap_ok "$([ -n "$declared" ] && echo 0 || echo 1)" \
  "dynconf.h declares functions ($(echo "$declared" | wc -l))"

extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
tap_is "$extra" "" "nothing but the declared API is exported"
[ -z "$extra" ] || tap_diag "  $(echo "$extra" | wc -l) more, e.g. $(echo "$extra" | head -5 | tr '\n' ' ')"

missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
tap_is "$missing" "" "every function dynconf.h declares is exported"

# The ABI: the exported symbols are the checked-in list
# (abi/libdynconf.symbols); adding or removing one is a deliberate change
# of that file, as curl's symbols-in-versions.
abi=$(comm -3 <(echo "$exported") <(sort -u "$DC_SRCDIR/abi/libdynconf.symbols"))
tap_is "$abi" "" "the exported symbols are abi/libdynconf.symbols"
[ -z "$abi" ] || tap_diag "  differences (left: exported only, right: listed only): $(echo "$abi" | tr '\n' ' ')"

# The librdkafka plugin exports conf_init alone, the entry point
# librdkafka's plugin loader looks up, and carries the agent inside: it
# does not need libdynconf.so.
plugin="$DC_BUILDDIR/.libs/libdynconf-plugin.so"
tap_is "$(nm -D --defined-only "$plugin" | awk 'NF == 3 { print $3 }' | sort -u)" \
  "conf_init" "libdynconf-plugin.so exports conf_init only"
tap_is "$(readelf -d "$plugin" | grep NEEDED | grep -c 'libdynconf')" 0 \
  "  and does not need libdynconf.so"

# One version: configure.ac's, in the header, the library and dynconf.pc.
ver=$(sed -n 's/^PACKAGE_VERSION = //p' "$DC_BUILDDIR/Makefile")
tap_like "$(cat "$DC_BUILDDIR/include/dynconf_version.h")" \
  "DYNCONF_VERSION_STR \"$ver\"" "dynconf_version.h says $ver, as configure"
# shellcheck disable=SC2086 # the version's parts
hex=$(printf '0x%02x%02x%02x' ${ver//./ })
tap_like "$(cat "$DC_BUILDDIR/include/dynconf_version.h")" \
  "DYNCONF_VERSION $hex" "  and DYNCONF_VERSION $hex"
tap_is "$(PKG_CONFIG_PATH="$DC_BUILDDIR" pkg-config --modversion dynconf)" \
  "$ver" "dynconf.pc says $ver"
# Static linking finds what the library uses inside.
static=$(PKG_CONFIG_PATH="$DC_BUILDDIR" pkg-config --static --libs dynconf)
for lib in -ldynconf -lrdkafka -lssl -lcrypto -lpthread; do
  tap_like "$static" "(^| )$lib( |$)" "pkg-config --static --libs dynconf has $lib"
done

tap_done
