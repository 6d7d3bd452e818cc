#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the tests where threads meet (the agent's, and dynconfd replicas
# with their forwarding thread) under ThreadSanitizer.
#   tests/tsan/run.sh BUILDDIR
# Debian's librdkafka uses glibc's C11 threads, which gcc 12's TSan does not
# intercept; c11shim.so (preloaded) routes them through pthreads so TSan
# sees librdkafka's threads and locks too.
set -eo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: tests/tsan/run.sh BUILDDIR}
"$src/scripts/build.sh" "$build" --enable-tsan
gcc -shared -fPIC -O1 -o "$build/c11shim.so" "$src/tests/tsan/c11shim.c" -lpthread
tests="tests/test_agent_e2e tests/test_agent_consumer tests/test_agent_failures tests/test_agent_hostile tests/test_agent_wire tests/test_agent_watch tests/test_agent_security"
make -C "$build" $tests >/dev/null
cd "$build"
LD_PRELOAD="$build/c11shim.so" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$src/tests/tsan/suppressions.txt" \
  DC_SRCDIR="$src" DC_BUILDDIR="$build" prove --exec '' $tests
# dynconfd's own threads: the replicated store's librdkafka handles and the
# forwarding thread, in three replicas on the mock cluster (with
# suppressions-store.txt: librdkafka's own accesses are not judged).
make -C "$build" dynconfd dynconf-configs examples/mock_cluster >/dev/null
cat "$src/tests/tsan/suppressions.txt" "$src/tests/tsan/suppressions-store.txt" \
  >"$build/tsan-store.supp"
LD_PRELOAD="$build/c11shim.so" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$build/tsan-store.supp" \
  DC_SRCDIR="$src" DC_BUILDDIR="$build" prove --exec '' \
  "$src/tests/e2e/test_kafka_replicas.sh"
