#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""End to end: dynconf-configs --describe-fleet and --alter --wait against
dynconfd and a mixed fleet of real agents (examples/agent_watch) on
loopback: two producers that apply changes (app-a, app-b), a consumer whose
own heartbeat.interval.ms=8000 makes it reject session.timeout.ms=7000 (the
agent keeps heartbeat below session: lib/agent/resolve.c), and a producer
killed before the first alter (app-d, gone).

  --describe-fleet: groups, lines, summary, --json states, filters
  --wait on app-a's acks=0:                 exit 0
  --wait on <default> session.timeout.ms:   exit 1, app-c and its reason
  --wait on app-b while it is SIGSTOPped:   exit 3 naming it, then it
                                            catches up after SIGCONT
  polling agents (dynconf.watch=false):     in the fleet from their first
                                            connection; --wait exit 0 as
                                            they apply, at the version
                                            that resolves now
  --wait on a client-id nobody runs:        exit 4, "no connected client"
  an idempotent producer told acks=1:       rejected reason names the value

Every wait is a condition polled with a generous deadline (a loaded
2-core machine, CI), never a fixed sleep. tests/e2e/test_cli_fleet_fake.py
covers the exact wording against a scripted server.

Prints TAP. A global alarm turns any hang into a failure.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

# The shared helpers (dcpy.py ...) are in tests/, this test's parent folder.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dcpy import Daemon, t  # noqa: E402
import dcpy  # noqa: E402

CLI = os.path.join(dcpy.builddir(), "dynconf-configs")
AGENT = os.path.join(dcpy.builddir(), "examples", "agent_watch")
PATIENCE = 90  # seconds for any condition; a loaded machine is slow
HEX16 = "[0-9a-f]{16}"
BS = None
METRICS = None  # "127.0.0.1:PORT" of dynconfd's /metrics


