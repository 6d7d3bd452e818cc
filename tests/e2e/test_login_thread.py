#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: SASL log-ins run beside the requests of connections already
in, and a failed one is answered late.

One dynconfd with a PLAINTEXT, a SASL_PLAINTEXT and an SSL listener (a
self-signed RSA-4096 certificate made here, so each handshake's signature
costs some ms); its users are stored with
16384 SCRAM iterations (Kafka's maximum), so checking one PLAIN password
costs a few ms of PBKDF2.

Cases:
- 200 connections send a good PLAIN password at once; once the first is
  answered, a DescribeConfigs on the PLAINTEXT connection is answered while
  most of the 200 still wait (it waited behind all of them when the checks
  ran on the event loop); then all 200 authenticate.
- 200 TLS handshakes begun at once (each ClientHello sent, nothing more):
  once the first server flight arrives, a DescribeConfigs on the PLAINTEXT
  connection is answered while most still wait for theirs; then all 200
  handshakes complete.
- A wrong password on a server started with
  --connection-failed-authentication-delay-ms 1500: the failure
  (SASL_AUTHENTICATION_FAILED, saying why) comes no sooner than that, then
  the connection closes; a DescribeConfigs sent meanwhile is answered first.
- 100 connections that send their password and close at once, and a SIGHUP
  that reloads the credentials while 200 log-ins are in flight: every
  log-in still in flight is answered, and dynconfd serves on and stops
  cleanly (its sanitizers, when built with them, watch the memory).

Prints TAP. Every socket wait is bounded; a global alarm turns any hang
into a failure.
"""
import os
import select
import ssl
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

# The shared helpers (dcpy.py ...) are in tests/, this test's parent folder.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dcpy  # noqa: E402
from dcpy import t  # noqa: E402

SASL_AUTHENTICATION_FAILED = 58
N_LOGINS = 200


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def frame(api_key, version, corr, body):
    payload = (struct.pack(">hhi", api_key, version, corr) + kstr("login")
               + body)
    return struct.pack(">i", len(payload)) + payload


def describe_frame(corr):
    """DescribeConfigs v1 for client-id "lt" (resource type 9)."""
    body = (struct.pack(">i", 1) + struct.pack(">b", 9) + kstr("lt") +
            struct.pack(">i", -1) + b"\x00")
    return frame(32, 1, corr, body)


def plain_token(user, password):
    return b"\x00" + user.encode() + b"\x00" + password.encode()


def add_user(creds, user, pw):
    r = subprocess.run([dcpy.dynconfd_path(), "--credentials", creds,
                        "--add-user", user, "--iterations", "16384"],
                       input=pw + "\n", capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        raise RuntimeError("--add-user %s failed: %r" % (user, r.stderr))


def handshaken(port, n):
    """n connections past SaslHandshake v1 (PLAIN)."""
    out = []
    for _ in range(n):
        raw = dcpy.Raw("127.0.0.1", port)
        raw.send(frame(17, 1, 1, kstr("PLAIN")))
        (_, herr) = struct.unpack(">ih", raw.recv_frame()[:6])
        if herr:
            raise RuntimeError("SaslHandshake refused: %d" % herr)
        out.append(raw)
    return out


def send_password(raw, user, pw):
    tok = plain_token(user, pw)
    raw.send(frame(36, 1, 2, struct.pack(">i", len(tok)) + tok))


def auth_answer(raw):
    """(error_code, error_message) of a SaslAuthenticate v1 answer."""
    r = raw.recv_frame()
    (_, err, mlen) = struct.unpack(">ihh", r[:8])
    return err, r[8:8 + mlen].decode() if mlen >= 0 else None


def answered_now(raws, done):
    """Marks in done the connections whose answer has arrived (it is read
    whole); returns how many are done."""
    waiting = [r for r in raws if r not in done]
    while waiting:
        ready, _, _ = select.select([r.s for r in waiting], [], [], 0)
        if not ready:
            break
        for r in waiting:
            if r.s in ready:
                done[r] = auth_answer(r)
        waiting = [r for r in raws if r not in done]
    return len(done)


def wait_all(raws, done, seconds):
    deadline = time.monotonic() + seconds
    while len(done) < len(raws) and time.monotonic() < deadline:
        ready, _, _ = select.select([r.s for r in raws if r not in done], [],
                                    [], 0.2)
        if ready:
            answered_now(raws, done)
    return len(done)


def crowd(d, probe):
    port = d.addr("SASL_PLAINTEXT")[1]
    raws = handshaken(port, N_LOGINS)
    try:
        for r in raws:
            send_password(r, "alice", "alice-secret")
        done = {}
        deadline = time.monotonic() + 30
        while not done and time.monotonic() < deadline:
            select.select([r.s for r in raws], [], [], 0.2)
            answered_now(raws, done)
        probe.send(describe_frame(7))
        got = struct.unpack(">i", probe.recv_frame()[:4])[0]
        before = answered_now(raws, done)
        t.ok(got == 7 and 0 < before < N_LOGINS // 2,
             "%d PLAIN log-ins (16384 iterations each) in flight: a "
             "DescribeConfigs on a connection already in is answered while "
             "most still wait (%d of them answered before it)"
             % (N_LOGINS, before))
        wait_all(raws, done, 60)
        ok = [e for e, _ in done.values() if e == 0]
        t.ok(len(ok) == N_LOGINS, "  and all %d authenticate (%d did)"
             % (N_LOGINS, len(ok)))
    finally:
        for r in raws:
            r.close()


def tls_started(port, ctx, n):
    """n non-blocking TLS connections, connected first, then each
    ClientHello sent in one quick pass."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setblocking(False)
        out.append(ctx.wrap_socket(s, server_hostname="localhost",
                                   do_handshake_on_connect=False))
    for tls in out:
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
    return out


def tls_crowd(d, probe, tls_dir):
    ctx = ssl.create_default_context(cafile=os.path.join(tls_dir, "cert.pem"))
    ctx.check_hostname = False
    socks = tls_started(d.addr("SSL")[1], ctx, N_LOGINS)
    try:
        answered = set()

        def poll(timeout):
            waiting = [s for s in socks if s not in answered]
            ready, _, _ = select.select(waiting, [], [], timeout)
            answered.update(ready)

        deadline = time.monotonic() + 30
        while not answered and time.monotonic() < deadline:
            poll(0.2)
        probe.send(describe_frame(10))
        got = struct.unpack(">i", probe.recv_frame()[:4])[0]
        poll(0)
        before = len(answered)
        t.ok(got == 10 and 0 < before < N_LOGINS // 2,
             "%d TLS handshakes begun at once: a DescribeConfigs on a "
             "connection already in is answered while most still wait for "
             "the server (%d had its answer before it)" % (N_LOGINS, before))
        done = 0
        deadline = time.monotonic() + 60
        pending = list(socks)
        while pending and time.monotonic() < deadline:
            still = []
            for s in pending:
                try:
                    s.do_handshake()
                    done += 1
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    still.append(s)
            pending = still
            if pending:
                select.select(pending, [], [], 0.2)
        t.ok(done == N_LOGINS, "  and all %d handshakes complete (%d did)"
             % (N_LOGINS, done))
    finally:
        for s in socks:
            s.close()


def delayed_failure(d, probe):
    port = d.addr("SASL_PLAINTEXT")[1]
    (raw,) = handshaken(port, 1)
    try:
        t0 = time.monotonic()
        send_password(raw, "alice", "wrong")
        probe.send(describe_frame(8))
        got = struct.unpack(">i", probe.recv_frame()[:4])[0]
        first = not select.select([raw.s], [], [], 0)[0]
        err, msg = auth_answer(raw)
        waited = time.monotonic() - t0
        t.ok(got == 8 and first, "a DescribeConfigs sent after a wrong "
             "password is answered before the password's failure")
        t.ok(err == SASL_AUTHENTICATION_FAILED and
             "Invalid username or password" in (msg or "") and
             waited >= 1.4,
             "the failure comes after --connection-failed-authentication-"
             "delay-ms 1500 (%.2f s): %d %r" % (waited, err, msg))
        data, closed = raw.drain()
        t.ok(closed and data == b"", "  then the connection closes")
    finally:
        raw.close()


def hang_ups_and_reload(d, creds, probe):
    port = d.addr("SASL_PLAINTEXT")[1]
    gone = handshaken(port, 100)
    for r in gone:
        send_password(r, "alice", "alice-secret")
        r.close()
    raws = handshaken(port, N_LOGINS)
    try:
        for r in raws:
            send_password(r, "alice", "alice-secret")
        add_user(creds, "bob", "bob-secret")  # the file changes
        d.proc.send_signal(signal.SIGHUP)
        done = {}
        wait_all(raws, done, 60)
        t.ok(len(done) == N_LOGINS and
             all(e in (0, SASL_AUTHENTICATION_FAILED)
                 for e, _ in done.values()),
             "100 clients that left mid-log-in, and a credentials reload "
             "with %d log-ins in flight: every log-in is answered (%d)"
             % (N_LOGINS, len(done)))
    finally:
        for r in raws:
            r.close()
    probe.send(describe_frame(9))
    t.ok(struct.unpack(">i", probe.recv_frame()[:4])[0] == 9,
         "  and dynconfd serves on")
    (bob,) = handshaken(port, 1)
    try:
        send_password(bob, "bob", "bob-secret")
        t.is_(auth_answer(bob)[0], 0, "  the reloaded user logs in")
    finally:
        bob.close()


def run(tmp):
    creds = os.path.join(tmp, "creds")
    add_user(creds, "alice", "alice-secret")
    # RSA-4096: each handshake's signature costs the server some ms.
    tls_dir = os.path.join(tmp, "tls")
    os.mkdir(tls_dir)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:4096", "-nodes",
                    "-keyout", os.path.join(tls_dir, "key.pem"),
                    "-out", os.path.join(tls_dir, "cert.pem"), "-days", "2",
                    "-subj", "/CN=localhost"],
                   check=True, timeout=120, capture_output=True)
    d = dcpy.Daemon(tmp, [
        "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
        "SSL://127.0.0.1:0",
        "--data-dir", os.path.join(tmp, "data"), "--credentials", creds,
        "--sasl-enabled-mechanisms", "PLAIN",
        "--ssl-cert", os.path.join(tls_dir, "cert.pem"),
        "--ssl-key", os.path.join(tls_dir, "key.pem"),
        "--connection-failed-authentication-delay-ms", "1500"],
        n_listeners=3)
    probe = dcpy.Raw("127.0.0.1", d.addr("PLAINTEXT")[1])
    try:
        crowd(d, probe)
        tls_crowd(d, probe, tls_dir)
        delayed_failure(d, probe)
        hang_ups_and_reload(d, creds, probe)
        t.ok(d.proc.poll() is None, "dynconfd still runs")
    finally:
        probe.close()
        rc = d.stop()
        t.is_(rc, 0, "dynconfd stops cleanly")
        if rc:
            d.log_tail()


def main():
    signal.alarm(300)
    tmp = tempfile.mkdtemp(prefix="dynconf-login-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    raise SystemExit(main())
