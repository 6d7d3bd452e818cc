/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * watch_fanout: how fast one alter reaches N parked watchers (dynconf's
 * Watch, API 20001), beside one DescribeConfigs round by the same N
 * clients measured in the same run; or (--hold) N parked watchers kept
 * parked as background load while something else is measured.
 *
 *   watch_fanout --target HOST:PORT [--watchers N] [--rounds R]
 *                [--metrics HOST:PORT] [--pid PID] [--hold]
 *
 * N connections, each watching its own client-id fan-<i> (all inherit
 * <default>). Each round: every connection parks Watch(version V, 120 s);
 * once dynconfd's dynconfd_watches gauge says all are parked (--metrics),
 * an alter of <default> is sent on another connection and, from its
 * acknowledgement, the time until each watcher holds its answer is taken.
 * Then every connection sends one DescribeConfigs at once: the time until
 * all are answered is what a poll by all N clients costs at best. With
 * --pid, dynconfd's resident memory before and after parking and its CPU
 * during the fan-out are printed too.
 *
 * Prints one line per round and a RESULT line. Exit 0, or 1 when a
 * watcher was not answered or answered wrong.
 *
 * --hold alters nothing (--rounds and --pid are ignored): each connection
 * asks its version with Watch(-1) and parks Watch(V, 120 s); whenever one
 * is answered (changed or unchanged) it parks again at once with the
 * version from the answer. Once all N are parked (with --metrics: once
 * dynconfd_watches >= N, other clients' watches counted too) it prints
 * "HOLDING N" and flushes; it runs until stdin closes (a stdin that cannot
 * be polled, such as /dev/null, is not watched) or SIGTERM/SIGINT, then
 * prints "HELD answers=A changed=C unchanged=U errors=E" (A counts the
 * answers to parked watches; E error answers and dropped connections).
 * Exit 0, or 1 when any answer was an error, a connection dropped or the
 * watches were not all parked within 60 s.
 */
#include "alter.h"
#include "client/kclient.h"
#include "codec/proto.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct watcher {
  int fd;
  char client[32];
  dc_buf_t in; /* bytes read, not yet a whole frame */
  double at_ms; /* when its answer came, -1 = not yet */
  int64_t version; /* --hold: the version its parked watch knows */
  bool parked;     /* --hold: it has had its version and parked */
} watcher_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int connect_to(const char *target) {
  char host[256];
  const char *colon = strrchr(target, ':');
  if (!colon || (size_t)(colon - target) >= sizeof(host))
    return -1;
  memcpy(host, target, (size_t)(colon - target));
  host[colon - target] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(host, colon + 1, &hints, &ai))
    return -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  int one = 1;
  if (fd >= 0)
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

static void nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A whole request frame for (api, v) with body enc(req). */
static void frame(dc_buf_t *b, int16_t api, int16_t v, int32_t corr,
                  int (*enc)(dc_buf_t *, int16_t, const void *),
                  const void *req) {
  size_t off = dc_wr_frame_begin(b);
  dc_req_header_t h = {api, v, corr, (char *)"fanout"};
  dc_req_header_encode(b, &h);
  enc(b, v, req);
  dc_wr_frame_end(b, off);
}

static int enc_watch(dc_buf_t *b, int16_t v, const void *r) {
  return dc_watch_req_encode(b, v, r);
}

static int enc_describe(dc_buf_t *b, int16_t v, const void *r) {
  return dc_describe_configs_req_encode(b, v, r);
}

/* Writes all of p (small frames: a full socket buffer is waited out). */
static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      poll(&pf, 1, 1000);
      continue;
    }
    if (w <= 0)
      return -1;
    c += w, n -= (size_t)w;
  }
  return 0;
}

/* The length of the whole frame at the front of w->in, 0 if none yet. */
static size_t frame_len(const watcher_t *w) {
  if (w->in.len < 4)
    return 0;
  size_t len = (size_t)w->in.data[0] << 24 | (size_t)w->in.data[1] << 16 |
               (size_t)w->in.data[2] << 8 | w->in.data[3];
  return w->in.len >= 4 + len ? 4 + len : 0;
}

/* 1 when w->in holds a whole frame (reading what is there first), -1 on
 * EOF or error, 0 when more must come. */
static int read_some(watcher_t *w) {
  if (frame_len(w))
    return 1;
  char buf[65536];
  ssize_t n = read(w->fd, buf, sizeof(buf));
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
    return -1;
  if (n > 0)
    dc_buf_append(&w->in, buf, (size_t)n);
  return frame_len(w) ? 1 : 0;
}

