# SPDX-License-Identifier: BSD-2-Clause
"""Shared pieces of the Python TAP tests (tests/*/test_*.py):
the kafka-python import guard, a TAP printer, dynconfd in the background,
and a raw socket for exchanges no client library can be made to do.

Import it first thing, once the test has put tests/ (its folder's parent)
on sys.path; it never writes bytecode, so the source tree stays clean.
"""
import importlib.util
import os
import select
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True


def require(module, package):
    """Debian installs its Python packages for the system interpreter; a
    pyenv or venv python3 first on PATH will not see them, so re-run under
    /usr/bin/python3."""
    if importlib.util.find_spec(module) is None:
        if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        print("Bail out! %s is not installed (Debian package %s)"
              % (module, package))
        sys.exit(1)


def require_kafka_python():
    require("kafka", "python3-kafka")


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc):
        self.n += 1
        if not cond:
            self.failed += 1
        print("%sok %d - %s" % ("" if cond else "not ", self.n, desc), flush=True)
        if not cond:  # prove shows stderr: a failure's words reach the CI log
            print("not ok %d - %s" % (self.n, desc), file=sys.stderr,
                  flush=True)
        return bool(cond)

    def is_(self, got, want, desc):
        if not self.ok(got == want, desc):
            self.diag("  got %r, want %r" % (got, want))
        return got == want

    def diag(self, msg):
        for line in str(msg).splitlines():
            print("# " + line, flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        return 1 if self.failed or self.n == 0 else 0


t = Tap()


def builddir():
    return os.environ.get("DC_BUILDDIR", ".")


def srcdir():
    return os.environ.get("DC_SRCDIR", os.path.join(os.path.dirname(__file__), ".."))


def dynconfd_path():
    return os.path.join(builddir(), "dynconfd")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    """dynconfd in the background. Reads its stdout until it has printed
    `listening on HOST:PORT (NAME PROTOCOL)` for n_listeners listeners;
    self.listeners maps NAME -> (host, port, protocol), and self.host /
    self.port are the first listener's; self.metrics is the HOST:PORT of
    `metrics on HOST:PORT` (--metrics-listen), else None."""

    def __init__(self, tmp, args, n_listeners=1, log_lines=20):
        self.log_path = os.path.join(tmp, "dynconfd.log")
        self.log = open(self.log_path, "ab")
        self.log_lines = log_lines
        wrapper = os.environ.get("DC_DAEMON_WRAPPER", "").split()
        self.proc = subprocess.Popen(
            wrapper + [dynconfd_path()] + args,
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        self.listeners = {}
        self.host, self.port = None, None
        self.metrics = None
        deadline = time.monotonic() + 10
        buf = b""
        while time.monotonic() < deadline and len(self.listeners) < n_listeners:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if not r:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith("metrics on "):
                    self.metrics = line[len("metrics on "):].strip()
                if not line.startswith("listening on "):
                    continue
                words = line[len("listening on "):].split(" ")
                host, port = words[0].rsplit(":", 1)
                name = words[1].lstrip("(") if len(words) > 1 else "?"
                proto = words[2].rstrip(")") if len(words) > 2 else "?"
                if self.port is None:
                    self.host, self.port = host, int(port)
                self.listeners[name] = (host, int(port), proto)
        if len(self.listeners) < n_listeners:
            self.stop()
            self.log_tail()
            raise RuntimeError("dynconfd printed %d of %d 'listening on' lines "
                               "within 10 s: %r" % (len(self.listeners),
                                                    n_listeners, buf))

    def addr(self, name):
        host, port, _ = self.listeners[name]
        return host, port

    def stop(self, sig=signal.SIGTERM):
        """Exit status (negative for a signal), or None if it had to be
        killed after 10 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.proc.stdout.close()
        self.log.close()
        return rc

    def log_tail(self, n=None):
        try:
            with open(self.log_path, errors="replace") as f:
                lines = f.readlines()[-(n or self.log_lines):]
        except OSError:
            return
        t.diag("--- dynconfd log ---")
        for line in lines:
            t.diag(line.rstrip("\n"))


class Raw:
    """A blocking socket with a bounded timeout on every read."""

    def __init__(self, host, port, tls_ctx=None):
        s = socket.create_connection((host, port), timeout=10)
        if tls_ctx is not None:
            s = tls_ctx.wrap_socket(s, server_hostname=host)
        self.s = s

    def send(self, data):
        self.s.sendall(data)

    def recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed after %d of %d bytes"
                                      % (len(out), n))
            out += chunk
        return out

    def recv_frame(self):
        (n,) = struct.unpack(">i", self.recv_exact(4))
        return self.recv_exact(n)

    def drain(self):
        """Everything the server sends until it closes: (bytes, closed).
        closed is False if it was still open after 10 s of silence."""
        out = b""
        try:
            while True:
                chunk = self.s.recv(65536)
                if not chunk:
                    return out, True
                out += chunk
        except socket.timeout:
            return out, False
        except (ConnectionError, ssl.SSLError, OSError):
            return out, True

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass
