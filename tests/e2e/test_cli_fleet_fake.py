#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""dynconf-configs --describe-fleet and --alter --wait against a scripted
fake server, so every case is exact and needs no agents: the grouping,
order and wording of the text output, the JSON, the filter each entity
sends, a server without DescribeFleet, --wait's endings (applied, applied
or needing a restart, rejected, time-out) and its first step (no judgement of the fleet before
DescribeConfigs shows the change), the progress bar on a terminal and
the usage errors. tests/e2e/test_cli_fleet.py runs the same against dynconfd
and real agents.

The fake speaks ApiVersions v0/v3, DescribeConfigs v0 and
IncrementalAlterConfigs v0 (the CLI picks them when nothing newer is
offered) and DescribeFleet v0; each DescribeConfigs and DescribeFleet
answer is the next of a list of snapshots (the last one repeats).

With replicas (dynconfd on the Kafka-topic store), the fleet is the
union of every replica's view: the CLI asks Metadata on the server it
connected to, then DescribeFleet on every broker listed, each on a
connection of its own. A fake may offer Metadata v0-v1 listing any
brokers, so two or three fakes stand for replicas, each with its own
snapshots; without Metadata (the cases above the replicas') one server
is all the CLI asks.

DescribeFleet v1 (script(fleet_max=1)) adds what --wait needs to follow
a rollout without polling, and pages. A v1 fake lists its current
snapshot (the first of fleets; v1 requests do not step through them),
sorted as dynconfd sorts it, cut into pages of `page` clients after the
request's cursor, with a change sequence (fleet_seq). A request whose
since_seq is that sequence is parked: what happens to it is the next of
the script's Park steps (the fleet moves, the connection closes, it is
never answered...), and by default it is answered unchanged at its
timeout_ms, as dynconfd answers it. Every DescribeFleet is recorded
with its fields (Fake.fleet_requests) and every parked one with the
step it got (Fake.holds).

Prints TAP. A global alarm turns any hang into a failure.
"""
import collections
import json
import os
import pty
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

# The shared helpers (dcpy.py ...) are in tests/, this test's parent folder.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dcpy import t  # noqa: E402
import dcpy  # noqa: E402

CLI = os.path.join(dcpy.builddir(), "dynconf-configs")
DESCRIBE_CONFIGS, INCREMENTAL_ALTER, API_VERSIONS, DESCRIBE_FLEET = 32, 44, 18, 20003
METADATA = 3
UP_TO_DATE, BEHIND, REJECTED, SILENT, RESTART = 0, 1, 2, 3, 4
OUTCOME_RESTART = 3
RESTART_VALUES = "acks=0; session.timeout.ms=30000"
V1 = 0x0123456789ABCDEF
V2 = int.from_bytes(bytes.fromhex("deadbeefdeadbeef"), "big", signed=True)
H1, H2 = "0123456789abcdef", "deadbeefdeadbeef"


# ---- the wire ------------------------------------------------------------

class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def str16(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode(errors="replace")

    def uv(self):
        n = shift = 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return n

    def cstr(self):
        n = self.uv()
        return None if n == 0 else self.take(n - 1).decode(errors="replace")

    def tags(self):
        for _ in range(self.uv()):
            self.uv()
            self.take(self.uv())


def uv(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def s16(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">h", len(b)) + b


def cstr(s):
    if s is None:
        return b"\0"
    b = s.encode() if isinstance(s, str) else s
    return uv(len(b) + 1) + b


def apiversions(ver, keys):
    if ver >= 3:
        body = struct.pack(">h", 0) + uv(len(keys) + 1)
        body += b"".join(struct.pack(">hhh", *k) + b"\0" for k in keys)
        return body + struct.pack(">i", 0) + b"\0"
    body = struct.pack(">hi", 0, len(keys))
    return body + b"".join(struct.pack(">hhh", *k) for k in keys)


def fleet_client(c, now):
    out = b"".join(cstr(c[k]) for k in (
        "instance_id", "client_id", "principal", "peer", "listener",
        "agent_software", "app_software", "kind"))
    out += struct.pack(">qq?qqqqb", now - c["first_ago"], now - c["last_ago"],
                       c["connected"], c["served"], c["current"],
                       c["reported"], c["generation"], c["outcome"])
    return out + cstr(c["reason"]) + struct.pack(">b", c["state"]) + b"\0"


def client(cid, inst, state, **kw):
    """One DescribeFleet entry: an agent that applied V2, which resolves
    now, unless kw says otherwise (times are ms before the answer)."""
    c = dict(instance_id=inst, client_id=cid, principal="User:alice",
             peer="10.0.0.7:%d" % (51000 + len(inst)), listener="PLAINTEXT",
             agent_software="dynconf-agent/0.1.0",
             app_software="librdkafka/2.0.2", kind="producer",
             first_ago=60500, last_ago=1500, connected=True, served=V2,
             current=V2, reported=V2, generation=2, outcome=0, reason=None,
             state=state)
    c.update(kw)
    return c


def metadata_v1(brokers, controller):
    """A Metadata v1 response body: brokers [node_id, host, port, rack],
    controller_id, no topics."""
    out = struct.pack(">i", len(brokers))
    for node, host, port in brokers:
        out += struct.pack(">i", node) + s16(host) + struct.pack(">i", port) + s16(None)
    return out + struct.pack(">ii", controller, 0)


# One DescribeFleet request as a fake read it; a v0 request has the v1
# fields as dynconfd reads them there (answer now, from the start, no
# count). after is the cursor (after_client_id, after_instance_id).
FleetReq = collections.namedtuple(
    "FleetReq", "version client_id user since_seq timeout_ms after max_clients")
NO_CURSOR = (None, None)


class Park:
    """What a v1 fake does with the next parked DescribeFleet (one whose
    since_seq is its current sequence):
      "move"     after delay s the fleet becomes fleet (None: the same
                 clients) at the next sequence; the request is answered
                 with the first page of it;
      "timeout"  answered unchanged at its timeout_ms, as dynconfd does;
      "close"    after delay s the connection is closed;
      "garbage"  after delay s answered with a body that does not decode;
      "never"    not answered while the CLI keeps the connection (what
                 it sends meanwhile is dropped, noted in holds()).
    after: an Event waited for (at most 30 s) before the delay starts;
    then: an Event set once the step is done."""

    def __init__(self, do, delay=0.0, fleet=None, after=None, then=None):
        self.do, self.delay, self.fleet = do, delay, fleet
        self.after, self.then = after, then


# Every request any fake received, in order, as (fake name, API key): the
# order across replicas.
EVENTS = []
EVENTS_LOCK = threading.Lock()


class Fake:
    """The scripted server, in a thread; each connection in a thread of
    its own (with replicas the CLI keeps its first connection open while
    it opens another to the same server)."""

    def __init__(self, name="fake", node=None):
        self.name, self.node = name, node
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.port = self.srv.getsockname()[1]
        self.lock = threading.Lock()
        self.script()
        threading.Thread(target=self.serve, daemon=True).start()

    def script(self, offer_fleet=True, configs=None, fleets=None,
               fleet_error=(0, None), metadata=None, metadata_max=1,
               hang=(), fleet_max=0, page=None, empty_more=False, parks=(),
               now=None, page_delay=0.0, stuck=False):
        """configs: snapshots of [(name, value, is_default)]; fleets:
        snapshots of [client(...)]; metadata: None (Metadata not offered),
        [(node_id, host, port)] to list, or "garbage" for an answer too
        short to decode; metadata_max: the
        highest Metadata version offered; hang: the API keys never
        answered (the request is logged as (key, "unanswered")). Clears
        the request log and the count of accepted connections.
        fleet_max: the highest DescribeFleet version offered (v1: see the
        module's doc); page: at most this many clients a page (None: all);
        empty_more: every page after a cursor is empty and says more
        follow; parks: the Park steps of the parked requests, in turn,
        then "timeout"; now: the wall-clock ms the clients' times are
        reckoned from (None: the time of each answer); page_delay:
        seconds before answering a page after a cursor; stuck: the cursor
        is ignored (every page is the first, saying more follow). The sequence
        starts again at the fake's own (self.seq)."""
        with self.lock:
            self.offer_fleet = offer_fleet
            self.configs = list(configs or [[]])
            self.fleets = list(fleets or [[]])
            self.fleet_error = fleet_error
            self.metadata = metadata
            self.metadata_max = metadata_max
            self.hang = hang
            self.log = []
            self.accepted = 0
            self.fleet_max = fleet_max
            self.page = page
            self.empty_more = empty_more
            self.parks = list(parks)
            self.now = now
            self.page_delay = page_delay
            self.stuck = stuck
            # 64 bits, and each fake's its own: a sequence sent to the
            # wrong replica, or cut to 32 bits, is not parked.
            self.seq = (self.node or 9) << 40 | 0x51
            self.fleet_log = []
            self.held = []

    def requests(self, key=None):
        with self.lock:
            return [r for r in self.log if key is None or r[0] == key]

    def connections(self):
        with self.lock:
            return self.accepted

    def fleet_requests(self):
        """Every DescribeFleet received, as FleetReq, in order."""
        with self.lock:
            return list(self.fleet_log)

    def holds(self):
        """The Park step each parked request got, in order."""
        with self.lock:
            return list(self.held)

    def sequence(self):
        with self.lock:
            return self.seq

    def serve(self):
        while True:
            c, _ = self.srv.accept()
            with self.lock:
                self.accepted += 1
            threading.Thread(target=self.converse, args=(c,), daemon=True).start()

    def converse(self, c):
        c.settimeout(60)
        try:
            while self.exchange(c):
                pass
        except (EOFError, OSError, struct.error, IndexError):
            pass
        c.close()

    def exchange(self, c):
        size = struct.unpack(">i", recvn(c, 4))[0]
        rd = Reader(recvn(c, size))
        key, ver, corr = rd.i16(), rd.i16(), rd.i32()
        rd.str16()
        if key == DESCRIBE_FLEET or (key == API_VERSIONS and ver >= 3):
            rd.tags()
        with EVENTS_LOCK:
            EVENTS.append((self.name, key))
        with self.lock:
            hang = key in self.hang
            if hang:
                self.log.append((key, "unanswered"))
            else:
                body = self.answer(key, ver, rd)
        if hang:  # until the CLI hangs up
            while c.recv(4096):
                pass
            return False
        if isinstance(body, FleetReq):
            return self.hold(c, corr, body)
        if key == DESCRIBE_FLEET and self.page_delay and \
                self.fleet_log[-1].after != NO_CURSOR:
            time.sleep(self.page_delay)  # a listing that takes its time
        if body is None:
            return False
        reply(c, key, corr, body)
        return True

    def hold(self, c, corr, q):
        """Parked DescribeFleet q: the next Park step, outside the lock.
        Whether the connection goes on."""
        with self.lock:
            step = self.parks.pop(0) if self.parks else Park("timeout")
            self.held.append(step.do)
        if step.after:
            step.after.wait(30)
        if step.do == "never":  # a request sent meanwhile is noted
            while c.recv(4096):
                with self.lock:
                    self.held.append("sent while parked")
            return False
        time.sleep(q.timeout_ms / 1000 if step.do == "timeout" else step.delay)
        if step.do == "close":
            c.shutdown(socket.SHUT_RDWR)
        elif step.do == "garbage":
            reply(c, DESCRIBE_FLEET, corr, b"\0\0")
        else:
            with self.lock:
                if step.do == "move":
                    if step.fleet is not None:
                        self.fleets = [step.fleet]
                    self.seq += 1
                body = self.fleet_body(q)
            reply(c, DESCRIBE_FLEET, corr, body)
        if step.then:
            step.then.set()
        return step.do != "close"

    def next_of(self, seq):
        return seq.pop(0) if len(seq) > 1 else seq[0]

    def answer(self, key, ver, rd):
        if key == API_VERSIONS:
            keys = [(18, 0, 3), (32, 0, 0), (44, 0, 0)]
            if self.metadata is not None:
                keys.append((METADATA, 0, self.metadata_max))
            if self.offer_fleet:
                keys.append((DESCRIBE_FLEET, 0, self.fleet_max))
            self.log.append((key, ver))
            return apiversions(ver, keys)
        if key == METADATA and self.metadata is not None:
            n = rd.i32()
            self.log.append((key, ver, [rd.str16() for _ in range(max(n, 0))]
                             if n >= 0 else None))
            if self.metadata == "garbage":
                return b"\0\0"
            return metadata_v1(self.metadata, self.metadata[0][0] if self.metadata else -1)
        if key == DESCRIBE_CONFIGS:
            rd.i32()
            rtype, name = rd.i8(), rd.str16()
            self.log.append((key, rtype, name))
            cfgs = self.next_of(self.configs)
            res = struct.pack(">hhb", 0, -1, rtype) + s16(name) + struct.pack(">i", len(cfgs))
            res += b"".join(s16(n) + s16(v) + struct.pack(">???", False, d, False)
                            for n, v, d in cfgs)
            return struct.pack(">ii", 0, 1) + res
        if key == INCREMENTAL_ALTER:
            rd.i32()
            rtype, name = rd.i8(), rd.str16()
            ops = [(rd.str16(), rd.i8(), rd.str16()) for _ in range(rd.i32())]
            self.log.append((key, rtype, name, ops))
            return struct.pack(">iihhb", 0, 1, 0, -1, rtype) + s16(name)
        if key == DESCRIBE_FLEET:
            q = read_fleet_req(ver, rd)
            self.log.append((key, (q.client_id, q.user)))
            self.fleet_log.append(q)
            if ver >= 1 and q.since_seq != -1 and q.since_seq == self.seq:
                return q  # parked: exchange() holds it
            return self.fleet_body(q)
        return None

    def fleet_body(self, q):
        """The answer to DescribeFleet q: v0 the next snapshot whole, v1
        a page of the current one."""
        now = self.now or int(time.time() * 1000)
        err, msg = self.fleet_error
        if q.version == 0:
            cs, v1 = self.next_of(self.fleets), b""
        else:
            cs, more = self.page_of(q)
            v1 = struct.pack(">q?", self.seq, more)
        return (struct.pack(">ih", 0, err) + cstr(msg) + v1 + uv(len(cs) + 1)
                + b"".join(fleet_client(c, now) for c in cs) + b"\0")

    def page_of(self, q):
        """(clients, more): the page of the current snapshot q asks for,
        in dynconfd's order."""
        cs = sorted(self.fleets[0], key=ident)
        if q.after != NO_CURSOR and not self.stuck:
            after = tuple(x or "" for x in q.after)
            cs = [c for c in cs if ident(c) > after]
            if self.empty_more:
                return [], True
        n = min(x for x in (self.page, q.max_clients or None, len(cs)) if x is not None)
        return cs[:n], n < len(cs)


def ident(c):
    """A client's place in a listing: (client_id, instance_id)."""
    return c["client_id"], c["instance_id"]


def read_fleet_req(ver, rd):
    filt = (rd.cstr(), rd.cstr())
    if ver < 1:
        return FleetReq(ver, *filt, -1, 0, NO_CURSOR, 0)
    return FleetReq(ver, *filt, rd.i64(), rd.i32(), (rd.cstr(), rd.cstr()), rd.i32())


def reply(c, key, corr, body):
    head = struct.pack(">i", corr) + (b"\0" if key == DESCRIBE_FLEET else b"")
    c.sendall(struct.pack(">i", len(head) + len(body)) + head + body)


def recvn(c, n):
    d = b""
    while len(d) < n:
        x = c.recv(n - len(d))
        if not x:
            raise EOFError
        d += x
    return d


# ---- running the CLI -----------------------------------------------------

FAKE = None


def cli(*args, tty=False, via=None, limit=60):
    """(exit status, stdout, stderr) of the CLI against the fake (or the
    fake via); with tty its stderr is a pseudo-terminal (what was written
    there is returned raw). A CLI still running after limit s is killed:
    exit status None."""
    cmd = [CLI, "--bootstrap-server", "127.0.0.1:%d" % (via or FAKE).port] + list(args)
    if not tty:
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=limit)
        except subprocess.TimeoutExpired as e:
            return (None, (e.stdout or b"").decode(errors="replace"),
                    (e.stderr or b"").decode(errors="replace"))
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        try:
            chunk = os.read(master, 4096) if r else b""
        except OSError:  # EIO: the CLI closed its end
            chunk = b""
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = p.stdout.read().decode(errors="replace")
    p.wait(60)
    return p.returncode, out, err.decode(errors="replace")