/* Drops the frame at the front of w->in. */
static void consume(watcher_t *w) {
  size_t n = frame_len(w);
  memmove(w->in.data, w->in.data + n, w->in.len - n);
  w->in.len -= n;
}

/* Waits up to 10 s for a whole frame on w. */
static int wait_frame(watcher_t *w) {
  double deadline = now_ms() + 10000;
  int rc;
  while ((rc = read_some(w)) == 0 && now_ms() < deadline) {
    struct pollfd pf = {.fd = w->fd, .events = POLLIN};
    poll(&pf, 1, 100);
  }
  return rc == 1 ? 0 : -1;
}

/* The size of the last watch answer read (frame included): what
 * bench/send_floor sends to measure the kernel's part. */
static size_t g_answer_bytes;

/* The watch answer in w->in: changed and its version (-1 when not a good
 * answer). */
static int64_t watch_answer(watcher_t *w, bool *changed) {
  g_answer_bytes = frame_len(w);
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_rd_init(&rd, w->in.data + 4, w->in.len - 4, &a);
  int32_t corr;
  dc_watch_resp_t r;
  int64_t v = -1;
  if (!dc_resp_header_decode(&rd, DC_API_WATCH, 0, &corr) &&
      !dc_watch_resp_decode(&rd, 0, &r) && !r.error_code) {
    v = r.version;
    *changed = r.changed;
  }
  dc_arena_free(&a);
  consume(w);
  return v;
}

/* dynconfd_watches from the metrics endpoint, -1 when unreadable. */
static long parked_now(const char *metrics) {
  int fd = connect_to(metrics);
  if (fd < 0)
    return -1;
  const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
  static char buf[1 << 20];
  size_t n = 0;
  ssize_t r;
  if (write_all(fd, req, strlen(req)) == 0)
    while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
      n += (size_t)r;
  close(fd);
  buf[n] = '\0';
  const char *p = strstr(buf, "\ndynconfd_watches ");
  return p ? strtol(p + 18, NULL, 10) : -1;
}

typedef struct cfg {
  const char *target, *metrics;
  int n, rounds;
  pid_t pid;
  bool hold;
} cfg_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Waits for every watcher's frame (or 30 s); fills lat with each one's
 * time since t0. Returns how many answered; *bad counts wrong answers. */
static int collect(int n, int ep, double t0, bool want_watch, double *lat,
                   int *bad) {
  int got = 0;
  double deadline = now_ms() + 30000;
  struct epoll_event evs[256];
  while (got < n && now_ms() < deadline) {
    int k = epoll_wait(ep, evs, 256, 1000);
    for (int i = 0; i < k; i++) {
      watcher_t *w = evs[i].data.ptr;
      int rc;
      while ((rc = read_some(w)) == 1) {
        double t = now_ms();
        bool changed = false;
        if (want_watch && (watch_answer(w, &changed) < 0 || !changed))
          (*bad)++;
        else if (!want_watch)
          consume(w);
        lat[got++] = t - t0;
      }
      if (rc < 0) {
        (*bad)++;
        epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
      }
    }
  }
  return got;
}

/* The CPU time of every thread of pid so far, in ns (schedstat). */
static double cpu_ns(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  double ns = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char p2[600];
    unsigned long long run = 0;
    snprintf(p2, sizeof(p2), "%s/%s/schedstat", path, e->d_name);
    FILE *f = e->d_name[0] != '.' ? fopen(p2, "r") : NULL;
    if (f && fscanf(f, "%llu", &run) == 1)
      ns += (double)run;
    if (f)
      fclose(f);
  }
  if (d)
    closedir(d);
  return ns;
}

static long long rss_kib(pid_t pid) {
  return pid > 0 ? bench_proc_status(pid, "VmRSS") : -1;
}

/* What the rounds add up, for the RESULT line. */
typedef struct sums {
  double p99, poll, cpu_us; /* cpu_us: dynconfd's per woken watcher */
} sums_t;

/* The version every fan-<i> resolves to now (all inherit <default>),
 * asked on the first watcher; -1 after saying none came. */
static int64_t current_version(watcher_t *ws, dc_buf_t *b) {
  dc_watch_req_t now_req = {ws[0].client, -1, 1, -1};
  frame(b, DC_API_WATCH, 0, 1, enc_watch, &now_req);
  bool changed;
  int64_t v = -1;
  if (!write_all(ws[0].fd, b->data, b->len) && !wait_frame(&ws[0]))
    v = watch_answer(&ws[0], &changed);
  if (v < 0)
    fprintf(stderr, "watch_fanout: no version from dynconfd\n");
  return v;
}

