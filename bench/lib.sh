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

# On exit, dynconfd stops and TMP goes; an interrupt exits 130.
cleanup() {
  stop_dynconfd
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
