/* SPDX-License-Identifier: BSD-2-Clause */
/* What the benchmarks read about another process from /proc. */
#ifndef DC_BENCH_PROC_H
#define DC_BENCH_PROC_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* utime + stime in clock ticks from a /proc .../stat file; -1 when it is
 * gone. */
static inline long long bench_stat_ticks(const char *path) {
  char buf[1024];
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* After the ") " that ends the command name: state, 10 fields, then
   * utime and stime. */
  char *rp = strrchr(buf, ')');
  unsigned long long ut, st;
  if (!rp ||
      sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (long long)(ut + st);
}

/* utime + stime of pid (all its threads) in clock ticks; -1 when it is
 * gone. */
static inline long long bench_proc_ticks(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  return bench_stat_ticks(path);
}

/* utime + stime of one thread tid of pid in clock ticks; -1 when gone. */
static inline long long bench_thread_ticks(pid_t pid, pid_t tid) {
  char path[96];
  snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
  return bench_stat_ticks(path);
}

/* A numeric field of /proc/pid/status ("Threads", "VmRSS" in KiB); -1 if
 * absent or the process is gone. */
static inline long bench_proc_status(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  long v = -1;
  size_t fl = strlen(field);
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, field, fl) && line[fl] == ':') {
      v = strtol(line + fl + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* Open file descriptors of pid; -1 if they cannot be listed. */
static inline long bench_proc_fds(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
  DIR *d = opendir(path);
  if (!d)
    return -1;
  long n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}
#endif