class Agent:
    """examples/agent_watch for one client-id, its output in a file."""

    def __init__(self, tmp, client_id, consumer=False, props=()):
        self.client_id = client_id
        self.path = os.path.join(tmp, "agent-%s.out" % client_id)
        self.out = open(self.path, "wb")
        argv = [AGENT] + (["--consumer"] if consumer else [])
        for p in props:
            argv += ["-X", p]
        self.proc = subprocess.Popen(argv + [BS, client_id], stdout=self.out,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

    def text(self):
        with open(self.path, errors="replace") as f:
            return f.read()

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()


def cli(*args, timeout=PATIENCE + 30):
    """(exit status, stdout, stderr) of dynconf-configs against dynconfd."""
    p = subprocess.run([CLI, "--bootstrap-server", BS] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def fleet(*filt):
    """--describe-fleet --json for the filter as {client_id: entry} (one
    agent per client-id here), or None when it failed."""
    rc, out, err = cli("--describe-fleet", "--json", *filt)
    if rc != 0:
        t.diag("--describe-fleet --json: exit %d: %s" % (rc, err.strip()))
        return None
    return {c["client_id"]: c for c in json.loads(out)["clients"]}


def wait_fleet(pred, *filt):
    """Polls --describe-fleet --json until pred(clients) holds; returns the
    last answer and whether it held."""
    deadline = time.monotonic() + PATIENCE
    last = None
    while time.monotonic() < deadline:
        last = fleet(*filt)
        if last is not None and pred(last):
            return last, True
        time.sleep(0.2)
    return last, False


def wait_text(agent, pattern):
    """Polls the agent's output until the regular expression matches."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if re.search(pattern, agent.text()):
            return True
        time.sleep(0.2)
    return False


def states(f):
    return {k: v["state"] for k, v in f.items()}


def show(got):
    rc, out, err = got
    t.diag("exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err))


def expect(got, rc, desc):
    if not t.is_(got[0], rc, desc):
        show(got)
        return False
    return True


def has(text, pattern, desc):
    """A line of text matches the regular expression."""
    ok = re.search(pattern, text, re.M) is not None
    if not t.ok(ok, desc):
        t.diag("no line matches /%s/ in:\n%s" % (pattern, text))
    return ok


# ---- the steps -------------------------------------------------------------

def step_fleet_up(agents):
    want = {"app-a": "up_to_date", "app-b": "up_to_date", "app-c": "up_to_date",
            "app-d": "up_to_date"}
    f, ok = wait_fleet(lambda f: states(f) == want)
    if not t.ok(ok, "the four agents report and are up to date"):
        t.diag("last: %r" % (f and states(f)))
        return None
    t.is_((f["app-a"]["kind"], f["app-c"]["kind"]), ("producer", "consumer"),
          "kind: producer, consumer")
    agents["app-d"].signal(signal.SIGKILL)
    f, ok = wait_fleet(lambda f: "app-d" in f and not f["app-d"]["connected"])
    t.ok(ok and f["app-d"]["state"] == "silent",
         "app-d killed: still listed, silent, not connected")
    return f


def step_describe_text(user):
    rc, out, err = got = cli("--describe-fleet")
    expect(got, 0, "--describe-fleet: exit 0")
    lines = out.splitlines()
    t.is_([x for x in lines if not x.startswith("  ")],
          ["Up to date (3):", "Silent (1):",
           "4 clients: 3 up to date, 0 behind, 0 rejected, 1 silent, 0 restart needed"],
          "groups in order with their counts, and the summary")
    who = r"instance [0-9a-f]+, User:%s at 127\.0\.0\.1:\d+ via \S+, " % re.escape(user)
    soft = r"librdkafka/\S+, dynconf-agent/\S+, generation \d+, "
    for cid, kind in (("app-a", "producer"), ("app-b", "producer"), ("app-c", "consumer")):
        has(out, r"^  %s %s%s, %sreported %s applied, first seen \S+ ago, last seen \d+s ago$"
            % (cid, who, kind, soft, HEX16), "%s: its line under up to date" % cid)
    has(out, r"^  app-d %sproducer, %sreported %s applied, gone since \S+ ago, first seen "
        r"\S+ ago, last seen \S+ ago$" % (who, soft, HEX16), "app-d: gone since")
    t.ok(lines.index("Silent (1):") > max(i for i, x in enumerate(lines) if "app-c" in x),
         "silent after up to date")


def step_filters(user):
    f = fleet("--entity-type", "clients", "--entity-name", "app-a")
    t.is_(f and sorted(f), ["app-a"], "--entity-type clients --entity-name app-a: app-a only")
    f = fleet("--entity-type", "clients", "--entity-default")
    t.is_(f and sorted(f), ["app-a", "app-b", "app-c", "app-d"], "--entity-default: all")
    f = fleet("--entity-type", "users", "--entity-name", user)
    t.is_(f and sorted(f), ["app-a", "app-b", "app-c", "app-d"], "users %s: all four" % user)
    f = fleet("--entity-type", "users", "--entity-name", "nobody-" + user)
    t.is_(f, {}, "another user: none")
    f = fleet("--entity-type", "users", "--entity-name", user,
              "--entity-type", "clients", "--entity-name", "app-b")
    t.is_(f and sorted(f), ["app-b"], "users %s with clients app-b: app-b" % user)


def step_wait_applied(agents):
    start = time.monotonic()
    got = cli("--alter", "--entity-type", "clients", "--entity-name", "app-a",
              "--add-config", "acks=0", "--wait", "--timeout-ms", str(PATIENCE * 1000))
    if expect(got, 0, "--wait on app-a's acks=0: exit 0"):
        t.is_(got[1], "Completed updating config for client-id 'app-a'.\n"
              "1 client applied the change\n", "... one client applied it")
        t.is_(got[2], "", "... nothing on stderr (not a terminal: no progress bar)")
    t.diag("took %.1f s" % (time.monotonic() - start))
    t.ok(wait_text(agents["app-a"], "acks app->0"), "app-a's agent applied acks=0")
    f = fleet("--entity-type", "clients", "--entity-name", "app-a")
    a = f and f.get("app-a")
    t.ok(a and a["state"] == "up_to_date" and a["reported_version"] == a["current_version"],
         "app-a reports the version that resolves now")


def step_wait_rejected(agents):
    start = time.monotonic()
    got = cli("--alter", "--entity-type", "clients", "--entity-default",
              "--add-config", "session.timeout.ms=7000", "--wait",
              "--timeout-ms", str(PATIENCE * 1000))
    took = time.monotonic() - start
    expect(got, 1, "--wait on <default> session.timeout.ms=7000: exit 1")
    has(got[1], r"^1 client rejected it:$", "... saying one client rejected it")
    has(got[1], r"^  app-c instance [0-9a-f]+, User:\S+ at 127\.0\.0\.1:\d+: .*"
        r"heartbeat\.interval\.ms \(8000\) must be lower than session\.timeout\.ms \(7000\)",
        "... naming app-c, its instance, principal, peer and the reason")
    t.ok("Error: 1 client rejected the change" in got[2], "... and on stderr")
    t.ok(took < PATIENCE * 0.8, "... as soon as it was rejected (%.1f s)" % took)
    t.ok(wait_text(agents["app-c"], "change set rejected"), "app-c's agent rejected it")
    rc, out, err = cli("--describe-fleet")
    has(out, r"^Rejected \(1\):$", "--describe-fleet: a rejected group")
    has(out, r"^  app-c .* rejected, first seen .*; .*must be lower than session\.timeout\.ms",
        "... app-c in it with its reason")
    f, ok = wait_fleet(lambda f: states(f).get("app-a") == "up_to_date"
                       and states(f).get("app-b") == "up_to_date")
    t.ok(ok, "the producers take the new <default> version too (it does not concern them)")
    t.is_(f and f["app-c"]["state"], "rejected", "--json: app-c rejected")


def step_polling(tmp, agents):
    """Agents that poll (no Watch) report from the connection dynconf_new()
    opens, and report the version they were served after each change."""
    agents["poll-slow"] = Agent(tmp, "poll-slow", props=[
        "dynconf.watch=false", "dynconf.refresh.interval.ms=3600000"])
    f, ok = wait_fleet(lambda f: f.get("poll-slow", {}).get("state") == "up_to_date",
                       "--entity-type", "clients", "--entity-name", "poll-slow")
    t.ok(ok, "a polling agent refreshing hourly is in the fleet, up to date, "
         "from its first connection")
    agents["poll-fast"] = Agent(tmp, "poll-fast", props=[
        "dynconf.watch=false", "dynconf.refresh.interval.ms=200"])
    f, ok = wait_fleet(lambda f: f.get("poll-fast", {}).get("state") == "up_to_date",
                       "--entity-type", "clients", "--entity-name", "poll-fast")
    t.ok(ok, "a polling agent refreshing every 200 ms is in the fleet")
    for value in ("11", "12"):
        got = cli("--alter", "--entity-type", "clients", "--entity-name",
                  "poll-fast", "--add-config", "linger.ms=" + value, "--wait",
                  "--timeout-ms", str(PATIENCE * 1000))
        if expect(got, 0, "--wait on the polling agent's linger.ms=%s: exit 0" % value):
            t.is_(got[1].splitlines()[-1], "1 client applied the change",
                  "... one client applied it")
        f = fleet("--entity-type", "clients", "--entity-name", "poll-fast")
        a = f and f.get("poll-fast")
        t.ok(a and a["state"] == "up_to_date"
             and a["reported_version"] == a["current_version"]
             and a["served_version"] == a["current_version"],
             "... and it reports and was served the version that resolves now")
        t.ok(wait_text(agents["poll-fast"], r" linger\.ms \S+->%s " % value),
             "... which its agent applied")


def step_wait_nobody():
    got = cli("--alter", "--entity-type", "clients", "--entity-name",
              "nobody-runs-this", "--add-config", "linger.ms=3", "--wait",
              "--timeout-ms", str(PATIENCE * 1000))
    expect(got, 4, "--wait on a client-id no connected agent runs: exit 4")
    t.ok("no connected client is concerned by the change" in got[2],
         "... saying no connected client is concerned (not 'all applied')")
    t.ok("applied the change" not in got[1], "... and not that any applied it")


def step_pinned_reason(tmp, agents):
    agents["idem"] = Agent(tmp, "idem", props=["enable.idempotence=true"])
    wait_fleet(lambda f: "idem" in f, "--entity-type", "clients",
               "--entity-name", "idem")
    cli("--alter", "--entity-type", "clients", "--entity-name", "idem",
        "--add-config", "acks=1", "--wait", "--timeout-ms", str(PATIENCE * 1000))
    f, ok = wait_fleet(lambda f: "acks" in (f.get("idem", {}).get("reason") or ""),
                       "--entity-type", "clients", "--entity-name", "idem")
    reason = (f or {}).get("idem", {}).get("reason") or ""
    t.ok(ok and "acks=1 requested" in reason,
         "an idempotent producer told acks=1: its reason names the value "
         "requested (%s)" % reason)


def metric(name):
    """The value of an unlabelled gauge on dynconfd's /metrics."""
    with urllib.request.urlopen("http://%s/metrics" % METRICS, timeout=30) as r:
        m = re.search(r"^%s(?:\{\})? (\S+)$" % name, r.read().decode(), re.M)
    return float(m.group(1)) if m else None


def step_wait_timeout(agents):
    """While app-b is stopped, --wait waits on a DescribeFleet parked in
    dynconfd (its gauge says so), not by polling; then times out."""
    agents["app-b"].signal(signal.SIGSTOP)
    try:
        p = subprocess.Popen([CLI, "--bootstrap-server", BS, "--alter",
                              "--entity-type", "clients", "--entity-name", "app-b",
                              "--add-config", "linger.ms=7", "--wait",
                              "--timeout-ms", "8000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        parked = False
        while p.poll() is None and not parked:
            parked = metric("dynconfd_fleet_waits") == 1.0
            time.sleep(0.02)
        t.ok(parked, "--wait parks a DescribeFleet in dynconfd (dynconfd_fleet_waits 1)")
        out, err = p.communicate(timeout=PATIENCE)
        got = (p.returncode, out, err)
        expect(got, 3, "--wait while app-b is stopped: exit 3 at --timeout-ms")
        has(got[1], r"^  app-b instance [0-9a-f]+, User:\S+ at 127\.0\.0\.1:\d+: reports %s, "
            r"needs %s$" % (HEX16, HEX16), "... naming app-b and the versions")
        t.ok("within 8000 ms (--timeout-ms)" in got[2], "... and the time-out on stderr")
        end = time.time() + PATIENCE
        while metric("dynconfd_fleet_waits") != 0.0 and time.time() < end:
            time.sleep(0.02)
        t.is_(metric("dynconfd_fleet_waits"), 0.0, "... and none stays parked after it")
    finally:
        agents["app-b"].signal(signal.SIGCONT)
    f, ok = wait_fleet(lambda f: f.get("app-b", {}).get("state") == "up_to_date",
                       "--entity-type", "clients", "--entity-name", "app-b")
    t.ok(ok, "SIGCONT: app-b catches up")
    t.ok(wait_text(agents["app-b"], "linger.ms app->7"), "... and applied linger.ms=7")


def step_metrics():
    """dynconfd_fleet_clients counts the agents by the states the fleet
    view shows (after the rejected rollout: app-c rejected, app-d gone)."""
    with urllib.request.urlopen("http://%s/metrics" % METRICS, timeout=30) as r:
        text = r.read().decode()
    got = dict(re.findall(r'^dynconfd_fleet_clients\{state="(\w+)"\} (\S+)$',
                          text, re.M))
    f = fleet() or {}
    want = {}
    for c in f.values():
        want[c["state"]] = want.get(c["state"], 0) + 1
    t.is_({k: float(v) for k, v in got.items() if float(v)},
          {k: float(v) for k, v in want.items()},
          "metrics: dynconfd_fleet_clients by state as --describe-fleet counts "
          "(%s)" % want)
    t.is_(float(got.get("rejected", 0)), 1.0, "... one rejected")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def on_alarm(_sig, _frame):
    raise TimeoutError("test exceeded 900 s (a request hung?)")


def run(tmp, d):
    global BS
    BS = "127.0.0.1:%d" % d.port
    t.ok(True, "dynconfd started on %s" % BS)
    agents = {}
    try:
        agents = {
            "app-a": Agent(tmp, "app-a"),
            "app-b": Agent(tmp, "app-b"),
            "app-c": Agent(tmp, "app-c", consumer=True,
                           props=["heartbeat.interval.ms=8000"]),
            "app-d": Agent(tmp, "app-d"),
        }
        f = step_fleet_up(agents)
        if f is None:
            return
        principal = f["app-a"]["principal"]
        t.ok(principal.startswith("User:"), "principal %s" % principal)
        user = principal[len("User:"):]
        step_describe_text(user)
        step_filters(user)
        step_wait_applied(agents)
        step_wait_rejected(agents)
        step_metrics()
        step_wait_timeout(agents)
        step_polling(tmp, agents)
        step_wait_nobody()
        step_pinned_reason(tmp, agents)
        t.ok(d.proc.poll() is None, "dynconfd still running")
    finally:
        for a in agents.values():
            a.stop()
        if t.failed:
            for a in agents.values():
                t.diag("--- %s ---\n%s" % (a.client_id, a.text()[-1500:]))


def main():
    for p in (CLI, AGENT, dcpy.dynconfd_path()):
        if not os.access(p, os.X_OK):
            print("Bail out! %s is not built (set DC_BUILDDIR)" % p)
            return 1
    tmp = tempfile.mkdtemp(prefix="dynconf-test-")
    d = None
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(900)
    global METRICS
    METRICS = "127.0.0.1:%d" % free_port()
    try:
        d = Daemon(tmp, ["--listen", "127.0.0.1:0", "--metrics-listen", METRICS,
                         "--data-dir", os.path.join(tmp, "data")])
        run(tmp, d)
    except Exception:  # any failure is a test failure, never a skip
        t.ok(False, "unexpected exception")
        t.diag(traceback.format_exc())
    finally:
        signal.alarm(0)
        if d:
            t.is_(d.stop(), 0, "SIGTERM: dynconfd exits 0")
            if t.failed:
                d.log_tail()
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
