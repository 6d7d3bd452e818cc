#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The bash completion of dynconf-configs (dist/dynconf-configs.bash-
# completion): it offers every option --help lists and nothing else, the
# entity types after --entity-type, and exactly the schema's config names
# after --add-config.
. "$(dirname "$0")/../lib.sh"

# shellcheck disable=SC1091 # the completion file under test
. "$DC_SRCDIR/dist/dynconf-configs.bash-completion"
complete_words() { # complete_words WORD...: what completing the last offers
  COMP_WORDS=(dynconf-configs "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _dynconf_configs
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
compopt() { :; } # only valid inside a real completion

help_opts=$("$DC_CONFIGS" --help 2>&1 | grep -oE '\-\-[a-z-]+' | sort -u | tr '\n' ' ')
tap_is "$(complete_words --)" "$help_opts" "every option of --help, and no other"
tap_is "$(complete_words --entity-t)" "--entity-type " "a prefix completes"
tap_is "$(complete_words --entity-type "")" "brokers clients users " \
  "the entity types after --entity-type"
schema=$(grep -oE '^\s+\{"[a-z.]+", DC_TYPE' "$DC_SRCDIR/lib/common/schema.c" |
  sed 's/.*{"\(.*\)",.*/\1=/' | sort | tr '\n' ' ')
tap_is "$(complete_words --add-config "")" "$schema" \
  "after --add-config: exactly the schema's config names"
tap_is "$(complete_words --add-config li)" "linger.ms= " "  completed by prefix"
tap_done
