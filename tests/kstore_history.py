#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Histories of dynconfd's replicated Kafka-topic store, Jepsen style.

A workload of client threads alters and reads configs on a random replica
each time and logs every operation, one JSON line each, to a history file;
a checker reads that history together with what every replica ends up
serving and storing (its state, and its audit history) and says whether
the store kept its promises. Faults are injected by the caller (the test
script), which logs them into the same history with `event` / `signal`.

Standard library only. The clients speak the Kafka protocol themselves
(one IncrementalAlterConfigs or DescribeConfigs per operation, on a fresh
connection, never retried), so the history holds exactly what each replica
answered; `--via cli` runs dynconf-configs instead, whose own retries of
NOT_CONTROLLER hide refusals that a retry then overtook.

Subcommands (every time is time.monotonic(), CLOCK_MONOTONIC, which the
test's processes share):

  workload  --replicas H:P,... --log FILE [--clients 3] [--duration S]
            [--stop-file F] [--pause-file F] [--entities 3]
            [--key linger.ms] [--op-timeout-ms 5000] [--alter-ratio 0.5]
            [--pause-ms 40] [--no-positions]: K client threads, each alter
            (a value never written before) or read on a random replica,
            until the stop file appears; while the pause file exists no
            operation starts (PAUSE_FILE.idle appears once none is in
            flight). Reads are DescribeConfigs v4 carrying the highest
            store position the client has read at, as the agent does (a
            replica behind it refuses with REPLICA_NOT_AVAILABLE); with
            --no-positions, v1 without one
  op        --log FILE --client NAME --replica H:P --entity E
            [--op alter|read] [--key K] [--value V] [--timeout-ms T]
            [--min-position P] [--hold-file F]: one operation, logged;
            prints its log line. A read with --min-position carries that
            store position (0: none) and logs the answer's.
            With --hold-file it connects, creates F.ready.PID and sends
            only once F exists (a client whose connection the server
            accepted before it stopped)
  event     --log FILE --name NAME [k=v ...]      a nemesis mark
  signal    --log FILE --name NAME --pid P --sig STOP|CONT|KILL|TERM [k=v]
            logs the mark, then sends the signal
  probe     --log FILE --replicas H:P,... --since NAME [--timeout-s 60]
            [--entity probe]: alters on the replicas in turn until one
            is acknowledged; prints the ms from the last event NAME to
            that acknowledgement (the failover time)
  controller --replica H:P      the node id Metadata names as controller
                                (for dynconfd: the writer), -1 for none
  queued    --port P [--n N] [--timeout-s S]: counts the connections to a
            local listener with unread bytes (requests waiting in the
            socket backlog); with --n waits until there are N, exits 1
            when there never were
  conn      --port P --peer-pid PID: the connection process PID holds to
            the local listener P: "PEER_PORT BYTES_RECEIVED UNREAD" at
            the listener's end (ss)
  await-read --port P --peer-port Q --more-than B [--timeout-s S]: waits
            until the listener's end of that connection has received more
            than B bytes and read them all (the server took a request)
  await-accepted --port P [--timeout-s S]: waits until the listener's
            accept queue is empty
  wait-acks --log FILE --n N [--after NAME] [--timeout-s 60]
            [--not-replica H:P]: waits for N acknowledged alters (invoked
            after the last event NAME, on another replica than H:P)
  check     --log FILE --replica NAME=H:P[@DATADIR] ... [--dynconfd PATH]
            [--history-topic BOOTSTRAP] [--converge-timeout-s 30]
            [--allow-stale] [--since EVENT] [--json FILE]
            prints what it found and a summary line; exit 1 on any
            violation. --since also counts, as *_new, the violations of
            the operations invoked after the last event EVENT.

The checker's rules, on unique values (every alter writes a value nobody
wrote before):
 (1) every acknowledged alter's value is in the final audit history of
     every replica (and of the history topic, if given); each replica's
     final value for each entity/key is the last one of its history, was
     written by an acknowledged or unknown-outcome alter, and no
     acknowledged alter began after the alter that wrote it had been
     acknowledged ("stale final");
 (2) an alter refused (an error answer from the replica, e.g.
     NOT_CONTROLLER or "not applied") appears in no history, no state and
     no read; a read value that is in no history is a "dirty read";
 (3) if alter A was acknowledged before alter B was invoked, A precedes B
     in every history ("reordered"); each history chains (a SET's old
     value is the previous SET's new value);
 (4) monotonic reads per client: no read that carried the client's
     store position returns a value older (in history order) than one the
     client read before with a position ("stale reads"; a violation unless
     --allow-stale). Reads older than the client's own acknowledged alter
     on another replica, or without a position, are counted as
     "stale_unpromised" (no promise covers them);
 (5) every replica serves the same state and holds the same history
     within --converge-timeout-s after the call ("diverged").
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True

RES_CLIENT = 9  # dynconf's resource type for client-id entities (KIP-649)
SRC_DYNAMIC_CLIENT = 7  # DescribeConfigs: the entity's own override
API_METADATA = 3
API_DESCRIBE_CONFIGS = 32
API_INCREMENTAL_ALTER_CONFIGS = 44
NOT_CONTROLLER = 41
REPLICA_NOT_AVAILABLE = 9
TAG_STORE_POSITION = 10000  # dynconf's tagged field: a store position

# An error answer is a refusal: the replica says the alter was not applied.
# Only one that says it does not know is an unknown outcome.
UNKNOWN_ANSWER = re.compile(r"may or may not have been applied", re.I)


# ---- the Kafka protocol, the little of it needed -------------------------

def _str(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _nstr(s):
    return struct.pack(">h", -1) if s is None else _str(s)


def _uvarint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def _cstr(s):
    b = s.encode()
    return _uvarint(len(b) + 1) + b


class Rd:
    def __init__(self, b):
        self.b, self.i = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.i)
        self.i += struct.calcsize(fmt)
        return v[0]

    def i8(self):
        return self.take(">b")

    def i16(self):
        return self.take(">h")

    def i32(self):
        return self.take(">i")

    def nstr(self):
        n = self.i16()
        if n < 0:
            return None
        s = self.b[self.i:self.i + n].decode(errors="replace")
        self.i += n
        return s

    # Flexible versions (KIP-482): unsigned varints, compact strings and
    # arrays (length + 1, 0 = null), tagged fields.
    def uvarint(self):
        v = shift = 0
        while True:
            c = self.take(">B")
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def cnstr(self):
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.b[self.i:self.i + n].decode(errors="replace")
        self.i += n
        return s

    def carray(self):
        return self.uvarint() - 1

    def tags(self):
        """{tag: raw bytes} of a tagged-field section."""
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            out[tag] = self.b[self.i:self.i + size]
            self.i += size
        return out


class Timeout(Exception):
    """No answer in time: the request may or may not have been handled."""


class Refused(Exception):
    """The connection was refused: nothing was sent."""


_corr = [0]
_corr_lock = threading.Lock()
# For `op --hold-file`: called between connecting and sending; and when
# the request was sent (its invocation time).
_hold = [None]
_sent_at = [None]


def _addr(hp):
    host, port = hp.rsplit(":", 1)
    return host.strip("[]"), int(port)


def kafka_call(hp, api, version, body, timeout_s, flexible=False):
    """One request on a fresh connection; the response body (after the
    correlation id, and the header's tagged fields when FLEXIBLE). Raises
    Refused (nothing sent), Timeout, or OSError / ConnectionError (sent,
    outcome unknown)."""
    with _corr_lock:
        _corr[0] += 1
        corr = _corr[0]
    deadline = time.monotonic() + timeout_s
    hdr = struct.pack(">hhi", api, version, corr) + _str("kstore-history")
    if flexible:
        hdr += b"\x00"  # request header v2: no tagged fields
    msg = hdr + body
    try:
        s = socket.create_connection(_addr(hp), timeout=max(0.05, timeout_s))
    except ConnectionRefusedError as e:
        raise Refused(str(e))
    except socket.timeout:
        raise Refused("connect timed out")  # no request was sent
    try:
        if _hold[0]:
            _hold[0]()
            deadline = time.monotonic() + timeout_s
        _sent_at[0] = time.monotonic()
        s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        need = 4
        size = None
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no answer within %d ms" % (timeout_s * 1000))
            s.settimeout(left)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                raise Timeout("no answer within %d ms" % (timeout_s * 1000))
            if not chunk:
                raise ConnectionError("connection closed by %s before the "
                                      "answer" % hp)
            buf += chunk
            if size is None and len(buf) >= 4:
                size = struct.unpack(">i", buf[:4])[0]
                need = 4 + size
        r = Rd(buf[4:need])
        if r.i32() != corr:
            raise ConnectionError("answer with another correlation id")
        if flexible:
            r.tags()  # response header v1
        return r
    finally:
        s.close()


def incremental_alter(hp, entity, key, value, timeout_s):
    """(code, message) of the entity's result; raises as kafka_call."""
    body = (struct.pack(">i", 1) + struct.pack(">b", RES_CLIENT) + _str(entity)
            + struct.pack(">i", 1) + _str(key) + struct.pack(">b", 0)
            + _nstr(str(value)) + struct.pack(">b", 0))
    r = kafka_call(hp, API_INCREMENTAL_ALTER_CONFIGS, 0, body, timeout_s)
    r.i32()  # throttle
    for _ in range(r.i32()):
        code, msg, rtype, name = r.i16(), r.nstr(), r.i8(), r.nstr()
        if rtype == RES_CLIENT and name == entity:
            return code, msg
    raise ConnectionError("the answer does not mention client-id %s" % entity)


def describe(hp, entity, timeout_s):
    """{key: value} of the entity's own overrides; raises as kafka_call,
    or RuntimeError on an error answer."""
    body = (struct.pack(">i", 1) + struct.pack(">b", RES_CLIENT) + _str(entity)
            + struct.pack(">i", -1) + struct.pack(">b", 1))
    r = kafka_call(hp, API_DESCRIBE_CONFIGS, 1, body, timeout_s)
    r.i32()
    out = None
    for _ in range(r.i32()):
        code, msg, rtype, name = r.i16(), r.nstr(), r.i8(), r.nstr()
        cfg = {}
        for _ in range(r.i32()):
            k, v = r.nstr(), r.nstr()
            r.i8()  # read_only
            src = r.i8()
            r.i8()  # sensitive
            for _ in range(r.i32()):
                r.nstr(), r.nstr(), r.i8()
            if src == SRC_DYNAMIC_CLIENT:
                cfg[k] = v
        if rtype == RES_CLIENT and name == entity:
            if code:
                raise RuntimeError("error %d: %s" % (code, msg))
            out = cfg
    if out is None:
        raise ConnectionError("the answer does not mention client-id %s" % entity)
    return out


class Behind(Exception):
    """REPLICA_NOT_AVAILABLE: the replica has applied less of the store's
    log than the position the client asked for."""

    def __init__(self, code, msg):
        super().__init__("error %d: %s" % (code, msg))
        self.code = code


def describe_at(hp, entity, min_position, timeout_s):
    """DescribeConfigs v4 (flexible) carrying dynconf's store-position tag:
    ({key: value} of the entity's own overrides, the replica's position or
    -1). min_position 0: none seen yet (the tag still asks for the
    replica's). Raises Behind on REPLICA_NOT_AVAILABLE, otherwise as
    describe."""
    tags = (_uvarint(1) + _uvarint(TAG_STORE_POSITION) + _uvarint(8)
            + struct.pack(">q", min_position))
    body = (_uvarint(2) + struct.pack(">b", RES_CLIENT) + _cstr(entity)
            + b"\x00" + b"\x00"  # all keys (null), no resource tags
            + b"\x01\x00" + tags)  # synonyms, no documentation
    r = kafka_call(hp, API_DESCRIBE_CONFIGS, 4, body, timeout_s, flexible=True)
    r.i32()
    out = None
    for _ in range(r.carray()):
        code, msg, rtype, name = r.i16(), r.cnstr(), r.i8(), r.cnstr()
        cfg = {}
        for _ in range(r.carray()):
            k, v = r.cnstr(), r.cnstr()
            r.i8()  # read_only
            src = r.i8()
            r.i8()  # sensitive
            for _ in range(r.carray()):
                r.cnstr(), r.cnstr(), r.i8()
                r.tags()
            r.i8()  # config_type
            r.cnstr()  # documentation
            r.tags()
            if src == SRC_DYNAMIC_CLIENT:
                cfg[k] = v
        r.tags()
        if rtype == RES_CLIENT and name == entity:
            if code == REPLICA_NOT_AVAILABLE:
                raise Behind(code, msg)
            if code:
                raise RuntimeError("error %d: %s" % (code, msg))
            out = cfg
    pos = r.tags().get(TAG_STORE_POSITION)
    if out is None:
        raise ConnectionError("the answer does not mention client-id %s" % entity)
    return out, struct.unpack(">q", pos)[0] if pos and len(pos) == 8 else -1


def metadata(hp, timeout_s, topics=None):
    """(controller id, {topic: {partition: leader}}) from Metadata v1."""
    if topics is None:
        body = struct.pack(">i", 0)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)
    r = kafka_call(hp, API_METADATA, 1, body, timeout_s)
    for _ in range(r.i32()):
        r.i32(), r.nstr(), r.i32(), r.nstr()
    controller = r.i32()
    leaders = {}
    for _ in range(r.i32()):
        r.i16()
        name = r.nstr()
        r.i8()
        parts = leaders.setdefault(name, {})
        for _ in range(r.i32()):
            r.i16()
            idx, leader = r.i32(), r.i32()
            for _ in range(r.i32()):
                r.i32()
            for _ in range(r.i32()):
                r.i32()
            parts[idx] = leader
    return controller, leaders


