"""dynconf.Consumer on a real Kafka cluster: 5 session.timeout.ms changes
while a producer writes numbered messages and the consumer commits after
processing each batch."""
from __future__ import annotations

import threading
import time
from typing import Dict, List, Set, Tuple

import confluent_kafka
from confluent_kafka.admin import AdminClient

import dynconf
from conftest import Dynconfd, Kafka, unique_id, wait_until

PARTITIONS = 3
SESSIONS = [7000, 8000, 9000, 10000, 11000]
AFTER_REBUILD = 200  # messages consumed on each new consumer before the next


def test_session_changes_under_load(dynconfd: Dynconfd, kafka: Kafka) -> None:
    topic = kafka.create_topic(PARTITIONS)
    cid = unique_id("sessions")
    group = unique_id("group")
    instance = unique_id("instance")
    reports: List[dynconf.ApplyReport] = []

    # The load: a plain producer, numbered messages per partition.
    prod = confluent_kafka.Producer({"bootstrap.servers": kafka.bootstrap,
                                     "linger.ms": 5})
    next_seq = [0] * PARTITIONS
    stop = threading.Event()

    def produce_loop() -> None:
        n = 0
        while not stop.is_set():
            part = n % PARTITIONS
            prod.produce(topic, f"{part} {next_seq[part]}".encode(),
                         partition=part)
            next_seq[part] += 1
            n += 1
            if n % 10 == 0:
                prod.poll(0)
                time.sleep(0.01)  # about 1000 messages/s

    c = dynconf.Consumer({
        "bootstrap.servers": kafka.bootstrap, "client.id": cid,
        "group.id": group, "group.instance.id": instance,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
        "dynconf.bootstrap.servers": dynconfd.address,
    }, on_report=reports.append)
    c.subscribe([topic])
    seen: List[Tuple[int, int]] = []
    last: Dict[int, int] = {}
    reordered = [0]

    def consume_batch() -> None:
        msgs = c.consume(100, 0.1)
        for m in msgs:
            if m.error():
                continue
            part, seq = (int(x) for x in m.value().split())
            if seq <= last.get(part, -1):
                reordered[0] += 1
            last[part] = seq
            seen.append((part, seq))
        if msgs:
            # The application commits once it has processed the batch.
            c.commit(asynchronous=False)

    t = threading.Thread(target=produce_loop)
    t.start()
    started = time.monotonic()
    try:
        wait_until(lambda: len(seen) >= AFTER_REBUILD, 60,
                   "the consumer's first messages", step=consume_batch)
        for i, ms in enumerate(SESSIONS):
            dynconfd.alter(cid, f"session.timeout.ms={ms}")
            wait_until(lambda: c.rebuilds() == i + 1, 20,
                       f"rebuild {i + 1} (session.timeout.ms={ms})",
                       step=consume_batch)
            assert c.inner_conf()["session.timeout.ms"] == str(ms)
            assert c.inner_conf()["group.instance.id"] == instance
            mark = len(seen)
            wait_until(lambda: len(seen) >= mark + AFTER_REBUILD, 30,
                       f"messages after rebuild {i + 1}", step=consume_batch)
    finally:
        stop.set()
        t.join()
    assert prod.flush(30) == 0
    total = sum(next_seq)
    wait_until(lambda: len(set(seen)) >= total, 60,
               "the consumer to catch up", step=consume_batch)
    took = time.monotonic() - started

    # The group on the broker: one member, ours, with the same instance id.
    # (describe_consumer_groups came with confluent-kafka 2.0.)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    members = [instance]
    if hasattr(admin, "describe_consumer_groups"):
        desc = admin.describe_consumer_groups([group])[group].result(
            timeout=10)
        members = [m.group_instance_id for m in desc.members]
    else:
        print("\nconfluent-kafka", confluent_kafka.version()[0],
              "cannot describe the group: its members are not checked")
    c.close()

    expected: Set[Tuple[int, int]] = {
        (p, s) for p in range(PARTITIONS) for s in range(next_seq[p])}
    lost = len(expected - set(seen))
    dup = len(seen) - len(set(seen))
    rebuilt = [r for r in reports if r.rebuilt]
    print(f"\nconsumer: {len(seen)} messages consumed of {total}, "
          f"{len(SESSIONS)} session.timeout.ms changes, {c.rebuilds()} "
          f"rebuilds, longest {max(r.took_ms for r in rebuilt):.0f} ms; "
          f"lost {lost}, duplicated {dup}, reordered {reordered[0]}; "
          f"{took:.1f} s")
    assert (lost, dup, reordered[0]) == (0, 0, 0)
    assert c.rebuilds() == len(SESSIONS) == len(rebuilt)
    assert [r.entries[0].new_value for r in rebuilt] == \
        [str(ms) for ms in SESSIONS]
    assert members == [instance]


