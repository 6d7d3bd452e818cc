#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# CONFIGURATION.md is what the agent's property table generates now
# (tools/gen_configuration; `make configuration` rewrites it), and it
# names every property dynconf_conf_set() accepts.
. "$(dirname "$0")/../lib.sh"

gen="$DC_BUILDDIR/tools/gen_configuration"
[ -x "$gen" ] || tap_bail "$gen not built"
"$gen" >"$DC_TMP/CONFIGURATION.md"
tap_is $? 0 "the generator runs"
diff -u "$DC_SRCDIR/CONFIGURATION.md" "$DC_TMP/CONFIGURATION.md" >"$DC_TMP/diff"
tap_is $? 0 "CONFIGURATION.md is current (make configuration)"
[ -s "$DC_TMP/diff" ] && tap_diag "$(head -20 "$DC_TMP/diff")"
rows=$(grep -c '^| `dynconf\.' "$DC_SRCDIR/CONFIGURATION.md")
tap_ok "$([ "$rows" -ge 20 ] && echo 0 || echo 1)" "it lists the properties ($rows)"
tap_done
