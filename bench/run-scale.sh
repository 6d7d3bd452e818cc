#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command scale benchmark of dynconfd's config APIs.
#
#   bench/run-scale.sh [BUILDDIR]     (or: make bench-scale, in the build dir)
#
# 1. For each store size (1 k, 100 k and 1 M client entities by default):
#    writes the SQLite store directly (python3's sqlite3, one transaction)
#    into a data dir whose schema dynconfd itself created, starts dynconfd
#    on it (start-up time to its 'listening on' line, RSS after the load),
#    then bench/scale sends one request at a time:
#      IncrementalAlterConfigs setting heartbeat.interval.ms on one client
#        (runs the heartbeat/session check across entities),
#      ... setting session.timeout.ms on <default> (the check reaches every
#        client and user),
#      ... setting linger.ms on one client (no cross-entity check),
#    each persisted (includes one fsync: the store runs synchronous=FULL)
#    and with validate_only=true (no write: the check alone), and
#    DescribeConfigs v1 of one client; then one alter of 833 clients x 2
#    keys (4,998 store writes, just within max.request.writes), persisted
#    and validate-only. Prints p50/p99 per size and the ratios to the
#    first size measured in the same run (flat is the goal), and the
#    store commit's cost per row.
#    Then bench/loadgen (16 connections x 32 in flight, SCALE_LOAD_SECONDS
#    each) sends DescribeConfigs v1 of that client over and over ("same":
#    each connection's last answer is sent again) and of 1000 clients in
#    turn ("each new": no two requests in a row alike, every answer made
#    anew); req/s per size and the ratio to the first size.
# 1b. The same two loads on a fresh store of the first size, then again
#    while bench/watch_fanout --hold keeps SCALE_WATCHERS (10,000) Watch
#    requests parked on the same dynconfd.
# 2. Memory under a DescribeConfigs amplification attack: a fresh dynconfd
#    with one client whose every schema key holds a large valid value; 40
#    connections send pipelined DescribeConfigs v3 requests (synonyms,
#    documentation) naming that client as often as fits, and never read;
#    twice: ~1 MiB requests (far over the per-request resource limit) and
#    ~8 KB ones (about 1000 resources, within the limits). Prints dynconfd's idle RSS, its peak (VmHWM) and the
#    ratio. The attack stops at an RSS cap (3 GB), when it has settled
#    (every socket blocked, dynconfd idle) or after 20 s; dynconfd also
#    runs under an address-space limit of three times the cap, and every
#    process is killed on exit.
#
# Populated store: <default> (acks, heartbeat 3000, session 45000); N
# clients "client-NNNNNNN" with 1-3 keys, 5 % overriding
# heartbeat.interval.ms and 5 % session.timeout.ms; min(3000, N/100) user
# entities "userNNNNN" (session or heartbeat, linger) and as many "U/C"
# entities. Heartbeats stay below 3000 and sessions above 10000 everywhere,
# so every measured alter passes the check.
#
# Environment: SCALE_SIZES ("1000 100000 1000000"), SCALE_ALTERS (300 per
# series), SCALE_DESCRIBES (1000), SCALE_SERIES_SECONDS (8: a series stops
# at whichever limit comes first and says so), SCALE_ATTACK_CONNECTIONS
# (40), SCALE_ATTACK_SECONDS (20), SCALE_RSS_CAP_MB (3072),
# SCALE_ATTACK_VALUE_BYTES (1024: longest list/string value tried),
# SCALE_LOAD_SECONDS (3), SCALE_WATCHERS (10000; 0 leaves step 1b out).
# About 2 minutes on two cores. Exits non-zero only when something failed
# outright (a server died, set-up failed, a series got errors); never on
# speed or memory.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
SIZES=${SCALE_SIZES:-"1000 100000 1000000"}
ALTERS=${SCALE_ALTERS:-300}
DESCRIBES=${SCALE_DESCRIBES:-1000}
SERIES_SECS=${SCALE_SERIES_SECONDS:-8}
ATTACK_CONNS=${SCALE_ATTACK_CONNECTIONS:-40}
ATTACK_SECS=${SCALE_ATTACK_SECONDS:-20}
RSS_CAP_MB=${SCALE_RSS_CAP_MB:-3072}
VALUE_BYTES=${SCALE_ATTACK_VALUE_BYTES:-1024}
CLIENT=client-0000000 # has its own heartbeat.interval.ms in every size

