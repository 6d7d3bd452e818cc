#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command replay of every hostile-client probe against dynconfd at
# its documented default limits, with one table as the result.
#
#   bench/run-attacks.sh [BUILDDIR]   (or: make bench-attacks)
#
# Every step starts a fresh dynconfd (loopback; default settings; a
# PLAINTEXT listener and the metrics endpoint, plus SASL_PLAINTEXT and SSL
# listeners for steps 4 and 6) and runs its attack with a probe beside it
# (bench/probe.h: one PLAINTEXT connection, set up first, sending a
# DescribeConfigs every 5 ms, and dynconfd's RSS sampled with it). The
# clients are bench/fleet (steps 1-3, 7) and bench/attack (the others).
#   0. idle: the probe alone for ATTACK_IDLE_SECONDS: its idle p99, what
#      every row's ratio divides by.
#   1. ATTACK_N ClientReports on one connection whose instance ids collide
#      in unseeded FNV-1a (bench/fnv_collide.h); 1b: ATTACK_EXTRA more once
#      the fleet is full (100,000 agents).
#   2. On that fleet: DescribeFleet v1 pages of one client after random
#      cursors, one at a time (at least ATTACK_PAGES); 2': rounds of
#      ATTACK_PIPELINE of them sent at once; 2b: DescribeFleet v0 of the
#      whole fleet, one after another. Each goes on for ATTACK_SUSTAIN
#      seconds, so the probe sees the attack sustained.
#   3. On that fleet: ATTACK_WAITS connections (one unauthenticated
#      principal) each park a DescribeFleet (default caps: 8 per
#      principal, 64 in all), then one report wakes the parked ones (the
#      bench's reads of /metrics, confirming the parked count, are left
#      out of the probe's figures).
#   4. Identity hijack: user alice (SCRAM-SHA-256, SASL_PLAINTEXT) reports
#      instance id X; user mallory reports X ATTACK_HIJACKS times; then a
#      DescribeFleet shows whether alice's entry is as she reported it.
#   5. ATTACK_ENVELOPES forged Envelopes (ApiKey 58) from an
#      unauthenticated connection, each wrapping an alter in the name of
#      User:admin (every other one with a made-up replica signature);
#      then a DescribeConfigs shows whether anything changed.
#   6. Log-in floods, ATTACK_LOGINS attempts each, ATTACK_CONCURRENCY at
#      a time (one thread each; an attempt is done when dynconfd answers
#      it, however late): (a) SASL PLAIN with a wrong password for alice
#      (made with the default 8192 SCRAM iterations: dynconfd runs PBKDF2
#      for each); (b) full TLS handshakes on the SSL listener
#      (certificates from tests/gen_certs.sh, RSA 2048); (c) SCRAM-SHA-256
#      with a made-up proof (ATTACK_SCRAM=0 leaves it out). Each row gives
#      the attempts per second and dynconfd's CPU meanwhile.
#   7. ATTACK_N reports with every field at its longest from one
#      unauthenticated connection: dynconfd's RSS before, at its peak,
#      and dynconfd_fleet_bytes after, against fleet.max.bytes.
#   8. The metrics endpoint's flood of partial requests
#      (tests/httpflood.py, as bench/run-http.sh runs it: 127.0.0.2 opens
#      ATTACK_HTTP_ROUNDS x ATTACK_HTTP_CONNECTIONS connections,
#      ATTACK_HTTP_IDLE of each round left idle): /healthz p99 during it
#      against its own quiet baseline, and a 1 MiB header's answer; the
#      probe's window starts after httpflood's quiet baseline.
#      8b: ATTACK_SCRAPES GET /metrics, one after another, on the
#      100,000-agent fleet of steps 1-3 (run right after step 3).
# The table (markdown) gives for each attack the number of probes that
# ran during it and their p50/p99, the p99 against the idle p99 (a slowed
# probe runs fewer times), dynconfd's RSS at the start and at its
# peak (VmHWM when the attack raised it, else the highest 5 ms sample)
# next to the documented bound where there is one (fleet.max.bytes 64 MiB,
# max.buffered.bytes 256 MiB), and the attack's outcome; then the goal,
# probe p99 <= 10 ms during every attack, met or not per row.
#
# Environment: ATTACK_N (100000), ATTACK_EXTRA (100000), ATTACK_PAGES
# (50), ATTACK_PIPELINE (100), ATTACK_SUSTAIN (1), ATTACK_WAITS (100),
# ATTACK_SCRAPES (20), ATTACK_HIJACKS (100000),
# ATTACK_ENVELOPES (100000), ATTACK_LOGINS (3000), ATTACK_CONCURRENCY
# (256), ATTACK_SCRAM (1), ATTACK_IDLE_SECONDS (5),
# ATTACK_HTTP_CONNECTIONS (2000), ATTACK_HTTP_ROUNDS (5), ATTACK_HTTP_IDLE
# (50), ATTACK_CLIENT_IDS (100: the client-ids steps 1 and 7's reports
# cycle over; 0 = each its own), ATTACK_STEPS (all; else a list such as
# "0 8b": 1b goes with 1, 2' and 2b with 2, 6 means 6a-6c, and 2, 3 and
# 8b run step 1 first for its fleet). About 40 s on two cores
# (certificates included); the log-in floods take longer where dynconfd
# answers them late. Needs openssl (the command) and python3. Exits non-zero only when something
# failed outright (dynconfd died or did not start, a step could not run
# or its answers could not be read); never on speed.
set -eu

SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=$(cd "${1:-.}" && pwd)
N=${ATTACK_N:-100000}
EXTRA=${ATTACK_EXTRA:-100000}
PAGES=${ATTACK_PAGES:-50}
PIPELINE=${ATTACK_PIPELINE:-100}
SUSTAIN=${ATTACK_SUSTAIN:-1}
WAITS=${ATTACK_WAITS:-100}
SCRAPES=${ATTACK_SCRAPES:-20}
HIJACKS=${ATTACK_HIJACKS:-100000}
ENVELOPES=${ATTACK_ENVELOPES:-100000}
LOGINS=${ATTACK_LOGINS:-3000}
CONC=${ATTACK_CONCURRENCY:-256}
SCRAM=${ATTACK_SCRAM:-1}
IDLE_S=${ATTACK_IDLE_SECONDS:-5}
HTTP_CONNS=${ATTACK_HTTP_CONNECTIONS:-2000}
HTTP_ROUNDS=${ATTACK_HTTP_ROUNDS:-5}
HTTP_IDLE=${ATTACK_HTTP_IDLE:-50}
CLIENT_IDS=${ATTACK_CLIENT_IDS:-100}
STEPS=$(echo "${ATTACK_STEPS:-all}" | tr ',' ' ')
HTTP_QUIET=3 # httpflood.py's quiet baseline, seconds

for bin in dynconfd bench/fleet bench/attack; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd bench/fleet bench/attack)" >&2
    exit 2
  fi
done
for cmd in openssl python3; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "bench: $cmd (the command) is needed" >&2
    exit 2
  fi
done
# shellcheck disable=SC3045 # dash and bash have ulimit -n
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# want STEP: whether ATTACK_STEPS selects STEP (6a-6c: also by "6").
want() {
  [ "$STEPS" = all ] && return 0
  for w_ in $STEPS; do
    [ "$w_" = "$1" ] && return 0
    case $1 in 6?) [ "$w_" = 6 ] && return 0 ;; esac
  done
  return 1
}
# The fleet of step 1 is the ground of 2, 3 and 8b.
FLEET_RUN=0
if want 1 || want 2 || want 3 || want 8b; then FLEET_RUN=1; fi

START=$(date +%s)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-attacks.XXXXXX")
RES=$TMP/results
: >"$RES"
DPID=
FAILED=0
. "$(dirname "$0")/lib.sh"

fail() {
  echo "bench: $1" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
  FAILED=1
}

