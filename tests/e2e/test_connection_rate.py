#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end: connection creation rates.

Cases:
- --max-connection-creation-rate-per-ip 5: 30 connections opened at once
  from 127.0.0.1 each send ApiVersions; a second's worth (5) is answered,
  the others are closed at once; a connection from 127.0.0.2 meanwhile is
  served (its address has its own rate); the log says how many were
  closed and from where, and dynconfd_connections_refused_total
  {reason="ip_creation_rate"} counts them.
- --max-connection-creation-rate 5 (the listener's): 20 connections opened
  at once are all served, none refused, but no faster than the rate lets
  the listener accept them (15 past the first second's worth: at least
  2.5 s), and dynconfd_listener_accept_pauses_total counts the pauses.

Prints TAP. Every socket wait is bounded; a global alarm turns any hang
into a failure.
"""
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import urllib.request

# The shared helpers (dcpy.py ...) are in tests/, this test's parent folder.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dcpy  # noqa: E402
from dcpy import t  # noqa: E402


def api_versions_frame(corr):
    cid = b"rate"
    payload = struct.pack(">hhih", 18, 0, corr, len(cid)) + cid
    return struct.pack(">i", len(payload)) + payload


def opened(port, n, source="127.0.0.1"):
    """n connections from source, each with an ApiVersions sent."""
    out = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=15,
                                     source_address=(source, 0))
        try:
            s.sendall(api_versions_frame(i))
        except OSError:
            pass  # already closed by the server: counted as such
        out.append(s)
    return out


def answered(s):
    """Whether the connection got its ApiVersions answer (False: closed)."""
    buf = b""
    try:
        while len(buf) < 8:
            chunk = s.recv(8 - len(buf))
            if not chunk:
                return False
            buf += chunk
    except OSError:
        return False
    return True


def metric(d, line_start):
    body = urllib.request.urlopen("http://%s/metrics" % d.metrics,
                                  timeout=10).read().decode()
    for line in body.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return None


def wait_log(d, text, seconds=5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(d.log_path, errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.1)
    return False


def per_ip(tmp):
    d = dcpy.Daemon(tmp, ["--listen", "127.0.0.1:0", "--data-dir",
                          os.path.join(tmp, "data1"), "--metrics-listen",
                          "127.0.0.1:0",
                          "--max-connection-creation-rate-per-ip", "5"])
    try:
        socks = opened(d.port, 30)
        other = opened(d.port, 1, source="127.0.0.2")
        served = sum(answered(s) for s in socks)
        t.ok(5 <= served < 30, "30 connections at once from one address at "
             "5 a second: a second's worth is served, the rest closed at "
             "once (%d served)" % served)
        t.ok(answered(other[0]), "  a connection from 127.0.0.2 meanwhile "
             "is served")
        for s in socks + other:
            s.close()
        t.ok(wait_log(d, "over max.connection.creation.rate.per.ip (5 a "
                         "second), the last from 127.0.0.1"),
             "  the log says how many were closed, and from where")
        refused = metric(d, 'dynconfd_connections_refused_total'
                            '{reason="ip_creation_rate"}')
        t.ok(refused == 30 - served, "  dynconfd_connections_refused_total"
             "{reason=\"ip_creation_rate\"} counts them (%r)" % refused)
    finally:
        t.is_(d.stop(), 0, "dynconfd stops cleanly")


def per_listener(tmp):
    d = dcpy.Daemon(tmp, ["--listen", "127.0.0.1:0", "--data-dir",
                          os.path.join(tmp, "data2"), "--metrics-listen",
                          "127.0.0.1:0", "--max-connection-creation-rate",
                          "5"])
    try:
        t0 = time.monotonic()
        socks = opened(d.port, 20)
        served = sum(answered(s) for s in socks)
        took = time.monotonic() - t0
        for s in socks:
            s.close()
        t.ok(served == 20, "20 connections at once on a listener accepting "
             "5 a second: all are served (%d)" % served)
        t.ok(took >= 2.5, "  no faster than the rate (%.2f s; 15 past the "
             "first second's worth take at least 3 s)" % took)
        pauses = metric(d, 'dynconfd_listener_accept_pauses_total'
                           '{listener="PLAINTEXT"}')
        t.ok(pauses is not None and pauses >= 1,
             "  dynconfd_listener_accept_pauses_total counts the pauses "
             "(%r)" % pauses)
    finally:
        t.is_(d.stop(), 0, "dynconfd stops cleanly")


def main():
    signal.alarm(120)
    tmp = tempfile.mkdtemp(prefix="dynconf-rate-")
    try:
        per_ip(tmp)
        per_listener(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    raise SystemExit(main())
