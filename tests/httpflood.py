# SPDX-License-Identifier: BSD-2-Clause
"""Hostile HTTP clients for dynconfd's --metrics-listen endpoint, shared by
tests/e2e/test_http_limits.py and bench/run-http.sh: floods of connections
that each send part of a request and then close or idle, a request whose
header is too large, and /healthz polled from its own address meanwhile.
Loopback only (127.0.0.0/8: any of its addresses is this machine's);
every wait is bounded.

As a program, the benchmark: httpflood.py HOST:PORT (see main()).
"""
import argparse
import resource
import selectors
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: flood\r\nX-Part: "


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def split(addr):
    host, port = addr.rsplit(":", 1)
    return host.strip("[]"), int(port)


def connect(addr, source=None, timeout=5.0):
    """A connected socket from source (an address of this machine)."""
    s = socket.socket()
    try:
        if source:
            s.bind((source, 0))
        s.settimeout(timeout)
        s.connect(split(addr))
    except OSError:
        s.close()
        raise
    return s


def partial(addr, source=None):
    """A connection that has sent part of a request."""
    s = connect(addr, source)
    try:
        s.sendall(PARTIAL)
    except OSError:
        s.close()
        raise
    return s


def flood(addr, n, source=None, idle=0, timeout=5.0):
    """n connections from source, opened at once, that each send part of a
    request as soon as it is made; the first `idle` then stay open
    (returned: the caller closes them), the rest close. One not made
    within timeout seconds counts as failed. Returns (idle sockets,
    connections that failed)."""
    sel = selectors.DefaultSelector()
    kept, failed = [], 0
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        try:
            if source:
                s.bind((source, 0))
            s.connect_ex(split(addr))
        except OSError:
            s.close()
            failed += 1
            continue
        sel.register(s, selectors.EVENT_WRITE, i)
    deadline = time.monotonic() + timeout
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(0.1):
            s = key.fileobj
            sel.unregister(s)
            try:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    raise ConnectionError("not connected")
                s.send(PARTIAL)
            except OSError:
                s.close()
                failed += 1
                continue
            if key.data < idle:
                kept.append(s)
            else:
                s.close()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
        failed += 1
    sel.close()
    return kept, failed


def status_of(data):
    words = data.split(b" ", 2)
    if len(words) < 2 or not words[0].startswith(b"HTTP/"):
        return None
    return int(words[1])


def get(addr, path="/healthz", source=None, timeout=30.0):
    """(status, seconds) of one GET on a new connection; status None when
    it failed (refused, reset, closed without an answer, timed out)."""
    t0 = time.monotonic()
    try:
        s = connect(addr, source, timeout)
    except OSError:
        return None, time.monotonic() - t0
    data = b""
    try:
        s.settimeout(max(0.01, timeout - (time.monotonic() - t0)))
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                  % path.encode())
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    finally:
        s.close()
    return status_of(data), time.monotonic() - t0


def big_header(addr, size, timeout=30.0):
    """(status, seconds) of a GET whose header carries size bytes: it
    sends while the server reads, and reads what the server answers, until
    the status line arrives or the server closes."""
    s = connect(addr, timeout=timeout)
    s.setblocking(False)
    pending = (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size +
               b"\r\n\r\n")
    data, t0 = b"", time.monotonic()
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    try:
        while b"\r\n" not in data and time.monotonic() - t0 < timeout:
            for _, ev in sel.select(0.1):
                if ev & selectors.EVENT_READ:
                    chunk = s.recv(65536)
                    if not chunk:
                        return status_of(data), time.monotonic() - t0
                    data += chunk
                elif pending:
                    pending = pending[s.send(pending[:65536]):]
                else:
                    sel.modify(s, selectors.EVENT_READ)
    except OSError:
        pass
    finally:
        sel.close()
        s.close()
    return status_of(data), time.monotonic() - t0


