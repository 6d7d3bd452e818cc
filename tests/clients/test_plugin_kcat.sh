#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The librdkafka plugin in Debian's kcat, with no code of ours: -X
# plugin.library.paths=... and -X dynconf.* properties. kcat produces to
# librdkafka's mock cluster (test.mock.num.brokers=1) and its debug=conf
# dump, which librdkafka prints at the end of rd_kafka_new(), after the
# plugin's on_new, shows the acks the operator set on dynconfd in the
# client's default topic configuration. kcat -P then creates its topic
# with a topic configuration of its own (rd_kafka_topic_new with a conf),
# which does not inherit the default one: its messages keep acks=all, as
# the protocol debug lines show (a ProduceResponse comes back).
. "$(dirname "$0")/../lib.sh"

KCAT=${KCAT:-kcat}
command -v "$KCAT" >/dev/null || tap_bail "kcat not found (Debian package kcat)"
libs=$(cd "$DC_BUILDDIR/.libs" 2>/dev/null && pwd)
plugin="$libs/libdynconf-plugin.so"
[ -f "$plugin" ] || tap_bail "no plugin at $plugin"

# A sanitizer build's plugin needs its runtimes loaded first in kcat,
# which is not built with them.
preload=$(ldd "$plugin" | awk '/lib(a|ub)san\.so/ { print $3 }' | tr '\n' ' ')
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

# produce OUT ARGS...: one message from kcat -P to the mock cluster, with
# ARGS; stderr in $DC_TMP/OUT.err, exit status in $RC.
produce() {
  local out=$1
  shift
  echo hello | LD_PRELOAD="$preload" timeout 60 "$KCAT" -b 127.0.0.1:1 \
    -X test.mock.num.brokers=1 -X debug=conf,protocol -X client.id=kc-1 "$@" \
    -P -t plugin-topic >"$DC_TMP/$out.out" 2>"$DC_TMP/$out.err"
  RC=$?
}

# acks_of OUT: request.required.acks in the client's default topic
# configuration, as librdkafka's debug=conf dump says it ("" when unset:
# librdkafka's default, all).
acks_of() {
  sed -n '/Default topic configuration:/,/configuration/s/.*request\.required\.acks = \(.*\)$/\1/p' \
    "$DC_TMP/$1.err" | head -1
}
# global_of OUT KEY: KEY in the dump of the client's (global)
# configuration.
global_of() {
  sed -n "/Client configuration:/,/configuration:/s/.*]: *$2 = \(.*\)\$/\1/p" \
    "$DC_TMP/$1.err" | head -1
}

dc_start_daemon "$DC_TMP/data" || tap_bail "dynconfd did not start"
"$DC_CONFIGS" --bootstrap-server "127.0.0.1:$DC_PORT" --entity-type clients \
  --entity-name kc-1 --alter --add-config acks=0,batch.num.messages=777 >/dev/null
tap_is $? 0 "acks=0 and batch.num.messages=777 set for client.id kc-1 on dynconfd"

# Without the plugin: librdkafka's defaults, kcat's -X.
produce plain -X batch.num.messages=5000
tap_is "$RC" 0 "kcat without the plugin produces"
tap_is "$(acks_of plain)" "" "  default topic configuration: acks unset (all)"
tap_is "$(global_of plain batch.num.messages)" 5000 "  batch.num.messages=5000 from -X"

# With the plugin by its full path.
produce path -X "plugin.library.paths=$plugin" \
  -X "dynconf.bootstrap.servers=127.0.0.1:$DC_PORT"
tap_is "$RC" 0 "kcat with the plugin (full path) produces"
tap_is "$(acks_of path)" 0 "  default topic configuration: the operator's acks=0"
tap_like "$(cat "$DC_TMP/path.err")" \
  '^%6\|[0-9.]+\|DYNCONF\|kc-1#producer\| acks=0 from client-override applied$' \
  "  and the plugin logs it in librdkafka's format"
# kcat's topic has a configuration of its own, which the default topic
# configuration does not reach (a limit of topic-level keys).
tap_like "$(cat "$DC_TMP/path.err")" 'Received ProduceResponse' \
  "  kcat's own topic still waits for acks: a ProduceResponse comes back"

# By its name, found on the library path as dlopen() finds it once
# installed; kcat's -X batch.num.messages, set before the plugin, gives
# way to the operator's.
LD_LIBRARY_PATH="$libs" produce name -X batch.num.messages=5000 \
  -X plugin.library.paths=libdynconf-plugin \
  -X "dynconf.bootstrap.servers=127.0.0.1:$DC_PORT" \
  -X dynconf.allow.keys=acks,batch.num.messages
tap_is "$RC" 0 "kcat with plugin.library.paths=libdynconf-plugin produces"
tap_is "$(acks_of name)" 0 "  with the operator's acks=0"
tap_is "$(global_of name batch.num.messages)" 777 \
  "  and the operator's batch.num.messages=777 beats kcat's -X 5000"

# A bad dynconf.* value is refused when kcat sets it.
produce bad -X "plugin.library.paths=$plugin" \
  -X dynconf.startup.timeout.ms=soon
tap_ok "$([ "$RC" != 0 ] && echo 0 || echo 1)" \
  "a bad dynconf.* value: kcat refuses to start (exit $RC)"
tap_like "$(cat "$DC_TMP/bad.err")" 'dynconf\.startup\.timeout\.ms must be an integer' \
  "  saying why"

# dynconfd down: fail-open, the application's values, at once.
dc_stop_daemon >/dev/null
start=$(date +%s%N)
produce down -X batch.num.messages=5000 -X "plugin.library.paths=$plugin" \
  -X "dynconf.bootstrap.servers=127.0.0.1:$DC_PORT" \
  -X dynconf.allow.keys=acks,batch.num.messages \
  -X dynconf.startup.timeout.ms=2000
ms=$((($(date +%s%N) - start) / 1000000))
tap_is "$RC" 0 "dynconfd down: kcat still produces (fail-open)"
tap_is "$(acks_of down)" "" "  acks unset"
tap_is "$(global_of down batch.num.messages)" 5000 "  batch.num.messages=5000 from -X"
tap_ok "$([ "$ms" -lt 10000 ] && echo 0 || echo 1)" "  in $ms ms"
tap_like "$(cat "$DC_TMP/down.err")" 'DYNCONF\|kc-1#producer\| no configuration from the config server' \
  "  and the plugin says why"
tap_done