/* Parks a Watch past version v on every watcher. */
static int park_all(const cfg_t *c, watcher_t *ws, dc_buf_t *b, int64_t v) {
  for (int i = 0; i < c->n; i++) {
    dc_buf_clear(b);
    dc_watch_req_t req = {ws[i].client, v, 120000, -1};
    frame(b, DC_API_WATCH, 0, 2, enc_watch, &req);
    if (write_all(ws[i].fd, b->data, b->len))
      return -1;
  }
  return 0;
}

/* Sends one DescribeConfigs from every watcher at once; -1 when one could
 * not be sent. */
static int describe_all(const cfg_t *c, watcher_t *ws, dc_buf_t *b) {
  for (int i = 0; i < c->n; i++) {
    dc_buf_clear(b);
    dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, ws[i].client,
                                              -1, NULL};
    dc_describe_configs_req_t d = {1, &res, false, false, 0, false};
    frame(b, DC_API_DESCRIBE_CONFIGS, 4, 3, enc_describe, &d);
    if (write_all(ws[i].fd, b->data, b->len))
      return -1;
  }
  return 0;
}

/* One round: every watcher parks, one alter of <default> wakes them all;
 * then the baseline, every client polling once at the same moment. */
static int run(const cfg_t *c, watcher_t *ws, int ep, dc_kclient_t *admin,
               int round, double *lat, sums_t *sum) {
  dc_buf_t b;
  dc_buf_init(&b);
  int64_t v = current_version(ws, &b);
  if (v < 0)
    return -1;
  long long rss0 = rss_kib(c->pid);
  if (park_all(c, ws, &b, v))
    return -1;
  double wait_until = now_ms() + 30000;
  while (c->metrics && parked_now(c->metrics) < c->n && now_ms() < wait_until)
    usleep(20000);
  long long rss1 = rss_kib(c->pid);
  double cpu0 = c->pid ? cpu_ns(c->pid) : 0;
  char val[16], msg[256];
  snprintf(val, sizeof(val), "%d", round + 1);
  const char *key = "linger.ms", *vp = val;
  if (bench_alter_set(admin, 0, "<default>", 1, &key, &vp, false, 10000, msg,
                      sizeof(msg))) {
    fprintf(stderr, "watch_fanout: alter failed: %s\n", msg);
    return -1;
  }
  double t0 = now_ms();
  int bad = 0, got = collect(c->n, ep, t0, true, lat, &bad);
  double cpu1 = c->pid ? cpu_ns(c->pid) : 0;
  qsort(lat, (size_t)got, sizeof(*lat), cmp_double);
  double p50 = got ? lat[got / 2] : -1, p99 = got ? lat[(got * 99) / 100] : -1;
  double last = got ? lat[got - 1] : -1;
  double p0 = now_ms();
  if (describe_all(c, ws, &b))
    return -1;
  int pbad = 0, pgot = collect(c->n, ep, p0, false, lat, &pbad);
  double poll_all = pgot ? lat[pgot - 1] : -1;
  printf("round %d: %d/%d watchers answered (%d wrong, answers of %zu B): "
         "p50 %.2f ms, p99 %.2f ms, all %.2f ms after the alter's ack; one "
         "DescribeConfigs by all %d: %.2f ms",
         round + 1, got, c->n, bad, g_answer_bytes, p50, p99, last, c->n,
         poll_all);
  if (c->pid > 0 && rss0 >= 0 && rss1 >= 0)
    printf("; dynconfd %+lld KiB for %d parked (%.0f B each), %.1f ms CPU "
           "for the fan-out (%.1f us per watcher)", rss1 - rss0, c->n,
           1024.0 * (double)(rss1 - rss0) / c->n, (cpu1 - cpu0) / 1e6,
           (cpu1 - cpu0) / 1e3 / c->n);
  printf("\n");
  dc_buf_free(&b);
  sum->p99 += p99;
  sum->poll += poll_all;
  sum->cpu_us += (cpu1 - cpu0) / 1e3 / c->n;
  return got == c->n && !bad && pgot == c->n && !pbad ? 0 : -1;
}

/* ---- --hold: keep N watches parked --------------------------------------- */

#define HOLD_TIMEOUT_MS 120000 /* each parked Watch's own timeout */
#define HOLD_PARK_MS 60000     /* all must be parked within this */

