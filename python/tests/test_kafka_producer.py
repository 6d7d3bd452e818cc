"""dynconf.Producer on a real Kafka cluster: 10 acks flips while a thread
produces numbered messages; everything is read back."""
from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import dynconf
from conftest import Dynconfd, Kafka, read_back, unique_id, wait_until

PARTITIONS = 3
# From the application's acks=1: each value differs from the one before.
FLIPS = ["0", "all", "1", "0", "all", "1", "0", "all", "1", "0"]
AFTER_SWAP = 150  # messages delivered on each new producer before the next


def test_acks_flips_under_load(dynconfd: Dynconfd, kafka: Kafka) -> None:
    topic = kafka.create_topic(PARTITIONS)
    cid = unique_id("flips")
    reports: List[dynconf.ApplyReport] = []
    errors: List[dynconf.DynconfError] = []
    p = dynconf.Producer({
        "bootstrap.servers": kafka.bootstrap, "client.id": cid,
        "acks": "1", "linger.ms": 5,
        "dynconf.bootstrap.servers": dynconfd.address,
    }, on_report=reports.append, on_error=errors.append)

    # Messages carry "partition seq phase"; a phase names the acks in
    # force when it was produced (None while a swap is pending).
    tag_lock = threading.Lock()
    phase: List[Optional[str]] = ["1"]
    delivered: Dict[Tuple[int, int], Tuple[Optional[str], int]] = {}
    failed: List[str] = []
    stop = threading.Event()
    produced = [0]
    next_seq = [0] * PARTITIONS

    def on_delivery(err: Any, msg: Any) -> None:
        part, seq, ph = msg.value().decode().split()
        if err is not None:
            failed.append(str(err))
            return
        off = msg.offset()  # None: librdkafka knows no offset
        delivered[(int(part), int(seq))] = (None if ph == "-" else ph,
                                            -1 if off is None else off)

    def produce_loop() -> None:
        n = 0
        while not stop.is_set():
            part = n % PARTITIONS
            with tag_lock:
                ph = phase[0] or "-"
                payload = f"{part} {next_seq[part]} {ph}".encode()
                try:
                    p.produce(topic, payload, partition=part,
                              on_delivery=on_delivery)
                except BufferError:
                    time.sleep(0.001)
                    continue
                next_seq[part] += 1
                produced[0] += 1
            n += 1
            if n % 20 == 0:
                time.sleep(0.005)  # about 2000 messages/s

    t = threading.Thread(target=produce_loop)
    t.start()
    started = time.monotonic()
    try:
        wait_until(lambda: len(delivered) >= AFTER_SWAP, 30,
                   "the first deliveries", step=lambda: p.poll(0.02))
        for i, acks in enumerate(FLIPS):
            with tag_lock:
                phase[0] = None
            dynconfd.alter(cid, f"acks={acks}")
            wait_until(lambda: p.rebuilds() == i + 1, 20,
                       f"swap {i + 1} (acks={acks})",
                       step=lambda: p.poll(0.02))
            assert p.inner_conf()["acks"] == acks
            assert p.effective_get("acks") == (acks, "client-override")
            with tag_lock:
                phase[0] = acks
                mark = produced[0]
            wait_until(lambda: len(delivered) >= mark + AFTER_SWAP, 30,
                       f"deliveries after swap {i + 1}",
                       step=lambda: p.poll(0.02))
    finally:
        stop.set()
        t.join()
    left = p.close(30)
    took = time.monotonic() - started
    assert left == 0 and not failed, (left, failed[:5])
    assert len(delivered) == produced[0]

    # One swap per flip, each reported with its change.
    swaps = [r for r in reports if r.rebuilt]
    assert p.rebuilds() == len(FLIPS) == len(swaps)
    assert [r.entries[0].new_value for r in swaps] == FLIPS
    assert all(r.error is None for r in reports)
    # The acks on the wire: under acks=0 no broker answers, so librdkafka
    # reports no offset; under 1 and all every message has its offset.
    by_phase: Dict[str, List[int]] = {}
    for ph, off in delivered.values():
        if ph is not None:
            by_phase.setdefault(ph, []).append(off)
    assert by_phase["0"] and all(o < 0 for o in by_phase["0"])
    for ph in ("1", "all"):
        assert by_phase[ph] and all(o >= 0 for o in by_phase[ph]), ph

    # Read back: every message once, in order, per partition.
    back = read_back(kafka.bootstrap, topic, PARTITIONS)
    lost = dup = reordered = 0
    for part, msgs in enumerate(back):
        seqs = [int(m.split()[1]) for m in msgs]
        seen = set(seqs)
        lost += sum(1 for s in range(next_seq[part]) if s not in seen)
        dup += len(seqs) - len(seen)
        reordered += sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)
    print(f"\nproducer: {produced[0]} messages, {len(FLIPS)} acks flips, "
          f"{p.rebuilds()} swaps, longest {max(r.took_ms for r in swaps):.0f}"
          f" ms; lost {lost}, duplicated {dup}, reordered {reordered}; "
          f"{took:.1f} s")
    assert (lost, dup, reordered) == (0, 0, 0)
