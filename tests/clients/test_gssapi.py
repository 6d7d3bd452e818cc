#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: SASL GSSAPI (Kerberos) on dynconfd, the CLI, the agent,
kafka-python and librdkafka, against a throw-away MIT KDC on loopback
(tests/dckrb.py: kdb5_util and kadmin.local make the realm, principals and
keytabs in a temporary directory).

Principals: kafka/localhost and kafka/127.0.0.1 (dynconfd's keytab),
alice/host (a password; kinit fills her ticket cache), carol (a keytab),
ops/admin (a keytab; the rules map it to User:ops-team), dave (a keytab
made stale by re-keying), zed (a keytab, then deleted from the KDC),
"oa-admin " (a password).

Cases: the CLI with a ticket cache and with a keytab alters and the audit
history names User:alice / User:carol / User:ops-team; ACLs apply to
Kerberos principals; kafka-python (SaslHandshake v0 and raw tokens, its own
GSSAPI through python3-gssapi) and librdkafka (kcat, Cyrus SASL) reach the
server; the agent (examples/agent_watch) applies a change as alice and as
carol from her keytab; refusals in words: a stale keytab, a principal the
KDC no longer knows, an expired ticket, no ticket at all, a wrong service
name, a principal no rule maps, a principal whose local name ends with a
blank ('oa-admin @REALM'); a dynconfd whose keytab has no key for its
service does not start; a broken keytab written over the server's reaches
no login (its keys were read into memory), and SIGHUP and
dynconf-configs --reload-keystore keep the old keys, say why, and still
reload the ACL file changed beside it; a server keytab made stale by
re-keying fails the next login and a SIGHUP after the new keytab is in
place fixes it; a keytab with a newer key appended is used from
--reload-keystore on, not before.

Prints TAP. A global alarm turns any hang into a failure.
"""
import json
import os
import select
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
import dckrb  # noqa: E402

dckrb.require_gssapi()
from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import ConfigResource  # noqa: E402

t = dcpy.t
CLIENT = 9
TIMEOUT_MS = 5000
RULES = "RULE:[2:$1@$0](ops@DYNCONF.TEST)s/@.*/-team/,DEFAULT"


def cli(ctx, props, *args, ccache=None, entity_type="clients"):
    """dynconf-configs over GSSAPI with extra --command-config props and
    KRB5CCNAME=ccache (a file that may not exist): (rc, output).
    entity_type None: no --entity-type (--reload-keystore)."""
    path = os.path.join(ctx["tmp"], "cli.props")
    with open(path, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
        for k, v in props.items():
            f.write("%s=%s\n" % (k, v))
    env = dict(ctx["realm"].env)
    env["KRB5CCNAME"] = "FILE:" + (ccache or os.path.join(ctx["tmp"], "none.cc"))
    r = subprocess.run(
        [os.path.join(dcpy.builddir(), "dynconf-configs"), "--bootstrap-server",
         "localhost:%d" % ctx["port"], "--command-config", path] +
        (["--entity-type", entity_type] if entity_type else []) + list(args),
        capture_output=True, text=True, timeout=60, env=env)
    return r.returncode, (r.stdout + r.stderr).strip()


def keytab_props(ctx, name):
    return {"sasl.kerberos.keytab": os.path.join(ctx["tmp"], name + ".keytab"),
            "sasl.kerberos.principal": name}


def history(data_dir):
    r = subprocess.run([dcpy.dynconfd_path(), "--data-dir", data_dir,
                        "--history"], capture_output=True, text=True,
                       timeout=30)
    return r.stdout


def make_realm(tmp):
    realm = dckrb.Realm(tmp)
    for host in ("localhost", "127.0.0.1"):
        realm.add_principal("kafka/" + host)
    realm.keytab(os.path.join(tmp, "kafka.keytab"), "kafka/localhost",
                 "kafka/127.0.0.1")
    realm.add_principal("alice/host", "alice-secret")
    for name in ("carol", "ops/admin", "dave", "zed", "mallory/evil"):
        realm.add_principal(name)
        realm.keytab(os.path.join(tmp, name.replace("/", "-") + ".keytab"),
                     name)
    alice_cc = os.path.join(tmp, "alice.cc")
    r = realm.kinit("alice/host", "alice-secret", ccache=alice_cc)
    t.ok(r.returncode == 0, "the realm runs; alice/host has a ticket cache")
    return realm, alice_cc


def cli_cases(ctx):
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--alter",
                  "--add-config", "acks=1", ccache=ctx["alice_cc"])
    t.ok(rc == 0, "CLI with alice's ticket cache alters: %s" % out[-120:])
    rc, out = cli(ctx, keytab_props(ctx, "carol"), "--entity-name", "krb-carol",
                  "--alter", "--add-config", "acks=0")
    t.ok(rc == 0, "CLI with carol's keytab (in memory, no kinit) alters: %s"
         % out[-120:])
    props = {"sasl.kerberos.keytab": os.path.join(ctx["tmp"], "ops-admin.keytab"),
             "sasl.kerberos.principal": "ops/admin"}
    rc, out = cli(ctx, props, "--entity-name", "krb-ops", "--alter",
                  "--add-config", "acks=all")
    t.ok(rc == 0, "ops/admin (User:ops-team by the rules) alters krb-ops: %s"
         % out[-120:])
    jaas = ('com.sun.security.auth.module.Krb5LoginModule required '
            'useKeyTab=true storeKey=true keyTab="%s" principal="carol@%s";'
            % (os.path.join(ctx["tmp"], "carol.keytab"), ctx["realm"].realm))
    rc, out = cli(ctx, {"sasl.kerberos.service.name": "kafka",
                        "sasl.jaas.config": jaas},
                  "--entity-name", "krb-carol", "--describe")
    t.ok(rc == 0 and "acks=0" in out, "CLI with Kafka's sasl.jaas.config "
         "(Krb5LoginModule keyTab, principal) authenticates as carol: %s"
         % out[-120:])
    rc, out = cli(ctx, keytab_props(ctx, "carol"), "--entity-name", "krb-app",
                  "--alter", "--add-config", "acks=0")
    t.ok(rc != 0 and "User:carol is not authorized" in out,
         "the ACL denies User:carol on krb-app, in words: %s" % out[-160:])
    rc, out = cli(ctx, keytab_props(ctx, "carol"), "--entity-name", "krb-app",
                  "--describe")
    t.ok(rc == 0 and "acks=1" in out,
         "  and lets her describe it (acks=1, alice's value)")


def refusals(ctx):
    realm, tmp = ctx["realm"], ctx["tmp"]
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe")
    t.ok(rc != 0 and "no usable Kerberos ticket" in out and
         "No Kerberos credentials available" in out,
         "no ticket and no keytab: refused in Kerberos' words: %s" % out[-160:])
    realm.keytab(os.path.join(tmp, "dave-new.keytab"), "dave", randkey=True)
    rc, out = cli(ctx, keytab_props(ctx, "dave"), "--entity-name", "krb-app",
                  "--describe")
    t.ok(rc != 0 and "decrypt integrity check failed" in out.lower(),
         "a stale keytab (dave re-keyed): refused: %s" % out[-160:])
    realm._kadmin("delprinc -force zed@%s" % realm.realm, "deleted")
    rc, out = cli(ctx, keytab_props(ctx, "zed"), "--entity-name", "krb-app",
                  "--describe")
    t.ok(rc != 0 and "not found in Kerberos database" in out,
         "a principal the KDC does not know (zed, deleted): refused: %s"
         % out[-160:])
    expired = realm.expired_ccache("alice/host", "alice-secret",
                                   os.path.join(tmp, "expired.cc"))
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=expired)
    t.ok(rc != 0 and "no usable Kerberos ticket" in out and "expired" in out,
         "an expired ticket: refused: %s" % out[-160:])
    rc, out = cli(ctx, {"sasl.kerberos.service.name": "nosuch"},
                  "--entity-name", "krb-app", "--describe",
                  ccache=ctx["alice_cc"])
    t.ok(rc != 0 and "not found in Kerberos database" in out,
         "a wrong service name (nosuch/localhost): refused: %s" % out[-160:])
    props = {"sasl.kerberos.keytab": os.path.join(tmp, "mallory-evil.keytab"),
             "sasl.kerberos.principal": "mallory/evil"}
    rc, out = cli(ctx, props, "--entity-name", "krb-app", "--describe")
    t.ok(rc == 0, "mallory/evil maps by DEFAULT to User:mallory: %s"
         % out[-120:])


def look_alike(ctx):
    """A principal whose local name by DEFAULT ends with a blank: the KDC
    vouches for 'oa-admin @REALM', but User:oa-admin<blank> would read
    like User:oa-admin, so it is refused, saying why."""
    realm, tmp = ctx["realm"], ctx["tmp"]
    name = "oa-admin @" + realm.realm
    realm._kadmin('addprinc -pw "oa-secret" "%s"' % name,
                  'Principal "%s" created' % name)
    cc = os.path.join(tmp, "oa.cc")
    r = realm.kinit(name, "oa-secret", ccache=cc)
    t.ok(r.returncode == 0, "the KDC issues 'oa-admin @%s' a ticket: %s"
         % (realm.realm, r.stderr.strip()))
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=cc)
    t.ok(rc != 0 and "the local name of Kerberos principal %s ends with a "
         "blank" % name in out,
         "its local name 'oa-admin ' is refused, in words: %s" % out[-200:])


def unmapped(tmp, realm):
    """A server whose rules map nobody in the realm: the client is told
    which principal has no local name; the rules stay on the server."""
    d = dcpy.Daemon(tmp, [
        "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
        "--data-dir", os.path.join(tmp, "data-unmapped"),
        "--sasl-kerberos-keytab", os.path.join(tmp, "kafka.keytab"),
        "--sasl-kerberos-principal-to-local-rules",
        "RULE:[1:$1@$0](nobody@.*)s/@.*//"])
    try:
        ctx = {"tmp": tmp, "realm": realm, "port": d.port}
        rc, out = cli(ctx, keytab_props(ctx, "carol"), "--entity-name", "x",
                      "--describe")
        t.ok(rc != 0 and "no local name for Kerberos principal carol@" in out
             and "RULE" not in out,
             "no rule maps carol: refused, naming her, not the rules: %s"
             % out[-160:])
    finally:
        d.stop()
    with open(d.log_path, errors="replace") as f:
        log = f.read()
    t.ok("no principal-to-local rule applies to 'carol@DYNCONF.TEST'" in log,
         "  the server's log says which rules did not apply")


def bad_server_keytab(tmp):
    r = subprocess.run(
        [dcpy.dynconfd_path(), "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
         "--data-dir", os.path.join(tmp, "data-bad"),
         "--sasl-kerberos-keytab", os.path.join(tmp, "carol.keytab")],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    t.ok(r.returncode != 0 and "no Kerberos key for service 'kafka'" in r.stderr
         and "it holds carol@" in r.stderr,
         "dynconfd with a keytab holding no kafka/* key does not start, "
         "naming what it holds: %s" % r.stderr.strip()[-200:])
    r = subprocess.run(
        [dcpy.dynconfd_path(), "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
         "--data-dir", os.path.join(tmp, "data-bad"),
         "--sasl-kerberos-keytab", os.path.join(tmp, "missing.keytab")],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    t.ok(r.returncode != 0 and "missing.keytab" in r.stderr and
         "not found" in r.stderr,
         "  nor with a keytab that is not there: %s" % r.stderr.strip()[-200:])
    r = subprocess.run(
        [dcpy.dynconfd_path(), "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
         "--data-dir", os.path.join(tmp, "data-bad"),
         "--sasl-kerberos-keytab", os.path.join(tmp, "kafka.keytab"),
         "--sasl-kerberos-principal-to-local-rules", "RULE:[1:$1](\\d+)"],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    t.ok(r.returncode != 0 and "principal-to-local rule" in r.stderr,
         "  nor with rules that do not parse (Java's \\d): %s"
         % r.stderr.strip()[-200:])


def kafka_python(ctx):
    """kafka-python 2.0.2: SaslHandshake v0, then raw GSSAPI tokens; after
    the last one the server sends nothing and the next request is a
    normal one."""
    os.environ["KRB5CCNAME"] = "FILE:" + ctx["alice_cc"]
    try:
        a = KafkaAdminClient(
            bootstrap_servers="localhost:%d" % ctx["port"],
            client_id="krb-python", security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="GSSAPI", api_version_auto_timeout_ms=TIMEOUT_MS,
            request_timeout_ms=TIMEOUT_MS)
    except Exception as e:  # what kafka-python raises varies by failure
        t.ok(False, "kafka-python authenticates with GSSAPI: %r" % e)
        return
    try:
        r = ConfigResource("TOPIC", "krb-python", {"acks": "-1"})
        r.resource_type = CLIENT
        res = a.alter_configs([r]).resources
        t.is_(res[0][0], 0, "kafka-python (its own GSSAPI) alters as alice")
    finally:
        a.close()


def join_group_probe(ctx):
    """librdkafka's GSSAPI precondition: ApiVersions lists JoinGroup v0;
    before authentication a JoinGroup closes the connection."""
    raw = dcpy.Raw("127.0.0.1", ctx["port"])
    try:
        payload = struct.pack(">hhih", 18, 0, 1, 3) + b"raw"
        raw.send(struct.pack(">i", len(payload)) + payload)
        r = raw.recv_frame()
        (corr, err, n) = struct.unpack(">ihi", r[:10])
        keys = {struct.unpack(">hhh", r[10 + 6 * i:16 + 6 * i])
                for i in range(n)}
        t.ok(corr == 1 and err == 0 and (11, 0, 0) in keys,
             "a GSSAPI server's ApiVersions lists JoinGroup v0-0")
        body = (struct.pack(">h", 1) + b"g" + struct.pack(">ih", 10000, 0) +
                struct.pack(">h", 8) + b"consumer" + struct.pack(">i", 0))
        payload = struct.pack(">hhih", 11, 0, 2, 3) + b"raw" + body
        raw.send(struct.pack(">i", len(payload)) + payload)
        out, closed = raw.drain()
        t.ok(closed and out == b"", "  a JoinGroup before authentication "
             "closes the connection without an answer")
    finally:
        raw.close()


def kcat(ctx):
    env = dict(ctx["realm"].env)
    env["KRB5CCNAME"] = "FILE:" + ctx["alice_cc"]
    r = subprocess.run(
        ["kcat", "-L", "-b", "localhost:%d" % ctx["port"], "-m", "10",
         "-X", "security.protocol=SASL_PLAINTEXT",
         "-X", "sasl.mechanisms=GSSAPI",
         "-X", "sasl.kerberos.min.time.before.relogin=0",
         "-X", "sasl.kerberos.keytab=/nonexistent"],
        capture_output=True, text=True, timeout=30, env=env)
    t.ok(r.returncode == 0 and "1 brokers" in r.stdout,
         "librdkafka (kcat, Cyrus SASL) authenticates with GSSAPI: %s"
         % (r.stdout + r.stderr).strip()[-200:])


class Watch:
    """examples/agent_watch with -X properties, its lines collected."""

    def __init__(self, ctx, client_id, props, ccache=None):
        env = dict(ctx["realm"].env)
        env["KRB5CCNAME"] = "FILE:" + (ccache or os.path.join(ctx["tmp"], "none.cc"))
        argv = [os.path.join(dcpy.builddir(), "examples", "agent_watch")]
        for k, v in props.items():
            argv += ["-X", "%s=%s" % (k, v)]
        argv += ["localhost:%d" % ctx["port"], client_id, "60"]
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.lines = []

    def wait_for(self, text, timeout=20):
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return True
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
                *done, buf = buf.split(b"\n")
                self.lines += [x.decode(errors="replace") for x in done]
        return any(text in line for line in self.lines)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def agent(ctx):
    base = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "GSSAPI"}
    rc, out = cli(ctx, {}, "--entity-name", "alice", "--alter",
                  "--add-config", "linger.ms=7", ccache=ctx["alice_cc"],
                  entity_type="users")
    t.ok(rc == 0, "alice sets a config for her user entity (User:alice): %s"
         % out[-120:])
    w = Watch(ctx, "krb-app", base, ccache=ctx["alice_cc"])
    try:
        t.ok(w.wait_for("acks app->1"),
             "the agent (alice's ticket cache) applies krb-app's acks=1: %s"
             % (w.lines[-1:] or ["(nothing)"])[0][-160:])
        t.ok(w.wait_for("linger.ms app->7 [user-override"),
             "  and her user-scoped linger.ms=7, as a user override")
    finally:
        w.stop()
    props = dict(base)
    props.update({"dynconf.sasl.kerberos.keytab":
                  os.path.join(ctx["tmp"], "carol.keytab"),
                  "dynconf.sasl.kerberos.principal": "carol"})
    w = Watch(ctx, "krb-carol", props)
    try:
        t.ok(w.wait_for("acks app->0"),
             "the agent with dynconf.sasl.kerberos.keytab (carol) applies "
             "acks=0: %s" % (w.lines[-1:] or ["(nothing)"])[0][-160:])
        rc, out = cli(ctx, keytab_props(ctx, "carol"), "--entity-name",
                      "krb-carol", "--alter", "--add-config", "acks=1")
        t.ok(rc == 0 and w.wait_for("acks 0->1"),
             "  and a later alter reaches it on the same identity")
    finally:
        w.stop()
    w = Watch(ctx, "krb-app", base)
    try:
        t.ok(w.wait_for("No Kerberos credentials available"),
             "an agent with no ticket says why in Kerberos' words: %s"
             % (w.lines[-1:] or ["(nothing)"])[0][-200:])
    finally:
        w.stop()


def log_count(d, text):
    with open(d.log_path, errors="replace") as f:
        return f.read().count(text)


def log_line(d, text, n, seconds=10):
    """The n-th line of dynconfd's log holding text (1 = first), once it
    is there within seconds; else None."""
    deadline = time.monotonic() + seconds
    while True:
        with open(d.log_path, errors="replace") as f:
            lines = [x for x in f.read().splitlines() if text in x]
        if len(lines) >= n:
            return lines[n - 1]
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def tail(out, n=200):
    """The end of a command's output on one line, for a test's name."""
    return out[-n:].replace("\n", " | ")


def carol_alters(ctx, entity):
    return cli(ctx, keytab_props(ctx, "carol"), "--entity-name", entity,
               "--alter", "--add-config", "acks=1")


def broken_keytab(ctx, d):
    """Garbage written over the server's keytab: logins go on with the
    keys read at start; SIGHUP and --reload-keystore keep them, say why,
    and reload the ACL file changed at the same time all the same."""
    tmp, acl = ctx["tmp"], ctx["acl"]
    kt = os.path.join(tmp, "kafka.keytab")
    with open(kt, "wb") as f:
        f.write(b"not a keytab\n")
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=ctx["alice_cc"])
    t.ok(rc == 0, "garbage written over the server's keytab: a new login "
         "still succeeds, no SIGHUP: %s" % tail(out, 160))
    rc, out = carol_alters(ctx, "krb-hup")
    t.ok(rc != 0 and "User:carol is not authorized" in out,
         "  carol may not alter krb-hup yet")
    with open(acl, "a") as f:
        f.write("allow User:carol alter client:krb-hup\n")
    kept = "Kerberos keytab %s: not reloaded, old keys kept: " % kt
    why = "cannot read Kerberos keytab %s: Unsupported key table format " \
        "version number" % kt
    n = log_count(d, kept)
    d.proc.send_signal(signal.SIGHUP)
    line = log_line(d, kept, n + 1) or ""
    t.ok(kept + why in line and "reloaded ACL file %s;" % acl in line,
         "SIGHUP: the log says the keytab was not reloaded and why, the "
         "ACL file was: %s" % tail(line, 300))
    rc, out = carol_alters(ctx, "krb-hup")
    t.ok(rc == 0, "  logins still succeed, and the new ACL rule applies: "
         "%s" % tail(out, 160))
    with open(acl, "a") as f:
        f.write("allow User:carol alter client:krb-rpc\n")
    rc, out = cli(ctx, {}, "--reload-keystore", ccache=ctx["alice_cc"],
                  entity_type=None)
    t.ok(rc == 1 and ("\n" + kept + why + "\n") in ("\n" + out + "\n"),
         "--reload-keystore: the keytab not reloaded, old keys kept, why; "
         "exit 1: %s" % tail(out, 300))
    t.ok("\nreloaded ACL file %s\n" % acl in "\n" + out + "\n",
         "  and the ACL file reloaded")
    rc, out = carol_alters(ctx, "krb-rpc")
    t.ok(rc == 0, "  so its new rule applies: %s" % tail(out, 160))
    rc, out = cli(ctx, {}, "--reload-keystore", "--json",
                  ccache=ctx["alice_cc"], entity_type=None)
    try:
        files = json.loads(out)["files"]
    except (ValueError, KeyError):
        files = None
    t.ok(rc == 1 and files == [
        {"what": "ACL file", "path": acl, "ok": True, "error": None},
        {"what": "Kerberos keytab", "path": kt, "ok": False, "error": why}],
        "  --json: one entry per file: %s" % tail(out, 300))
    shutil.copy(os.path.join(tmp, "carol.keytab"), kt)
    rc, out = cli(ctx, {}, "--reload-keystore", ccache=ctx["alice_cc"],
                  entity_type=None)
    t.ok(rc == 1 and kept + "no Kerberos key for service 'kafka' in keytab "
         "%s: it holds carol@" % kt in out,
         "a keytab without a key for the service: not reloaded either: %s"
         % tail(out, 200))
    os.unlink(kt)
    rc, out = cli(ctx, {}, "--reload-keystore", ccache=ctx["alice_cc"],
                  entity_type=None)
    t.ok(rc == 1 and kept + "cannot read Kerberos keytab %s: Key table file "
         "'%s' not found" % (kt, kt) in out,
         "  nor a missing one: %s" % tail(out, 200))
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=ctx["alice_cc"])
    t.ok(rc == 0, "  and logins go on with the keys read at start")


def server_rekey(ctx, d):
    """The service is re-keyed in the KDC: tickets now name a key the old
    keytab lacks, so logins fail; the new keytab plus SIGHUP fixes it."""
    realm, tmp = ctx["realm"], ctx["tmp"]
    new_kt = os.path.join(tmp, "kafka-new.keytab")
    realm.keytab(new_kt, "kafka/localhost", randkey=True)
    fresh = os.path.join(tmp, "alice2.cc")
    realm.kinit("alice/host", "alice-secret", ccache=fresh)
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=fresh)
    t.ok(rc != 0 and "SASL authentication failed" in out,
         "after the service is re-keyed, the old server keytab refuses: %s"
         % out[-200:])
    shutil.copy(new_kt, os.path.join(tmp, "kafka.keytab.tmp"))
    os.replace(os.path.join(tmp, "kafka.keytab.tmp"),
               os.path.join(tmp, "kafka.keytab"))
    d.proc.send_signal(signal.SIGHUP)
    ok = False
    deadline = time.monotonic() + 10
    while not ok and time.monotonic() < deadline:
        rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                      ccache=fresh)
        ok = rc == 0
    t.ok(ok, "  the new keytab and SIGHUP: logins work again: %s" % out[-120:])
    rotate(ctx, new_kt, fresh)


def rotate(ctx, new_kt, old_cc):
    """A newer key appended to the keytab, as ktadd does: logins with it
    fail until --reload-keystore reads the file, then both keys work.
    old_cc holds a ticket for the key the server has now."""
    realm, tmp = ctx["realm"], ctx["tmp"]
    kt = os.path.join(tmp, "kafka.keytab")
    realm.keytab(new_kt, "kafka/localhost", randkey=True)
    shutil.copy(new_kt, kt + ".tmp")
    os.replace(kt + ".tmp", kt)
    new_cc = os.path.join(tmp, "alice3.cc")
    realm.kinit("alice/host", "alice-secret", ccache=new_cc)
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=new_cc)
    t.ok(rc != 0 and "kvno 3 not found in keytab" in out,
         "a keytab file changed on disk is not read before a reload: %s"
         % tail(out, 200))
    rc, out = cli(ctx, {}, "--reload-keystore", ccache=old_cc,
                  entity_type=None)
    t.ok(rc == 0 and out == "reloaded ACL file %s\nreloaded Kerberos keytab "
         "%s" % (ctx["acl"], kt),
         "--reload-keystore reads it and says so: %s" % tail(out, 200))
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=new_cc)
    t.ok(rc == 0, "  tickets for the new key are accepted: %s"
         % tail(out, 120))
    rc, out = cli(ctx, {}, "--entity-name", "krb-app", "--describe",
                  ccache=old_cc)
    t.ok(rc == 0, "  and for the old one, still in the keytab: %s"
         % tail(out, 120))


def main():
    signal.alarm(300)
    tmp = tempfile.mkdtemp(prefix="dynconf-krb-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(t.done())


def run(tmp):
    realm, alice_cc = make_realm(tmp)
    realm.export()
    acl = os.path.join(tmp, "acl")
    with open(acl, "w") as f:
        f.write("allow User:alice alter client:krb-*\n"
                "allow User:alice describe client:*\n"
                "allow User:alice alter user:alice\n"
                "allow User:alice alter broker\n"
                "allow User:carol alter client:krb-carol\n"
                "allow User:carol describe client:*\n"
                "allow User:ops-team alter client:krb-ops\n"
                "allow User:mallory describe client:krb-app\n")
    data = os.path.join(tmp, "data")
    try:
        d = dcpy.Daemon(tmp, [
            "--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--data-dir", data,
            "--sasl-kerberos-keytab", os.path.join(tmp, "kafka.keytab"),
            "--sasl-kerberos-principal-to-local-rules", RULES,
            "--acl-file", acl, "-v"])
        ctx = {"tmp": tmp, "realm": realm, "port": d.port,
               "alice_cc": alice_cc, "acl": acl}
        try:
            cli_cases(ctx)
            kafka_python(ctx)
            join_group_probe(ctx)
            kcat(ctx)
            agent(ctx)
            refusals(ctx)
            look_alike(ctx)
            broken_keytab(ctx, d)
            server_rekey(ctx, d)
        finally:
            t.is_(d.stop(), 0, "dynconfd stops cleanly")
            with open(d.log_path, errors="replace") as f:
                log = f.read()
        t.ok("authenticated as User:ops-team (GSSAPI ops/admin@DYNCONF.TEST)"
             in log, "dynconfd's log names the Kerberos principal beside the "
             "mapped one")
        h = history(data)
        t.ok("User:alice" in h and "krb-app" in h,
             "the audit history names User:alice for her alter")
        t.ok("User:carol" in h and "krb-carol" in h, "  User:carol for hers")
        t.ok("User:ops-team" in h and "krb-ops" in h,
             "  and User:ops-team for ops/admin's")
        unmapped(tmp, realm)
        bad_server_keytab(tmp)
    finally:
        realm.stop()


if __name__ == "__main__":
    main()