# ---- the history file ----------------------------------------------------

class Log:
    """Appends JSON lines; one write(2) per line on an O_APPEND file, so
    processes appending at once do not interleave."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.lock = threading.Lock()

    def write(self, rec):
        line = (json.dumps(rec, sort_keys=True) + "\n").encode()
        with self.lock:
            os.write(self.fd, line)
        return rec


def read_log(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a kill: not an operation
    except FileNotFoundError:
        pass
    return out


def last_event(recs, name):
    t = None
    for r in recs:
        if r.get("op") == "event" and r.get("name") == name:
            t = r["time"]
    return t


def max_value(recs, entities):
    m = 0
    for r in recs:
        if r.get("op") == "alter" and r.get("entity") in entities:
            try:
                m = max(m, int(r["value"]))
            except (KeyError, TypeError, ValueError):
                pass
    return m


# ---- one operation -------------------------------------------------------

def do_alter(hp, entity, key, value, timeout_ms, via="raw", configs=None):
    """(outcome, code, error): ok / fail (the replica refused) / unknown."""
    if via == "cli":
        return cli_alter(hp, entity, key, value, timeout_ms, configs)
    try:
        code, msg = incremental_alter(hp, entity, key, value, timeout_ms / 1000)
    except Refused as e:
        return "fail", None, "connection refused: %s" % e
    except Timeout as e:
        return "unknown", None, str(e)
    except (OSError, ConnectionError, struct.error) as e:
        return "unknown", None, "%s: %s" % (type(e).__name__, e)
    if code == 0:
        return "ok", 0, None
    if msg and UNKNOWN_ANSWER.search(msg):
        return "unknown", code, msg
    return "fail", code, msg or ""


def do_read(hp, entity, key, timeout_ms, via="raw", configs=None,
            min_position=None):
    """(outcome, value or None, error, position). With min_position (an
    int, 0 for none seen yet) the read carries the store position: the
    replica's answer says its own (-1 when it keeps no log)."""
    if via == "cli":
        return cli_read(hp, entity, key, timeout_ms, configs) + (-1,)
    pos = -1
    try:
        if min_position is None:
            cfg = describe(hp, entity, timeout_ms / 1000)
        else:
            cfg, pos = describe_at(hp, entity, min_position, timeout_ms / 1000)
    except Refused as e:
        return "fail", None, "connection refused: %s" % e, -1
    except Timeout as e:
        return "unknown", None, str(e), -1
    except (OSError, ConnectionError, RuntimeError, Behind, ValueError,
            struct.error) as e:
        return "fail", None, "%s: %s" % (type(e).__name__, e), -1
    return "ok", cfg.get(key), None, pos


