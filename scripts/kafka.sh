#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A real Apache Kafka cluster on loopback for dynconf's tests, benchmarks
# and `demo.sh --kafka`: N KRaft nodes, each a combined broker+controller,
# in their own data dirs under one cluster directory.
#
#   scripts/kafka.sh [-d DIR] [-n NODES] COMMAND [NODE]
#
#   fetch          put the pinned server jars in $DC_KAFKA_CACHE (Maven)
#   start          format the nodes (first time), start every stopped one,
#                  wait until each broker is serving; prints the bootstrap
#   stop           SIGTERM every node, SIGKILL what is left after 20 s
#   kill-all       SIGKILL every node (the data stays)
#   destroy        SIGKILL every node and remove DIR
#   kill NODE      SIGKILL one node
#   pause NODE     SIGSTOP one node;  resume NODE: SIGCONT
#   restart NODE   SIGKILL it, start it again and wait until it serves
#   start-node NODE  start one stopped node and wait until it serves
#   bootstrap      print HOST:PORT,... of the brokers
#   controller     print the node id of the active KRaft controller
#   pid NODE       print a node's process id (empty when it is not running)
#   topics ARGS... / configs ARGS... / groups ARGS...
#                  Kafka's own kafka-topics, kafka-configs and
#                  kafka-consumer-groups tools against the cluster
#
# DIR defaults to $DC_KAFKA_DIR or ./kafka-cluster, NODES to 3 (fixed at
# the first start). Ports are picked free at the first start and kept.
# The brokers listen on and advertise $DC_KAFKA_HOST (default 127.0.0.1;
# fixed at the first start): another local address lets clients in a
# network namespace reach them. The controllers stay on 127.0.0.1.
# Heap per node: $DC_KAFKA_HEAP (default 384m), sized for 3 nodes on a
# 2-core machine beside the tests.
set -eo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
dir=${DC_KAFKA_DIR:-$PWD/kafka-cluster}
nodes=3
while getopts d:n: opt; do
  case $opt in
    d) dir=$OPTARG ;;
    n) nodes=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
cmd=${1:-}
node=${2:-}

kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' \
  "$src/scripts/kafka/pom.xml")
cache=${DC_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynconf/kafka-$kafka_version}
heap=${DC_KAFKA_HEAP:-384m}

die() { echo "kafka.sh: $*" >&2; exit 1; }

# ---- the server's jars ----------------------------------------------------

fetch() {
  [ -f "$cache/.complete" ] && return 0
  command -v mvn >/dev/null || die "mvn not found (scripts/install-deps.sh installs it)"
  command -v java >/dev/null || die "java not found (scripts/install-deps.sh installs it)"
  mkdir -p "$cache/jars"
  echo "kafka.sh: fetching Apache Kafka $kafka_version from Maven Central" >&2
  mvn -q -B -f "$src/scripts/kafka/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$cache/jars" >&2 ||
    die "mvn could not fetch Apache Kafka $kafka_version"
  ls "$cache/jars/kafka_2.13-$kafka_version.jar" >/dev/null ||
    die "kafka_2.13-$kafka_version.jar is missing after the fetch"
  touch "$cache/.complete"
}

# The JVM for a node or a tool (java_cmd [HEAP LOG4J2_CONFIG]): a fixed
# heap, the serial collector and C1 only (3 nodes share 2 cores with the
# tests; start-up matters more than peak throughput here).
java_cmd() {
  local h=${1:-$heap} logconf=${2:-$src/scripts/kafka/log4j2.properties}
  JAVA=(java -Xms"$h" -Xmx"$h" -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$logconf"
    -cp "$cache/jars/*")
}

# ---- the cluster directory ------------------------------------------------

