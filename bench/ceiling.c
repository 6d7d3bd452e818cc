/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ceiling: the fastest Kafka-protocol server this machine runs, the
 * baseline bench/run.sh holds dynconfd to. It answers every request with
 * dynconfd's own answer to the same request, recorded once, and does
 * nothing else: no decoding beyond the request header, no configuration,
 * no metrics.
 *
 *   ceiling --upstream HOST:PORT [--listen HOST:PORT]
 *
 * One thread, epoll, non-blocking sockets, like dynconfd's loop. Each
 * request frame is keyed by its bytes after the correlation id (API key
 * and version before it, the client id and body after it). The first
 * time a key is seen, the frame goes to the upstream (dynconfd) over one
 * blocking connection and the answer is kept without its correlation id;
 * from then on it is answered from memory with the caller's correlation
 * id. Answers of one read are written with one send. Prints "listening on
 * HOST:PORT" when ready; runs until killed. At most MAX_KEYS distinct
 * requests and MAX_FRAME bytes per frame (a connection that breaks either
 * is closed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FRAME (1u << 20)
#define MAX_KEYS 64
#define READ_CHUNK 65536

/* One recorded answer: the request after its correlation id, and the
 * response after its correlation id. */
typedef struct answer {
  uint8_t key_version[4]; /* the request's API key and version */
  uint8_t *req, *resp;
  size_t req_len, resp_len;
  uint64_t hash;
} answer_t;

static answer_t g_answers[MAX_KEYS];
static size_t g_n_answers;
static int g_upstream = -1;

typedef struct conn {
  int fd;
  uint8_t *in, *out;
  size_t in_len, in_cap, out_len, out_cap, out_off;
} conn_t;

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static void put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static uint64_t fnv1a(const uint8_t *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* ---- the upstream: one blocking connection, used on a miss ------------- */

static int split_hostport(const char *s, struct sockaddr_in *sa) {
  char host[64];
  const char *colon = strrchr(s, ':');
  if (!colon || (size_t)(colon - s) >= sizeof(host))
    return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  memset(sa, 0, sizeof(*sa));
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)atoi(colon + 1));
  return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int io_all(int fd, uint8_t *p, size_t n, int writing) {
  while (n) {
    ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p += r, n -= (size_t)r;
  }
  return 0;
}

/* Sends frame (with its size prefix) upstream and records the answer. */
static answer_t *record(const uint8_t *frame, size_t len, uint64_t hash) {
  if (g_n_answers == MAX_KEYS) {
    fprintf(stderr, "ceiling: more than %d distinct requests\n", MAX_KEYS);
    return NULL;
  }
  uint8_t size[4], *resp = NULL;
  if (io_all(g_upstream, (uint8_t *)frame, len, 1) ||
      io_all(g_upstream, size, 4, 0)) {
    fprintf(stderr, "ceiling: the upstream went away\n");
    return NULL;
  }
  uint32_t n = get_u32(size);
  if (n < 4 || n > MAX_FRAME || !(resp = malloc(n)) ||
      io_all(g_upstream, resp, n, 0)) {
    fprintf(stderr, "ceiling: a bad answer from the upstream\n");
    free(resp);
    return NULL;
  }
  answer_t *a = &g_answers[g_n_answers];
  memcpy(a->key_version, frame + 4, 4);
  a->req_len = len - 12;
  a->req = malloc(a->req_len + 1);
  a->resp_len = n - 4;
  a->resp = malloc(a->resp_len);
  if (!a->req || !a->resp) {
    free(a->req), free(a->resp), free(resp);
    return NULL;
  }
  memcpy(a->req, frame + 12, a->req_len);
  memcpy(a->resp, resp + 4, a->resp_len);
  a->hash = hash;
  free(resp);
  g_n_answers++;
  return a;
}

/* The answer to frame: API key and version at bytes 4..7, correlation id
 * at 8..11, the rest after. */
static answer_t *answer_for(const uint8_t *frame, size_t len) {
  uint64_t h = fnv1a(frame + 4, 4, 1469598103934665603ull);
  h = fnv1a(frame + 12, len - 12, h);
  for (size_t i = 0; i < g_n_answers; i++) {
    answer_t *a = &g_answers[i];
    if (a->hash == h && !memcmp(a->key_version, frame + 4, 4) &&
        a->req_len == len - 12 &&
        !memcmp(a->req, frame + 12, a->req_len))
      return a;
  }
  return record(frame, len, h);
}

/* ---- the clients ---------------------------------------------------------- */

static int reserve(uint8_t **p, size_t *cap, size_t need) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 4096;
  while (c < need)
    c *= 2;
  uint8_t *n = realloc(*p, c);
  if (!n)
    return -1;
  *p = n, *cap = c;
  return 0;
}

