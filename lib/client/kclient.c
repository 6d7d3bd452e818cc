/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Blocking Kafka-protocol client connection (see kclient.h).
 *
 * The socket stays non-blocking for its whole life so that every wait is a
 * poll() bounded by a deadline: connect, send and receive can never hang
 * past the caller's timeout.
 */
#include "config.h"
#include "common/clock.h"
#include "common/text.h"
#include "client/gssapi_client.h"
#include "client/oauth_client.h"
#include "client/scram_client.h"
#include "client/tls_client.h"
#include "kclient.h"

#include <openssl/crypto.h>
#include <strings.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct dc_kclient_inflight {
  int32_t corr;
  int16_t api_key, api_version;
} dc_kclient_inflight_t;

struct dc_kclient {
  /* Requests sent and not answered yet, oldest first. */
  dc_kclient_inflight_t inflight[DC_KCLIENT_MAX_INFLIGHT];
  size_t n_inflight;
  int fd;                /* -1 when not connected */
  int cancel_fd;         /* borrowed; -1 = none (dc_kclient_set_cancel_fd) */
  int32_t max_frame;     /* largest response frame accepted */
  char *client_id;       /* owned, nullable */
  char *sw_name;         /* owned */
  char *sw_version;      /* owned */
  char peer[300];        /* "host:port" of the current or last connection */
  int32_t next_corr;     /* correlation id for the next request */
  dc_buf_t out;          /* owned: request frame being sent */
  uint8_t *in;           /* owned: last response frame payload */
  size_t in_cap;
  dc_api_range_t *ranges; /* owned: server's ApiVersions answer */
  size_t n_ranges;
  bool have_versions;
  /* Security (dc_kclient_set_security). */
  bool use_tls, use_sasl;
  dc_tls_client_ctx_t *tls_ctx; /* owned; NULL without TLS */
  dc_tls_conn_t *tls;           /* owned; the current connection's TLS */
  char *sasl_mech, *sasl_user;  /* owned */
  char *sasl_pass;              /* owned; wiped when freed */
  char *oauth_token_file;       /* owned; read at each connection */
  int64_t session_end_ms; /* KIP-368: when the server ends the SASL
                             session (monotonic); 0 = never or no SASL */
  /* GSSAPI only, all owned: the credentials are taken at the first
   * connection (a keytab's tickets mean a trip to the KDC) and kept. */
  dc_gssapi_creds_t *gss_creds;
  char *krb_service, *krb_principal, *krb_keytab;
};

static void free_secret(char *s) {
  if (s) {
    OPENSSL_cleanse(s, strlen(s));
    free(s);
  }
}


/* Milliseconds left until deadline, never negative, capped for poll(). */
static int remaining_ms(int64_t deadline) {
  int64_t left = deadline - dc_mono_ms();
  if (left < 0)
    return 0;
  return left > 0x7fffffff ? 0x7fffffff : (int)left;
}

static char *xstrdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

dc_kclient_t *dc_kclient_new(const char *client_id) {
  dc_kclient_t *kc = calloc(1, sizeof(*kc));
  if (!kc)
    return NULL;
  kc->fd = -1;
  kc->cancel_fd = -1;
  kc->max_frame = DC_KCLIENT_MAX_FRAME;
  kc->next_corr = 1;
  dc_buf_init(&kc->out);
  kc->client_id = xstrdup(client_id);
  kc->sw_name = xstrdup("dynconf-configs");
  kc->sw_version = xstrdup(PACKAGE_VERSION);
  if ((client_id && !kc->client_id) || !kc->sw_name || !kc->sw_version) {
    dc_kclient_destroy(kc);
    return NULL;
  }
  return kc;
}

