/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The standard process_* metrics of a Prometheus exporter, read from the
 * kernel (getrusage, /proc/self) when scraped.
 */
#include "broker/net/process_metrics.h"
#include "broker/core/metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

static double resident_bytes(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
    resident = 0;
  fclose(f);
  return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

static double open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  double n = 0;
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the directory's own fd */
}

void dc_process_metrics(dc_buf_t *out, double start_time) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
               ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) /
                   1e6;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  dc_metrics_head(out, "process_cpu_seconds_total", "counter",
                  "User and system CPU time spent, in seconds.");
  dc_metrics_value(out, "process_cpu_seconds_total", NULL, NULL, cpu);
  dc_metrics_head(out, "process_resident_memory_bytes", "gauge",
                  "Resident memory size in bytes.");
  dc_metrics_value(out, "process_resident_memory_bytes", NULL, NULL,
                   resident_bytes());
  dc_metrics_head(out, "process_open_fds", "gauge",
                  "Open file descriptors.");
  dc_metrics_value(out, "process_open_fds", NULL, NULL, open_fds());
  dc_metrics_head(out, "process_max_fds", "gauge",
                  "The limit on open file descriptors.");
  dc_metrics_value(out, "process_max_fds", NULL, NULL, (double)rl.rlim_cur);
  dc_metrics_head(out, "process_start_time_seconds", "gauge",
                  "Start time of the process since the Unix epoch, seconds.");
  dc_metrics_value(out, "process_start_time_seconds", NULL, NULL, start_time);
}
