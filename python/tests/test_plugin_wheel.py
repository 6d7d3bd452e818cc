"""The librdkafka plugin inside confluent-kafka from PyPI, whose wheel
loads its own librdkafka under another file name: a script that only
sets properties gets the operator's acks (acks=0 on the wire: requests
sent, no ProduceResponse), joins the fleet naming the binding, and a
change made while it runs is reported as restart needed and logged.
confluent-kafka queues librdkafka's logs for poll() when given a logger
(log.queue=true), which a plugin cannot feed: the plugin's later lines go
to stderr then, in librdkafka's format."""
from __future__ import annotations

import logging
import threading
import uuid
from typing import List

import confluent_kafka
import pytest

from conftest import Dynconfd, build_path, wait_until


class Lines(logging.Handler):
    """Keeps what librdkafka logs through the producer's logger."""

    def __init__(self) -> None:
        super().__init__()
        self._mu = threading.Lock()
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with self._mu:
            self.lines.append(record.getMessage())

    def count(self, text: str) -> int:
        with self._mu:
            return sum(text in line for line in self.lines)


def fleet_line(dynconfd: Dynconfd, client_id: str) -> str:
    out = dynconfd.cli("--describe-fleet", "--entity-type", "clients",
                       "--entity-name", client_id,
                       check=False)
    return next((line for line in out.splitlines()
                 if line.strip().startswith(client_id + " ")), "")


def test_plugin_in_the_wheel(dynconfd: Dynconfd,
                             capfd: pytest.CaptureFixture[str]) -> None:
    client_id = "py-plugin-" + uuid.uuid4().hex[:8]
    dynconfd.alter(client_id, "acks=0")
    lines = Lines()
    logger = logging.getLogger(client_id)
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    p = confluent_kafka.Producer({
        "plugin.library.paths": str(build_path(".libs/libdynconf-plugin.so")),
        "dynconf.bootstrap.servers": dynconfd.address,
        "client.id": client_id,
        "test.mock.num.brokers": 1,
        "debug": "protocol",
    }, logger=logger)
    p.produce("plugin-topic", b"hello")
    assert p.flush(30) == 0, "the message was delivered"
    assert lines.count("Sent ProduceRequest") >= 1, lines.lines[-20:]
    assert lines.count("Received ProduceResponse") == 0, \
        "acks=0 from dynconfd: the broker sends no ProduceResponse"

    wait_until(lambda: "dynconf-plugin/" in fleet_line(dynconfd, client_id),
               30, "the client in the fleet view")
    line = fleet_line(dynconfd, client_id)
    assert f"librdkafka/{confluent_kafka.libversion()[0]} " \
           f"confluent-kafka-python/{confluent_kafka.version()[0]}" in line, line
    assert " applied" in line, line

    dynconfd.alter(client_id, "acks=1")
    wait_until(lambda: "after a restart: acks=1" in
               fleet_line(dynconfd, client_id), 30,
               "restart needed in the fleet view", step=lambda: p.poll(0.05))
    err: List[str] = []

    def told() -> bool:
        err.append(capfd.readouterr().err)
        return "accepted; the client takes it when it is restarted" in \
            "".join(err)

    wait_until(told, 30, "the change logged on stderr",
               step=lambda: p.poll(0.05))
    line = next(x for x in "".join(err).splitlines() if "CHANGE" in x)
    assert f"|CHANGE|{client_id}#producer| acks: 0 -> 1 (client-override)" \
        in line, line
    p.produce("plugin-topic", b"again")
    assert p.flush(30) == 0
    assert lines.count("Received ProduceResponse") == 0, \
        "the running client keeps acks=0"
