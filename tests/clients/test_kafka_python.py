#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: kafka-python 2.0.2 (Debian python3-kafka) against dynconfd.

kafka-python probes with ApiVersions v0 and Metadata v0 pipelined, then its
KafkaAdminClient speaks Metadata v5, DescribeConfigs v2 and AlterConfigs v1
to us. Its ConfigResourceType enum only has TOPIC and BROKER, but the
constructor's result keeps resource_type as a plain attribute that the
request encoder writes as an Int8, so we build a TOPIC resource and set
.resource_type = 9 on the object (kafka/admin/config_resource.py,
_convert_*_config_resource_request in kafka/admin/client.py).

Prints TAP. Every socket wait is bounded; a global alarm turns any hang
into a failure.
"""
import os
import shutil
import signal
import sys
import tempfile
import traceback

# The shared helpers (dcpy.py ...) are in tests/, this test's parent folder.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dcpy import Daemon, free_port, t  # noqa: E402,F401
import dcpy  # noqa: E402

dcpy.require_kafka_python()

from kafka.admin import ConfigResource, KafkaAdminClient  # noqa: E402
from kafka.protocol.admin import DescribeConfigsRequest_v0  # noqa: E402

CLIENT, BROKER, TOPIC = 9, 4, 2
SRC_CLIENT, SRC_DEFAULT, SRC_STATIC_BROKER = 7, 8, 4
INVALID_CONFIG, INVALID_REQUEST = 40, 42
NODE_ID = 3
TIMEOUT_MS = 10000


def client_resource(name, configs=None):
    """A ConfigResource for the CLIENT type (9), see the module comment."""
    r = ConfigResource("TOPIC", name, configs)
    r.resource_type = CLIENT
    return r


def describe(admin, resource, synonyms=True):
    """DescribeConfigs of one resource -> (error_code, message, type, name,
    {key: (value, read_only, source, sensitive, synonyms)})."""
    responses = admin.describe_configs([resource], include_synonyms=synonyms)
    assert len(responses) == 1, responses
    res = responses[0].resources
    assert len(res) == 1, res
    err, msg, rtype, rname, entries = res[0]
    out = {}
    for name, value, read_only, source, sensitive, syns in entries:
        out[name] = (value, read_only, source, sensitive, syns)
    return err, msg, rtype, rname, out


def alter(admin, resources):
    """AlterConfigs -> [(error_code, message, type, name)] in response order."""
    resp = admin.alter_configs(resources)
    return [tuple(r) for r in resp.resources]


def check_entry(entries, who, key, value, source):
    e = entries.get(key)
    if not t.ok(e is not None, "%s: %s is listed" % (who, key)):
        t.diag("  entries: %r" % entries)
        return
    t.is_(e[0], value, "%s: %s=%s" % (who, key, value))
    t.is_(e[2], source, "%s: %s has source %d" % (who, key, source))
    t.ok(not e[1] and not e[3], "%s: %s is writable and not sensitive" % (who, key))


def test_metadata(admin, d):
    """Broker list = exactly our node at the advertised address."""
    meta = admin.describe_cluster()
    brokers = meta.get("brokers", [])
    t.is_(len(brokers), 1, "describe_cluster: exactly one broker")
    if brokers:
        b = brokers[0]
        t.is_(b["node_id"], NODE_ID, "broker node id is --node-id")
        t.is_(b["host"], "localhost", "broker host is the advertised host")
        t.is_(b["port"], d.port, "broker port is the advertised port")
    t.is_(meta.get("controller_id"), NODE_ID, "controller id = node id")
    t.ok(meta.get("cluster_id"), "cluster id present (%r)" % meta.get("cluster_id"))
    # The client's own cluster view, learned from its bootstrap Metadata.
    known = sorted((b.nodeId, b.host, b.port) for b in admin._client.cluster.brokers())
    t.is_(known, [(NODE_ID, "localhost", d.port)], "client cluster view: our node only")
    t.is_(admin.list_topics(), [], "no topics")


def test_configs(admin):
    err, msg, rtype, rname, e = describe(admin, client_resource("nobody"))
    t.is_(err, 0, "fresh: client with nothing set: error NONE")
    t.is_(e, {}, "fresh: client with nothing set: empty list")
    t.is_((rtype, rname), (CLIENT, "nobody"), "result echoes type 9 and the name")

    res = alter(admin, [
        client_resource("<default>", {"session.timeout.ms": "30000",
                                      "heartbeat.interval.ms": "3000"}),
        client_resource("svc-a", {"acks": "1"})])
    t.is_(sorted((r[3], r[0]) for r in res), [("<default>", 0), ("svc-a", 0)],
          "alter_configs of <default> and svc-a: both accepted")
    t.ok(all(r[2] == CLIENT for r in res), "alter results echo type 9")

    err, msg, rtype, rname, e = describe(admin, client_resource("svc-a"))
    t.is_(err, 0, "describe svc-a: error NONE")
    t.is_(sorted(e), ["acks", "heartbeat.interval.ms", "session.timeout.ms"],
          "svc-a resolves to its own acks plus the default's two keys")
    check_entry(e, "svc-a", "acks", "1", SRC_CLIENT)
    check_entry(e, "svc-a", "session.timeout.ms", "30000", SRC_DEFAULT)
    check_entry(e, "svc-a", "heartbeat.interval.ms", "3000", SRC_DEFAULT)

    err, _, _, _, e = describe(admin, client_resource("<default>"))
    t.ok(err == 0 and sorted(e) == ["heartbeat.interval.ms", "session.timeout.ms"],
         "describe <default>: its own two keys")
    check_entry(e, "<default>", "session.timeout.ms", "30000", SRC_DEFAULT)

    # Override a default key: the shadowed default is a source-8 synonym.
    res = alter(admin, [client_resource("svc-a", {"acks": "all",
                                                  "session.timeout.ms": "20000"})])
    t.is_(res[0][0], 0, "svc-a overrides session.timeout.ms")
    err, _, _, _, e = describe(admin, client_resource("svc-a"))
    check_entry(e, "svc-a", "session.timeout.ms", "20000", SRC_CLIENT)
    syns = e.get("session.timeout.ms", (None,) * 5)[4] or []
    t.ok(("session.timeout.ms", "30000", SRC_DEFAULT) in [tuple(s) for s in syns],
         "shadowed default listed as synonym (session.timeout.ms, 30000, 8): %r" % (syns,))

    # Without include_synonyms: no synonyms at all.
    err, _, _, _, e = describe(admin, client_resource("svc-a"), synonyms=False)
    t.ok(err == 0 and all(not v[4] for v in e.values()),
         "include_synonyms=False: no synonyms listed")

    # The ConfigurationKeys filter (kafka-python sends the configs dict keys).
    err, _, _, _, e = describe(admin, client_resource("svc-a", {"acks": None}))
    t.is_(sorted(e), ["acks"], "ConfigurationKeys filter: only acks")

    # AlterConfigs replaces the whole override set.
    res = alter(admin, [client_resource("svc-a", {"session.timeout.ms": "20000"})])
    t.is_(res[0][0], 0, "svc-a altered without acks")
    err, _, _, _, e = describe(admin, client_resource("svc-a"))
    t.ok("acks" not in e, "full replacement: acks gone from svc-a")
    t.is_(sorted(e), ["heartbeat.interval.ms", "session.timeout.ms"], "svc-a keys now")

    # Invalid values: INVALID_CONFIG per resource with a message, nothing stored.
    for configs, why in [({"acks": "2"}, "acks=2"),
                         ({"no.such.key": "x"}, "unknown key"),
                         ({"session.timeout.ms": "5999"}, "session below server minimum"),
                         ({"heartbeat.interval.ms": "30000"},
                          "heartbeat not below the inherited session timeout")]:
        res = alter(admin, [client_resource("svc-c", configs)])
        t.is_(res[0][0], INVALID_CONFIG, "%s -> INVALID_CONFIG" % why)
        t.ok(res[0][1] and list(configs)[0] in res[0][1],
             "%s: message names the key (%r)" % (why, res[0][1]))
    err, _, _, _, e = describe(admin, client_resource("svc-c"))
    t.ok(err == 0 and all(v[2] == SRC_DEFAULT for v in e.values()),
         "svc-c has no overrides after the rejected alters")

    # One good and one bad resource in one request: judged separately.
    res = alter(admin, [client_resource("svc-d", {"acks": "0"}),
                        client_resource("svc-e", {"acks": "bogus"})])
    t.is_(sorted((r[3], r[0]) for r in res), [("svc-d", 0), ("svc-e", INVALID_CONFIG)],
          "mixed alter: svc-d accepted, svc-e refused")

    # DescribeConfigs v0 through kafka-python's own request class: is_default
    # is true exactly for the inherited values.
    req = DescribeConfigsRequest_v0(resources=[(CLIENT, "svc-a", None)])
    fut = admin._send_request_to_node(admin._client.least_loaded_node(), req)
    admin._wait_for_futures([fut])
    r0 = fut.value.resources
    t.ok(len(r0) == 1 and r0[0][0] == 0, "DescribeConfigs v0 for svc-a: error NONE")
    v0 = {name: is_default for name, _v, _ro, is_default, _s in r0[0][4]} if r0 else {}
    t.is_(v0, {"session.timeout.ms": False, "heartbeat.interval.ms": True},
          "v0 is_default: own session false, inherited heartbeat true")


def test_other_types(admin):
    # TOPIC (2): INVALID_REQUEST per resource.
    err, msg, rtype, _, e = describe(admin, ConfigResource("TOPIC", "some-topic"))
    t.is_(err, INVALID_REQUEST, "describe TOPIC -> INVALID_REQUEST")
    t.ok(msg, "with a message (%r)" % msg)
    t.is_(rtype, TOPIC, "TOPIC result echoes type 2")
    res = alter(admin, [ConfigResource("TOPIC", "some-topic", {"acks": "1"})])
    t.is_(res[0][0], INVALID_REQUEST, "alter TOPIC -> INVALID_REQUEST")

    # BROKER (4) = our node: read-only static settings.
    err, msg, rtype, rname, e = describe(admin, ConfigResource("BROKER", str(NODE_ID)))
    t.is_(err, 0, "describe BROKER %d: error NONE" % NODE_ID)
    t.ok(len(e) >= 1, "BROKER lists the server's settings (%d)" % len(e))
    t.ok(e and all(v[1] for v in e.values()), "every BROKER entry is read-only")
    t.ok(e and all(v[2] == SRC_STATIC_BROKER for v in e.values()),
         "every BROKER entry has source 4")
    # kafka-python sends BROKER alters to any node (its own comment says so);
    # with one node that is ours, so the refusal is the server's.
    res = alter(admin, [ConfigResource("BROKER", str(NODE_ID), {"log.retention.ms": "1"})])
    t.ok(res[0][0] != 0 and res[0][1], "alter BROKER is refused with a message (%r)" % (res[0],))


def on_alarm(_sig, _frame):
    # Raised wherever the test is blocked; main() reports it as a failure.
    raise TimeoutError("test exceeded 180 s (a request hung?)")


def main():
    tmp = tempfile.mkdtemp(prefix="dynconf-test-")
    d = None
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(180)
    try:
        port = free_port()
        d = Daemon(tmp, ["--listen", "127.0.0.1:%d" % port,
                         "--advertise", "localhost:%d" % port,
                         "--node-id", str(NODE_ID),
                         "--data-dir", os.path.join(tmp, "data")])
        t.ok(True, "dynconfd started on 127.0.0.1:%d advertising localhost" % d.port)
        admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % d.port,
                                 client_id="dynconf-e2e-python",
                                 api_version_auto_timeout_ms=TIMEOUT_MS,
                                 request_timeout_ms=TIMEOUT_MS)
        t.ok(True, "KafkaAdminClient connected (found the controller)")
        versions = admin._client.get_api_versions() or {}
        t.is_(versions.get(32), (0, 4), "ApiVersions advertises DescribeConfigs 0-4")
        t.is_(versions.get(33), (0, 2), "ApiVersions advertises AlterConfigs 0-2")
        try:
            test_metadata(admin, d)
            test_configs(admin)
            test_other_types(admin)
        finally:
            admin.close()
        t.ok(d.proc.poll() is None, "dynconfd still running")
    except Exception:  # any failure is a test failure, never a skip
        t.ok(False, "unexpected exception")
        t.diag(traceback.format_exc())
    finally:
        signal.alarm(0)
        if d:
            rc = d.stop()
            t.is_(rc, 0, "SIGTERM: dynconfd exits 0")
            if t.failed:
                d.log_tail()
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
