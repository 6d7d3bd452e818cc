#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# examples/mock_cluster --control: a mock cluster in its own process that a
# test drives through stdin. Every command answers one line; "down B"
# really closes broker B's port and "up B" opens the same port again; bad
# commands are errors that change nothing; end of input stops the cluster.
. "$(dirname "$0")/../lib.sh"

MOCK="$DC_BUILDDIR/examples/mock_cluster"
[ -x "$MOCK" ] || tap_bail "$MOCK not built"

coproc MC { exec "$MOCK" --brokers 3 --topic store --partitions 1 --control 2>/dev/null; }
read -r -t 10 first <&"${MC[0]}"
tap_like "$first" "^bootstrap 127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$" \
  "prints three brokers' bootstrap list"
IFS=, read -r -a addrs <<<"${first#bootstrap }"

# cmd LINE: sends one command, prints its reply line.
cmd() {
  printf '%s\n' "$1" >&"${MC[1]}"
  local r
  read -r -t 10 r <&"${MC[0]}" || r="(no reply)"
  printf '%s' "$r"
}

# accepts HOST:PORT: 0 when a TCP connection is accepted.
accepts() {
  local hp=$1
  (exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null
}

broker2=${addrs[1]}
accepts "$broker2"
tap_is $? 0 "broker 2 ($broker2) accepts connections"
tap_is "$(cmd 'down 2')" ok "down 2: ok"
accepts "$broker2"
tap_is $? 1 "broker 2 refuses connections while down"
tap_is "$(cmd 'up 2')" ok "up 2: ok"
accepts "$broker2"
tap_is $? 0 "broker 2 accepts again on the same port"
tap_is "$(cmd 'rtt 1 5')" ok "rtt 1 5: ok"
tap_is "$(cmd 'leader store 0 3')" ok "leader store 0 3: ok"
tap_is "$(cmd 'coord group g 2')" ok "coord group g 2: ok"
tap_is "$(cmd 'topic other 2')" ok "topic other 2: ok"
tap_is "$(cmd 'topic other 2')" "error TOPIC_ALREADY_EXISTS" \
  "creating it again says why"
tap_is "$(cmd 'err 0 NOT_ENOUGH_REPLICAS')" ok "err 0 NOT_ENOUGH_REPLICAS: ok"
tap_is "$(cmd 'err 0 NO_SUCH_ERROR')" "error unknown error name NO_SUCH_ERROR" \
  "an unknown error name is refused"
tap_is "$(cmd 'down 99')" "error unknown command or arguments: down" \
  "a broker out of range is refused"
tap_is "$(cmd 'explode')" "error unknown command or arguments: explode" \
  "an unknown command is refused"
accepts "${addrs[0]}"
tap_is $? 0 "the cluster still serves after bad commands"

pid=$MC_PID
exec {MC[1]}>&- # end of input
for ((i = 0; i < 100; i++)); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -0 "$pid" 2>/dev/null
tap_is $? 1 "end of input stops the cluster"
wait "$pid" 2>/dev/null
tap_is $? 0 "  with exit status 0"

tap_done
