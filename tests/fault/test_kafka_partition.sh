#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A network partition of one replica of the store on a REAL Kafka cluster
# (scripts/kafka.sh, 3 KRaft nodes), judged by histories
# (tests/kstore_history.py, tests/kafka_faults_lib.sh). Node 1 runs in its
# own network namespace, joined to the host by a veth pair made here; the
# brokers and the other two replicas listen on the host's end. A partition
# drops, inside the namespace (nftables), every packet to or from the
# brokers' ports, silently as a failed link does, while the clients and
# the other replicas still reach node 1:
#   p1. node 1 is the writer: another replica takes over within the
#       session; an alter sent to node 1 meanwhile is answered within
#       --store-timeout-ms, refused or of unknown outcome, never
#       acknowledged; healed, node 1 follows the new writer;
#   p2. node 1 is a follower: the writer keeps writing, undisturbed
#       before and after the heal (no new epoch); a client that has read
#       at the writer's position is not answered by node 1 with an older
#       state; healed, node 1 catches up.
# After each round: no acknowledged alter lost, no refused alter applied,
# no stale read, every replica converges (state and history topic).
# Needs root (ip netns, nftables): the test says so and fails otherwise.
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v kcat >/dev/null || tap_bail "kcat is needed (apt-get install kcat)"
command -v python3 >/dev/null || tap_bail "python3 is needed"
command -v ip >/dev/null || tap_bail "ip is needed (iproute2)"
command -v nft >/dev/null || tap_bail "nft is needed (apt-get install nftables)"
[ "$(id -u)" = 0 ] || tap_bail "a network namespace needs root"

T_START=$SECONDS
SESSION_MS=3000
STORE_TIMEOUT_MS=10000

# ---- the network: a namespace for node 1, a veth pair to the host ------------

NS=dcpart$$
VH=dcph$$ # the host's end
VN=dcpn$$ # the namespace's end
NET=10.213.$(($$ % 250))
HOST_IP=$NET.1
NS_IP=$NET.2
net_down() {
  ip link del "$VH" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  return 0
}
KF_ON_EXIT=net_down
. "$DC_SRCDIR/tests/kafka_faults_lib.sh"

in_ns() { ip netns exec "$NS" "$@"; }
ip netns add "$NS" && ip link add "$VH" type veth peer name "$VN" &&
  ip link set "$VN" netns "$NS" &&
  ip addr add "$HOST_IP/24" dev "$VH" && ip link set "$VH" up &&
  in_ns ip addr add "$NS_IP/24" dev "$VN" && in_ns ip link set "$VN" up &&
  in_ns ip link set lo up ||
  tap_bail "cannot make the network namespace $NS and its veth pair"

# ---- the cluster and the replicas ---------------------------------------------

DC_KAFKA_HOST=$HOST_IP dc_kafka_start 3
tap_diag "Kafka cluster up at $KBS in $((SECONDS - T_START)) s"
tap_like "$KBS" "^$HOST_IP:" "the brokers listen on the host's end of the veth pair"
kf_store_args
STORE+=(--store-timeout-ms "$STORE_TIMEOUT_MS")
KPORTS=$(tr ',' '\n' <<<"$KBS" | sed 's/.*://' | paste -sd, -)
KF_HOST[1]=$NS_IP KF_WRAP[1]="ip netns exec $NS"
KF_HOST[2]=$HOST_IP KF_HOST[3]=$HOST_IP

# cut / heal: node 1's namespace drops every packet to or from the brokers.
cut() {
  in_ns nft -f - <<EOF
table inet dcpart {
  chain out { type filter hook output priority 0; ip daddr $HOST_IP tcp dport { $KPORTS } drop; }
  chain in { type filter hook input priority 0; ip saddr $HOST_IP tcp sport { $KPORTS } drop; }
}
EOF
}
heal() { in_ns nft delete table inet dcpart; }

# The first replica, alone, creates the topics and claims the log.
start_replica 1 || tap_bail "node 1 did not start in its namespace"
for ((i = 0; i < 300; i++)); do
  [ "$(kh controller --replica "$(addr 1)" 2>/dev/null)" = 1 ] && break
  sleep 0.1
done
start_replica 2 || tap_bail "replica 2 did not start"
start_replica 3 || tap_bail "replica 3 did not start"
W=$(await_writer "" 30)
tap_is "$W" 1 "node 1, in its own network namespace, writes the log; every replica says so"
start_workload
kh wait-acks --log "$LOG" --n 10 --timeout-s 30 >/dev/null
tap_ok $? "the workload's alters are acknowledged on every replica, node 1 across the veth pair"

# op_ms JSON: the operation's duration in ms.
op_ms() { python3 -c 'import json, sys; r = json.loads(sys.stdin.read()); print(round((r["complete"] - r["invoke"]) * 1000))' <<<"$1"; }
field() { sed -n "s/.*\"$1\": \"*\\([^,\"}]*\\).*/\\1/p" <<<"$2"; }

# ---- p1: the writer cut off ------------------------------------------------------

mark_logs
kh event --log "$LOG" --name round-p1
kh wait-acks --log "$LOG" --n 3 --after round-p1 --timeout-s 10 >/dev/null
kh event --log "$LOG" --name cut-p1 node=1
cut || tap_bail "nft could not cut node 1 off"
fo=$(kh probe --log "$LOG" --replicas "$(addr 2),$(addr 3)" --since cut-p1 \
  --timeout-s 30 --op-timeout-ms 2000)
tap_ok $? "p1: another replica takes alters once the writer is cut off (failover $fo ms)" &&
  FAILOVER+=("$fo")