LOAD_SECS=${SCALE_LOAD_SECONDS:-3}
WATCHERS=${SCALE_WATCHERS:-10000}
for bin in dynconfd bench/scale bench/loadgen bench/watch_fanout; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd bench/scale bench/loadgen bench/watch_fanout)" >&2
    exit 2
  fi
done
if ! python3 -c 'import sqlite3' 2>/dev/null; then
  echo "bench: python3 with its sqlite3 module is needed to populate the store" >&2
  exit 2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-scalebench.XXXXXX")
DPID=
. "$(dirname "$0")/lib.sh"
# stop_pid PID: TERM, then KILL if it is still busy after 5 s (a server
# in the middle of a huge response does not get back to its loop soon).
stop_pid() {
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2>/dev/null || return 0
  i=0
  while kill -0 "$1" 2>/dev/null && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  stop_pid "$DPID"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# mem_kb PID FIELD: VmRSS or VmHWM in kB.
mem_kb() { sed -n "s/^$2:[[:space:]]*\\([0-9]*\\) kB/\\1/p" "/proc/$1/status" 2>/dev/null; }
mb() { awk -v k="$1" 'BEGIN { if (k == "" || k == "-") print "-"; else printf "%.1f", k / 1024 }'; }
label() {
  case $1 in
  *000000) echo "$(($1 / 1000000))M" ;;
  *000) echo "$(($1 / 1000))k" ;;
  *) echo "$1" ;;
  esac
}

# start_dynconfd DATADIR [AS_LIMIT_KB]: starts dynconfd on a free loopback
# port; sets DPID, PORT and START_MS (process start to 'listening on',
# polled every 10 ms). Waits up to 300 s: loading a big store takes time.
start_dynconfd() {
  out=$1.out
  : >"$out"
  t0=$(now_ms)
  if [ -n "${2:-}" ]; then
    # shellcheck disable=SC3045 # dash and bash both have ulimit -v
    (ulimit -v "$2" ||
      echo "bench: no ulimit -v here; only the RSS cap guards the attack" >&2
    exec "$BUILDDIR/dynconfd" --listen 127.0.0.1:0 --data-dir "$1" \
      >"$out" 2>"$1.err") &
  else
    # shellcheck disable=SC2086 # DYNCONFD_EXTRA is a word list
    "$BUILDDIR/dynconfd" --listen 127.0.0.1:0 --data-dir "$1" \
      ${DYNCONFD_EXTRA:-} >"$out" 2>"$1.err" &
  fi
  DPID=$!
  PORT=
  while [ -z "$PORT" ]; do
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\) .*/\1/p' "$out" | head -n 1)
    [ -n "$PORT" ] && break
    if ! kill -0 "$DPID" 2>/dev/null || [ $(($(now_ms) - t0)) -gt 300000 ]; then
      echo "bench: dynconfd did not start on $1:" >&2
      cat "$1.err" >&2
      exit 1
    fi
    sleep 0.01
  done
  START_MS=$(($(now_ms) - t0))
}

# Writes configs rows straight into a store whose schema dynconfd made;
# only the configs table is touched (it is what dynconfd loads).
cat >"$TMP/populate.py" <<'EOF'
import sqlite3, sys

db, n = sys.argv[1], int(sys.argv[2])
OTHER = [("linger.ms", lambda i: str(i % 100)),
         ("acks", lambda i: ("all", "1", "0")[i % 3]),
         ("compression.type", lambda i: ("lz4", "zstd", "gzip", "snappy")[i % 4]),
         ("batch.size", lambda i: str(16384 + i % 65536)),
         ("request.timeout.ms", lambda i: str(20000 + i % 10000))]
