#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The short soak run for `make check-slow`: tests/soak.sh for 60 s (about 75-100 s
# in all with start-up and the consumer catching up). Same checks as the
# long run (`tests/soak.sh 3600`); see tests/soak.sh for what they mean.
# A watchdog turns a hang into a failure instead of a stuck test suite.
secs=${SOAK_SECONDS:-60}
exec timeout --kill-after=15 $((secs * 2 + 180)) \
  "$(cd "$(dirname "$0")/.." && pwd)/soak.sh" "$secs"
