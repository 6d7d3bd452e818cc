/* SPDX-License-Identifier: BSD-2-Clause */
/* scale attack-seed and scale attack: the largest entity the schema and the
 * server accept, and connections that send big DescribeConfigs requests
 * without reading (see scale.c for the commands' usage). */
#include "codec/proto.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "alter.h"
#include "client/kclient.h"
#include "common/schema.h"
#include "common/errors.h"
#include "proc.h"
#include "scale.h"

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
#include <sys/socket.h>
#include <unistd.h>

/* ---- attack ------------------------------------------------------------- */

/* A large value the schema accepts for e, at most max_bytes long where the
 * type allows a choice; NULL when none is found. Lists repeat their allowed
 * items; the local validator (the same schema code as the server's when
 * built from the same tree) shrinks the value until it passes. */
static char *big_value(const dc_schema_entry_t *e, size_t max_bytes) {
  char why[256];
  char *v = NULL;
  if (!strcmp(e->name, ST))
    return strdup("1800000"); /* dynconfd's default upper bound */
  if (!strcmp(e->name, HB))
    return strdup("1799999"); /* below session.timeout.ms */
  switch (e->type) {
  case DC_TYPE_INT:
  case DC_TYPE_LONG:
  case DC_TYPE_DOUBLE:
    if (asprintf(&v, "%lld", (long long)e->max) < 0)
      return NULL;
    return v;
  case DC_TYPE_BOOLEAN:
    return strdup("false");
  default:
    break;
  }
  for (size_t len = max_bytes; len >= 1; len /= 2) {
    v = calloc(len + 1, 1);
    if (!v)
      return NULL;
    if (e->type == DC_TYPE_STRING && e->allowed) {
      /* The longest allowed value; nothing to grow. */
      for (const char *const *a = e->allowed; *a; a++)
        if (strlen(*a) > strlen(v) && strlen(*a) <= len)
          snprintf(v, len + 1, "%s", *a);
    } else if (e->type == DC_TYPE_LIST && e->allowed) {
      size_t used = 0;
      for (int k = 0;; k++) {
        const char *item = e->allowed[k] ? e->allowed[k] : NULL;
        if (!item) { /* wrap around: repeated items */
          k = -1;
          continue;
        }
        size_t n = strlen(item) + (used ? 1 : 0);
        if (used + n > len)
          break;
        used += (size_t)snprintf(v + used, len + 1 - used, "%s%s",
                                 used ? "," : "", item);
      }
    } else {
      memset(v, 'x', len);
    }
    if (*v && dc_schema_validate(e, v, why, sizeof(why)))
      return v;
    free(v);
    v = NULL;
  }
  return NULL;
}

/* Halves a value the server refused: a list at an item boundary, a free
 * string anywhere. False when there is nothing left to cut. */
static bool shrink(char *val, const dc_schema_entry_t *e) {
  size_t half = strlen(val) / 2;
  if (e->type == DC_TYPE_STRING && !e->allowed && half > 0) {
    val[half] = '\0';
    return true;
  }
  if (e->type != DC_TYPE_LIST)
    return false;
  char *cut = NULL;
  for (char *p = strchr(val, ','); p && (size_t)(p - val) <= half;
       p = strchr(p + 1, ','))
    cut = p;
  if (!cut)
    cut = strchr(val, ','); /* at least drop to the first item */
  if (!cut)
    return false;
  *cut = '\0';
  return true;
}

int scale_cmd_attack_seed(const cfg_t *c) {
  int16_t v;
  dc_kclient_t *kc = scale_connect(c, &v);
  if (!kc)
    return 1;
  size_t n;
  const dc_schema_entry_t *all = dc_schema_all(&n);
  char *vals[32];
  size_t total = 0, nk = 0;
  char msg[700];
  int ret = 0;
  for (size_t i = 0; i < n && nk < 32; i++) {
    char *val = big_value(&all[i], (size_t)c->value_bytes);
    if (!val)
      continue;
    /* Each key on its own, halving what the server refuses. */
    int rc;
    while ((rc = bench_alter_set(kc, v, c->client, 1, &all[i].name,
                           (const char *const *)&val, false, c->timeout_ms,
                           msg, sizeof(msg))) > 0 &&
           shrink(val, &all[i]))
      ;
    if (rc != 0) {
      fprintf(stderr, "scale: setting %s on %s failed: %s\n", all[i].name,
              c->client, msg);
      free(val);
      if (rc < 0) {
        ret = 1;
        break;
      }
      continue;
    }
    vals[nk++] = val;
    total += strlen(val);
  }
  /* One v3 result for the client: what every repetition costs. */
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, (char *)c->client,
                                            -1, NULL};
  dc_describe_configs_req_t req = {1, &res, true, true, 0, false};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  long result_bytes = -1;
  if (!ret && dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 3, scale_enc_describe,
                                 &req, c->timeout_ms, &rd, &arena, msg,
                                 sizeof(msg)) == 0)
    result_bytes = (long)rd.len - 4 - 4; /* throttle time, result count */
  dc_arena_free(&arena);
  printf("attack entity %s: %zu schema keys set, %zu value bytes; one v3 "
         "result (synonyms, documentation) is %ld bytes\n",
         c->client, nk, total, result_bytes);
  printf("RESULT keys=%zu value_bytes=%zu result_bytes=%ld\n", nk, total,
         result_bytes);
  for (size_t i = 0; i < nk; i++)
    free(vals[i]);
  dc_kclient_destroy(kc);
  return ret || nk == 0;
}

