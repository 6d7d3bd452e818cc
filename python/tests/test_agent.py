"""The agent through the Python clients, against dynconfd alone (the Kafka
bootstrap points nowhere: building a confluent-kafka client needs no
broker)."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

import dynconf
from conftest import Dynconfd, unique_id, wait_until

NOWHERE = "127.0.0.1:9"  # the discard port: nothing listens there


def base_conf(srv: Dynconfd, client_id: str, **extra: Any) -> Dict[str, Any]:
    conf: Dict[str, Any] = {
        "bootstrap.servers": NOWHERE,
        "client.id": client_id,
        "dynconf.bootstrap.servers": srv.address,
        "dynconf.refresh.interval.ms": 200,
    }
    conf.update(extra)
    return conf


def test_library_loads() -> None:
    assert dynconf.libdynconf_version()
    assert dynconf.__version__ == "0.1.0"


def test_properties_and_effective_values(dynconfd: Dynconfd) -> None:
    cid = unique_id("props")
    dynconfd.alter(cid, "acks=0")
    p = dynconf.Producer(base_conf(dynconfd, cid, acks="1",
                                   **{"linger.ms": 5}))
    try:
        assert p.effective_get("acks") == ("0", "client-override")
        # Not in dynconf.allow.keys: not managed.
        assert p.effective_get("linger.ms") is None
        conf = p.inner_conf()
        assert conf["acks"] == "0" and conf["linger.ms"] == 5
        assert not any(k.startswith("dynconf.") for k in conf)
        assert p.agent.state() == "up"
        assert p.agent.client_id() == cid
    finally:
        p.close(5)


@pytest.mark.parametrize("key,value,words", [
    ("dynconf.no.such.property", "1", "No such configuration property"),
    ("dynconf.refresh.interval.ms", "soon", "dynconf.refresh.interval.ms"),
], ids=["unknown-name", "bad-value"])
def test_bad_agent_property_raises_with_reason(dynconfd: Dynconfd, key: str,
                                               value: str, words: str) -> None:
    with pytest.raises(dynconf.ConfigError) as ei:
        dynconf.Producer(base_conf(dynconfd, unique_id("bad"),
                                   **{key: value}))
    assert ei.value.code == "INVALID_CONFIG"
    assert words in ei.value.reason
    assert isinstance(ei.value, ValueError)


def test_fail_open_without_server(tmp_work: Any) -> None:
    errors: List[dynconf.DynconfError] = []
    conf = {"bootstrap.servers": NOWHERE, "client.id": unique_id("open"),
            "dynconf.bootstrap.servers": "127.0.0.1:9",
            "dynconf.startup.timeout.ms": 500, "acks": "1"}
    p = dynconf.Producer(conf, on_error=errors.append)
    try:
        assert p.agent.state() == "degraded"
        assert p.inner_conf()["acks"] == "1"  # the app's own
        wait_until(lambda: bool(errors), 10, "the error callback",
                   step=lambda: p.poll(0.05))
        assert errors[0].code == "TRANSPORT"
        assert "cannot connect" in errors[0].reason
    finally:
        p.close(1)


def test_startup_required_raises() -> None:
    conf = {"bootstrap.servers": NOWHERE, "client.id": unique_id("req"),
            "dynconf.bootstrap.servers": "127.0.0.1:9",
            "dynconf.startup.required": True,
            "dynconf.startup.timeout.ms": 500}
    with pytest.raises(dynconf.DynconfError) as ei:
        dynconf.Consumer(dict(conf, **{"group.id": "g"}))
    assert "dynconf.startup.required=true" in ei.value.reason
    assert "cannot connect" in ei.value.reason


def test_change_callback_and_swap(dynconfd: Dynconfd) -> None:
    cid = unique_id("change")
    changes: List[dynconf.ChangeEvent] = []
    reports: List[dynconf.ApplyReport] = []
    p = dynconf.Producer(base_conf(dynconfd, cid, acks="1"),
                         on_change=changes.append, on_report=reports.append)
    try:
        first = p.inner
        gen0 = p.generation()
        dynconfd.alter(cid, "acks=0")
        wait_until(lambda: any(r.rebuilt for r in reports), 10,
                   "the report of the swap", step=lambda: p.poll(0.05))
        ev = [c for c in changes if c.generation > gen0][-1]
        assert ev.accepted and ev.kind == "change"
        e = [x for x in ev.entries if x.key == "acks"][0]
        assert (e.old_value, e.new_value, e.outcome, e.source) == \
            (None, "0", "applied", "client-override")
        r = [r for r in reports if r.rebuilt][0]
        assert r.generation == p.generation() == p.client_generation()
        assert r.as_dict()["entries"][0]["key"] == "acks"
        assert p.inner is not first and p.rebuilds() == 1
        assert p.inner_conf()["acks"] == "0"
        # Back to the application's own value: a swap again.
        dynconfd.delete(cid, "acks")
        wait_until(lambda: p.rebuilds() == 2, 10, "the second swap",
                   step=lambda: p.poll(0.05))
        assert p.inner_conf()["acks"] == "1"
        assert p.effective_get("acks") == ("1", "application")
    finally:
        p.close(5)


def test_pinned_and_rejected_changes_do_not_rebuild(dynconfd: Dynconfd) -> None:
    cid = unique_id("pinned")
    reports: List[dynconf.ApplyReport] = []
    p = dynconf.Producer(base_conf(dynconfd, cid,
                                   **{"enable.idempotence": True}),
                         on_report=reports.append)
    try:
        dynconfd.alter(cid, "acks=1")  # idempotence pins acks=all
        wait_until(lambda: bool(reports), 10, "the pinned change",
                   step=lambda: p.poll(0.05))
        e = reports[-1].entries[0]
        assert e.key == "acks" and e.outcome == "pinned" and e.reason
        assert not reports[-1].rebuilt and p.rebuilds() == 0
    finally:
        p.close(5)

    cid = unique_id("rejected")
    reports = []
    c = dynconf.Consumer(base_conf(dynconfd, cid, **{"group.id": "g"}),
                         on_report=reports.append)
    try:
        # librdkafka needs session.timeout.ms <= max.poll.interval.ms.
        dynconfd.alter(cid, "session.timeout.ms=400000")
        wait_until(lambda: bool(reports), 10, "the rejected change",
                   step=lambda: c.poll(0.05))
        r = reports[-1]
        assert not r.accepted and not r.rebuilt and c.rebuilds() == 0
        e = r.entries[0]
        assert e.outcome == "rejected" and "max.poll.interval.ms" in e.reason
    finally:
        c.close()


def test_error_callback_when_dynconfd_dies(private_dynconfd: Dynconfd) -> None:
    errors: List[dynconf.DynconfError] = []
    conf = base_conf(private_dynconfd, unique_id("dies"),
                     **{"dynconf.retry.backoff.ms": 100})
    p = dynconf.Producer(conf, on_error=errors.append)
    try:
        assert p.agent.state() == "up"
        private_dynconfd.stop()
        wait_until(lambda: bool(errors), 15, "the error callback",
                   step=lambda: p.poll(0.05))
        assert errors[0].reason
        assert p.agent.state() == "degraded"
    finally:
        p.close(1)


def test_callback_exception_propagates_from_poll(dynconfd: Dynconfd) -> None:
    cid = unique_id("raise")

    def boom(ev: dynconf.ChangeEvent) -> None:
        raise RuntimeError("from the callback")

    p = dynconf.Producer(base_conf(dynconfd, cid), on_change=boom)
    try:
        dynconfd.alter(cid, "acks=0")
        with pytest.raises(RuntimeError, match="from the callback"):
            wait_until(lambda: False, 10, "the callback's exception",
                       step=lambda: p.poll(0.05))
        assert p.inner_conf()["acks"] == "0"  # the swap happened first
    finally:
        p._on_change = None
        p.close(5)


def test_fleet_names_the_package_and_the_librdkafka_it_runs_on(
        dynconfd: Dynconfd) -> None:
    import confluent_kafka

    cid = unique_id("fleet")
    dynconfd.alter(cid, "acks=0")
    p = dynconf.Producer(base_conf(dynconfd, cid))
    try:
        def line() -> str:
            out = dynconfd.cli("--describe-fleet", "--entity-type",
                               "clients", "--entity-name", cid, check=False)
            return next((x for x in out.splitlines()
                         if x.strip().startswith(cid + " ")), "")

        wait_until(lambda: "dynconf-python/" in line(), 30,
                   "the client in the fleet view", step=lambda: p.poll(0.05))
        lib = confluent_kafka.libversion()[0]
        want = (f"librdkafka/{lib} confluent-kafka-python/"
                f"{confluent_kafka.version()[0]}-rdkafka-{lib}")
        assert want in line(), line()
    finally:
        p.close()