users = min(3000, n // 100)

def rows():
    yield (9, "<default>", "acks", "all")
    yield (9, "<default>", "heartbeat.interval.ms", "3000")
    yield (9, "<default>", "session.timeout.ms", "45000")
    for i in range(n):
        kv = {}
        if i % 20 == 0:
            kv["heartbeat.interval.ms"] = str(500 + i % 2500)
        elif i % 20 == 10:
            kv["session.timeout.ms"] = str(10000 + i % 50000)
        for j in range(1 + i % 3 - len(kv)):
            k, f = OTHER[(i // 3 + j) % len(OTHER)]
            kv[k] = f(i)
        name = "client-%07d" % i
        for k, v in kv.items():
            yield (9, name, k, v)
    for u in range(users):
        un = "user%05d" % u
        if u % 2 == 0:
            yield (10, un, "session.timeout.ms", str(20000 + u))
        else:
            yield (10, un, "heartbeat.interval.ms", str(1000 + u % 2000))
        yield (10, un, "linger.ms", "10")
        uc = "%s/client-%07d" % (un, (u * 7919) % n)
        if u % 3 == 0:
            yield (10, uc, "heartbeat.interval.ms", str(1500 + u % 1000))
        else:
            yield (10, uc, "linger.ms", "20")

con = sqlite3.connect(db, isolation_level=None)
con.execute("PRAGMA synchronous=OFF")  # a throw-away file; dynconfd syncs its own writes
con.execute("PRAGMA cache_size=-262144")
con.execute("BEGIN")
con.executemany("INSERT INTO configs (resource_type, entity, key, value) "
                "VALUES (?, ?, ?, ?)", rows())
con.execute("COMMIT")
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
nrows = con.execute("SELECT count(*) FROM configs").fetchone()[0]
con.close()
print("users=%d uc=%d rows=%d" % (users, users, nrows))
EOF

# The empty store layout, made by dynconfd itself so the schema is always
# the one the code under test expects.
start_dynconfd "$TMP/template"
stop_pid "$DPID"
DPID=

SRC=$(sed -n 's/^  \$ \(.*\)\/configure.*/\1/p' "$BUILDDIR/config.log" 2>/dev/null | head -n 1)
REV="source ${SRC:-unknown}"
if [ -n "$SRC" ] && git -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
  REV="$REV at $(git -C "$SRC" rev-parse --short HEAD)"
  [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ] &&
    REV="$REV plus uncommitted changes"
fi
echo "dynconf scale benchmark: $("$BUILDDIR/dynconfd" --version) built in $BUILDDIR ($REV)"
FSTYPE=$(stat -f -c %T "$TMP" 2>/dev/null || echo '?')
echo "machine: $(nproc 2>/dev/null || echo '?') cores, load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'); data dirs in $TMP ($FSTYPE)"
echo

# load NAME ARGS...: bench/loadgen DescribeConfigs v1 against the running
# dynconfd for LOAD_SECS; its RESULT line goes to $TMP/load.NAME.
load() {
  name=$1
  shift
  echo "\$ bench/loadgen --target 127.0.0.1:$PORT --duration $LOAD_SECS $*"
  if ! "$BUILDDIR/bench/loadgen" --target "127.0.0.1:$PORT" --quiet \
    --duration "$LOAD_SECS" "$@" >"$TMP/load.$name" 2>"$TMP/load.$name.err" ||
    ! grep -q ' errors=0 ' "$TMP/load.$name"; then
    echo "bench: the load $name failed:" >&2
    cat "$TMP/load.$name" "$TMP/load.$name.err" >&2
    FAILED=1
  fi
  echo "    $(tr ' ' '\n' <"$TMP/load.$name" | grep -E '^(rps|p99_us)=' | paste -sd' ')"
}
# Both loads of step 1 against the dynconfd running; NAME tags the files.
loads() {
  load "$1.same" --client "$CLIENT"
  load "$1.new" --client client- --clients 1000
}

FAILED=0
BASE=
for n in $SIZES; do
  [ -z "$BASE" ] && BASE=$n
  L=$(label "$n")
  D=$TMP/data-$n
  echo "== $L client entities =="
  cp -R "$TMP/template" "$D"
  t0=$(now_ms)
  python3 "$TMP/populate.py" "$D/dynconf.db" "$n" >"$TMP/pop.$n" ||
    { echo "bench: populating $D failed" >&2; exit 1; }
  POP_MS=$(($(now_ms) - t0))
  start_dynconfd "$D"
  RSS=$(mem_kb "$DPID" VmRSS)
  HWM=$(mem_kb "$DPID" VmHWM)
  echo "$n $(sed 's/[a-z]*=//g' "$TMP/pop.$n") $POP_MS $START_MS $RSS $HWM" >"$TMP/size.$n"
  echo "populated in $POP_MS ms ($(cat "$TMP/pop.$n")); dynconfd (pid $DPID) up in" \
    "$START_MS ms, RSS $(mb "$RSS") MB (peak $(mb "$HWM") MB)"
  CMD="bench/scale latency --target 127.0.0.1:$PORT --client $CLIENT --alters $ALTERS --describes $DESCRIBES --seconds $SERIES_SECS"
  echo "\$ $CMD"
  # shellcheck disable=SC2086 # CMD is a word list
  if ! "$BUILDDIR"/$CMD >"$TMP/lat.$n" 2>"$TMP/lat.$n.err"; then
    echo "bench: bench/scale latency failed at $L:" >&2
    FAILED=1
  fi
  grep -v '^RESULT ' "$TMP/lat.$n" | sed 's/^/    /' || true
  sed 's/^/    stderr: /' "$TMP/lat.$n.err"
  if grep '^RESULT ' "$TMP/lat.$n" | grep -qv ' errors=0 '; then
    FAILED=1
  fi
  loads "$n"
  if ! kill -0 "$DPID" 2>/dev/null; then
    echo "bench: dynconfd died at $L:" >&2
    tail -n 20 "$D.err" >&2
    FAILED=1
  fi
  stop_pid "$DPID"
  DPID=
  rm -rf "$D"
  echo
done

# 1b. The loads again with WATCHERS watches parked (a store of BASE).
if [ "$WATCHERS" -gt 0 ]; then
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  echo "== DescribeConfigs with $WATCHERS parked watchers ($(label "$BASE") client entities) =="
  D=$TMP/data-watch
  cp -R "$TMP/template" "$D"
  python3 "$TMP/populate.py" "$D/dynconf.db" "$BASE" >/dev/null ||
    { echo "bench: populating $D failed" >&2; exit 1; }
  DYNCONFD_EXTRA="--metrics-listen 127.0.0.1:0"
  start_dynconfd "$D"
  DYNCONFD_EXTRA=
  METRICS=$(sed -n 's/^metrics on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$D.out" | head -n 1)
  loads nowatch # the same store and server before any watch parks
  hold_watches "127.0.0.1:$PORT" "$METRICS" "$WATCHERS"
  echo "    $(cat "$TMP/hold.out")"
  loads watch
  exec 3>&-
  wait "$HPID" || { echo "bench: watch_fanout --hold failed:" >&2; cat "$TMP/hold.out" "$TMP/hold.err" >&2; FAILED=1; }
  grep '^HELD ' "$TMP/hold.out" | sed 's/^/    /'
  stop_pid "$DPID"
  DPID=
  rm -rf "$D"
  echo
fi

# Two shapes: ~1 MiB requests naming x as often as fit (far over the
# per-request resource limit), and ~8 KB requests naming it ~1000 times
# (within the limits: every answer is built up to max.response.bytes).
ATTACK_SHAPES="big:1048576 small:8000"
for shape in $ATTACK_SHAPES; do
  name=${shape%%:*}
  bytes=${shape#*:}
  echo "== DescribeConfigs amplification ($name requests, $bytes bytes) =="
  A=$TMP/attack-data-$name
  start_dynconfd "$A" $((RSS_CAP_MB * 3 * 1024))
  CMD1="bench/scale attack-seed --target 127.0.0.1:$PORT --client x --value-bytes $VALUE_BYTES"
  echo "\$ $CMD1"
  # shellcheck disable=SC2086
  if "$BUILDDIR"/$CMD1 >"$TMP/seed" 2>"$TMP/seed.err"; then
    grep -v '^RESULT ' "$TMP/seed" | sed 's/^/    /'
    sed 's/^/    stderr: /' "$TMP/seed.err"
    CMD2="bench/scale attack --target 127.0.0.1:$PORT --client x --pid $DPID --connections $ATTACK_CONNS --seconds $ATTACK_SECS --rss-cap-mb $RSS_CAP_MB --request-bytes $bytes"
    echo "\$ $CMD2"
    # shellcheck disable=SC2086
    "$BUILDDIR"/$CMD2 >"$TMP/attack.$name" 2>"$TMP/attack.err" || FAILED=1
    grep -v '^RESULT ' "$TMP/attack.$name" | sed 's/^/    /' || true
    sed 's/^/    stderr: /' "$TMP/attack.err"
    echo "$CMD2" >"$TMP/cmd.$name"
  else
    echo "bench: seeding the attack entity failed:" >&2
    cat "$TMP/seed" "$TMP/seed.err" >&2
    FAILED=1
  fi
  kill -0 "$DPID" 2>/dev/null || echo "    dynconfd is no longer running"
  grep -i 'memory\|closing' "$A.err" | sed 's/.*\(WARN\|ERR\) //; s/from [0-9.:]*/from PEER/' |
    sort | uniq -c | sort -rn | head -n 3 | sed 's/^/    dynconfd log: /' || true
  stop_pid "$DPID"
  DPID=
  echo
done

# ---- summary -----------------------------------------------------------------
# kv FILE KEY [FILTER]: a value from the RESULT line matching FILTER.
kv() {
  grep '^RESULT ' "$1" 2>/dev/null | grep -- "${3:-}" | head -n 1 | tr ' ' '\n' |
    sed -n "s/^$2=//p"
}
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "" || b == "" || b + 0 <= 0) { print "-"; exit }
    r = a / b; printf (r >= 100 ? "%.0f" : "%.2f"), r }'
}

echo "================================== scale =================================="
echo "machine: $(nproc 2>/dev/null || echo '?') cores, load average now" \
  "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'); $REV"
echo
echo "1. Store size: populate (python3 sqlite3, one transaction), dynconfd start-up"
echo "   (process start to 'listening on'), RSS after loading"
printf '%-6s %9s %7s %10s %11s %11s %9s %10s\n' size clients 'U + U/C' 'rows' \
  'populate ms' 'startup ms' 'RSS MB' 'peak MB'
for n in $SIZES; do
  [ -f "$TMP/size.$n" ] || continue
  # size.N: clients users uc rows populate_ms start_ms rss_kb hwm_kb
  # shellcheck disable=SC2046 # a word list
  set -- $(cat "$TMP/size.$n")
  printf '%-6s %9s %7s %10s %11s %11s %9s %10s\n' "$(label "$1")" "$1" \
    "$(($2 + $3))" "$4" "$5" "$6" "$(mb "$7")" "$(mb "$8")"
done
echo
echo "2. Latency, one request at a time (microseconds; x$(label "$BASE") = this size / the"
echo "   $(label "$BASE") size in this run). alter = IncrementalAlterConfigs of 'client'"
echo "   ($CLIENT) or <default>; commit = persisted (one fsync, data dir on $FSTYPE);"
echo "   validate = validate_only=true (no write: the check alone). n = samples;"
echo "   '*' = the series hit its ${SERIES_SECS} s cap first (p99 of few samples ~ max)."
printf '%-35s %-8s %-5s %5s %9s %9s %8s %8s\n' operation mode size n 'p50' 'p99' \
  "p50 x$(label "$BASE")" "p99 x$(label "$BASE")"
for s in "client_hb commit" "client_hb validate" "default_st commit" \
  "default_st validate" "client_linger commit" "client_linger validate" \
  "describe read" "bulk_rows commit" "bulk_rows validate"; do
  # shellcheck disable=SC2086 # a word list
  set -- $s
  case $1 in
  client_hb) op="alter client heartbeat.interval.ms" ;;
  default_st) op="alter <default> session.timeout.ms" ;;
  client_linger) op="alter client linger.ms" ;;
  describe) op="describe client (v1, synonyms)" ;;
  bulk_rows) op="alter 833 clients x 2 keys" ;;
  esac
  f="series=$1 mode=$2 "
  b50=$(kv "$TMP/lat.$BASE" p50_us "$f")
  b99=$(kv "$TMP/lat.$BASE" p99_us "$f")
  for n in $SIZES; do
    p50=$(kv "$TMP/lat.$n" p50_us "$f")
    p99=$(kv "$TMP/lat.$n" p99_us "$f")
    cnt=$(kv "$TMP/lat.$n" n "$f")
    [ "$(kv "$TMP/lat.$n" capped "$f")" = 1 ] && cnt="$cnt*"
    printf '%-35s %-8s %-5s %5s %9s %9s %8s %8s\n' "$op" "$2" "$(label "$n")" \
      "${cnt:--}" "${p50:--}" "${p99:--}" "$(ratio "$p50" "$b50")" \
      "$(ratio "$p99" "$b99")"
    op=
  done
