#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The layers point one way: common at the ground, the codec above it, the
# client above the codec, the agent and the broker on top and never
# including each other, the plugin above the agent (the broker's forwarder uses the client); nothing below the agent includes the public
# dynconf.h (the internal error table is common/errors.h).
. "$(dirname "$0")/../lib.sh"

lib="$DC_SRCDIR/lib"
# includes LAYER PATTERN: the "file: line" includes in LAYER matching PATTERN.
includes() {
  grep -rnE "^#include [\"<]($2)" "$lib/$1" | sed "s|$lib/||"
}

for layer in common codec client broker; do
  tap_is "$(includes "$layer" 'dynconf\.h')" "" "lib/$layer does not include dynconf.h"
done
tap_is "$(includes common '(\.\./)?(codec|client|broker|agent)/')" "" \
  "lib/common includes no other layer"
tap_is "$(includes codec '(\.\./)?(client|broker|agent)/')" "" \
  "lib/codec includes only lib/common"
tap_is "$(includes client '(\.\./)?(broker|agent)/')" "" \
  "lib/client includes neither the broker nor the agent"
tap_is "$(includes broker '(\.\./)?agent/')" "" \
  "lib/broker does not include the agent"
# The broker reaches other replicas (forwarding) only through lib/client.
tap_is "$(grep -rlE '^#include "client/' "$lib/broker" | sed "s|$lib/||" | sort | tr '\n' ' ')" \
  "broker/api/forwarder.h " "only the forwarder makes the broker a client"
tap_is "$(includes agent '(\.\./)?broker/')" "" "lib/agent does not include the broker"
# The agent speaks the protocol through lib/client: librdkafka is only what
# the application's own (and the managed) clients are built with.
tap_is "$(grep -rnE 'rd_kafka_(DescribeConfigs|AlterConfigs|AdminOptions|ConfigResource|queue_new)' "$lib/agent" | sed "s|$lib/||")" "" \
  "lib/agent calls no librdkafka admin API"
tap_is "$(grep -rln 'rd_kafka_new(' "$lib/agent" | sed "s|$lib/||" | sort | tr '\n' ' ')" \
  "agent/consumer.c agent/producer.c " \
  "only the managed producer and consumer make librdkafka handles"
tap_ok "$([ -n "$(includes agent '(\.\./)?client/')" ] && echo 0 || echo 1)" \
  "lib/agent reaches the server through lib/client"
# The plugin (lib/plugin) sits on top: nothing includes it, and it
# reaches the agent only through the public dynconf.h.
for layer in common codec client broker agent; do
  tap_is "$(includes "$layer" '(\.\./)?plugin/')" "" "lib/$layer does not include the plugin"
done
tap_is "$(includes plugin '(\.\./)?(broker|agent|client|codec)/')" "" \
  "lib/plugin includes no internals of the agent, the client or the broker"
tap_ok "$([ -n "$(includes plugin '(\.\./)?plugin/')" ] && echo 0 || echo 1)" \
  "the check sees lib/plugin's includes of its own folder"
# Inside the broker, folders include downward only: net, api, rollout,
# core, store, then config and auth at the ground (lib/broker/README.md).
tap_is "$(includes broker/config 'broker/(auth|store|core|rollout|api|net)/')" "" \
  "broker/config includes no other broker folder"
tap_is "$(includes broker/auth 'broker/(config|store|core|rollout|api|net)/')" "" \
  "broker/auth includes no other broker folder"
tap_is "$(includes broker/store 'broker/(core|rollout|api|net)/')" "" \
  "broker/store includes only config and auth"
tap_is "$(includes broker/core 'broker/(rollout|api|net)/')" "" \
  "broker/core includes nothing above it"
tap_is "$(includes broker/rollout 'broker/(api|net)/')" "" \
  "broker/rollout includes neither api nor net"
tap_is "$(includes broker/api 'broker/net/')" "" "broker/api does not include net"
tap_is "$(ls -p "$lib/broker" | grep -v / | grep -v '^README.md$')" "" \
  "every broker source lives in a subsystem's folder"
# The test must be able to fail: the patterns do find what exists.
tap_ok "$([ -n "$(includes codec '(\.\./)?common/')" ] && echo 0 || echo 1)" \
  "the check sees lib/codec's includes of lib/common"
tap_ok "$([ -n "$(includes broker/api 'broker/rollout/')" ] && echo 0 || echo 1)" \
  "the check sees broker/api's includes of broker/rollout"

tap_done