def expect(got, rc, desc, out=None, err=None):
    """got is cli()'s triple: exit status rc, and out / err found in
    stdout / stderr."""
    ok = got[0] == rc and (out is None or out in got[1]) and (err is None or err in got[2])
    if not t.ok(ok, desc):
        t.diag("exit %s (want %d)" % (got[0], rc))
        t.diag("stdout:\n" + got[1])
        t.diag("stderr:\n" + got[2])
    return ok


# ---- --describe-fleet ----------------------------------------------------

MIXED = [
    client("app-b", "i2", UP_TO_DATE),
    client("app-a", "i9", UP_TO_DATE),
    client("app-a", "i1", UP_TO_DATE, first_ago=3723500),
    client("app-c", "i3", BEHIND, reported=V1),
    client("app-d", "i4", REJECTED, kind="consumer", outcome=2,
           reason="heartbeat.interval.ms (8000) must be lower than "
                  "session.timeout.ms (7000), as librdkafka requires"),
    client("app-e", "i5", SILENT, connected=False, reported=V1, last_ago=125500),
    client("app-f", "i6", SILENT, reported=-1, outcome=-1, served=-1),
    client("app-g", "i7", UP_TO_DATE, outcome=1,
           reason="linger.ms pinned by the application"),
]


def line(cid, inst, port, tail, kind="producer", host="10.0.0.7", listener="PLAINTEXT"):
    return ("  %s instance %s, User:alice at %s:%d via %s, %s, "
            "librdkafka/2.0.2, dynconf-agent/0.1.0, generation 2, %s"
            % (cid, inst, host, port, listener, kind, tail))


