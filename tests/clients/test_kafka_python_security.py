#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: kafka-python 2.0.2 (Debian python3-kafka) against dynconfd's
secured listeners.

One dynconfd with four listeners: PLAINTEXT (--listen), SSL, SASL_PLAINTEXT
and SASL_SSL, client certificates "requested", SCRAM credentials made with
`dynconfd --add-user`, certificates made with tests/gen_certs.sh.

kafka-python 2.0.2 authenticates with SaslHandshake v0 and then raw
size-prefixed SASL tokens (the legacy path, conn.py _try_authenticate_*);
for PLAIN it expects an empty raw frame (int32 0) on success. Its admin
client then speaks DescribeConfigs/AlterConfigs as in test_kafka_python.py
(CLIENT resources are TOPIC ConfigResources with resource_type set to 9).

Cases:
  - DescribeConfigs (type 9) and AlterConfigs with PLAIN, SCRAM-SHA-256 and
    SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL;
  - SSL with only ssl_cafile (principal User:ANONYMOUS) and with a client
    certificate (principal User:CN=alice,O=dynconf-test);
  - Metadata on each listener advertises that listener's own port;
  - principal-scoped resolution: a type-10 user entity is seen by its user
    through type 9, not by another user;
  - wrong password (each mechanism), unknown user, untrusted server CA,
    client certificate from an untrusted CA: kafka-python raises, and the
    same exchanges done by hand on a raw socket get no config data;
  - `dynconfd --history` names the principal of every alter.

