#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the whole dynconf test suite: installs what is missing, builds, runs
# `make check` (every test under prove but the slow tier), `make
# check-slow` (fault and soak runs), the replicated store's long fault
# run (`make check-ha`), the store and managed clients on a real Apache
# Kafka cluster (`make check-kafka`), the Debian packages (built, installed, run and
# purged), the agent's tests on a newer librdkafka (2.15, built from
# source), `make check` again under ASan+UBSan, the agent's
# tests under TSan, a short libFuzzer run over request decoding and
# dispatch, and `make distcheck`.
#   FUZZ_SECONDS (default 60), SKIP_SANITIZERS=1, SKIP_TSAN=1, SKIP_DISTCHECK=1,
#   SKIP_DEBIAN=1, SKIP_RDKAFKA_NEWER=1, SKIP_KAFKA=1
set -eo pipefail
src=$(cd "$(dirname "$0")" && pwd)
"$src/scripts/install-deps.sh"

echo "== build and make check"
"$src/scripts/build.sh" "$src/build"
make -C "$src/build" check 2>&1 | tee "$src/build/check.out"
summary=$(grep -E '^Files=[0-9]+, Tests=[0-9]+' "$src/build/check.out" | tail -1)

echo "== the slow tier: fault and soak runs (make check-slow)"
make -C "$src/build" check-slow 2>&1 | tee "$src/build/check-slow.out"
slow=$(grep -E '^Files=[0-9]+, Tests=[0-9]+' "$src/build/check-slow.out" | tail -1)

echo "== the replicated store's long fault run (make check-ha)"
make -C "$src/build" check-ha

if [ "${SKIP_KAFKA:-0}" != 1 ]; then
  echo "== on a real Apache Kafka cluster (make check-kafka)"
  "$src/scripts/kafka.sh" fetch
  make -C "$src/build" check-kafka
fi

if [ "${SKIP_DEBIAN:-0}" != 1 ]; then
  echo "== Debian packages: build, lintian, install, run, purge"
  DC_SRCDIR="$src" DC_BUILDDIR="$src/build" prove --exec '' \
    "$src/tests/packaging/test_debian.sh"
fi

if [ "${SKIP_RDKAFKA_NEWER:-0}" != 1 ]; then
  echo "== the agent and managed clients on a newer librdkafka"
  "$src/scripts/build-librdkafka.sh" "$src/build/librdkafka-newer"
  DC_SRCDIR="$src" DC_BUILDDIR="$src/build" \
    DC_RDKAFKA_DIR="$src/build/librdkafka-newer" prove --exec '' \
    "$src/tests/clients/test_librdkafka_newer.sh"
fi

if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== make check under ASan+UBSan"
  "$src/scripts/build.sh" "$src/build-asan" --enable-sanitizers
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    make -C "$src/build-asan" check check-slow
fi

if [ "${SKIP_TSAN:-0}" != 1 ]; then
  echo "== the agent's tests under ThreadSanitizer"
  "$src/tests/tsan/run.sh" "$src/build-tsan"
fi

echo "== libFuzzer over request decoding and dispatch (${FUZZ_SECONDS:-60} s)"
"$src/tests/fuzz/run.sh" "${FUZZ_SECONDS:-60}"

if [ "${SKIP_DISTCHECK:-0}" != 1 ]; then
  echo "== make distcheck"
  if ! make -C "$src/build" distcheck >"$src/build/distcheck.log" 2>&1; then
    tail -50 "$src/build/distcheck.log"
    echo "make distcheck failed" >&2
    exit 1
  fi
  grep -E 'archives ready for distribution' "$src/build/distcheck.log" || true
fi

tests=$(echo "$summary" | sed -n 's/.*Tests=\([0-9]*\).*/\1/p')
slow_tests=$(echo "$slow" | sed -n 's/.*Tests=\([0-9]*\).*/\1/p')
echo "== all stages passed (make check: $summary; check-slow: $slow)"
echo "$((${tests:-0} + ${slow_tests:-0})) passed, 0 failed"