free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("0.0.0.0", 0))  # free on every local address
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# The cluster's shape is fixed at the first start: node count, ports, id.
init_dir() {
  [ -f "$dir/cluster.env" ] && return 0
  mkdir -p "$dir"
  local ports id voters="" i rf isr host=${DC_KAFKA_HOST:-127.0.0.1}
  read -ra ports <<<"$(free_ports $((2 * nodes)))"
  # Kafka's own ids never start with '-' (its tools would read an option).
  id=$(python3 -c 'import base64, os
while True:
    i = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not i.startswith("-"):
        break
print(i)')
  for ((i = 1; i <= nodes; i++)); do
    voters+="${voters:+,}$i@127.0.0.1:${ports[$((2 * i - 1))]}"
  done
  rf=$((nodes < 3 ? nodes : 3))
  isr=$((nodes < 2 ? 1 : 2))
  for ((i = 1; i <= nodes; i++)); do
    mkdir -p "$dir/node$i"
    cat >"$dir/node$i/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://$host:${ports[$((2 * i - 2))]},CONTROLLER://127.0.0.1:${ports[$((2 * i - 1))]}
advertised.listeners=PLAINTEXT://$host:${ports[$((2 * i - 2))]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/node$i/data
auto.create.topics.enable=false
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
EOF
  done
  {
    echo "nodes=$nodes"
    echo "cluster_id=$id"
    local bootstrap=""
    for ((i = 1; i <= nodes; i++)); do
      bootstrap+="${bootstrap:+,}$host:${ports[$((2 * i - 2))]}"
    done
    echo "bootstrap=$bootstrap"
  } >"$dir/cluster.env.tmp"
  mv "$dir/cluster.env.tmp" "$dir/cluster.env"
}

load_env() {
  [ -f "$dir/cluster.env" ] || die "no cluster in $dir (run start first)"
  # shellcheck disable=SC1091
  . "$dir/cluster.env"
}

node_pid() {
  local f="$dir/node$1/pid" p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then echo "$p"; fi
}

check_node() {
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$nodes" ] ||
    die "no node '$1' (nodes are 1 to $nodes)"
}

format_node() {
  [ -f "$dir/node$1/data/meta.properties" ] && return 0
  java_cmd
  "${JAVA[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" \
    -c "$dir/node$1/server.properties" >"$dir/node$1/format.log" 2>&1 ||
    die "formatting node $1 failed: $(tail -3 "$dir/node$1/format.log")"
}

launch_node() {
  [ -n "$(node_pid "$1")" ] && return 0
  : >"$dir/node$1/server.log"
  java_cmd
  (cd "$dir/node$1" && exec "${JAVA[@]}" kafka.Kafka server.properties) \
    >>"$dir/node$1/server.log" 2>&1 &
  echo $! >"$dir/node$1/pid"
}

# A node serves once its log says the server started; a node that died
# on the way is reported with the end of its log.
wait_node() {
  local i=$1 deadline=$((SECONDS + ${DC_KAFKA_START_TIMEOUT:-120}))
  while ! grep -q 'Kafka Server started' "$dir/node$i/server.log" 2>/dev/null; do
    [ -n "$(node_pid "$i")" ] ||
      die "node $i exited while starting: $(tail -5 "$dir/node$i/server.log")"
    [ $SECONDS -lt $deadline ] || die "node $i did not start in time"
    sleep 0.2
  done
}

start() {
  fetch
  init_dir
  load_env
  local i pids=()
  for ((i = 1; i <= nodes; i++)); do
    format_node "$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || exit 1; done
  for ((i = 1; i <= nodes; i++)); do launch_node "$i"; done
  for ((i = 1; i <= nodes; i++)); do wait_node "$i"; done
  echo "$bootstrap"
}

stop_all() {
  local sig=$1 grace=$2 i p left
  for ((i = 1; i <= nodes; i++)); do
    p=$(node_pid "$i")
    [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill "-$sig" "$p" 2>/dev/null
  done
  local deadline=$((SECONDS + grace))
  while :; do
    left=0
    for ((i = 1; i <= nodes; i++)); do [ -n "$(node_pid "$i")" ] && left=1; done
    [ $left = 0 ] && return 0
    [ $SECONDS -lt $deadline ] || break
    sleep 0.2
  done
  for ((i = 1; i <= nodes; i++)); do
    p=$(node_pid "$i")
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
  done
  return 0
}

# The active controller, from a running node's KRaft quorum state.
controller() {
  local i f
  for ((i = 1; i <= nodes; i++)); do
    [ -n "$(node_pid "$i")" ] || continue
    f="$dir/node$i/data/__cluster_metadata-0/quorum-state"
    [ -f "$f" ] || continue
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["leaderId"]) if d.get("leaderId", -1) >= 0 else sys.exit(1)' "$f" && return 0
  done
  die "no running node knows the controller"
}

# Kafka's own command-line tools (what kafka-topics.sh and friends run),
# with --bootstrap-server set to this cluster.
kafka_tool() {
  local class=$1
  shift
  load_env
  java_cmd 256m "$src/scripts/kafka/log4j2-tools.properties"
  "${JAVA[@]}" "$class" --bootstrap-server "$bootstrap" "$@"
}

case $cmd in
  fetch) fetch ;;
  topics) shift; kafka_tool org.apache.kafka.tools.TopicCommand "$@" ;;
  configs) shift; kafka_tool kafka.admin.ConfigCommand "$@" ;;
  groups) shift; kafka_tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "$@" ;;
  start) start ;;
  bootstrap) load_env; echo "$bootstrap" ;;
  stop) load_env; stop_all TERM 20 ;;
  kill-all) load_env; stop_all KILL 10 ;;
  destroy)
    if [ -f "$dir/cluster.env" ]; then load_env; stop_all KILL 10; fi
    rm -rf "$dir" ;;
  kill | pause | resume | pid | restart | start-node)
    load_env
    check_node "$node"
    p=$(node_pid "$node")
    case $cmd in
      kill) [ -n "$p" ] && kill -KILL "$p" && while kill -0 "$p" 2>/dev/null; do sleep 0.05; done ;;
      pause) [ -n "$p" ] || die "node $node is not running"; kill -STOP "$p" ;;
      resume) [ -n "$p" ] || die "node $node is not running"; kill -CONT "$p" ;;
      pid) echo "$p" ;;
      restart | start-node)
        if [ -n "$p" ] && [ "$cmd" = restart ]; then
          kill -KILL "$p"
          while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
        fi
        launch_node "$node"
        wait_node "$node" ;;
    esac ;;
  controller) load_env; controller ;;
  *) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0" | sed 's/^# \{0,1\}//' >&2
     exit 2 ;;
esac
