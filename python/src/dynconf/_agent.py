"""The libdynconf agent behind a Producer or Consumer: its configuration,
its events and the effective values of the keys it manages."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _ffi

log = logging.getLogger("dynconf")

# Values the system librdkafka can take in an rd_kafka_conf_t; callables
# (on_delivery, error_cb, logger...) belong to the inner client only.
_SCALARS = (str, int, float, bool)


class DynconfError(Exception):
    """An error of the agent: `code` is the dynconf error name
    ("INVALID_CONFIG", "TRANSPORT"...), `reason` the agent's sentence."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


class ConfigError(DynconfError, ValueError):
    """A dynconf.* property the agent refuses (unknown name or bad value)."""


@dataclass(frozen=True)
class ChangeEntry:
    """One key of a change set and what the agent did with it."""

    key: str
    old_value: Optional[str]  # None: the application's own setting
    new_value: Optional[str]
    source: str  # "application", "client-override", "default-entity"...
    outcome: str  # "applied", "rejected", "pinned" or "ignored"
    reason: Optional[str]


@dataclass(frozen=True)
class ChangeEvent:
    """An agent event: kind "change" (a change set arrived), "error"
    (a fetch failed; the last good configuration stays), "unsupported"
    (the server has no client configs) or "cert_error"."""

    kind: str
    generation: int
    accepted: bool = False
    entries: Tuple[ChangeEntry, ...] = ()
    error: Optional[DynconfError] = None


@dataclass
class ApplyReport:
    """What the client did with one change event: `rebuilt` is true when
    the inner confluent-kafka client was replaced for it (a new handle with
    the new values); `error` says why a rebuild that was due failed (the
    previous client then keeps running)."""

    event: ChangeEvent
    generation: int  # the agent's generation after the event
    client_generation: int  # the generation the inner client was built from
    rebuilt: bool
    took_ms: float = 0.0
    error: Optional[DynconfError] = None
    entries: Tuple[ChangeEntry, ...] = field(default=())

    @property
    def accepted(self) -> bool:
        return self.event.accepted

    def as_dict(self) -> Dict[str, Any]:
        return {
            "generation": self.generation,
            "client_generation": self.client_generation,
            "accepted": self.event.accepted,
            "rebuilt": self.rebuilt,
            "took_ms": self.took_ms,
            "error": str(self.error) if self.error else None,
            "entries": [e.__dict__.copy() for e in self.entries],
        }


_KINDS = {
    _ffi.DYNCONF_EVENT_CHANGE: "change",
    _ffi.DYNCONF_EVENT_ERROR: "error",
    _ffi.DYNCONF_EVENT_UNSUPPORTED: "unsupported",
    _ffi.DYNCONF_EVENT_CERT_ERROR: "cert_error",
}


def _text(ffi: Any, p: Any) -> Optional[str]:
    return None if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")


def _conf_value(v: Any) -> Optional[str]:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _SCALARS):
        return str(v)
    return None


def _identity() -> Dict[str, str]:
    """What the fleet view shows of this client unless the application says
    otherwise: this package as the agent's software, and the binding with
    the librdkafka its clients really run on (confluent-kafka's own copy,
    not the system one libdynconf links)."""
    import confluent_kafka

    lib_version = confluent_kafka.libversion()[0]
    return {
        "dynconf.software.name": "dynconf-python",
        "dynconf.client.library": f"librdkafka/{lib_version}",
        "client.software.name": "confluent-kafka-python",
        "client.software.version":
            f"{confluent_kafka.version()[0]}-rdkafka-{lib_version}",
    }