def closed_by_server(socks, timeout):
    """{socket: seconds} for those of socks the server closes (end of
    stream or reset, nothing else expected) within timeout seconds."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed, t0 = {}, time.monotonic()
    try:
        while len(closed) < len(socks) and time.monotonic() - t0 < timeout:
            for key, _ in sel.select(0.05):
                try:
                    if key.fileobj.recv(4096):
                        continue  # bytes: not a close
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                closed[key.fileobj] = time.monotonic() - t0
                sel.unregister(key.fileobj)
    finally:
        sel.close()
    return closed


class Poller:
    """/healthz from source every `every` seconds on a thread, each GET on
    its own connection: self.samples holds (status, seconds, started)."""

    def __init__(self, addr, source=None, every=0.05, timeout=30.0):
        self.addr, self.source = addr, source
        self.every, self.timeout = every, timeout
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t = time.monotonic()
            st, took = get(self.addr, source=self.source, timeout=self.timeout)
            self.samples.append((st, took, t))
            self._stop.wait(self.every)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.samples


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def longest_outage(samples, start, end):
    """The longest stretch of [start, end] with no /healthz answer
    arriving: a server that answers each poll at once has about the poll
    interval."""
    answers = sorted(t + took for st, took, t in samples if st == 200)
    marks = [start] + [a for a in answers if start < a < end] + [end]
    return max(b - a for a, b in zip(marks, marks[1:]))


def summary(samples):
    """Poll count, lost polls, and p50, p99 and max of the time to an
    answer, a lost poll counting as never (inf)."""
    took = [x[1] if x[0] == 200 else float("inf") for x in samples]
    return {"polls": len(samples), "lost": took.count(float("inf")),
            "p50": percentile(took, 50), "p99": percentile(took, 99),
            "max": max(took, default=float("nan"))}


def flood_rounds(a):
    """The flood of main(), /healthz polled from its start until answered
    again after it (300 s at most). (samples, kept sockets, seconds it
    took, failed connects, longest outage, whether answered again)."""
    p = Poller(a.addr, "127.0.0.1", timeout=a.timeout)
    start, kept, failed = time.monotonic(), [], 0
    for r in range(a.rounds):
        k, f = flood(a.addr, a.connections, a.flood_from, a.idle)
        kept += k
        failed += f
        wait = start + (r + 1) * a.every - time.monotonic()
        if r + 1 < a.rounds and wait > 0:
            time.sleep(wait)  # the rounds' pace
    took = time.monotonic() - start
    time.sleep(a.settle_seconds)  # the flood's measuring window goes on
    end = time.monotonic()
    while time.monotonic() < end + 300 and not any(
            st == 200 and t > end for st, _, t in p.samples):
        time.sleep(0.05)
    samples = p.stop()
    back = [t + d for st, d, t in samples if st == 200 and t > end]
    outage = longest_outage(samples, start,
                            min(back) if back else time.monotonic())
    return samples, kept, took, failed, outage, bool(back)


def ms(x):
    return "%9s" % "lost" if x == float("inf") else "%9.2f" % (x * 1e3)


def main():
    ap = argparse.ArgumentParser(
        description="/healthz latency from 127.0.0.1, quiet and then while "
        "another loopback address floods the endpoint with partial requests")
    ap.add_argument("addr", help="HOST:PORT of dynconfd --metrics-listen")
    ap.add_argument("--connections", type=int, default=2000,
                    help="connections per flood round (2000)")
    ap.add_argument("--idle", type=int, default=50,
                    help="of each round, left open and idle (50)")
    ap.add_argument("--rounds", type=int, default=5, help="flood rounds (5)")
    ap.add_argument("--every", type=float, default=0.5,
                    help="seconds from one round's start to the next (0.5)")
    ap.add_argument("--flood-from", default="127.0.0.2")
    ap.add_argument("--quiet-seconds", type=float, default=3.0)
    ap.add_argument("--settle-seconds", type=float, default=1.0,
                    help="polling goes on this long after the last round")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="a /healthz unanswered this long counts as lost")
    a = ap.parse_args()
    raise_fd_limit()

    p = Poller(a.addr, "127.0.0.1", timeout=a.timeout)
    time.sleep(a.quiet_seconds)  # the baseline's measuring window
    quiet = summary(p.stop())
    samples, kept, took, failed, outage, back = flood_rounds(a)
    for s in kept:
        s.close()
    under = summary(samples)
    big, big_s = big_header(a.addr, 1 << 20, timeout=a.timeout)

    print("%-28s %6s %6s %9s %9s %9s" % ("/healthz", "polls", "lost",
                                         "p50 ms", "p99 ms", "max ms"))
    for name, r in (("quiet (baseline)", quiet),
                    ("flood (%d x %d, %d idle)" % (a.rounds, a.connections,
                                                   a.idle), under)):
        print("%-28s %6d %6d %s %s %s" % (name, r["polls"], r["lost"],
                                          ms(r["p50"]), ms(r["p99"]),
                                          ms(r["max"])))
    print("ratio flood/quiet: p50 %s, p99 %s" % tuple(
        "lost" if under[k] == float("inf") else "%.1fx" % (under[k] / quiet[k])
        for k in ("p50", "p99")))
    print("flood: %d connections opened in %.2f s (%d failed to connect); "
          "longest time with no /healthz answer %.2f s%s" % (
              a.rounds * a.connections, took, failed, outage,
              "" if back else " and more: none within 300 s after it"))
    print("1 MiB header: %s after %.3f s" % (big, big_s))
    return 0 if quiet["lost"] == 0 and quiet["polls"] else 1


if __name__ == "__main__":
    sys.exit(main())
