#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: a principal name that reads like another one is refused.

One dynconfd with a SASL_PLAINTEXT listener and an SSL listener that
requires a client certificate. The credentials file holds a user
"oa-admin " (trailing blank), hand-edited in as `--add-user` refuses the
name, and "oa-admin"; client certificates from the test CA have the
subjects CN=oa-admin and CN=oa-admin (trailing blank).

Cases: `--add-user 'oa-admin '` fails saying why; PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512 as "oa-admin " (with its password, over SaslHandshake v1 and
SaslAuthenticate v1 on a raw socket) get SASL_AUTHENTICATION_FAILED naming
the trailing blank, while "oa-admin" authenticates; the certificate whose
CN ends with a blank fails the TLS handshake and dynconfd logs why, while
CN=oa-admin is served; dynconfd serves on.

Prints TAP. Every socket wait is bounded; a global alarm turns any hang
into a failure.
"""
import os
import shutil
import signal
import ssl
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
WHY = "the user name ends with a blank"


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def frame(api_key, version, corr, body):
    payload = (struct.pack(">hhi", api_key, version, corr) + kstr("names")
               + body)
    return struct.pack(">i", len(payload)) + payload


def first_step(port, mech, token):
    """SaslHandshake v1 for mech, then one SaslAuthenticate v1 with token:
    (error_code, error_message)."""
    raw = dcpy.Raw("127.0.0.1", port)
    try:
        raw.send(frame(17, 1, 1, kstr(mech)))
        (_, herr) = struct.unpack(">ih", raw.recv_frame()[:6])
        if herr:
            return herr, "handshake"
        raw.send(frame(36, 1, 2, struct.pack(">i", len(token)) + token))
        r = raw.recv_frame()
        (_, err, mlen) = struct.unpack(">ihh", r[:8])
        return err, r[8:8 + mlen].decode() if mlen >= 0 else None
    finally:
        raw.close()


def plain(user, pw):
    return b"\0" + user.encode() + b"\0" + pw.encode()


def scram_first(user):
    return ("n,,n=%s,r=fyko+d2lbbFgONRv9qkxdawL" % user).encode()


def add_user(creds, user, pw):
    return subprocess.run([dcpy.dynconfd_path(), "--credentials", creds,
                           "--add-user", user, "--iterations", "4096"],
                          input=pw + "\n", capture_output=True, text=True,
                          timeout=60)


def make_credentials(tmp):
    creds = os.path.join(tmp, "creds")
    r = add_user(creds, "oa-admin ", "pw")
    t.ok(r.returncode != 0 and "ends with a blank" in r.stderr,
         "--add-user 'oa-admin ' is refused saying why: %s"
         % r.stderr.strip())
    for user in ("oa-admin", "oa-adminX"):
        if add_user(creds, user, "pw").returncode:
            raise RuntimeError("--add-user %s failed" % user)
    with open(creds) as f:
        lines = f.read().replace("\noa-adminX ", "\noa-admin%20 ")
    with open(creds, "w") as f:
        f.write(lines)
    return creds


def sasl_cases(port):
    for mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        tok = plain("oa-admin ", "pw") if mech == "PLAIN" else \
            scram_first("oa-admin ")
        err, msg = first_step(port, mech, tok)
        t.ok(err == SASL_AUTHENTICATION_FAILED and WHY in (msg or ""),
             "%s as 'oa-admin ' (its password is in the file): refused, "
             "saying why (%r)" % (mech, msg))
    err, msg = first_step(port, "PLAIN", plain("oa-admin", "pw"))
    t.is_(err, 0, "PLAIN as 'oa-admin' authenticates (%r)" % (msg,))
    err, msg = first_step(port, "SCRAM-SHA-256", scram_first("oa-admin"))
    t.is_(err, 0, "SCRAM-SHA-256 as 'oa-admin' gets its server-first "
                  "message (%r)" % (msg,))


def tls_handshake(port, certs, who):
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    ctx.load_cert_chain(os.path.join(certs, who + ".pem"),
                        os.path.join(certs, who + ".key"))
    try:
        raw = dcpy.Raw("127.0.0.1", port, ctx)
        # TLS 1.3: a refused client certificate shows at the first read.
        raw.send(frame(18, 0, 1, b""))
        raw.recv_frame()
        raw.close()
        return True
    except (ssl.SSLError, ConnectionError, OSError):
        return False


def wait_log(d, text, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(d.log_path, errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.05)
    return False


def tls_cases(d, certs):
    port = d.addr("SSL")[1]
    t.ok(tls_handshake(port, certs, "admin"),
         "TLS: the certificate CN=oa-admin is served")
    t.ok(not tls_handshake(port, certs, "blank"),
         "TLS: the certificate CN='oa-admin ' fails the handshake")
    t.ok(wait_log(d, "a value of the client certificate subject ends with "
                     "a blank"),
         "  dynconfd logs why")


def main():
    signal.alarm(240)
    tmp = tempfile.mkdtemp(prefix="dynconf-names-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


def run(tmp):
    certs = os.path.join(tmp, "certs")
    gen = os.path.join(dcpy.srcdir(), "tests", "gen_certs.sh")
    subprocess.run(["sh", gen, certs], check=True, timeout=120)
    for who, cn in (("admin", "oa-admin"), ("blank", "oa-admin ")):
        subprocess.run(["sh", gen, certs, "leaf-subject", who,
                        "/O=dynconf-test/CN=" + cn], check=True, timeout=60)
    creds = make_credentials(tmp)
    d = dcpy.Daemon(tmp, [
        "--listeners", "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "--data-dir", os.path.join(tmp, "data"), "--credentials", creds,
        "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "--ssl-cert", os.path.join(certs, "server.pem"),
        "--ssl-key", os.path.join(certs, "server.key"),
        "--ssl-ca", os.path.join(certs, "ca.pem"),
        "--ssl-client-auth", "required"], n_listeners=2)
    try:
        sasl_cases(d.addr("SASL_PLAINTEXT")[1])
        tls_cases(d, certs)
        t.ok(d.proc.poll() is None, "dynconfd still runs")
    finally:
        rc = d.stop()
        t.is_(rc, 0, "dynconfd stops cleanly")
        if rc:
            d.log_tail()


if __name__ == "__main__":
    main()