# ---- certificates and users (once) -------------------------------------------
sh "$SRCDIR/tests/gen_certs.sh" "$TMP/certs" >"$TMP/certs.log" 2>&1 || {
  fail "making certificates failed:" "$TMP/certs.log"
  exit 1
}
# Throw-away users on throw-away loopback daemons, with dynconfd's default
# SCRAM iterations (8192); the clients get the passwords on their
# command lines.
PW_ALICE=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
PW_MALLORY=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
for u in alice mallory; do
  if [ $u = alice ]; then pw=$PW_ALICE; else pw=$PW_MALLORY; fi
  echo "$pw" | "$BUILDDIR/dynconfd" --credentials "$TMP/credentials" \
    --add-user $u >"$TMP/adduser.log" 2>&1 || {
    fail "dynconfd --add-user $u failed:" "$TMP/adduser.log"
    exit 1
  }
done

# start_dynconfd [secure]: a fresh dynconfd with its defaults; sets DPID,
# ADDR (PLAINTEXT), METRICS and, when secure, SASL and SSL. 1 when it
# does not start.
start_dynconfd() {
  rm -rf "$TMP/data"
  mkdir -p "$TMP/data"
  : >"$TMP/out"
  if [ "${1:-}" = secure ]; then
    "$BUILDDIR/dynconfd" --data-dir "$TMP/data" \
      --listeners "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0" \
      --ssl-cert "$TMP/certs/server.pem" --ssl-key "$TMP/certs/server.key" \
      --ssl-ca "$TMP/certs/ca.pem" --credentials "$TMP/credentials" \
      --metrics-listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
  else
    "$BUILDDIR/dynconfd" --data-dir "$TMP/data" --listen 127.0.0.1:0 \
      --metrics-listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
  fi
  DPID=$!
  ADDR='' METRICS='' SASL='' SSL=''
  i=0
  while [ -z "$ADDR" ] || [ -z "$METRICS" ] ||
    { [ "${1:-}" = secure ] && { [ -z "$SASL" ] || [ -z "$SSL" ]; }; }; do
    ADDR=$(sed -n 's/^listening on \(127\.0\.0\.1:[0-9]*\) (PLAINTEXT .*/\1/p' "$TMP/out" | head -n 1)
    SASL=$(sed -n 's/^listening on \(127\.0\.0\.1:[0-9]*\) (SASL_PLAINTEXT .*/\1/p' "$TMP/out" | head -n 1)
    SSL=$(sed -n 's/^listening on \(127\.0\.0\.1:[0-9]*\) (SSL .*/\1/p' "$TMP/out" | head -n 1)
    METRICS=$(sed -n 's/^metrics on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$TMP/out" | head -n 1)
    if ! kill -0 "$DPID" 2>/dev/null || [ $i -gt 1000 ]; then
      fail "dynconfd did not start:" "$TMP/err"
      stop_dynconfd
      return 1
    fi
    sleep 0.01
    i=$((i + 1))
  done
}

# run STEP CMD ARGS...: one client run against the dynconfd running; its
# RESULT and OUTCOME lines go to $RES, the rest is shown indented. A
# client that fails, or a dynconfd that died meanwhile, fails the step.
run() {
  step=$1
  shift
  set +e
  "$@" >"$TMP/step.out" 2>"$TMP/step.err"
  rc=$?
  set -e
  grep -v '^RESULT \|^OUTCOME ' "$TMP/step.out" | sed 's/^/    /' || true
  sed 's/^/    stderr: /' "$TMP/step.err" | head -n 10
  grep '^RESULT \|^OUTCOME ' "$TMP/step.out" >>"$RES" || true
  if [ "$rc" -ne 0 ]; then
    fail "step $step: $(basename "$1") $2 exited $rc"
  fi
  if ! kill -0 "$DPID" 2>/dev/null; then
    fail "step $step: dynconfd died:" "$TMP/err"
    DPID=
    return 1
  fi
  return "$rc"
}

# val PHASE KEY: a figure of a RESULT line ("" when none).
val() {
  awk -v p="$1" -v k="$2" '$1 == "RESULT" && $2 == "phase=" p {
    for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) v = substr($i, length(k) + 2)
  } END { print v }' "$RES"
}

# metric NAME: an unlabelled value from dynconfd's /metrics.
metric() {
  python3 -c '
import sys, urllib.request
for line in urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=10):
    w = line.decode().split()
    if len(w) == 2 and w[0] == sys.argv[2]:
        print(w[1])' "$METRICS" "$1"
}

