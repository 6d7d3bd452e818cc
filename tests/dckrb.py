# SPDX-License-Identifier: BSD-2-Clause
"""A throw-away MIT Kerberos realm for the Python TAP tests: a KDC on a free
loopback port, its database, principals, keytabs and ticket caches, all under
one temporary directory. Nothing is written anywhere else: /etc/krb5.conf,
/etc/krb5kdc and any system KDC are never read or touched, because every
program gets KRB5_CONFIG / KRB5_KDC_PROFILE pointing into that directory
(Realm.env).

    from dckrb import Realm
    with Realm(tmp) as realm:
        realm.add_principal("alice/host", "alice-secret")
        realm.add_principal("kafka/localhost")          # random key
        realm.keytab(os.path.join(tmp, "kafka.keytab"), "kafka/localhost")
        r = realm.kinit("alice/host", "alice-secret",
                        ccache=os.path.join(tmp, "alice.cc"))
        subprocess.run([...dynconfd...], env=realm.env)

Principals and keytabs are made with kadmin.local (Debian's
krb5-admin-server; no kadmind is run).

Ticket lifetimes (MIT krb5 1.20): `kinit -l 1s` is accepted and yields a
ticket valid for one second (`-l 0` and `-l 0s` are refused by kinit as a
"Bad lifetime value"); a principal's max_life may also be a few seconds.
Once the TGT has expired, `klist -s` exits 1 and GSSAPI init_sec_context
fails on the client side, before asking the KDC, with minor status
"Ticket expired". Realm.expired_ccache() makes such a cache.

Import it after dcpy (the test has put tests/ on sys.path); it never
writes bytecode.
"""
import atexit
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time

import dcpy

sys.dont_write_bytecode = True

_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


def tool(name):
    """Absolute path of a Kerberos program; /usr/sbin is searched even when
    it is not on PATH (non-root users). Raises if it is not installed."""
    found = shutil.which(name)
    if found is None:
        found = shutil.which(name, path=os.pathsep.join(_SBIN))
    if found is None:
        raise RuntimeError("%s is not installed (Debian packages krb5-kdc, "
                           "krb5-user)" % name)
    return found


def _free_port():
    """A port free on 127.0.0.1 for both TCP and UDP. Plain binds (no
    SO_REUSEADDR) so a port some other KDC listens on is never chosen."""
    for _ in range(50):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                u.bind(("127.0.0.1", port))
            except OSError:
                continue
            finally:
                u.close()
            return port
        finally:
            s.close()
    raise RuntimeError("no port free for both TCP and UDP on 127.0.0.1")


def _die_with_parent():
    """preexec_fn: the KDC gets SIGTERM if the test process dies without
    running its atexit handlers (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_KEEP_OUT = ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5CCNAME", "KRB5_TRACE",
             "KRB5_KTNAME", "KRB5_CLIENT_KTNAME", "KRB5RCACHETYPE",
             "KRB5RCACHENAME", "KRB5RCACHEDIR", "KRB5_LOCALSTATEDIR",
             "LANGUAGE")


def require_gssapi():
    dcpy.require("gssapi", "python3-gssapi")


class Realm:
    """A throw-away MIT Kerberos realm: a KDC on a free loopback port, its
    database, principals and keytabs, all under tmp.

    Attributes: realm, tmp, port, kdc ("127.0.0.1:PORT"), krb5_conf,
    kdc_conf, log_path, default_ccache and env (see below)."""

    def __init__(self, tmp, realm="DYNCONF.TEST", max_life="10h",
                 max_renewable_life="7d", timeout=10):
        self.tmp = os.path.abspath(tmp)
        self.realm = realm
        self.proc = None
        self._kdc_out = None
        os.makedirs(self.tmp, exist_ok=True)
        self.krb5_conf = os.path.join(self.tmp, "krb5.conf")
        self.kdc_conf = os.path.join(self.tmp, "kdc.conf")
        self.log_path = os.path.join(self.tmp, "kdc.log")
        self.pid_path = os.path.join(self.tmp, "krb5kdc.pid")
        self.default_ccache = os.path.join(self.tmp, "ccache-default")
        self.port = _free_port()
        self.kdc = "127.0.0.1:%d" % self.port
        self._write_confs(max_life, max_renewable_life)

        # What every subprocess (dynconfd, kinit, a client) should get: the
        # caller's environment without its KRB5_* variables (KRB5_TRACE,
        # KRB5_KTNAME, ... unset) and with the realm's.
        env = {k: v for k, v in os.environ.items() if k not in _KEEP_OUT}
        env.update(KRB5_CONFIG=self.krb5_conf,
                   KRB5_KDC_PROFILE=self.kdc_conf,
                   KRB5CCNAME="FILE:" + self.default_ccache,
                   # acceptor replay cache (krb5_<euid>.rcache2) under tmp,
                   # not /var/tmp
                   KRB5RCACHEDIR=self.tmp,
                   # untranslated messages, so tests can match them
                   LC_ALL="C")
        self.env = env

        atexit.register(self.stop)
        master = secrets.token_hex(24)
        self._run([tool("kdb5_util"), "-r", realm, "create", "-s",
                   "-P", master], "kdb5_util create")
        self._start_kdc(timeout)

    # ---- configuration ----------------------------------------------------

    def _write_confs(self, max_life, max_renewable_life):
        tmp, realm, port = self.tmp, self.realm, self.port
        with open(self.krb5_conf, "w") as f:
            f.write("""[libdefaults]
    default_realm = %(realm)s
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    ignore_acceptor_hostname = false
    udp_preference_limit = 1
    default_ccache_name = FILE:%(tmp)s/ccache-default