static volatile sig_atomic_t g_stop;
static void on_stop(int sig) {
  (void)sig;
  g_stop = 1;
}

typedef struct held {
  long answers, changed, unchanged, errors, dropped;
  int parked;  /* watchers that have parked Watch(V) at least once */
  bool stdin_watched;
  dc_buf_t out; /* scratch for the request frames */
} held_t;

/* Sends Watch(known, timeout_ms) on w. */
static int send_watch(held_t *h, watcher_t *w, int64_t known,
                      int32_t timeout_ms) {
  dc_buf_clear(&h->out);
  dc_watch_req_t req = {w->client, known, timeout_ms, -1};
  frame(&h->out, DC_API_WATCH, 0, known < 0 ? 1 : 2, enc_watch, &req);
  return write_all(w->fd, h->out.data, h->out.len);
}

/* Stops watching w: its connection dropped or it was answered with an
 * error (counted by the caller). The first few are named on stderr. */
static void drop(int ep, watcher_t *w, const char *why) {
  static int told;
  if (w->fd < 0)
    return;
  if (told++ < 5)
    fprintf(stderr, "watch_fanout: %s: %s%s\n", w->client, why,
            told == 5 ? " (further ones not shown)" : "");
  epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
  close(w->fd);
  w->fd = -1;
}

/* One answer at the front of w->in: count it, park again. */
static void hold_answer(int ep, held_t *h, watcher_t *w) {
  bool changed = false;
  int64_t v = watch_answer(w, &changed);
  if (v < 0) {
    h->errors++;
    drop(ep, w, "error answer");
    return;
  }
  if (w->parked) {
    h->answers++;
    if (changed)
      h->changed++;
    else
      h->unchanged++;
  } else {
    w->parked = true;
    h->parked++;
  }
  w->version = v;
  if (send_watch(h, w, v, HOLD_TIMEOUT_MS)) {
    h->dropped++;
    drop(ep, w, "cannot park again");
  }
}

/* w is readable: one read, then every whole frame it completed. */
static void hold_event(int ep, held_t *h, watcher_t *w) {
  int rc = read_some(w);
  while (w->fd >= 0 && frame_len(w))
    hold_answer(ep, h, w);
  if (rc < 0 && w->fd >= 0) {
    h->dropped++;
    drop(ep, w, "connection dropped");
  }
}

/* Stdin is readable (so this read does not block; stdin is left
 * blocking, its flags are shared): true when it closed. Data is dropped. */
