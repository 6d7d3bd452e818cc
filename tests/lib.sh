# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Helpers for TAP shell tests of dynconf. Source it from bash, from a test
# in one of tests/' folders (tests/README.md):
#   . "$(dirname "$0")/../lib.sh"
# Environment: DC_BUILDDIR (where dynconfd and dynconf-configs were built,
# default .) and DC_SRCDIR (the source tree), both set by `make check`.
# DC_DAEMON_WRAPPER, when set, is put in front of the dynconfd command line
# (e.g. "valgrind --error-exitcode=99").
#
# Every test gets a private scratch directory $DC_TMP, removed on exit
# together with any daemon still running.

DC_BUILDDIR=${DC_BUILDDIR:-.}
DC_SRCDIR=${DC_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
DC_DYNCONFD="$DC_BUILDDIR/dynconfd"
DC_CONFIGS="$DC_BUILDDIR/dynconf-configs"
export DC_BUILDDIR DC_SRCDIR DC_DYNCONFD DC_CONFIGS

DC_TAP_N=0
DC_TAP_FAILED=0
DC_PID=
DC_PORT=
DC_DAEMON_N=0

DC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-test-XXXXXX") || {
  echo "Bail out! mktemp failed"
  exit 1
}

# ---- TAP ----------------------------------------------------------------

# tap_ok EXIT_CODE "description": passes when EXIT_CODE is 0. Typical use:
#   [ "$x" = 3 ]; tap_ok $? "x is 3"
tap_ok() {
  local rc=$1
  shift
  DC_TAP_N=$((DC_TAP_N + 1))
  if [ "$rc" -eq 0 ] 2>/dev/null; then
    echo "ok $DC_TAP_N - $*"
    return 0
  fi
  DC_TAP_FAILED=$((DC_TAP_FAILED + 1))
  echo "not ok $DC_TAP_N - $*"
  echo "not ok $DC_TAP_N - $*" >&2 # prove shows stderr: the CI log has it
  return 1
}

# tap_is GOT WANT "description"
tap_is() {
  local got=$1 want=$2
  shift 2
  [ "$got" = "$want" ]
  tap_ok $? "$*" || tap_diag "  got '$got', want '$want'"
}

# tap_like TEXT EXTENDED_REGEX "description"
tap_like() {
  local text=$1 re=$2
  shift 2
  printf '%s\n' "$text" | grep -Eq -- "$re"
  tap_ok $? "$*" || {
    tap_diag "  no line matches /$re/ in:"
    printf '%s\n' "$text" | head -n 20 | sed 's/^/#     /'
  }
}

# tap_diag TEXT: TEXT as TAP comments, every line of it marked.
tap_diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

# dc_expect RC REGEX FILE DESC: the last command run by a test's own
# wrapper exited $rc == RC and FILE has a line matching REGEX; on failure
# shows $DC_TMP/out and $DC_TMP/err (where those wrappers write).
dc_expect() {
  local want=$1 re=$2 file=$3
  shift 3
  [ "$rc" -eq "$want" ] && grep -Eq -- "$re" "$file"
  tap_ok $? "$*" || {
    tap_diag "  exit $rc (want $want); want /$re/ in $file:"
    sed 's/^/#     /' "$DC_TMP/out" "$DC_TMP/err" | cut -c1-300
  }
}

# Prints the plan and exits 0 only when every test passed (and at least one
# ran: a test that stopped before its first check must not look green).
tap_done() {
  echo "1..$DC_TAP_N"
  if [ "$DC_TAP_FAILED" -ne 0 ] || [ "$DC_TAP_N" -eq 0 ]; then
    [ "$DC_TAP_FAILED" -ne 0 ] && tap_diag "$DC_TAP_FAILED of $DC_TAP_N failed"
    exit 1
  fi
  exit 0
}

# Stops the test: everything not yet checked counts as failed.
tap_bail() {
  echo "Bail out! $*"
  exit 1 # dc_cleanup shows the daemon's log
}

# ---- librdkafka's mock cluster as a Kafka-topic store -------------------