/* VmRSS and VmHWM of pid in kB; false when it is gone. */
static bool proc_mem(long pid, long *rss, long *hwm) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%ld/status", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  *rss = *hwm = -1;
  while (fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "VmRSS:", 6))
      *rss = strtol(line + 6, NULL, 10);
    else if (!strncmp(line, "VmHWM:", 6))
      *hwm = strtol(line + 6, NULL, 10);
  }
  fclose(f);
  return *rss >= 0;
}


static int tcp_connect(const char *target) {
  char host[256];
  const char *colon = strrchr(target, ':');
  if (!colon || (size_t)(colon - target) >= sizeof(host))
    return -1;
  snprintf(host, sizeof(host), "%.*s", (int)(colon - target), target);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
  if (getaddrinfo(host, colon + 1, &hints, &ai))
    return -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return fd;
}

/* The request frame: header + DescribeConfigs v3 naming client as often as
 * the frame stays within max_bytes (the size field's value). */
static int build_attack_frame(dc_buf_t *b, const char *client, long max_bytes,
                              int32_t *n_out) {
  /* One repetition: type (1), name (2 + len), null key array (4). */
  long per = 1 + 2 + (long)strlen(client) + 4;
  long fixed = 64 + 32; /* header with client id, counts, flags, slack */
  int32_t n = (int32_t)((max_bytes - fixed) / per);
  if (n < 1)
    return -1;
  dc_describe_configs_req_resource_t *res = calloc((size_t)n, sizeof(*res));
  if (!res)
    return -1;
  for (int32_t i = 0; i < n; i++)
    res[i] = (dc_describe_configs_req_resource_t){DC_RES_CLIENT, (char *)client,
                                                  -1, NULL};
  dc_req_header_t h = {DC_API_DESCRIBE_CONFIGS, 3, 1, (char *)"scale-attack"};
  dc_describe_configs_req_t req = {n, res, true, true, 0, false};
  size_t off = dc_wr_frame_begin(b);
  int err = dc_req_header_encode(b, &h);
  if (!err)
    err = dc_describe_configs_req_encode(b, 3, &req);
  dc_wr_frame_end(b, off);
  free(res);
  if (err || b->err || (long)b->len - 4 > max_bytes)
    return -1;
  *n_out = n;
  return 0;
}

typedef struct aconn {
  int fd;
  size_t off;          /* bytes of the current frame copy already sent */
  long frames;         /* whole frames sent */
  int64_t progress_us; /* last time a send made progress */
} aconn_t;

/* One attack run: its frame, its connections and what it has seen. */
typedef struct attack {
  const cfg_t *c;
  dc_buf_t frame; /* owned */
  int32_t reps;
  aconn_t *cs;       /* owned */
  struct pollfd *pf; /* owned */
  int alive;
  long idle_rss, idle_hwm, rss, hwm, max_rss;
  long long cpu_mark;
  int64_t t0, deadline, cpu_mark_us;
  const char *why, *reason;
} attack_t;

/* The frame, dynconfd's idle memory and the connections; -1 after saying
 * why. */
static int attack_setup(attack_t *a) {
  const cfg_t *c = a->c;
  if (build_attack_frame(&a->frame, c->client, c->request_bytes, &a->reps)) {
    fprintf(stderr, "scale: cannot build a %ld-byte DescribeConfigs v3 "
                    "request\n", c->request_bytes);
    return -1;
  }
  if (!proc_mem(c->pid, &a->idle_rss, &a->idle_hwm)) {
    fprintf(stderr, "scale: no process %ld\n", c->pid);
    return -1;
  }
  a->cs = calloc((size_t)c->connections, sizeof(*a->cs));
  a->pf = calloc((size_t)c->connections, sizeof(*a->pf));
  if (!a->cs || !a->pf)
    return -1;
  for (int i = 0; i < c->connections; i++)
    a->cs[i].fd = -1;
  for (int i = 0; i < c->connections; i++) {
    a->cs[i].fd = tcp_connect(c->target);
    if (a->cs[i].fd < 0) {
      fprintf(stderr, "scale: cannot connect to %s\n", c->target);
      return -1;
    }
  }
  return 0;
}

/* Sends on every connection until it would block; a connection the
 * server closed is counted and dropped. */