static bool stdin_closed(void) {
  char buf[256];
  ssize_t n = read(0, buf, sizeof(buf));
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

/* All N parked (and, with --metrics, dynconfd counts as many). */
static bool all_parked(const cfg_t *c, const held_t *h) {
  return h->parked >= c->n && (!c->metrics || parked_now(c->metrics) >= c->n);
}

/* Signals, stdin in the set, every watcher asking its version. */
static int hold_start(const cfg_t *c, watcher_t *ws, int ep, held_t *h) {
  struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  h->stdin_watched = !epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
  if (!h->stdin_watched)
    fprintf(stderr, "watch_fanout: stdin cannot be polled (%s): holding "
            "until SIGTERM\n", strerror(errno));
  for (int i = 0; i < c->n; i++)
    if (send_watch(h, &ws[i], -1, 1)) {
      fprintf(stderr, "watch_fanout: %s: cannot ask its version\n",
              ws[i].client);
      return -1;
    }
  return 0;
}

/* Serves answers until stdin closes or a signal; prints HOLDING once. */
static int hold_loop(const cfg_t *c, int ep, held_t *h) {
  bool holding = false;
  double park_by = now_ms() + HOLD_PARK_MS;
  struct epoll_event evs[1024];
  while (!g_stop) {
    int k = epoll_wait(ep, evs, 1024, holding ? 200 : 20);
    for (int i = 0; i < k; i++) {
      if (!evs[i].data.ptr && stdin_closed())
        return holding ? 0 : -1;
      if (evs[i].data.ptr)
        hold_event(ep, h, evs[i].data.ptr);
    }
    if (!holding && (holding = all_parked(c, h))) {
      printf("HOLDING %d\n", c->n);
      fflush(stdout);
    } else if (!holding && now_ms() > park_by) {
      fprintf(stderr, "watch_fanout: %d of %d watches parked after %d s "
              "(dynconfd_watches %ld)\n", h->parked, c->n,
              HOLD_PARK_MS / 1000, c->metrics ? parked_now(c->metrics) : -1);
      return -1;
    }
  }
  return holding ? 0 : -1;
}

static int hold(const cfg_t *c, watcher_t *ws, int ep) {
  held_t h = {0};
  dc_buf_init(&h.out);
  int rc = hold_start(c, ws, ep, &h);
  if (!rc)
    rc = hold_loop(c, ep, &h);
  printf("HELD answers=%ld changed=%ld unchanged=%ld errors=%ld\n", h.answers,
         h.changed, h.unchanged, h.errors + h.dropped);
  fflush(stdout);
  dc_buf_free(&h.out);
  return rc || h.errors || h.dropped ? 1 : 0;
}

static int parse(int argc, char **argv, cfg_t *c) {
  static const struct option opts[] = {
      {"target", required_argument, 0, 't'},
      {"watchers", required_argument, 0, 'n'},
      {"rounds", required_argument, 0, 'r'},
      {"metrics", required_argument, 0, 'm'},
      {"pid", required_argument, 0, 'p'},
      {"hold", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  *c = (cfg_t){.n = 1000, .rounds = 3};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (o == 't')
      c->target = optarg;
    else if (o == 'n')
      c->n = atoi(optarg);
    else if (o == 'r')
      c->rounds = atoi(optarg);
    else if (o == 'm')
      c->metrics = optarg;
    else if (o == 'p')
      c->pid = (pid_t)atoi(optarg);
    else if (o == 'h')
      c->hold = true;
    else
      return -1;
  }
  return c->target && c->n > 0 && c->n <= 100000 && c->rounds > 0 ? 0 : -1;
}

/* N connections fan-<i>, non-blocking, in the epoll set ep. */
static watcher_t *connect_all(const cfg_t *c, int ep) {
  watcher_t *ws = calloc((size_t)c->n, sizeof(*ws));
  for (int i = 0; ws && i < c->n; i++) {
    snprintf(ws[i].client, sizeof(ws[i].client), "fan-%d", i);
    dc_buf_init(&ws[i].in);
    if ((ws[i].fd = connect_to(c->target)) < 0) {
      fprintf(stderr, "watch_fanout: connection %d: %s\n", i, strerror(errno));
      exit(1);
    }
    nonblocking(ws[i].fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ws[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, ws[i].fd, &ev);
  }
  return ws;
}

/* The timed rounds; returns 0 when every watcher was answered right. */
static int rounds(const cfg_t *c, watcher_t *ws, int ep) {
  char err[256] = "out of memory";
  double *lat = calloc((size_t)c->n, sizeof(*lat));
  dc_kclient_t *admin = dc_kclient_new("fanout-admin");
  if (!lat || !admin ||
      dc_kclient_connect(admin, c->target, 10000, err, sizeof(err))) {
    fprintf(stderr, "watch_fanout: cannot set up: %s\n", err);
    exit(1);
  }
  sums_t sum = {0};
  int rc = 0;
  for (int r = 0; r < c->rounds && !rc; r++)
    rc = run(c, ws, ep, admin, r, lat, &sum);
  printf("RESULT watchers=%d rounds=%d mean_p99_ms=%.2f mean_poll_round_ms=%.2f "
         "mean_cpu_us_per_watcher=%.2f answer_bytes=%zu ok=%d\n", c->n,
         c->rounds, sum.p99 / c->rounds, sum.poll / c->rounds,
         sum.cpu_us / c->rounds, g_answer_bytes, rc == 0);
  dc_kclient_destroy(admin);
  free(lat);
  return rc;
}

int main(int argc, char **argv) {
  cfg_t c;
  if (parse(argc, argv, &c)) {
    fprintf(stderr, "usage: watch_fanout --target HOST:PORT [--watchers N] "
                    "[--rounds R] [--metrics HOST:PORT] [--pid PID] [--hold]\n"
                    "  --hold: keep N watches parked (each parks again once "
                    "answered), print\n"
                    "          HOLDING N once all are, and HELD ... when stdin "
                    "closes or on SIGTERM\n");
    return 2;
  }
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl)) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  watcher_t *ws = connect_all(&c, ep);
  if (!ws) {
    fprintf(stderr, "watch_fanout: out of memory\n");
    return 1;
  }
  int rc = c.hold ? hold(&c, ws, ep) : rounds(&c, ws, ep);
  for (int i = 0; i < c.n; i++) {
    if (ws[i].fd >= 0)
      close(ws[i].fd);
    dc_buf_free(&ws[i].in);
  }
  close(ep);
  free(ws);
  return rc ? 1 : 0;
}