[realms]
    %(realm)s = {
        kdc = 127.0.0.1:%(port)d
    }

[domain_realm]
    localhost = %(realm)s
    127.0.0.1 = %(realm)s
""" % locals())
        with open(self.kdc_conf, "w") as f:
            f.write("""[realms]
    %(realm)s = {
        database_name = %(tmp)s/principal
        key_stash_file = %(tmp)s/stash
        acl_file = %(tmp)s/kadm5.acl
        kdc_ports = 127.0.0.1:%(port)d
        kdc_tcp_ports = 127.0.0.1:%(port)d
        max_life = %(max_life)s
        max_renewable_life = %(max_renewable_life)s
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }

[logging]
    kdc = FILE:%(tmp)s/kdc.log
    admin_server = FILE:%(tmp)s/kadmin.log
    default = FILE:%(tmp)s/krb5.log
""" % locals())
        with open(os.path.join(tmp, "kadm5.acl"), "w") as f:
            f.write("*/admin@%s *\n" % realm)

    def _run(self, argv, what, input=None):
        r = subprocess.run(argv, env=self.env, input=input, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=None if input is not None else subprocess.DEVNULL,
                           timeout=60)
        if r.returncode != 0:
            raise RuntimeError("%s failed (exit %d):\n%s"
                               % (what, r.returncode, r.stdout))
        return r

    # ---- the KDC ------------------------------------------------------------

    def _start_kdc(self, timeout):
        self._kdc_out = open(os.path.join(self.tmp, "krb5kdc.out"), "ab")
        self.proc = subprocess.Popen(
            [tool("krb5kdc"), "-n", "-r", self.realm, "-P", self.pid_path],
            env=self.env, stdin=subprocess.DEVNULL, stdout=self._kdc_out,
            stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.stop()
                raise RuntimeError("krb5kdc exited (%s) before answering:\n%s"
                                   % (rc, self.log_tail()))
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         timeout=0.5).close()
                return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("krb5kdc did not accept TCP connections on "
                                   "%s within %s s:\n%s"
                                   % (self.kdc, timeout, self.log_tail()))
            time.sleep(0.02)

    def stop(self):
        """Stops the KDC (SIGTERM, then SIGKILL after 5 s). Idempotent; also
        run at exit and by `with`."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._kdc_out is not None:
            self._kdc_out.close()
            self._kdc_out = None
        atexit.unregister(self.stop)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def log_tail(self, n=20):
        """The last n lines of the KDC's log and of its stdout/stderr."""
        out = []
        for path in (self.log_path, os.path.join(self.tmp, "krb5kdc.out")):
            try:
                with open(path, errors="replace") as f:
                    lines = f.read().splitlines()[-n:]
            except OSError:
                continue
            if lines:
                out.append("--- %s ---" % os.path.basename(path))
                out.extend(lines)
        return "\n".join(out)

    # ---- principals and keytabs ----------------------------------------------

    def principal(self, name):
        """name with @REALM appended unless it has a realm already."""
        return name if "@" in name else "%s@%s" % (name, self.realm)

    def _kadmin(self, query, done):
        """kadmin.local -q query; it exits 0 even when the query fails, so
        success is the line that says `done`."""
        r = self._run([tool("kadmin.local"), "-r", self.realm, "-q", query],
                      "kadmin.local -q %r" % query)
        if done not in r.stdout:
            raise RuntimeError("kadmin.local -q %r failed:\n%s"
                               % (query, r.stdout.strip()))
        return r

    def add_principal(self, name, password=None, max_life=None,
                      max_renewable_life=None):
        """addprinc: with password (-pw) or a random key (-randkey) when
        password is None. max_life / max_renewable_life in seconds
        (-maxlife / -maxrenewlife). Raises RuntimeError with kadmin's
        message on failure (e.g. "Principal or policy already exists")."""
        if password is not None and ('"' in password or "\\" in password):
            raise ValueError("add_principal: quote or backslash in password")
        q = "addprinc"
        if max_life is not None:
            q += ' -maxlife "%d seconds"' % max_life
        if max_renewable_life is not None:
            q += ' -maxrenewlife "%d seconds"' % max_renewable_life
        q += ' -pw "%s"' % password if password is not None else " -randkey"
        q += " " + self.principal(name)
        self._kadmin(q, 'Principal "%s" created' % self.principal(name))
        return self.principal(name)

    def keytab(self, path, *names, randkey=False):
        """ktadd -k path [-norandkey] names...: appends the principals' keys
        to the keytab at path. By default the current keys are exported
        unchanged (so a password keeps working); randkey=True first gives the
        principal new random keys (kvno + 1), as plain ktadd does."""
        if not names:
            raise ValueError("keytab(): no principal named")
        for n in names:
            self._kadmin("ktadd -k %s %s%s" % (os.path.abspath(path),
                                               "" if randkey else "-norandkey ",
                                               self.principal(n)),
                         "added to keytab")
        return path

    # ---- clients --------------------------------------------------------------

    def kinit(self, principal, password=None, keytab=None, ccache=None,
              lifetime=None, args=()):
        """Runs kinit with self.env and returns the CompletedProcess (text
        stdout/stderr), never raising on refusal. password goes to its stdin;
        keytab means `-k -t keytab`; ccache (a path or TYPE:residual) is
        `-c`, else the realm's default cache; lifetime is `-l` ("1s", "5m")."""
        argv = [tool("kinit")]
        if lifetime is not None:
            argv += ["-l", str(lifetime)]
        if ccache is not None:
            argv += ["-c", ccache]
        if keytab is not None:
            argv += ["-k", "-t", keytab]
        argv += list(args) + [principal]
        return subprocess.run(
            argv, env=self.env, text=True, timeout=30,
            input=(password + "\n") if password is not None else "",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def klist(self, ccache=None, args=()):
        """klist [args] [-c ccache] with self.env; the CompletedProcess."""
        argv = [tool("klist")] + list(args)
        if ccache is not None:
            argv += ["-c", ccache]
        return subprocess.run(argv, env=self.env, text=True, timeout=30,
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def expired_ccache(self, principal, password_or_keytab, path, timeout=10):
        """A ticket cache at path holding a TGT for principal that has
        expired: `kinit -l 1s` (password, or keytab when password_or_keytab
        names an existing file), then polls `klist -s` until it exits 1.
        Returns path; raises if kinit fails or the ticket is still valid
        after timeout seconds."""
        secret = password_or_keytab
        is_kt = isinstance(secret, os.PathLike) or (
            isinstance(secret, str) and os.path.isfile(secret))
        r = self.kinit(principal, password=None if is_kt else secret,
                       keytab=os.fspath(secret) if is_kt else None,
                       ccache=path, lifetime="1s")
        if r.returncode != 0:
            raise RuntimeError("kinit -l 1s %s failed (exit %d): %s"
                               % (principal, r.returncode,
                                  (r.stderr + r.stdout).strip()))
        deadline = time.monotonic() + timeout
        while self.klist(path, ["-s"]).returncode == 0:
            if time.monotonic() > deadline:
                raise RuntimeError("ticket in %s still valid after %s s"
                                   % (path, timeout))
            time.sleep(0.05)
        return path

    def export(self, ccache=None):
        """For Kerberos used inside this Python process (python3-gssapi,
        kafka-python's GSSAPI): puts the realm's variables into os.environ
        (KRB5CCNAME=ccache if given) and removes the caller's other KRB5_*
        ones. MIT krb5 reads them each time a context is created."""
        for k in _KEEP_OUT:
            os.environ.pop(k, None)
        for k in ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5CCNAME",
                  "KRB5RCACHEDIR"):
            os.environ[k] = self.env[k]
        if ccache is not None:
            os.environ["KRB5CCNAME"] = ccache
