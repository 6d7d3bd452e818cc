#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# shellcheck disable=SC2016 # backquotes in quotes here are Markdown's
# The documentation: README.md stays a page a newcomer reads (at most 300
# lines, its first code block the two commands: ./demo.sh, then
# ./run-tests.sh, which the CI runs), every relative link and #anchor in
# README.md and docs/*.md resolves (GitHub's anchors: the heading
# lowercased, punctuation dropped, spaces made '-'), and every guide in
# docs/ is linked from README.md. Each check is first run on a small tree
# made to break it, so a check that can no longer fail is seen.
. "$(dirname "$0")/../lib.sh"

export LC_ALL=C

# md_text FILE: FILE without its fenced code blocks and inline code spans,
# each line prefixed "LINENO:".
md_text() {
  awk '/^ *(```|~~~)/ { fence = !fence; next }
       !fence { gsub(/`[^`]*`/, ""); print NR ":" $0 }' "$1"
}

# anchors FILE: the #anchors of FILE's headings, one a line, as GitHub
# makes them (code spans keep their text; a repeated one gets -1, -2 ...).
anchors() {
  awk '/^ *(```|~~~)/ { fence = !fence; next } !fence' "$1" |
    sed -n 's/^#\{1,6\} \{1,\}//p' |
    tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g' |
    awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}

# links_of FILE: every link target of FILE outside code, as "LINE:TARGET".
links_of() {
  md_text "$1" | grep -oE '^[0-9]+:|\]\([^) ]+\)' |
    awk '/^[0-9]+:$/ { n = $0; next } { print n substr($0, 3, length($0) - 3) }'
}

# broken_links ROOT FILE...: each relative link of the FILEs (paths under
# ROOT) whose file or #anchor does not exist, as "FILE:LINE: TARGET".
broken_links() {
  local root=$1 f line target path anchor dir resolved
  shift
  for f in "$@"; do
    dir=$(dirname "$f")
    while IFS= read -r line; do
      target=${line#*:}
      line=${line%%:*}
      case $target in
      *://* | mailto:*) continue ;;
      esac
      path=${target%%#*}
      anchor=
      [ "$path" != "$target" ] && anchor=${target#*#}
      if [ -z "$path" ]; then
        resolved="$root/$f"
      else
        resolved="$root/$dir/$path"
      fi
      if [ ! -e "$resolved" ]; then
        echo "$f:$line: $target (no such file)"
      elif [ -n "$anchor" ] &&
        ! anchors "$resolved" | grep -qxF -- "$anchor"; then
        echo "$f:$line: $target (no such anchor)"
      fi
    done < <(links_of "$root/$f")
  done
}

# readme_too_long ROOT: prints the line count when README.md has more
# than 300 lines.
readme_too_long() {
  local n
  n=$(wc -l <"$1/README.md")
  [ "$n" -le 300 ] || echo "README.md has $n lines (at most 300)"
}

# first_block_wrong ROOT: what is wrong with README.md's first code block
# and the sentence before it (the two commands, in this order, with their
# numbers; installing what is missing).
first_block_wrong() {
  local block
  block=$(awk '/^```/ { if (open) exit; open = 1; next } open' "$1/README.md")
  printf '%s\n' "$block" | sed -n 1p | grep -qE '^\./demo\.sh +# 1\. the demo' ||
    echo "line 1 of the first code block is not ./demo.sh (# 1. the demo)"
  printf '%s\n' "$block" | sed -n 2p | grep -qE '^\./run-tests\.sh +# 2\. the whole test suite' ||
    echo "line 2 of the first code block is not ./run-tests.sh (# 2. the whole test suite)"
  [ "$(printf '%s\n' "$block" | wc -l)" -eq 2 ] ||
    echo "the first code block has more than the two commands"
  awk '/^```/ { exit } { print }' "$1/README.md" | grep -q 'installs what it needs' ||
    echo "the text before the first code block does not say each command installs what it needs"
}

# unlinked_guides ROOT: each docs/*.md that README.md does not link to.
unlinked_guides() {
  local g links
  links=$(md_text "$1/README.md" | grep -oE '\]\(docs/[^)#]+' | cut -c3-)
  for g in "$1"/docs/*.md; do
    g=docs/${g##*/}
    printf '%s\n' "$links" | grep -qxF "$g" || echo "$g"
  done
}

# ---- each check fails on a tree made to break it ------------------------

bad="$DC_TMP/bad"
mkdir -p "$bad/docs"
{
  echo '# Title'
  echo 'Each command installs nothing.'
  echo '```sh'
  echo './run-tests.sh     # 2. the whole test suite'
  echo './demo.sh          # 1. the demo'
  echo '```'
  echo '[ok](docs/a.md#a-heading-with-code) [gone](docs/none.md)'
  echo '[no anchor](docs/a.md#nowhere) [self](#title) [web](https://example.com/x)'
  echo '`[in code](docs/none.md)`'
  for i in $(seq 300); do echo "line $i"; done
} >"$bad/README.md"
printf '# A\n\n## A heading, with `code`!\n\n[up](../README.md#title) [bad](../README.md#nope)\n' \
  >"$bad/docs/a.md"
printf '# B\n\n```\n[in a fence](nowhere.md)\n```\n' >"$bad/docs/b.md"

tap_like "$(readme_too_long "$bad")" 'README.md has 309 lines' \
  "the length check fails on a README of 309 lines"
got=$(first_block_wrong "$bad")
tap_like "$got" 'line 1 .* not \./demo\.sh' "the first-block check fails on commands in the wrong order"
tap_like "$got" 'installs what it needs' "the first-block check fails without the words on installing"
got=$(cd "$bad" && broken_links "$bad" README.md docs/a.md docs/b.md)
tap_is "$got" "README.md:7: docs/none.md (no such file)
README.md:8: docs/a.md#nowhere (no such anchor)
docs/a.md:5: ../README.md#nope (no such anchor)" \
  "the link check finds a missing file and missing anchors, and only those"
tap_is "$(unlinked_guides "$bad")" "docs/b.md" "the guide check finds a guide README.md does not link"

# ---- the real documentation ---------------------------------------------

src=$DC_SRCDIR
[ -f "$src/README.md" ] || tap_bail "no README.md in $src"
tap_is "$(readme_too_long "$src")" "" "README.md has at most 300 lines"
tap_is "$(first_block_wrong "$src")" "" \
  "README.md's first code block is ./demo.sh then ./run-tests.sh, each installing what it needs"
docs=$(cd "$src" && ls docs/*.md)
tap_ok "$([ -n "$docs" ] && echo 0 || echo 1)" "docs/ holds guides ($(echo "$docs" | wc -l))"
# shellcheck disable=SC2086 # the guides' names have no blanks
n=$(cd "$src" && for f in README.md $docs; do links_of "$f"; done | grep -vc '://')
# shellcheck disable=SC2086
tap_is "$(cd "$src" && broken_links "$src" README.md $docs)" "" \
  "every relative link and #anchor in README.md and docs/*.md resolves ($n links)"
tap_is "$(unlinked_guides "$src")" "" "README.md links every guide in docs/"
tap_done