void dc_kclient_close(dc_kclient_t *kc) {
  kc->n_inflight = 0; /* their answers went with the connection */
  kc->have_versions = false; /* the next server may speak others */
  kc->session_end_ms = 0;
  dc_tls_conn_destroy(kc->tls);
  kc->tls = NULL;
  if (kc->fd >= 0)
    close(kc->fd);
  kc->fd = -1; /* peer stays: messages about the failure name it */
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
  dc_tls_client_ctx_destroy(kc->tls_ctx);
  free(kc->sasl_mech);
  free(kc->sasl_user);
  free_secret(kc->sasl_pass);
  free(kc->oauth_token_file);
  dc_gssapi_creds_destroy(kc->gss_creds);
  free(kc->krb_service);
  free(kc->krb_principal);
  free(kc->krb_keytab);
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

/* Waits for fd to become ready for events, or for the cancel fd: 1 ready,
 * 0 timed out, -1 error (errno set), -2 cancelled. */
static int wait_fd(const dc_kclient_t *kc, int fd, short events,
                   int64_t deadline) {
  struct pollfd pfd[2] = {{.fd = fd, .events = events},
                          {.fd = kc->cancel_fd, .events = POLLIN}};
  for (;;) {
    int r = poll(pfd, kc->cancel_fd >= 0 ? 2 : 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r > 0 && kc->cancel_fd >= 0 && pfd[1].revents)
      return -2;
    return r < 0 ? -1 : r;
  }
}

dc_err_t dc_kclient_set_software(dc_kclient_t *kc, const char *name,
                                      const char *version) {
  if (name) {
    char *n = xstrdup(name);
    if (!n)
      return DC_ERR__NOMEM;
    free(kc->sw_name);
    kc->sw_name = n;
  }
  if (version) {
    char *v = xstrdup(version);
    if (!v)
      return DC_ERR__NOMEM;
    free(kc->sw_version);
    kc->sw_version = v;
  }
  return DC_ERR_NO_ERROR;
}

/* ---- security settings ------------------------------------------------ */

/* OAUTHBEARER's token, or its file (which must hold one now). */
static int check_oauth(const dc_kclient_security_t *sec, char *errstr,
                       size_t errstr_size) {
  const char *file = sec->sasl_oauthbearer_token_file;
  if (file && *file) {
    char *tok = dc_oauth_token_file_read(file, errstr, errstr_size);
    free_secret(tok);
    return tok ? 0 : -1;
  }
  if (sec->sasl_oauthbearer_token && *sec->sasl_oauthbearer_token)
    return 0;
  dc_seterr(errstr, errstr_size, "SASL mechanism OAUTHBEARER needs a token");
  return -1;
}

/* A SASL mechanism and what it needs: a user name and a password for
 * PLAIN and SCRAM, a token for OAUTHBEARER. 0, or -1 with errstr. */
static int check_sasl(const dc_kclient_security_t *sec, const char *proto,
                      char *errstr, size_t errstr_size) {
  const char *m = sec->sasl_mechanism;
  dc_scram_hash_t h;
  if (!m || !*m) {
    dc_seterr(errstr, errstr_size,
              "security protocol %s needs a SASL mechanism (PLAIN, "
              "SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI)", proto);
    return -1;
  }
  if (!strcmp(m, "GSSAPI"))
    return 0; /* credentials are checked when they are acquired */
  if (!strcmp(m, "OAUTHBEARER"))
    return check_oauth(sec, errstr, errstr_size);
  if (strcmp(m, "PLAIN") && !dc_scram_hash_from_name(m, &h)) {
    dc_seterr(errstr, errstr_size,
              "unsupported SASL mechanism '%s' (expected PLAIN, SCRAM-SHA-256, "
              "SCRAM-SHA-512, OAUTHBEARER or GSSAPI)", m);
    return -1;
  }
  if (!sec->sasl_username || !*sec->sasl_username) {
    dc_seterr(errstr, errstr_size, "SASL mechanism %s needs a user name", m);
    return -1;
  }
  if (!sec->sasl_password) {
    dc_seterr(errstr, errstr_size, "SASL mechanism %s needs a password", m);
    return -1;
  }
  return 0;
}

/* The SASL settings copied out of sec (NULL: none), all or nothing. */
typedef struct kclient_sasl {
  char *mech, *user, *pass, *token_file;
  char *krb_service, *krb_principal, *krb_keytab;
  dc_err_t err;
} kclient_sasl_t;

static void kclient_sasl_free(kclient_sasl_t *ks) {
  free(ks->mech);
  free(ks->user);
  free_secret(ks->pass);
  free(ks->token_file);
  free(ks->krb_service);
  free(ks->krb_principal);
  free(ks->krb_keytab);
  memset(ks, 0, sizeof(*ks));
}

/* NULL for NULL or "", else a copy; false when out of memory. */
static bool dup_opt(const char *s, char **out) {
  *out = s && *s ? xstrdup(s) : NULL;
  return !(s && *s) || *out;
}

static int take_sasl(const dc_kclient_security_t *sec, kclient_sasl_t *ks,
                     char *errstr, size_t errstr_size) {
  memset(ks, 0, sizeof(*ks));
  if (!sec)
    return 0;
  const char *m = sec->sasl_mechanism;
  bool gss = !strcmp(m, "GSSAPI");
  /* OAUTHBEARER keeps its token where the others keep the password. */
  bool oauth = !strcmp(m, "OAUTHBEARER");
  const char *tfile = oauth ? sec->sasl_oauthbearer_token_file : NULL;
  ks->mech = xstrdup(m);
  if (tfile && *tfile) {
    ks->token_file = xstrdup(tfile);
  } else if (!gss) {
    ks->user = oauth ? NULL : xstrdup(sec->sasl_username);
    ks->pass = xstrdup(oauth ? sec->sasl_oauthbearer_token
                             : sec->sasl_password);
  } else {
    const char *svc = sec->sasl_kerberos_service_name;
    ks->krb_service = xstrdup(svc && *svc ? svc : "kafka");
  }
  bool krb_ok = !gss || (ks->krb_service &&
                         dup_opt(sec->sasl_kerberos_principal,
                                 &ks->krb_principal) &&
                         dup_opt(sec->sasl_kerberos_keytab, &ks->krb_keytab));
  bool secret_ok = gss || ks->token_file || ((oauth || ks->user) && ks->pass);
  if (!ks->mech || !secret_ok || !krb_ok) {
    kclient_sasl_free(ks);
    ks->err = DC_ERR__NOMEM;
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  if (ks->krb_keytab && access(ks->krb_keytab, R_OK)) {
    dc_seterr(errstr, errstr_size, "cannot read Kerberos keytab %s: %s",
              ks->krb_keytab, strerror(errno));
    kclient_sasl_free(ks);
    ks->err = DC_ERR__INVALID_ARG;
    return -1;
  }
  return 0;
}

dc_err_t dc_kclient_set_security(dc_kclient_t *kc,
                                      const dc_kclient_security_t *sec,
                                      char *errstr, size_t errstr_size) {
  static const dc_kclient_security_t none = {0};
  if (!sec)
    sec = &none;
  const char *proto = sec->protocol ? sec->protocol : "PLAINTEXT";
  bool tls, sasl;
  if (!strcasecmp(proto, "PLAINTEXT"))
    tls = false, sasl = false;
  else if (!strcasecmp(proto, "SSL"))
    tls = true, sasl = false;
  else if (!strcasecmp(proto, "SASL_PLAINTEXT"))
    tls = false, sasl = true;
  else if (!strcasecmp(proto, "SASL_SSL"))
    tls = true, sasl = true;
  else {
    dc_seterr(errstr, errstr_size,
           "unknown security protocol '%s' (expected PLAINTEXT, SSL, "
           "SASL_PLAINTEXT or SASL_SSL)", proto);
    return DC_ERR__INVALID_ARG;
  }
  if (sasl && check_sasl(sec, proto, errstr, errstr_size))
    return DC_ERR__INVALID_ARG;
  dc_tls_client_ctx_t *ctx = NULL;
  if (tls) {
    dc_tls_client_conf_t tc = {
        .ca_file = sec->ssl_ca,
        .ca_pem = sec->ssl_ca_pem,
        .cert_file = sec->ssl_cert,
        .cert_pem = sec->ssl_cert_pem,
        .key_file = sec->ssl_key,
        .key_pem = sec->ssl_key_pem,
        .key_password = sec->ssl_key_password,
        .keystore_file = sec->ssl_keystore,
        .keystore_password = sec->ssl_keystore_password,
        .cipher_suites = sec->ssl_cipher_suites,
        .no_verify = sec->ssl_no_verify,
        .no_hostname_check = sec->ssl_no_hostname_check};
    ctx = dc_tls_client_ctx_new(&tc, errstr, errstr_size);
    if (!ctx)
      return DC_ERR__INVALID_ARG;
  }
  kclient_sasl_t ks;
  if (take_sasl(sasl ? sec : NULL, &ks, errstr, errstr_size)) {
    dc_tls_client_ctx_destroy(ctx);
    return ks.err;
  }
  dc_tls_client_ctx_destroy(kc->tls_ctx);
  free(kc->sasl_mech);
  free(kc->sasl_user);
  free_secret(kc->sasl_pass);
  free(kc->oauth_token_file);
  dc_gssapi_creds_destroy(kc->gss_creds);
  free(kc->krb_service);
  free(kc->krb_principal);
  free(kc->krb_keytab);
  kc->tls_ctx = ctx;
  kc->sasl_mech = ks.mech;
  kc->sasl_user = ks.user;
  kc->sasl_pass = ks.pass;
  kc->oauth_token_file = ks.token_file;
  kc->gss_creds = NULL;
  kc->krb_service = ks.krb_service;
  kc->krb_principal = ks.krb_principal;
  kc->krb_keytab = ks.krb_keytab;
  kc->use_tls = tls;
  kc->use_sasl = sasl;
  return DC_ERR_NO_ERROR;
}

/* TLS and SASL on a fresh TCP connection (defined at the end). */
static dc_err_t secure_connection(dc_kclient_t *kc, const char *host,
                                       int64_t deadline, char *errstr,
                                       size_t errstr_size);

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
    int r = wait_fd(kc, fd, POLLOUT, deadline);
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

dc_err_t dc_kclient_connect(dc_kclient_t *kc, const char *bootstrap,
                                 int timeout_ms, char *errstr,
                                 size_t errstr_size) {
  dc_kclient_close(kc);
  kc->peer[0] = '\0';
  if (!bootstrap || !*bootstrap) {
    dc_seterr(errstr, errstr_size, "empty bootstrap server list");
    return DC_ERR__INVALID_ARG;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  /* Collect "entry: reason" for every failed entry, for one sentence. */
  char why[512] = "";
  size_t wl = 0;
  bool timed_out = false;
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
    if (n == 0) { /* "a:1,,b:2" or a trailing comma: nothing to try */
      if (!comma)
        break;
      s = comma + 1;
      continue;
    }
    char host[256], port[8];
    if (!split_hostport(s, n, host, sizeof(host), port, sizeof(port))) {
      dc_seterr(errstr, errstr_size,
             "invalid bootstrap server '%.*s' (expected HOST:PORT)", (int)n, s);
      return DC_ERR__INVALID_ARG;
    }
    char entry[300];
    snprintf(entry, sizeof(entry), "%.*s", (int)n, s);

    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &res);
    int err = 0;
    if (gai != 0) {
      wl += (size_t)snprintf(why + wl, wl < sizeof(why) ? sizeof(why) - wl : 0,
                             "%s%s: %s", wl ? "; " : "", entry,
                             gai_strerror(gai));
    } else {
      for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (remaining_ms(deadline) == 0) {
          err = ETIMEDOUT;
          break;
        }
        int fd = connect_addr(kc, ai, deadline, &err);
        if (fd >= 0) {
          freeaddrinfo(res);
          kc->fd = fd;
          snprintf(kc->peer, sizeof(kc->peer), "%s", entry);
          /* Certificate or credential trouble would repeat on every
           * address: report it rather than trying the next one. */
          dc_err_t se =
              secure_connection(kc, host, deadline, errstr, errstr_size);
          if (se)
            dc_kclient_close(kc);
          return se;
        }
      }
      freeaddrinfo(res);
      if (err == ECANCELED) {
        dc_seterr(errstr, errstr_size, "connecting to %s cancelled", entry);
        return DC_ERR__TRANSPORT;
      }
      if (err == ETIMEDOUT)
        timed_out = true;
      wl += (size_t)snprintf(why + wl, wl < sizeof(why) ? sizeof(why) - wl : 0,
                             "%s%s: %s", wl ? "; " : "", entry,
                             err == ETIMEDOUT ? "timed out" : strerror(err));
    }
    if (wl >= sizeof(why))
      wl = sizeof(why) - 1;
    if (!comma)
      break;
    s = comma + 1;
  }
  if (timed_out && remaining_ms(deadline) == 0) {
    dc_seterr(errstr, errstr_size, "cannot connect to %s within %d ms (%s)",
           bootstrap, timeout_ms, why);
    return DC_ERR__TIMED_OUT;
  }
  if (wl == 0) {
    dc_seterr(errstr, errstr_size, "empty bootstrap server list '%s'",
              bootstrap);
    return DC_ERR__INVALID_ARG;
  }
  dc_seterr(errstr, errstr_size, "cannot connect to %s", why);
  return DC_ERR__TRANSPORT;
}