took=$(await_log "writing _dynconf_configs as node [23], epoch" 30)
tap_ok $? "p1: another replica writes: $took"
# An alter sent to the cut-off writer: answered within the store timeout.
next_qv
o=$(kh op --log "$LOG" --client p1-direct --replica "$(addr 1)" \
  --entity p1-direct --value "$QV" --timeout-ms 25000)
ms=$(op_ms "$o") oc=$(field outcome "$o") code=$(field code "$o")
tap_ok "$([ "$ms" -le $((STORE_TIMEOUT_MS + 2000)) ] && echo 0 || echo 1)" \
  "p1: an alter on the cut-off writer is answered in $ms ms (store timeout $STORE_TIMEOUT_MS ms)"
case $oc/$code in fail/41 | unknown/7) r=0 ;; *) r=1 ;; esac
tap_ok $r "p1: ... refused with NOT_CONTROLLER (41) or of unknown outcome (7), not acknowledged ($oc, code ${code:--})" ||
  tap_diag "$o"
kh wait-acks --log "$LOG" --n 5 --after cut-p1 --not-replica "$(addr 1)" --timeout-s 20 >/dev/null
tap_ok $? "p1: the workload's alters go on on the other replicas"
kh event --log "$LOG" --name heal-p1
heal || tap_bail "nft could not heal the partition"
nw=$(await_writer 1 30)
tap_ok $? "p1: healed, every replica names node $nw the writer; node 1 follows it" ||
  tap_diag "$nw"
follow=bad end=$((SECONDS + 20)) seen=
while [ $SECONDS -lt $end ]; do
  next_qv
  o=$(kh op --log "$LOG" --client follow --replica "$(addr 1)" \
    --entity follow-p1 --value "$QV" --timeout-ms 10000)
  [ "$(field outcome "$o")" = ok ] && { follow=ok; break; }
  seen=$o
  sleep 0.2
done
tap_is "$follow" ok "p1: node 1 takes alters again, forwarding them to node $nw" ||
  tap_diag "$seen"
kh wait-acks --log "$LOG" --n 5 --after heal-p1 --timeout-s 20 >/dev/null
stop_workload
no_lost_track p1
check "p1 (the writer cut off from Kafka)" round-p1
one_writer_per_epoch p1
restart_as_asked p1

# ---- p2: a follower cut off -----------------------------------------------------

W=$(await_writer "" 30)
tap_ok "$([[ "$W" =~ ^[23]$ ]] && echo 0 || echo 1)" "p2: node $W writes, node 1 follows"
mark_logs
start_workload
kh event --log "$LOG" --name round-p2
kh wait-acks --log "$LOG" --n 3 --after round-p2 --timeout-s 10 >/dev/null
kh event --log "$LOG" --name cut-p2 node=1
cut || tap_bail "nft could not cut node 1 off"
kh wait-acks --log "$LOG" --n 10 --after cut-p2 --not-replica "$(addr 1)" \
  --timeout-s 20 >/dev/null
tap_ok $? "p2: the writer goes on taking alters while node 1 is cut off"
# A client that read at the writer's position is not served older state.
o=$(kh op --log "$LOG" --client p2-reader --op read --replica "$(addr "$W")" \
  --entity h-0 --min-position 0 --timeout-ms 5000)
wpos=$(field position "$o")
tap_ok "$([ "${wpos:-0}" -gt 0 ] && echo 0 || echo 1)" "p2: a read on the writer says its store position ($wpos)"
kh wait-acks --log "$LOG" --n 3 --after cut-p2 --not-replica "$(addr 1)" --timeout-s 10 >/dev/null
o=$(kh op --log "$LOG" --client p2-reader --op read --replica "$(addr 1)" \
  --entity h-0 --min-position "${wpos:-1}" --timeout-ms 5000)
tap_like "$(field outcome "$o") $(field error "$o")" "^fail .*error 9:" \
  "p2: the same client's read on the cut-off node 1 is refused with REPLICA_NOT_AVAILABLE, not answered from an older state"
# Cut off for four sessions (the fault's length, not a wait): long enough
# for node 1 to claim, were it to judge the writer by what it cannot read.
sleep $((4 * SESSION_MS / 1000))
kh event --log "$LOG" --name heal-p2
heal || tap_bail "nft could not heal the partition"
caught=$(kh wait-acks --log "$LOG" --n 5 --after heal-p2 --timeout-s 20)
tap_ok $? "p2: healed, the workload's alters go on ($caught acknowledged)"
# Healed, node 1 reads again once its connections to the brokers are
# made again: within the store timeout (the clients' socket timeouts).
t0=$SECONDS end=$((SECONDS + 30))
while :; do
  o=$(kh op --log "$LOG" --client p2-reader --op read --replica "$(addr 1)" \
    --entity h-0 --min-position "${wpos:-1}" --timeout-ms 5000)
  [ "$(field outcome "$o")" = ok ] || [ $SECONDS -ge $end ] && break
  sleep 0.2
done
tap_is "$(field outcome "$o")" ok "p2: healed, node 1 catches up and answers that client (after $((SECONDS - t0)) s)" ||
  tap_diag "$o"
stop_workload
claimed=$(since_mark | grep "writing _dynconf_configs as node")
tap_is "$claimed" "" "p2: no replica claimed the log: node $W wrote throughout"
no_lost_track p2
check "p2 (a follower cut off from Kafka)" round-p2
one_writer_per_epoch "the whole run"
check "the whole history"

tap_diag "failover after the writer was cut off: $fo ms (store session $SESSION_MS ms)"
tap_diag "history: $(grep -c '"op": "alter"' "$LOG") alters, $(grep -c '"op": "read"' "$LOG") reads; run time $((SECONDS - T_START)) s"
tap_done
