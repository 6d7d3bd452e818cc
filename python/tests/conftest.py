"""Fixtures: dynconfd and a one-node Apache Kafka cluster, real processes
on loopback. Paths come from the environment:

  DC_BUILDDIR      the build directory (dynconfd, dynconf-configs,
                   .libs/libdynconf.so.0) - required
  DC_SRCDIR        the source tree (scripts/kafka.sh); default: this one
  DYNCONF_LIBRARY  libdynconf to load; default $DC_BUILDDIR/.libs/...

Nothing is skipped: a missing piece fails the test that needs it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

SRCDIR = Path(os.environ.get("DC_SRCDIR")
              or Path(__file__).resolve().parents[2])
_builddir = os.environ.get("DC_BUILDDIR")
BUILDDIR = Path(_builddir) if _builddir else None
if BUILDDIR is not None and "DYNCONF_LIBRARY" not in os.environ:
    os.environ["DYNCONF_LIBRARY"] = str(BUILDDIR / ".libs/libdynconf.so.0")


def build_path(name: str) -> Path:
    if BUILDDIR is None:
        pytest.fail("DC_BUILDDIR is not set: point it at dynconf's build "
                    "directory (the one holding dynconfd)")
    p = BUILDDIR / name
    if not p.exists():
        pytest.fail(f"{p} is missing: build dynconf first (make)")
    return p


def wait_until(cond: Callable[[], bool], timeout: float, what: str,
               step: Optional[Callable[[], None]] = None) -> None:
    """Calls step() (e.g. a poll) until cond() holds; fails after timeout
    seconds naming `what`."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.02)


class Dynconfd:
    """One dynconfd process and the operator CLI against it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.address = ""

    def start(self) -> None:
        exe = build_path("dynconfd")
        out = self.workdir / "dynconfd.out"
        with open(out, "wb") as o, \
                open(self.workdir / "dynconfd.log", "ab") as e:
            self.proc = subprocess.Popen(
                [str(exe), "--listen", "127.0.0.1:0", "--data-dir",
                 str(self.workdir / "data")],
                stdout=o, stderr=e, stdin=subprocess.DEVNULL)

        def listening() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                pytest.fail("dynconfd exited at start: "
                            + (self.workdir / "dynconfd.log").read_text())
            m = re.search(r"^listening on (\S+)", out.read_text(), re.M)
            if m:
                self.address = m.group(1)
            return bool(m)

        wait_until(listening, 30, "dynconfd to listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cli(self, *args: str, check: bool = True) -> str:
        r = subprocess.run(
            [str(build_path("dynconf-configs")), "--bootstrap-server",
             self.address, *args], capture_output=True, text=True,
            timeout=30)
        if check and r.returncode != 0:
            pytest.fail(f"dynconf-configs {' '.join(args)}: exit "
                        f"{r.returncode}: {r.stderr}{r.stdout}")
        return r.stdout + r.stderr

    def alter(self, client_id: str, configs: str) -> str:
        return self.cli("--entity-type", "clients", "--entity-name",
                        client_id, "--alter", "--add-config", configs)

    def delete(self, client_id: str, keys: str) -> str:
        return self.cli("--entity-type", "clients", "--entity-name",
                        client_id, "--alter", "--delete-config", keys)


@pytest.fixture
def tmp_work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="dcpy."))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def dynconfd() -> Iterator[Dynconfd]:
    """One dynconfd for the session (tests use their own client ids)."""
    d = Path(tempfile.mkdtemp(prefix="dcpy-d."))
    srv = Dynconfd(d)
    srv.start()
    yield srv
    srv.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def private_dynconfd(tmp_work: Path) -> Iterator[Dynconfd]:
    """A dynconfd the test may stop."""
    srv = Dynconfd(tmp_work)
    srv.start()
    yield srv
    srv.stop()


class Kafka:
    def __init__(self, script: Path, workdir: Path) -> None:
        self.script = script
        self.dir = workdir / "kafka"
        self.bootstrap = ""

    def run(self, *args: str) -> str:
        r = subprocess.run(["bash", str(self.script), "-d", str(self.dir),
                            "-n", "1", *args], capture_output=True,
                           text=True, timeout=180)
        if r.returncode != 0:
            pytest.fail(f"kafka.sh {' '.join(args)}: exit {r.returncode}: "
                        f"{r.stderr[-2000:]}")
        return r.stdout

    def create_topic(self, partitions: int = 3) -> str:
        name = "t-" + uuid.uuid4().hex[:8]
        self.run("topics", "--create", "--topic", name, "--partitions",
                 str(partitions), "--replication-factor", "1")
        return name


@pytest.fixture(scope="session")
def kafka() -> Iterator[Kafka]:
    """A one-node Apache Kafka cluster (scripts/kafka.sh) for the
    session, destroyed at its end."""
    script = SRCDIR / "scripts/kafka.sh"
    if not script.exists():
        pytest.fail(f"{script} is missing (DC_SRCDIR={SRCDIR})")
    d = Path(tempfile.mkdtemp(prefix="dcpy-k."))
    k = Kafka(script, d)
    try:
        k.bootstrap = k.run("start").strip().splitlines()[-1]
        yield k
    finally:
        subprocess.run(["bash", str(script), "-d", str(k.dir), "destroy"],
                       capture_output=True, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def unique_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def read_back(bootstrap: str, topic: str, partitions: int,
              timeout: float = 60.0) -> List[List[bytes]]:
    """Every message of the topic, per partition in offset order, read with
    a plain confluent_kafka.Consumer up to the high watermarks."""
    import confluent_kafka
    c = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": unique_id("readback"),
        "enable.auto.commit": False, "enable.partition.eof": False})
    try:
        out: List[List[bytes]] = []
        for p in range(partitions):
            tp = confluent_kafka.TopicPartition(topic, p)
            lo, hi = c.get_watermark_offsets(tp, timeout=10)
            msgs: List[bytes] = []
            c.assign([confluent_kafka.TopicPartition(topic, p, lo)])
            deadline = time.monotonic() + timeout
            pos = lo
            while pos < hi:
                if time.monotonic() > deadline:
                    pytest.fail(f"reading {topic}[{p}] back: at {pos} of "
                                f"{hi} after {timeout} s")
                m = c.poll(0.5)
                if m is None or m.error():
                    continue
                msgs.append(m.value())
                pos = m.offset() + 1
            out.append(msgs)
        return out
    finally:
        c.close()