/* ---- request / response ---------------------------------------------- */


/* One non-blocking attempt to move bytes over the connection, TLS or
 * plaintext: send p[0..n) when writing, else receive into it. Returns the
 * bytes moved (> 0); 0 when the peer closed (receiving); -1 when it would
 * block, with *wait the poll() events to wait for; -2 on a TLS error with
 * errstr set; -3 on a socket error with errno set. */
static ssize_t transport_io(dc_kclient_t *kc, bool writing, uint8_t *p,
                            size_t n, short *wait, char *errstr,
                            size_t errstr_size) {
  if (kc->tls)
    return writing ? dc_tls_write(kc->tls, p, n, wait, errstr, errstr_size)
                   : dc_tls_read(kc->tls, p, n, wait, errstr, errstr_size);
  for (;;) {
    ssize_t k = writing ? send(kc->fd, p, n, MSG_NOSIGNAL)
                        : recv(kc->fd, p, n, 0);
    if (k > 0 || (k == 0 && !writing))
      return k;
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      *wait = writing ? POLLOUT : POLLIN;
      return -1;
    }
    return -3;
  }
}

/* Sends all of p[0..n) (writing) or receives exactly n bytes into p, each
 * wait bounded by deadline. 0, or a dynconf error with errstr set; the
 * caller closes the connection on error. */
