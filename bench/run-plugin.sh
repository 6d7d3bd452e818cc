#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What the librdkafka plugin costs a producer (bench/plugin_cost.c): the
# time of rd_kafka_new(), the threads and the resident memory, without the
# plugin, with dynconfd up, with its port closed, and with a server that
# never answers (the default dynconf.startup.timeout.ms, 10 s).
#   bench/run-plugin.sh BUILDDIR        (make bench-plugin)
set -e
B=$(cd "${1:-.}" && pwd)
plugin="$B/.libs/libdynconf-plugin.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-bench-plugin.XXXXXX")
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$B/dynconfd" --listen 127.0.0.1:0 --data-dir "$tmp" >"$tmp/out" 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$tmp/out" && break
  sleep 0.05
done
port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/out")
"$B/dynconf-configs" --bootstrap-server "127.0.0.1:$port" --entity-type clients \
  --entity-name bench-plugin --alter --add-config acks=1 >/dev/null
echo "# $(date -u +%FT%TZ) $(nproc) cores; bench/run-plugin.sh"
for mode in none up refused silent; do
  "$B/bench/plugin_cost" "$mode" "$plugin" "127.0.0.1:$port"
done