static void conn_close(int ep, conn_t *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->in), free(c->out), free(c);
}

/* Answers every whole frame in c->in into c->out. -1: close it. */
static int answer_frames(conn_t *c) {
  size_t off = 0;
  while (c->in_len - off >= 4) {
    uint32_t n = get_u32(c->in + off);
    if (n < 8 || n > MAX_FRAME)
      return -1;
    if (c->in_len - off < 4 + n)
      break;
    answer_t *a = answer_for(c->in + off, 4 + n);
    if (!a || reserve(&c->out, &c->out_cap, c->out_len + 8 + a->resp_len))
      return -1;
    uint8_t *o = c->out + c->out_len;
    put_u32(o, (uint32_t)(4 + a->resp_len));
    memcpy(o + 4, c->in + off + 8, 4); /* the caller's correlation id */
    memcpy(o + 8, a->resp, a->resp_len);
    c->out_len += 8 + a->resp_len;
    off += 4 + n;
  }
  memmove(c->in, c->in + off, c->in_len - off);
  c->in_len -= off;
  return 0;
}

/* Writes what c->out holds; EPOLLOUT is asked for while some remains. */
static int flush_out(int ep, conn_t *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                     MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (w <= 0)
      return -1;
    c->out_off += (size_t)w;
  }
  int pending = c->out_off < c->out_len;
  if (!pending)
    c->out_off = c->out_len = 0;
  struct epoll_event ev = {.events = EPOLLIN | (pending ? EPOLLOUT : 0),
                           .data.ptr = c};
  return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static int serve(int ep, conn_t *c, uint32_t events) {
  if (events & EPOLLIN) {
    for (;;) {
      if (reserve(&c->in, &c->in_cap, c->in_len + READ_CHUNK))
        return -1;
      ssize_t r = read(c->fd, c->in + c->in_len, READ_CHUNK);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      if (r <= 0)
        return -1;
      c->in_len += (size_t)r;
      if (r < READ_CHUNK)
        break;
    }
    if (answer_frames(c))
      return -1;
  }
  return flush_out(ep, c);
}

static void accept_all(int ep, int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    conn_t *c = calloc(1, sizeof(*c));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (!c || (c->fd = fd, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))) {
      free(c);
      close(fd);
    }
  }
}

static int listen_on(const char *addr) {
  struct sockaddr_in sa;
  socklen_t len = sizeof(sa);
  int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0 || split_hostport(addr, &sa) ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
      bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1024) ||
      getsockname(fd, (struct sockaddr *)&sa, &len)) {
    fprintf(stderr, "ceiling: cannot listen on %s: %s\n", addr,
            strerror(errno));
    return -1;
  }
  printf("listening on 127.0.0.1:%d\n", ntohs(sa.sin_port));
  fflush(stdout);
  return fd;
}

static int connect_upstream(const char *addr) {
  struct sockaddr_in sa;
  int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || split_hostport(addr, &sa) ||
      connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
    fprintf(stderr, "ceiling: cannot reach the upstream %s: %s\n", addr,
            strerror(errno));
    return -1;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int main(int argc, char **argv) {
  const char *upstream = NULL, *listen_addr = "127.0.0.1:0";
  static const struct option opts[] = {{"upstream", required_argument, 0, 'u'},
                                       {"listen", required_argument, 0, 'l'},
                                       {0, 0, 0, 0}};
  for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
    if (o == 'u')
      upstream = optarg;
    else if (o == 'l')
      listen_addr = optarg;
    else
      upstream = NULL, argc = 0;
  }
  if (!upstream) {
    fprintf(stderr, "Usage: ceiling --upstream HOST:PORT [--listen HOST:PORT]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if ((g_upstream = connect_upstream(upstream)) < 0 || ep < 0)
    return 1;
  int lfd = listen_on(listen_addr);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  if (lfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev))
    return 1;
  struct epoll_event evs[64];
  for (;;) {
    int n = epoll_wait(ep, evs, 64, -1);
    for (int i = 0; i < n; i++) {
      if (!evs[i].data.ptr)
        accept_all(ep, lfd);
      else if (serve(ep, evs[i].data.ptr, evs[i].events))
        conn_close(ep, evs[i].data.ptr);
    }
  }
}
