#!/usr/bin/env python3
"""An example producer on dynconf.Producer, the Python twin of
examples/producer.c: a thread sends numbered messages at a steady rate to
explicit partitions (payload "PRODUCER-ID PARTITION SEQUENCE"); the main
thread polls, which serves delivery reports and the agent's changes, and
swaps the inner confluent-kafka producer when an operator changes acks.

  producer.py --bootstrap HOST:PORT --config-bootstrap HOST:PORT \\
              --topic orders --client-id orders-p --rate 200
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any, Dict, List

import excommon
from excommon import Changes, now_ms

import dynconf


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    excommon.common_args(ap, "example-producer")
    ap.add_argument("--rate", type=float, default=100,
                    help="messages per second (0 = as fast as possible)")
    ap.add_argument("--partitions", type=int, default=0,
                    help="spread over partitions 0..P-1 (default: all)")
    a = ap.parse_args()
    producer_id = f"{a.client_id}.{os.getpid()}"
    conf = excommon.base_conf(a)
    app = {k: v for k, v in conf.items() if not k.startswith("dynconf.")}
    ch = Changes("producer", a.client_id, app, "switched handle", "",
                 "no switch needed")

    delivered = failed = 0
    order_violations = 0
    last_dr: Dict[int, int] = {}

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered, failed, order_violations
        _, part, seq = msg.value().decode().split()
        if err is not None:
            failed += 1
            if failed <= 10:
                print(f"[producer {a.client_id}] delivery failed (partition "
                      f"{part} seq {seq}): {err}", file=sys.stderr)
            return
        delivered += 1
        if int(seq) <= last_dr.get(int(part), -1):
            order_violations += 1
        last_dr[int(part)] = int(seq)

    conf["on_delivery"] = on_delivery
    try:
        p = dynconf.Producer(conf, on_report=ch.on_report,
                             on_error=ch.on_error)
    except (dynconf.DynconfError, ValueError) as e:
        print(f"dynconf.Producer: {e}", file=sys.stderr)
        return 1
    ch.initial_gen = p.generation()
    excommon.catch_signals()

    partitions = a.partitions
    if not partitions:
        md = p.list_topics(a.topic, timeout=10)
        t = md.topics.get(a.topic)
        partitions = len(t.partitions) if t and not t.error else 0
    if partitions < 1:
        print(f"[producer {a.client_id}] cannot learn the partitions of "
              f"{a.topic}", file=sys.stderr)
        p.close(5)
        return 1
    acks = p.effective_get("acks")
    eff, src = acks if acks else (ch.app_value("acks"), "application")
    rate = f"{a.rate:.0f}" if a.rate > 0 else "max"
    print(f"[producer {a.client_id}] producing to {a.topic} ({partitions} "
          f"partitions) at {rate} msg/s, acks={eff} "
          f"({excommon.SOURCES.get(src, src)}), ordered switch policy",
          flush=True)

    next_seq: List[int] = [0] * partitions
    produced = [0]
    done = threading.Event()
    stop = threading.Event()

    def produce_loop() -> None:
        t0 = time.monotonic()
        sent = 0
        while not stop.is_set():
            elapsed = time.monotonic() - t0
            if a.duration and elapsed >= a.duration:
                break
            if a.count and sent >= a.count:
                break
            if a.rate > 0 and sent >= elapsed * a.rate + 1:
                time.sleep(min(0.01, max(0.0002, (sent / a.rate) - elapsed)))
                continue
            part = sent % partitions
            payload = f"{producer_id} {part} {next_seq[part]}".encode()
            try:
                p.produce(a.topic, payload, partition=part)
            except BufferError:  # queue full, or a swap took too long
                time.sleep(0.005)
                continue
            next_seq[part] += 1
            produced[0] += 1
            sent += 1
        done.set()

    started = now_ms()
    thr = threading.Thread(target=produce_loop)
    thr.start()
    while not excommon.stop_requested and not done.is_set():
        p.poll(0.02)
    stop.set()
    thr.join()
    # Every message gets its delivery report before the summary.
    deadline = time.monotonic() + 60
    while delivered + failed < produced[0] and time.monotonic() < deadline:
        p.flush(0.2)
    left = p.close(30)
    secs = (now_ms() - started) / 1000.0
    print(f"[producer {a.client_id}] done: produced {produced[0]}, delivered "
          f"{delivered}, failed {failed}; {ch.seen} change(s) seen, "
          f"{ch.applied} applied, {ch.rejected} rejected; {p.rebuilds()} "
          f"handle switch(es), longest {ch.rebuild_ms_max:.1f} ms",
          flush=True)
    report = (f"role=producer\nclient_id={a.client_id}\n"
              f"producer_id={producer_id}\ntopic={a.topic}\n"
              f"partitions={partitions}\npolicy=ordered\n"
              f"produced={produced[0]}\ndelivered={delivered}\n"
              f"failed={failed}\ndr_order_violations={order_violations}\n")
    report += "".join(f"produced.{i}={n}\n" for i, n in enumerate(next_seq))
    report += ch.report_lines(ch.initial_gen if p.rebuilds() == 0
                              else p.client_generation())
    report += (f"switches={p.rebuilds()}\n"
               f"switch_ms_max={ch.rebuild_ms_max:.1f}\n"
               f"duration_s={secs:.1f}\nrate_target={a.rate:.0f}\n")
    excommon.write_report(a.report, report)
    return 0 if not failed and not left and delivered == produced[0] else 1


if __name__ == "__main__":
    sys.exit(main())
