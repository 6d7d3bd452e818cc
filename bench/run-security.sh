#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of what security costs in dynconfd.
#
#   bench/run-security.sh [BUILDDIR]   (or: make bench-security)
#
# Makes throw-away certificates (tests/gen_certs.sh) and a SASL user
# (dynconfd --add-user), starts one dynconfd with a PLAINTEXT, an SSL, a
# SASL_PLAINTEXT and a SASL_SSL listener (plus, unless BENCH_MTLS=0, a
# second dynconfd whose SSL listener requires client certificates), then
# drives it with bench/loadgen and prints two tables, every row next to the
# PLAINTEXT listener measured in the same run:
#   1. DescribeConfigs v1 throughput over each listener (connections are
#      set up and authenticated first; the load is the steady state):
#      req/s, p50/p99 and the server's CPU per request, with ratios.
#   2. Connection set-up, one connection after another (TCP [+ TLS
#      handshake] [+ SASL] + one ApiVersions round trip, then close):
#      connections/s, p50/p99 set-up time and the CPU each side spends per
#      connection, with ratios.
# Every row runs BENCH_ROUNDS times, the order reversed each round; the
# table combines the rounds (rates over the summed time, mean p50/p99).
#
# Environment: BENCH_SECONDS (4, per throughput run), BENCH_CONNECTIONS
# (16), BENCH_PIPELINE (32), BENCH_SETUP_CONNS (1000, per set-up run),
# BENCH_SETUP_SECONDS (3, a set-up run stops at whichever comes first),
# BENCH_ROUNDS (2), BENCH_SCRAM_ITERATIONS (8192, dynconfd --add-user's
# default), BENCH_MTLS (1: include a client-certificate row),
# BENCH_KERBEROS (1 when MIT's krb5kdc, kdb5_util and kadmin.local are
# installed: a throw-away realm from tests/dckrb.py and a GSSAPI set-up
# row, the client's tickets from a keytab). The default run takes about
# 90 s on two cores.
# Exits non-zero only when a run fails outright (an error, nothing
# completed, a server died, set-up of the bench failed); never on speed.
set -eu

SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=$(cd "${1:-.}" && pwd)
SECS=${BENCH_SECONDS:-4}
CONNS=${BENCH_CONNECTIONS:-16}
PIPE=${BENCH_PIPELINE:-32}
SETUP_N=${BENCH_SETUP_CONNS:-1000}
SETUP_SECS=${BENCH_SETUP_SECONDS:-3}
ROUNDS=${BENCH_ROUNDS:-2}
ITER=${BENCH_SCRAM_ITERATIONS:-8192}
MTLS=${BENCH_MTLS:-1}
KRB=${BENCH_KERBEROS:-}
if [ -z "$KRB" ]; then
  KRB=1
  for t in krb5kdc kdb5_util kadmin.local; do
    command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || KRB=0
  done
fi

for bin in dynconfd dynconf-configs bench/loadgen; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd dynconf-configs bench/loadgen)" >&2
    exit 2
  fi
done
if ! command -v openssl >/dev/null 2>&1; then
  echo "bench: openssl (the command) is needed to make test certificates" >&2
  exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-secbench.XXXXXX")
DPID=
MPID=
KPID=
. "$(dirname "$0")/lib.sh"
stop_pid() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop_pid "$MPID"
  stop_pid "$DPID"
  stop_pid "$KPID"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail_setup() {
  echo "bench: $1" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && cat "$2" >&2
  exit 1
}

# ---- certificates, user, servers ---------------------------------------------
CERTS=$TMP/certs
sh "$SRCDIR/tests/gen_certs.sh" "$CERTS" >"$TMP/certs.log" 2>&1 ||
  fail_setup "making certificates failed:" "$TMP/certs.log"

# A throw-away user on a throw-away, loopback-only daemon; loadgen gets the
# password on its command line.
USER_NAME=bench
PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
echo "$PASSWORD" | "$BUILDDIR/dynconfd" --credentials "$TMP/credentials" \
  --add-user "$USER_NAME" --iterations "$ITER" >"$TMP/adduser.log" 2>&1 ||
  fail_setup "dynconfd --add-user failed:" "$TMP/adduser.log"

# A throw-away Kerberos realm (KDC on loopback) for the GSSAPI row:
# dynconfd's keytab for kafka/127.0.0.1, the client's for "bench".
KRBARGS=
if [ "$KRB" = 1 ]; then
  mkdir "$TMP/krb"
  cat >"$TMP/realm.py" <<'PYEOF'
