"""dynconf: live central configuration (KIP-649) of confluent-kafka
clients through libdynconf's agent.

    import dynconf
    p = dynconf.Producer({"bootstrap.servers": "kafka:9092",
                          "client.id": "orders-p",
                          "dynconf.bootstrap.servers": "dynconfd:9092"},
                         on_change=print)
    p.produce("orders", b"hello")
    p.poll(0)      # serves callbacks; swaps the inner producer when due
"""
from ._agent import (ApplyReport, ChangeEntry, ChangeEvent, ConfigError,
                     DynconfError)
from ._ffi import library_path
from .consumer import Consumer
from .producer import Producer

__version__ = "0.1.0"


def libdynconf_version() -> str:
    """The version of the libdynconf loaded."""
    from . import _ffi
    ffi, lib, _, _ = _ffi.load()
    return ffi.string(lib.dynconf_version_str()).decode()


__all__ = ["Producer", "Consumer", "DynconfError", "ConfigError",
           "ChangeEvent", "ChangeEntry", "ApplyReport", "library_path",
           "libdynconf_version", "__version__"]
