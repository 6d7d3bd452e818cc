#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# End-to-end: kcat -L (librdkafka's ApiVersions + Metadata, all topics)
# against dynconfd lists exactly one broker, our node, at the advertised
# address, and names it the controller.
. "$(dirname "$0")/../lib.sh"

KCAT=${KCAT:-kcat}
command -v "$KCAT" >/dev/null || tap_bail "kcat not found (Debian package kcat)"

# kcat_meta ARGS...: runs kcat -L against $DC_PORT, output in $META, exit
# status in $META_RC. -m bounds each request; timeout bounds the whole run.
kcat_meta() {
  META=$(timeout 60 "$KCAT" -L -b "127.0.0.1:$DC_PORT" -m 10 "$@" 2>"$DC_TMP/kcat.err")
  META_RC=$?
  [ "$META_RC" -eq 0 ] || sed 's/^/# kcat: /' "$DC_TMP/kcat.err" | tail -n 5
}

# check_listing NODE HOSTPORT: the text listing names exactly one broker.
check_listing() {
  local node=$1 addr=$2 brokers
  kcat_meta
  tap_is "$META_RC" 0 "kcat -L exits 0"
  tap_like "$META" "^ *1 brokers:$" "kcat reports 1 broker"
  brokers=$(printf '%s\n' "$META" | grep -cE '^ +broker [0-9-]+ at ')
  tap_is "$brokers" 1 "exactly one broker line"
  tap_like "$META" "^ +broker $node at $addr \(controller\)$" \
    "broker $node at $addr, marked controller"
  tap_like "$META" "^ *0 topics:$" "no topics"
  # librdkafka names the answering broker by id only once it matched the
  # bootstrap address to a listed broker, i.e. when they are the same.
  if [ "$addr" = "127.0.0.1:$DC_PORT" ]; then
    tap_like "$META" "^Metadata for all topics \(from broker $node: " \
      "metadata came from broker $node"
  fi

  # The JSON form carries the controller id as a number.
  kcat_meta -J
  tap_is "$META_RC" 0 "kcat -L -J exits 0"
  tap_like "$META" "\"controllerid\":${node}[,}]" "JSON controllerid is $node"
  tap_like "$META" "\"brokers\":\[\{\"id\":$node,\"name\":\"$addr\"\}\]" \
    "JSON broker list is exactly [$node at $addr]"
}

# 1. A non-default node id, advertised address = the bound address.
dc_start_daemon "$DC_TMP/data" --node-id 7 || tap_bail "dynconfd did not start"
tap_ok 0 "dynconfd started on 127.0.0.1:$DC_PORT"
tap_is "$DC_HOST" 127.0.0.1 "listening line names the bound host"
check_listing 7 "127.0.0.1:$DC_PORT"
dc_stop_daemon
tap_is $? 0 "SIGTERM: exit status 0"

# 2. An explicit --advertise on a fixed port: Metadata must return it, not
# the bound address. (localhost resolves to loopback, so kcat can follow.)
PORT=$(dc_free_port) || tap_bail "no free port"
dc_start_daemon "$DC_TMP/data" --listen "127.0.0.1:$PORT" \
  --advertise "localhost:$PORT" --node-id 12 ||
  tap_bail "dynconfd did not start on fixed port $PORT"
tap_is "$DC_PORT" "$PORT" "listening on the requested fixed port"
check_listing 12 "localhost:$PORT"
dc_stop_daemon INT
tap_is $? 0 "SIGINT: exit status 0"

# 3. Default node id is 1.
dc_start_daemon "$DC_TMP/data" || tap_bail "dynconfd did not start"
kcat_meta
tap_like "$META" "^ +broker 1 at 127\.0\.0\.1:$DC_PORT \(controller\)$" \
  "default node id 1"
dc_stop_daemon
tap_is $? 0 "SIGTERM: exit status 0"

tap_done