done
# The commit's cost per store row: the bulk alter's commit beyond its
# validate-only run, less the same for the one-key linger.ms alter (3
# rows, and the fsync both pay), over the rows in between.
echo "   store commit per row (bulk commit - bulk validate - (linger commit -"
echo "   linger validate)) / (4998 - 3 rows), on the p50s:"
for n in $SIZES; do
  f() { kv "$TMP/lat.$n" p50_us "series=$1 mode=$2 "; }
  echo "     $(label "$n"): $(awk -v bc="$(f bulk_rows commit)" \
    -v bv="$(f bulk_rows validate)" -v lc="$(f client_linger commit)" \
    -v lv="$(f client_linger validate)" 'BEGIN {
    if (bc == "" || bv == "" || lc == "" || lv == "") { print "-"; exit }
    printf "%.2f us a row (commit of the 4998 rows %.1f ms)",
      (bc - bv - (lc - lv)) / 4995, (bc - bv) / 1000 }')"
done
echo "   command per size: bench/scale latency --target 127.0.0.1:PORT --client $CLIENT"
echo "   --alters $ALTERS --describes $DESCRIBES --seconds $SERIES_SECS"
echo
echo "2b. DescribeConfigs v1 under load (bench/loadgen, 16 x 32 in flight, $LOAD_SECS s):"
echo "   same = one client over and over (the connection's last answer sent"
echo "   again); each new = 1000 clients in turn (every answer made anew)"
printf '%-28s %12s %8s %12s %8s\n' store 'same req/s' "x$(label "$BASE")" \
  'new req/s' "x$(label "$BASE")"