CLI_ERR = re.compile(r"\b([A-Z_]{4,}|-?\d+): ")


def cli_alter(hp, entity, key, value, timeout_ms, configs):
    cmd = [configs, "--bootstrap-server", hp, "--timeout-ms", str(timeout_ms),
           "--entity-type", "clients", "--entity-name", entity, "--alter",
           "--add-config", "%s=%s" % (key, value)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout_ms / 1000 + 10)
    except subprocess.TimeoutExpired:
        return "unknown", None, "dynconf-configs did not exit"
    err = (p.stderr + p.stdout).strip().replace("\n", " ")
    if p.returncode == 0:
        return "ok", 0, None
    code = 41 if "NOT_CONTROLLER" in err else None
    # Refused by the server, or never sent (one server: its connect failed).
    if code or re.search(r"not applied|cannot connect to", err):
        return "fail", code, err
    return "unknown", None, err


def cli_read(hp, entity, key, timeout_ms, configs):
    cmd = [configs, "--bootstrap-server", hp, "--timeout-ms", str(timeout_ms),
           "--entity-type", "clients", "--entity-name", entity, "--describe"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout_ms / 1000 + 10)
    except subprocess.TimeoutExpired:
        return "unknown", None, "dynconf-configs did not exit"
    if p.returncode:
        return "fail", None, (p.stderr + p.stdout).strip().replace("\n", " ")
    m = re.search(r"^\s*%s=(\S*) " % re.escape(key), p.stdout, re.M)
    return "ok", m.group(1) if m else None, None


def run_op(log, client, op, hp, entity, key, value, timeout_ms, via, configs,
           min_position=None):
    """Runs and logs one operation; returns its log record. Reads with
    min_position (see do_read) log it and the answer's position."""
    t0 = time.monotonic()
    if op == "alter":
        outcome, code, err = do_alter(hp, entity, key, value, timeout_ms, via,
                                      configs)
        if _hold[0] and _sent_at[0]:
            t0 = _sent_at[0]  # invoked when sent, not when connected
        rec = {"client": client, "op": "alter", "entity": entity, "key": key,
               "value": str(value), "replica": hp, "invoke": t0,
               "complete": time.monotonic(), "outcome": outcome}
        if code is not None:
            rec["code"] = code
        if err is not None:
            rec["error"] = err
    else:
        outcome, got, err, pos = do_read(hp, entity, key, timeout_ms, via,
                                         configs, min_position)
        rec = {"client": client, "op": "read", "entity": entity, "key": key,
               "replica": hp, "invoke": t0, "complete": time.monotonic(),
               "outcome": outcome, "read": got}
        if min_position is not None:
            rec["min_position"] = min_position
            rec["position"] = pos
        if err is not None:
            rec["error"] = err
    return log.write(rec)