class Agent:
    """One libdynconf agent. Not thread-safe: poll() and close() run on the
    application's polling thread; generation() and effective_*() from any
    thread."""

    def __init__(self, rd_type: int, conf: Mapping[str, Any]) -> None:
        ffi, lib, rk, libc = _ffi.load()
        self._ffi, self._lib, self._libc = ffi, lib, libc
        self._dc: Any = ffi.NULL
        self._pending: List[ChangeEvent] = []
        errstr = ffi.new("char[]", 512)

        app = rk.rd_kafka_conf_new()
        dconf = lib.dynconf_conf_new()
        try:
            for k, v in _identity().items():
                target = dconf if k.startswith("dynconf.") else app
                setter = (lib.dynconf_conf_set if target is dconf
                          else rk.rd_kafka_conf_set)
                setter(target, k.encode(), v.encode(), errstr, 512)
            for k, v in conf.items():
                s = _conf_value(v)
                if k.startswith("dynconf."):
                    if s is None:
                        raise ConfigError("INVALID_CONFIG",
                                          f"{k}: not a string or number")
                    r = lib.dynconf_conf_set(dconf, k.encode(), s.encode(),
                                             errstr, 512)
                    if r != _ffi.DYNCONF_CONF_OK:
                        raise ConfigError("INVALID_CONFIG",
                                          ffi.string(errstr).decode())
                elif s is not None:
                    # A property the system librdkafka does not know (a
                    # newer one) is the inner client's alone.
                    if rk.rd_kafka_conf_set(app, k.encode(), s.encode(),
                                            errstr, 512) != 0:
                        log.debug("agent: %s left to the client: %s", k,
                                  ffi.string(errstr).decode())
            self.allow_keys = [
                k for k in self._conf_get(dconf, "dynconf.allow.keys").split(",")
                if k]
            self.max_block_ms = int(
                self._conf_get(dconf, "dynconf.producer.max.block.ms"))
            # Kept alive on self: the agent calls them until destroyed.
            self._change_cb = ffi.callback("dynconf_change_cb_t",
                                           self._on_event)
            self._log_cb = ffi.callback("dynconf_log_cb_t", self._on_log)
            lib.dynconf_conf_set_change_cb(dconf, self._change_cb)
            lib.dynconf_conf_set_log_cb(dconf, self._log_cb)
            dc = lib.dynconf_new(rd_type, app, dconf, errstr, 512)
            if dc == ffi.NULL:
                reason = ffi.string(errstr).decode()
                code = ("TRANSPORT" if reason.startswith(
                    "dynconf.startup.required") else "INVALID_ARG")
                raise DynconfError(code, reason)
            dconf = ffi.NULL  # the agent's now
            self._dc = dc
        finally:
            if dconf != ffi.NULL:
                lib.dynconf_conf_destroy(dconf)
            rk.rd_kafka_conf_destroy(app)
        self.initial_generation = self.generation()

    def _conf_get(self, dconf: Any, name: str) -> str:
        size = self._ffi.new("size_t *", 4096)
        buf = self._ffi.new("char[]", 4096)
        if self._lib.dynconf_conf_get(dconf, name.encode(), buf, size) != 0:
            return ""
        return self._ffi.string(buf).decode()

    # ---- callbacks from dynconf_poll(): recorded, served by poll() -------

    def _on_event(self, dc: Any, ev: Any, opaque: Any) -> None:
        ffi, lib = self._ffi, self._lib
        t = lib.dynconf_event_type(ev)
        kind = _KINDS.get(t, "unknown")
        gen = int(lib.dynconf_event_generation(ev))
        if t == _ffi.DYNCONF_EVENT_CHANGE:
            entries = tuple(
                ChangeEntry(
                    key=_text(ffi, lib.dynconf_event_key(ev, i)) or "",
                    old_value=_text(ffi, lib.dynconf_event_old_value(ev, i)),
                    new_value=_text(ffi, lib.dynconf_event_new_value(ev, i)),
                    source=_text(ffi, lib.dynconf_source_name(
                        lib.dynconf_event_source(ev, i))) or "",
                    outcome=_text(ffi, lib.dynconf_outcome_name(
                        lib.dynconf_event_outcome(ev, i))) or "",
                    reason=_text(ffi, lib.dynconf_event_reason(ev, i)))
                for i in range(lib.dynconf_event_entry_count(ev)))
            self._pending.append(ChangeEvent(
                kind, gen, bool(lib.dynconf_event_accepted(ev)), entries))
        else:
            err = DynconfError(
                _text(ffi, lib.dynconf_err_name(lib.dynconf_event_error(ev)))
                or "UNKNOWN",
                _text(ffi, lib.dynconf_event_error_string(ev)) or "")
            self._pending.append(ChangeEvent(kind, gen, error=err))

    def _on_log(self, dc: Any, level: int, fac: Any, msg: Any) -> None:
        pylevel = (logging.ERROR if level <= 3 else logging.WARNING
                   if level == 4 else logging.INFO if level <= 6
                   else logging.DEBUG)
        log.log(pylevel, "%s: %s", _text(self._ffi, fac),
                _text(self._ffi, msg))

    # ---- the agent's API ------------------------------------------------

    def poll(self) -> List[ChangeEvent]:
        """Serves the agent's queued events; returns them."""
        if self._dc != self._ffi.NULL:
            self._lib.dynconf_poll(self._dc, 0)
        out, self._pending = self._pending, []
        return out

    def generation(self) -> int:
        if self._dc == self._ffi.NULL:
            raise DynconfError("INVALID_ARG", "the client is closed")
        return int(self._lib.dynconf_generation(self._dc))

    def effective_get(self, key: str) -> Optional[Tuple[str, str]]:
        """(value, source name) of an allowed key; None when the key is not
        in dynconf.allow.keys."""
        ffi = self._ffi
        if self._dc == ffi.NULL:
            raise DynconfError("INVALID_ARG", "the client is closed")
        src = ffi.new("int *")
        size = 256
        while True:
            buf = ffi.new("char[]", size)
            n = self._lib.dynconf_effective_get(self._dc, key.encode(), buf,
                                                size, src)
            if n < 0:
                return None
            if n <= size:
                break
            size = n
        return (ffi.string(buf).decode(),
                _text(ffi, self._lib.dynconf_source_name(src[0])) or "")

    def overrides(self) -> Dict[str, str]:
        """The managed keys whose effective value does not come from the
        application: they go over the application's dict."""
        ffi = self._ffi
        out: Dict[str, str] = {}
        src = ffi.new("int *")
        for k in self.allow_keys:
            buf = ffi.new("char[]", 1024)
            n = self._lib.dynconf_effective_get(self._dc, k.encode(), buf,
                                                1024, src)
            if 0 < n <= 1024 and src[0] != _ffi.DYNCONF_SOURCE_APP:
                out[k] = ffi.string(buf).decode()
        return out

    def state(self) -> str:
        return _text(self._ffi, self._lib.dynconf_state_name(
            self._lib.dynconf_state(self._dc))) or "unknown"

    def client_id(self) -> str:
        return _text(self._ffi, self._lib.dynconf_client_id(self._dc)) or ""

    def stats_json(self) -> str:
        p = self._lib.dynconf_stats_json(self._dc)
        if p == self._ffi.NULL:
            return "{}"
        try:
            return self._ffi.string(p).decode()
        finally:
            self._libc.free(p)

    def refresh_now(self) -> None:
        self._lib.dynconf_refresh_now(self._dc)

    def close(self) -> None:
        if self._dc != self._ffi.NULL:
            dc, self._dc = self._dc, self._ffi.NULL
            self._lib.dynconf_destroy(dc)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