def test_describe_text():
    FAKE.script(fleets=[MIXED])
    rc, out, err = got = cli("--describe-fleet")
    expect(got, 0, "--describe-fleet: exit 0")
    want = [
        "Up to date (4):",
        line("app-a", "i1", 51002, "reported %s applied, first seen 1h02m ago, last seen 1s ago" % H2),
        line("app-a", "i9", 51002, "reported %s applied, first seen 1m00s ago, last seen 1s ago" % H2),
        line("app-b", "i2", 51002, "reported %s applied, first seen 1m00s ago, last seen 1s ago" % H2),
        line("app-g", "i7", 51002, "reported %s partly applied, first seen 1m00s ago, "
             "last seen 1s ago; linger.ms pinned by the application" % H2),
        "Behind (1):",
        line("app-c", "i3", 51002, "reported %s applied, now %s, first seen 1m00s ago, "
             "last seen 1s ago" % (H1, H2)),
        "Rejected (1):",
        line("app-d", "i4", 51002, "reported %s rejected, first seen 1m00s ago, last seen "
             "1s ago; heartbeat.interval.ms (8000) must be lower than session.timeout.ms "
             "(7000), as librdkafka requires" % H2, kind="consumer"),
        "Silent (2):",
        line("app-e", "i5", 51002, "reported %s applied, gone since 2m05s ago, first seen "
             "1m00s ago, last seen 2m05s ago" % H1),
        line("app-f", "i6", 51002, "never reported, first seen 1m00s ago, last seen 1s ago"),
        "8 clients: 4 up to date, 1 behind, 1 rejected, 2 silent, 0 restart needed",
    ]
    got_lines = out.splitlines()
    if not t.is_(len(got_lines), len(want), "one heading per group, one line per client, a summary"):
        t.diag(out)
    for i, w in enumerate(want):
        g = got_lines[i] if i < len(got_lines) else None
        t.is_(g, w, "line %d: %s" % (i + 1, w.strip()[:60]))
    t.is_(err, "", "nothing on stderr")
    t.is_(FAKE.requests(DESCRIBE_FLEET), [(DESCRIBE_FLEET, (None, None))],
          "no entity: one DescribeFleet for every client")

    FAKE.script(fleets=[[client("evil\x1b]0;owned\x07\nfake line", "i1", UP_TO_DATE,
                                reason="a\rb\x7f")]])
    out = cli("--describe-fleet")[1]
    t.ok(out.splitlines()[1].startswith("  evil?]0;owned??fake line instance i1, ")
         and out.splitlines()[1].endswith("; a?b?") and len(out.splitlines()) == 3,
         "control bytes an agent sent become '?' in the text")
    FAKE.script(fleets=[[client("solo", "i1", BEHIND, reported=V1)]])
    rc, out, err = cli("--describe-fleet")
    t.is_(out.splitlines()[-1],
          "1 client: 0 up to date, 1 behind, 0 rejected, 0 silent, 0 restart needed",
          "one client: singular, empty groups counted as 0")
    t.ok("Up to date" not in out, "an empty group has no heading")
    FAKE.script(fleets=[[]])
    t.is_(cli("--describe-fleet")[1],
          "0 clients: 0 up to date, 0 behind, 0 rejected, 0 silent, 0 restart needed\n",
          "no clients: just the summary")


def test_describe_json():
    weird = b'we"ird\\name\n\xff'
    fleet = MIXED + [client(weird, "i8", UP_TO_DATE)]
    FAKE.script(fleets=[fleet])
    rc, out, err = got = cli("--describe-fleet", "--json")
    expect(got, 0, "--describe-fleet --json: exit 0")
    try:
        doc = json.loads(out)
    except ValueError as e:
        t.ok(False, "--json output is one JSON document (%s)" % e)
        t.diag(out)
        return
    t.ok(True, "--json output is one JSON document")
    cs = doc.get("clients", [])
    t.is_([(c["client_id"], c["instance_id"]) for c in cs],
          [("app-a", "i1"), ("app-a", "i9"), ("app-b", "i2"), ("app-c", "i3"),
           ("app-d", "i4"), ("app-e", "i5"), ("app-f", "i6"), ("app-g", "i7"),
           ('we"ird\\name\n\ufffd', "i8")],
          "clients sorted by client-id then instance; strings escaped, bad UTF-8 replaced")
    by = {c["instance_id"]: c for c in cs}
    t.is_([by[i]["state"] for i in ("i1", "i3", "i4", "i5", "i6")],
          ["up_to_date", "behind", "rejected", "silent", "silent"], "state names")
    t.is_((by["i3"]["reported_version"], by["i3"]["current_version"]), (H1, H2),
          "versions as 16 hex digits")
    t.is_((by["i6"]["reported_version"], by["i6"]["served_version"], by["i6"]["outcome"]),
          (None, None, None), "nothing reported or served: null")
    t.is_((by["i7"]["outcome"], by["i7"]["reason"]),
          ("partly_applied", "linger.ms pinned by the application"), "outcome and reason")
    t.is_((by["i5"]["connected"], by["i4"]["kind"], by["i4"]["generation"]),
          (False, "consumer", 2), "connected, kind, generation")
    now = time.time() * 1000
    t.ok(abs(now - 60500 - by["i2"]["first_seen_ms"]) < 30000 and
         by["i2"]["last_seen_ms"] > by["i2"]["first_seen_ms"], "times in wall-clock ms")
    want_keys = {"client_id", "instance_id", "principal", "peer", "listener", "kind",
                 "app_software", "agent_software", "first_seen_ms", "last_seen_ms",
                 "connected", "served_version", "current_version", "reported_version",
                 "generation", "outcome", "reason", "state"}
    t.is_(set(cs[0]), want_keys, "every field of a client")
    t.is_(doc.get("summary"), {"clients": 9, "up_to_date": 5, "behind": 1,
                               "rejected": 1, "silent": 2, "restart_needed": 0},
          "summary")


def restarting(cid, inst, state=RESTART, **kw):
    """A client that accepted V2 (unless kw says another version) and
    applies it once restarted."""
    return client(cid, inst, state, outcome=OUTCOME_RESTART, reason=RESTART_VALUES, **kw)


def test_describe_restart():
    FAKE.script(fleets=[[client("app-a", "i1", UP_TO_DATE), restarting("app-k", "i2"),
                         restarting("app-k", "i3", reported=V1, state=BEHIND)]])
    got = cli("--describe-fleet")
    expect(got, 0, "--describe-fleet with clients that need a restart: exit 0")
    want = [
        "Up to date (1):",
        line("app-a", "i1", 51002, "reported %s applied, first seen 1m00s ago, "
             "last seen 1s ago" % H2),
        "Behind (1):",
        line("app-k", "i3", 51002, "reported %s restart needed, now %s, first seen "
             "1m00s ago, last seen 1s ago; %s" % (H1, H2, RESTART_VALUES)),
        "Restart needed (1):",
        line("app-k", "i2", 51002, "reported %s restart needed, first seen 1m00s ago, "
             "last seen 1s ago; %s" % (H2, RESTART_VALUES)),
        "3 clients: 1 up to date, 1 behind, 0 rejected, 0 silent, 1 restart needed",
    ]
    t.is_(got[1].splitlines(), want, "... its own group, the outcome in words, the "
          "values a restart would apply as the reason, counted in the summary")
    got = cli("--describe-fleet", "--json")
    try:
        doc = json.loads(got[1])
    except ValueError as e:
        t.ok(False, "--json output is one JSON document (%s)" % e)
        return
    by = {c["instance_id"]: c for c in doc.get("clients", [])}
    t.is_([(by[i]["state"], by[i]["outcome"], by[i]["reason"]) for i in ("i2", "i3")],
          [("restart_needed", "restart_needed", RESTART_VALUES),
           ("behind", "restart_needed", RESTART_VALUES)],
          "--json: state and outcome restart_needed (behind for another version)")
    t.is_(doc.get("summary"), {"clients": 3, "up_to_date": 1, "behind": 1, "rejected": 0,
                               "silent": 0, "restart_needed": 1}, "--json summary")


def test_describe_errors():
    FAKE.script(fleets=[[client("x", "i1", 7)]])
    expect(cli("--describe-fleet"), 1, "a state this CLI does not know: exit 1, said",
           err="state 7")
    FAKE.script(fleets=[[client("x", "i1", 5)]])
    expect(cli("--describe-fleet"), 1, "state 5, the one after restart needed: unknown",
           err="state 5")
    FAKE.script(fleet_error=(31, "no describe on cluster"))
    expect(cli("--describe-fleet"), 1, "the server's error: name and message",
           err="Error: CLUSTER_AUTHORIZATION_FAILED: no describe on cluster")
    FAKE.script(offer_fleet=False)
    expect(cli("--describe-fleet"), 1, "a server without DescribeFleet: said, naming it",
           err="Error: the server at 127.0.0.1:%d does not offer DescribeFleet "
               "(a dynconfd older than the fleet view)" % FAKE.port)
    t.is_(FAKE.requests(DESCRIBE_FLEET), [], "... and not asked")


def test_filters():
    cases = [
        ([], (None, None), "no entity: all"),
        (["--entity-type", "clients", "--entity-default"], (None, None), "<default>: all"),
        (["--entity-type", "clients", "--entity-name", "app-a"], ("app-a", None),
         "clients X: client_id X"),
        (["--entity-type", "users", "--entity-name", "CN=bob,O=x"], (None, "CN=bob,O=x"),
         "users U: user U, as written"),
        (["--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients",
          "--entity-name", "app-a"], ("app-a", "bob"), "users U clients X: both"),
        (["--entity-type", "clients", "--entity-name", "app-a", "--entity-type", "users",
          "--entity-name", "bob"], ("app-a", "bob"), "clients X users U: both"),
    ]
    for args, want, desc in cases:
        FAKE.script()
        rc = cli("--describe-fleet", *args)[0]
        t.is_((rc, FAKE.requests(DESCRIBE_FLEET)), (0, [(DESCRIBE_FLEET, want)]),
              "--describe-fleet filter, " + desc)


# ---- --alter --wait ------------------------------------------------------

CX = ["--entity-type", "clients", "--entity-name", "app-a"]


