#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One-command benchmark of the dynconf agent.
#
#   bench/run-agent.sh [BUILDDIR]
#   BASELINE_BUILDDIR=OTHER_BUILDDIR bench/run-agent.sh [BUILDDIR]
#
# Starts a dynconfd on a free loopback port with a throw-away data dir and
# runs, against it:
#   1. overhead: bench/agent_overhead twice, as two separate processes with
#      the same image and workload (a librdkafka producer sending to
#      librdkafka's mock cluster, which runs in a third process):
#      --mode baseline (no agent) and --mode agent (plus one agent at a
#      1 s refresh). Prints RSS, threads and CPU side by side with the
#      deltas. Targets: at most +1 thread, at most +128 KiB resident at the
#      end, at most 0.05 % of one core (the agent's threads plus its
#      dynconf_poll calls).
#   2. fleet: bench/agent_fleet, FLEET_AGENTS agents in FLEET_PROCS
#      processes, FLEET_ALTERS alters of <default> with dynconf-configs,
#      delivery delay p50/p99/max next to the polling design's bound, fetch
#      round trip, dynconfd's and the agents' CPU, the workers' threads,
#      fds and RSS. Targets: 2,000 agents in at most 4 processes at a 1 s
#      refresh, p99 <= 1.1 x the refresh interval + the mean fetch round
#      trip.
# then prints a summary table and stops everything it started.
#
# With BASELINE_BUILDDIR, the same two benchmarks also run with that build
# dir's bench/agent_overhead and bench/agent_fleet (so its libdynconf),
# against the same dynconfd and mock cluster, in the same run: each
# overhead round runs both builds (the order alternates between rounds),
# then one fleet per build. The summary ends with the two side by side.
#
# Environment: BENCH_SECONDS (30, overhead window), BENCH_WARMUP (5),
# BENCH_ROUNDS (1: rounds of baseline+agent, the table shows medians and
# the per-round spread), BENCH_RATE (1000 msg/s), BENCH_SIZE (100 bytes),
# FLEET_AGENTS (2000), FLEET_PROCS (4; 0 = one per 500 agents),
# FLEET_ALTERS (5), FLEET_GAP_MS (3000), FLEET_REFRESH_MS (1000),
# FLEET_POLL_SLEEP_MS (5), BASELINE_BUILDDIR (none), BASELINE_FLEET_AGENTS
# and BASELINE_FLEET_PROCS (FLEET_AGENTS, FLEET_PROCS), BENCH_LABEL
# ("build") and BASELINE_LABEL ("baseline build"): the names printed.
# Exit status: non-zero only when a run fails outright (a process crashed,
# an agent never got an alter within 30 s, the CLI failed); never on a
# target.
set -eu

BUILDDIR=$(cd "${1:-.}" && pwd)
BASEDIR=
if [ -n "${BASELINE_BUILDDIR:-}" ]; then
  BASEDIR=$(cd "$BASELINE_BUILDDIR" && pwd)
fi
SECS=${BENCH_SECONDS:-30}
WARMUP=${BENCH_WARMUP:-5}
RATE=${BENCH_RATE:-1000}
SIZE=${BENCH_SIZE:-100}
AGENTS=${FLEET_AGENTS:-2000}
PROCS=${FLEET_PROCS:-4}
BAGENTS=${BASELINE_FLEET_AGENTS:-$AGENTS}
BPROCS=${BASELINE_FLEET_PROCS:-$PROCS}
ALTERS=${FLEET_ALTERS:-5}
GAP=${FLEET_GAP_MS:-3000}
REFRESH=${FLEET_REFRESH_MS:-1000}
PSLEEP=${FLEET_POLL_SLEEP_MS:-5}
ROUNDS=${BENCH_ROUNDS:-1}
LABEL=${BENCH_LABEL:-build}
BLABEL=${BASELINE_LABEL:-baseline build}

for bin in dynconfd dynconf-configs bench/agent_overhead bench/agent_fleet; do
  if [ ! -x "$BUILDDIR/$bin" ]; then
    echo "bench: $BUILDDIR/$bin not built (make dynconfd dynconf-configs" \
      "bench/agent_overhead bench/agent_fleet)" >&2
    exit 2
  fi
