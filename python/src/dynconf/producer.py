"""dynconf.Producer: confluent_kafka.Producer whose configuration follows
dynconfd live, as libdynconf's managed producer does."""
from __future__ import annotations

import threading
import time
from typing import Any, Dict, Mapping, Optional, Set

import confluent_kafka

from . import _ffi
from ._client import ChangeCallback, ErrorCallback, ReportCallback, _Managed

# With acks=0 a delivery report only says the request was written to the
# socket: the retired client stays open this long so the broker reads it.
_ACKS0_GRACE_S = 0.5


def _acks_of(conf: Mapping[str, Any]) -> str:
    v = conf.get("acks", conf.get("request.required.acks", "all"))
    return str(v).strip().lower()


class Producer(_Managed):
    """A confluent_kafka.Producer (same methods, passed through) whose inner
    client is rebuilt when an operator changes its configuration.

    `conf` is confluent-kafka's dict; keys starting with "dynconf." go to
    the agent (dynconf.bootstrap.servers...). on_change(ChangeEvent),
    on_error(DynconfError) and on_report(ApplyReport) run only from poll()
    and flush(), on the caller's thread. Other keyword arguments (logger)
    go to every inner confluent_kafka.Producer.

    When the agent's generation moves, poll() and flush() flush the inner
    producer fully (its delivery callbacks served there), build a new one
    with the new values and swap: nothing is lost and per-partition order
    is kept. produce() from another thread waits for a swap, at most
    dynconf.producer.max.block.ms, then raises BufferError.
    """

    def __init__(self, conf: Mapping[str, Any], *,
                 on_change: Optional[ChangeCallback] = None,
                 on_error: Optional[ErrorCallback] = None,
                 on_report: Optional[ReportCallback] = None,
                 **kwargs: Any) -> None:
        super().__init__(_ffi.RD_KAFKA_PRODUCER, conf, on_change, on_error,
                         on_report)
        self._kwargs = kwargs
        # Reentrant: a delivery callback served by a swap's flush may
        # produce again; that message joins the old producer, which the
        # flush waits for too.
        self._lock = threading.RLock()
        self._topics: Set[str] = set()
        self._txn_init_timeout: Optional[float] = None
        self._in_txn = False
        self._retiring: list[tuple[confluent_kafka.Producer, float]] = []
        try:
            self._conf_used = self.effective_conf()
            self._inner = confluent_kafka.Producer(self._conf_used, **kwargs)
        except BaseException:
            self._agent.close()
            raise

    # ---- the live swap ------------------------------------------------

    def _rebuild(self) -> None:
        conf = self.effective_conf()
        new = confluent_kafka.Producer(conf, **self._kwargs)
        try:
            if self._txn_init_timeout is not None:
                new.init_transactions(self._txn_init_timeout)
            # Learn the leaders now, so the first message after the swap
            # goes out at once.
            for t in list(self._topics):
                new.list_topics(t, timeout=5)
        except BaseException:
            del new
            raise
        with self._lock:
            old = self._inner
            # No new message is sent until every old one has its delivery
            # report: each ends within message.timeout.ms.
            while old.flush(1.0) > 0:
                pass
            grace = 0.0
            if _acks_of(self._conf_used) == "0":
                # The old messages may still wait in the broker: a request
                # on the old client's connections is answered only after
                # them.
                for t in list(self._topics):
                    try:
                        old.list_topics(t, timeout=5)
                    except Exception:
                        pass
                grace = _ACKS0_GRACE_S
            self._inner = new
            self._conf_used = conf
        self._retiring.append((old, time.monotonic() + grace))

    def _poll_retiring(self, wait: bool = False) -> None:
        keep = []
        for p, not_before in self._retiring:
            left = not_before - time.monotonic()
            if wait and left > 0:
                p.poll(left)
                left = 0
            p.poll(0)
            if len(p) > 0 or left > 0:
                keep.append((p, not_before))
        self._retiring = keep

    def _service(self) -> None:
        self._serve(can_rebuild=not self._in_txn)
        self._poll_retiring()

    # ---- confluent_kafka.Producer's methods -----------------------------

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        if not self._lock.acquire(timeout=self._agent.max_block_ms / 1000.0):
            raise BufferError("the producer is switching to a new "
                              "configuration (dynconf.producer.max.block.ms)")
        try:
            self._topics.add(topic)
            self._inner.produce(topic, *args, **kwargs)
        finally:
            self._lock.release()

    def poll(self, timeout: Optional[float] = None) -> int:
        self._service()
        return int(self._inner.poll(-1 if timeout is None else timeout))

    def flush(self, timeout: Optional[float] = None) -> int:
        self._service()
        deadline = None if timeout is None else time.monotonic() + timeout
        for p, _ in self._retiring:
            left = -1.0 if deadline is None else max(
                0.0, deadline - time.monotonic())
            p.flush(left)
        left = -1.0 if deadline is None else max(
            0.0, deadline - time.monotonic())
        n = int(self._inner.flush(left))
        self._poll_retiring()
        return n + sum(len(p) for p, _ in self._retiring)

    def __len__(self) -> int:
        return len(self._inner) + sum(len(p) for p, _ in self._retiring)

    def purge(self, *args: Any, **kwargs: Any) -> None:
        for p, _ in self._retiring:
            p.purge(*args, **kwargs)
        self._inner.purge(*args, **kwargs)

    def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.list_topics(*args, **kwargs)

    def init_transactions(self, timeout: float = -1) -> None:
        self._inner.init_transactions(timeout)
        # Every later inner producer is initialised the same way.
        self._txn_init_timeout = timeout if timeout >= 0 else 30.0

    def begin_transaction(self) -> None:
        self._inner.begin_transaction()
        self._in_txn = True  # no swap until it ends

    def commit_transaction(self, *args: Any, **kwargs: Any) -> None:
        self._inner.commit_transaction(*args, **kwargs)
        self._in_txn = False

    def abort_transaction(self, *args: Any, **kwargs: Any) -> None:
        self._inner.abort_transaction(*args, **kwargs)
        self._in_txn = False

    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        self._inner.send_offsets_to_transaction(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this class does not define.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    # ---- dynconf's own ------------------------------------------------

    @property
    def inner(self) -> confluent_kafka.Producer:
        """The current confluent_kafka.Producer (replaced by a swap)."""
        return self._inner

    def inner_conf(self) -> Dict[str, Any]:
        """The dict the current inner producer was built from."""
        return dict(self._conf_used)

    def close(self, timeout: Optional[float] = None) -> int:
        """Flushes (within timeout, None = until done) and stops the agent;
        returns the number of messages still undelivered."""
        n = self.flush(timeout)
        self._poll_retiring(wait=True)
        self._retiring = []
        self._close_agent()
        return n