def test_wait_applied():
    FAKE.script(
        configs=[[("acks", "1", False)], [("acks", "0", True)], [("acks", "0", False)]],
        fleets=[[client("app-a", "i1", BEHIND, reported=V1),
                 client("app-a", "i2", UP_TO_DATE),
                 client("app-a", "i3", BEHIND, connected=False, reported=V1),
                 client("app-a", "i4", SILENT, reported=-1, outcome=-1)],
                [client("app-a", "i1", UP_TO_DATE),
                 client("app-a", "i2", UP_TO_DATE),
                 client("app-a", "i3", BEHIND, connected=False, reported=V1),
                 client("app-a", "i4", SILENT, reported=-1, outcome=-1)]])
    got = cli("--alter", *CX, "--add-config", "acks=0", "--wait")
    expect(got, 0, "--wait: every connected reporting client up to date: exit 0",
           out="Completed updating config for client-id 'app-a'.\n"
               "2 clients applied the change\n"
               "  app-a instance i4, User:alice at 10.0.0.7:51002: silent: cannot tell "
               "(connected, never reported)\n")
    t.is_(got[1].count("\n"), 3, "... a gone client is nobody to wait for")
    t.is_(got[2], "", "no progress output when stderr is not a terminal")
    kinds = [r[0] for r in FAKE.requests() if r[0] != API_VERSIONS]
    t.is_(kinds, [INCREMENTAL_ALTER] + [DESCRIBE_CONFIGS] * 3 + [DESCRIBE_FLEET] * 2,
          "the alter, DescribeConfigs until the entity's own value shows it "
          "(an inherited one does not count), then DescribeFleet until done")
    t.is_(FAKE.requests(DESCRIBE_CONFIGS)[0], (DESCRIBE_CONFIGS, 9, "app-a"),
          "DescribeConfigs asks for the altered entity")
    t.is_(FAKE.requests(DESCRIBE_FLEET)[0], (DESCRIBE_FLEET, ("app-a", None)),
          "DescribeFleet filtered by its client-id")


def test_wait_shown_ops():
    pas = "partition.assignment.strategy"
    FAKE.script(configs=[
        [("acks", "0", False), ("linger.ms", "5", False), (pas, "range", False)],
        [("acks", "0", False), (pas, "range", False)],
        [("acks", "0", False), (pas, "range,cooperative-sticky", False),
         ("linger.ms", "5", True)],
    ], fleets=[[client("app-a", "i1", UP_TO_DATE)]])
    got = cli("--alter", *CX, "--add-config", "acks=0", "--delete-config", "linger.ms",
              "--append-config", pas + "=[cooperative-sticky]", "--wait")
    expect(got, 0, "--wait with set, delete and append: exit 0")
    t.is_(len(FAKE.requests(DESCRIBE_CONFIGS)), 3,
          "shown once the key is gone and the list has the item (an inherited "
          "value of a deleted key is not the entity's)")
    FAKE.script(configs=[[(pas, "range,roundrobin", False)], [(pas, "range", False)]],
                fleets=[[client("app-a", "i1", UP_TO_DATE)]])
    got = cli("--alter", *CX, "--subtract-config", pas + "=roundrobin", "--wait")
    expect(got, 0, "--wait with subtract: exit 0")
    t.is_(len(FAKE.requests(DESCRIBE_CONFIGS)), 2, "shown once the item is gone")


def test_wait_rejected():
    reason = "heartbeat.interval.ms (8000) must be lower than session.timeout.ms (7000)"
    FAKE.script(
        configs=[[("session.timeout.ms", "7000", False)]],
        fleets=[[client("app-c", "i1", BEHIND, reported=V1, kind="consumer"),
                 client("app-a", "i2", UP_TO_DATE)],
                [client("app-c", "i1", REJECTED, outcome=2, reason=reason, kind="consumer"),
                 client("app-a", "i2", BEHIND, reported=V1)]])
    got = cli("--alter", "--entity-type", "clients", "--entity-default",
              "--add-config", "session.timeout.ms=7000", "--wait")
    expect(got, 1, "--wait: a client rejected the change: exit 1 at once, naming it",
           out="0 clients applied the change\n1 client rejected it:\n"
               "  app-c instance i1, User:alice at 10.0.0.7:51002: " + reason + "\n",
           err="Error: 1 client rejected the change")
    t.is_(len(FAKE.requests(DESCRIBE_FLEET)), 2, "... without waiting for the others")
    t.is_(FAKE.requests(DESCRIBE_FLEET)[0], (DESCRIBE_FLEET, (None, None)),
          "the <default> entity's wait watches every client")
    t.is_(FAKE.requests(DESCRIBE_CONFIGS)[0], (DESCRIBE_CONFIGS, 9, "<default>"),
          "... after DescribeConfigs of <default>")


def test_wait_restart():
    FAKE.script(
        configs=[[("acks", "0", False)]],
        fleets=[[client("app-a", "i1", BEHIND, reported=V1),
                 client("app-a", "i2", BEHIND, reported=V1)],
                [client("app-a", "i1", UP_TO_DATE), restarting("app-a", "i2")]])
    start = time.monotonic()
    got = cli("--alter", *CX, "--add-config", "acks=0", "--wait", "--timeout-ms", "30000")
    took = time.monotonic() - start
    expect(got, 5, "--wait: one client up to date, one needs a restart: exit 5, "
           "naming it with the values a restart would apply",
           out="Completed updating config for client-id 'app-a'.\n"
               "1 client applied the change\n1 client needs a restart to apply it:\n"
               "  app-a instance i2, User:alice at 10.0.0.7:51002: %s\n" % RESTART_VALUES,
           err="Error: 1 client needs a restart to apply the change\n")
    t.is_(got[1].count("\n"), 4, "... and nothing else on stdout")
    t.is_(len(FAKE.requests(DESCRIBE_FLEET)), 2,
          "... settled at the listing that shows it: no more DescribeFleet")
    t.ok(took < 10, "... long before --timeout-ms (%.1f s)" % took)

    FAKE.script(configs=[[("acks", "0", False)]],
                fleets=[[restarting("app-a", "i1"), restarting("app-a", "i2")]])
    expect(cli("--alter", *CX, "--add-config", "acks=0", "--wait"), 5,
           "--wait: every client needs a restart: exit 5",
           out="0 clients applied the change\n2 clients need a restart to apply it:\n",
           err="Error: 2 clients need a restart to apply the change")

    reason = "acks=0 is refused by the application"
    FAKE.script(configs=[[("acks", "0", False)]],
                fleets=[[restarting("app-a", "i1"),
                         client("app-a", "i2", REJECTED, outcome=2, reason=reason)]])
    expect(cli("--alter", *CX, "--add-config", "acks=0", "--wait"), 1,
           "--wait: one needs a restart, one rejected: exit 1, the rejection wins",
           out="0 clients applied the change\n1 client needs a restart to apply it:\n"
               "  app-a instance i1, User:alice at 10.0.0.7:51002: %s\n"
               "1 client rejected it:\n"
               "  app-a instance i2, User:alice at 10.0.0.7:51002: %s\n"
               % (RESTART_VALUES, reason),
           err="Error: 1 client rejected the change")

    FAKE.script(configs=[[("acks", "0", False)]],
                fleets=[[restarting("app-a", "i1"),
                         client("app-a", "i2", BEHIND, reported=V1)]])
    expect(cli("--alter", *CX, "--add-config", "acks=0", "--wait", "--timeout-ms", "800"),
           3, "--wait: one needs a restart, one behind: waits, exit 3 at --timeout-ms",
           out="0 clients applied the change\n1 client needs a restart to apply it:\n"
               "  app-a instance i1, User:alice at 10.0.0.7:51002: %s\n"
               "1 client behind:\n" % RESTART_VALUES)


def test_wait_timeout():
    FAKE.script(configs=[[("linger.ms", "7", False)]],
                fleets=[[client("app-b", "i1", BEHIND, reported=V1),
                         client("app-a", "i2", UP_TO_DATE)]])
    start = time.monotonic()
    got = cli("--alter", "--entity-type", "clients", "--entity-name", "app-b",
              "--add-config", "linger.ms=7", "--wait", "--timeout-ms", "1500")
    took = time.monotonic() - start
    expect(got, 3, "--wait: clients still behind at --timeout-ms: exit 3, naming them",
           out="1 client applied the change\n1 client behind:\n"
               "  app-b instance i1, User:alice at 10.0.0.7:51002: reports %s, needs %s\n"
               % (H1, H2),
           err="within 1500 ms (--timeout-ms)")
    t.ok(1.3 <= took < 10, "... after about --timeout-ms (%.1f s)" % took)
    n = len(FAKE.requests(DESCRIBE_FLEET))
    # Pauses of 5, 10, 20, 40, 80 ms, then 100 ms: about 19 in 1.5 s.
    t.ok(10 <= n <= 24, "... asking at once, then every 100 ms at most (%d "
         "DescribeFleet in 1.5 s)" % n)

    FAKE.script(configs=[[("linger.ms", "6", False)]], fleets=[[]])
    got = cli("--alter", "--entity-type", "clients", "--entity-name", "app-b",
              "--add-config", "linger.ms=7", "--wait", "--timeout-ms", "1000")
    expect(got, 3, "--wait: the server never shows the change: exit 3, said",
           err="still does not show the change after 1000 ms")
    t.is_(FAKE.requests(DESCRIBE_FLEET), [], "... and the fleet is never judged")


def test_wait_users():
    FAKE.script(configs=[[("acks", "all", False)]], fleets=[[]])
    got = cli("--alter", "--entity-type", "users", "--entity-name", "bob smith",
              "--entity-type", "clients", "--entity-name", "app/1",
              "--add-config", "acks=all", "--wait")
    expect(got, 4, "--wait on a user's client-id, nobody connected: exit 4 "
           "after the grace period, saying so",
           err="no connected client is concerned by the change")
    t.ok("applied the change" not in got[1], "... not '0 clients applied'")
    t.is_(FAKE.requests(DESCRIBE_CONFIGS)[0], (DESCRIBE_CONFIGS, 10, "bob%20smith/app%2F1"),
          "DescribeConfigs of the type-10 entity as the alter named it")
    t.is_(FAKE.requests(DESCRIBE_FLEET)[0], (DESCRIBE_FLEET, ("app/1", "bob smith")),
          "DescribeFleet filtered by client-id and user, as written")


