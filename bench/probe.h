/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probe of the hostile-load benchmarks (bench/fleet.c, bench/attack.c):
 * one connection, set up before the work starts, sending a DescribeConfigs
 * every 5 ms on its own thread, so its latencies while some work ran are
 * what any other client of the same dynconfd saw meanwhile. Beside each
 * request it samples dynconfd's VmRSS.
 *
 * A phase is a stretch of the work: its wall time, dynconfd's CPU, the
 * probe's p50/p99 and dynconfd's RSS at its start and at its peak while
 * it ran. Phases may overlap or nest.
 *
 * Threads: bench_probe_start() starts the probe's thread; the other
 * functions are for the one thread that started it. One probe per process.
 */
#ifndef DC_BENCH_PROBE_H
#define DC_BENCH_PROBE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Starts the probe against target ("host:port", PLAINTEXT) sampling pid's
 * RSS; 0 once its connection is made (the first sample may still be in
 * flight), -1 when it cannot connect or start (said on stderr). */
int bench_probe_start(const char *target, pid_t pid);
/* Stops and joins the probe; no-op when it never started. */
void bench_probe_stop(void);
/* True once a probe request failed (the probe then stopped sampling). */
int bench_probe_failed(void);

/* Nearest-rank percentile p of n samples (sorted here); -1 when n is 0. */
int64_t bench_pct(int64_t *s, size_t n, double p);
/* pid's CPU (user + system, all threads) in seconds; < 0 when gone. */
double bench_cpu_s(pid_t pid);

typedef struct bench_phase {
  pid_t pid;
  int64_t t0_ms;
  double cpu0;
  long rss0_kb, hwm0_kb;
  int64_t skip_from_ms, skip_to_ms; /* see bench_phase_skip */
} bench_phase_t;

bench_phase_t bench_phase_begin(pid_t pid);
/* Probes that ran at some time in [from_ms, to_ms] (dc_mono_ms) do not
 * count for the phase: the bench's own work then (reading /metrics, say)
 * is not the attack's. One such stretch per phase. */
void bench_phase_skip(bench_phase_t *p, int64_t from_ms, int64_t to_ms);

/* The phase's figures, measured now: the probes that ran at some time in
 * it (one in flight throughout counts once it is in: this waits up to 2 s
 * for it) give p50 and p99 (-1 when none) and their number.
 * rss_peak_kb: dynconfd's VmHWM when the phase raised it (exact), else
 * the highest VmRSS the probe sampled in it (every 5 ms) or read at its
 * start or end. */
typedef struct bench_phase_result {
  double wall_s, cpu_s, p50_ms, p99_ms;
  size_t probes;
  long rss0_kb, rss_peak_kb;
} bench_phase_result_t;

bench_phase_result_t bench_phase_measure(const bench_phase_t *p);

/* Measures the phase, prints a human line and
 * "RESULT phase=NAME count=N wall_s= cpu_s= cpu_ms_each= probe_p50_ms=
 * probe_p99_ms= probes= rss0_mb= rss_peak_mb=" on stdout, and returns
 * the figures. */
bench_phase_result_t bench_phase_end(const bench_phase_t *p, const char *name,
                                     long count);

#endif
