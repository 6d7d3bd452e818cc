#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Do two builds of dynconfd answer a corpus of requests byte for byte alike?

    scripts/compare-answers.py OLD_BUILDDIR NEW_BUILDDIR [CORPUS]

The corpus is one request payload per line in hex (a frame without its
size field). Without CORPUS it is made by running NEW_BUILDDIR's
tests/test_handlers with DC_REQUEST_LOG: every request of the broker's
handler tests, every API and version, good and malformed, in order;
Watch requests answered at once follow it (the handler tests send none).

Each build's dynconfd starts in turn on the same loopback port with a
fresh data dir (at the same path), and the corpus is sent over one connection, a request at
a time. An answer is recorded as its bytes; a request the server closes
the connection on is recorded as "closed" (the replay goes on over a new
connection); one not answered within a second as "no answer" (idem).
Both servers see the same requests in the same order, so they go through
the same states. Prints how many answers matched and every difference;
exits 1 when any differs.
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time


def make_corpus(build, path):
    env = dict(os.environ, DC_REQUEST_LOG=path)
    env.setdefault("DC_BUILDDIR", build)
    subprocess.run([os.path.join(build, "tests", "test_handlers")], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)


def watch_requests():
    """Watch requests answered at once (no version known, or no wait), for
    clients the handler tests configure and one nobody does: the corpus
    of test_handlers has none."""
    out = []
    for v in (0, 1):
        for client in (b"c1", b"app", b"c2", b"nobody-here"):
            for known, timeout in ((-1, 1000), (0, 1000), (12345, 0)):
                body = bytes([len(client) + 1]) + client
                body += struct.pack(">qi", known, timeout)
                if v >= 1:
                    body += struct.pack(">q", -1)
                body += b"\x00"  # no tagged fields
                head = struct.pack(">hhi", 20001, v, 7) + struct.pack(
                    ">h", 13) + b"compare-watch" + b"\x00"
                out.append(head + body)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(build, port, tmp):
    data = os.path.join(tmp, "data")  # the same path for both: answers name it
    shutil.rmtree(data, ignore_errors=True)
    os.mkdir(data)
    out = open(os.path.join(tmp, "out"), "w")
    p = subprocess.Popen([os.path.join(build, "dynconfd"), "--listen",
                          "127.0.0.1:%d" % port, "--data-dir", data,
                          "--node-id", "7"],
                         stdout=out, stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            if p.poll() is not None:
                break
            time.sleep(0.1)
    p.kill()
    sys.exit("compare-answers: %s/dynconfd did not start" % build)


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def replay(port, corpus):
    answers, s = [], None
    for payload in corpus:
        if s is None:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
        try:
            s.sendall(struct.pack(">i", len(payload)) + payload)
            (n,) = struct.unpack(">i", recv_exact(s, 4))
            answers.append(recv_exact(s, n))
        except socket.timeout:
            answers.append("no answer")
            s.close()
            s = None
        except (ConnectionError, OSError):
            answers.append("closed")
            s.close()
            s = None
    if s:
        s.close()
    return answers


def run(build, port, corpus, tmp):
    p = start(build, port, tmp)
    try:
        return replay(port, corpus)
    finally:
        p.terminate()
        p.wait()


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="dynconf-answers.")
    try:
        path = sys.argv[3] if len(sys.argv) == 4 else os.path.join(tmp, "corpus")
        if len(sys.argv) == 3:
            make_corpus(new, path)
        with open(path) as f:
            corpus = [bytes.fromhex(line.strip()) for line in f if line.strip()]
        if not corpus:
            sys.exit("compare-answers: the corpus is empty")
        corpus += watch_requests()
        port = free_port()
        a = run(old, port, corpus, tmp)
        b = run(new, port, corpus, tmp)
        differ = [i for i in range(len(corpus)) if a[i] != b[i]]
        kinds = {}
        for x in a:
            k = x if isinstance(x, str) else "answered"
            kinds[k] = kinds.get(k, 0) + 1
        print("%d requests: %d answers alike, %d differ (%s)" % (
            len(corpus), len(corpus) - len(differ), len(differ),
            ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
        for i in differ[:20]:
            print("request %d (API key and version %s):\n  old %.300r\n"
                  "  new %.300r" % (i, corpus[i][:4].hex(), a[i], b[i]))
        return 1 if differ else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