FLEET=$BUILDDIR/bench/fleet
ATTACK=$BUILDDIR/bench/attack
echo "dynconfd $("$BUILDDIR/dynconfd" --version 2>/dev/null | cut -d' ' -f2) ($BUILDDIR)," \
  "$(nproc) cores shared by dynconfd and the clients, load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"

echo "== 0. idle, and 1-3: the fleet view"
if { want 0 || [ $FLEET_RUN = 1 ]; } && start_dynconfd; then
  P="--target $ADDR --pid $DPID"
  # Each step needs the one before; a failed one is reported by run.
  # shellcheck disable=SC2086,SC2015 # P: words
  { ! want 0 || run 0 "$ATTACK" idle $P --seconds "$IDLE_S"; } &&
    { [ $FLEET_RUN = 0 ] || run 1 "$FLEET" reports $P --n "$N" \
      --extra "$EXTRA" --colliding --client-ids "$CLIENT_IDS"; } &&
    { ! want 2 || run 2 "$FLEET" pages $P --requests "$PAGES" \
      --pipeline "$PIPELINE" --seconds "$SUSTAIN"; } &&
    { ! want 3 || run 3 "$FLEET" waits $P --metrics "$METRICS" \
      --waits "$WAITS" --max 100; } &&
    { ! want 8b || run 8b "$ATTACK" run --name metrics_scrape $P -- python3 -c '
import sys, time, urllib.request
took = []
for i in range(int(sys.argv[2])):
    t0 = time.monotonic()
    urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=60).read()
    took.append(time.monotonic() - t0)
