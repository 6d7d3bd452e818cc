#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Only replicas of the store may forward: three dynconfd replicas on one
# Kafka-topic store (librdkafka's mock cluster), no ACL file. Envelopes
# (API 58) sent straight to the writer, claiming User:admin from
# 10.6.6.6, are refused with CLUSTER_AUTHORIZATION_FAILED and logged
# saying which check failed: one without a signature, one naming a real
# replica's node with a signature that is not that node's, one signed an
# hour ago; none of them is in any replica's history or in the history
# topic. An alter sent to a follower from 127.0.0.5 is forwarded, signed,
# and stored under the client's own principal and address; so is one
# sent to a follower restarted a moment before (it has a new key).
. "$(dirname "$0")/../lib.sh"

[ -x "$DC_CONFIGS" ] || tap_bail "$DC_CONFIGS not built"
command -v python3 >/dev/null || tap_bail "python3 is needed"
command -v kcat >/dev/null || tap_bail "kcat is needed (apt-get install kcat)"

dc_mock_start
STORE=(--store kafka --store-bootstrap "$BS" --store-timeout-ms 20000
  --store-session-timeout-ms 3000)

declare -A PID PORT
start() { # start NODE [PORT]
  local listen=()
  [ -n "$2" ] && listen=(--listen "127.0.0.1:$2")
  dc_start_daemon "$DC_TMP/n$1" "${STORE[@]}" --node-id "$1" "${listen[@]}" ||
    tap_bail "replica $1 did not start"
  PID[$1]=$DC_PID PORT[$1]=$DC_PORT
}
cli() { # cli NODE ARGS...
  local n=$1
  shift
  timeout 60 "$DC_CONFIGS" --bootstrap-server "127.0.0.1:${PORT[$n]}" \
    --timeout-ms 30000 "$@"
}
value_of() { # value_of NODE ENTITY KEY
  cli "$1" --entity-type clients --entity-name "$2" --describe 2>/dev/null |
    sed -n "s/^ *$3=\([^ ]*\) .*/\1/p"
}
await_value() { # await_value NODE ENTITY KEY WANT: polls for up to 30 s
  local i v=
  for ((i = 0; i < 300; i++)); do
    v=$(value_of "$1" "$2" "$3")
    [ "$v" = "$4" ] && break
    sleep 0.1
  done
  printf '%s' "$v"
}
controller_is() { # controller_is NODE WANT: Metadata there names WANT, 30 s
  local i c
  for ((i = 0; i < 300; i++)); do
    c=$(timeout 10 kcat -L -b "127.0.0.1:${PORT[$1]}" -m 5 2>/dev/null |
      sed -n 's/^ *broker \([0-9]*\) at .*(controller).*/\1/p')
    [ "$c" = "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# kreq PORT MODE ENTITY [NODE]: one request, its error code printed.
#   unsigned|badsig|old: an Envelope for User:admin at 10.6.6.6:6666
#     setting ENTITY's acks=0 (badsig, old: tagged as signed by NODE with
#     64 random bytes, now or an hour ago);
#   plain: that alter itself, from 127.0.0.5, retried while the answer is
#     NOT_CONTROLLER (41) for up to 30 s.
kreq() {
  python3 - "$@" <<'PY'
import os, socket, struct, sys, time

port, mode, entity = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def uv(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def read_uv(b, pos):
    n = shift = 0
    while True:
        c = b[pos]
        pos += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, pos


def s16(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def cbytes(b):
    return uv(len(b) + 1) + b


def alter_body():  # IncrementalAlterConfigs v0: ENTITY acks=0
    return (struct.pack(">ib", 1, 9) + s16(entity) + struct.pack(">i", 1)
            + s16("acks") + struct.pack(">b", 0) + s16("0")
            + struct.pack(">?", False))


def exchange(req, source=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=30,
                                 source_address=source)
    s.sendall(struct.pack(">i", len(req)) + req)
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    s.close()
    return buf[4:]


def envelope():
    inner = struct.pack(">hhi", 44, 0, 77) + s16("forger") + alter_body()
    body = cbytes(inner) + cbytes(b"User:admin") + cbytes(b"10.6.6.6:6666")
    if mode == "unsigned":
        body += uv(0)
    else:
        ms = int(time.time() * 1000) - (3600000 if mode == "old" else 0)
        tag = struct.pack(">iq", int(sys.argv[4]), ms) + os.urandom(64)
        body += uv(1) + uv(10002) + uv(len(tag)) + tag
    resp = exchange(struct.pack(">hhi", 58, 0, 1) + s16("forger") + uv(0)
                    + body)
    ntags, pos = read_uv(resp, 4)  # header v1: correlation id, tags
    for _ in range(ntags):
        _, pos = read_uv(resp, pos)
        size, pos = read_uv(resp, pos)
        pos += size
    n, pos = read_uv(resp, pos)  # response_data, nullable
    pos += max(n - 1, 0)
    return struct.unpack(">h", resp[pos:pos + 2])[0]


def plain():
    deadline = time.monotonic() + 30
    while True:
        resp = exchange(struct.pack(">hhi", 44, 0, 5) + s16("plain")
                        + alter_body(), ("127.0.0.5", 0))
        # throttle, 1 resource: its error code first
        err = struct.unpack(">h", resp[12:14])[0]
        if err != 41 or time.monotonic() > deadline:
            return err
        time.sleep(0.2)


print(plain() if mode == "plain" else envelope())
PY
}

start 1
start 2
start 3
for n in 1 2 3; do
  controller_is $n 1
  tap_ok $? "node $n names node 1 the writer"
done

# ---- forged Envelopes to the writer ---------------------------------------
mark=$(wc -l <"$DC_DAEMON_LOG")
tap_is "$(kreq "${PORT[1]}" unsigned forged-unsigned)" 31 \
  "an unsigned Envelope for User:admin at 10.6.6.6: CLUSTER_AUTHORIZATION_FAILED"
tap_is "$(kreq "${PORT[1]}" badsig forged-badsig 2)" 31 \
  "one naming replica 2 with a signature that is not node 2's: refused"
tap_is "$(kreq "${PORT[1]}" old forged-old 2)" 31 \
  "one naming replica 2, signed an hour ago: refused"
log=$(tail -n "+$((mark + 1))" "$DC_DAEMON_LOG")
tap_like "$log" "Envelope from 127\\.0\\.0\\.1:[0-9]+ \\(claiming node none\\) refused: it carries no replica signature" \
  "  the writer logs the unsigned one, naming the peer"
tap_like "$log" "\\(claiming node 2\\) refused: its signature does not verify with node 2's replica key" \
  "  the bad signature, naming the claimed node"
tap_like "$log" "\\(claiming node 2\\) refused: it was signed 36[0-9]{5} ms behind this server's clock" \
  "  and the old one, by how far its time is off"

# ---- real clients through followers ---------------------------------------
tap_is "$(kreq "${PORT[2]}" plain real-2)" 0 \
  "an alter sent to follower 2 from 127.0.0.5 is forwarded and acknowledged"
kill -9 "${PID[3]}"
{ wait "${PID[3]}"; } 2>/dev/null
start 3 "${PORT[3]}"
tap_is "$(kreq "${PORT[3]}" plain real-3)" 0 \
  "an alter sent to follower 3 just restarted (a new key) is acknowledged"
for n in 1 2 3; do
  tap_is "$(await_value $n real-3 acks 0)" 0 "node $n serves it"
done

# ---- no forged change anywhere --------------------------------------------
for n in 1 2 3; do
  hist=$(timeout 30 "$DC_DYNCONFD" --data-dir "$DC_TMP/n$n" --history)
  tap_is "$(grep -c 'forged' <<<"$hist")" 0 \
    "node $n's history has no forged change"
  tap_is "$(grep -c '10\.6\.6\.6' <<<"$hist")" 0 "  nothing from 10.6.6.6"
  for e in real-2 real-3; do
    tap_like "$hist" "User:ANONYMOUS 127\\.0\\.0\\.5:[0-9]+ IncrementalAlterConfigs client:$e acks SET \\(unset\\) -> 0" \
      "  $e stored under the client's principal and address"
  done
done
# The writer copies to the history topic after applying: wait for it.
for ((i = 0; i < 60; i++)); do
  hist=$(timeout 30 "$DC_DYNCONFD" --history --store kafka \
    --store-bootstrap "$BS" 2>/dev/null)
  grep -q 'client:real-3 acks' <<<"$hist" && break
  sleep 0.5
done
tap_like "$hist" "client:real-3 acks" "the history topic has the real alters"
tap_is "$(grep -cE 'forged|10\.6\.6\.6' <<<"$hist")" 0 "  and no forged one"

for n in 1 2 3; do
  kill -TERM "${PID[$n]}"
  { wait "${PID[$n]}"; } 2>/dev/null
done
dc_mock_stop
tap_done