# ---- subcommands ---------------------------------------------------------

def cmd_workload(a):
    replicas = a.replicas.split(",")
    entities = ["%s-%d" % (a.entity_prefix, i) for i in range(a.entities)]
    log = Log(a.log)
    counter = [max_value(read_log(a.log), set(entities))]
    lock = threading.Lock()
    end = time.monotonic() + a.duration
    stats = {"ops": 0}

    def stop():
        return time.monotonic() >= end or (a.stop_file and
                                           os.path.exists(a.stop_file))

    idle = set()

    def paused(i):
        """Holds client i while the pause file exists; the last one to
        hold writes PAUSE_FILE.idle (no operation of the workload is in
        flight then)."""
        if not a.pause_file or not os.path.exists(a.pause_file):
            return
        with lock:
            idle.add(i)
            if len(idle) == a.clients:
                open(a.pause_file + ".idle", "w").close()
        while os.path.exists(a.pause_file) and not stop():
            time.sleep(0.01)
        with lock:
            idle.discard(i)
            try:
                os.unlink(a.pause_file + ".idle")
            except FileNotFoundError:
                pass

    def client(i):
        rnd = random.Random((a.seed or 0) * 1000 + i if a.seed else None)
        name = "%s%d" % (a.client_prefix, i)
        # The highest store position this client has read at (as the agent
        # keeps it): its reads ask for at least that much.
        seen = [0] if a.positions else None
        while not stop():
            paused(i)
            if stop():
                break
            hp = rnd.choice(replicas)
            entity = rnd.choice(entities)
            if rnd.random() < a.alter_ratio:
                with lock:
                    counter[0] += 1
                    v = counter[0]
                run_op(log, name, "alter", hp, entity, a.key, v,
                       a.op_timeout_ms, a.via, a.configs)
            else:
                rec = run_op(log, name, "read", hp, entity, a.key, None,
                             a.op_timeout_ms, a.via, a.configs,
                             seen[0] if seen else None)
                if seen and rec["outcome"] == "ok":
                    seen[0] = max(seen[0], rec.get("position", -1))
            with lock:
                stats["ops"] += 1
            time.sleep(a.pause_ms / 1000 * (0.5 + rnd.random()))

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(1, a.clients + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("workload: %d operations" % stats["ops"])
    return 0


def cmd_op(a):
    if a.hold_file:
        def hold():
            # Connected (the server accepts it while it runs): say so, then
            # send only once the hold file appears.
            open("%s.ready.%d" % (a.hold_file, os.getpid()), "w").close()
            end = time.monotonic() + a.timeout_ms / 1000
            while not os.path.exists(a.hold_file):
                if time.monotonic() >= end:
                    break
                time.sleep(0.01)
        _hold[0] = hold
    rec = run_op(Log(a.log), a.client, a.op, a.replica, a.entity, a.key,
                 a.value, a.timeout_ms, a.via, a.configs, a.min_position)
    print(json.dumps(rec, sort_keys=True), flush=True)
    return 0


def fields(kvs):
    out = {}
    for kv in kvs or []:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def cmd_event(a):
    rec = {"op": "event", "name": a.name, "time": time.monotonic()}
    rec.update(fields(a.fields))
    Log(a.log).write(rec)
    return 0


def cmd_signal(a):
    sig = getattr(signal, "SIG" + a.sig.upper().replace("SIG", ""))
    rec = {"op": "event", "name": a.name, "time": time.monotonic(),
           "pid": a.pid, "signal": a.sig.upper()}
    rec.update(fields(a.fields))
    try:
        os.kill(a.pid, sig)
    except OSError as e:
        rec["error"] = str(e)
        Log(a.log).write(rec)
        print("kill %s %d: %s" % (a.sig, a.pid, e), file=sys.stderr)
        return 1
    Log(a.log).write(rec)
    return 0


def cmd_probe(a):
    replicas = a.replicas.split(",")
    log = Log(a.log)
    since = last_event(read_log(a.log), a.since)
    if since is None:
        print("probe: no event %s in %s" % (a.since, a.log), file=sys.stderr)
        return 2
    v = max(max_value(read_log(a.log), {a.entity}), a.base)
    end = time.monotonic() + a.timeout_s
    i = 0
    while time.monotonic() < end:
        v += 1
        hp = replicas[i % len(replicas)]
        i += 1
        rec = run_op(log, "probe", "alter", hp, a.entity, a.key, v,
                     a.op_timeout_ms, a.via, a.configs)
        if rec["outcome"] == "ok":
            print("%d" % round((rec["complete"] - since) * 1000))
            return 0
        time.sleep(0.05)
    print("probe: no alter acknowledged within %d s" % a.timeout_s,
          file=sys.stderr)
    return 1


def cmd_controller(a):
    try:
        c, _ = metadata(a.replica, a.timeout_ms / 1000)
    except (Refused, Timeout, OSError, ConnectionError, struct.error) as e:
        print("controller: %s: %s" % (a.replica, e), file=sys.stderr)
        return 1
    print(c)
    return 0


def queued_conns(port):
    """Established connections to local port with unread bytes."""
    n = 0
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    w = line.split()
                    lport = int(w[1].rsplit(":", 1)[1], 16)
                    rx = int(w[4].split(":")[1], 16)
                    if lport == port and w[3] == "01" and rx > 0:
                        n += 1
        except OSError:
            pass
    return n


def ss_conns(port):
    """[(local port, peer port, recv-q, bytes_received, pid or None)] of
    the established TCP connections from or to local port (ss -tnpi)."""
    out = []
    for filt in ("( sport = :%d )" % port, "( dport = :%d )" % port):
        p = subprocess.run(["ss", "-tnpiH", "state", "established", filt],
                           capture_output=True, text=True, timeout=10)
        lines = p.stdout.splitlines()
        i = 0
        while i < len(lines):
            w = lines[i].split()
            info = lines[i + 1] if i + 1 < len(lines) and \
                lines[i + 1][:1].isspace() else ""
            i += 2 if info else 1
            if len(w) < 4:
                continue
            lport = int(w[2].rsplit(":", 1)[1])
            rport = int(w[3].rsplit(":", 1)[1])
            m = re.search(r"bytes_received:(\d+)", info)
            pm = re.search(r"pid=(\d+)", lines[i - (2 if info else 1)])
            out.append((lport, rport, int(w[0]), int(m.group(1)) if m else 0,
                        int(pm.group(1)) if pm else None))
    return out


def cmd_conn(a):
    """The connection process peer_pid holds to local port: prints the
    peer's port and, at the listener's end, bytes received and unread."""
    for lport, rport, _, _, pid in ss_conns(a.port):
        if rport == a.port and pid == a.peer_pid:
            for lp2, rp2, recvq, got, _ in ss_conns(a.port):
                if lp2 == a.port and rp2 == lport:
                    print("%d %d %d" % (lport, got, recvq))
                    return 0
    return 1


def cmd_await_read(a):
    """Waits until the listener's end of the connection from peer port has
    received more than --more-than bytes and read them all (a request
    arrived and the server took it)."""
    end = time.monotonic() + a.timeout_s
    last = None
    while True:
        for lport, rport, recvq, got, _ in ss_conns(a.port):
            if lport == a.port and rport == a.peer_port:
                last = (got, recvq)
                if got > a.more_than and recvq == 0:
                    print("%d %d" % last)
                    return 0
        if time.monotonic() >= end:
            print("%s %s" % last if last else "gone")
            return 1
        time.sleep(0.02)


def cmd_await_accepted(a):
    """Waits until the listener on port has no connection waiting to be
    accepted (ss: a listening socket's Recv-Q is its accept queue)."""
    end = time.monotonic() + a.timeout_s
    while True:
        p = subprocess.run(["ss", "-ltnH", "( sport = :%d )" % a.port],
                           capture_output=True, text=True, timeout=10)
        w = p.stdout.split()
        q = int(w[1]) if len(w) > 1 and w[1].isdigit() else -1
        if q == 0:
            return 0
        if time.monotonic() >= end:
            print("accept queue: %s" % q)
            return 1
        time.sleep(0.02)


def cmd_queued(a):
    end = time.monotonic() + a.timeout_s
    while True:
        n = queued_conns(a.port)
        if a.n is None or n >= a.n:
            print(n)
            return 0
        if time.monotonic() >= end:
            print(n)
            return 1
        time.sleep(0.05)


def cmd_wait_acks(a):
    end = time.monotonic() + a.timeout_s
    while True:
        recs = read_log(a.log)
        since = last_event(recs, a.after) if a.after else None
        n = sum(1 for r in recs if r.get("op") == "alter" and
                r.get("outcome") == "ok" and
                (since is None or r["invoke"] > since) and
                (not a.not_replica or r["replica"] != a.not_replica))
        if n >= a.n:
            print(n)
            return 0
        if time.monotonic() >= end:
            print(n)
            return 1
        time.sleep(0.1)


# ---- the checker ---------------------------------------------------------

class Replica:
    def __init__(self, spec):
        name, _, rest = spec.partition("=")
        hp, _, datadir = rest.partition("@")
        self.name, self.hp, self.datadir = name, hp, datadir or None


HIST_LINE = re.compile(r"^(\S+) (\S+) (\S*) (\S+) (\w+):(\S+) (\S+) "
                       r"(SET|DELETE|APPEND|SUBTRACT) (.*) -> (.*)$")


def read_history(dynconfd, args, timeout_s=30):
    """[(type, entity, key, op, old, new), ...] in the history's order, or
    None with why."""
    try:
        p = subprocess.run([dynconfd] + args + ["--history"],
                           capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "dynconfd --history did not end within %d s" % timeout_s
    if p.returncode:
        return None, "dynconfd --history exited %d: %s" % (
            p.returncode, p.stderr.strip()[-300:])
    out = []
    for line in p.stdout.splitlines():
        m = HIST_LINE.match(line)
        if m:
            out.append((m.group(5), m.group(6), m.group(7), m.group(8),
                        m.group(9), m.group(10)))
    return out, None


def snapshot(a, replicas, keys):
    """What every replica serves and stores now."""
    snap = {}
    for r in replicas:
        state, why = {}, None
        for entity in sorted({e for e, _ in keys}):
            try:
                cfg = describe(r.hp, entity, 5)
            except (Refused, Timeout, OSError, ConnectionError, RuntimeError,
                    struct.error) as e:
                why = "describe %s: %s" % (entity, e)
                state = None
                break
            for e2, k in keys:
                if e2 == entity:
                    state[(entity, k)] = cfg.get(k)
        hist, hwhy = (None, "no data dir given")
        if r.datadir:
            hist, hwhy = read_history(a.dynconfd, ["--data-dir", r.datadir])
        snap[r.name] = {"state": state, "state_err": why, "hist": hist,
                        "hist_err": hwhy if r.datadir else None}
    if a.history_topic:
        hist, hwhy = read_history(a.dynconfd, ["--store", "kafka",
                                               "--store-bootstrap",
                                               a.history_topic] +
                                  (["--store-topic", a.store_topic]
                                   if a.store_topic else []))
        snap["history-topic"] = {"state": None, "state_err": None,
                                 "hist": hist, "hist_err": hwhy,
                                 "topic": True}
    return snap


def majority(values):
    """The most common of values (by repr), or None."""
    counts = {}
    for v in values:
        if v is None:
            continue
        k = json.dumps(v, sort_keys=True, default=str)
        counts.setdefault(k, [0, v])[0] += 1
    if not counts:
        return None
    return max(counts.values(), key=lambda c: c[0])[1]


def diverged_of(snap, replicas):
    """Names of sources that differ from the majority's state or history."""
    states = [snap[r.name]["state"] for r in replicas]
    ref_state = majority([None if s is None else sorted(s.items())
                          for s in states])
    hists = [s["hist"] for s in snap.values()]
    ref_hist = majority(hists)
    bad = []
    for name, s in snap.items():
        if not s.get("topic"):
            st = None if s["state"] is None else sorted(s["state"].items())
            if st is None or st != ref_state:
                bad.append(name)
                continue
        if s["hist_err"] is not None or (s["hist"] is not None and
                                         s["hist"] != ref_hist):
            bad.append(name)
    return bad, ref_hist


def pct(xs, p):
    if not xs:
        return 0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def cmd_check(a):
    replicas = [Replica(s) for s in a.replica]
    recs = read_log(a.log)
    ops = [r for r in recs if r.get("op") in ("alter", "read")]
    alters = [r for r in ops if r["op"] == "alter"]
    reads = [r for r in ops if r["op"] == "read"]
    keys = sorted({(r["entity"], r["key"]) for r in ops})
    by_value = {}
    for r in alters:
        by_value.setdefault((r["entity"], r["key"], r["value"]), []).append(r)
    dup_values = [k for k, v in by_value.items() if len(v) > 1]

    # (5) first, while polling: the state every replica converges to.
    t0 = time.monotonic()
    deadline = t0 + a.converge_timeout_s
    while True:
        snap = snapshot(a, replicas, keys)
        bad, ref_hist = diverged_of(snap, replicas)
        if not bad or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    converge_s = time.monotonic() - t0

    details = []

    def note(kind, msg):
        if sum(1 for k, _ in details if k == kind) < a.max_details:
            details.append((kind, msg))

    for name in bad:
        s = snap[name]
        why = s["state_err"] or s["hist_err"]
        if why is None:
            ref_state = majority([None if snap[r.name]["state"] is None else
                                  sorted(snap[r.name]["state"].items())
                                  for r in replicas])
            diff = []
            if not s.get("topic") and s["state"] is not None:
                for (k, v) in sorted(s["state"].items()):
                    want = dict((tuple(x[0]) if isinstance(x[0], list)
                                 else x[0], x[1]) for x in (ref_state or []))
                    if want.get(k) != v:
                        diff.append("%s/%s=%s (majority %s)" % (k[0], k[1], v,
                                                               want.get(k)))
            if s["hist"] is not None and s["hist"] != ref_hist:
                diff.append("history of %d rows (majority %d)" % (
                    len(s["hist"]), len(ref_hist or [])))
            why = "; ".join(diff[:4]) or "differs"
        note("diverged", "%s: %s" % (name, why))

    # Histories: value -> position, per source.
    pos = {}
    for name, s in snap.items():
        if s["hist"] is None:
            continue
        p = {}
        for i, (typ, entity, key, op, old, new) in enumerate(s["hist"]):
            if typ == "client" and op == "SET":
                p.setdefault((entity, key, new), i)
        pos[name] = p

    # (1) acknowledged alters: in every history; final values.
    ok_alters = [r for r in alters if r["outcome"] == "ok"]
    since = last_event(recs, a.since) if a.since else None

    def is_new(r):
        return since is not None and r["invoke"] >= since

    lost = set()
    lost_new = set()
    for r in ok_alters:
        k = (r["entity"], r["key"], r["value"])
        for name, p in pos.items():
            if k not in p:
                lost.add(k)
                if is_new(r):
                    lost_new.add(k)
                note("lost", "%s=%s acknowledged by %s to %s at %.3f is not "
                     "in %s's history" % (r["entity"], r["value"], r["replica"],
                                           r["client"], r["complete"], name))
    for name, s in snap.items():
        if s["hist_err"] is not None and name in pos:
            pass
        if s["hist"] is None and not s.get("topic") and replicas and \
                next(x for x in replicas if x.name == name).datadir:
            note("lost", "%s: no history (%s)" % (name, s["hist_err"]))
    stale_final = 0
    for r in replicas:
        st = snap[r.name]["state"]
        if st is None:
            continue
        hist = snap[r.name]["hist"]
        for (entity, key) in keys:
            v = st.get((entity, key))
            writers = [w for w in by_value.get((entity, key, v), [])]
            acked = [w for w in ok_alters if (w["entity"], w["key"]) ==
                     (entity, key)]
            bad_final = None
            if v is None:
                if acked:
                    bad_final = "unset, but %d alters were acknowledged" % len(acked)
            elif not writers:
                bad_final = "%s, which no client wrote" % v
            elif all(w["outcome"] == "fail" for w in writers):
                bad_final = "%s, which was refused" % v
            else:
                w = min(writers, key=lambda x: x.get("complete", 0))
                if w["outcome"] == "ok":
                    later = [x for x in acked if x["invoke"] > w["complete"]]
                    if later:
                        bad_final = ("%s, though %s=%s was acknowledged after "
                                     "it (invoked %.3f > %.3f)" % (
                                         v, entity, later[-1]["value"],
                                         later[-1]["invoke"], w["complete"]))
            if hist is not None and v is not None:
                last = [h for h in hist if h[1] == entity and h[2] == key]
                if last and last[-1][5] != v:
                    bad_final = (bad_final or "") + (
                        " serves %s while its history ends with %s" %
                        (v, last[-1][5]))
            if bad_final:
                stale_final += 1
                note("final", "%s serves %s/%s = %s" % (r.name, entity, key,
                                                       bad_final))

    # (2) refused alters: nowhere.
    failed = [r for r in alters if r["outcome"] == "fail"]
    refused_applied = 0
    refused_applied_new = 0
    read_values = {}
    for r in reads:
        if r["outcome"] == "ok" and r.get("read") is not None:
            read_values.setdefault((r["entity"], r["key"], r["read"]), r)
    for r in failed:
        k = (r["entity"], r["key"], r["value"])
        where = [name for name, p in pos.items() if k in p]
        where += ["%s's state" % x.name for x in replicas
                  if snap[x.name]["state"] is not None and
                  snap[x.name]["state"].get(k[:2]) == k[2]]
        if k in read_values:
            where.append("a read on %s" % read_values[k]["replica"])
        if where:
            refused_applied += 1
            refused_applied_new += is_new(r)
            note("refused-applied", "%s=%s refused by %s to %s (code %s: %s) "
                 "at %.3f, yet in %s" % (r["entity"], r["value"], r["replica"],
                                         r["client"], r.get("code"),
                                         (r.get("error") or "")[:200],
                                         r["complete"], ", ".join(where)))
    all_hist_values = set()
    for p in pos.values():
        all_hist_values.update(p.keys())
    dirty = 0
    dirty_new = 0
    for k, r in read_values.items():
        if k not in all_hist_values:
            dirty += 1
            dirty_new += is_new(r)
            note("dirty-read", "%s read %s=%s on %s at %.3f; no history has it"
                 % (r["client"], k[0], k[2], r["replica"], r["complete"]))

    # (3) real-time order of acknowledged alters, in every history.
    reordered = set()
    reordered_new = set()
    chain = 0
    for name, p in pos.items():
        seq = sorted(((p[(r["entity"], r["key"], r["value"])], i, r)
                      for i, r in enumerate(ok_alters)
                      if (r["entity"], r["key"], r["value"]) in p),
                     key=lambda x: (x[0], x[1]))
        # B at position i is out of order when some A after it in the
        # history completed before B was invoked.
        suffix_min = [None] * (len(seq) + 1)
        m = (float("inf"), None)
        for j in range(len(seq) - 1, -1, -1):
            suffix_min[j + 1] = m
            c = seq[j][2]["complete"]
            if c < m[0]:
                m = (c, seq[j][2])
        for j, (_, _, b) in enumerate(seq):
            c, a_rec = suffix_min[j + 1]
            if c < b["invoke"]:
                reordered.add((b["entity"], b["key"], b["value"]))
                if is_new(b):
                    reordered_new.add((b["entity"], b["key"], b["value"]))
                note("reordered", "in %s: %s=%s (acknowledged %.3f) comes "
                     "after %s=%s (invoked %.3f)" % (
                         name, a_rec["entity"], a_rec["value"], c,
                         b["entity"], b["value"], b["invoke"]))
        hist = snap[name]["hist"]
        prev = {}
        for (typ, entity, key, op, old, new) in hist:
            if typ != "client":
                continue
            want = prev.get((entity, key), "(unset)")
            if op in ("SET", "DELETE") and old != want:
                chain += 1
                note("chain", "in %s: %s/%s %s %s -> %s after -> %s" % (
                    name, entity, key, op, old, new, want))
            prev[(entity, key)] = new

    # (4) monotonic reads per client.
    ref = None
    for r in replicas:
        if r.name in pos:
            ref = pos[r.name]
            break
    if ref is None and pos:
        ref = next(iter(pos.values()))
    # A read that carried the client's store position is promised to be
    # no older than what the client read before with one ("stale reads");
    # older than its own acknowledged alter on another replica, or without
    # a position, nothing is promised ("stale, unpromised": counted only).
    stale = 0
    stale_new = 0
    unpromised = 0
    by_client = {}
    for r in ops:
        by_client.setdefault(r["client"], []).append(r)
    for client, seq in by_client.items():
        seq.sort(key=lambda r: r["invoke"])
        seen = {}       # (entity, key) -> (history index, value): any op
        seen_read = {}  # the same, of reads that carried a position
        for r in seq:
            if r["outcome"] != "ok":
                continue
            k2 = (r["entity"], r["key"])
            v = r["value"] if r["op"] == "alter" else r.get("read")
            here = -1 if v is None else (ref or {}).get(k2 + (v,))
            if here is None:
                continue  # not in the history: a dirty read, counted above
            with_pos = r["op"] == "read" and "min_position" in r
            before = seen.get(k2)
            before_read = seen_read.get(k2)
            if (with_pos and before_read is not None
                    and here < before_read[0]):
                stale += 1
                stale_new += is_new(r)
                note("stale-read", "%s read %s=%s on %s at %.3f (asking for "
                     "position %s, answered at %s) after having read %s" % (
                         client, r["entity"], v, r["replica"], r["invoke"],
                         r["min_position"], r.get("position"),
                         before_read[1]))
            elif (r["op"] == "read" and before is not None
                  and here < before[0]):
                unpromised += 1
            if before is None or here > before[0]:
                seen[k2] = (here, v)
            if with_pos and (before_read is None or here > before_read[0]):
                seen_read[k2] = (here, v)

    # Failover-ish figures: the longest time no alter was acknowledged.
    acked_t = sorted(r["complete"] for r in ok_alters)
    gaps = [b - a_ for a_, b in zip(acked_t, acked_t[1:])]

    n_ok = sum(1 for r in ops if r["outcome"] == "ok")
    n_fail = sum(1 for r in ops if r["outcome"] == "fail")
    n_unknown = sum(1 for r in ops if r["outcome"] == "unknown")
    summary = {
        "ops": len(ops), "alters": len(alters), "reads": len(reads),
        "ok": n_ok, "failed": n_fail, "unknown": n_unknown,
        "alters_ok": len(ok_alters), "alters_failed": len(failed),
        "alters_unknown": sum(1 for r in alters if r["outcome"] == "unknown"),
        "lost": len(lost), "stale_final": stale_final,
        "refused_applied": refused_applied, "dirty_reads": dirty,
        "reordered": len(reordered), "chain_breaks": chain,
        "stale_reads": stale, "stale_unpromised": unpromised,
        "reads_behind": sum(1 for r in reads if r.get("code") == 9
                            or "error 9:" in (r.get("error") or "")),
        "diverged": len(bad),
        "duplicate_values": len(dup_values),
        "converge_ms": round(converge_s * 1000),
    }
    if since is not None:
        summary.update({
            "since": a.since,
            "ops_new": sum(1 for r in ops if is_new(r)),
            "alters_ok_new": sum(1 for r in ok_alters if is_new(r)),
            "alters_failed_new": sum(1 for r in failed if is_new(r)),
            "lost_new": len(lost_new),
            "refused_applied_new": refused_applied_new,
            "dirty_reads_new": dirty_new,
            "reordered_new": len(reordered_new),
            "stale_reads_new": stale_new,
        })
    summary.update({
        "max_ack_gap_ms": round(max(gaps) * 1000) if gaps else 0,
        "alter_latency_p50_ms": round(pct([r["complete"] - r["invoke"]
                                           for r in ok_alters], 50) * 1000),
        "alter_latency_p99_ms": round(pct([r["complete"] - r["invoke"]
                                           for r in ok_alters], 99) * 1000),
    })
    violations = []
    if summary["lost"] or stale_final:
        violations.append("(1) lost or stale final value")
    if refused_applied or dirty:
        violations.append("(2) refused but applied / dirty read")
    if reordered or chain:
        violations.append("(3) real-time order / history chain")
    if stale and not a.allow_stale:
        violations.append("(4) stale reads")
    if bad:
        violations.append("(5) diverged")
    if dup_values:
        violations.append("the workload wrote a value twice (a test bug)")
    summary["violations"] = len(violations)

    for kind, msg in details:
        print("%s: %s" % (kind, msg))
    errors = {}
    for r in ops:
        if r["outcome"] != "ok" and r.get("error"):
            k = "%s %s code=%s %s" % (r["op"], r["outcome"], r.get("code"),
                                      re.sub(r"\d+", "N", r["error"])[:110])
            errors[k] = errors.get(k, 0) + 1
    for k, n in sorted(errors.items(), key=lambda x: -x[1])[:a.max_details]:
        print("outcome: %5d x %s" % (n, k))
    print("summary: " + " ".join("%s=%s" % (k, v) for k, v in summary.items()))
    if violations:
        print("violations: " + "; ".join(violations))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, sort_keys=True)
    return 1 if violations else 0


# ---- main ----------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def via(p):
        p.add_argument("--via", choices=("raw", "cli"), default="raw")
        p.add_argument("--configs", default=os.path.join(
            os.environ.get("DC_BUILDDIR", "."), "dynconf-configs"))

    p = sub.add_parser("workload")
    p.add_argument("--replicas", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--duration", type=float, default=3600)
    p.add_argument("--stop-file")
    p.add_argument("--pause-file", help="while it exists, no new "
                   "operation starts; FILE.idle appears once none is in "
                   "flight")
    p.add_argument("--entities", type=int, default=3)
    p.add_argument("--entity-prefix", default="h")
    p.add_argument("--client-prefix", default="c")
    p.add_argument("--key", default="linger.ms")
    p.add_argument("--op-timeout-ms", type=int, default=5000)
    p.add_argument("--alter-ratio", type=float, default=0.5)
    p.add_argument("--pause-ms", type=float, default=40)
    p.add_argument("--seed", type=int)
    p.add_argument("--no-positions", dest="positions", action="store_false",
                   help="read with DescribeConfigs v1, without the store "
                   "position (no monotonic-reads promise)")
    via(p)
    p.set_defaults(fn=cmd_workload)

    p = sub.add_parser("op")
    p.add_argument("--log", required=True)
    p.add_argument("--client", required=True)
    p.add_argument("--replica", required=True)
    p.add_argument("--entity", required=True)
    p.add_argument("--op", choices=("alter", "read"), default="alter")
    p.add_argument("--key", default="linger.ms")
    p.add_argument("--value")
    p.add_argument("--timeout-ms", type=int, default=10000)
    p.add_argument("--min-position", type=int, help="a read carrying this "
                   "store position (0: none seen yet); logs the answer's")
    p.add_argument("--hold-file", help="connect, create HOLD_FILE.ready.PID, "
                   "and send the request only once HOLD_FILE exists (a "
                   "client with a connection the server accepted earlier)")
    via(p)
    p.set_defaults(fn=cmd_op)

    p = sub.add_parser("event")
    p.add_argument("--log", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("fields", nargs="*")
    p.set_defaults(fn=cmd_event)

    p = sub.add_parser("signal")
    p.add_argument("--log", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--sig", required=True)
    p.add_argument("fields", nargs="*")
    p.set_defaults(fn=cmd_signal)

    p = sub.add_parser("probe")
    p.add_argument("--log", required=True)
    p.add_argument("--replicas", required=True)
    p.add_argument("--since", required=True)
    p.add_argument("--timeout-s", type=float, default=60)
    p.add_argument("--op-timeout-ms", type=int, default=3000)
    p.add_argument("--entity", default="probe")
    p.add_argument("--key", default="linger.ms")
    p.add_argument("--base", type=int, default=0)
    via(p)
    p.set_defaults(fn=cmd_probe)

    p = sub.add_parser("controller")
    p.add_argument("--replica", required=True)
    p.add_argument("--timeout-ms", type=int, default=3000)
    p.set_defaults(fn=cmd_controller)

    p = sub.add_parser("queued")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--n", type=int)
    p.add_argument("--timeout-s", type=float, default=10)
    p.set_defaults(fn=cmd_queued)

    p = sub.add_parser("conn")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--peer-pid", type=int, required=True)
    p.set_defaults(fn=cmd_conn)

    p = sub.add_parser("await-accepted")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--timeout-s", type=float, default=10)
    p.set_defaults(fn=cmd_await_accepted)

    p = sub.add_parser("await-read")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--peer-port", type=int, required=True)
    p.add_argument("--more-than", type=int, required=True)
    p.add_argument("--timeout-s", type=float, default=10)
    p.set_defaults(fn=cmd_await_read)

    p = sub.add_parser("wait-acks")
    p.add_argument("--log", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--after")
    p.add_argument("--not-replica")
    p.add_argument("--timeout-s", type=float, default=60)
    p.set_defaults(fn=cmd_wait_acks)

    p = sub.add_parser("check")
    p.add_argument("--log", required=True)
    p.add_argument("--replica", action="append", default=[],
                   help="NAME=HOST:PORT[@DATADIR]")
    p.add_argument("--dynconfd", default=os.path.join(
        os.environ.get("DC_BUILDDIR", "."), "dynconfd"))
    p.add_argument("--history-topic", help="the store's bootstrap: also "
                   "check the history topic")
    p.add_argument("--store-topic")
    p.add_argument("--converge-timeout-s", type=float, default=30)
    p.add_argument("--allow-stale", action="store_true")
    p.add_argument("--since", metavar="EVENT", help="also count, as *_new, "
                   "the violations of operations invoked after the last "
                   "event EVENT (the state-wide checks stay whole)")
    p.add_argument("--max-details", type=int, default=10)
    p.add_argument("--json")
    p.set_defaults(fn=cmd_check)

    a = ap.parse_args()
    sys.exit(a.fn(a))


if __name__ == "__main__":
    main()
