#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The manual pages: dynconfd(8), dynconf-configs(1) and libdynconf(3)
# format without a groff warning, and say what the code has: every option
# of each program's --help, every key of the sample configuration, every
# function dynconf.h declares.
. "$(dirname "$0")/../lib.sh"

man="$DC_SRCDIR/man"
command -v groff >/dev/null || tap_bail "groff is needed (groff-base)"
for page in dynconfd.8 dynconf-configs.1 libdynconf.3; do
  out=$(groff -man -ww -z -t "$man/$page" 2>&1)
  tap_is "$out" "" "$page formats without a warning"
done
# covers PAGE PROGRAM: the --help options missing from PAGE.
covers() {
  local missing= o
  for o in $("$2" --help 2>&1 | grep -oE '\-\-[a-z-]+' | sort -u); do
    grep -qF -- "${o//-/\\-}" "$man/$1" || missing="$missing $o"
  done
  printf '%s' "$missing"
}
tap_is "$(covers dynconfd.8 "$DC_DYNCONFD")" "" "dynconfd.8 has every option of dynconfd --help"
tap_is "$(covers dynconf-configs.1 "$DC_CONFIGS")" "" \
  "dynconf-configs.1 has every option of dynconf-configs --help"
missing=
for k in $(sed -n 's/^#\{0,1\}\([a-z][a-z.]*\)=.*/\1/p' "$DC_SRCDIR/dist/dynconfd.conf"); do
  grep -qF "$k" "$man/dynconfd.8" || missing="$missing $k"
done
tap_is "$missing" "" "dynconfd.8 names every key of the sample configuration"
missing=
for f in $(grep -oE '\bdynconf_[a-z0-9_]+\(' "$DC_SRCDIR/include/dynconf.h" | tr -d '(' | sort -u); do
  grep -qF "$f" "$man/libdynconf.3" || missing="$missing $f"
done
tap_is "$missing" "" "libdynconf.3 documents every function of dynconf.h"
tap_done
