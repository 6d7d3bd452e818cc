/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Blocking Kafka-protocol client connection (see kclient.h): the handle and
 * connection set-up. Requests, responses and the socket's waits and close
 * are in kclient_io.c, TLS and SASL in kclient_security.c.
 *
 * The socket stays non-blocking for its whole life so that every wait is a
 * poll() bounded by a deadline: connect, send and receive can never hang
 * past the caller's timeout.
 */
#include "config.h"
#include "common/clock.h"
#include "common/text.h"
#include "client/kclient_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

dc_kclient_t *dc_kclient_new(const char *client_id) {
  dc_kclient_t *kc = calloc(1, sizeof(*kc));
  if (!kc)
    return NULL;
  kc->fd = -1;
  kc->cancel_fd = -1;
  kc->max_frame = DC_KCLIENT_MAX_FRAME;
  kc->next_corr = 1;
  dc_buf_init(&kc->out);
  kc->client_id = dc_kclient_strdup(client_id);
  kc->sw_name = dc_kclient_strdup("dynconf-configs");
  kc->sw_version = dc_kclient_strdup(PACKAGE_VERSION);
  if ((client_id && !kc->client_id) || !kc->sw_name || !kc->sw_version) {
    dc_kclient_destroy(kc);
    return NULL;
  }
  return kc;
}

void dc_kclient_destroy(dc_kclient_t *kc) {
  if (!kc)
    return;
  dc_kclient_close(kc);
  free(kc->client_id);
  free(kc->sw_name);
  free(kc->sw_version);
  dc_buf_free(&kc->out);
  free(kc->in);
  free(kc->ranges);
  dc_kclient_security_free(kc);
  free(kc);
}

const char *dc_kclient_peer(const dc_kclient_t *kc) { return kc->peer; }

void dc_kclient_set_cancel_fd(dc_kclient_t *kc, int fd) { kc->cancel_fd = fd; }

void dc_kclient_set_max_frame(dc_kclient_t *kc, int32_t max_bytes) {
  kc->max_frame = max_bytes >= 4 ? max_bytes : 4;
}

bool dc_kclient_connected(const dc_kclient_t *kc) { return kc->fd >= 0; }

int64_t dc_kclient_session_left_ms(const dc_kclient_t *kc) {
  if (kc->fd < 0 || !kc->session_end_ms)
    return -1;
  int64_t left = kc->session_end_ms - dc_mono_ms();
  return left > 0 ? left : 0;
}

bool dc_kclient_idle_broken(const dc_kclient_t *kc) {
  if (kc->fd < 0)
    return false;
  struct pollfd p = {.fd = kc->fd, .events = POLLIN | POLLRDHUP};
  return poll(&p, 1, 0) > 0;
}

dc_err_t dc_kclient_set_software(dc_kclient_t *kc, const char *name,
                                      const char *version) {
  if (name) {
    char *n = dc_kclient_strdup(name);
    if (!n)
      return DC_ERR__NOMEM;
    free(kc->sw_name);
    kc->sw_name = n;
  }
  if (version) {
    char *v = dc_kclient_strdup(version);
    if (!v)
      return DC_ERR__NOMEM;
    free(kc->sw_version);
    kc->sw_version = v;
  }
  return DC_ERR_NO_ERROR;
}
/* ---- connect ---------------------------------------------------------- */

/* Splits one bootstrap entry "host:port" / "[v6]:port" into host and port
 * (both NUL-terminated copies in the caller's buffers). */
static bool split_hostport(const char *s, size_t n, char *host, size_t hsz,
                           char *port, size_t psz) {
  const char *end = s + n;
  const char *h = s, *hend, *p;
  if (n && s[0] == '[') {
    hend = memchr(s, ']', n);
    if (!hend || hend + 1 >= end || hend[1] != ':')
      return false;
    h = s + 1;
    p = hend + 2;
  } else {
    /* The last colon separates the port, so a bare v6 literal with a port
     * still parses ("::1:9092"). */
    const char *c = NULL;
    for (const char *q = s; q < end; q++)
      if (*q == ':')
        c = q;
    if (!c)
      return false;
    hend = c;
    p = c + 1;
  }
  size_t hl = (size_t)(hend - h), pl = (size_t)(end - p);
  if (hl == 0 || hl >= hsz || pl == 0 || pl >= psz)
    return false;
  for (size_t i = 0; i < pl; i++)
    if (p[i] < '0' || p[i] > '9')
      return false;
  memcpy(host, h, hl);
  host[hl] = '\0';
  memcpy(port, p, pl);
  port[pl] = '\0';
  long pn = strtol(port, NULL, 10);
  return pn > 0 && pn <= 65535;
}

/* Tries one resolved address. Returns a connected non-blocking fd, or -1
 * with *errp set (errno value, or ETIMEDOUT when the deadline passed). */