bs=$(kv "$TMP/load.$BASE.same" rps)
bn=$(kv "$TMP/load.$BASE.new" rps)
for n in $SIZES nowatch watch; do
  [ -f "$TMP/load.$n.same" ] || continue
  if [ "$n" = watch ]; then
    what="$(label "$BASE") + $WATCHERS parked watches"
  elif [ "$n" = nowatch ]; then
    what="$(label "$BASE"), a fresh store (*)"
  else
    what="$(label "$n") client entities"
  fi
  a=$(kv "$TMP/load.$n.same" rps)
  b=$(kv "$TMP/load.$n.new" rps)
  printf '%-28s %12s %8s %12s %8s\n' "$what" "${a:--}" "$(ratio "$a" "$bs")" \
    "${b:--}" "$(ratio "$b" "$bn")"
done
if [ -f "$TMP/load.watch.same" ]; then
  echo "   (*) the server of step 1b before its watches parked: the latency"
  echo "   series of step 1 left $CLIENT with two more keys (a longer answer),"
  echo "   so 1b compares with this row: with watches / without, same"
  echo "   $(ratio "$(kv "$TMP/load.watch.same" rps)" "$(kv "$TMP/load.nowatch.same" rps)")," \
    "each new $(ratio "$(kv "$TMP/load.watch.new" rps)" "$(kv "$TMP/load.nowatch.new" rps)")"