# dc_mock_start [ARGS...]: examples/mock_cluster in its own process (3
# brokers; the store's topics _dynconf_configs and _dynconf_configs_history
# with one partition each; ARGS, e.g. more --topic T --partitions N) taking
# commands on stdin (--control). Sets BS to its bootstrap list.
# dc_mock CMD: sends one command (down B, up B, ...) and prints the reply.
# dc_mock_stop: ends it.
dc_mock_start() {
  local mock="$DC_BUILDDIR/examples/mock_cluster" first
  [ -x "$mock" ] || tap_bail "$mock not built"
  coproc MC { exec "$mock" --brokers 3 --topic _dynconf_configs \
    --partitions 1 --topic _dynconf_configs_history --partitions 1 "$@" \
    --control 2>/dev/null; }
  read -r -t 10 first <&"${MC[0]}" || tap_bail "the mock cluster did not start"
  BS=${first#bootstrap }
}
dc_mock() {
  printf '%s\n' "$1" >&"${MC[1]}"
  local r
  read -r -t 10 r <&"${MC[0]}" || r="(no reply)"
  printf '%s' "$r"
}
dc_mock_stop() {
  exec {MC[1]}>&-
  wait "$MC_PID" 2>/dev/null
}

# ---- a real Apache Kafka cluster ----------------------------------------

# dc_kafka_start [NODES]: a KRaft cluster of NODES (default 3) combined
# broker+controller nodes on loopback (scripts/kafka.sh), in $DC_TMP/kafka,
# killed at exit. Sets KBS to its bootstrap list. Bails out when Java or
# the server's jars are missing: the test needs them, it does not skip.
# dc_kafka CMD [NODE]: scripts/kafka.sh's commands (kill, pause, resume,
# restart, controller, pid ...) on that cluster.
dc_kafka() { "$DC_SRCDIR/scripts/kafka.sh" -d "$DC_TMP/kafka" "$@"; }
dc_kafka_start() {
  KBS=$(dc_kafka -n "${1:-3}" start 2>"$DC_TMP/kafka-start.err") || {
    sed 's/^/# /' "$DC_TMP/kafka-start.err" >&2
    tap_bail "the Kafka cluster did not start"
  }
  export KBS
}
# dc_await_grep FILE REGEX: polls FILE every 0.1 s, for up to 30 s, until
# a line matches; 1 when none did.
dc_await_grep() {
  local i
  for ((i = 0; i < 300; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# dc_kafka_log NODE: the end of a node's server log, as TAP comments.
dc_kafka_log() {
  tail -n "${2:-20}" "$DC_TMP/kafka/node$1/server.log" 2>/dev/null | sed 's/^/# /' >&2
}

# ---- the daemon ---------------------------------------------------------

# dc_start_daemon DATADIR [extra dynconfd args...]
# Starts dynconfd listening on 127.0.0.1:0 (unless the extra args carry a
# --listen of their own), stdout to $DC_DAEMON_OUT, stderr appended to
# $DC_DAEMON_LOG, and waits up to 30 s for its "listening on HOST:PORT"
# line. Sets DC_PID, DC_PORT and DC_HOST. Returns 1 (and leaves nothing
# running) if it does not come up.
dc_start_daemon() {
  local datadir=$1
  shift
  local listen=(--listen 127.0.0.1:0) a
  for a in "$@"; do
    [ "$a" = --listen ] && listen=()
  done
  mkdir -p "$datadir"
  DC_DAEMON_N=$((DC_DAEMON_N + 1))
  DC_DAEMON_OUT="$DC_TMP/dynconfd.$DC_DAEMON_N.out"
  DC_DAEMON_LOG="$DC_TMP/dynconfd.log"
  : >"$DC_DAEMON_OUT"
  # shellcheck disable=SC2086 # the wrapper is deliberately word-split
  $DC_DAEMON_WRAPPER "$DC_DYNCONFD" "${listen[@]}" --data-dir "$datadir" "$@" \
    >"$DC_DAEMON_OUT" 2>>"$DC_DAEMON_LOG" </dev/null &
  DC_PID=$!
  DC_PORT=
  DC_HOST=
  local i line
  # Up to 30 s: with the Kafka-topic store it first reads the store, and
  # under TSan on a loaded machine that may take over 10 s.
  for ((i = 0; i < 600; i++)); do
    line=$(grep -m1 '^listening on ' "$DC_DAEMON_OUT" 2>/dev/null)
    if [ -n "$line" ]; then
      line=${line#listening on }
      line=${line%% *} # drop the "(NAME PROTOCOL)" suffix
      DC_PORT=${line##*:}
      DC_HOST=${line%:*}
      export DC_PID DC_PORT DC_HOST
      return 0
    fi
    kill -0 "$DC_PID" 2>/dev/null || break
    sleep 0.05
  done
  tap_diag "dynconfd did not print 'listening on' within 30 s"
  kill -9 "$DC_PID" 2>/dev/null
  wait "$DC_PID" 2>/dev/null
  DC_PID=
  dc_log_tail 20
  return 1
}

# dc_stop_daemon [SIGNAL]: sends SIGTERM (or SIGNAL), waits up to 10 s, and
# returns the daemon's exit status (128+n for death by signal n). After the
# timeout it is SIGKILLed and the status is 124.
dc_stop_daemon() {
  local sig=${1:-TERM} i rc
  [ -n "$DC_PID" ] || return 125
  kill -"$sig" "$DC_PID" 2>/dev/null
  for ((i = 0; i < 200; i++)); do
    kill -0 "$DC_PID" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$DC_PID" 2>/dev/null; then
    kill -9 "$DC_PID" 2>/dev/null
    wait "$DC_PID" 2>/dev/null
    DC_PID=
    return 124
  fi
  wait "$DC_PID" 2>/dev/null
  rc=$?
  DC_PID=
  return $rc
}

# dc_kill9_daemon: SIGKILL and reap, no questions asked.
dc_kill9_daemon() {
  [ -n "$DC_PID" ] || return 0
  kill -9 "$DC_PID" 2>/dev/null
  wait "$DC_PID" 2>/dev/null
  DC_PID=
  return 0
}

dc_daemon_alive() { [ -n "$DC_PID" ] && kill -0 "$DC_PID" 2>/dev/null; }

# Prints the tail of the daemon's stderr as TAP comments, on stderr: a
# harness that hides the comments on stdout still shows why it failed.
dc_log_tail() {
  [ -f "$DC_DAEMON_LOG" ] || return 0
  {
    tap_diag "--- dynconfd log ($DC_DAEMON_LOG) ---"
    tail -n "${1:-20}" "$DC_DAEMON_LOG" | sed 's/^/# /'
  } >&2
}

# dc_free_port: a TCP port on 127.0.0.1 that was free a moment ago, learned
# by starting dynconfd on port 0 in a throwaway data dir.
dc_free_port() {
  local saved_pid=$DC_PID saved_port=$DC_PORT port
  dc_start_daemon "$DC_TMP/portprobe.$$" || return 1
  port=$DC_PORT
  dc_stop_daemon TERM
  rm -rf "$DC_TMP/portprobe.$$"
  DC_PID=$saved_pid
  DC_PORT=$saved_port
  echo "$port"
}

# DC_KEEP_TMP=1 keeps a failed test's scratch directory (logs, data).
# DC_MORE_PIDS: more processes a test started (other replicas), killed too.
dc_cleanup() {
  local rc=$? kafka_dir=$DC_TMP/kafka
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ]; then
    dc_log_tail 40
    if [ "${DC_KEEP_TMP:-0}" = 1 ]; then
      echo "# kept $DC_TMP" >&2
      DC_TMP=
    fi
  fi
  [ -n "$DC_PID" ] && kill -9 "$DC_PID" 2>/dev/null && wait "$DC_PID" 2>/dev/null
  local p
  for p in ${DC_MORE_PIDS:-}; do
    kill -9 "$p" 2>/dev/null && { wait "$p"; } 2>/dev/null
  done
  # Whatever else the test started and left running (more replicas, agents,
  # the mock cluster): a replica left alive after a bail-out keeps its node
  # id, and once a later test's cluster reuses one of its broker ports it
  # heartbeats into that test's store. Running jobs only: a finished one's
  # pid may belong to someone else by now.
  local left
  left=$(jobs -rp)
  [ -n "$left" ] && { kill -9 $left && wait $left; } 2>/dev/null
  [ -f "$kafka_dir/cluster.env" ] &&
    "$DC_SRCDIR/scripts/kafka.sh" -d "$kafka_dir" kill-all
  [ -n "$DC_TMP" ] && rm -rf "$DC_TMP"
  exit $rc
}
trap dc_cleanup EXIT
trap 'exit 130' INT TERM
