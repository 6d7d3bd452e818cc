"""What the managed Producer and Consumer share: the agent, the callbacks
and the rebuild bookkeeping."""
from __future__ import annotations

import collections
import time
from typing import Any, Callable, Deque, Dict, Mapping, Optional, Tuple

from ._agent import Agent, ApplyReport, ChangeEvent, DynconfError, log

ChangeCallback = Callable[[ChangeEvent], None]
ErrorCallback = Callable[[DynconfError], None]
ReportCallback = Callable[[ApplyReport], None]


class _Managed:
    """An agent and one inner confluent-kafka client built from the
    application's dict with the agent's effective values over it."""

    def __init__(self, rd_type: int, conf: Mapping[str, Any],
                 on_change: Optional[ChangeCallback],
                 on_error: Optional[ErrorCallback],
                 on_report: Optional[ReportCallback]) -> None:
        if not isinstance(conf, Mapping):
            raise TypeError("conf must be a dict")
        self._app_conf: Dict[str, Any] = {
            k: v for k, v in conf.items() if not k.startswith("dynconf.")}
        self._on_change = on_change
        self._on_error = on_error
        self._on_report = on_report
        self._agent = Agent(rd_type, conf)
        self._gen = self._agent.generation()  # the inner client's
        self._rebuilds = 0
        self._rebuild_failures = 0
        # Served by the next poll: events, then their reports.
        self._queue: Deque[Tuple[str, Any]] = collections.deque()
        # Rebuilds by generation, until that generation's event is served.
        self._outcomes: Dict[int, Tuple[bool, float,
                                        Optional[DynconfError]]] = {}

    # ---- what the application can read ----------------------------------

    @property
    def agent(self) -> Agent:
        return self._agent

    def generation(self) -> int:
        """The agent's generation of the effective configuration."""
        return self._agent.generation()

    def client_generation(self) -> int:
        """The generation the current inner client was built from."""
        return self._gen

    def rebuilds(self) -> int:
        """How many times the inner client was replaced."""
        return self._rebuilds

    def effective_get(self, key: str) -> Optional[Tuple[str, str]]:
        """(value, source) of a managed key; None when the agent does not
        manage it (not in dynconf.allow.keys)."""
        return self._agent.effective_get(key)

    def effective_conf(self) -> Dict[str, Any]:
        """The dict the next inner client is built from."""
        conf = dict(self._app_conf)
        conf.update(self._agent.overrides())
        return conf

    # ---- the loop: events, the rebuild they cause, the callbacks ---------

    def _serve(self, can_rebuild: bool) -> None:
        """Serves the agent's events and rebuilds the inner client when the
        generation moved; then runs the callbacks (exceptions from them
        propagate; events not yet served wait for the next call)."""
        events = self._agent.poll()
        gen = self._agent.generation()
        if gen != self._gen and can_rebuild:
            t0 = time.monotonic()
            error: Optional[DynconfError] = None
            try:
                self._rebuild()
                self._rebuilds += 1
            except Exception as e:  # confluent-kafka refused the values
                self._rebuild_failures += 1
                error = e if isinstance(e, DynconfError) else DynconfError(
                    "INVALID_CONFIG",
                    f"the client refused the configuration of generation "
                    f"{gen} ({e}); the current client keeps running")
                log.error("%s", error.reason)
            # Not retried for this generation, as the C clients do.
            self._gen = gen
            # Reported with the change event of that generation, which
            # this poll or a later one serves.
            self._outcomes[gen] = (error is None,
                                   (time.monotonic() - t0) * 1000.0, error)
        for ev in events:
            self._queue.append(("event", ev))
            if ev.kind != "change":
                continue
            done, took, err = (False, 0.0, None)
            if ev.accepted and ev.generation in self._outcomes:
                done, took, err = self._outcomes.pop(ev.generation)
            self._queue.append(("report", ApplyReport(
                event=ev, generation=ev.generation,
                client_generation=self._gen, rebuilt=done, took_ms=took,
                error=err, entries=ev.entries)))
        for g in [g for g in self._outcomes if g < self._gen - 64]:
            del self._outcomes[g]  # an event that never came
        self._dispatch()

    def _dispatch(self) -> None:
        while self._queue:
            what, obj = self._queue.popleft()
            if what == "event":
                ev: ChangeEvent = obj
                if ev.kind == "change":
                    if self._on_change:
                        self._on_change(ev)
                elif ev.error is not None:
                    if self._on_error:
                        self._on_error(ev.error)
                    else:
                        log.warning("%s (%s)", ev.error.reason, ev.kind)
            elif what == "report":
                if self._on_report:
                    self._on_report(obj)
                if obj.error is not None and self._on_error:
                    self._on_error(obj.error)

    def _rebuild(self) -> None:
        raise NotImplementedError

    def _close_agent(self) -> None:
        # The events served last reach the callbacks.
        try:
            self._queue.extend(("event", e) for e in self._agent.poll())
            self._dispatch()
        finally:
            self._agent.close()

