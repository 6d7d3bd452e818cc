#!/usr/bin/env python3
"""An example consumer on dynconf.Consumer, the Python twin of
examples/consumer.c: consumes the example producer's numbered messages,
counts what arrived (unique, duplicates, per-partition order, missing
against the producer's --report file given with --expect) and rebuilds
its inner confluent-kafka consumer when an operator changes its session
timeout.

  consumer.py --bootstrap HOST:PORT --config-bootstrap HOST:PORT \\
              --topic orders --group orders --client-id orders-c \\
              --instance-id orders-c-1 --expect producer.report
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Set, Tuple

import excommon
from excommon import Changes, now_ms

import dynconf


class Tracker:
    """What arrived, per (producer id, partition)."""

    def __init__(self) -> None:
        self.seen: Dict[Tuple[str, int], Set[int]] = {}
        self.max_first: Dict[Tuple[str, int], int] = {}
        self.unique = self.dups = self.order_violations = 0
        self.consumed = self.corrupt = 0

    def record(self, value: bytes, partition: int) -> None:
        self.consumed += 1
        try:
            pid, part_s, seq_s = value.decode().split()
            part, seq = int(part_s), int(seq_s)
        except ValueError:
            self.corrupt += 1
            return
        if part != partition:
            self.corrupt += 1
            return
        k = (pid, part)
        s = self.seen.setdefault(k, set())
        if seq in s:
            self.dups += 1
            return
        s.add(seq)
        self.unique += 1
        # A first delivery below an earlier first delivery broke the order.
        if seq < self.max_first.get(k, -1):
            self.order_violations += 1
        else:
            self.max_first[k] = seq

    def missing(self, expect: Dict[str, Any]) -> int:
        if expect:
            return sum(
                sum(1 for s in range(n)
                    if s not in self.seen.get((expect["id"], p), set()))
                for p, n in expect["parts"].items())
        return sum(max(s) + 1 - len(s) for s in self.seen.values() if s)

    def caught_up(self, expect: Dict[str, Any]) -> bool:
        return all(len(self.seen.get((expect["id"], p), ())) >= n
                   for p, n in expect["parts"].items())


def load_expect(path: str) -> Dict[str, Any]:
    if not os.path.exists(path):
        return {}
    out: Dict[str, Any] = {"id": "", "parts": {}}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k == "producer_id":
                out["id"] = v
            elif k.startswith("produced."):
                out["parts"][int(k.split(".")[1])] = int(v)
    return out if out["id"] else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    excommon.common_args(ap, "example-consumer")
    ap.add_argument("--group", default="example-group")
    ap.add_argument("--instance-id",
                    help="group.instance.id (static membership: a rebuild "
                         "rejoins without a rebalance)")
    ap.add_argument("--expect", help="the producer's --report file")
    ap.add_argument("--catchup-timeout", type=float, default=60)
    a = ap.parse_args()
    conf = excommon.base_conf(a)
    conf.update({"group.id": a.group, "auto.offset.reset": "earliest"})
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    app = {k: v for k, v in conf.items() if not k.startswith("dynconf.")}
    ch = Changes("consumer", a.client_id, app, "rebuilt consumer",
                 ", rejoining", "no rebuild needed")
    try:
        c = dynconf.Consumer(conf, on_report=ch.on_report,
                             on_error=ch.on_error)
    except (dynconf.DynconfError, ValueError) as e:
        print(f"dynconf.Consumer: {e}", file=sys.stderr)
        return 1
    ch.initial_gen = c.generation()
    excommon.catch_signals()
    assignments = [0]

    def on_assign(consumer: Any, parts: List[Any]) -> None:
        if not assignments[0] or a.verbose:
            print(f"[consumer {a.client_id}] joined group {a.group}: "
                  f"assigned {a.topic} "
                  f"[{','.join(str(tp.partition) for tp in parts)}]",
                  flush=True)
        assignments[0] += 1

    c.subscribe([a.topic], on_assign=on_assign)

    def describe(key: str) -> str:
        v = c.effective_get(key)
        val, src = v if v else (ch.app_value(key), "application")
        return f"{key}={val} ({excommon.SOURCES.get(src, src)})"

    member = f" as static member {a.instance_id}" if a.instance_id else ""
    print(f"[consumer {a.client_id}] consuming {a.topic} in group "
          f"{a.group}{member}, {describe('session.timeout.ms')}, "
          f"{describe('heartbeat.interval.ms')}", flush=True)

    tr = Tracker()
    expect: Dict[str, Any] = {}
    expect_seen = last_check = last_msg = rebuilt_at = 0.0
    pause_ms_max = 0.0
    started = now_ms()
    while not excommon.stop_requested:
        now = now_ms()
        if a.duration and now - started >= a.duration * 1000:
            break
        if a.expect and not expect and now - last_check >= 250:
            last_check = now
            expect = load_expect(a.expect)
            if expect:
                expect_seen = now
                print(f"[consumer {a.client_id}] the producer has finished; "
                      "catching up", flush=True)
        if expect:
            if tr.caught_up(expect):
                break
            if now - expect_seen >= a.catchup_timeout * 1000:
                print(f"[consumer {a.client_id}] gave up catching up after "
                      f"{a.catchup_timeout:.0f} s", flush=True)
                break
        r0 = c.rebuilds()
        m = c.poll(0.1)
        if c.rebuilds() != r0:
            rebuilt_at = now_ms()
        if m is None or m.error():
            continue
        t = now_ms()
        if rebuilt_at:
            print(f"[consumer {a.client_id}] rejoined: consuming again "
                  f"{(t - rebuilt_at) / 1000:.1f} s after the rebuild",
                  flush=True)
            rebuilt_at = 0.0
            if last_msg:
                pause_ms_max = max(pause_ms_max, t - last_msg)
                print(f"[consumer {a.client_id}] consumption paused "
                      f"{t - last_msg:.1f} ms (from the last message before "
                      "the rebuild to the first after it)", flush=True)
        last_msg = t
        tr.record(m.value(), m.partition())
        if a.count and tr.unique >= a.count:
            break
    if a.expect and not expect:
        expect = load_expect(a.expect)
    rebuilds = c.rebuilds()
    gen = c.client_generation()
    c.close()
    missing = tr.missing(expect)
    secs = (now_ms() - started) / 1000.0
    print(f"[consumer {a.client_id}] done: consumed {tr.consumed} "
          f"({tr.unique} unique, {tr.dups} duplicates), {missing} missing, "
          f"{tr.order_violations} order violations; {ch.seen} change(s) "
          f"seen, {ch.applied} applied, {ch.rejected} rejected; {rebuilds} "
          f"rebuild(s)", flush=True)
    report = (f"role=consumer\nclient_id={a.client_id}\ngroup={a.group}\n"
              f"instance_id={a.instance_id or ''}\ntopic={a.topic}\n"
              f"consumed={tr.consumed}\nunique={tr.unique}\n"
              f"duplicates={tr.dups}\n"
              f"order_violations={tr.order_violations}\n"
              f"missing={missing}\nmissing_basis="
              f"{'producer-report' if expect else 'highest-seen'}\n"
              f"corrupt={tr.corrupt}\n")
    report += ch.report_lines(gen)
    report += (f"rebuilds={rebuilds}\n"
               f"rebuild_ms_max={ch.rebuild_ms_max:.1f}\n"
               f"pause_ms_max={pause_ms_max:.1f}\nduration_s={secs:.1f}\n")
    excommon.write_report(a.report, report)
    return 0 if not missing and not tr.order_violations and \
        not tr.corrupt else 1


if __name__ == "__main__":
    sys.exit(main())
