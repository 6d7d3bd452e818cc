"""dynconf.Consumer: confluent_kafka.Consumer whose configuration follows
dynconfd live, as libdynconf's managed consumer does."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

import confluent_kafka

from . import _ffi
from ._agent import log
from ._client import ChangeCallback, ErrorCallback, ReportCallback, _Managed


class Consumer(_Managed):
    """A confluent_kafka.Consumer (same methods, passed through) whose inner
    client is rebuilt when an operator changes its configuration
    (session.timeout.ms, heartbeat.interval.ms... are fixed at creation in
    librdkafka).

    Messages returned by earlier poll()/consume() calls count as
    processed: when the agent's generation moves, the next poll() or
    consume() commits their offsets synchronously, closes the inner
    consumer (its on_revoke runs), builds a new one with the new values and
    the same group.id and group.instance.id, and subscribes it again. The
    new consumer is built before the old one closes: when confluent-kafka
    refuses it, the current one keeps running. on_change, on_error and
    on_report run only from poll(), consume() and close(), on the caller's
    thread.
    """

    def __init__(self, conf: Mapping[str, Any], *,
                 on_change: Optional[ChangeCallback] = None,
                 on_error: Optional[ErrorCallback] = None,
                 on_report: Optional[ReportCallback] = None,
                 **kwargs: Any) -> None:
        super().__init__(_ffi.RD_KAFKA_CONSUMER, conf, on_change, on_error,
                         on_report)
        self._kwargs = kwargs
        self._subscription: Optional[List[str]] = None
        self._sub_kwargs: Dict[str, Any] = {}
        self._closed = False
        self._last_commit_error: Optional[Exception] = None
        try:
            self._conf_used = self.effective_conf()
            self._inner = confluent_kafka.Consumer(self._conf_used, **kwargs)
        except BaseException:
            self._agent.close()
            raise

    # ---- the live rebuild -----------------------------------------------

    def _commit_processed(self, why: str) -> None:
        """Commits the offsets of the messages returned so far."""
        try:
            self._inner.commit(asynchronous=False)
            self._last_commit_error = None
        except confluent_kafka.KafkaException as e:
            err = e.args[0] if e.args else None
            if err is not None and getattr(err, "code", lambda: None)() == \
                    confluent_kafka.KafkaError._NO_OFFSET:
                return  # nothing was consumed since the last commit
            self._last_commit_error = e
            log.warning("committing processed offsets before %s failed: %s "
                        "(they may be consumed again)", why, e)

    def _rebuild(self) -> None:
        conf = self.effective_conf()
        # The new consumer first; it joins the group only when it
        # subscribes, after the old one left.
        new = confluent_kafka.Consumer(conf, **self._kwargs)
        self._commit_processed("the rebuild")
        old = self._inner
        old.close()
        self._inner = new
        self._conf_used = conf
        if self._subscription is not None:
            new.subscribe(self._subscription, **self._sub_kwargs)

    def _service(self) -> None:
        if not self._closed:
            self._serve(can_rebuild=True)

    # ---- confluent_kafka.Consumer's methods -----------------------------

    def subscribe(self, topics: List[str], **kwargs: Any) -> None:
        """As confluent_kafka's; the topics and callbacks (on_assign,
        on_revoke, on_lost) are kept for every rebuild."""
        self._inner.subscribe(topics, **kwargs)
        self._subscription = list(topics)
        self._sub_kwargs = dict(kwargs)

    def unsubscribe(self) -> None:
        self._inner.unsubscribe()
        self._subscription = None
        self._sub_kwargs = {}

    def poll(self, timeout: Optional[float] = None) -> Any:
        self._service()
        return self._inner.poll(-1 if timeout is None else timeout)

    def consume(self, num_messages: int = 1,
                timeout: Optional[float] = None) -> List[Any]:
        self._service()
        return list(self._inner.consume(
            num_messages, -1 if timeout is None else timeout))

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.commit(*args, **kwargs)

    def close(self) -> None:
        """Commits what auto-commit would (as confluent_kafka's close),
        leaves the group (unless static) and stops the agent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._inner.close()
        finally:
            self._close_agent()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    # ---- dynconf's own ------------------------------------------------

    @property
    def inner(self) -> confluent_kafka.Consumer:
        """The current confluent_kafka.Consumer (replaced by a rebuild)."""
        return self._inner

    def inner_conf(self) -> Dict[str, Any]:
        """The dict the current inner consumer was built from."""
        return dict(self._conf_used)
