#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: SASL OAUTHBEARER on dynconfd's SASL_PLAINTEXT listener.

Keys (RSA-2048 and EC P-256) are made here with python3-cryptography, the
JWKS file is written here, and tokens are signed here with PyJWT. Clients:
kafka-python 2.0.2 (its token provider; SaslHandshake v0 and a raw token),
a raw socket speaking SaslHandshake v1 + SaslAuthenticate v1 (to read the
server's answers), and librdkafka through kcat with its own unsecured
tokens (sasl.oauthbearer.config).

Cases: RS256 and ES256 tokens authenticate and the principal (User:sub, or
another claim) is what the audit history records; expired, not yet valid,
wrong issuer, wrong audience, bad signature, unknown kid, a key not in the
JWKS, a sub with a trailing blank and alg none are refused with the reason
after {"status": "invalid_token"}; a JWKS file replaced and reloaded by SIGHUP changes which
key is trusted, a broken one keeps the old keys; dynconf-configs
--reload-keystore on this server without TLS says what it did with the JWKS
and ACL files (not "nothing to reload"); unsigned tokens pass only
on a server started with --sasl-oauthbearer-unsecured; an ACL file
applies to OAUTHBEARER principals as to any other.

Prints TAP. Every socket wait is bounded; a global alarm turns any hang
into a failure.
"""
import base64
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dcpy  # noqa: E402  (re-execs under Debian's python3 for its packages)

dcpy.require_kafka_python()
import jwt  # noqa: E402  (python3-jwt)
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import ConfigResource  # noqa: E402
from kafka.oauth.abstract import AbstractTokenProvider  # noqa: E402

t = dcpy.t
CLIENT = 9
ISS = "https://issuer.dynconf.test"
AUD = "dynconf"
TIMEOUT_MS = 5000


def b64u(n_bytes):
    return base64.urlsafe_b64encode(n_bytes).rstrip(b"=").decode()


def int_bytes(i, size=None):
    size = size or (i.bit_length() + 7) // 8
    return i.to_bytes(size, "big")


def jwk_rsa(key, kid):
    pub = key.public_key().public_numbers()
    return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
            "n": b64u(int_bytes(pub.n)), "e": b64u(int_bytes(pub.e))}


def jwk_ec(key, kid):
    pub = key.public_key().public_numbers()
    return {"kty": "EC", "kid": kid, "crv": "P-256", "use": "sig",
            "x": b64u(int_bytes(pub.x, 32)), "y": b64u(int_bytes(pub.y, 32))}


def write_jwks(path, keys):
    with open(path + ".tmp", "w") as f:
        json.dump({"keys": keys}, f)
    os.replace(path + ".tmp", path)


def claims(sub="alice", life=300, **extra):
    now = int(time.time())
    c = {"sub": sub, "iss": ISS, "aud": AUD, "iat": now, "exp": now + life}
    c.update(extra)
    return c


def sign(key, kid, c, alg="RS256"):
    return jwt.encode(c, key, algorithm=alg, headers={"kid": kid})


class Token(AbstractTokenProvider):
    def __init__(self, token):
        super().__init__()
        self._token = token

    def token(self):
        return self._token


def admin(port, token, client_id="oauth-py"):
    return KafkaAdminClient(
        bootstrap_servers="127.0.0.1:%d" % port, client_id=client_id,
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=Token(token),
        api_version_auto_timeout_ms=TIMEOUT_MS, request_timeout_ms=TIMEOUT_MS)


def client_resource(name, configs=None):
    r = ConfigResource("TOPIC", name, configs)
    r.resource_type = CLIENT
    return r


def admin_alters(port, token, entity, configs):
    """kafka-python authenticates with token and alters entity: the
    result's error code, or the exception's name when it could not."""
    try:
        a = admin(port, token)
    except Exception as e:  # what kafka-python raises varies by failure
        return type(e).__name__
    try:
        res = a.alter_configs([client_resource(entity, configs)]).resources
        return res[0][0]
    finally:
        a.close()


# ---- a raw SaslHandshake v1 / SaslAuthenticate v1 exchange ---------------


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def frame(api_key, version, corr, body):
    payload = struct.pack(">hhi", api_key, version, corr) + kstr("raw-oauth") + body
    return struct.pack(">i", len(payload)) + payload


def sasl_authenticate(raw, corr, auth_bytes, lifetime=None):
    """-> (error_code, error_message, auth_bytes) of SaslAuthenticate v1;
    the session lifetime goes into lifetime[0] when a list is given."""
    raw.send(frame(36, 1, corr, struct.pack(">i", len(auth_bytes)) + auth_bytes))
    r = raw.recv_frame()
    (got_corr, err, mlen) = struct.unpack(">ihh", r[:8])
    assert got_corr == corr, (got_corr, corr)
    msg = r[8:8 + mlen].decode() if mlen >= 0 else None
    off = 8 + max(mlen, 0)
    (blen,) = struct.unpack(">i", r[off:off + 4])
    if lifetime is not None:
        (lifetime[0],) = struct.unpack(">q", r[off + 4 + blen:off + 12 + blen])
    return err, msg, r[off + 4:off + 4 + blen]


def login(raw, token, corr):
    """SaslHandshake v1 + SaslAuthenticate v1 on raw: (error_code,
    message, session_lifetime_ms)."""
    raw.send(frame(17, 1, corr, kstr("OAUTHBEARER")))
    hs = raw.recv_frame()
    (_, herr) = struct.unpack(">ih", hs[:6])
    if herr:
        return herr, "handshake", 0
    life = [0]
    first = b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"
    err, msg, _ = sasl_authenticate(raw, corr + 1, first, life)
    return err, msg, life[0]


def metadata_works(raw, corr):
    """Whether a Metadata v0 request on raw is answered."""
    try:
        raw.send(frame(3, 0, corr, struct.pack(">i", 0)))
        r = raw.recv_frame()
        return struct.unpack(">i", r[:4])[0] == corr
    except (ConnectionError, OSError):
        return False


def raw_exchange(port, token):
    """SaslHandshake v1 (OAUTHBEARER), then the client-first message; on
    a refusal the lone %x01 as librdkafka sends it. -> list of answers."""
    raw = dcpy.Raw("127.0.0.1", port)
    try:
        raw.send(frame(17, 1, 1, kstr("OAUTHBEARER")))
        hs = raw.recv_frame()
        (_, herr) = struct.unpack(">ih", hs[:6])
        if herr:
            return [("handshake", herr)]
        first = b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"
        out = [sasl_authenticate(raw, 2, first)]
        if out[0][0] == 0 and out[0][2]:
            out.append(sasl_authenticate(raw, 3, b"\x01"))
        return out
    finally:
        raw.close()


def check_refused(port, token, why, desc):
    answers = raw_exchange(port, token)
    ok = (len(answers) == 2 and answers[0][0] == 0 and
          json.loads(answers[0][2]) == {"status": "invalid_token"} and
          answers[1][0] == 58 and why in (answers[1][1] or ""))
    t.ok(ok, "%s: invalid_token, then SASL_AUTHENTICATION_FAILED naming "
             "'%s'" % (desc, why))
    if not ok:
        t.diag("  answers: %r" % (answers,))
    t.ok(admin_alters(port, token, "oauth-refused", {"acks": "1"}) != 0,
         "  kafka-python cannot use it either")


def kcat_metadata(port, principal):
    """kcat -L as librdkafka with an unsecured token for principal."""
    r = subprocess.run(
        ["kcat", "-L", "-b", "127.0.0.1:%d" % port, "-m", "5",
         "-X", "security.protocol=SASL_PLAINTEXT",
         "-X", "sasl.mechanisms=OAUTHBEARER",
         "-X", "sasl.oauthbearer.config=principal=%s" % principal,
         "-X", "enable.sasl.oauthbearer.unsecure.jwt=true"],
        capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def cli(tmp, port, props, *args, entity_type="clients"):
    """dynconf-configs with --command-config holding props: (rc, output)."""
    path = os.path.join(tmp, "cli.props")
    with open(path, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n")
        for k, v in props.items():
            f.write("%s=%s\n" % (k, v))
    r = subprocess.run(
        [os.path.join(dcpy.builddir(), "dynconf-configs"), "--bootstrap-server",
         "127.0.0.1:%d" % port, "--command-config", path] +
        (["--entity-type", entity_type] if entity_type else []) + list(args),
        capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def cli_token(tmp, port, token, *args, entity_type="clients"):
    path = os.path.join(tmp, "token.jwt")
    with open(path, "w") as f:
        f.write(token + "\n")
    return cli(tmp, port, {"sasl.oauthbearer.token.endpoint.url":
                           "file://" + path}, *args, entity_type=entity_type)


def cli_cases(tmp, port, k1):
    rc, out = cli_token(tmp, port, sign(k1, "k1", claims("alice")),
                        "--entity-name", "oauth-cli", "--alter",
                        "--add-config", "acks=1")
    t.ok(rc == 0, "dynconf-configs authenticates with a token file "
         "(sasl.oauthbearer.token.endpoint.url=file://...) and alters")
    if rc:
        t.diag(out[-400:])
    rc, out = cli_token(tmp, port, sign(k1, "k1", claims("alice", life=-120)),
                        "--entity-name", "oauth-cli", "--describe")
    t.ok(rc == 1 and "SASL authentication failed" in out and "expired" in out,
         "  an expired token: exit 1 with the server's reason: %s"
         % out.strip()[-160:])
    rc, out = cli(tmp, port, {"sasl.oauthbearer.config": "principal=alice"},
                  "--entity-name", "oauth-cli", "--describe")
    t.ok(rc == 2 and "enable.sasl.oauthbearer.unsecure.jwt" in out,
         "  sasl.oauthbearer.config without "
         "enable.sasl.oauthbearer.unsecure.jwt=true is a usage error")


def history(data_dir):
    r = subprocess.run([dcpy.dynconfd_path(), "--data-dir", data_dir,
                        "--history"], capture_output=True, text=True,
                       timeout=30)
    return r.stdout


def main():
    signal.alarm(240)
    tmp = tempfile.mkdtemp(prefix="dynconf-oauth-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


def run(tmp):
    k1 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    k2 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    e1 = ec.generate_private_key(ec.SECP256R1())
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks = os.path.join(tmp, "jwks.json")
    write_jwks(jwks, [jwk_rsa(k1, "k1"), jwk_ec(e1, "e1")])
    acl = os.path.join(tmp, "acl")
    with open(acl, "w") as f:
        f.write("allow User:alice alter client:oauth-*\n"
                "allow User:alice alter broker\n"
                "allow User:carol alter client:oauth-es\n")
    data = os.path.join(tmp, "data")
    d = dcpy.Daemon(tmp, [
        "--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--data-dir", data,
        "--sasl-oauthbearer-jwks", jwks, "--acl-file", acl,
        "--sasl-oauthbearer-expected-issuer", ISS,
        "--sasl-oauthbearer-expected-audience", AUD])
    port = d.port
    try:
        good(port, k1, e1)
        refused(port, k1, e1, stranger)
        cli_cases(tmp, port, k1)
        reload(d, port, jwks, k1, k2)
        reload_cli(tmp, port, jwks, acl, k1, k2)
        answers = raw_exchange(port, jwt.encode(claims(), None, algorithm="none"))
        t.ok(answers and answers[-1][0] == 58 and
             "unsecured" in (answers[-1][1] or ""),
             "alg none is refused without --sasl-oauthbearer-unsecured: %r"
             % (answers[-1][1] if answers else None,))
        rc, out = kcat_metadata(port, "bob")
        t.ok(rc != 0, "librdkafka's unsecured token is refused there too")
    finally:
        t.is_(d.stop(), 0, "dynconfd stops cleanly")
    h = history(data)
    t.ok("User:alice" in h and "oauth-ok" in h,
         "the audit history names User:alice for her alter")
    t.ok("User:carol" in h and "oauth-es" in h,
         "  and User:carol for hers (ES256)")
    unsecured(tmp)


def good(port, k1, e1):
    tok = sign(k1, "k1", claims("alice"))
    t.is_(admin_alters(port, tok, "oauth-ok", {"acks": "1"}), 0,
          "RS256 token: kafka-python authenticates as User:alice and alters")
    answers = raw_exchange(port, tok)
    t.ok(len(answers) == 1 and answers[0][0] == 0 and answers[0][2] == b"",
         "  the raw exchange ends at once with an empty answer")
    tok = sign(e1, "e1", claims("carol"), alg="ES256")
    t.is_(admin_alters(port, tok, "oauth-es", {"acks": "all"}), 0,
          "ES256 token: authenticates as User:carol and alters her entity")
    res = admin_alters(port, tok, "oauth-ok", {"acks": "0"})
    t.ok(isinstance(res, int) and res != 0,
         "  the ACL file refuses User:carol alice's entity (error %r)" % (res,))


def refused(port, k1, e1, stranger):
    now = int(time.time())
    check_refused(port, sign(k1, "k1", claims(life=-120)), "expired",
                  "an expired token")
    check_refused(port, sign(k1, "k1", claims(nbf=now + 600)),
                  "not valid before",
                  "a token not valid before ten minutes from now")
    check_refused(port, sign(k1, "k1", claims(iss="https://evil.test")),
                  "issuer", "a token from another issuer")
    check_refused(port, sign(k1, "k1", claims(aud="someone-else")),
                  "audience", "a token for another audience")
    tok = sign(k1, "k1", claims())
    head, body, sig = tok.split(".")
    forged = json.loads(base64.urlsafe_b64decode(body + "=="))
    forged["sub"] = "admin"
    body2 = b64u(json.dumps(forged).encode())
    check_refused(port, "%s.%s.%s" % (head, body2, sig), "signature",
                  "a payload changed after signing")
    check_refused(port, sign(stranger, "k1", claims()), "signature",
                  "a token signed by a key not in the JWKS under a known kid")
    check_refused(port, sign(stranger, "k9", claims()), "k9",
                  "a token naming an unknown kid")
    check_refused(port, sign(k1, "k1", claims("alice ")),
                  "the 'sub' claim 'alice ' ends with a blank",
                  "a validly signed token whose sub reads like another "
                  "principal ('alice ')")


def wait_log(d, text, seconds=10):
    """Whether dynconfd's log says text within seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(d.log_path, errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.05)
    return False


def reload(d, port, jwks, k1, k2):
    write_jwks(jwks, [jwk_rsa(k2, "k2")])
    d.proc.send_signal(signal.SIGHUP)
    tok2 = sign(k2, "k2", claims("alice"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and raw_exchange(port, tok2)[0][2] != b"":
        time.sleep(0.1)
    t.ok(raw_exchange(port, tok2)[0][2] == b"",
         "after the JWKS file is replaced and SIGHUP, k2's tokens pass")
    check_refused(port, sign(k1, "k1", claims()), "k1",
                  "  and k1's are refused (k1 is gone)")
    with open(jwks, "w") as f:
        f.write("{ not json")
    d.proc.send_signal(signal.SIGHUP)
    said = wait_log(d, "OAUTHBEARER keys %s: not reloaded, old keys kept"
                    % jwks)
    t.ok(said, "a broken JWKS file on SIGHUP is refused in the log")
    t.ok(raw_exchange(port, tok2)[0][2] == b"",
         "  and the old keys stay in force")


def reload_cli(tmp, port, jwks, acl, k1, k2):
    """dynconf-configs --reload-keystore on a server without TLS: one line
    per security file, the broken JWKS file (left by reload()) refused
    with its reason while the ACL file is reloaded, then the fixed file
    reloaded."""
    tok2 = sign(k2, "k2", claims("alice"))
    rc, out = cli_token(tmp, port, tok2, "--reload-keystore", entity_type=None)
    t.ok(rc == 1 and "\nOAUTHBEARER keys %s: not reloaded, old keys kept: "
         % jwks in "\n" + out and "\nreloaded ACL file %s\n" % acl in
         "\n" + out,
         "--reload-keystore with the broken JWKS file: the keys kept and why, "
         "the ACL file reloaded, exit 1: %s" % out.strip()[-300:])
    write_jwks(jwks, [jwk_rsa(k1, "k1"), jwk_rsa(k2, "k2")])
    rc, out = cli_token(tmp, port, tok2, "--reload-keystore", entity_type=None)
    t.ok(rc == 0 and "reloaded OAUTHBEARER keys %s\n" % jwks in out and
         "nothing to reload" not in out,
         "--reload-keystore with a good JWKS file says it reloaded the "
         "OAUTHBEARER keys: %s" % out.strip()[-300:])
    t.ok(raw_exchange(port, sign(k1, "k1", claims()))[0][2] == b"",
         "  and k1's tokens pass again")


def unsigned(sub, life):
    return jwt.encode({"sub": sub, "exp": int(time.time()) + life}, None,
                      algorithm="none")


def sessions(d):
    """KIP-368 on a server without clock skew and a 60 s reauth limit."""
    raw = dcpy.Raw("127.0.0.1", d.port)
    try:
        err, _, life = login(raw, unsigned("erin", 2), 10)
        t.ok(err == 0 and 1000 < life <= 2000,
             "SaslAuthenticate v1 gives a token expiring in 2 s a session "
             "lifetime of at most 2 s (%d ms)" % life)
        err, _, life = login(raw, unsigned("erin", 600), 20)
        t.ok(err == 0 and life == 60000,
             "  re-authenticating on the same connection with a fresh token "
             "works, capped by --connections-max-reauth-ms (%d ms)" % life)
        time.sleep(2.2)  # past the first token's expiry
        t.ok(metadata_works(raw, 30),
             "  and the connection outlives the first token")
        err, msg, _ = login(raw, unsigned("mallory", 600), 40)
        t.ok(err == 58 and "re-authentication as User:mallory" in (msg or ""),
             "re-authenticating as another principal is refused: %r" % msg)
        t.ok(not metadata_works(raw, 50), "  and the connection is closed")
    finally:
        raw.close()
    raw = dcpy.Raw("127.0.0.1", d.port)
    try:
        err, _, life = login(raw, unsigned("erin", 2), 60)
        t.ok(err == 0 and metadata_works(raw, 70),
             "a token expiring in 2 s serves requests at first")
        time.sleep(max(0.0, life / 1000.0) + 0.3)  # the session's own end
        t.ok(not metadata_works(raw, 80),
             "  after its session ends without re-authentication, a request "
             "closes the connection")
        t.ok(wait_log(d, "the SASL session of User:erin ended"),
             "  and the log says why")
    finally:
        raw.close()


def watch_frame(corr, client, known, timeout_ms):
    """Watch v1 (flexible header) for client."""
    c = client.encode()
    body = (bytes([len(c) + 1]) + c + struct.pack(">qiq", known, timeout_ms, -1)
            + b"\x00")
    payload = (struct.pack(">hhi", 20001, 1, corr) + kstr("raw-oauth") +
               b"\x00" + body)
    return struct.pack(">i", len(payload)) + payload


def watch_version(answer):
    """The version in a Watch v1 answer (after corr, tags, throttle, error,
    message, changed)."""
    off = 4 + 1 + 4 + 2
    n = answer[off]  # a short message's compact length (0 = null)
    off += 1 + max(n - 1, 0) + 1
    return struct.unpack(">q", answer[off:off + 8])[0]


def parked_watch_ends(d, tmp):
    """A parked Watch does not outlive its session: the connection closes
    when the session ends, and a change made after that is never sent."""
    raw = dcpy.Raw("127.0.0.1", d.port)
    try:
        err, _, life = login(raw, unsigned("erin", 2), 90)
        raw.send(watch_frame(91, "sess-watched", -1, 0))
        version = watch_version(raw.recv_frame())
        raw.send(watch_frame(92, "sess-watched", version, 60000))
        time.sleep(life / 1000.0 + 0.5)  # the session's end has passed
        rc, out = cli(tmp, d.port, {
            "sasl.oauthbearer.config": "principal=frank lifeSeconds=60",
            "enable.sasl.oauthbearer.unsecure.jwt": "true"},
            "--entity-name", "sess-watched", "--alter", "--add-config",
            "acks=0")
        t.ok(err == 0 and rc == 0, "a change to a watched client-id made "
             "after the watching session ended (alter exit %d)" % rc)
        data, closed = raw.drain()
        t.ok(closed and data == b"", "  never reaches the parked Watch: the "
             "connection was closed at the session's end (%d bytes came)"
             % len(data))
        t.ok(wait_log(d, "its parked request is dropped"),
             "  and the log says the parked request was dropped")
    finally:
        raw.close()


def unsecured(tmp):
    d = dcpy.Daemon(tmp, [
        "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
        "--data-dir", os.path.join(tmp, "data2"),
        "--sasl-oauthbearer-unsecured",
        "--sasl-oauthbearer-clock-skew-seconds", "0",
        "--connections-max-reauth-ms", "60000"])
    try:
        sessions(d)
        parked_watch_ends(d, tmp)
        rc, out = cli(tmp, d.port, {"sasl.oauthbearer.config":
                                    "principal=frank lifeSeconds=60",
                                    "enable.sasl.oauthbearer.unsecure.jwt":
                                    "true"},
                      "--entity-name", "oauth-frank", "--alter",
                      "--add-config", "acks=0")
        t.ok(rc == 0, "dynconf-configs with an unsigned token "
             "(sasl.oauthbearer.config) on the unsecured server")
        if rc:
            t.diag(out[-400:])
        rc, out = kcat_metadata(d.port, "bob")
        t.ok(rc == 0 and "broker" in out,
             "with --sasl-oauthbearer-unsecured, librdkafka's unsecured "
             "token (principal=bob) authenticates (kcat -L)")
        if rc:
            t.diag(out[-500:])
        tok = jwt.encode({"sub": "dave", "exp": int(time.time()) + 60}, None,
                         algorithm="none")
        t.is_(admin_alters(d.port, tok, "oauth-unsec", {"acks": "1"}), 0,
              "  and kafka-python's unsigned token (no issuer or audience "
              "required there)")
    finally:
        t.is_(d.stop(), 0, "the unsecured dynconfd stops cleanly")


if __name__ == "__main__":
    main()
