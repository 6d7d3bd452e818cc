#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""One Watch (dynconfd's API 20001) on the wire, for shell tests:

    kwatch.py HOST:PORT CLIENT_ID KNOWN_VERSION TIMEOUT_MS [MIN_POSITION]
    kwatch.py --describe HOST:PORT CLIENT_ID MIN_POSITION

The second form sends DescribeConfigs v4 for the client-id with
dynconf's store position tag and prints error, message, position.

Sends Watch v1 (v0 when MIN_POSITION is "v0") and prints the answer as
one JSON line: error, message, changed, version, position and the
configs as {name: value}. Writes "sent" on stderr once the request is
out. Exits 2 when the server does not answer in TIMEOUT_MS + 10 s."""
import json
import socket
import struct
import sys

sys.dont_write_bytecode = True


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstr(s):  # a compact string
    b = s.encode()
    return uvarint(len(b) + 1) + b


class Rd:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        v = self.d[self.p:self.p + n]
        if len(v) != n:
            raise ValueError("answer cut short")
        self.p += n
        return v

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        n, shift = 0, 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def cstr(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def roundtrip(host, port, msg, timeout_s, say_sent):
    """Sends one request frame and returns the answer frame (size first)."""
    s = socket.create_connection((host, int(port)), timeout=timeout_s)
    s.sendall(struct.pack(">i", len(msg)) + msg)
    if say_sent:
        sys.stderr.write("sent\n")
        sys.stderr.flush()
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        buf += chunk
    s.close()
    return buf


def watch(hostport, client, known, timeout_ms, min_position):
    host, port = hostport.rsplit(":", 1)
    v = 0 if min_position == "v0" else 1
    body = cstr(client) + struct.pack(">qi", known, timeout_ms)
    if v == 1:
        body += struct.pack(">q", int(min_position))
    body += b"\x00"
    cid = b"kwatch"
    hdr = struct.pack(">hhih", 20001, v, 7, len(cid)) + cid + b"\x00"
    msg = hdr + body
    buf = roundtrip(host, port, msg, timeout_ms / 1000 + 10, True)
    rd = Rd(buf[4:])
    if rd.i32() != 7:
        raise ValueError("correlation id mismatch")
    rd.tags()
    rd.i32()  # throttle
    out = {"error": rd.i16(), "message": rd.cstr()}
    out["changed"] = rd.take(1) == b"\x01"
    out["version"] = rd.i64()
    configs = {}
    for _ in range(rd.uvarint() - 1):
        name, value = rd.cstr(), rd.cstr()
        rd.i8()
        rd.tags()
        configs[name] = value
    out["configs"] = configs
    out["position"] = rd.i64() if v == 1 else -1
    rd.tags()
    return out


def describe(hostport, client, min_position):
    host, port = hostport.rsplit(":", 1)
    res = b"\x02" + bytes([9]) + cstr(client) + b"\x00" + b"\x00"
    tag = uvarint(10000) + uvarint(8) + struct.pack(">q", min_position)
    body = res + b"\x00\x00" + b"\x01" + tag  # synonyms, docs, tags
    cid = b"kwatch"
    hdr = struct.pack(">hhih", 32, 4, 8, len(cid)) + cid + b"\x00"
    msg = hdr + body
    buf = roundtrip(host, port, msg, 10, False)
    rd = Rd(buf[4:])
    if rd.i32() != 8:
        raise ValueError("correlation id mismatch")
    rd.tags()
    rd.i32()  # throttle
    if rd.uvarint() != 2:
        raise ValueError("not one result")
    out = {"error": rd.i16(), "message": rd.cstr()}
    rd.i8()
    rd.cstr()
    for _ in range(rd.uvarint() - 1):  # entries
        rd.cstr(), rd.cstr(), rd.take(1), rd.i8(), rd.take(1)
        for _ in range(rd.uvarint() - 1):  # synonyms
            rd.cstr(), rd.cstr(), rd.i8(), rd.tags()
        rd.i8(), rd.cstr(), rd.tags()
    rd.tags()
    out["position"] = -1
    for _ in range(rd.uvarint()):
        t, n = rd.uvarint(), rd.uvarint()
        v = rd.take(n)
        if t == 10000 and n == 8:
            out["position"] = struct.unpack(">q", v)[0]
    return out


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "--describe":
        try:
            print(json.dumps(describe(a[1], a[2], int(a[3]))))
        except (OSError, ValueError) as e:
            print(json.dumps({"failed": str(e)}))
            return 2
        return 0
    if len(a) not in (4, 5):
        sys.stderr.write(__doc__)
        return 64
    try:
        print(json.dumps(watch(a[0], a[1], int(a[2]), int(a[3]),
                               a[4] if len(a) == 5 else "-1")))
    except (OSError, ValueError) as e:
        print(json.dumps({"failed": str(e)}))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
