/* What the benchmarks read about another process from /proc. */
#ifndef DC_BENCH_PROC_H
#define DC_BENCH_PROC_H
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* utime + stime of pid in clock ticks; -1 when it is gone. */
static inline long long bench_proc_ticks(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
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
#endif