static int connect_addr(const dc_kclient_t *kc, const struct addrinfo *ai,
                        int64_t deadline, int *errp) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  ai->ai_protocol);
  if (fd < 0) {
    *errp = errno;
    return -1;
  }
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
    if (errno != EINPROGRESS) {
      *errp = errno;
      close(fd);
      return -1;
    }
    int r = dc_kclient_wait_fd(kc, fd, POLLOUT, deadline);
    if (r <= 0) {
      *errp = r == 0 ? ETIMEDOUT : r == -2 ? ECANCELED : errno;
      close(fd);
      return -1;
    }
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
      soerr = errno;
    if (soerr) {
      *errp = soerr;
      close(fd);
      return -1;
    }
  }
  int one = 1;
  /* One small request at a time: do not let Nagle delay it. */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

/* One dc_kclient_connect() call: its deadline, where its error goes and
 * "entry: reason" for every failed entry, for one sentence. */
typedef struct connect_try {
  int64_t deadline;
  char *errstr;
  size_t errstr_size;
  char why[512];
  size_t wl;
  bool timed_out;
} connect_try_t;

static void add_why(connect_try_t *t, const char *entry, const char *reason) {
  size_t wl = t->wl, sz = sizeof(t->why);
  wl += (size_t)snprintf(t->why + wl, wl < sz ? sz - wl : 0, "%s%s: %s",
                         wl ? "; " : "", entry, reason);
  t->wl = wl >= sz ? sz - 1 : wl;
}

/* The first address of list that takes a connection: its fd, or -1 with
 * *errp set (errno value, ETIMEDOUT when the deadline passed). */
static int connect_first(const dc_kclient_t *kc, const struct addrinfo *list,
                         int64_t deadline, int *errp) {
  for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
    if (dc_kclient_remaining_ms(deadline) == 0) {
      *errp = ETIMEDOUT;
      return -1;
    }
    int fd = connect_addr(kc, ai, deadline, errp);
    if (fd >= 0)
      return fd;
  }
  return -1;
}

/* Tries the bootstrap entry s[0..n). True when the whole attempt ends
 * here, with *res its outcome (connected and secured, or an error); false
 * to go on with the next entry, the reason added to t->why. */
static bool try_entry(dc_kclient_t *kc, connect_try_t *t, const char *s,
                      size_t n, dc_err_t *res) {
  char host[256], port[8];
  if (!split_hostport(s, n, host, sizeof(host), port, sizeof(port))) {
    dc_seterr(t->errstr, t->errstr_size,
           "invalid bootstrap server '%.*s' (expected HOST:PORT)", (int)n, s);
    *res = DC_ERR__INVALID_ARG;
    return true;
  }
  char entry[300];
  snprintf(entry, sizeof(entry), "%.*s", (int)n, s);

  struct addrinfo hints = {0}, *ais = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int gai = getaddrinfo(host, port, &hints, &ais);
  if (gai != 0) {
    add_why(t, entry, gai_strerror(gai));
    return false;
  }
  int err = 0;
  int fd = connect_first(kc, ais, t->deadline, &err);
  freeaddrinfo(ais);
  if (fd >= 0) {
    kc->fd = fd;
    snprintf(kc->peer, sizeof(kc->peer), "%s", entry);
    /* Certificate or credential trouble would repeat on every
     * address: report it rather than trying the next one. */
    *res = dc_kclient_secure(kc, host, t->deadline, t->errstr,
                             t->errstr_size);
    if (*res)
      dc_kclient_close(kc);
    return true;
  }
  if (err == ECANCELED) {
    dc_seterr(t->errstr, t->errstr_size, "connecting to %s cancelled", entry);
    *res = DC_ERR__TRANSPORT;
    return true;
  }
  if (err == ETIMEDOUT)
    t->timed_out = true;
  add_why(t, entry, err == ETIMEDOUT ? "timed out" : strerror(err));
  return false;
}

dc_err_t dc_kclient_connect(dc_kclient_t *kc, const char *bootstrap,
                                 int timeout_ms, char *errstr,
                                 size_t errstr_size) {
  dc_kclient_close(kc);
  kc->peer[0] = '\0';
  if (!bootstrap || !*bootstrap) {
    dc_seterr(errstr, errstr_size, "empty bootstrap server list");
    return DC_ERR__INVALID_ARG;
  }
  connect_try_t t = {.errstr = errstr, .errstr_size = errstr_size};
  t.deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  const char *s = bootstrap;
  while (*s) {
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    /* Tolerate spaces around entries ("a:1, b:2"). */
    while (n && (*s == ' ' || *s == '\t')) {
      s++;
      n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
      n--;
    /* n == 0: "a:1,,b:2" or a trailing comma, nothing to try. */
    dc_err_t res;
    if (n && try_entry(kc, &t, s, n, &res))
      return res;
    if (!comma)
      break;
    s = comma + 1;
  }
  if (t.timed_out && dc_kclient_remaining_ms(t.deadline) == 0) {
    dc_seterr(errstr, errstr_size, "cannot connect to %s within %d ms (%s)",
           bootstrap, timeout_ms, t.why);
    return DC_ERR__TIMED_OUT;
  }
  if (t.wl == 0) {
    dc_seterr(errstr, errstr_size, "empty bootstrap server list '%s'",
              bootstrap);
    return DC_ERR__INVALID_ARG;
  }
  dc_seterr(errstr, errstr_size, "cannot connect to %s", t.why);
  return DC_ERR__TRANSPORT;
}