static void attack_send(attack_t *a, int64_t now) {
  for (int i = 0; i < a->c->connections; i++) {
    aconn_t *k = &a->cs[i];
    while (k->fd >= 0) {
      ssize_t n = send(k->fd, a->frame.data + k->off, a->frame.len - k->off,
                       MSG_NOSIGNAL);
      if (n > 0) {
        k->progress_us = now;
        k->off += (size_t)n;
        if (k->off == a->frame.len) {
          k->off = 0;
          k->frames++;
        }
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      close(k->fd); /* the server closed it: counted, not retried */
      k->fd = -1;
      a->alive--;
    }
    a->pf[i] = (struct pollfd){k->fd, POLLOUT, 0};
  }
}

/* Whether the attack is over: dynconfd gone, the RSS cap, every
 * connection closed, the time limit, or settled. Sets why and reason. */
static bool attack_over(attack_t *a) {
  const cfg_t *c = a->c;
  if (!proc_mem(c->pid, &a->rss, &a->hwm)) {
    a->why = "dynconfd exited";
    a->reason = "exited";
    return true;
  }
  if (a->rss > a->max_rss)
    a->max_rss = a->rss;
  if (a->rss >= c->rss_cap_mb * 1024) {
    a->why = "RSS cap reached";
    a->reason = "cap";
    return true;
  }
  if (a->alive == 0) {
    a->why = "every connection was closed by dynconfd";
    a->reason = "closed";
    return true;
  }
  int64_t now = dc_mono_us();
  if (now >= a->deadline)
    return true;
  /* Settled: no send progressed for a second and dynconfd used no CPU
   * over the last second, so nothing is left in flight to grow. */
  long long cpu = bench_proc_ticks((pid_t)c->pid);
  if (now - a->cpu_mark_us >= 1000000) {
    bool blocked = true;
    for (int i = 0; i < c->connections; i++)
      if (a->cs[i].fd >= 0 && now - a->cs[i].progress_us < 1000000)
        blocked = false;
    if (blocked && cpu == a->cpu_mark) {
      a->why = "settled (every connection blocked, dynconfd idle for 1 s)";
      a->reason = "settled";
      return true;
    }
    a->cpu_mark = cpu;
    a->cpu_mark_us = now;
  }
  return false;
}

static void attack_report(attack_t *a) {
  const cfg_t *c = a->c;
  double secs = (double)(dc_mono_us() - a->t0) / 1e6;
  long frames = 0;
  for (int i = 0; i < c->connections; i++)
    frames += a->cs[i].frames;
  proc_mem(c->pid, &a->rss, &a->hwm);
  if (a->rss > a->max_rss)
    a->max_rss = a->rss;
  printf("attack stopped after %.1f s: %s; %ld whole requests sent, %d of %d "
         "connections open\n",
         secs, a->why, frames, a->alive, c->connections);
  printf("dynconfd RSS: idle %ld kB, now %ld kB, peak (VmHWM) %ld kB\n",
         a->idle_rss, a->rss, a->hwm);
  printf("RESULT idle_kb=%ld rss_kb=%ld hwm_kb=%ld max_sampled_kb=%ld "
         "seconds=%.2f frames=%ld frame_bytes=%zu reps=%d alive=%d "
         "reason=%s\n",
         a->idle_rss, a->rss, a->hwm, a->max_rss, secs, frames, a->frame.len,
         a->reps, a->alive, a->reason);
}

static void attack_free(attack_t *a) {
  for (int i = 0; a->cs && i < a->c->connections; i++)
    if (a->cs[i].fd >= 0)
      close(a->cs[i].fd);
  free(a->cs);
  free(a->pf);
  dc_buf_free(&a->frame);
}

int scale_cmd_attack(const cfg_t *c) {
  attack_t a = {.c = c, .why = "time limit", .reason = "time"};
  dc_buf_init(&a.frame);
  if (attack_setup(&a)) {
    attack_free(&a);
    return 1;
  }
  printf("attack: %d connections, each sending %zu-byte DescribeConfigs v3 "
         "requests naming %s %d times, never reading\n",
         c->connections, a.frame.len, c->client, a.reps);
  fflush(stdout);

  a.t0 = dc_mono_us();
  a.deadline = a.t0 + (int64_t)(c->seconds * 1e6);
  a.cpu_mark = bench_proc_ticks((pid_t)c->pid);
  a.cpu_mark_us = a.t0;
  a.rss = a.max_rss = a.idle_rss;
  a.hwm = a.idle_hwm;
  a.alive = c->connections;
  for (int i = 0; i < c->connections; i++)
    a.cs[i].progress_us = a.t0;
  for (;;) {
    attack_send(&a, dc_mono_us());
    if (attack_over(&a))
      break;
    poll(a.pf, (nfds_t)c->connections, 10); /* also paces the RSS samples */
  }
  attack_report(&a);
  attack_free(&a);
  return 0;
}