import signal, sys
sys.path.insert(0, sys.argv[1])
sys.dont_write_bytecode = True
import dckrb
tmp = sys.argv[2]
realm = dckrb.Realm(tmp)
realm.add_principal("kafka/127.0.0.1")
realm.keytab(tmp + "/kafka.keytab", "kafka/127.0.0.1")
realm.add_principal("bench")
realm.keytab(tmp + "/bench.keytab", "bench")
with open(tmp + "/krb.env", "w") as f:
    for k in ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5RCACHEDIR"):
        f.write("%s=%s\nexport %s\n" % (k, realm.env[k], k))
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
open(tmp + "/ready", "w").close()
while True:
    signal.pause()
PYEOF
  /usr/bin/python3 -B "$TMP/realm.py" "$SRCDIR/tests" "$TMP/krb" \
    >"$TMP/krb.log" 2>&1 &
  KPID=$!
  i=0
  while [ ! -f "$TMP/krb/ready" ] && [ $i -lt 300 ] && kill -0 "$KPID" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
  done
  [ -f "$TMP/krb/ready" ] || fail_setup "the Kerberos realm did not start:" "$TMP/krb.log"
  # shellcheck disable=SC1091
  . "$TMP/krb/krb.env"
  KRBARGS="--sasl-kerberos-keytab $TMP/krb/kafka.keytab --sasl-enabled-mechanisms SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,GSSAPI"
fi

TLSFILES="--ssl-cert $CERTS/server.pem --ssl-key $CERTS/server.key --ssl-ca $CERTS/ca.pem"
mkdir "$TMP/data" "$TMP/data-mtls"
# shellcheck disable=SC2086 # TLSFILES is a word list
"$BUILDDIR/dynconfd" --data-dir "$TMP/data" \
  --listeners "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0" \
  $TLSFILES --credentials "$TMP/credentials" $KRBARGS \
  >"$TMP/dynconfd.out" 2>"$TMP/dynconfd.err" &
DPID=$!
if [ "$MTLS" = 1 ]; then
  # shellcheck disable=SC2086
  "$BUILDDIR/dynconfd" --data-dir "$TMP/data-mtls" \
    --listeners "SSL://127.0.0.1:0" $TLSFILES --ssl-client-auth required \
    >"$TMP/mtls.out" 2>"$TMP/mtls.err" &
  MPID=$!
fi

for l in PLAINTEXT SSL SASL_PLAINTEXT SASL_SSL; do
  a=$(await_listening "$TMP/dynconfd.out" "$DPID" "$l") ||
    fail_setup "dynconfd did not report its $l listener:" "$TMP/dynconfd.err"
  eval "ADDR_$l=\$a"
done
ADDR_MTLS=
if [ "$MTLS" = 1 ]; then
  ADDR_MTLS=$(await_listening "$TMP/mtls.out" "$MPID" SSL) ||
    fail_setup "the client-certificate dynconfd did not start:" "$TMP/mtls.err"
fi

# A real override, so each DescribeConfigs answer carries a config entry.
"$BUILDDIR/dynconf-configs" --bootstrap-server "$ADDR_PLAINTEXT" \
  --entity-type clients --entity-name bench-client \
  --alter --add-config session.timeout.ms=30000 >"$TMP/seed.out" 2>&1 ||
  fail_setup "seeding the bench-client config failed:" "$TMP/seed.out"

CORES=$(nproc 2>/dev/null || echo '?')
echo "dynconf security benchmark: dynconfd (pid $DPID) listeners PLAINTEXT $ADDR_PLAINTEXT," \
  "SSL $ADDR_SSL, SASL_PLAINTEXT $ADDR_SASL_PLAINTEXT, SASL_SSL $ADDR_SASL_SSL"
[ "$MTLS" = 1 ] && echo "client-certificate dynconfd (pid $MPID, --ssl-client-auth required): SSL $ADDR_MTLS"
echo "certificates: RSA 2048 from tests/gen_certs.sh; SASL user '$USER_NAME' with $ITER SCRAM iterations"
echo "machine: $CORES core(s) shared by dynconfd (one thread) and the load generator;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo

FAILED=0
TICKS=$(getconf CLK_TCK 2>/dev/null || echo 100)
# cpu_ns PID: a process's CPU time so far in nanoseconds: the sum of its
# threads' schedstat run times (exact), else utime + stime (clock ticks).
cpu_ns() {
  cat /proc/"$1"/task/*/schedstat 2>/dev/null |
    awk -v hz="$TICKS" -v stat="/proc/$1/stat" '
      { ns += $1; n++ }
      END {
        if (n) { printf "%.0f\n", ns; exit }
        if ((getline line < stat) > 0) {
          sub(/.*\) /, "", line); split(line, f, " ")
          printf "%.0f\n", (f[12] + f[13]) * 1e9 / hz
        }
      }'
}

# run NAME SERVER-PID LOADGEN-ARGS...: one loadgen run. Appends its RESULT
# line, plus srv_cpu_s=(the server's CPU seconds meanwhile), to
# $TMP/NAME.results (one line per round).
run() {
  name=$1
  spid=$2
  shift 2
  echo "--- $name (round $ROUND of $ROUNDS)"
  t0=$(cpu_ns "$spid")
  set +e
  "$BUILDDIR/bench/loadgen" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  rc=$?
  set -e
  t1=$(cpu_ns "$spid")
  scpu=$(awk -v a="${t0:-0}" -v b="${t1:-0}" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
  grep -v '^RESULT ' "$TMP/$name.out" | sed 's/^/    /' || true
  echo "    the server used $scpu s of CPU during this run"
  if [ -s "$TMP/$name.err" ]; then
    head -n 10 "$TMP/$name.err" | sed 's/^/    stderr: /'
  fi
  res=$(grep '^RESULT ' "$TMP/$name.out" | tail -n 1 || true)
  if [ "$rc" -ne 0 ] || [ -z "$res" ]; then
    echo "bench: run $name failed (loadgen exit $rc)" >&2
    FAILED=1
  fi
  [ -n "$res" ] && echo "$res srv_cpu_s=$scpu" >>"$TMP/$name.results"
  return 0
}

SASL_CRED="--sasl-user $USER_NAME --sasl-password $PASSWORD"
TLSCA="--tls-ca $CERTS/ca.pem"
LOAD="--api describe --version 1 --duration $SECS --connections $CONNS --pipeline $PIPE"
SETUP="--setup $SETUP_N --duration $SETUP_SECS"
MTLS_ROW=
[ "$MTLS" = 1 ] && MTLS_ROW=setup_mtls
LOAD_ROWS="load_plain load_ssl load_sasl load_sasl_ssl"
KRB_ROW=
[ "$KRB" = 1 ] && KRB_ROW=setup_gssapi
SETUP_ROWS="setup_plain setup_ssl $MTLS_ROW setup_scram256 setup_scram512 setup_plainmech $KRB_ROW setup_sasl_ssl"

# row NAME: runs one row of a table once.
# shellcheck disable=SC2086 # the option strings are word lists
row() {
  case $1 in
  load_plain) run "$1" "$DPID" --target "$ADDR_PLAINTEXT" $LOAD ;;
  load_ssl) run "$1" "$DPID" --target "$ADDR_SSL" $LOAD $TLSCA ;;
  load_sasl)
    run "$1" "$DPID" --target "$ADDR_SASL_PLAINTEXT" $LOAD \
      --sasl-mechanism SCRAM-SHA-256 $SASL_CRED ;;
  load_sasl_ssl)
    run "$1" "$DPID" --target "$ADDR_SASL_SSL" $LOAD $TLSCA \
      --sasl-mechanism SCRAM-SHA-256 $SASL_CRED ;;
  setup_plain) run "$1" "$DPID" --target "$ADDR_PLAINTEXT" $SETUP ;;
  setup_ssl) run "$1" "$DPID" --target "$ADDR_SSL" $SETUP $TLSCA ;;
  setup_mtls)
    run "$1" "$MPID" --target "$ADDR_MTLS" $SETUP $TLSCA \
      --tls-cert "$CERTS/alice.pem" --tls-key "$CERTS/alice.key" ;;
  setup_scram256)
    run "$1" "$DPID" --target "$ADDR_SASL_PLAINTEXT" $SETUP \
      --sasl-mechanism SCRAM-SHA-256 $SASL_CRED ;;
  setup_scram512)
    run "$1" "$DPID" --target "$ADDR_SASL_PLAINTEXT" $SETUP \
      --sasl-mechanism SCRAM-SHA-512 $SASL_CRED ;;
  setup_plainmech)
    run "$1" "$DPID" --target "$ADDR_SASL_PLAINTEXT" $SETUP \
      --sasl-mechanism PLAIN $SASL_CRED ;;
  setup_sasl_ssl)
    run "$1" "$DPID" --target "$ADDR_SASL_SSL" $SETUP $TLSCA \
      --sasl-mechanism SCRAM-SHA-256 $SASL_CRED ;;
  setup_gssapi)
    run "$1" "$DPID" --target "$ADDR_SASL_PLAINTEXT" $SETUP \
      --sasl-mechanism GSSAPI --sasl-user bench \
      --sasl-password "$TMP/krb/bench.keytab" ;;
  esac
}

reverse() { # reverse WORDS...: the words in reverse order
  out=
  for w in "$@"; do out="$w $out"; done
  echo "$out"
}

# Rounds alternate the order (A B C, then C B A, ...), so a machine that
# gets busier or quieter during the run shifts every row alike instead of
# favouring the rows that ran first.
ROUND=1
while [ "$ROUND" -le "$ROUNDS" ]; do
  if [ $((ROUND % 2)) = 1 ]; then
    # shellcheck disable=SC2086
    for r in $LOAD_ROWS $SETUP_ROWS; do row "$r"; done
  else
    # shellcheck disable=SC2086
    for r in $(reverse $LOAD_ROWS $SETUP_ROWS); do row "$r"; done
  fi
  ROUND=$((ROUND + 1))
done

for p in "$DPID" $MPID; do
  if ! kill -0 "$p" 2>/dev/null; then
    echo "bench: a dynconfd (pid $p) died during the benchmark" >&2
    tail -n 20 "$TMP/dynconfd.err" "$TMP/mtls.err" 2>/dev/null >&2 || true
    FAILED=1
  fi
done

# ---- tables ------------------------------------------------------------------
# stats NAME: one line of combined values over a row's rounds:
#   n secs count rate p50 p99 errors srv_us lg_us tls(version,cipher)
# count = requests or connections completed; rate = count / secs; p50/p99
# = the mean of the rounds' values; srv_us/lg_us = server/loadgen CPU
# microseconds per request or connection; "-" when the row never ran.
stats() {
  awk '
    function kv(k,   i, p) {
      for (i = 2; i <= NF; i++) { p = index($i, "="); if (substr($i, 1, p - 1) == k) return substr($i, p + 1) }
      return ""
    }
    {
      n++; secs += kv("seconds"); p50 += kv("p50_us"); p99 += kv("p99_us")
      err += kv("errors") + kv("conn_failures"); scpu += kv("srv_cpu_s"); lcpu += kv("cpu_s")
      c = kv("mode") == "setup" ? kv("connections") : kv("requests"); cnt += c
      if (kv("tls_version") != "" && kv("tls_version") != "-") tls = kv("tls_version") "," kv("tls_cipher")
    }
    END {
      if (!n) { print "0 - - - - - - - - -"; exit }
      rate = secs > 0 ? cnt / secs : 0 # (no ">" inside printf: redirection)
      printf "%d %.3f %d %.1f %.1f %.1f %d %.2f %.1f %s\n", n, secs, cnt,
        rate, p50 / n, p99 / n, err, (cnt ? 1e6 * scpu / cnt : 0),
        (cnt ? 1e6 * lcpu / cnt : 0), (tls != "" ? tls : "-")
    }' "$TMP/$1.results" 2>/dev/null || echo "0 - - - - - - - - -"
}

# ratio A B: A / B with two decimals (three below 0.1), "-" when undefined.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "-" || b == "-" || b + 0 <= 0) { print "-"; exit }
    r = a / b; printf (r < 0.1 ? "%.3f" : "%.2f"), r }'
}

# Every row must have run every round without errors and completed something.
for r in $LOAD_ROWS $SETUP_ROWS; do
  # shellcheck disable=SC2046
  set -- $(stats "$r")
  if [ "$1" != "$ROUNDS" ] || [ "$3" = - ] || [ "$3" -eq 0 ] || [ "$7" != 0 ]; then
    FAILED=1
  fi
done

echo
echo "=============================== security cost ==============================="
echo "Each ratio = this row / the PLAINTEXT row of its table, both measured in this"
echo "run ($ROUNDS rounds, order alternating); higher req/s or conn/s ratio = closer to"
echo "free, higher p99 or CPU ratio = more expensive."
echo
echo "1. DescribeConfigs v1 throughput, $CONNS connections x $PIPE in flight, ${SECS} s x $ROUNDS per listener"
echo "   (connections set up and authenticated before the load: the steady state)"
printf '%-15s %-14s %9s %6s %8s %8s %6s %9s %6s %6s\n' listener auth \
  'req/s' ratio 'p50 us' 'p99 us' ratio 'srv us/r' ratio errors
# shellcheck disable=SC2046
set -- $(stats load_plain)
B_RATE=$4 B_P99=$6 B_SRV=$8
load_row() { # load_row LISTENER AUTH NAME
  l=$1 a=$2
  # shellcheck disable=SC2046
  set -- $(stats "$3")
  if [ "$1" = 0 ]; then
    printf '%-15s %-14s (no result)\n' "$l" "$a"
    return 0
  fi
  printf '%-15s %-14s %9.0f %6s %8s %8s %6s %9s %6s %6s\n' "$l" "$a" "$4" \
    "$(ratio "$4" "$B_RATE")" "$5" "$6" "$(ratio "$6" "$B_P99")" "$8" \
    "$(ratio "$8" "$B_SRV")" "$7"
}
load_row PLAINTEXT - load_plain
load_row SSL TLS load_ssl
load_row SASL_PLAINTEXT SCRAM-SHA-256 load_sasl
load_row SASL_SSL SCRAM-SHA-256 load_sasl_ssl
# shellcheck disable=SC2046
set -- $(stats setup_ssl)
echo "   TLS: ${10:-?} (negotiated); srv us/r = dynconfd CPU per request" | tr ',' ' '

echo
echo "2. Connection set-up, one connection at a time: TCP [+ TLS] [+ SASL] +"
echo "   ApiVersions v3, then close (up to $SETUP_N connections or ${SETUP_SECS} s x $ROUNDS per"
echo "   row; every TLS handshake is a full one, no session resumption)"
printf '%-15s %-18s %8s %6s %8s %8s %6s %9s %6s %8s %6s\n' listener auth \
  'conn/s' ratio 'p50 us' 'p99 us' ratio 'srv us/c' ratio 'lg us/c' errors
# shellcheck disable=SC2046
set -- $(stats setup_plain)
B_RATE=$4 B_P99=$6 B_SRV=$8
setup_row() { # setup_row LISTENER AUTH NAME
  l=$1 a=$2
  # shellcheck disable=SC2046
  set -- $(stats "$3")
  if [ "$1" = 0 ]; then
    printf '%-15s %-18s (no result)\n' "$l" "$a"
    return 0
  fi
  printf '%-15s %-18s %8.1f %6s %8s %8s %6s %9.1f %6s %8.1f %6s\n' "$l" "$a" \
    "$4" "$(ratio "$4" "$B_RATE")" "$5" "$6" "$(ratio "$6" "$B_P99")" "$8" \
    "$(ratio "$8" "$B_SRV")" "$9" "$7"
}
setup_row PLAINTEXT - setup_plain
setup_row SSL TLS setup_ssl
[ "$MTLS" = 1 ] && setup_row SSL 'TLS + client cert' setup_mtls
setup_row SASL_PLAINTEXT SCRAM-SHA-256 setup_scram256
setup_row SASL_PLAINTEXT SCRAM-SHA-512 setup_scram512
setup_row SASL_PLAINTEXT PLAIN setup_plainmech
[ "$KRB" = 1 ] && setup_row SASL_PLAINTEXT GSSAPI setup_gssapi
setup_row SASL_SSL SCRAM-SHA-256 setup_sasl_ssl
echo "   srv us/c and lg us/c: CPU per connection in dynconfd and in the client"
echo "   (loadgen). SCRAM's PBKDF2 ($ITER iterations) runs in the client at every"
echo "   log-in, PLAIN's in the server; RSA 2048 certificates."
[ "$MTLS" = 1 ] && echo "   'TLS + client cert' is served by a second dynconfd with --ssl-client-auth required."
[ "$KRB" = 1 ] && echo "   GSSAPI: Kerberos V5 with mutual authentication; the client's service ticket"
[ "$KRB" = 1 ] && echo "   is cached after the first log-in, the server decrypts one and records it in"
[ "$KRB" = 1 ] && echo "   its replay cache (KRB5RCACHEDIR, here on the bench's temporary directory)."

if [ "$FAILED" -ne 0 ]; then
  echo "bench: FAILED (a run had errors or completed nothing; see above)" >&2
  exit 1
fi
exit 0
