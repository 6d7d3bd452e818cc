#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# libdynconf.so exports exactly the public API: every function
# include/dynconf.h declares, and none of the library's internals (the
# dc_* codec, client and agent functions, OpenSSL-facing helpers).
. "$(dirname "$0")/lib.sh"

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

tap_done
