"""What the example producer and consumer share: their common flags, one
readable line per change, and the key=value report file (the same lines
as the C examples, so demo.sh reads either)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any, Dict, List, Optional

import dynconf

SOURCES = {
    "client-override": "client override",
    "default-entity": "<default> entity",
    "user-override": "user override",
    "user-client-override": "user + client override",
    "file": "certificate file",
    "application": "the app's own",
}
# librdkafka's defaults, for "the app's own" when the app set nothing.
DEFAULTS = {"acks": "-1", "session.timeout.ms": "45000",
            "heartbeat.interval.ms": "3000"}

stop_requested = False


def catch_signals() -> None:
    def on_signal(signum: int, frame: Any) -> None:
        global stop_requested
        stop_requested = True
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def now_ms() -> float:
    return time.monotonic() * 1000.0


def common_args(p: argparse.ArgumentParser, client_id: str) -> None:
    p.add_argument("--bootstrap", required=True,
                   help="Kafka brokers (data plane)")
    p.add_argument("--config-bootstrap",
                   help="dynconfd (dynconf.bootstrap.servers); default: "
                        "the Kafka brokers")
    p.add_argument("--topic", default="orders")
    p.add_argument("--client-id", default=client_id,
                   help="client.id = the dynconf entity")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--duration", type=float, default=0)
    p.add_argument("--refresh-ms", type=int, default=1000)
    p.add_argument("--report", help="write the summary as key=value lines")
    p.add_argument("-X", action="append", default=[], metavar="KEY=VALUE",
                   help="the app's own confluent-kafka property")
    p.add_argument("--verbose", action="store_true")


def base_conf(a: argparse.Namespace) -> Dict[str, Any]:
    conf: Dict[str, Any] = {"bootstrap.servers": a.bootstrap,
                            "client.id": a.client_id,
                            "dynconf.refresh.interval.ms": a.refresh_ms}
    if a.config_bootstrap:
        conf["dynconf.bootstrap.servers"] = a.config_bootstrap
    for kv in a.X:
        k, sep, v = kv.partition("=")
        if not sep:
            sys.exit(f"-X wants key=value, not {kv!r}")
        conf[k] = v
    return conf


class Changes:
    """Counts change events and prints one line per change with what the
    client did (the report callback)."""

    def __init__(self, who: str, client_id: str, app: Dict[str, Any],
                 rebuilt_what: str, rebuilt_after: str, none: str) -> None:
        self.who, self.client_id, self.app = who, client_id, app
        self.rebuilt_what, self.rebuilt_after = rebuilt_what, rebuilt_after
        self.none = none
        self.seen = self.applied = self.rejected = self.other = 0
        self.initial_gen = 0
        self.any_event = False
        self.rebuild_ms_max = 0.0
        self.last_rebuild_ms = 0.0

    def prefix(self) -> str:
        return f"[{self.who} {self.client_id}]"

    def app_value(self, key: str) -> str:
        v = self.app.get(key)
        return str(v) if v is not None else DEFAULTS.get(key, "app default")

    def on_error(self, e: dynconf.DynconfError) -> None:
        print(f"{self.prefix()} config fetch failed: {e.reason} "
              "(keeping the last good configuration)", flush=True)

    def on_report(self, r: dynconf.ApplyReport) -> None:
        first = not self.any_event
        self.any_event = True
        ev = r.event
        if first and ev.accepted and ev.generation <= self.initial_gen:
            return  # the constructor's first fetch, not a change
        self.seen += 1
        line = self.prefix()
        applied = False
        if not ev.accepted:
            self.rejected += 1
            line += " rejected " + ", ".join(
                f"{e.key}={e.new_value or '(unset)'}" for e in ev.entries)
            why = next((e.reason for e in ev.entries if e.reason and
                        not e.reason.startswith("change set rejected")),
                       None) or (ev.entries[0].reason if ev.entries
                                 else None)
            line += f": {why or 'refused'}"
        else:
            parts: List[str] = []
            for outcome in ("applied", "pinned", "ignored"):
                for e in ev.entries:
                    if e.outcome != outcome:
                        continue
                    if outcome == "applied":
                        applied = True
                        old = e.old_value or self.app_value(e.key)
                        new = e.new_value or self.app_value(e.key)
                        src = SOURCES.get(e.source, e.source)
                        parts.append(
                            f"applied {e.key}: {old} -> {new} ({src})"
                            if old != new else
                            f"applied {e.key}: stays {new} (now from {src})")
                    elif outcome == "pinned":
                        parts.append(f"pinned {e.key}: {e.reason or ''}")
                    else:
                        parts.append(f"ignored {e.key}="
                                     f"{e.new_value or '(unset)'} "
                                     f"({e.reason or 'not applied'})")
            line += " " + "; ".join(parts) if parts else \
                " configuration unchanged"
            if applied:
                self.applied += 1
            else:
                self.other += 1
        if r.rebuilt:
            self.last_rebuild_ms = now_ms()
            self.rebuild_ms_max = max(self.rebuild_ms_max, r.took_ms)
            line += (f"; {self.rebuilt_what} in {r.took_ms:.1f} ms"
                     f"{self.rebuilt_after}")
        elif r.error is not None:
            line += f"; {r.error.reason}"
        elif applied:
            line += f"; {self.none}"
        print(line, flush=True)

    def report_lines(self, generation: int) -> str:
        return (f"changes_seen={self.seen}\nchanges_applied={self.applied}\n"
                f"changes_rejected={self.rejected}\n"
                f"changes_other={self.other}\ngeneration={generation}\n")


def write_report(path: Optional[str], text: str) -> None:
    """Written atomically: the other example polls for it."""
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)
