#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Forwarding between replicas over GSSAPI (Kerberos): two dynconfd
replicas of a Kafka-topic store on librdkafka's mock cluster, each with
only a SASL_PLAINTEXT listener taking Kerberos (kafka/127.0.0.1 in their
keytab), an ACL file and User:replica a super user, against a throw-away
MIT KDC (tests/dckrb.py). The follower forwards as replica/host from its
own keytab (--forward-config: sasl.mechanism=GSSAPI,
sasl.kerberos.keytab, sasl.kerberos.principal): carol's alter (her
keytab) sent to it is stored by the writer as User:carol. A second
follower whose keytab went stale (its principal re-keyed) cannot log in
to the writer: carol is answered NOT_CONTROLLER with Kerberos' reason,
which the follower logs, and nothing is stored.

Prints TAP. A global alarm turns any hang into a failure.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dcpy  # noqa: E402
import dckrb  # noqa: E402

t = dcpy.t


def mock_cluster():
    """examples/mock_cluster with the store's topics: (process, bootstrap);
    it runs until its stdin closes."""
    p = subprocess.Popen(
        [os.path.join(dcpy.builddir(), "examples", "mock_cluster"),
         "--brokers", "3", "--topic", "_dynconf_configs", "--partitions", "1",
         "--topic", "_dynconf_configs_history", "--partitions", "1",
         "--control"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    first = p.stdout.readline().strip()
    if not first.startswith("bootstrap "):
        raise RuntimeError("the mock cluster did not start: %r" % first)
    return p, first[len("bootstrap "):]


def wait_log(path, pattern, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            if re.search(pattern, f.read()):
                return True
        time.sleep(0.1)
    return False


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def replica(tmp, node, bootstrap, forward_props):
    """dynconfd node `node`, its log and data under tmp/n<node>."""
    d = os.path.join(tmp, "n%d" % node)
    os.makedirs(d, exist_ok=True)
    args = ["--data-dir", os.path.join(d, "data"), "--node-id", str(node),
            "--store", "kafka", "--store-bootstrap", bootstrap,
            "--store-timeout-ms", "20000", "--store-session-timeout-ms", "3000",
            "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
            "--sasl-kerberos-keytab", os.path.join(tmp, "kafka.keytab"),
            "--acl-file", os.path.join(tmp, "acl"),
            "--super-users", "User:replica"]
    if forward_props:
        args += ["--forward-config", forward_props]
    return dcpy.Daemon(d, args)


def alter(tmp, port, value, timeout_ms):
    """carol (her keytab) alters krb-fwd's acks through port: (rc, output)."""
    props = write(os.path.join(tmp, "carol.props"),
                  "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
                  "sasl.kerberos.keytab=%s\nsasl.kerberos.principal=carol\n"
                  % os.path.join(tmp, "carol.keytab"))
    r = subprocess.run(
        [os.path.join(dcpy.builddir(), "dynconf-configs"), "--bootstrap-server",
         "127.0.0.1:%d" % port, "--command-config", props, "--timeout-ms",
         str(timeout_ms), "--entity-type", "clients", "--entity-name",
         "krb-fwd", "--alter", "--add-config", "acks=%s" % value],
        capture_output=True, text=True, timeout=90)
    return r.returncode, (r.stdout + r.stderr).strip()


def history(tmp, node):
    r = subprocess.run([dcpy.dynconfd_path(), "--data-dir",
                        os.path.join(tmp, "n%d" % node, "data"), "--history"],
                       capture_output=True, text=True, timeout=30)
    return r.stdout


def make_realm(tmp):
    realm = dckrb.Realm(tmp)
    realm.add_principal("kafka/127.0.0.1")
    realm.keytab(os.path.join(tmp, "kafka.keytab"), "kafka/127.0.0.1")
    for name, kt in (("carol", "carol"), ("replica/host", "replica"),
                     ("stale/host", "stale")):
        realm.add_principal(name)
        realm.keytab(os.path.join(tmp, kt + ".keytab"), name)
    # New keys for stale/host: stale.keytab holds the old ones.
    realm.keytab(os.path.join(tmp, "stale-new.keytab"), "stale/host",
                 randkey=True)
    realm.export()  # dynconfd and the CLI inherit the realm's variables
    return realm


def forward_props(tmp, name, principal):
    return write(os.path.join(tmp, name + ".props"),
                 "sasl.mechanism=GSSAPI\nsasl.kerberos.keytab=%s\n"
                 "sasl.kerberos.principal=%s\n"
                 % (os.path.join(tmp, name + ".keytab"), principal))


def cases(tmp, writer, follower, stale):
    rc, out = alter(tmp, follower.port, "0", 30000)
    t.ok(rc == 0 and "Completed updating config" in out,
         "carol's alter sent to the follower is forwarded over GSSAPI as "
         "replica/host: %s" % out[-200:])
    hist = history(tmp, 1)
    t.ok(re.search(r"User:carol 127\.0\.0\.1:\d+ IncrementalAlterConfigs "
                   r"client:krb-fwd acks SET \(unset\) -> 0", hist),
         "  the writer stored it as User:carol")
    t.ok("User:replica" not in hist, "  not as the replica")
    rc, out = alter(tmp, stale.port, "1", 3000)
    t.ok(rc == 1 and re.search(r"NOT_CONTROLLER: cannot authenticate to node 1 "
                               r"at 127\.0\.0\.1:\d+, which writes, with this "
                               r"replica's credentials \(--forward-config\): "
                               r"SASL GSSAPI authentication with .* failed", out),
         "a follower with a stale keytab: NOT_CONTROLLER, saying why: %s"
         % out[-300:])
    t.ok(wait_log(stale.log_path, r"not forwarded: .*SASL GSSAPI "
                  r"authentication .*failed"),
         "  the follower logs Kerberos' reason")
    t.ok("acks SET 0 -> 1" not in history(tmp, 1), "  nothing stored")


def run(tmp):
    make_realm(tmp)
    write(os.path.join(tmp, "acl"), "allow User:carol all client:krb-*\n")
    mock, bootstrap = mock_cluster()
    daemons = []
    try:
        daemons.append(replica(tmp, 1, bootstrap,
                               forward_props(tmp, "replica", "replica/host")))
        t.ok(wait_log(daemons[0].log_path, "writing _dynconf_configs as node 1"),
             "node 1 writes the config topic")
        daemons.append(replica(tmp, 2, bootstrap,
                               forward_props(tmp, "replica", "replica/host")))
        daemons.append(replica(tmp, 3, bootstrap,
                               forward_props(tmp, "stale", "stale/host")))
        t.ok(all(wait_log(daemons[0].log_path, "node %d is a replica" % n)
                 for n in (2, 3)), "nodes 2 and 3 follow it")
        cases(tmp, *daemons)
    finally:
        for i, d in enumerate(daemons):
            rc = d.stop()
            t.ok(rc == 0, "replica %d stops cleanly (exit %s)" % (i + 1, rc))
            if rc != 0:
                d.log_tail()
        mock.stdin.close()
        mock.wait(10)


def main():
    signal.alarm(240)
    tmp = tempfile.mkdtemp(prefix="dynconf-krbfwd-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(t.done())


if __name__ == "__main__":
    main()