static dc_err_t transfer_all(dc_kclient_t *kc, bool writing, uint8_t *p,
                                  size_t n, int64_t deadline, int timeout_ms,
                                  char *errstr, size_t errstr_size) {
  while (n) {
    short ev = 0;
    ssize_t k = transport_io(kc, writing, p, n, &ev, errstr, errstr_size);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k == 0) {
      dc_seterr(errstr, errstr_size, "connection closed by %s", kc->peer);
      return DC_ERR__TRANSPORT;
    }
    if (k == -2)
      return DC_ERR__TRANSPORT;
    int r = k == -1 ? wait_fd(kc, kc->fd, ev, deadline) : -1;
    if (r > 0)
      continue;
    if (r == -2) {
      dc_seterr(errstr, errstr_size, "request to %s cancelled", kc->peer);
      return DC_ERR__TRANSPORT;
    }
    if (r == 0) {
      dc_seterr(errstr, errstr_size,
                writing ? "cannot send to %s within %d ms"
                        : "no response from %s within %d ms",
                kc->peer, timeout_ms);
      return DC_ERR__TIMED_OUT;
    }
    dc_seterr(errstr, errstr_size,
              writing ? "cannot send to %s: %s" : "cannot read from %s: %s",
              kc->peer, strerror(errno));
    return DC_ERR__TRANSPORT;
  }
  return DC_ERR_NO_ERROR;
}

