#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# TAP tests for the operator CLI dynconf-configs, against a live dynconfd on
# loopback and against small fake servers (silent, garbage, old versions).
# Self-contained on purpose: needs only bash, python3 and the two binaries.
set -u

B=${DC_BUILDDIR:-.}
DAEMON="$B/dynconfd"
CLI="$B/dynconf-configs"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_cli.XXXXXX")
daemon_pid=
fake_pid=
cleanup() {
  for p in $daemon_pid $fake_pid; do
    kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- TAP helpers --------------------------------------------------------
n=0
failed=0
pass() { n=$((n + 1)); echo "ok $n - $1"; }
flunk() {
  n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
  shift
  for f in "$@"; do [ -f "$f" ] && sed 's/^/#   /' "$f"; done
  return 0
}
diag() { echo "# $*"; }

# run ARGS...: runs the CLI (bounded by coreutils timeout so a hang fails
# instead of blocking the suite); sets $rc, output in $tmp/out and $tmp/err.
run() {
  timeout 60 "$CLI" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# cli ARGS...: run against the live daemon.
cli() { run --bootstrap-server "127.0.0.1:$port" "$@"; }

is_rc() { # is_rc WANT DESC
  if [ "$rc" -eq "$1" ]; then pass "$2"; else
    flunk "$2 (exit $rc, want $1)" "$tmp/out" "$tmp/err"; fi
}
# has FILE LINE DESC: FILE contains exactly that line.
has_line() {
  if grep -qxF -- "$2" "$1"; then pass "$3"; else
    flunk "$3 (no line '$2')" "$1"; fi
}
lacks_text() {
  if ! grep -qF -- "$2" "$1"; then pass "$3"; else
    flunk "$3 (unexpected '$2')" "$1"; fi
}
has_text() {
  if grep -qF -- "$2" "$1"; then pass "$3"; else
    flunk "$3 (no '$2')" "$1"; fi
}
is_eq() { # is_eq GOT WANT DESC
  if [ "$1" = "$2" ]; then pass "$3"; else
    flunk "$3 (got '$1', want '$2')"; fi
}
# rc_and_line WANT_RC FILE LINE DESC
rc_and_line() {
  if [ "$rc" -eq "$1" ] && grep -qxF -- "$3" "$2"; then pass "$4"; else
    flunk "$4 (exit $rc, want $1 and line '$3')" "$tmp/out" "$tmp/err"; fi
}
rc_and_text() {
  if [ "$rc" -eq "$1" ] && grep -qF -- "$3" "$2"; then pass "$4"; else
    flunk "$4 (exit $rc, want $1 and '$3')" "$tmp/out" "$tmp/err"; fi
}

# wait_listening FILE: prints the port once FILE has "listening on
# 127.0.0.1:PORT"; polls for ~10 s.
wait_listening() {
  local i line
  for i in $(seq 1 100); do
    line=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$1" 2>/dev/null | head -n1)
    if [ -n "$line" ]; then echo "${line##*:}"; return 0; fi
    sleep 0.1
  done
  return 1
}

# ---- start dynconfd ----------------------------------------------------
if [ ! -x "$DAEMON" ] || [ ! -x "$CLI" ]; then
  echo "Bail out! needs $DAEMON and $CLI (set DC_BUILDDIR)"
  exit 1
fi
mkdir -p "$tmp/data"
"$DAEMON" --listen 127.0.0.1:0 --data-dir "$tmp/data" >"$tmp/daemon.out" 2>"$tmp/daemon.err" &
daemon_pid=$!
if ! port=$(wait_listening "$tmp/daemon.out"); then
  echo "Bail out! dynconfd did not report 'listening on 127.0.0.1:PORT'"
  sed 's/^/# /' "$tmp/daemon.out" "$tmp/daemon.err"
  exit 1
fi
diag "dynconfd pid $daemon_pid on 127.0.0.1:$port"

C=(--entity-type clients)

# ---- basics ------------------------------------------------------------
run --version
rc_and_text 0 "$tmp/out" "dynconf-configs " "--version prints the version"
run --help
rc_and_text 0 "$tmp/out" "--bootstrap-server" "--help lists the options"

cli "${C[@]}" --entity-name app1 --describe
rc_and_line 0 "$tmp/out" "Dynamic configs for client-id 'app1' are:" \
  "describe of an unconfigured client prints the header"
is_eq "$(wc -l <"$tmp/out")" 1 "... and no config lines"

# ---- set / describe round trip ----------------------------------------
cli "${C[@]}" --entity-name app1 --alter --add-config session.timeout.ms=30000
rc_and_line 0 "$tmp/out" "Completed updating config for client-id 'app1'." \
  "alter --add-config succeeds"
cli "${C[@]}" --entity-name app1 --describe
is_rc 0 "describe after set"
has_line "$tmp/out" \
  "  session.timeout.ms=30000 sensitive=false synonyms={DYNAMIC_CLIENT_CONFIG:session.timeout.ms=30000}" \
  "describe shows the value, its sensitivity and synonyms"

# ---- defaults, inheritance, override precedence ----------------------
cli "${C[@]}" --entity-default --alter \
  --add-config 'heartbeat.interval.ms=3000, session.timeout.ms=45000'
rc_and_line 0 "$tmp/out" "Completed updating config for the default client-id." \
  "alter --entity-default succeeds"
cli "${C[@]}" --entity-default --describe
rc_and_line 0 "$tmp/out" "Dynamic configs for the default client-id are:" \
  "describe --entity-default header"
has_line "$tmp/out" \
  "  heartbeat.interval.ms=3000 sensitive=false synonyms={DYNAMIC_DEFAULT_CLIENT_CONFIG:heartbeat.interval.ms=3000}" \
  "default entity lists its own values with source DYNAMIC_DEFAULT_CLIENT_CONFIG"

cli "${C[@]}" --entity-name app1 --describe
is_rc 0 "describe client without --all"
lacks_text "$tmp/out" "heartbeat.interval.ms" "without --all, inherited defaults are not listed"

cli "${C[@]}" --entity-name app1 --describe --all
rc_and_line 0 "$tmp/out" "All configs for client-id 'app1' are:" "--all header"
has_line "$tmp/out" \
  "  heartbeat.interval.ms=3000 source=DYNAMIC_DEFAULT_CLIENT_CONFIG sensitive=false synonyms={DYNAMIC_DEFAULT_CLIENT_CONFIG:heartbeat.interval.ms=3000}" \
  "--all shows the inherited default with its source"
has_line "$tmp/out" \
  "  session.timeout.ms=30000 source=DYNAMIC_CLIENT_CONFIG sensitive=false synonyms={DYNAMIC_CLIENT_CONFIG:session.timeout.ms=30000, DYNAMIC_DEFAULT_CLIENT_CONFIG:session.timeout.ms=45000}" \
  "client override beats the default; the default is a synonym"
keys=$(sed -n 's/^  \([^=]*\)=.*/\1/p' "$tmp/out" | tr '\n' ' ')
is_eq "$keys" "heartbeat.interval.ms session.timeout.ms " "config lines are sorted by key"

# ---- delete reverts to the default ------------------------------------
cli "${C[@]}" --entity-name app1 --alter --delete-config session.timeout.ms
is_rc 0 "--delete-config succeeds"
cli "${C[@]}" --entity-name app1 --describe --all
has_text "$tmp/out" "  session.timeout.ms=45000 source=DYNAMIC_DEFAULT_CLIENT_CONFIG " \
  "after delete the client inherits the default again"
cli "${C[@]}" --entity-name app1 --describe
is_eq "$(wc -l <"$tmp/out")" 1 "after delete the client has no own configs"
cli "${C[@]}" --entity-name app1 --alter --delete-config session.timeout.ms
is_rc 0 "deleting an absent key succeeds"

# ---- LIST keys: append / subtract / bracket syntax --------------------
PAS=partition.assignment.strategy
cli "${C[@]}" --entity-name app1 --alter --add-config "$PAS=range"
is_rc 0 "set a list key"
cli "${C[@]}" --entity-name app1 --alter --append-config "$PAS=roundrobin"
is_rc 0 "--append-config succeeds"
cli "${C[@]}" --entity-name app1 --describe
has_text "$tmp/out" "  $PAS=range,roundrobin sensitive=false" "append adds the item at the end"
cli "${C[@]}" --entity-name app1 --alter --subtract-config "$PAS=range"
is_rc 0 "--subtract-config succeeds"
cli "${C[@]}" --entity-name app1 --describe
has_text "$tmp/out" "  $PAS=roundrobin sensitive=false" "subtract removes the item"
cli "${C[@]}" --entity-name app1 --alter --add-config "$PAS=[range,cooperative-sticky],acks=1"
is_rc 0 "k=[a,b] list syntax together with another pair"
cli "${C[@]}" --entity-name app1 --describe
has_text "$tmp/out" "  $PAS=range,cooperative-sticky sensitive=false" "bracketed list value keeps its comma"
has_text "$tmp/out" "  acks=1 sensitive=false" "the pair after the list is set too"
cli "${C[@]}" --entity-name app1 --alter --append-config "acks=0"
rc_and_text 1 "$tmp/err" "Error: INVALID_CONFIG: " "append on a non-list key is INVALID_CONFIG"

# ---- --json ------------------------------------------------------------
cli "${C[@]}" --entity-name app1 --describe --all --json
is_rc 0 "--json describe"
if python3 -c 'import json,sys; json.load(sys.stdin)' <"$tmp/out" 2>"$tmp/pyerr"; then
  pass "--json output is valid JSON"
else flunk "--json output is valid JSON" "$tmp/out" "$tmp/pyerr"; fi
got=$(python3 -c '
import json,sys
d=json.load(sys.stdin)
c={x["name"]:x for x in d["configs"]}
print(d["entity_type"], d["entity_name"], c["acks"]["value"], c["acks"]["source"],
      c["heartbeat.interval.ms"]["value"], c["heartbeat.interval.ms"]["source"],
      c["acks"]["synonyms"][0]["source"], c["acks"]["sensitive"])' <"$tmp/out" 2>&1)
is_eq "$got" "clients app1 1 DYNAMIC_CLIENT_CONFIG 3000 DYNAMIC_DEFAULT_CLIENT_CONFIG DYNAMIC_CLIENT_CONFIG False" \
  "--json carries names, values, sources and synonyms"

weird='we"ird\name'
cli "${C[@]}" --entity-name "$weird" --alter --add-config acks=all
is_rc 0 "a client-id with a quote and a backslash can be configured"
cli "${C[@]}" --entity-name "$weird" --describe --json
got=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["entity_name"], d["configs"][0]["value"])' <"$tmp/out" 2>&1)
is_eq "$got" "$weird all" "--json escapes strings"

# ---- --dry-run ---------------------------------------------------------
cli "${C[@]}" --entity-name app1 --alter --dry-run --add-config acks=0
rc_and_line 0 "$tmp/out" "Validated config for client-id 'app1' (dry run, nothing changed)." \
  "--dry-run reports validation"
cli "${C[@]}" --entity-name app1 --describe
has_text "$tmp/out" "  acks=1 sensitive=false" "--dry-run changed nothing"
cli "${C[@]}" --entity-name app1 --alter --dry-run --add-config acks=7
rc_and_text 1 "$tmp/err" "Error: INVALID_CONFIG: " "--dry-run still validates"

# ---- server-side refusals --------------------------------------------
cli "${C[@]}" --entity-name app1 --alter --add-config session.timeout.ms=abc
rc_and_text 1 "$tmp/err" "Error: INVALID_CONFIG: " "non-numeric session.timeout.ms is INVALID_CONFIG"
has_text "$tmp/err" "session.timeout.ms" "... and the server's message names the key"
cli "${C[@]}" --entity-name app1 --alter --add-config acks=7
rc_and_text 1 "$tmp/err" "Error: INVALID_CONFIG: " "acks=7 is INVALID_CONFIG"
has_text "$tmp/err" "acks" "... and the server's message names the key"
cli "${C[@]}" --entity-name app1 --alter --add-config 'acks=0,session.timeout.ms=abc'
is_rc 1 "a change set with one bad value is refused"
cli "${C[@]}" --entity-name app1 --describe
has_text "$tmp/out" "  acks=1 sensitive=false" "... as a whole (acks unchanged)"
cli "${C[@]}" --entity-name app1 --alter --add-config no.such.key=1
rc_and_text 1 "$tmp/err" "Error: INVALID_CONFIG: " "unknown key is INVALID_CONFIG"
is_eq "$(wc -l <"$tmp/err")" 1 "... reported on one line"

# ---- brokers -----------------------------------------------------------
cli --entity-type brokers --entity-name 1 --describe
rc_and_line 0 "$tmp/out" "Configs for broker 1 are:" "describe broker 1"
if grep -q '^  [^ ]*=.* synonyms={STATIC_BROKER_CONFIG:' "$tmp/out"; then
  pass "broker describe lists the server's static configs"
else flunk "broker describe lists the server's static configs" "$tmp/out" "$tmp/err"; fi
cli --entity-type brokers --entity-name 1 --alter --add-config foo=1
rc_and_text 1 "$tmp/err" "Error: " "altering broker configs is refused"

# ---- usage errors: exit 2, one line, pointer to --help --------------
usage() { # usage DESC ARGS...
  local desc=$1; shift
  run "$@"
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'see .*--help' "$tmp/err" &&
     [ ! -s "$tmp/out" ]; then
    pass "usage error: $desc"
  else flunk "usage error: $desc (exit $rc)" "$tmp/out" "$tmp/err"; fi
}
BS=(--bootstrap-server "127.0.0.1:$port")
usage "missing --bootstrap-server" "${C[@]}" --entity-name a --describe
usage "missing --entity-type" "${BS[@]}" --entity-name a --describe
usage "neither --describe nor --alter" "${BS[@]}" "${C[@]}" --entity-name a
usage "--describe with --alter" "${BS[@]}" "${C[@]}" --entity-name a --describe --alter --add-config acks=1
usage "--entity-name with --entity-default" "${BS[@]}" "${C[@]}" --entity-name a --entity-default --describe
usage "no entity" "${BS[@]}" "${C[@]}" --describe
usage "--alter without changes" "${BS[@]}" "${C[@]}" --entity-name a --alter
usage "--add-config k without =" "${BS[@]}" "${C[@]}" --entity-name a --alter --add-config k
usage "--add-config unbalanced [" "${BS[@]}" "${C[@]}" --entity-name a --alter --add-config "$PAS=[range"
usage "same key twice" "${BS[@]}" "${C[@]}" --entity-name a --alter --add-config acks=1 --delete-config acks
usage "--add-config with --describe" "${BS[@]}" "${C[@]}" --entity-name a --describe --add-config acks=1
usage "bad --entity-type" "${BS[@]}" --entity-type topics --entity-name a --describe
usage "non-numeric broker id" "${BS[@]}" --entity-type brokers --entity-name x --describe
usage "bad --timeout-ms" "${BS[@]}" "${C[@]}" --entity-name a --describe --timeout-ms soon
usage "unknown option" "${BS[@]}" "${C[@]}" --entity-name a --describe --frobnicate
usage "bad bootstrap syntax" --bootstrap-server nohostport "${C[@]}" --entity-name a --describe

# ---- unreachable and misbehaving servers -----------------------------
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
run --bootstrap-server "127.0.0.1:$closed" "${C[@]}" --entity-name a --describe --timeout-ms 3000
rc_and_text 1 "$tmp/err" "cannot connect to 127.0.0.1:$closed: Connection refused" \
  "closed port: exit 1 with a clear message"
run --bootstrap-server "127.0.0.1:$closed,localhost:$port" "${C[@]}" --entity-name app1 --describe
rc_and_line 0 "$tmp/out" "Dynamic configs for client-id 'app1' are:" \
  "bootstrap list: a dead entry is skipped, a host name resolves"

# A fake Kafka server: prints "listening on 127.0.0.1:PORT", logs
# "api_key v<version>" per request to $tmp/fake.log, and answers by mode.
cat >"$tmp/fake.py" <<'EOF'
import socket, struct, sys
mode, log = sys.argv[1], open(sys.argv[2], "w", buffering=1)
def s16(s): b = s.encode(); return struct.pack(">h", len(b)) + b
def uv(n):
    out = b""
    while True:
        if n < 0x80: return out + bytes([n])
        out += bytes([(n & 0x7f) | 0x80]); n >>= 7
def apiversions(ver, keys):
    if ver >= 3:
        body = struct.pack(">h", 0) + uv(len(keys) + 1)
        body += b"".join(struct.pack(">hhh", *k) + b"\0" for k in keys)
        return body + struct.pack(">i", 0) + b"\0"
    body = struct.pack(">hi", 0, len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)
    return body + (struct.pack(">i", 0) if ver >= 1 else b"")
def describe_v0():
    cfg = lambda n, v, d: s16(n) + s16(v) + b"\0" + (b"\1" if d else b"\0") + b"\0"
    res = struct.pack(">hh", 0, -1) + b"\x09" + s16("app1") + struct.pack(">i", 2)
    res += cfg("session.timeout.ms", "45000", True) + cfg("acks", "1", False)
    return struct.pack(">ii", 0, 1) + res
def recvn(c, n):
    d = b""
    while len(d) < n:
        x = c.recv(n - len(d))
        if not x: raise EOFError
        d += x
    return d
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(8)
print("listening on 127.0.0.1:%d" % srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    try:
        while True:
            size, = struct.unpack(">i", recvn(c, 4))
            req = recvn(c, size)
            key, ver, corr = struct.unpack(">hhi", req[:8])
            log.write("%d v%d\n" % (key, ver))
            if mode == "silent":
                continue
            if mode == "garbage":
                c.sendall(struct.pack(">i", 6) + struct.pack(">i", corr) + b"\xff\xff"); continue
            if mode == "huge":
                c.sendall(struct.pack(">i", 0x7ffffff0) + b"x" * 64); continue
            if key == 18 and mode == "old" and ver >= 1:
                body = struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, 0)
            elif key == 18 and mode == "old":
                body = apiversions(0, [(18, 0, 0), (32, 0, 0)])
            elif key == 18:
                body = apiversions(ver, [(18, 0, 3), (32, 0, 4)])
            elif key == 32 and mode == "old":
                body = describe_v0()
            else:
                break
            c.sendall(struct.pack(">i", len(body) + 4) + struct.pack(">i", corr) + body)
    except (EOFError, ConnectionError):
        pass
    c.close()
EOF
fake() { # fake MODE: (re)start the fake server; sets $fport
  if [ -n "$fake_pid" ]; then kill -TERM "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null; fi
  : >"$tmp/fake.out"
  python3 "$tmp/fake.py" "$1" "$tmp/fake.log" >"$tmp/fake.out" 2>"$tmp/fake.err" &
  fake_pid=$!
  fport=$(wait_listening "$tmp/fake.out") || { echo "Bail out! fake server did not start"; exit 1; }
}
F() { run --bootstrap-server "127.0.0.1:$fport" "$@"; }

fake silent
F "${C[@]}" --entity-name a --describe --timeout-ms 500
rc_and_text 1 "$tmp/err" "within 500 ms" "silent server: exit 1 naming the timeout, no hang"
fake garbage
F "${C[@]}" --entity-name a --describe --timeout-ms 5000
rc_and_text 1 "$tmp/err" "Error: malformed ApiVersions" "malformed response: clear error, no crash"
fake huge
F "${C[@]}" --entity-name a --describe --timeout-ms 5000
rc_and_text 1 "$tmp/err" "byte frame is over the receive limit" "oversized response frame is refused"
fake new
F "${C[@]}" --entity-name a --alter --add-config acks=1
rc_and_text 1 "$tmp/err" "does not support IncrementalAlterConfigs" \
  "server without IncrementalAlterConfigs: said clearly"
has_line "$tmp/fake.log" "18 v3" "ApiVersions v3 is tried first"
fake old
F "${C[@]}" --entity-name app1 --describe --all
is_rc 0 "old server: ApiVersions falls back to v0, DescribeConfigs v0 works"
is_eq "$(tr '\n' ' ' <"$tmp/fake.log")" "18 v3 18 v0 32 v0 " "... requests sent: ApiVersions v3, v0, DescribeConfigs v0"
has_line "$tmp/out" "  acks=1 source=DYNAMIC_CLIENT_CONFIG sensitive=false synonyms={}" \
  "v0 is_default=false maps to the client's own override"
has_line "$tmp/out" "  session.timeout.ms=45000 source=DYNAMIC_DEFAULT_CLIENT_CONFIG sensitive=false synonyms={}" \
  "v0 is_default=true maps to the inherited default"

# ---- the daemon survived all of it -----------------------------------
if kill -0 "$daemon_pid" 2>/dev/null; then pass "dynconfd is still running"; else
  flunk "dynconfd is still running" "$tmp/daemon.err"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
