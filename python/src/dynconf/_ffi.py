"""libdynconf and the system librdkafka through cffi in ABI mode.

Both libraries are opened RTLD_LOCAL: confluent-kafka's wheel bundles its
own librdkafka, and with RTLD_GLOBAL its calls could bind to the system
copy that libdynconf links. The two copies never exchange objects: the
agent's rd_kafka_conf_t is built with the system librdkafka only.
"""
from __future__ import annotations

import ctypes.util
import os
import threading
from typing import Any, Optional, Tuple

import cffi

CDEF = """
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct dynconf_conf_s dynconf_conf_t;
typedef struct dynconf_s dynconf_t;
typedef struct dynconf_event_s dynconf_event_t;

int dynconf_version(void);
const char *dynconf_version_str(void);
const char *dynconf_err_name(int err);
const char *dynconf_err_str(int err);

dynconf_conf_t *dynconf_conf_new(void);
void dynconf_conf_destroy(dynconf_conf_t *conf);
int dynconf_conf_set(dynconf_conf_t *conf, const char *name,
                     const char *value, char *errstr, size_t errstr_size);
int dynconf_conf_get(const dynconf_conf_t *conf, const char *name,
                     char *dest, size_t *dest_size);
typedef void(dynconf_change_cb_t)(dynconf_t *dc, const dynconf_event_t *ev,
                                  void *opaque);
void dynconf_conf_set_change_cb(dynconf_conf_t *conf, dynconf_change_cb_t *cb);
typedef void(dynconf_log_cb_t)(const dynconf_t *dc, int level,
                               const char *fac, const char *msg);
void dynconf_conf_set_log_cb(dynconf_conf_t *conf, dynconf_log_cb_t *cb);

const char *dynconf_source_name(int s);
const char *dynconf_outcome_name(int o);
const char *dynconf_state_name(int s);

int dynconf_event_type(const dynconf_event_t *ev);
int dynconf_event_error(const dynconf_event_t *ev);
const char *dynconf_event_error_string(const dynconf_event_t *ev);
int dynconf_event_accepted(const dynconf_event_t *ev);
int64_t dynconf_event_generation(const dynconf_event_t *ev);
size_t dynconf_event_entry_count(const dynconf_event_t *ev);
const char *dynconf_event_key(const dynconf_event_t *ev, size_t i);
const char *dynconf_event_old_value(const dynconf_event_t *ev, size_t i);
const char *dynconf_event_new_value(const dynconf_event_t *ev, size_t i);
int dynconf_event_source(const dynconf_event_t *ev, size_t i);
int dynconf_event_outcome(const dynconf_event_t *ev, size_t i);
const char *dynconf_event_reason(const dynconf_event_t *ev, size_t i);

dynconf_t *dynconf_new(int type, const rd_kafka_conf_t *app_conf,
                       dynconf_conf_t *conf, char *errstr,
                       size_t errstr_size);
void dynconf_destroy(dynconf_t *dc);
int dynconf_poll(dynconf_t *dc, int timeout_ms);
int64_t dynconf_generation(dynconf_t *dc);
int dynconf_effective_get(dynconf_t *dc, const char *key, char *dest,
                          size_t dest_size, int *sourcep);
int dynconf_state(dynconf_t *dc);
const char *dynconf_client_id(const dynconf_t *dc);
char *dynconf_stats_json(dynconf_t *dc);
void dynconf_refresh_now(dynconf_t *dc);
"""

RDKAFKA_CDEF = """
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
rd_kafka_conf_t *rd_kafka_conf_new(void);
void rd_kafka_conf_destroy(rd_kafka_conf_t *conf);
int rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                      const char *value, char *errstr, size_t errstr_size);
int rd_kafka_conf_get(const rd_kafka_conf_t *conf, const char *name,
                      char *dest, size_t *dest_size);
const char *rd_kafka_version_str(void);
"""

LIBC_CDEF = "void free(void *ptr);"

# rd_kafka_type_t
RD_KAFKA_PRODUCER = 0
RD_KAFKA_CONSUMER = 1

# dynconf_conf_res_t
DYNCONF_CONF_UNKNOWN = -2
DYNCONF_CONF_INVALID = -1
DYNCONF_CONF_OK = 0

# dynconf_event_type_t
DYNCONF_EVENT_CHANGE = 1
DYNCONF_EVENT_ERROR = 2
DYNCONF_EVENT_UNSUPPORTED = 3
DYNCONF_EVENT_CERT_ERROR = 4

DYNCONF_SOURCE_APP = 0

_lock = threading.Lock()
_libs: Optional[Tuple[cffi.FFI, Any, Any, Any]] = None


def library_path() -> str:
    """Where libdynconf is loaded from: $DYNCONF_LIBRARY, else the linker's
    search path."""
    env = os.environ.get("DYNCONF_LIBRARY")
    if env:
        return env
    return ctypes.util.find_library("dynconf") or "libdynconf.so.0"


def load() -> Tuple[cffi.FFI, Any, Any, Any]:
    """(ffi, libdynconf, system librdkafka, libc), opened once."""
    global _libs
    with _lock:
        if _libs is None:
            ffi = cffi.FFI()
            ffi.cdef(CDEF)
            # The rd_kafka_conf_t typedef is declared twice on purpose:
            # cffi accepts an identical redeclaration.
            ffi.cdef(RDKAFKA_CDEF.replace(
                "typedef struct rd_kafka_conf_s rd_kafka_conf_t;\n", ""))
            ffi.cdef(LIBC_CDEF)
            flags = ffi.RTLD_LOCAL | ffi.RTLD_NOW
            path = library_path()
            try:
                dc = ffi.dlopen(path, flags)
            except OSError as e:
                raise ImportError(
                    f"cannot load libdynconf from {path!r} ({e}); install "
                    "libdynconf or set DYNCONF_LIBRARY to its path") from e
            # Already loaded as libdynconf's dependency: this finds that
            # copy, the one the agent's conf objects must come from.
            rk = ffi.dlopen("librdkafka.so.1", flags)
            libc = ffi.dlopen(None)
            _libs = (ffi, dc, rk, libc)
        return _libs