Prints TAP. Every socket wait is bounded; a global alarm turns any hang
into a failure.
"""
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import traceback

# The shared helpers (dcpy.py ...) are in tests/, this test's parent folder.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dcpy import Daemon, free_port, t, builddir, dynconfd_path, srcdir  # noqa: E402,F401
import dcpy  # noqa: E402

dcpy.require_kafka_python()

from kafka.admin import ConfigResource, KafkaAdminClient  # noqa: E402
from kafka.scram import ScramClient  # noqa: E402

CLIENT, USER = 9, 10
SRC_CLIENT, SRC_DEFAULT, SRC_USER = 7, 8, 9
SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
NODE_ID = 3
TIMEOUT_MS = 10000
MECHS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# One user per (listener, mechanism) so each alter's principal in the audit
# history is unambiguous.
USERS = {
    ("SASL_PLAINTEXT", "PLAIN"): "pt-plain",
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"): "pt-scram256",
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"): "pt-scram512",
    ("SASL_SSL", "PLAIN"): "ssl-plain",
    ("SASL_SSL", "SCRAM-SHA-256"): "ssl-scram256",
    ("SASL_SSL", "SCRAM-SHA-512"): "ssl-scram512",
}
SCOPE_USER, OTHER_USER = "carol", "dave"
# Planted through PLAINTEXT; unauthenticated exchanges must never see it.
SECRET_ENTITY, SECRET_KEY, SECRET_VALUE = "py-secret", "session.timeout.ms", "43210"


def password(user):
    return "pw-%s-%d" % (user, len(user))


# ---- kafka-python helpers ---------------------------------------------


def client_resource(name, configs=None, rtype=CLIENT):
    """A ConfigResource of type 9 (or 10), see test_kafka_python.py."""
    r = ConfigResource("TOPIC", name, configs)
    r.resource_type = rtype
    return r


def admin_for(d, listener, client_id, user=None, mech=None, pw=None,
              cert=None, cafile=None, timeout_ms=TIMEOUT_MS):
    host, port = d.addr(listener)
    proto = d.listeners[listener][2]
    kw = dict(bootstrap_servers="%s:%d" % (host, port), client_id=client_id,
              security_protocol=proto, api_version_auto_timeout_ms=timeout_ms,
              request_timeout_ms=TIMEOUT_MS)
    if proto in ("SASL_PLAINTEXT", "SASL_SSL"):
        kw.update(sasl_mechanism=mech, sasl_plain_username=user,
                  sasl_plain_password=password(user) if pw is None else pw)
    if proto in ("SSL", "SASL_SSL"):
        kw.update(ssl_cafile=cafile or CERTS["ca"], ssl_check_hostname=True)
        if cert:
            kw.update(ssl_certfile=CERTS[cert + ".pem"],
                      ssl_keyfile=CERTS[cert + ".key"])
    return KafkaAdminClient(**kw)


def describe(admin, resource):
    """-> (error_code, message, type, name, {key: (value, source)})."""
    responses = admin.describe_configs([resource])
    assert len(responses) == 1, responses
    res = responses[0].resources
    assert len(res) == 1, res
    err, msg, rtype, rname, entries = res[0]
    return err, msg, rtype, rname, {e[0]: (e[1], e[3]) for e in entries}


def alter(admin, resources):
    """-> [(error_code, message, type, name)]."""
    return [tuple(r) for r in admin.alter_configs(resources).resources]


def expect_admin_failure(desc, **kw):
    """KafkaAdminClient construction must raise (never hang: the alarm
    catches that). Returns the exception."""
    admin = None
    try:
        admin = admin_for(**kw)
    except TimeoutError:
        raise
    except Exception as e:  # what kafka-python raises varies by failure
        t.ok(True, "%s: kafka-python raises %s" % (desc, type(e).__name__))
        return e
    t.ok(False, "%s: kafka-python raises" % desc)
    try:
        t.diag("  unexpectedly connected; describe gives %r"
               % (describe(admin, client_resource(SECRET_ENTITY)),))
    finally:
        admin.close()
    return None


# ---- raw Kafka framing for exchanges kafka-python cannot be made to do ----


def kstr(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">h", len(b)) + b


def kbytes(b):
    return struct.pack(">i", len(b)) + b


def request(api_key, version, corr, body, client_id="raw-py"):
    """A non-flexible request frame (header v1)."""
    payload = struct.pack(">hhi", api_key, version, corr) + kstr(client_id) + body
    return struct.pack(">i", len(payload)) + payload


def describe_v0_body(name, rtype=CLIENT):
    return struct.pack(">i", 1) + struct.pack(">b", rtype) + kstr(name) + \
        struct.pack(">i", -1)


DESCRIBE_CORR = 0x5EC0


def frames_of(data):
    """Split a byte stream into complete frames (a partial tail is dropped)."""
    out = []
    while len(data) >= 4:
        (n,) = struct.unpack(">i", data[:4])
        if n < 0 or len(data) < 4 + n:
            break
        out.append(data[4:4 + n])
        data = data[4 + n:]
    return out


def probe_then_drain(raw):
    """Sends a DescribeConfigs v0 for the secret entity and reads to EOF.
    Returns (data, closed, leaked) where leaked means a DescribeConfigs
    response or the secret value came back."""
    try:
        raw.send(request(32, 0, DESCRIBE_CORR, describe_v0_body(SECRET_ENTITY)))
    except (OSError, ssl.SSLError):
        pass  # already closed: fine
    data, closed = raw.drain()
    leaked = SECRET_VALUE.encode() in data or any(
        f[:4] == struct.pack(">i", DESCRIBE_CORR) for f in frames_of(data))
    return data, closed, leaked


def describe_gets_secret(raw):
    """An authenticated DescribeConfigs v0 of the secret entity: True when
    the response carries SECRET_KEY=SECRET_VALUE."""
    raw.send(request(32, 0, DESCRIBE_CORR, describe_v0_body(SECRET_ENTITY)))
    f = raw.recv_frame()
    return (f[:4] == struct.pack(">i", DESCRIBE_CORR) and
            SECRET_KEY.encode() in f and SECRET_VALUE.encode() in f)


def handshake(raw, version, mech, corr=1):
    """SaslHandshake v0/v1 -> (error_code, [mechanisms])."""
    raw.send(request(17, version, corr, kstr(mech)))
    f = raw.recv_frame()
    (rcorr, err, n) = struct.unpack(">ihi", f[:10])
    assert rcorr == corr, (rcorr, corr)
    mechs, pos = [], 10
    for _ in range(n):
        (ln,) = struct.unpack(">h", f[pos:pos + 2])
        mechs.append(f[pos + 2:pos + 2 + ln].decode())
        pos += 2 + ln
    return err, mechs


def sasl_authenticate(raw, version, token, corr):
    """SaslAuthenticate v0/v1 -> (error_code, message, auth_bytes,
    session_lifetime_ms or None)."""
    raw.send(request(36, version, corr, kbytes(token)))
    f = raw.recv_frame()
    (rcorr, err, mlen) = struct.unpack(">ihh", f[:8])
    assert rcorr == corr, (rcorr, corr)
    pos = 8
    msg = None
    if mlen >= 0:
        msg = f[pos:pos + mlen].decode(errors="replace")
        pos += mlen
    (blen,) = struct.unpack(">i", f[pos:pos + 4])
    pos += 4
    auth = f[pos:pos + max(blen, 0)]
    pos += max(blen, 0)
    life = struct.unpack(">q", f[pos:pos + 8])[0] if version >= 1 else None
    return err, msg, auth, life


def plain_token(user, pw):
    return b"\0" + user.encode() + b"\0" + pw.encode()


# ---- cases --------------------------------------------------------------


def plant_secret(d):
    admin = admin_for(d, "PLAINTEXT", "py-plant")
    try:
        res = alter(admin, [client_resource(SECRET_ENTITY, {SECRET_KEY: SECRET_VALUE})])
        t.is_(res[0][0], 0, "PLAINTEXT: plant %s=%s on %s" % (SECRET_KEY, SECRET_VALUE,
                                                              SECRET_ENTITY))
    finally:
        admin.close()


def exercise(admin, d, listener, entity, who):
    """Metadata, AlterConfigs and DescribeConfigs (type 9) through one
    authenticated admin client."""
    meta = admin.describe_cluster()
    ports = [b["port"] for b in meta.get("brokers", [])]
    t.is_(ports, [d.addr(listener)[1]],
          "%s: Metadata on %s advertises that listener's port" % (who, listener))
    res = alter(admin, [client_resource(entity, {"acks": "1",
                                                 "linger.ms": "15"})])
    t.is_([(r[0], r[2], r[3]) for r in res], [(0, CLIENT, entity)],
          "%s: AlterConfigs of client %s accepted" % (who, entity))
    err, msg, rtype, rname, e = describe(admin, client_resource(entity))
    t.is_((err, rtype, rname), (0, CLIENT, entity),
          "%s: DescribeConfigs type 9 %s: error NONE, echoes type and name"
          % (who, entity))
    t.is_(e.get("acks"), ("1", SRC_CLIENT), "%s: acks=1 from the client entity" % who)
    t.is_(e.get("linger.ms"), ("15", SRC_CLIENT), "%s: linger.ms=15" % who)
    err, _, _, _, e = describe(admin, client_resource(SECRET_ENTITY))
    t.is_(e.get(SECRET_KEY), (SECRET_VALUE, SRC_CLIENT),
          "%s: sees the value planted over PLAINTEXT" % who)


def test_sasl(d, expected):
    for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
        for mech in MECHS:
            user = USERS[(listener, mech)]
            who = "%s %s as %s" % (listener, mech, user)
            entity = "py-%s" % user
            try:
                admin = admin_for(d, listener, "py-" + user, user=user, mech=mech)
            except Exception as e:
                t.ok(False, "%s: KafkaAdminClient connects (%s: %s)"
                     % (who, type(e).__name__, e))
                continue
            t.ok(True, "%s: KafkaAdminClient connects" % who)
            try:
                exercise(admin, d, listener, entity, who)
                expected[entity] = "User:" + user
            finally:
                admin.close()


def test_ssl(d, expected):
    admin = admin_for(d, "SSL", "py-ssl-anon")
    t.ok(True, "SSL with ssl_cafile only: KafkaAdminClient connects")
    try:
        exercise(admin, d, "SSL", "py-ssl-anon", "SSL (no client cert)")
        expected["py-ssl-anon"] = "User:ANONYMOUS"
    finally:
        admin.close()
    admin = admin_for(d, "SSL", "py-ssl-alice", cert="alice")
    t.ok(True, "SSL with alice's client certificate: KafkaAdminClient connects")
    try:
        exercise(admin, d, "SSL", "py-ssl-alice", "SSL as alice's cert")
        expected["py-ssl-alice"] = "User:CN=alice,O=dynconf-test"
    finally:
        admin.close()


def test_scoping(d, expected):
    """A user entity (type 10) is resolved for its own principal only."""
    admin = admin_for(d, "PLAINTEXT", "py-scope-admin")
    try:
        res = alter(admin, [client_resource(SCOPE_USER, {"acks": "0"}, rtype=USER)])
        t.is_([(r[0], r[2], r[3]) for r in res], [(0, USER, SCOPE_USER)],
              "PLAINTEXT: AlterConfigs of user entity %s (type 10) accepted"
              % SCOPE_USER)
        expected[SCOPE_USER] = "User:ANONYMOUS"
        res = alter(admin, [client_resource("py-scope", {"acks": "1"})])
        t.is_(res[0][0], 0, "PLAINTEXT: client py-scope acks=1")
        expected["py-scope"] = "User:ANONYMOUS"
    finally:
        admin.close()
    for user, want in ((SCOPE_USER, ("0", SRC_USER)), (OTHER_USER, ("1", SRC_CLIENT))):
        admin = admin_for(d, "SASL_PLAINTEXT", "py-scope", user=user,
                          mech="SCRAM-SHA-256")
        try:
            err, _, _, _, e = describe(admin, client_resource("py-scope"))
            t.is_((err, e.get("acks")), (0, want),
                  "SASL %s: type 9 py-scope resolves acks to %r" % (user, want))
        finally:
            admin.close()


def test_wrong_credentials(d):
    for listener, mech in (("SASL_PLAINTEXT", "PLAIN"),
                           ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
                           ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
                           ("SASL_SSL", "SCRAM-SHA-512")):
        user = USERS[(listener, mech)]
        expect_admin_failure("%s %s wrong password for %s" % (listener, mech, user),
                             d=d, listener=listener, client_id="py-wrong",
                             user=user, mech=mech, pw="not-" + password(user),
                             timeout_ms=4000)
    expect_admin_failure("SASL_PLAINTEXT SCRAM-SHA-256 unknown user",
                         d=d, listener="SASL_PLAINTEXT", client_id="py-wrong",
                         user="nobody", mech="SCRAM-SHA-256", pw="x",
                         timeout_ms=4000)
    expect_admin_failure("SSL with a CA that did not sign the server (rogue-ca)",
                         d=d, listener="SSL", client_id="py-rogue",
                         cafile=CERTS["rogue-ca.pem"], timeout_ms=4000)
    expect_admin_failure("SSL presenting a client cert from an untrusted CA",
                         d=d, listener="SSL", client_id="py-rogue",
                         cert="rogue", timeout_ms=4000)


def raw_legacy(d, mech, user, pw):
    """SaslHandshake v0 then raw tokens, as kafka-python does. Returns the
    Raw connection after the last token was sent, plus what the server
    said at each step."""
    raw = dcpy.Raw(*d.addr("SASL_PLAINTEXT"))
    err, mechs = handshake(raw, 0, mech)
    steps = {"handshake": (err, mechs)}
    if mech == "PLAIN":
        raw.send(kbytes(plain_token(user, pw)))
        return raw, steps
    sc = ScramClient(user, pw, mech)
    raw.send(kbytes(sc.first_message().encode()))
    server_first = raw.recv_frame().decode()
    steps["server_first"] = server_first
    sc.process_server_first_message(server_first)
    raw.send(kbytes(sc.final_message().encode()))
    steps["scram"] = sc
    return raw, steps


def test_raw(d):
    """The same exchanges by hand, so that 'no data' is checked on the
    wire, with positive controls proving the probe would see data."""
    user = USERS[("SASL_PLAINTEXT", "PLAIN")]
    # Positive control, legacy PLAIN: an empty raw frame, then data.
    raw, steps = raw_legacy(d, "PLAIN", user, password(user))
    try:
        t.is_(steps["handshake"][0], 0, "raw v0 handshake PLAIN: error NONE")
        t.ok(set(MECHS) <= set(steps["handshake"][1]),
             "raw v0 handshake lists %s (%r)" % (", ".join(MECHS), steps["handshake"][1]))
        t.is_(raw.recv_frame(), b"", "raw legacy PLAIN, right password: empty frame")
        t.ok(describe_gets_secret(raw), "raw legacy PLAIN: then DescribeConfigs "
             "returns the planted value (the probe can see data)")
    finally:
        raw.close()
    # Legacy PLAIN, wrong password: closed, no data.
    raw, _ = raw_legacy(d, "PLAIN", user, "wrong")
    try:
        data, closed, leaked = probe_then_drain(raw)
        t.ok(closed and not leaked, "raw legacy PLAIN wrong password: connection "
             "closed, no config data (%d bytes: %r)" % (len(data), data[:80]))
    finally:
        raw.close()
    # Legacy SCRAM, right and wrong password.
    user = USERS[("SASL_PLAINTEXT", "SCRAM-SHA-512")]
    raw, steps = raw_legacy(d, "SCRAM-SHA-512", user, password(user))
    try:
        final = raw.recv_frame().decode()
        ok_sig = True
        try:
            steps["scram"].process_server_final_message(final)
        except Exception:
            ok_sig = False
        t.ok(ok_sig, "raw legacy SCRAM-SHA-512: server-final verifies (%r)" % final)
        t.ok(describe_gets_secret(raw), "raw legacy SCRAM-SHA-512: then "
             "DescribeConfigs returns the planted value")
    finally:
        raw.close()
    raw, steps = raw_legacy(d, "SCRAM-SHA-512", user, "wrong")
    try:
        data, closed, leaked = probe_then_drain(raw)
        t.ok(closed and not leaked and b"v=" not in data,
             "raw legacy SCRAM-SHA-512 wrong password: closed, no server "
             "signature, no config data (%d bytes: %r)" % (len(data), data[:80]))
    finally:
        raw.close()
    # Unauthenticated DescribeConfigs on a SASL listener: no data.
    raw = dcpy.Raw(*d.addr("SASL_PLAINTEXT"))
    try:
        data, closed, leaked = probe_then_drain(raw)
        t.ok(not leaked, "raw DescribeConfigs before SASL on SASL_PLAINTEXT: no "
             "config data (closed=%s, %d bytes)" % (closed, len(data)))
    finally:
        raw.close()
    # Handshake v1 + SaslAuthenticate: error 58 with a message, then closed.
    raw = dcpy.Raw(*d.addr("SASL_PLAINTEXT"))
    try:
        err, _ = handshake(raw, 1, "PLAIN")
        t.is_(err, 0, "raw v1 handshake PLAIN: error NONE")
        err, msg, _, _ = sasl_authenticate(raw, 1, plain_token(user, "wrong"), 2)
        t.is_(err, SASL_AUTHENTICATION_FAILED,
              "raw SaslAuthenticate v1 wrong password: error 58")
        t.ok(msg, "... with a message (%r)" % msg)
        data, closed, leaked = probe_then_drain(raw)
        t.ok(closed and not leaked, "... then the connection closes, no data")
    finally:
        raw.close()
    raw = dcpy.Raw(*d.addr("SASL_PLAINTEXT"))
    try:
        handshake(raw, 1, "PLAIN")
        err, msg, _, life = sasl_authenticate(raw, 1, plain_token(user, password(user)), 2)
        t.is_((err, msg), (0, None), "raw SaslAuthenticate v1 right password: "
              "error NONE, null message")
        t.ok(life is not None and life >= 0, "... session_lifetime_ms %r" % life)
        t.ok(describe_gets_secret(raw), "... then DescribeConfigs returns data")
    finally:
        raw.close()
    # Unknown mechanism: error 33 with the enabled list.
    raw = dcpy.Raw(*d.addr("SASL_PLAINTEXT"))
    try:
        err, mechs = handshake(raw, 0, "GSSAPI")
        t.is_(err, UNSUPPORTED_SASL_MECHANISM, "raw handshake GSSAPI: error 33")
        t.ok(set(MECHS) <= set(mechs), "... lists the enabled mechanisms (%r)" % mechs)
    finally:
        raw.close()
    # TLS: a client certificate from an untrusted CA gets no data; alice's
    # certificate does (positive control).
    for cert, want in (("rogue", False), ("alice", True)):
        ctx = ssl.create_default_context(cafile=CERTS["ca"])
        ctx.load_cert_chain(CERTS[cert + ".pem"], CERTS[cert + ".key"])
        try:
            raw = dcpy.Raw(*d.addr("SSL"), tls_ctx=ctx)
        except (ssl.SSLError, OSError) as e:
            t.ok(not want, "raw TLS with %s's cert: handshake (%s)" % (cert, e))
            continue
        try:
            if want:
                t.ok(describe_gets_secret(raw), "raw TLS with alice's cert: data")
            else:
                data, closed, leaked = probe_then_drain(raw)
                t.ok(closed and not leaked, "raw TLS with rogue cert: closed, no "
                     "data (%d bytes)" % len(data))
        finally:
            raw.close()


def history(data_dir):
    """{entity: set(principals)} from `dynconfd --history`."""
    out = subprocess.run([dynconfd_path(), "--data-dir", data_dir, "--history"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=30)
    t.is_(out.returncode, 0, "dynconfd --history exits 0")
    rows = {}
    for line in out.stdout.decode(errors="replace").splitlines():
        f = line.split(" ")
        if len(f) < 5 or ":" not in f[4]:
            continue
        entity = f[4].split(":", 1)[1]
        rows.setdefault(entity, set()).add(f[1])
    if not rows:
        t.diag("history stdout: %r stderr: %r" % (out.stdout[:400], out.stderr[:400]))
    return rows


def setup(tmp):
    certs = os.path.join(tmp, "certs")
    subprocess.run(["sh", os.path.join(srcdir(), "tests", "gen_certs.sh"), certs],
                   check=True, timeout=120)
    for f in ("ca.pem", "server.pem", "server.key", "alice.pem", "alice.key",
              "rogue.pem", "rogue.key", "rogue-ca.pem"):
        CERTS[f] = os.path.join(certs, f)
    CERTS["ca"] = CERTS["ca.pem"]
    creds = os.path.join(tmp, "credentials")
    for user in list(USERS.values()) + [SCOPE_USER, OTHER_USER]:
        r = subprocess.run([dynconfd_path(), "--credentials", creds,
                            "--add-user", user, "--iterations", "4096"],
                           input=(password(user) + "\n").encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        if r.returncode != 0:
            raise RuntimeError("--add-user %s failed: %r" % (user, r.stderr))
    t.ok(True, "certificates and %d SCRAM users made" % (len(USERS) + 2))
    return creds


CERTS = {}


def on_alarm(_sig, _frame):
    raise TimeoutError("test exceeded 300 s (a request hung?)")


def main():
    tmp = tempfile.mkdtemp(prefix="dynconf-test-")
    d = None
    data_dir = os.path.join(tmp, "data")
    expected = {}
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(300)
    try:
        creds = setup(tmp)
        d = Daemon(tmp, [
            "--listen", "127.0.0.1:0",
            "--listeners", "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                           "SASL_SSL://127.0.0.1:0",
            "--ssl-cert", CERTS["server.pem"], "--ssl-key", CERTS["server.key"],
            "--ssl-ca", CERTS["ca"], "--ssl-client-auth", "requested",
            "--credentials", creds, "--node-id", str(NODE_ID),
            "--data-dir", data_dir], 4, log_lines=40)
        t.is_(sorted((n, p[2]) for n, p in d.listeners.items()),
              [("PLAINTEXT", "PLAINTEXT"), ("SASL_PLAINTEXT", "SASL_PLAINTEXT"),
               ("SASL_SSL", "SASL_SSL"), ("SSL", "SSL")],
              "dynconfd prints one 'listening on' line per listener")
        for name, body in (("plant", lambda: plant_secret(d)),
                           ("sasl", lambda: test_sasl(d, expected)),
                           ("ssl", lambda: test_ssl(d, expected)),
                           ("scoping", lambda: test_scoping(d, expected)),
                           ("wrong credentials", lambda: test_wrong_credentials(d)),
                           ("raw", lambda: test_raw(d))):
            try:
                body()
            except TimeoutError:
                raise
            except Exception:  # a failure in one group, never a skip
                t.ok(False, "%s: unexpected exception" % name)
                t.diag(traceback.format_exc())
        t.ok(d.proc.poll() is None, "dynconfd still running")
    except Exception:
        t.ok(False, "unexpected exception")
        t.diag(traceback.format_exc())
    finally:
        signal.alarm(0)
        if d:
            rc = d.stop()
            t.is_(rc, 0, "SIGTERM: dynconfd exits 0")
            if t.failed:
                d.log_tail()
    try:
        if expected:
            rows = history(data_dir)
            for entity, principal in sorted(expected.items()):
                t.is_(rows.get(entity), {principal},
                      "history: alters of %s by %s" % (entity, principal))
        t.ok(len(expected) >= 10, "%d alters were checked in the history" % len(expected))
    except Exception:
        t.ok(False, "history: unexpected exception")
        t.diag(traceback.format_exc())
    shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