def test_wait_no_fleet():
    FAKE.script(offer_fleet=False)
    expect(cli("--alter", *CX, "--add-config", "acks=0", "--wait"), 1,
           "--wait on a server without DescribeFleet: exit 1 before altering",
           err="does not offer DescribeFleet (a dynconfd older than the fleet view), which --wait "
               "needs; nothing was changed")
    t.is_(FAKE.requests(INCREMENTAL_ALTER), [], "... no alter was sent")


def test_progress_bar():
    FAKE.script(configs=[[("acks", "0", False)]],
                fleets=[[client("app-a", "i%d" % i, BEHIND, reported=V1) for i in range(3)]
                        + [client("app-a", "i9", UP_TO_DATE)]] * 3
                + [[client("app-a", "i%d" % i, UP_TO_DATE) for i in range(3)]
                   + [client("app-a", "i9", UP_TO_DATE)]])
    rc, out, err = got = cli("--alter", *CX, "--add-config", "acks=0", "--wait", tty=True)
    expect(got, 0, "--wait on a terminal: exit 0", out="4 clients applied the change")
    t.ok("\r[#####...............] 1/4 applied, 3 behind\x1b[K" in err,
         "a progress bar on stderr while clients are behind")
    t.ok(err.endswith("\r\x1b[K"), "... cleared at the end")
    t.ok("\n" not in err, "... on one line")
    if t.failed:
        t.diag(repr(err))


def test_usage():
    cases = [
        ("--wait without --alter", [*CX, "--describe", "--wait"]),
        ("--wait alone", ["--wait"]),
        ("--wait with --dry-run", ["--alter", *CX, "--add-config", "acks=0", "--dry-run",
                                   "--wait"]),
        ("--wait on a broker", ["--alter", "--entity-type", "brokers", "--entity-name", "1",
                                "--add-config", "acks=0", "--wait"]),
        ("--wait with --json", ["--alter", *CX, "--add-config", "acks=0", "--wait",
                                "--json"]),
        ("--describe-fleet with --describe", ["--describe-fleet", "--describe", *CX]),
        ("--describe-fleet with --alter", ["--describe-fleet", "--alter", *CX,
                                           "--add-config", "acks=0"]),
        ("--describe-fleet with --all", ["--describe-fleet", "--all"]),
        ("--describe-fleet with --wait", ["--describe-fleet", "--wait"]),
        ("--describe-fleet for brokers", ["--describe-fleet", "--entity-type", "brokers",
                                          "--entity-name", "1"]),
        ("--describe-fleet --entity-name without a type", ["--describe-fleet",
                                                           "--entity-name", "x"]),
        ("--describe-fleet --entity-type without a name", ["--describe-fleet",
                                                           "--entity-type", "clients"]),
        ("--describe-fleet users --entity-default", ["--describe-fleet", "--entity-type",
                                                     "users", "--entity-default"]),
        ("--reload-keystore with --describe-fleet", ["--reload-keystore",
                                                     "--describe-fleet"]),
    ]
    for desc, args in cases:
        FAKE.script()
        rc, out, err = cli(*args)
        ok = (rc == 2 and out == "" and err.count("\n") == 1
              and "see dynconf-configs --help" in err)
        if not t.ok(ok, "usage error: " + desc):
            t.diag("exit %d, stdout %r, stderr %r" % (rc, out, err))
        t.is_(FAKE.requests(), [], "... nothing sent")


# ---- replicas --------------------------------------------------------------
# Three fakes stand for dynconfd replicas A, B and C (node ids 1, 2, 3);
# the CLI always connects to A, whose Metadata lists the replicas.

A = B = C = None


def listed(*fakes):
    """Metadata's broker list for these fakes."""
    return [(f.node, "127.0.0.1", f.port) for f in fakes]


