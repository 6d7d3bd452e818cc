#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""dynconfd under systemd's notify protocol, without systemd: this test
plays the service manager. It binds the datagram socket NOTIFY_SOCKET
names, starts dynconfd with WATCHDOG_USEC=2000000 (WatchdogSec=2), and
checks dynconfd sends READY=1 (with a STATUS naming its listener) only
once it listens, pings WATCHDOG=1 while it serves, and sends STOPPING=1
on SIGTERM before it exits 0. Without NOTIFY_SOCKET it sends nothing and
serves as usual (every other test).

Prints TAP. Every wait is bounded.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("DC_BUILDDIR", ".")
n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what), flush=True)
    return cond


def receive(sock, until, seconds):
    """Datagrams until one holds `until` or `seconds` pass."""
    got = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            msg = sock.recv(4096).decode()
        except socket.timeout:
            break
        got.append(msg)
        if until in msg:
            break
    return got


def main():
    tmp = tempfile.mkdtemp(prefix="dynconf-notify-")
    path = os.path.join(tmp, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="2000000")
    d = subprocess.Popen(
        [os.path.join(BUILD, "dynconfd"), "--listen", "127.0.0.1:0",
         "--data-dir", os.path.join(tmp, "data")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        msgs = receive(sock, "READY=1", 10)
        ready = [m for m in msgs if "READY=1" in m]
        ok(len(ready) == 1, "READY=1 sent once the server serves")
        line = d.stdout.readline().strip()
        ok(line.startswith("listening on 127.0.0.1:"), "it listens: " + line)
        addr = line.split()[2]
        ok(ready and ("STATUS=serving on " + addr) in ready[0],
           "its STATUS names the listener: %r" % (ready[0] if ready else ""))
        host, port = addr.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), 5).close()
            connected = True
        except OSError:
            connected = False
        ok(connected, "and accepts a connection")
        pings = [m for m in receive(sock, "no such text", 3.5)
                 if "WATCHDOG=1" in m]
        ok(len(pings) >= 2, "WATCHDOG=1 pinged while serving (%d in 3.5 s, "
           "WatchdogSec=2)" % len(pings))
        d.send_signal(signal.SIGTERM)
        stop = [m for m in receive(sock, "STOPPING=1", 10) if "STOPPING=1" in m]
        ok(len(stop) == 1, "STOPPING=1 sent on SIGTERM")
        ok(d.wait(10) == 0, "dynconfd exits 0")
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
        sock.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