took.sort()
print("SCRAPES %d scrapes one after another, each answered in p50 %.1f ms, max %.1f ms" % (len(took),
      took[len(took) // 2] * 1e3, took[-1] * 1e3))' "$METRICS" "$SCRAPES"; } ||
    true
  s=$(sed -n 's/^SCRAPES \(.*\)$/\1/p' "$TMP/step.out")
  [ -n "$s" ] && want 8b && echo "OUTCOME metrics_scrape $s" >>"$RES"
  stop_dynconfd
fi

echo "== 4. identity hijack"
if want 4 && start_dynconfd secure; then
  run 4 "$ATTACK" hijack --target "$ADDR" --pid "$DPID" --sasl "$SASL" \
    --user-a alice --password-a "$PW_ALICE" --user-b mallory \
    --password-b "$PW_MALLORY" --n "$HIJACKS" || true
  stop_dynconfd
fi

echo "== 5. forged Envelopes"
if want 5 && start_dynconfd; then
  run 5 "$ATTACK" envelope --target "$ADDR" --pid "$DPID" --n "$ENVELOPES" ||
    true
  stop_dynconfd
fi

# login STEP NAME MODE ARGS...: a log-in flood on a fresh dynconfd.
login() {
  step=$1 name=$2 mode=$3
  shift 3
  want "$step" || return 0
  echo "== $step. log-in flood: $name"
  if start_dynconfd secure; then
    if [ "$mode" = tls ]; then
      target=$SSL
    else
      target=$SASL
    fi
    run "$step" "$ATTACK" login --name "$name" --target "$ADDR" --pid "$DPID" \
      --attack "$target" --mode "$mode" --n "$LOGINS" \
      --concurrency "$CONC" "$@" || true
    stop_dynconfd
  fi
}
login 6a login_plain plain --user alice --password "wrong-$PW_ALICE"
login 6b login_tls tls --tls-ca "$TMP/certs/ca.pem"
if [ "$SCRAM" = 1 ]; then
  login 6c login_scram scram --user alice --password "wrong-$PW_ALICE"
fi

echo "== 7. maximal reports"
if want 7 && start_dynconfd; then
  if run 7 "$FLEET" reports --target "$ADDR" --pid "$DPID" --n "$N" --fat \
    --client-ids "$CLIENT_IDS"; then
    b=$(metric dynconfd_fleet_bytes || true)
    [ -n "$b" ] && echo "RESULT phase=fat_fleet bytes=$b" >>"$RES"
  fi
  stop_dynconfd
fi

echo "== 8. the metrics endpoint: partial requests"
if want 8 && start_dynconfd; then
  run 8 "$ATTACK" run --name http --target "$ADDR" --pid "$DPID" \
    --after-ms $((HTTP_QUIET * 1000 + 300)) -- \
    python3 "$SRCDIR/tests/httpflood.py" "$METRICS" \
    --connections "$HTTP_CONNS" --rounds "$HTTP_ROUNDS" --idle "$HTTP_IDLE" \
    --quiet-seconds "$HTTP_QUIET" || true
  # /healthz p99 quiet and during the flood, lost polls, the big header.
  q99=$(awk '/^quiet \(baseline\)/ { print $(NF - 1) }' "$TMP/step.out")
  f99=$(awk '/^flood \(/ { print $(NF - 1) }' "$TMP/step.out")
  lost=$(awk '/^flood \(/ { print $(NF - 3) }' "$TMP/step.out")
  big=$(sed -n 's/^1 MiB header: \(.*\) after \(.*\) s$/\1 in \2 s/p' "$TMP/step.out")
  if [ -n "$f99" ]; then
    echo "OUTCOME http /healthz p99 $f99 ms (quiet $q99 ms), $lost lost; 1 MiB header: $big" >>"$RES"
  fi
  stop_dynconfd
fi

# ---- the outcomes bench/fleet's figures make -----------------------------------
outcome() { # outcome PHASE TEXT (only when PHASE has figures)
  [ -n "$(val "$1" wall_s)" ] && echo "OUTCOME $1 $2" >>"$RES"
  return 0
}
outcome reports_colliding "dynconfd CPU $(val reports_colliding cpu_s) s, none refused"
outcome reports_colliding_full "dynconfd CPU $(val reports_colliding_full cpu_s) s, $(val reports_colliding_full cpu_ms_each) ms a report"
outcome page_of_1 "$(val page_of_1 count) pages, each answered in p50 $(val page_latency p50_ms) ms, p99 $(val page_latency p99_ms) ms"
if [ -n "$(val pages_rounds rounds)" ]; then
  outcome pages_at_once "$(val pages_rounds rounds) rounds, the last page answered after p50 $(val pages_rounds p50_ms) ms, max $(val pages_rounds max_ms) ms"
else
  outcome pages_at_once "the last page answered after $(val pages_at_once wall_s) s"
fi
if [ -n "$(val v0_latency n)" ]; then
  outcome v0_whole_fleet "$(val v0_latency n) times $(val v0_memory error), answered in p50 $(val v0_latency p50_ms) ms, max $(val v0_latency max_ms) ms"
else
  outcome v0_whole_fleet "$(val v0_memory error) in $(val v0_whole_fleet wall_s) s"
fi
outcome waits_all "$(val waits parked) parked, $(val waits refused) refused; one report answered them in $(val waits_answered wall_s) s"
fb=$(val fat_fleet bytes)
[ -n "$fb" ] && fb=$(awk -v b="$fb" 'BEGIN { printf "; dynconfd_fleet_bytes %.1f MiB", b / 1048576 }')
outcome reports_fat "RSS $(val fat_memory rss0_mb) -> $(val fat_memory rss_mb) MB at the end$fb"

# ---- the table -------------------------------------------------------------------
END=$(date +%s)
echo
echo "One run, $(date -u +%Y-%m-%d), $((END - START)) s; probe: DescribeConfigs every 5 ms on a PLAINTEXT connection"
echo
FLEETB="fleet.max.bytes 64 MiB"
BUFB="max.buffered.bytes 256 MiB"
# commas N: 100000 -> 100,000
commas() {
  echo "$1" | awk '{ s = $0; while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s); print s }'
}
cN=$(commas "$N")
{
  echo "0|idle: the probe alone, ${IDLE_S} s|idle|-"
  echo "1|$cN ClientReports, FNV-colliding instance ids|reports_colliding|$FLEETB"
  echo "1b|$(commas "$EXTRA") more, the fleet full|reports_colliding_full|$FLEETB"
  echo "2|DescribeFleet v1 pages of 1, one at a time, ${SUSTAIN} s|page_of_1|$FLEETB"
  echo "2'|$PIPELINE pages of 1 sent at once, in rounds for ${SUSTAIN} s|pages_at_once|$FLEETB"
  echo "2b|DescribeFleet v0 of the whole fleet, one after another for ${SUSTAIN} s|v0_whole_fleet|$FLEETB"
  echo "3|$WAITS DescribeFleet parked at once, one report wakes them|waits_all|$FLEETB"
  echo "4|identity hijack: $(commas "$HIJACKS") reports of alice's instance id by mallory|hijack|$FLEETB"
  echo "5|$(commas "$ENVELOPES") forged Envelopes (User:admin), unauthenticated|envelope|$BUFB"
  echo "6a|$(commas "$LOGINS") SASL PLAIN log-ins, wrong password, $CONC at a time|login_plain|$BUFB"
  echo "6b|$(commas "$LOGINS") TLS handshakes, $CONC at a time|login_tls|$BUFB"
  [ "$SCRAM" = 1 ] && echo "6c|$(commas "$LOGINS") SCRAM-SHA-256 log-ins, made-up proof, $CONC at a time|login_scram|$BUFB"
  echo "7|$cN ClientReports, every field at its longest|reports_fat|$FLEETB"
  echo "8|HTTP: $HTTP_ROUNDS x $(commas "$HTTP_CONNS") partial requests to the metrics listener|http|-"
  echo "8b|HTTP: GET /metrics x $SCRAPES with the $cN-agent fleet|metrics_scrape|-"
} | while IFS='|' read -r step rest; do
  # The steps selected, and step 1 when it ran for the others.
  case $step in 1 | 1b) [ $FLEET_RUN = 1 ] && echo "$step|$rest" ;;
  *) want "$(echo "$step" | tr -d "'" | sed 's/^2b$/2/')" && echo "$step|$rest" ;;
  esac
done | awk -F'|' -v res="$RES" '
BEGIN {
  while ((getline line < res) > 0) {
    n = split(line, w, " ")
    if (w[1] == "OUTCOME") {
      out[w[2]] = substr(line, length("OUTCOME ") + length(w[2]) + 2)
      continue
    }
    split(w[2], kv, "="); ph = kv[2]
    for (i = 3; i <= n; i++) {
      eq = index(w[i], "=")
      v[ph, substr(w[i], 1, eq - 1)] = substr(w[i], eq + 1)
    }
  }
  idle99 = (("idle", "probe_p99_ms") in v) ? v["idle", "probe_p99_ms"] + 0 : 0
  print "| step | attack | probes | probe p50 ms | probe p99 ms | p99 / idle p99 | dynconfd RSS MB, start -> peak | bound | outcome |"
  print "|---|---|---|---|---|---|---|---|---|"
}
{
  ph = $3
  if (!((ph, "probe_p99_ms") in v)) {
    printf "| %s | %s | - | - | - | - | - | %s | %s |\n", $1, $2, $4,
      (ph in out) ? out[ph] : "not measured (failed: see above)"
    missed = missed " " $1
    next
  }
  p99 = v[ph, "probe_p99_ms"] + 0
  ratio = idle99 > 0 && p99 >= 0 ? sprintf("%.1f", p99 / idle99) : "-"
  printf "| %s | %s | %d | %.2f | %.2f | %s | %.0f -> %.0f | %s | %s |\n", $1,
    $2, v[ph, "probes"], v[ph, "probe_p50_ms"], p99, ratio, v[ph, "rss0_mb"],
    v[ph, "rss_peak_mb"], $4, (ph in out) ? out[ph] : "-"
  if ($1 != "0") {
    rows++
    if (p99 > 10 || p99 < 0) {
      over = over sprintf(" %s (%.0f ms)", $1, p99)
      nover++
    }
  }
}
END {
  printf "\nGoal: probe p99 <= 10 ms during every attack: "
  if (over == "") printf "met in all %d measured\n", rows
  else printf "not met in%s; met in the other %d of %d\n", over,
    rows - nover, rows
  if (missed != "") printf "Not measured:%s\n", missed
}'
if [ "$FAILED" -ne 0 ]; then
  echo "bench: some steps failed outright (see above)" >&2
  exit 1
fi
