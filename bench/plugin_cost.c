/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the librdkafka plugin costs a client: the time rd_kafka_new()
 * takes, the threads and the resident memory a producer adds, with and
 * without the plugin. One mode per process, so each starts from the same
 * state; bench/run-plugin.sh runs them all.
 *
 *   bench/plugin_cost MODE PLUGIN_PATH [DYNCONFD_HOST:PORT]
 *     none     no plugin
 *     up       the plugin, dynconfd at DYNCONFD_HOST:PORT
 *     refused  the plugin, a port nobody listens on (connection refused)
 *     silent   the plugin, a listener that never answers: the first fetch
 *              waits dynconf.startup.timeout.ms (its default, 10 s)
 *
 * A plain producer is made and destroyed first in every mode (librdkafka
 * and OpenSSL initialised alike); then the measured producer is made and
 * held for 500 ms. Prints one line of JSON: the mode, rd_kafka_new's
 * milliseconds for the first measured client and the median of 5 more,
 * the process's VmRSS (kB) and threads before and while it is held.
 */
#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, "VmRSS:", 6))
      kb = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  return kb;
}

static int threads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char e[512];
  if (rd_kafka_conf_set(c, k, v, e, sizeof(e)) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s=%s: %s\n", k, v, e);
    exit(2);
  }
}

/* A listening socket on 127.0.0.1 that is never accepted from: connects
 * succeed (the backlog), requests are never answered. Its port. */
static int silent_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
      listen(fd, 16) || getsockname(fd, (struct sockaddr *)&a, &len))
    exit(2);
  return ntohs(a.sin_port);
}

/* A port nobody listens on (bound, then closed). */
static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
      getsockname(fd, (struct sockaddr *)&a, &len))
    exit(2);
  close(fd);
  return ntohs(a.sin_port);
}

static const char *g_mode, *g_plugin;
static char g_server[64];

static rd_kafka_t *client(int with_plugin, double *ms) {
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  char e[512];
  set(c, "client.id", "bench-plugin");
  set(c, "bootstrap.servers", "127.0.0.1:9"); /* the data plane: unused */
  set(c, "log_level", "0");
  if (with_plugin) {
    set(c, "plugin.library.paths", g_plugin);
    set(c, "dynconf.bootstrap.servers", g_server);
    set(c, "dynconf.log.level", "0");
  }
  double t0 = now_ms();
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof(e));
  *ms = now_ms() - t0;
  if (!rk) {
    fprintf(stderr, "rd_kafka_new: %s\n", e);
    exit(2);
  }
  return rk;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s none|up|refused|silent PLUGIN [HOST:PORT]\n",
            argv[0]);
    return 2;
  }
  g_mode = argv[1];
  g_plugin = argv[2];
  int with = strcmp(g_mode, "none") != 0;
  if (!strcmp(g_mode, "up") && argc > 3)
    snprintf(g_server, sizeof(g_server), "%s", argv[3]);
  else if (!strcmp(g_mode, "silent"))
    snprintf(g_server, sizeof(g_server), "127.0.0.1:%d", silent_port());
  else
    snprintf(g_server, sizeof(g_server), "127.0.0.1:%d", closed_port());

  double ms, rest[5];
  rd_kafka_destroy(client(0, &ms)); /* warm-up, same in every mode */
  usleep(200 * 1000);
  long rss0 = rss_kb();
  int th0 = threads();
  rd_kafka_t *rk = client(with, &ms);
  usleep(500 * 1000);
  long rss1 = rss_kb();
  int th1 = threads();
  rd_kafka_destroy(rk);
  double first = ms;
  int n = !strcmp(g_mode, "silent") ? 1 : 5;
  for (int i = 0; i < n; i++) {
    rd_kafka_destroy(client(with, &rest[i]));
  }
  qsort(rest, (size_t)n, sizeof(rest[0]), cmp);
  printf("{\"mode\":\"%s\",\"librdkafka\":\"%s\",\"new_ms_first\":%.1f,"
         "\"new_ms_median\":%.1f,\"rss_kb_before\":%ld,\"rss_kb_held\":%ld,"
         "\"threads_before\":%d,\"threads_held\":%d}\n",
         g_mode, rd_kafka_version_str(), first, rest[n / 2], rss0, rss1, th0,
         th1);
  return 0;
}
