#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The Python package (python/): installed with pip into a venv under the
# build directory ($DC_BUILDDIR/pyenv: confluent-kafka from PyPI, pinned,
# whose wheel bundles its own librdkafka), then its pytest tests against
# dynconfd and a one-node Apache Kafka cluster they start themselves; one
# TAP line per pytest outcome. Then `demo.sh --python` (the demo with the
# Python example producer and consumer, on the mock cluster) must report
# lost 0.
. "$(dirname "$0")/../lib.sh"

CK_VERSION=2.16.1
for b in dynconfd dynconf-configs .libs/libdynconf.so.0 .libs/libdynconf-plugin.so \
  examples/mock_cluster; do
  [ -e "$DC_BUILDDIR/$b" ] || tap_bail "$DC_BUILDDIR/$b not built (make builds it)"
done
python3 -c 'import venv, ensurepip' 2>/dev/null ||
  tap_bail "python3 -m venv does not work (Debian package python3-venv)"
started=$SECONDS

# ---- the venv and the package --------------------------------------------

venv=$DC_BUILDDIR/pyenv
if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv "$venv" >"$DC_TMP/venv.out" 2>&1 ||
    { sed 's/^/# /' "$DC_TMP/venv.out"; tap_bail "python3 -m venv failed"; }
fi
"$venv/bin/pip" install -q --disable-pip-version-check \
  "confluent-kafka==$CK_VERSION" pytest >"$DC_TMP/pip.out" 2>&1
tap_ok $? "pip install confluent-kafka==$CK_VERSION pytest" ||
  tail -n 20 "$DC_TMP/pip.out" | sed 's/^/# /'
# A copy: pip builds in the tree it is given (the source tree may be
# read-only, as in make distcheck).
cp -R "$DC_SRCDIR/python" "$DC_TMP/python"
chmod -R u+w "$DC_TMP/python"
"$venv/bin/pip" install -q --disable-pip-version-check "$DC_TMP/python" \
  >"$DC_TMP/pip2.out" 2>&1
tap_ok $? "pip install ./python" ||
  { tail -n 20 "$DC_TMP/pip2.out" | sed 's/^/# /'; tap_done; }

# ---- pytest ---------------------------------------------------------------

out=$DC_TMP/pytest.out
(cd "$DC_TMP" &&
  PYTHONDONTWRITEBYTECODE=1 DC_BUILDDIR=$DC_BUILDDIR DC_SRCDIR=$DC_SRCDIR \
    DYNCONF_LIBRARY=$DC_BUILDDIR/.libs/libdynconf.so.0 \
    timeout 600 "$venv/bin/python" -m pytest -rA -p no:cacheprovider --rootdir "$DC_SRCDIR/python" \
    "$DC_SRCDIR/python/tests" >"$out" 2>&1)
rc=$?
n=0
while read -r outcome name; do
  n=$((n + 1))
  case $outcome in
    PASSED) tap_ok 0 "pytest: $name" ;;
    *) tap_ok 1 "pytest: $name ($outcome)" ;;
  esac
done < <(sed -n 's/^\(PASSED\|FAILED\|ERROR\|SKIPPED\|XFAIL\|XPASS\) \([^ ]*\).*/\1 \2/p' "$out")
[ "$rc" -eq 0 ] && [ "$n" -ge 10 ]
tap_ok $? "pytest exits 0 after $n outcome(s) (exit $rc)" ||
  sed 's/^/# /' "$out"
# The measured numbers (the tests print them).
grep -E '^(producer|consumer): ' "$out" | sed 's/^/# /'
tap_diag "$(tail -n 1 "$out")"

# ---- the demo with the Python clients -------------------------------------

demo=$DC_TMP/demo.out
TMPDIR=$DC_TMP BUILD_DIR=$DC_BUILDDIR DEMO_NO_BUILD=1 \
  timeout 300 "$DC_SRCDIR/demo.sh" --python >"$demo" 2>&1 </dev/null
rc=$?
tap_is "$rc" 0 "demo.sh --python exits 0" || tail -n 40 "$demo" | sed 's/^/# /'
text=$(cat "$demo")
tap_like "$text" \
  "^messages: produced ([1-9][0-9]*), consumed [0-9]+ \(\1 distinct\), lost 0, duplicated [0-9]+, out of order 0$" \
  "demo.sh --python: every message produced consumed, lost 0"
tap_like "$text" "^  \[producer orders-p\] applied acks: .* -> 1 .*switched" \
  "demo.sh --python: the Python producer swapped its client for acks=1"
tap_like "$text" "^  \[consumer orders-c\] applied heartbeat\.interval\.ms: 2000 -> 1000 \(client override\); applied session\.timeout\.ms: 6000 -> 7000 \(client override\); rebuilt consumer" \
  "demo.sh --python: the Python consumer rebuilt for the session timeout"
grep -E '^messages: ' "$demo" | sed 's/^/# demo: /'

tap_diag "test_python: $((SECONDS - started)) s"
tap_done
