# SPDX-License-Identifier: BSD-2-Clause
# What the bench scripts that start dynconfd themselves share; sourced.
# The script sets TMP (its scratch directory) and DPID (the dynconfd it
# runs, empty when none) before it calls these.

# stop_dynconfd: SIGTERM, up to 5 s, then SIGKILL; clears DPID.
stop_dynconfd() {
  [ -n "$DPID" ] || return 0
  kill -TERM "$DPID" 2>/dev/null || true
  i=0
  while kill -0 "$DPID" 2>/dev/null && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL "$DPID" 2>/dev/null || true
  wait "$DPID" 2>/dev/null || true
  DPID=
}

# await_listening FILE PID [LISTENER]: waits up to 30 s for the
# "listening on 127.0.0.1:PORT" line the server PID prints to FILE (the
# line of the listener named LISTENER, when given) and prints that
# address; 1 when the server exits or never says it.
await_listening() {
  i=0
  while [ $i -lt 300 ]; do
    a=$(sed -n "s/^listening on \\(127\\.0\\.0\\.1:[0-9][0-9]*\\)${3:+ ($3 }.*/\\1/p" \
      "$1" 2>/dev/null | head -n 1)
    [ -z "$a" ] || { echo "$a"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

# hold_watches ADDR METRICS N: bench/watch_fanout --hold parks N Watch
# requests on the dynconfd at ADDR (METRICS: its metrics address) and
# keeps them parked until the script closes fd 3; waits up to 90 s until
# dynconfd counts them all. Sets HPID and HELD_AFTER (seconds taken);
# exits the script, saying why, when they were not all parked.
hold_watches() {
  mkfifo "$TMP/hold.in"
  "$BUILDDIR/bench/watch_fanout" --hold --target "$1" --metrics "$2" \
    --watchers "$3" <"$TMP/hold.in" >"$TMP/hold.out" 2>"$TMP/hold.err" &
  HPID=$!
  exec 3>"$TMP/hold.in" # the holder runs until this closes
  i=0
  until grep -qs '^HOLDING ' "$TMP/hold.out"; do
    if ! kill -0 "$HPID" 2>/dev/null || [ $i -ge 900 ]; then
      echo "bench: watch_fanout --hold did not park its $3 watches:" >&2
      cat "$TMP/hold.out" "$TMP/hold.err" >&2
      exit 1
    fi
    sleep 0.1
    i=$((i + 1))
  done
  HELD_AFTER="$((i / 10)).$((i % 10))"
}

# On exit, dynconfd stops and TMP goes; an interrupt exits 130. A script
# with more to stop defines its own cleanup after sourcing this.
cleanup() {
  stop_dynconfd
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