fi
echo
echo "3. DescribeConfigs v3 amplification: $ATTACK_CONNS connections pipelining"
echo "   requests naming client x (all schema keys set large), never reading"
printf '%-6s %-12s %-16s %-8s %-11s %-9s %-7s %s\n' shape 'idle RSS MB' \
  'peak (VmHWM) MB' ratio 'RSS end MB' 'requests' seconds 'stopped because'
rb=$(kv "$TMP/seed" result_bytes)
for shape in $ATTACK_SHAPES; do
  name=${shape%%:*}
  f=$TMP/attack.$name
  idle=$(kv "$f" idle_kb)
  hwm=$(kv "$f" hwm_kb)
  if [ -z "$idle" ] || [ -z "$hwm" ]; then
    echo "$name   (no result)"
    continue
  fi
  printf '%-6s %-12s %-16s %-8s %-11s %-9s %-7s %s\n' "$name" "$(mb "$idle")" \
    "$(mb "$hwm")" "$(ratio "$hwm" "$idle")" "$(mb "$(kv "$f" rss_kb)")" \
    "$(kv "$f" frames)" "$(kv "$f" seconds)" \
    "$(case $(kv "$f" reason) in
      cap) echo "RSS cap (${RSS_CAP_MB} MB)" ;;
      settled) echo "settled (sockets blocked, server idle 1 s)" ;;
      time) echo "time limit" ;;
      closed) echo "dynconfd closed every connection" ;;
      *) echo "dynconfd exited" ;;
    esac)"
  reps=$(kv "$f" reps)
  echo "       one request names x $reps times and asks for" \
    "$(awk -v a="$rb" -v b="$reps" 'BEGIN { printf "%.0f", a * b / 1048576 }') MiB" \
    "of response ($rb bytes per result)"
  [ "$(kv "$f" reason)" = cap ] &&
    echo "       stopped at the ${RSS_CAP_MB} MB RSS cap (SCALE_RSS_CAP_MB): unbounded growth was cut short."
  echo "       command: $(cat "$TMP/cmd.$name" 2>/dev/null)"
done
echo "   seed: $CMD1"

if [ "$FAILED" -ne 0 ]; then
  echo "bench: FAILED (see above)" >&2
  exit 1
fi
exit 0
