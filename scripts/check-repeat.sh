#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs the given tests N times over (make check-repeat N=5 passes make
# check's list) and names every test that failed in any round, with how
# many rounds it failed and the failing checks of each, so a flake that
# shows once in twenty runs is seen. Exit 1 when any round failed.
#   scripts/check-repeat.sh N TEST...
set -u
n=$1
shift
prove=${PROVE:-prove}
logs=$(mktemp -d "${TMPDIR:-/tmp}/check-repeat.XXXXXX")
i=1
while [ "$i" -le "$n" ]; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  $prove --exec '' ${PROVE_FLAGS:-} "$@" >"$logs/round-$i.log" 2>&1
  rc=$?
  echo "check-repeat: round $i of $n: $([ $rc = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
  i=$((i + 1))
done
# prove's summary names each failed file ("NAME (Wstat: ...)") and its
# failed checks on the next line.
failed=$(cat "$logs"/round-*.log | sed -n 's/^\([^ ]*\) *(Wstat: .*/\1/p' | sort | uniq -c | sort -rn)
if [ -z "$failed" ]; then
  echo "check-repeat: $n rounds, no test failed (logs in $logs)"
  exit 0
fi
echo "check-repeat: tests that failed in some of $n rounds (rounds, test):"
echo "$failed"
grep -h "^not ok" "$logs"/round-*.log | sort | uniq -c | sort -rn | sed 's/^/  /'
echo "check-repeat: logs in $logs"
exit 1