def dead_port():
    """A port nothing listens on: bound, then closed."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def on_b(cid, inst, state, **kw):
    """A client as replica B sees it: another peer and listener, so the
    output tells whose entry was kept."""
    kw.setdefault("peer", "10.0.1.8:%d" % (52000 + len(inst)))
    kw.setdefault("listener", "SASL_SSL")
    return client(cid, inst, state, **kw)


def b_line(cid, inst, tail, kind="producer"):
    return line(cid, inst, 52002, tail, kind=kind, host="10.0.1.8", listener="SASL_SSL")


FRESH = "first seen 1m00s ago, last seen 1s ago"
A_ONLY = ("Up to date (1):\n"
          + line("app-a", "i1", 51002, "reported %s applied, %s" % (H2, FRESH)) + "\n"
          "1 client: 1 up to date, 0 behind, 0 rejected, 0 silent, 0 restart needed\n")
A_AND_B = ("Up to date (2):\n"
           + line("app-a", "i1", 51002, "reported %s applied, %s" % (H2, FRESH)) + "\n"
           + b_line("app-b", "i2", "reported %s applied, %s" % (H2, FRESH)) + "\n"
           "2 clients: 2 up to date, 0 behind, 0 rejected, 0 silent, 0 restart needed\n")


def script_a_and_b(metadata, **kw_a):
    """A knows app-a i1, B knows app-b i2 (A_AND_B's output); both list
    metadata (only A is asked); C is scripted apart."""
    A.script(metadata=metadata, fleets=[[client("app-a", "i1", UP_TO_DATE)]], **kw_a)
    B.script(metadata=metadata, fleets=[[on_b("app-b", "i2", UP_TO_DATE)]])


def same(got, want, desc):
    """t.is_ for multi-line text: both shown as text when they differ."""
    if not t.ok(got == want, desc):
        t.diag("got:\n" + got)
        t.diag("want:\n" + want)


def test_replicas_describe():
    both = listed(A, B)
    A.script(metadata=both, fleets=[[
        client("app-a", "i1", UP_TO_DATE),
        client("app-b", "i2", SILENT, connected=False, reported=V1, last_ago=30500)]])
    B.script(metadata=both, fleets=[[
        on_b("app-b", "i2", UP_TO_DATE),
        on_b("app-c", "i3", BEHIND, reported=V1)]])
    rc, out, err = got = cli("--describe-fleet", via=A)
    expect(got, 0, "replicas: --describe-fleet through A: exit 0")
    same(out, "Up to date (2):\n"
         + line("app-a", "i1", 51002, "reported %s applied, %s" % (H2, FRESH)) + "\n"
         + b_line("app-b", "i2", "reported %s applied, %s" % (H2, FRESH)) + "\n"
         "Behind (1):\n"
         + b_line("app-c", "i3", "reported %s applied, now %s, %s" % (H1, H2, FRESH)) + "\n"
         "3 clients: 2 up to date, 1 behind, 0 rejected, 0 silent, 0 restart needed\n",
         "... A's and B's clients, each instance once: i2 as B, where it is "
         "connected, sees it")
    t.is_(err, "", "... nothing on stderr")
    t.is_(A.requests(METADATA), [(METADATA, 1, [])],
          "... Metadata v1 (the highest both speak) for no topics, on A")
    t.is_(B.requests(METADATA), [], "... and not on B")
    t.is_((A.connections(), B.connections()), (2, 1),
          "... a connection of its own to each listed replica (A again, and B)")
    t.is_((len(A.requests(DESCRIBE_FLEET)), len(B.requests(DESCRIBE_FLEET))), (1, 1),
          "... DescribeFleet once on each")
    t.is_(B.requests(API_VERSIONS), [(API_VERSIONS, 3)], "... after ApiVersions on B")

    rc, out, err = got = cli("--describe-fleet", "--json", via=A)
    expect(got, 0, "replicas: --describe-fleet --json: exit 0")
    try:
        doc = json.loads(out)
    except ValueError as e:
        t.ok(False, "... one JSON document (%s)" % e)
        t.diag(out)
        return
    t.is_([(c["instance_id"], c["connected"], c["peer"]) for c in doc.get("clients", [])],
          [("i1", True, "10.0.0.7:51002"), ("i2", True, "10.0.1.8:52002"),
           ("i3", True, "10.0.1.8:52002")],
          "... exactly 3 clients, i2 B's (connected)")
    t.is_(doc.get("summary"), {"clients": 3, "up_to_date": 2, "behind": 1, "rejected": 0,
                               "silent": 0, "restart_needed": 0},
          "... summary of the union")


def test_replicas_merge():
    """Which entry of an instance both replicas know is kept, whichever
    replica Metadata lists first."""
    fa = [client("app-m", "i4", SILENT, connected=False, last_ago=90500),
          client("app-m", "i5", SILENT, connected=False, last_ago=10500),
          client("app-m", "i6", UP_TO_DATE, last_ago=9500),
          client("app-m", "i7", UP_TO_DATE, last_ago=2500),
          client("app-m", "i8", UP_TO_DATE, last_ago=8500)]
    fb = [on_b("app-m", "i4", SILENT, connected=False, last_ago=20500),
          on_b("app-m", "i5", SILENT, connected=False, last_ago=40500),
          on_b("app-m", "i6", SILENT, connected=False, last_ago=2500),
          on_b("app-m", "i7", UP_TO_DATE, last_ago=7500),
          on_b("app-m", "i8", UP_TO_DATE, last_ago=1500),
          on_b("app-m", "i9", UP_TO_DATE)]
    want = [("i4", False, "B"), ("i5", False, "A"), ("i6", True, "A"), ("i7", True, "A"),
            ("i8", True, "B"), ("i9", True, "B")]
    for order in ((A, B), (B, A)):
        A.script(metadata=listed(*order), fleets=[fa])
        B.script(fleets=[fb])
        rc, out, err = cli("--describe-fleet", "--json", via=A)
        try:
            cs = json.loads(out)["clients"]
        except (ValueError, KeyError):
            cs = []
        side = {"10.0.0.7": "A", "10.0.1.8": "B"}
        t.is_((rc, [(c["instance_id"], c["connected"], side.get(c["peer"].split(":")[0]))
                    for c in cs], err),
              (0, want, ""),
              "merge, %s listed first: both gone: the one seen last (i4 B's, i5 A's); "
              "connected beats gone seen later (i6); both connected: seen last (i7, i8)"
              % order[0].name)
    rc, out, err = cli("--describe-fleet", via=A)
    i4 = b_line("app-m", "i4", "reported %s applied, gone since 20s ago, first seen 1m00s "
                "ago, last seen 20s ago" % H2)
    if not t.ok(i4 in out.splitlines(), "... text: i4 gone since B's time"):
        t.diag(out)


def test_replicas_wait_applied():
    shown = [("acks", "0", False)]
    A.script(metadata=listed(A, B), configs=[shown],
             fleets=[[client("app-a", "i1", UP_TO_DATE),
                      client("app-a", "i2", UP_TO_DATE, last_ago=4500)]])
    B.script(configs=[[("acks", "1", False)], shown],
             fleets=[[on_b("app-a", "i2", UP_TO_DATE), on_b("app-a", "i3", BEHIND, reported=V1)],
                     [on_b("app-a", "i2", UP_TO_DATE), on_b("app-a", "i3", UP_TO_DATE)]])
    with EVENTS_LOCK:
        mark = len(EVENTS)
    rc, out, err = got = cli("--alter", *CX, "--add-config", "acks=0", "--wait", via=A)
    expect(got, 0, "replicas: --wait, A's clients up to date, B's behind then up to date: exit 0")
    same(out, "Completed updating config for client-id 'app-a'.\n"
         "3 clients applied the change\n", "... the union counted, i2 once")
    t.is_(err, "", "... nothing on stderr")
    t.is_(len(B.requests(DESCRIBE_FLEET)), 2, "... only after B's second snapshot")
    t.is_(len(A.requests(DESCRIBE_FLEET)), 2, "... every poll asks every replica")
    t.is_(B.requests(DESCRIBE_FLEET)[:1], [(DESCRIBE_FLEET, ("app-a", None))],
          "... B's DescribeFleet filtered by the client-id")
    t.is_(B.requests(DESCRIBE_CONFIGS), [(DESCRIBE_CONFIGS, 9, "app-a")] * 2,
          "... DescribeConfigs on B until B shows the change")
    t.is_((len(A.requests(INCREMENTAL_ALTER)), B.requests(INCREMENTAL_ALTER)), (1, []),
          "... one alter, on A")
    with EVENTS_LOCK:
        keys = [k for _, k in EVENTS[mark:] if k in (DESCRIBE_CONFIGS, DESCRIBE_FLEET)]
    t.ok(DESCRIBE_FLEET in keys and DESCRIBE_CONFIGS not in keys[keys.index(DESCRIBE_FLEET):],
         "... no DescribeFleet before every replica shows the change")


def test_replicas_wait_rejected():
    reason = "linger.ms (-1) must be at least 0"
    shown = [("linger.ms", "-1", False)]
    A.script(metadata=listed(A, B), configs=[shown],
             fleets=[[client("app-a", "i1", UP_TO_DATE)]])
    B.script(configs=[shown], fleets=[[on_b("app-a", "i3", REJECTED, outcome=2, reason=reason)]])
    rc, out, err = got = cli("--alter", *CX, "--add-config", "linger.ms=-1", "--wait", via=A)
    expect(got, 1, "replicas: --wait, B's client rejected: exit 1")
    same(out, "Completed updating config for client-id 'app-a'.\n"
         "1 client applied the change\n1 client rejected it:\n"
         "  app-a instance i3, User:alice at 10.0.1.8:52002: " + reason + "\n",
         "... naming B's client and its reason")
    t.is_(err, "Error: 1 client rejected the change\n", "... said on stderr")


def test_replicas_unreachable():
    dead = dead_port()
    script_a_and_b(listed(A, B) + [(3, "127.0.0.1", dead)])
    rc, out, err = got = cli("--describe-fleet", via=A)
    expect(got, 0, "replicas: a listed replica nobody listens for: exit 0")
    same(out, A_AND_B, "... A's and B's clients")
    head = "Warning: replica 3 at 127.0.0.1:%d: " % dead
    tail = "; the clients connected to it are left out\n"
    if not t.ok(err.startswith(head) and err.endswith(tail) and err.count("\n") == 1
                and "cannot connect" in err,
                "... one warning naming its node id and address, and why"):
        t.diag(repr(err))

    dead2 = dead_port()
    A.script(metadata=[(7, "127.0.0.1", dead), (8, "127.0.0.1", dead2)],
             fleets=[[client("app-a", "i1", UP_TO_DATE)]])
    rc, out, err = got = cli("--describe-fleet", via=A)
    expect(got, 0, "replicas: none of the listed reachable: exit 0")
    same(out, A_ONLY, "... the first connection's clients")
    lines = err.splitlines()
    t.ok(len(lines) == 2 and lines[0].startswith("Warning: replica 7 at 127.0.0.1:%d: " % dead)
         and lines[1].startswith("Warning: replica 8 at 127.0.0.1:%d: " % dead2),
         "... a warning for each")
    t.is_((A.connections(), len(A.requests(DESCRIBE_FLEET))), (1, 1),
          "... DescribeFleet on the first connection")


def test_replicas_one():
    script_a_and_b(listed(A))
    rc, out, err = got = cli("--describe-fleet", via=A)
    expect(got, 0, "Metadata lists A alone: exit 0")
    same(out, A_ONLY, "... A's clients")
    t.is_(err, "", "... nothing on stderr")
    t.is_((A.connections(), A.requests(METADATA), len(A.requests(DESCRIBE_FLEET)),
           B.connections()),
          (1, [(METADATA, 1, [])], 1, 0), "... asked, then one connection does it all")

    for desc, metadata, kw, asked in (
            ("Metadata v0 only (it cannot ask for no topics)", listed(A, B),
             dict(metadata_max=0), 0),
            ("a Metadata answer that does not decode", "garbage", {}, 1)):
        script_a_and_b(metadata, **kw)
        rc, out, err = got = cli("--describe-fleet", via=A)
        expect(got, 0, desc + ": exit 0")
        same(out, A_ONLY, "... the first connection's clients")
        t.is_((err, A.connections(), len(A.requests(METADATA)), B.connections()),
              ("", 1, asked, 0), "... one connection, nothing said")


def test_replicas_dropped():
    """A replica whose DescribeFleet fails is left out, wherever Metadata
    lists it, and is not asked again."""
    for order in ((A, C, B), (A, B, C)):
        script_a_and_b(listed(*order))
        C.script(fleet_error=(31, "no describe on cluster"))
        rc, out, err = got = cli("--describe-fleet", via=A)
        where = "last" if order[-1] is C else "in the middle"
        expect(got, 0, "replicas: DescribeFleet fails on C, listed %s: exit 0" % where)
        same(out, A_AND_B, "... A's and B's clients")
        t.is_(err, "Error: CLUSTER_AUTHORIZATION_FAILED: no describe on cluster\n"
              "Warning: the clients connected to 127.0.0.1:%d are left out from now on\n"
              % C.port, "... C's error, then the warning naming it")

    shown = [("acks", "0", False)]
    A.script(metadata=listed(A, C, B), configs=[shown],
             fleets=[[client("app-a", "i1", UP_TO_DATE)]])
    B.script(configs=[shown], fleets=[[on_b("app-a", "i3", BEHIND, reported=V1)],
                                      [on_b("app-a", "i3", UP_TO_DATE)]])
    C.script(configs=[shown], fleet_error=(31, "no describe on cluster"))
    rc, out, err = got = cli("--alter", *CX, "--add-config", "acks=0", "--wait", via=A)
    expect(got, 0, "replicas: --wait, C's DescribeFleet fails: exit 0",
           out="2 clients applied the change\n",
           err="Warning: the clients connected to 127.0.0.1:%d are left out from now on\n"
               % C.port)
    t.is_((len(C.requests(DESCRIBE_FLEET)), len(B.requests(DESCRIBE_FLEET))), (1, 2),
          "... C is not asked again")


def test_replicas_hang():
    script_a_and_b(listed(A, C, B))
    C.script(hang=(DESCRIBE_FLEET,))
    start = time.monotonic()
    rc, out, err = got = cli("--describe-fleet", "--json", via=A)
    took = time.monotonic() - start
    expect(got, 0, "replicas: C never answers DescribeFleet: exit 0")
    t.ok(4.5 <= took < 9, "... after about 5 s (%.1f s)" % took)
    try:
        cs = json.loads(out)["clients"]
    except (ValueError, KeyError):
        cs = []
    t.is_([(c["instance_id"], c["peer"]) for c in cs],
          [("i1", "10.0.0.7:51002"), ("i2", "10.0.1.8:52002")], "... A's and B's clients")
    t.is_((C.requests(DESCRIBE_FLEET), len(B.requests(DESCRIBE_FLEET))),
          ([(DESCRIBE_FLEET, "unanswered")], 1), "... B asked after C gave up")
    lines = err.splitlines()
    t.is_(lines[1:], ["Warning: the clients connected to 127.0.0.1:%d are left out from "
                      "now on" % C.port], "... the warning names C")
    if not t.ok(len(lines) == 2 and lines[0].startswith("Error: ")
                and "127.0.0.1:%d " % C.port in lines[0], "... after an error naming C"):
        t.diag("stderr:\n" + err)


# ---- DescribeFleet v1: pages and parked requests ---------------------------
# The fakes offer DescribeFleet v0-v1: --describe-fleet reads every page,
# and --wait, where every replica speaks v1, parks one DescribeFleet per
# replica instead of polling.

def asked(fake):
    """(since_seq, cursor) of each DescribeFleet fake received."""
    return [(q.since_seq, q.after) for q in fake.fleet_requests()]


def all_v1(fake, client_id=None):
    """Whether every DescribeFleet fake received was v1, filtered by
    client_id, asked for no count of clients, and either answer-now or
    parked for some time."""
    return all(q.version == 1 and q.max_clients == 0 and q.client_id == client_id
               and q.user is None and (q.since_seq == -1 or q.timeout_ms > 0)
               for q in fake.fleet_requests())


def ups(*insts, on=client):
    """app-a's clients insts, up to date (on=on_b: as replica B sees them)."""
    return [on("app-a", i, UP_TO_DATE) for i in insts]


def alter_wait(*extra, via=None):
    """--alter app-a acks=0 --wait (SHOWN is what DescribeConfigs shows)."""
    return cli("--alter", *CX, "--add-config", "acks=0", "--wait", *extra, via=via)


DONE = "Completed updating config for client-id 'app-a'.\n"
SHOWN = [("acks", "0", False)]


def test_v1_pages():
    """Pages read to the end give what one whole answer gives."""
    cases = [((), None, [NO_CURSOR]),
             ((), 3, [NO_CURSOR, ("app-b", "i2"), ("app-e", "i5")]),
             (("--json",), 2, [NO_CURSOR, ("app-a", "i9"), ("app-c", "i3"),
                               ("app-e", "i5")]),
             (("--json",), 1, [NO_CURSOR] + sorted(map(ident, MIXED))[:-1])]
    for args, page, cursors in cases:
        now = int(time.time() * 1000)  # the same times in both answers
        FAKE.script(fleets=[MIXED], now=now)
        want = cli("--describe-fleet", *args)
        FAKE.script(fleets=[MIXED], now=now, fleet_max=1, page=page)
        got = cli("--describe-fleet", *args)
        what = "--describe-fleet %s, v1 pages of %s" % (" ".join(args) or "(text)", page or "all")
        t.is_(got[0], 0, what + ": exit 0")
        same(got[1], want[1], "... the output of v0's one answer")
        t.is_(got[2], "", "... nothing on stderr")
        t.is_(asked(FAKE), [(-1, c) for c in cursors],
              "... one request a page, each after the previous page's last client")
        t.ok(all_v1(FAKE), "... v1, no count asked")

    FAKE.script(fleets=[MIXED], fleet_max=1, page=2, empty_more=True)
    got = cli("--describe-fleet")
    expect(got, 1, "v1: an empty page that says more follow: exit 1",
           err="Error: the server at 127.0.0.1:%d answered an empty page of its fleet "
               "that says more follow\n" % FAKE.port)
    t.is_((got[1], asked(FAKE)), ("", [(-1, NO_CURSOR), (-1, ("app-a", "i9"))]),
          "... refused at the second page, nothing printed")

    FAKE.script(fleets=[MIXED], fleet_max=1, page=2, stuck=True)
    got = cli("--describe-fleet")
    expect(got, 1, "v1: a page that does not move past the cursor: exit 1",
           err="Error: the server at 127.0.0.1:%d answered a page of its fleet "
               "that does not start after the last one\n" % FAKE.port)
    t.is_((got[1], len(asked(FAKE))), ("", 2),
          "... refused at the second page, nothing printed")


def test_v1_park_applied():
    FAKE.script(fleet_max=1, configs=[SHOWN],
                fleets=[[client("app-a", "i1", BEHIND, reported=V1)] + ups("i2")],
                parks=[Park("move", 0.2, fleet=ups("i1", "i2"))])
    seq = FAKE.sequence()
    got = alter_wait()
    expect(got, 0, "v1 --wait: a client behind, up to date when the fleet moves: exit 0",
           out=DONE + "2 clients applied the change\n")
    t.is_(got[2], "", "... nothing on stderr")
    qs = FAKE.fleet_requests()
    t.is_([(q.version, q.client_id, q.user, q.since_seq, q.after, q.max_clients)
           for q in qs],
          [(1, "app-a", None, -1, NO_CURSOR, 0), (1, "app-a", None, seq, NO_CURSOR, 0)],
          "... listed at once, then one request parked on the sequence of that listing")
    t.ok(len(qs) == 2 and 0 < qs[1].timeout_ms <= 30000,
         "... for the time left of --timeout-ms (%s ms)" % [q.timeout_ms for q in qs[1:]])
    t.is_(FAKE.holds(), ["move"], "... and answered when the fleet moved: no polls")

    FAKE.script(fleet_max=1, configs=[SHOWN],
                fleets=[[client("app-a", "i1", BEHIND, reported=V1)]],
                parks=[Park("move", fleet=ups("i1"))])
    got = alter_wait("--timeout-ms", "120000")
    expect(got, 0, "v1 --wait --timeout-ms 120000: exit 0")
    t.is_([q.timeout_ms for q in FAKE.fleet_requests()][1:], [60000],
          "... parked for 60000 ms at most")

    # Pages of 2; the fleet moves twice, i1 up to date the second time.
    behind = client("app-a", "i1", BEHIND, reported=V1)
    FAKE.script(fleet_max=1, page=2, configs=[SHOWN],
                fleets=[[behind] + ups("i2", "i3")],
                parks=[Park("move", 0.05, fleet=[behind] + ups("i2", "i3", "i4")),
                       Park("move", 0.05, fleet=ups("i1", "i2", "i3", "i4"))])
    seq = FAKE.sequence()
    got = alter_wait()
    expect(got, 0, "v1 --wait, pages of 2, the fleet moving twice: exit 0",
           out=DONE + "4 clients applied the change\n")
    after_i2 = (-1, ("app-a", "i2"))
    t.is_(asked(FAKE), [(-1, NO_CURSOR), after_i2, (seq, NO_CURSOR), after_i2,
                        (seq + 1, NO_CURSOR), after_i2],
          "... each parked answer is a first page: the rest asked at once, then "
          "parked again on the new sequence")
    t.is_(FAKE.holds(), ["move", "move"], "... no other request")
    t.ok(all_v1(FAKE, "app-a"), "... all v1, filtered by the client-id, none asking "
         "for a count")

    FAKE.script(fleet_max=1, configs=[SHOWN], fleets=[[behind]],
                parks=[Park("move", 0.05, fleet=[client("app-a", "i1", REJECTED, outcome=2,
                                                        reason="acks=0 is not for us")])])
    got = alter_wait()
    expect(got, 1, "v1 --wait: the fleet moves to a rejection: exit 1, naming it",
           out=DONE + "0 clients applied the change\n1 client rejected it:\n"
           "  app-a instance i1, User:alice at 10.0.0.7:51002: acks=0 is not for us\n",
           err="Error: 1 client rejected the change\n")


def test_v1_park_restart():
    FAKE.script(fleet_max=1, configs=[SHOWN],
                fleets=[[client("app-a", "i1", BEHIND, reported=V1)] + ups("i2")],
                parks=[Park("move", 0.1, fleet=[restarting("app-a", "i1")] + ups("i2"))])
    got = alter_wait()
    expect(got, 5, "v1 --wait: the client behind needs a restart when the fleet moves: "
           "exit 5",
           out=DONE + "1 client applied the change\n1 client needs a restart to apply it:\n"
                      "  app-a instance i1, User:alice at 10.0.0.7:51002: %s\n"
                      % RESTART_VALUES,
           err="Error: 1 client needs a restart to apply the change")
    t.is_(FAKE.holds(), ["move"], "... answered when the fleet moved, not parked again")


def test_v1_park_timeout():
    FAKE.script(fleet_max=1, configs=[[("linger.ms", "7", False)]],
                fleets=[[client("app-b", "i1", BEHIND, reported=V1)]])
    seq = FAKE.sequence()
    got = cli("--alter", "--entity-type", "clients", "--entity-name", "app-b",
              "--add-config", "linger.ms=7", "--wait", "--timeout-ms", "1500")
    expect(got, 3, "v1 --wait: the fleet never moves: exit 3 at --timeout-ms, naming "
           "who is behind",
           out="0 clients applied the change\n1 client behind:\n"
               "  app-b instance i1, User:alice at 10.0.0.7:51002: reports %s, needs %s\n"
               % (H1, H2),
           err="Error: the clients did not all apply the change within 1500 ms "
               "(--timeout-ms)\n")
    qs = FAKE.fleet_requests()
    parked = [q for q in qs[1:] if q.since_seq == seq]
    t.ok(qs[:1] and qs[0].since_seq == -1 and parked and len(parked) == len(qs) - 1,
         "... listed, then parked on the listing's sequence (%s)" % asked(FAKE))
    t.ok(all(0 < q.timeout_ms <= 1500 for q in parked),
         "... each for what is left of --timeout-ms at most (%s ms)"
         % [q.timeout_ms for q in parked])
    t.is_(FAKE.holds()[:1], ["timeout"], "... answered unchanged at its time-out")


def test_v1_park_moving():
    """A fleet that moves at every park still ends at --timeout-ms: no
    parked request goes out once the time is up."""
    FAKE.script(fleet_max=1, configs=[SHOWN], parks=[Park("move")] * 100000,
                fleets=[[client("app-a", "i1", BEHIND, reported=V1)]])
    got = alter_wait("--timeout-ms", "300")
    expect(got, 3, "v1 --wait, a fleet that keeps moving: exit 3 at --timeout-ms")
    # Its last millisecond may see a few (each answered at once); without
    # the deadline check it went on with thousands.
    late = [q for q in FAKE.fleet_requests() if q.timeout_ms == 1]
    t.ok(len(late) <= 20, "... parking stops when the time is up (%d parked "
         "with 1 ms left)" % len(late))


def test_v1_park_paced():
    """A fleet that moves at every park, listed in pages that take 0.1 s
    each after the first: the CLI waits as long as a listing took before
    it parks again, so it lists at most half the time."""
    FAKE.script(fleet_max=1, configs=[SHOWN], parks=[Park("move")] * 1000,
                page=1, page_delay=0.1,
                fleets=[[client("app-a", i, BEHIND, reported=V1)
                         for i in ("i1", "i2", "i3")]])
    got = alter_wait("--timeout-ms", "1600")
    expect(got, 3, "v1 --wait, paged fleet moving at every park: exit 3")
    parked = [q for q in FAKE.fleet_requests() if q.since_seq != -1]
    # A listing takes >= 0.2 s (two delayed pages); without the pause the
    # CLI would park every 0.2 s (8 times), with it every 0.4 s or later.
    t.ok(1 <= len(parked) <= 5, "... parked again only after a pause as long "
         "as the listing (%d parks in 1.6 s)" % len(parked))


def script_v1_pair(a, b, first=None, **kw_a):
    """A and B both speak DescribeFleet v1 and show SHOWN; Metadata lists
    first (default A, B). a, b: (first listing, Park steps). Their
    sequences."""
    A.script(metadata=listed(*(first or (A, B))), fleet_max=1, configs=[SHOWN],
             fleets=[a[0]], parks=a[1], **kw_a)
    B.script(fleet_max=1, configs=[SHOWN], fleets=[b[0]], parks=b[1])
    return A.sequence(), B.sequence()


def test_v1_replicas():
    reason = "acks=0 loses messages"
    sa, sb = script_v1_pair(
        (ups("i1"), [Park("never")]),
        ([on_b("app-a", "i3", BEHIND, reported=V1)],
         [Park("move", 0.2, fleet=[on_b("app-a", "i3", REJECTED, outcome=2, reason=reason)])]))
    got = alter_wait(via=A)
    expect(got, 1, "v1 replicas --wait: B's fleet moves to a rejection, A's never: exit 1",
           out=DONE + "1 client applied the change\n1 client rejected it:\n"
               "  app-a instance i3, User:alice at 10.0.1.8:52002: " + reason + "\n",
           err="Error: 1 client rejected the change\n")
    t.is_((asked(A), asked(B)), ([(-1, NO_CURSOR), (sa, NO_CURSOR)],
                                 [(-1, NO_CURSOR), (sb, NO_CURSOR)]),
          "... each listed once, then parked on its own sequence")
    t.is_((A.holds(), B.holds()), (["never"], ["move"]),
          "... B's answer decided while A's request was still parked")

    # Pages of one on A, whole on B; A moves twice, B never.
    behind = [client("app-a", "i1", BEHIND, reported=V1)]
    sa, sb = script_v1_pair(
        (behind + ups("i2", "i4"), [Park("move", 0.05, fleet=behind + ups("i2", "i5")),
                                    Park("move", 0.05, fleet=ups("i1", "i2", "i5"))]),
        (ups("i3", on=on_b), [Park("never")]), page=1)
    got = alter_wait(via=A)
    expect(got, 0, "v1 replicas --wait, pages of one on A, A's fleet moving twice: exit 0",
           out=DONE + "4 clients applied the change\n")
    t.is_(got[2], "", "... nothing on stderr")
    pages = [(-1, NO_CURSOR), (-1, ("app-a", "i1")), (-1, ("app-a", "i2"))]
    t.is_(asked(A), pages + [(sa, NO_CURSOR)] + pages[1:] + [(sa + 1, NO_CURSOR)] + pages[1:],
          "... on A: its pages, then each parked answer and the pages after it")
    t.is_((asked(B), B.holds()), ([(-1, NO_CURSOR), (sb, NO_CURSOR)], ["never"]),
          "... B parked once, nothing more sent to it: only the replica that "
          "answered is parked again")
    t.ok(all_v1(A, "app-a") and all_v1(B, "app-a"), "... all v1, filtered by the client-id")

    # One replica speaks v0 only: nobody is parked, every replica polled.
    A.script(metadata=listed(A, B), fleet_max=1, configs=[SHOWN], fleets=[ups("i1")],
             parks=[Park("never")])
    B.script(configs=[SHOWN], fleets=[[on_b("app-a", "i3", BEHIND, reported=V1)]] * 3
             + [ups("i3", on=on_b)])
    got = alter_wait(via=A)
    expect(got, 0, "replicas --wait, A v1 and B v0 only: exit 0",
           out=DONE + "2 clients applied the change\n")
    t.is_(got[2], "", "... nothing on stderr")
    t.is_((asked(A), A.holds(), len(B.fleet_requests())),
          ([(-1, NO_CURSOR)] * 4, [], 4),
          "... polled: A asked to answer at once each time B is asked")
    t.ok(all_v1(A, "app-a") and all(q.version == 0 for q in B.fleet_requests()),
         "... v1 on A, v0 on B")


def test_v1_replica_fails():
    """A parked request that fails leaves its replica out; the other's
    listing decides. With one server there is no other."""
    FAKE.script(fleet_max=1, configs=[SHOWN], parks=[Park("close", 0.05)],
                fleets=[[client("app-a", "i1", BEHIND, reported=V1)]])
    expect(alter_wait(), 1, "v1 --wait, one server: it closes the connection on the "
           "parked request: exit 1, said",
           err="Error: DescribeFleet to 127.0.0.1:%d: connection closed by 127.0.0.1:%d\n"
               % (FAKE.port, FAKE.port))

    gone = threading.Event()
    script_v1_pair(([client("app-a", "i1", BEHIND, reported=V1)],
                    [Park("move", 0.05, fleet=ups("i1"), after=gone)]),
                   (ups("i2", on=on_b), [Park("close", 0.05, then=gone)]),
                   first=(B, A))  # B is asked first: a close is seen before A's answer
    got = alter_wait(via=A)
    expect(got, 0, "v1 replicas --wait: B closes the connection on the parked request, "
           "A's client then applies the change: exit 0",
           out=DONE + "1 client applied the change\n")
    t.is_(got[2], "Error: DescribeFleet to 127.0.0.1:%d: connection closed by 127.0.0.1:%d\n"
          "Warning: the clients connected to 127.0.0.1:%d are left out from now on\n"
          % (B.port, B.port, B.port), "... the error, then the warning naming B")
    t.is_((A.holds(), B.holds()), (["move"], ["close"]), "... A stays parked meanwhile")

    for step, why in ((Park("garbage", 0.05), "malformed DescribeFleet v1 response from "
                       "127.0.0.1:%d: " % B.port),
                      (Park("close", 0.05), "connection closed")):
        script_v1_pair(([client("app-a", "i1", BEHIND, reported=V1)], [Park("never")]),
                       (ups("i2", on=on_b), [step]))
        got = alter_wait("--timeout-ms", "1000", via=A)
        expect(got, 3, "v1 replicas --wait: B's parked request gets %s, A's client stays "
               "behind: exit 3" % step.do,
               out="0 clients applied the change\n1 client behind:\n"
                   "  app-a instance i1, User:alice at 10.0.0.7:51002: reports %s, needs %s\n"
                   % (H1, H2))
        lines = got[2].splitlines()
        if not t.ok(len(lines) == 3 and lines[0].startswith("Error: ") and why in lines[0]
                    and lines[1] == "Warning: the clients connected to 127.0.0.1:%d are "
                    "left out from now on" % B.port
                    and lines[2].startswith("Error: the clients did not all apply"),
                    "... B left out (said why), then the time-out"):
            t.diag(got[2])

    # An empty page that says more, on one replica of two.
    A.script(metadata=listed(A, B), fleet_max=1, fleets=[ups("i1")])
    B.script(fleet_max=1, page=1, empty_more=True, fleets=[ups("i2", "i3", on=on_b)])
    got = cli("--describe-fleet", via=A)
    expect(got, 0, "v1 replicas --describe-fleet: B's second page empty, says more: exit 0")
    same(got[1], A_ONLY, "... A's clients only")
    t.is_(got[2], "Error: the server at 127.0.0.1:%d answered an empty page of its fleet "
          "that says more follow\nWarning: the clients connected to 127.0.0.1:%d are "
          "left out from now on\n" % (B.port, B.port), "... B left out, said why")


def on_alarm(_sig, _frame):
    raise TimeoutError("test exceeded 240 s (a request hung?)")


def main():
    global FAKE, A, B, C
    if not os.access(CLI, os.X_OK):
        print("Bail out! %s is not built (set DC_BUILDDIR)" % CLI)
        return 1
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(240)
    try:
        FAKE = Fake()
        A, B, C = Fake("A", 1), Fake("B", 2), Fake("C", 3)
        for test in (test_describe_text, test_describe_json, test_describe_restart,
                 test_describe_errors,
                     test_filters, test_wait_applied, test_wait_shown_ops,
                     test_wait_rejected, test_wait_restart, test_wait_timeout,
                     test_wait_users,
                     test_wait_no_fleet, test_progress_bar, test_usage,
                     test_replicas_describe, test_replicas_merge, test_replicas_wait_applied,
                     test_replicas_wait_rejected, test_replicas_unreachable,
                     test_replicas_one, test_replicas_dropped, test_replicas_hang,
                     test_v1_pages, test_v1_park_applied, test_v1_park_restart,
                     test_v1_park_timeout,
                     test_v1_park_moving, test_v1_park_paced,
                     test_v1_replicas, test_v1_replica_fails):
            test()
    except Exception:  # any failure is a test failure, never a skip
        t.ok(False, "unexpected exception")
        t.diag(traceback.format_exc())
    finally:
        signal.alarm(0)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