done
if [ -n "$BASEDIR" ]; then
  for bin in bench/agent_overhead bench/agent_fleet; do
    if [ ! -x "$BASEDIR/$bin" ]; then
      echo "bench: $BASEDIR/$bin not built (make bench/agent_overhead" \
        "bench/agent_fleet there)" >&2
      exit 2
    fi
  done
fi

# The builds to measure: tag "this" (BUILDDIR) and, with a baseline, "base".
TAGS=this
[ -z "$BASEDIR" ] || TAGS="this base"
dir_of() { if [ "$1" = base ]; then echo "$BASEDIR"; else echo "$BUILDDIR"; fi; }
label_of() { if [ "$1" = base ]; then echo "$BLABEL"; else echo "$LABEL"; fi; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dynconf-agentbench.XXXXXX")
DPID=
MPID=
stop_pid() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop_pid "$MPID"
  stop_pid "$DPID"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# $1 file, $2 sed pattern with one group: waits up to 10 s for it.
wait_for_line() {
  i=0
  while [ $i -lt 100 ]; do
    v=$(sed -n "s/$2/\\1/p" "$1" | head -n 1)
    if [ -n "$v" ]; then
      echo "$v"
      return 0
    fi
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

mkdir "$TMP/data"
"$BUILDDIR/dynconfd" --listen 127.0.0.1:0 --data-dir "$TMP/data" \
  >"$TMP/dynconfd.out" 2>"$TMP/dynconfd.err" &
DPID=$!
PORT=$(wait_for_line "$TMP/dynconfd.out" \
  '.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*') || {
  echo "bench: dynconfd did not report its port within 10 s:" >&2
  cat "$TMP/dynconfd.err" >&2
  exit 1
}
TARGET=127.0.0.1:$PORT

# The overhead agent's client gets a real override (acks=1, which both
# modes' producers also set themselves), so every fetch returns an entry.
"$BUILDDIR/dynconf-configs" --bootstrap-server "$TARGET" \
  --entity-type clients --entity-name overhead-bench \
  --alter --add-config acks=1 >"$TMP/seed.out" 2>&1 || {
  echo "bench: seeding overhead-bench failed:" >&2
  cat "$TMP/seed.out" >&2
  exit 1
}

"$BUILDDIR/bench/agent_overhead" --serve-mock >"$TMP/mock.out" \
  2>"$TMP/mock.err" &
MPID=$!
MOCK=$(wait_for_line "$TMP/mock.out" '.*mock bootstrap \(.*\)') || {
  echo "bench: the mock cluster did not start:" >&2
  cat "$TMP/mock.err" >&2
  exit 1
}

echo "dynconfd at $TARGET (pid $DPID), mock cluster at $MOCK (pid $MPID);" \
  "$(nproc 2>/dev/null || echo '?') cores, load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "$LABEL: $BUILDDIR"
[ -z "$BASEDIR" ] || echo "$BLABEL: $BASEDIR"
echo

FAILED=0
# $1 tag, $2 mode, $3 round
run_overhead() {
  f="$TMP/ovh.$1.$2.$3"
  echo "== overhead, $(label_of "$1"), $2 (round $3 of $ROUNDS):" \
    "${SECS} s after ${WARMUP} s warm-up =="
  if ! "$(dir_of "$1")/bench/agent_overhead" --mode "$2" --bootstrap "$MOCK" \
    --dynconf "$TARGET" --seconds "$SECS" --warmup "$WARMUP" --rate "$RATE" \
    --size "$SIZE" >"$f.out" 2>"$f.err"; then
    echo "bench: agent_overhead --mode $2 ($(label_of "$1")) failed:" >&2
    cat "$f.err" "$f.out" >&2
    FAILED=1
  fi
  grep -v '^RESULT\|^THREADS\|^THREADCPU\|^AGENTTHREADS' "$f.out" || true
  cat "$f.err" >&2
}
r=1
while [ $r -le "$ROUNDS" ]; do
  # Odd rounds: this build first, no agent first; even rounds: reversed.
  if [ $((r % 2)) -eq 1 ]; then
    order=$TAGS
    modes="baseline agent"
  else
    order=$(echo "$TAGS" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }')
    modes="agent baseline"
  fi
  for tag in $order; do
    for mode in $modes; do
      run_overhead "$tag" "$mode" "$r"
    done
  done
  r=$((r + 1))
done
stop_pid "$MPID"
MPID=
echo

for tag in $TAGS; do
  if [ "$tag" = base ]; then n=$BAGENTS p=$BPROCS; else n=$AGENTS p=$PROCS; fi
  echo "== fleet, $(label_of "$tag"): $n agents in $p processes" \
    "(0 = one per 500), $ALTERS alters =="
  "$(dir_of "$tag")/bench/agent_fleet" --bootstrap "$TARGET" \
    --configs-cli "$BUILDDIR/dynconf-configs" --agents "$n" \
    --procs "$p" --alters "$ALTERS" --gap-ms "$GAP" \
    --refresh-ms "$REFRESH" --poll-sleep-ms "$PSLEEP" --timeout-ms 30000 \
    --daemon-pid "$DPID" >"$TMP/fleet.$tag.out" 2>"$TMP/fleet.$tag.err" || {
    echo "bench: agent_fleet ($(label_of "$tag")) failed:" >&2
    FAILED=1
  }
  grep -v '^RESULT\|^ALTER' "$TMP/fleet.$tag.out" || true
  cat "$TMP/fleet.$tag.err" >&2
  if ! kill -0 "$DPID" 2>/dev/null; then
    echo "bench: dynconfd died during the run:" >&2
    cat "$TMP/dynconfd.err" >&2
    FAILED=1
    break
  fi
  echo
done

# ---- summary ------------------------------------------------------------------
# Each summary prints its table and appends one "OVH tag ..." or
# "FLT tag ..." line of key=value figures to $TMP/sum for the side-by-side
# table at the end.
: >"$TMP/sum"

# $1 tag
overhead_summary() {
  cat "$TMP"/ovh."$1".baseline.*.out 2>/dev/null | grep -q '^RESULT' &&
    cat "$TMP"/ovh."$1".agent.*.out 2>/dev/null | grep -q '^RESULT' || return 0
  # Files in round order, so that round i of each mode pairs up.
  files=
  r=1
  while [ $r -le "$ROUNDS" ]; do
    for mode in baseline agent; do
      [ ! -f "$TMP/ovh.$1.$mode.$r.out" ] || files="$files $TMP/ovh.$1.$mode.$r.out"
    done
    r=$((r + 1))
  done
  # shellcheck disable=SC2086 # $files is a list of paths without spaces
  cat $files |
    awk -v rate="$RATE" -v size="$SIZE" -v rounds="$ROUNDS" -v tag="$1" \
      -v label="$(label_of "$1")" -v sum="$TMP/sum" '
    function kv(line, arr,   n, i, f, p, v) {
      n = split(line, f, " ")
      for (i = 2; i <= n; i++) {
        p = index(f[i], "=")
        if (!p) continue
        v = substr(f[i], p + 1)
        if (v ~ /^-?[0-9]+(\.[0-9]+)?$/) v = v + 0 # compare as numbers
        arr[substr(f[i], 1, p - 1)] = v
      }
    }
    # Every round is kept; the table shows the median of the rounds.
    function keep(m, line,   R, k) {
      split("", R)
      kv(line, R)
      for (k in R) { n = ++cnt[m, k]; V[m, k, n] = R[k]; keys[k] = 1 }
      nround[m]++
      rcpu[m, nround[m]] = R["cpu_pct"]; rrss[m, nround[m]] = R["rss_end_kib"]
      racpu[m, nround[m]] = R["agent_cpu_pct"]
      rstart[m, nround[m]] = R["rss_after_agent_kib"] - R["rss_start_kib"]
      ranon[m, nround[m]] = R["anon_end_kib"]
      rastart[m, nround[m]] = R["anon_after_agent_kib"] - R["anon_start_kib"]
    }
    function median(m, k,   n, i, j, t, a) {
      n = cnt[m, k]
      for (i = 1; i <= n; i++) a[i] = V[m, k, i]
      if (n == 0) return ""
      if (a[1] !~ /^-?[0-9]/) return a[n]
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function med(arr, n,   i, j, t) { # sorts arr[1..n] in place
      if (n == 0) return 0
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
      return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    /^RESULT mode=baseline/ { keep("b", $0) }
    /^RESULT mode=agent/ { keep("a", $0) }
    /^THREADS mode=baseline/ { kv($0, TB) }
    /^THREADS mode=agent/ { kv($0, TA) }
    /^AGENTTHREADS mode=agent/ { kv($0, AT) }
    function row(lab, k, fmt) {
      printf "  %-30s %12s %12s " fmt "\n", lab, B[k], A[k], A[k] - B[k]
    }
    END {
      for (k in keys) { B[k] = median("b", k); A[k] = median("a", k) }
      # Per round: the end-RSS delta of round i pairs round i of each mode.
      np = nround["a"] < nround["b"] ? nround["a"] : nround["b"]
      for (i = 1; i <= np; i++) {
        dr[i] = rrss["a", i] - rrss["b", i]
        ds[i] = rstart["a", i] - rstart["b", i]
        da[i] = ranon["a", i] - ranon["b", i]
        das[i] = rastart["a", i] - rastart["b", i]
      }
      for (i = 1; i <= nround["a"]; i++) ac[i] = racpu["a", i]
      printf "\nagent overhead, %s: one producer, %d msg/s x %d B, %.0f s window, " \
        "agent refresh 1 s (%d fetches, avg RTT %.2f ms)\n", label, rate, size,
        A["seconds"], A["fetch_ok"], A["fetch_avg_us"] / 1000
      if (nround["b"] > 1 || nround["a"] > 1) {
        printf "  per round: CPU %% of one core / RSS at end KiB\n"
        for (i = 1; i <= nround["b"] || i <= nround["a"]; i++)
          printf "    round %d: no agent %.3f / %d, agent %.3f / %d (agent " \
            "total %.4f%%; RSS %+d, private %+d; across dynconf_new %+d, " \
            "private %+d)\n", i, rcpu["b", i], rrss["b", i], rcpu["a", i],
            rrss["a", i], racpu["a", i], dr[i], da[i], ds[i], das[i]
      }
      printf "  %-30s %12s %12s %12s\n", (rounds > 1 ? "(median of " rounds " rounds)" : ""),
        "no agent", "agent", "delta"
      row("RSS after warm-up (KiB)", "rss_warm_kib", "%+12d")
      row("RSS at end (KiB)", "rss_end_kib", "%+12d")
      row("peak RSS (KiB)", "hwm_kib", "%+12d")
      row("  private (RssAnon) at end", "anon_end_kib", "%+12d")
      row("  file-backed (RssFile) at end", "file_end_kib", "%+12d")
      row("threads", "threads", "%+12d")
      row("CPU, whole process (% core)", "cpu_pct", "%+12.3f")
      printf "  %-30s %12s %12.4f %+12.4f\n", "CPU, agent threads (% core)", "-",
        A["agent_threads_cpu_pct"], A["agent_threads_cpu_pct"]
      printf "  %-30s %12s %12.4f %+12.4f  (its threads + dynconf_poll calls)\n",
        "CPU, agent total (% core)", "-", A["agent_cpu_pct"], A["agent_cpu_pct"]
      printf "  %-30s %12s %12s  (stalls > 100 ms: %d / %d; the machine is shared)\n",
        "max tick lateness (ms)", B["max_tick_late_ms"], A["max_tick_late_ms"],
        B["stalls"], A["stalls"]
      printf "  %-30s %12s %12s  (%d calls on the app thread)\n",
        "dynconf_poll(dc,0) mean/max us", "-",
        sprintf("%.2f/%d", A["poll_mean_us"], A["poll_max_us"]), A["poll_calls"]
      printf "  %-30s %12s %12s %+12d  (both sides include librdkafka'"'"'s " \
        "one-time init)\n", "RSS around dynconf_new (KiB)",
        B["rss_start_kib"] "->" B["rss_after_agent_kib"],
        A["rss_start_kib"] "->" A["rss_after_agent_kib"],
        (A["rss_after_agent_kib"] - A["rss_start_kib"]) - (B["rss_after_agent_kib"] - B["rss_start_kib"])
      printf "  %-30s %12s %12s %+12d\n", "  private (RssAnon) around it",
        B["anon_start_kib"] "->" B["anon_after_agent_kib"],
        A["anon_start_kib"] "->" A["anon_after_agent_kib"],
        (A["anon_after_agent_kib"] - A["anon_start_kib"]) - (B["anon_after_agent_kib"] - B["anon_start_kib"])
      drss = A["rss_end_kib"] - B["rss_end_kib"]
      dthr = A["threads"] - B["threads"]
      dcpu = A["cpu_pct"] - B["cpu_pct"]
      mdr = med(dr, np); mds = med(ds, np); mac = med(ac, nround["a"])
      mda = med(da, np); mdas = med(das, np)
      printf "  ratio agent/no agent: RSS %.3f, CPU %.3f\n",
        A["rss_end_kib"] / B["rss_end_kib"],
        (B["cpu_pct"] > 0 ? A["cpu_pct"] / B["cpu_pct"] : 0)
      printf "  target <= +1 thread: %s (%+d)\n", (dthr <= 1 ? "met" : "NOT met"), dthr
      printf "  target <= +128 KiB resident: %s by VmRSS at the end (%+d KiB, " \
        "median of the per-round deltas, range %+d..%+d; across dynconf_new " \
        "%+d, range %+d..%+d); private memory (RssAnon) %+d at the end " \
        "(%+d..%+d), %+d across dynconf_new (%+d..%+d); the rest is pages " \
        "of shared libraries'"'"' code and data first touched\n",
        (mdr <= 128 ? "met" : "NOT met"), mdr, dr[1], dr[np], mds, ds[1],
        ds[np], mda, da[1], da[np], mdas, das[1], das[np]
      printf "  target <= 0.05%% of one core: %s (agent total %.4f%%, ranged " \
        "%.4f..%.4f; measured per thread; the whole-process delta %+.3f%% is " \
        "shown for comparison and is dominated by the producer'"'"'s own " \
        "run-to-run variation on a shared machine)\n",
        (mac <= 0.05 ? "met" : "NOT met"), mac, ac[1], ac[nround["a"]], dcpu
      printf "  threads the agent adds (started by dynconf_new; CPU over the window):\n"
      for (n in AT) {
        if (n == "mode") continue
        split(AT[n], cu, ":")
        what = n ~ /^rdk:main/ ? "its own librdkafka handle'"'"'s main thread" : \
          n ~ /^rdk:broker-1/ ? "its handle'"'"'s internal broker thread" : \
          n ~ /^rdk:broker/ ? "its handle'"'"'s broker thread (to dynconfd)" : \
          n ~ /^dynconf/ ? "the agent'"'"'s refresh thread" : \
          "unnamed (the process name)"
        printf "    %-16s x%d %9.1f ms = %.4f%% of a core  %s\n", n, cu[1],
          cu[2] / 1000, cu[2] / 10 / A["seconds"] / 1000, what
      }
      printf "  thread counts by name, no agent -> agent:"
      for (n in TA) if (n != "mode") printf " %s %d->%d", n, TB[n] + 0, TA[n]
      printf "\n"
      printf "OVH %s rounds=%d threads=%d rss_end=%d rss_lo=%d rss_hi=%d " \
        "rss_start=%d rss_start_lo=%d rss_start_hi=%d cpu=%.4f cpu_lo=%.4f " \
        "cpu_hi=%.4f thr_cpu=%.4f poll_us=%.2f rtt_ms=%.3f anon_end=%d " \
        "anon_lo=%d anon_hi=%d anon_start=%d anon_start_lo=%d " \
        "anon_start_hi=%d\n", tag, np, dthr,
        mdr, dr[1], dr[np], mds, ds[1], ds[np], mac, ac[1], ac[nround["a"]],
        A["agent_threads_cpu_pct"], A["poll_mean_us"],
        A["fetch_avg_us"] / 1000, mda, da[1], da[np], mdas, das[1],
        das[np] >> sum
    }'
}

# $1 tag
fleet_summary() {
  grep -q '^RESULT fleet' "$TMP/fleet.$1.out" 2>/dev/null || return 0
  grep '^RESULT fleet' "$TMP/fleet.$1.out" | awk -v tag="$1" \
    -v label="$(label_of "$1")" -v sum="$TMP/sum" '
    {
      for (i = 3; i <= NF; i++) {
        p = index($i, "=")
        F[substr($i, 1, p - 1)] = substr($i, p + 1) + 0 # all numeric
        H[substr($i, 1, p - 1)] = 1
      }
    }
    END {
      per_s = F["agents"] / (F["refresh_ms"] * (1 - F["jitter_pct"] / 200) / 1000)
      target = 1.1 * F["refresh_ms"] + F["rtt_avg_ms"]
      printf "\nfleet propagation, %s: %d agents in %d processes, refresh %d ms " \
        "(jitter %d%%), %d alters, %d deliveries\n", label, F["agents"],
        F["procs"], F["refresh_ms"], F["jitter_pct"], F["alters"],
        F["deliveries"]
      printf "  %-32s %10s %12s %8s\n", "", "measured", "model", "ratio"
      printf "  %-32s %10.1f %12.1f %8.2f  (expected: half a jittered interval + RTT)\n",
        "delay p50 (ms)", F["p50_ms"], F["expect_p50_ms"],
        F["p50_ms"] / F["expect_p50_ms"]
      printf "  %-32s %10.1f %12.1f %8.2f  (bound: interval + RTT + poll sleep)\n",
        "delay p99 (ms)", F["p99_ms"], F["bound_ms"], F["p99_ms"] / F["bound_ms"]
      printf "  %-32s %10.1f %12.1f %8.2f\n", "delay max (ms)", F["max_ms"],
        F["bound_ms"], F["max_ms"] / F["bound_ms"]
      printf "  %-32s %10.3f  (last fetch p50 %.3f, p99 %.3f, worst %.1f ms)\n",
        "fetch round trip, mean (ms)", F["rtt_avg_ms"], F["rtt_last_p50_ms"],
        F["rtt_last_p99_ms"], F["rtt_max_ms"]
      printf "  %-32s %10.1f  (before the delay; delays count from its return)\n",
        "CLI alter round trip (ms)", F["cli_ms"]
      printf "  %-32s %10.2f  (~%.0f DescribeConfigs/s)\n",
        "dynconfd CPU (% of one core)", F["daemon_cpu_pct"], per_s
      printf "  %-32s %10.2f  (%.4f per agent, incl. the poll loop)\n",
        "agents CPU, total (% of a core)", F["agents_cpu_pct"],
        F["agents_cpu_pct"] / F["agents"]
      if (H["poll_cpu_pct"]) {
        printf "  %-32s %10.2f  (%.4f per agent)\n",
          "  of which the agents'"'"' threads", F["agent_threads_cpu_pct"],
          F["agent_threads_cpu_pct"] / F["agents"]
        printf "  %-32s %10.2f  (dynconf_poll over each process'"'"'s agents)\n",
          "  of which the polling loops", F["poll_cpu_pct"]
        printf "  %-32s %10d  (%.2f per agent)\n", "worker threads, all processes",
          F["worker_threads"], F["worker_threads"] / F["agents"]
        printf "  %-32s %10d  (%.2f per agent)\n", "worker open fds, all processes",
          F["worker_fds"], F["worker_fds"] / F["agents"]
        printf "  %-32s %10d  (%.1f KiB per agent)\n", "worker RSS KiB, all processes",
          F["worker_rss_kib"], F["worker_rss_kib"] / F["agents"]
      }
      printf "  %-32s %10d  (slowest process; destroying its agents took %d ms)\n",
        "creating the agents (ms)", F["create_ms"], F["destroy_ms"]
      printf "  fetches %d ok, %d failed; %d error events; %d agents not up at the end\n",
        F["fetch_ok"], F["fetch_err"], F["errors"], F["not_up"]
      printf "  target 2,000 agents in <= 4 processes at a 1 s refresh: %s\n",
        (F["agents"] >= 2000 && F["procs"] <= 4 && F["refresh_ms"] <= 1000 ? \
          "met" : "NOT met (" F["agents"] " agents, " F["procs"] " processes)")
      if (F["failed"] + 0)
        printf "  RUN FAILED: only %d complete alters; target not judged\n", F["alters"]
      else
        printf "  target p99 <= 1.1 x refresh + fetch RTT = %.1f ms: %s\n", target,
          (F["p99_ms"] <= target ? "met" : "NOT met")
      printf "FLT %s agents=%d procs=%d deliveries=%d p50=%.1f p99=%.1f max=%.1f " \
        "target=%.1f rtt=%.3f daemon=%.2f agents_cpu=%.2f thr_cpu=%s " \
        "poll_cpu=%s threads=%s fds=%s rss=%s create=%d destroy=%d " \
        "failed=%d\n", tag, F["agents"], F["procs"], F["deliveries"],
        F["p50_ms"], F["p99_ms"], F["max_ms"], target, F["rtt_avg_ms"],
        F["daemon_cpu_pct"], F["agents_cpu_pct"],
        (H["poll_cpu_pct"] ? F["agent_threads_cpu_pct"] : "-"),
        (H["poll_cpu_pct"] ? F["poll_cpu_pct"] : "-"),
        (H["poll_cpu_pct"] ? F["worker_threads"] : "-"),
        (H["poll_cpu_pct"] ? F["worker_fds"] : "-"),
        (H["poll_cpu_pct"] ? F["worker_rss_kib"] : "-"),
        F["create_ms"], F["destroy_ms"], F["failed"] >> sum
    }'
}

echo
echo "================================ summary ================================"
echo "machine: $(nproc 2>/dev/null || echo '?') cores, shared with other work" \
  "(load average now $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'))"
for tag in $TAGS; do
  overhead_summary "$tag"
done
for tag in $TAGS; do
  fleet_summary "$tag"
done

if [ -n "$BASEDIR" ]; then
  awk -v la="$LABEL" -v lb="$BLABEL" '
    {
      t = $2
      for (i = 3; i <= NF; i++) {
        p = index($i, "=")
        S[$1, t, substr($i, 1, p - 1)] = substr($i, p + 1)
      }
      have[$1, t] = 1
    }
    function r2(a, b) { return (b + 0 != 0) ? sprintf("%.2f", a / b) : "-" }
    END {
      printf "\n%s vs %s, same run, same dynconfd:\n", la, lb
      if (have["OVH", "this"] && have["OVH", "base"]) {
        printf "  overhead of one agent (median of %d rounds; range)\n",
          S["OVH", "this", "rounds"]
        printf "  %-36s %24s %24s %8s\n", "", la, lb, "ratio"
        printf "  %-36s %24s %24s\n", "threads added",
          sprintf("%+d", S["OVH", "this", "threads"]),
          sprintf("%+d", S["OVH", "base", "threads"])
        printf "  %-36s %24s %24s %8s\n", "RSS at end added (KiB)",
          sprintf("%+d (%+d..%+d)", S["OVH", "this", "rss_end"],
            S["OVH", "this", "rss_lo"], S["OVH", "this", "rss_hi"]),
          sprintf("%+d (%+d..%+d)", S["OVH", "base", "rss_end"],
            S["OVH", "base", "rss_lo"], S["OVH", "base", "rss_hi"]),
          r2(S["OVH", "this", "rss_end"], S["OVH", "base", "rss_end"])
        printf "  %-36s %24s %24s %8s\n", "RSS added by dynconf_new (KiB)",
          sprintf("%+d (%+d..%+d)", S["OVH", "this", "rss_start"],
            S["OVH", "this", "rss_start_lo"], S["OVH", "this", "rss_start_hi"]),
          sprintf("%+d (%+d..%+d)", S["OVH", "base", "rss_start"],
            S["OVH", "base", "rss_start_lo"], S["OVH", "base", "rss_start_hi"]),
          r2(S["OVH", "this", "rss_start"], S["OVH", "base", "rss_start"])
        printf "  %-36s %24s %24s %8s\n", "  private (RssAnon) at end (KiB)",
          sprintf("%+d (%+d..%+d)", S["OVH", "this", "anon_end"],
            S["OVH", "this", "anon_lo"], S["OVH", "this", "anon_hi"]),
          sprintf("%+d (%+d..%+d)", S["OVH", "base", "anon_end"],
            S["OVH", "base", "anon_lo"], S["OVH", "base", "anon_hi"]),
          r2(S["OVH", "this", "anon_end"], S["OVH", "base", "anon_end"])
        printf "  %-36s %24s %24s %8s\n", "  private, by dynconf_new (KiB)",
          sprintf("%+d (%+d..%+d)", S["OVH", "this", "anon_start"],
            S["OVH", "this", "anon_start_lo"], S["OVH", "this", "anon_start_hi"]),
          sprintf("%+d (%+d..%+d)", S["OVH", "base", "anon_start"],
            S["OVH", "base", "anon_start_lo"], S["OVH", "base", "anon_start_hi"]),
          r2(S["OVH", "this", "anon_start"], S["OVH", "base", "anon_start"])
        printf "  %-36s %24s %24s %8s\n", "agent CPU, % of one core",
          sprintf("%.4f (%.4f..%.4f)", S["OVH", "this", "cpu"],
            S["OVH", "this", "cpu_lo"], S["OVH", "this", "cpu_hi"]),
          sprintf("%.4f (%.4f..%.4f)", S["OVH", "base", "cpu"],
            S["OVH", "base", "cpu_lo"], S["OVH", "base", "cpu_hi"]),
          r2(S["OVH", "this", "cpu"], S["OVH", "base", "cpu"])
        printf "  %-36s %24.2f %24.2f\n", "dynconf_poll(dc, 0) mean (us)",
          S["OVH", "this", "poll_us"], S["OVH", "base", "poll_us"]
        printf "  %-36s %24.3f %24.3f %8s\n", "fetch round trip, mean (ms)",
          S["OVH", "this", "rtt_ms"], S["OVH", "base", "rtt_ms"],
          r2(S["OVH", "this", "rtt_ms"], S["OVH", "base", "rtt_ms"])
      }
      if (have["FLT", "this"] && have["FLT", "base"]) {
        printf "  fleet\n"
        printf "  %-36s %24s %24s %8s\n", "", la, lb, "ratio"
        printf "  %-36s %24s %24s\n", "agents / processes",
          S["FLT", "this", "agents"] " / " S["FLT", "this", "procs"],
          S["FLT", "base", "agents"] " / " S["FLT", "base", "procs"]
        split("p50 p99 max", ks, " ")
        for (j = 1; j <= 3; j++)
          printf "  %-36s %24s %24s %8s\n", "delay " ks[j] " (ms)",
            S["FLT", "this", ks[j]], S["FLT", "base", ks[j]],
            r2(S["FLT", "this", ks[j]], S["FLT", "base", ks[j]])
        printf "  %-36s %24s %24s\n", "p99 target (1.1 x refresh + RTT)",
          S["FLT", "this", "target"] (S["FLT", "this", "p99"] + 0 <= S["FLT", "this", "target"] + 0 ? " met" : " NOT met"),
          S["FLT", "base", "target"] (S["FLT", "base", "p99"] + 0 <= S["FLT", "base", "target"] + 0 ? " met" : " NOT met")
        printf "  %-36s %24s %24s %8s\n", "fetch round trip, mean (ms)",
          S["FLT", "this", "rtt"], S["FLT", "base", "rtt"],
          r2(S["FLT", "this", "rtt"], S["FLT", "base", "rtt"])
        printf "  %-36s %24s %24s %8s\n", "dynconfd CPU (% of one core)",
          S["FLT", "this", "daemon"], S["FLT", "base", "daemon"],
          r2(S["FLT", "this", "daemon"], S["FLT", "base", "daemon"])
        printf "  %-36s %24s %24s %8s\n", "agents CPU, all workers (% core)",
          S["FLT", "this", "agents_cpu"], S["FLT", "base", "agents_cpu"],
          r2(S["FLT", "this", "agents_cpu"] / S["FLT", "this", "agents"],
            S["FLT", "base", "agents_cpu"] / S["FLT", "base", "agents"]) "/agt"
        printf "  %-36s %24s %24s\n", "  of which the agents'"'"' threads",
          S["FLT", "this", "thr_cpu"], S["FLT", "base", "thr_cpu"]
        printf "  %-36s %24s %24s\n", "  of which the polling loops",
          S["FLT", "this", "poll_cpu"], S["FLT", "base", "poll_cpu"]
        split("threads fds rss", ks, " ")
        split("worker threads|worker open fds|worker RSS (KiB)", kl, "|")
        for (j = 1; j <= 3; j++)
          printf "  %-36s %24s %24s %8s\n", kl[j],
            S["FLT", "this", ks[j]], S["FLT", "base", ks[j]],
            (S["FLT", "this", ks[j]] ~ /^[0-9]/ && S["FLT", "base", ks[j]] ~ /^[0-9]/ ? \
              r2(S["FLT", "this", ks[j]] / S["FLT", "this", "agents"],
                S["FLT", "base", ks[j]] / S["FLT", "base", "agents"]) "/agt" : "")
        printf "  %-36s %24s %24s\n", "creating / destroying (ms)",
          S["FLT", "this", "create"] " / " S["FLT", "this", "destroy"],
          S["FLT", "base", "create"] " / " S["FLT", "base", "destroy"]
      }
    }' "$TMP/sum"
fi
exit $FAILED