dc_err_t dc_kclient_send(dc_kclient_t *kc, int16_t api_key,
                         int16_t api_version, dc_kclient_encode_fn *enc,
                         const void *req, int timeout_ms, int32_t *corrp,
                         char *errstr, size_t errstr_size) {
  if (kc->fd < 0) {
    dc_seterr(errstr, errstr_size, "not connected");
    return DC_ERR__TRANSPORT;
  }
  if (kc->n_inflight == DC_KCLIENT_MAX_INFLIGHT) {
    dc_seterr(errstr, errstr_size, "%d requests to %s await their answers "
              "already", DC_KCLIENT_MAX_INFLIGHT, kc->peer);
    return DC_ERR__INVALID_ARG;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int32_t corr = kc->next_corr++;
  if (kc->next_corr < 0) /* wrapped: keep ids positive */
    kc->next_corr = 1;

  dc_buf_clear(&kc->out);
  size_t off = dc_wr_frame_begin(&kc->out);
  dc_req_header_t h = {.api_key = api_key,
                       .api_version = api_version,
                       .correlation_id = corr,
                       .client_id = kc->client_id};
  int e = dc_req_header_encode(&kc->out, &h);
  if (!e)
    e = enc(&kc->out, api_version, req);
  if (!e)
    e = kc->out.err;
  if (e) {
    const dc_api_info_t *ai = dc_api_info(api_key);
    dc_seterr(errstr, errstr_size, "cannot encode %s v%d request: %s",
           ai ? ai->name : "unknown", api_version,
           dc_err_str((dc_err_t)e));
    return (dc_err_t)e;
  }
  dc_wr_frame_end(&kc->out, off);
  dc_err_t err = transfer_all(kc, true, kc->out.data, kc->out.len,
                                   deadline, timeout_ms, errstr, errstr_size);
  if (err) {
    dc_kclient_close(kc);
    return err;
  }
  kc->inflight[kc->n_inflight++] =
      (dc_kclient_inflight_t){corr, api_key, api_version};
  if (corrp)
    *corrp = corr;
  return DC_ERR_NO_ERROR;
}

/* Reads the 4-byte size of the next frame and checks it. */
static dc_err_t receive_size(dc_kclient_t *kc, int64_t deadline,
                             int timeout_ms, int32_t *sizep, char *errstr,
                             size_t errstr_size) {
  uint8_t szb[4];
  dc_err_t err = transfer_all(kc, false, szb, 4, deadline, timeout_ms,
                              errstr, errstr_size);
  if (err)
    return err;
  int32_t size = (int32_t)(((uint32_t)szb[0] << 24) | ((uint32_t)szb[1] << 16) |
                           ((uint32_t)szb[2] << 8) | szb[3]);
  if (!kc->tls && szb[0] == 0x15 && szb[1] == 0x03) {
    /* A TLS alert record: we spoke plaintext to a TLS listener. */
    dc_seterr(errstr, errstr_size,
           "%s answered with a TLS alert: it is a TLS listener (use security "
           "protocol SSL or SASL_SSL)", kc->peer);
    return DC_ERR__BAD_RESPONSE;
  }
  if (size < 4) {
    dc_seterr(errstr, errstr_size,
              "bad response from %s: frame size %d is below 4", kc->peer,
              (int)size);
    return DC_ERR__BAD_RESPONSE;
  }
  if (size > kc->max_frame) {
    dc_seterr(errstr, errstr_size,
              "bad response from %s: a %d-byte frame is over the receive "
              "limit of %d bytes", kc->peer, (int)size, (int)kc->max_frame);
    return DC_ERR__BAD_RESPONSE;
  }
  *sizep = size;
  return DC_ERR_NO_ERROR;
}

/* The next frame into kc->in, then its response header for the oldest
 * request in flight (a Kafka server answers a connection in order). */
static dc_err_t receive_frame(dc_kclient_t *kc, int timeout_ms, dc_rd_t *rd,
                              dc_arena_t *arena, char *errstr,
                              size_t errstr_size) {
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int32_t size = 0;
  dc_err_t err =
      receive_size(kc, deadline, timeout_ms, &size, errstr, errstr_size);
  if (err)
    return err;
  if ((size_t)size > kc->in_cap) {
    uint8_t *p = realloc(kc->in, (size_t)size);
    if (!p) {
      dc_seterr(errstr, errstr_size, "out of memory for a %d-byte response",
             (int)size);
      return DC_ERR__NOMEM;
    }
    kc->in = p;
    kc->in_cap = (size_t)size;
  }
  err = transfer_all(kc, false, kc->in, (size_t)size, deadline, timeout_ms,
                     errstr, errstr_size);
  if (err)
    return err;
  const dc_kclient_inflight_t *want = &kc->inflight[0];
  dc_rd_init(rd, kc->in, (size_t)size, arena);
  int32_t got = 0;
  if (dc_resp_header_decode(rd, want->api_key, want->api_version, &got)) {
    dc_seterr(errstr, errstr_size, "bad response header from %s: %s", kc->peer,
           dc_err_str((dc_err_t)rd->err));
    return DC_ERR__BAD_RESPONSE;
  }
  if (got != want->corr) {
    dc_seterr(errstr, errstr_size,
           "bad response from %s: correlation id %d, expected %d", kc->peer,
           (int)got, (int)want->corr);
    return DC_ERR__BAD_RESPONSE;
  }
  return DC_ERR_NO_ERROR;
}

dc_err_t dc_kclient_receive(dc_kclient_t *kc, int timeout_ms, int32_t *corrp,
                            dc_rd_t *rd, dc_arena_t *arena, char *errstr,
                            size_t errstr_size) {
  if (kc->fd < 0 || kc->n_inflight == 0) {
    dc_seterr(errstr, errstr_size,
              kc->fd < 0 ? "not connected" : "no request awaits an answer");
    return kc->fd < 0 ? DC_ERR__TRANSPORT : DC_ERR__INVALID_ARG;
  }
  dc_err_t err =
      receive_frame(kc, timeout_ms, rd, arena, errstr, errstr_size);
  if (err) {
    dc_kclient_close(kc); /* the stream position is unknown now */
    return err;
  }
  if (corrp)
    *corrp = kc->inflight[0].corr;
  kc->n_inflight--;
  memmove(kc->inflight, kc->inflight + 1,
          kc->n_inflight * sizeof(kc->inflight[0]));
  return DC_ERR_NO_ERROR;
}

size_t dc_kclient_in_flight(const dc_kclient_t *kc) { return kc->n_inflight; }

static bool awaits(const dc_kclient_t *kc) {
  return kc && kc->fd >= 0 && kc->n_inflight;
}

int dc_kclient_wait_any(dc_kclient_t *const *kcs, int n, int timeout_ms) {
  for (int i = 0; i < n; i++)
    if (awaits(kcs[i]) && kcs[i]->tls && dc_tls_pending(kcs[i]->tls))
      return i;
  struct pollfd *pfd = calloc(n > 0 ? (size_t)n : 1, sizeof(*pfd));
  if (!pfd)
    return -1;
  int waiting = 0;
  for (int i = 0; i < n; i++) {
    pfd[i].fd = awaits(kcs[i]) ? kcs[i]->fd : -1; /* -1: poll skips it */
    pfd[i].events = POLLIN;
    waiting += pfd[i].fd >= 0;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int found = -1;
  while (waiting && found < 0) {
    int r = poll(pfd, (nfds_t)n, remaining_ms(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    for (int i = 0; i < n && found < 0; i++)
      if (pfd[i].revents)
        found = i;
  }
  free(pfd);
  return found;
}

dc_err_t dc_kclient_request(dc_kclient_t *kc, int16_t api_key,
                                 int16_t api_version, dc_kclient_encode_fn *enc,
                                 const void *req, int timeout_ms,
                                 dc_rd_t *rd, dc_arena_t *arena, char *errstr,
                                 size_t errstr_size) {
  if (kc->n_inflight) {
    dc_seterr(errstr, errstr_size, "%zu earlier requests to %s await their "
              "answers (dc_kclient_receive)", kc->n_inflight, kc->peer);
    return DC_ERR__INVALID_ARG;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  dc_err_t err = dc_kclient_send(kc, api_key, api_version, enc, req,
                                 timeout_ms, NULL, errstr, errstr_size);
  if (err)
    return err;
  return dc_kclient_receive(kc, remaining_ms(deadline), NULL, rd, arena,
                            errstr, errstr_size);
}

/* ---- ApiVersions ------------------------------------------------------ */

static int enc_apiversions(dc_buf_t *b, int16_t v, const void *req) {
  return dc_apiversions_req_encode(b, v, req);
}

dc_err_t dc_kclient_api_versions(dc_kclient_t *kc, int timeout_ms,
                                      char *errstr, size_t errstr_size) {
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  dc_apiversions_req_t req = {.client_software_name = kc->sw_name,
                              .client_software_version = kc->sw_version};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_err_t err = DC_ERR_NO_ERROR;
  dc_apiversions_resp_t resp;
  int16_t v = 3;
  for (;;) {
    dc_rd_t rd;
    err = dc_kclient_request(kc, DC_API_API_VERSIONS, v, enc_apiversions, &req,
                             remaining_ms(deadline), &rd, &arena, errstr,
                             errstr_size);
    if (err)
      goto out;
    /* The error code leads every version's body, and an
     * UNSUPPORTED_VERSION answer comes in the v0 layout: look first. */
    if (v > 0 && dc_rd_remaining(&rd) >= 2 &&
        ((rd.p[rd.pos] << 8) | rd.p[rd.pos + 1]) == DC_ERR_UNSUPPORTED_VERSION) {
      v = 0;
      continue;
    }
    if (dc_apiversions_resp_decode(&rd, v, &resp)) {
      dc_seterr(errstr, errstr_size, "malformed ApiVersions v%d response from %s: %s",
             v, kc->peer, dc_err_str((dc_err_t)rd.err));
      err = DC_ERR__BAD_RESPONSE;
      goto out;
    }
    break;
  }
  if (resp.error_code) {
    err = (dc_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "%s refused ApiVersions v%d: %s", kc->peer, v,
           dc_err_name(err));
    goto out;
  }
  dc_api_range_t *r = NULL;
  if (resp.n_api_keys > 0) {
    r = malloc((size_t)resp.n_api_keys * sizeof(*r));
    if (!r) {
      err = DC_ERR__NOMEM;
      dc_seterr(errstr, errstr_size, "out of memory");
      goto out;
    }
    memcpy(r, resp.api_keys, (size_t)resp.n_api_keys * sizeof(*r));
  }
  free(kc->ranges);
  kc->ranges = r;
  kc->n_ranges = (size_t)resp.n_api_keys;
  kc->have_versions = true;
out:
  dc_arena_free(&arena);
  return err;
}

bool dc_kclient_api_range(const dc_kclient_t *kc, int16_t api_key,
                          int16_t *minp, int16_t *maxp) {
  if (!kc->have_versions)
    return false;
  for (size_t i = 0; i < kc->n_ranges; i++)
    if (kc->ranges[i].api_key == api_key) {
      *minp = kc->ranges[i].min_version;
      *maxp = kc->ranges[i].max_version;
      return true;
    }
  return false;
}

int16_t dc_kclient_pick_version(const dc_kclient_t *kc, int16_t api_key) {
  const dc_api_info_t *ai = dc_api_info(api_key);
  int16_t smin, smax;
  if (!ai || !dc_kclient_api_range(kc, api_key, &smin, &smax))
    return -1;
  int16_t hi = smax < ai->max_version ? smax : ai->max_version;
  int16_t lo = smin > ai->min_version ? smin : ai->min_version;
  return hi >= lo ? hi : -1;
}

/* ---- TLS and SASL ------------------------------------------------------ */

static int enc_sasl_handshake(dc_buf_t *b, int16_t v, const void *req) {
  return dc_sasl_handshake_req_encode(b, v, req);
}

static int enc_sasl_authenticate(dc_buf_t *b, int16_t v, const void *req) {
  return dc_sasl_authenticate_req_encode(b, v, req);
}

/* SaslHandshake v1 for kc->sasl_mech. */
static dc_err_t sasl_handshake(dc_kclient_t *kc, int64_t deadline,
                                    char *errstr, size_t errstr_size) {
  int16_t lo, hi;
  if (!dc_kclient_api_range(kc, DC_API_SASL_HANDSHAKE, &lo, &hi) || lo > 1 ||
      hi < 1) {
    dc_seterr(errstr, errstr_size,
           "SASL authentication failed: %s does not offer SaslHandshake v1",
           kc->peer);
    return DC_ERR_UNSUPPORTED_VERSION;
  }
  dc_sasl_handshake_req_t req = {.mechanism = kc->sasl_mech};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  char why[512];
  dc_err_t err =
      dc_kclient_request(kc, DC_API_SASL_HANDSHAKE, 1, enc_sasl_handshake,
                         &req, remaining_ms(deadline), &rd, &arena, why,
                         sizeof(why));
  dc_sasl_handshake_resp_t resp;
  if (err) {
    dc_seterr(errstr, errstr_size, "SASL handshake with %s failed: %s", kc->peer,
           why);
  } else if (dc_sasl_handshake_resp_decode(&rd, 1, &resp)) {
    dc_seterr(errstr, errstr_size, "malformed SaslHandshake response from %s",
           kc->peer);
    err = DC_ERR__BAD_RESPONSE;
  } else if (resp.error_code == DC_ERR_UNSUPPORTED_SASL_MECHANISM) {
    char list[256] = "";
    size_t l = 0;
    for (int32_t i = 0; i < resp.n_mechanisms && l < sizeof(list); i++)
      l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "",
                            resp.mechanisms[i] ? resp.mechanisms[i] : "");
    dc_seterr(errstr, errstr_size,
           "SASL mechanism %s is not enabled on %s (enabled: %s)",
           kc->sasl_mech, kc->peer, l ? list : "none");
    err = DC_ERR_UNSUPPORTED_SASL_MECHANISM;
  } else if (resp.error_code) {
    err = (dc_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "SASL handshake with %s failed: %s%s",
           kc->peer, dc_err_name(err),
           err == DC_ERR_ILLEGAL_SASL_STATE
               ? " (is it a SASL listener?)"
               : "");
  }
  dc_arena_free(&arena);
  return err;
}

/* One SaslAuthenticate round trip: sends tok, returns the server's token
 * in *out (malloc'd, caller frees; NULL when empty). */
static dc_err_t sasl_round(dc_kclient_t *kc, int16_t v,
                                const void *tok, size_t n, uint8_t **out,
                                size_t *outlen, int64_t deadline, char *errstr,
                                size_t errstr_size) {
  *out = NULL;
  *outlen = 0;
  dc_sasl_authenticate_req_t req = {.auth_bytes = tok,
                                    .n_auth_bytes = (int32_t)n};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  char why[512];
  dc_err_t err = dc_kclient_request(
      kc, DC_API_SASL_AUTHENTICATE, v, enc_sasl_authenticate, &req,
      remaining_ms(deadline), &rd, &arena, why, sizeof(why));
  dc_sasl_authenticate_resp_t resp;
  if (err) {
    dc_seterr(errstr, errstr_size, "SASL authentication failed: %s", why);
  } else if (dc_sasl_authenticate_resp_decode(&rd, v, &resp)) {
    dc_seterr(errstr, errstr_size, "malformed SaslAuthenticate response from %s",
           kc->peer);
    err = DC_ERR__BAD_RESPONSE;
  } else if (resp.error_code) {
    err = (dc_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "SASL authentication failed: %s",
           resp.error_message && *resp.error_message
               ? resp.error_message
               : dc_err_str(err));
  } else if (resp.n_auth_bytes > 0) {
    *out = malloc((size_t)resp.n_auth_bytes);
    if (!*out) {
      dc_seterr(errstr, errstr_size, "out of memory");
      err = DC_ERR__NOMEM;
    } else {
      memcpy(*out, resp.auth_bytes, (size_t)resp.n_auth_bytes);
      *outlen = (size_t)resp.n_auth_bytes;
    }
  }
  if (!err && v >= 1 && resp.session_lifetime_ms > 0)
    kc->session_end_ms = dc_mono_ms() + resp.session_lifetime_ms;
  dc_arena_free(&arena);
  return err;
}

static dc_err_t sasl_plain(dc_kclient_t *kc, int16_t v, int64_t deadline,
                                char *errstr, size_t errstr_size) {
  /* authzid (empty) NUL user NUL password */
  size_t ul = strlen(kc->sasl_user), pl = strlen(kc->sasl_pass);
  uint8_t *tok = malloc(ul + pl + 2);
  if (!tok) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  tok[0] = 0;
  memcpy(tok + 1, kc->sasl_user, ul);
  tok[1 + ul] = 0;
  memcpy(tok + 2 + ul, kc->sasl_pass, pl);
  uint8_t *out = NULL;
  size_t outlen = 0;
  dc_err_t err = sasl_round(kc, v, tok, ul + pl + 2, &out, &outlen,
                                 deadline, errstr, errstr_size);
  OPENSSL_cleanse(tok, ul + pl + 2);
  free(tok);
  free(out);
  return err;
}

static dc_err_t sasl_scram(dc_kclient_t *kc, dc_scram_hash_t h, int16_t v,
                                int64_t deadline, char *errstr,
                                size_t errstr_size) {
  dc_scram_client_t *c =
      dc_scram_client_new(h, kc->sasl_user, kc->sasl_pass, NULL);
  char *msg = NULL;
  size_t ml = 0;
  uint8_t *in = NULL;
  size_t inl = 0;
  char why[300];
  dc_err_t err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  if (!c) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  if (dc_scram_client_first(c, &msg, &ml, why, sizeof(why)))
    goto client_error;
  err = sasl_round(kc, v, msg, ml, &in, &inl, deadline, errstr, errstr_size);
  free(msg);
  msg = NULL;
  if (err)
    goto out;
  err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  if (dc_scram_client_final(c, in, inl, &msg, &ml, why, sizeof(why)))
    goto client_error;
  free(in);
  in = NULL;
  err = sasl_round(kc, v, msg, ml, &in, &inl, deadline, errstr, errstr_size);
  if (err)
    goto out;
  err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  if (dc_scram_client_verify(c, in, inl, why, sizeof(why)))
    goto client_error;
  err = DC_ERR_NO_ERROR;
  goto out;
client_error:
  dc_seterr(errstr, errstr_size, "SASL authentication with %s failed: %s",
         kc->peer, why);
out:
  if (msg) {
    OPENSSL_cleanse(msg, ml);
    free(msg);
  }
  free(in);
  dc_scram_client_destroy(c);
  return err;
}

/* OAUTHBEARER (RFC 7628): the token in one message; a refusal comes as
 * an error status, answered with a lone %x01, after which the server
 * fails the exchange and says why. */
static dc_err_t sasl_oauthbearer(dc_kclient_t *kc, int16_t v,
                                 int64_t deadline, char *errstr,
                                 size_t errstr_size) {
  size_t n = 0;
  char why[400];
  char *tok = kc->oauth_token_file
                  ? dc_oauth_token_file_read(kc->oauth_token_file, why,
                                             sizeof(why))
                  : NULL;
  if (kc->oauth_token_file && !tok) {
    dc_seterr(errstr, errstr_size, "SASL OAUTHBEARER authentication with "
              "%s failed: %s", kc->peer, why);
    return DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  char *msg = dc_oauth_client_first(tok ? tok : kc->sasl_pass, &n);
  free_secret(tok);
  if (!msg) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DC_ERR__NOMEM;
  }
  uint8_t *out = NULL;
  size_t outlen = 0;
  dc_err_t err = sasl_round(kc, v, msg, n, &out, &outlen, deadline, errstr,
                            errstr_size);
  OPENSSL_cleanse(msg, n);
  free(msg);
  if (!err && outlen) {
    free(out);
    err = sasl_round(kc, v, "\x01", 1, &out, &outlen, deadline, errstr,
                     errstr_size);
    if (!err) {
      dc_seterr(errstr, errstr_size, "SASL authentication failed: %s "
                "refused the token without saying why", kc->peer);
      err = DC_ERR_SASL_AUTHENTICATION_FAILED;
    }
  }
  free(out);
  return err;
}

/* GSSAPI: Cyrus SASL's tokens back and forth until it has sent its
 * last one and the server took it. A server that never ends the
 * exchange is cut off after a few rounds (Kerberos needs three). */
static dc_err_t sasl_gssapi(dc_kclient_t *kc, const char *host, int16_t v,
                            int64_t deadline, char *errstr,
                            size_t errstr_size) {
  char why[600];
  if (!kc->gss_creds &&
      !(kc->gss_creds = dc_gssapi_creds_new(kc->krb_principal, kc->krb_keytab,
                                            why, sizeof(why)))) {
    dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
              "failed: %s", kc->peer, why);
    return DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  dc_gssapi_client_t *g =
      dc_gssapi_client_new(kc->gss_creds, kc->krb_service, host, why,
                           sizeof(why));
  if (!g) {
    dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
              "failed: %s", kc->peer, why);
    return DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  uint8_t *in = NULL;
  size_t inl = 0;
  dc_err_t err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
            "failed: the server did not finish the exchange", kc->peer);
  for (int round = 0; round < 8; round++) {
    const uint8_t *o;
    size_t ol;
    int rc = dc_gssapi_client_step(g, in, inl, &o, &ol, why, sizeof(why));
    free(in);
    in = NULL;
    if (rc == DC_GSSAPI_FAILED) {
      dc_seterr(errstr, errstr_size, "SASL GSSAPI authentication with %s "
                "failed: %s", kc->peer, why);
      err = DC_ERR_SASL_AUTHENTICATION_FAILED;
      break;
    }
    err = sasl_round(kc, v, o, ol, &in, &inl, deadline, errstr, errstr_size);
    if (err || rc == DC_GSSAPI_DONE)
      break;
    err = DC_ERR_SASL_AUTHENTICATION_FAILED;
  }
  free(in);
  dc_gssapi_client_destroy(g);
  return err;
}

static dc_err_t secure_connection(dc_kclient_t *kc, const char *host,
                                       int64_t deadline, char *errstr,
                                       size_t errstr_size) {
  if (kc->use_tls) {
    dc_err_t err =
        dc_tls_client_handshake(kc->tls_ctx, kc->fd, host, kc->peer, deadline,
                                kc->cancel_fd, &kc->tls, errstr, errstr_size);
    if (err)
      return err;
  }
  if (!kc->use_sasl)
    return DC_ERR_NO_ERROR;
  /* Like librdkafka: ApiVersions first (allowed before authentication) to
   * learn which SaslAuthenticate versions the server speaks. */
  dc_err_t err = dc_kclient_api_versions(kc, remaining_ms(deadline),
                                              errstr, errstr_size);
  if (err)
    return err;
  err = sasl_handshake(kc, deadline, errstr, errstr_size);
  if (err)
    return err;
  int16_t v = dc_kclient_pick_version(kc, DC_API_SASL_AUTHENTICATE);
  if (v < 0) {
    dc_seterr(errstr, errstr_size,
           "SASL authentication failed: %s does not offer SaslAuthenticate "
           "v0-2", kc->peer);
    return DC_ERR_UNSUPPORTED_VERSION;
  }
  dc_scram_hash_t h;
  if (dc_scram_hash_from_name(kc->sasl_mech, &h))
    return sasl_scram(kc, h, v, deadline, errstr, errstr_size);
  if (!strcmp(kc->sasl_mech, "OAUTHBEARER"))
    return sasl_oauthbearer(kc, v, deadline, errstr, errstr_size);
  if (!strcmp(kc->sasl_mech, "GSSAPI"))
    return sasl_gssapi(kc, host, v, deadline, errstr, errstr_size);
  return sasl_plain(kc, v, deadline, errstr, errstr_size);
}
