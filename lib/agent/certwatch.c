/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Client certificate rotation: the agent thread polls the application's
 * ssl.certificate.location, ssl.key.location and ssl.ca.location files
 * and, once a whole valid new set is on disk, moves the generation (managed
 * clients rebuild; librdkafka re-reads the files at rd_kafka_new), queues
 * one CHANGE event and reconnects the agent's own connection with them.
 * An unusable set
 * (mid-rotation, unreadable, not PEM, expired) changes nothing and is
 * reported once.
 *
 * Threading: the files' state (cw->f, next_check_ms, pending_id) belongs
 * to the agent thread; what the statistics show is under dc->lock (stats.c
 * reads it from dc->cw).
 */
#include "agent/agent_int.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CW_MAX_FILE (1024 * 1024) /* more is not a PEM file we expect */
/* A file modified this recently is read again at the next check even if
 * its stat looks the same: timestamps are coarse, a writer may not be done. */
#define CW_SETTLE_NS (2LL * 1000000000LL)

static const char *const cw_props[3] = {
    "ssl.certificate.location", "ssl.key.location", "ssl.ca.location"};

/* A global property of the application's conf; caller frees. */
static char *app_get(dynconf_t *dc, const char *name) {
  char buf[1024];
  size_t sz = sizeof(buf);
  if (rd_kafka_conf_get(dc->app_conf, name, buf, &sz) != RD_KAFKA_CONF_OK ||
      !*buf)
    return NULL;
  return strdup(buf);
}

/* ---- reading ------------------------------------------------------------ */

static int64_t ts_ns(const struct timespec *ts) {
  return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* The file cannot be used as it is; `what` says why. */
static void file_unreadable(dc_cw_file_t *f, const char *what, bool missing) {
  f->have_stat = false;
  f->seen_ok = false;
  f->seen_missing = missing;
  snprintf(f->seen_err, sizeof(f->seen_err), "cannot read %s %s: %s",
           f->prop, f->path, what);
  free(f->data);
  f->data = NULL;
  f->len = 0;
}

/* Whether st is the stat of the content f holds. */
static bool same_stat(const dc_cw_file_t *f, const struct stat *st) {
  return f->have_stat && f->st_dev == (uint64_t)st->st_dev &&
         f->st_ino == (uint64_t)st->st_ino &&
         f->st_size == (uint64_t)st->st_size &&
         f->st_mtime_ns == ts_ns(&st->st_mtim) &&
         f->st_ctime_ns == ts_ns(&st->st_ctim);
}

/* fd read to EOF (st_size is a hint), at most CW_MAX_FILE bytes: a
 * malloc'd buffer of *lenp bytes, or NULL with *why set. Closes fd. */
static unsigned char *read_bounded(int fd, size_t *lenp, const char **why) {
  unsigned char *buf = malloc(CW_MAX_FILE + 1);
  size_t len = 0;
  ssize_t r = 0;
  while (buf && len <= CW_MAX_FILE &&
         ((r = read(fd, buf + len, CW_MAX_FILE + 1 - len)) > 0 ||
          (r < 0 && errno == EINTR)))
    if (r > 0)
      len += (size_t)r;
  int read_errno = errno;
  close(fd);
  if (!buf || r < 0 || len > CW_MAX_FILE) {
    free(buf);
    *why = !buf    ? "out of memory"
           : r < 0 ? strerror(read_errno)
                   : "larger than 1 MiB";
    return NULL;
  }
  unsigned char *data = realloc(buf, len ? len : 1);
  *lenp = len;
  return data ? data : buf;
}

/* f now holds buf[0..len), read from a file with stat st. */
static void file_seen(dc_cw_file_t *f, unsigned char *buf, size_t len,
                      const struct stat *st) {
  free(f->data);
  f->data = buf;
  f->len = len;
  unsigned int mdlen = 0;
  EVP_Digest(buf, len, f->seen_hash, &mdlen, EVP_sha256(), NULL);
  f->seen_ok = true;
  f->seen_missing = false;
  f->seen_err[0] = '\0';
  f->st_dev = (uint64_t)st->st_dev;
  f->st_ino = (uint64_t)st->st_ino;
  f->st_size = (uint64_t)st->st_size;
  f->st_mtime_ns = ts_ns(&st->st_mtim);
  f->st_ctime_ns = ts_ns(&st->st_ctim);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  f->have_stat = ts_ns(&now) - f->st_mtime_ns > CW_SETTLE_NS &&
                 ts_ns(&now) - f->st_ctime_ns > CW_SETTLE_NS;
}

/* Reads f again unless its stat is the one of the content last read. */
static void refresh_file(dc_cw_file_t *f) {
  int fd = open(f->path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) {
    file_unreadable(f, strerror(errno), errno == ENOENT);
    if (fd >= 0)
      close(fd);
    return;
  }
  if (same_stat(f, &st)) {
    close(fd); /* unchanged: no read, no hash */
    return;
  }
  if (!S_ISREG(st.st_mode) || st.st_size > CW_MAX_FILE) {
    file_unreadable(f,
                    S_ISREG(st.st_mode) ? "larger than 1 MiB"
                                        : "not a regular file",
                    false);
    close(fd);
    return;
  }
  size_t len = 0;
  const char *why = NULL;
  unsigned char *buf = read_bounded(fd, &len, &why);
  if (!buf) {
    file_unreadable(f, why, false);
    return;
  }
  file_seen(f, buf, len, &st);
}

static bool differs(const dc_cw_file_t *f) {
  return f->path && (f->seen_ok != f->applied_ok ||
                     memcmp(f->seen_hash, f->applied_hash, 32));
}

/* ---- parsing and describing ---------------------------------------------- */

static void hex(const unsigned char *p, size_t n, char *out, size_t out_size) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 4 <= out_size; i++)
    o += (size_t)snprintf(out + o, out_size - o, "%s%02X", i ? ":" : "", p[i]);
}

static X509 *pem_cert(const unsigned char *p, size_t n) {
  BIO *bio = BIO_new_mem_buf(p, (int)n);
  X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
  BIO_free(bio);
  return x;
}

/* Never prompts: no ssl.key.password means an encrypted key fails. */
static int pw_cb(char *buf, int size, int rwflag, void *u) {
  (void)rwflag;
  const char *pw = u;
  if (!pw)
    return 0;
  int n = (int)strlen(pw);
  if (n > size)
    n = size;
  memcpy(buf, pw, (size_t)n);
  return n;
}

static EVP_PKEY *pem_key(const unsigned char *p, size_t n, char *password) {
  BIO *bio = BIO_new_mem_buf(p, (int)n);
  EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, pw_cb, password)
                    : NULL;
  BIO_free(bio);
  return k;
}

/* Certificates in a CA file (0 = none parses). */
static int pem_count(const unsigned char *p, size_t n, X509 **first) {
  BIO *bio = BIO_new_mem_buf(p, (int)n);
  int cnt = 0;
  X509 *x;
  while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
    if (!cnt && first)
      *first = x;
    else
      X509_free(x);
    cnt++;
  }
  BIO_free(bio);
  ERR_clear_error(); /* the loop ends with a "no start line" error */
  return cnt;
}

static void name_rfc2253(X509_NAME *name, char *out, size_t n) {
  out[0] = '\0';
  BIO *bio = BIO_new(BIO_s_mem());
  if (!bio)
    return;
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char *p;
  long len = BIO_get_mem_data(bio, &p);
  snprintf(out, n, "%.*s", (int)(len < 0 ? 0 : len), p);
  BIO_free(bio);
}

static void describe_cert(X509 *x, dc_cw_certinfo_t *ci) {
  memset(ci, 0, sizeof(*ci));
  if (!x)
    return;
  ci->valid = true;
  name_rfc2253(X509_get_subject_name(x), ci->subject, sizeof(ci->subject));
  name_rfc2253(X509_get_issuer_name(x), ci->issuer, sizeof(ci->issuer));
  struct tm tm;
  if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm))
    strftime(ci->not_after, sizeof(ci->not_after), "%Y-%m-%dT%H:%M:%SZ", &tm);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (X509_digest(x, EVP_sha256(), md, &mdlen))
    hex(md, mdlen, ci->fingerprint, sizeof(ci->fingerprint));
}

static void describe_key(EVP_PKEY *k, char *out, size_t n) {
  out[0] = '\0';
  if (!k)
    return;
  unsigned char *der = NULL, md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  char fp[32] = "";
  int len = i2d_PUBKEY(k, &der);
  if (len > 0 && EVP_Digest(der, (size_t)len, md, &mdlen, EVP_sha256(), NULL))
    hex(md, 8, fp, sizeof(fp));
  OPENSSL_free(der);
  const char *type = EVP_PKEY_get0_type_name(k);
  snprintf(out, n, "%s %d-bit key (public key SHA-256 %s...)",
           type ? type : "unknown", EVP_PKEY_get_bits(k), fp);
}

/* "CN=alice,O=x (SHA-256 AB:..., expires 2030-01-01T00:00:00Z)" */
static char *cert_value(const dc_cw_certinfo_t *ci) {
  char buf[512];
  if (!ci->valid)
    return strdup("(none)");
  snprintf(buf, sizeof(buf), "%s (SHA-256 %s, expires %s)", ci->subject,
           ci->fingerprint, ci->not_after);
  return strdup(buf);
}

static const char *last_ssl_error(char *buf, size_t n) {
  unsigned long e = ERR_peek_last_error();
  if (!e)
    return "no PEM data";
  ERR_error_string_n(e, buf, n);
  return buf;
}

/* What a candidate set is made of, once it is known to be valid. */
typedef struct cw_candidate {
  dc_cw_certinfo_t cert, ca;
  char key[128];
} cw_candidate_t;

/* Checks the files as last read. 0 and *c, or -1 with a reason in why;
 * *wait tells a state a rotation passes through (a certificate and key
 * that differ, a file not there) from the rest. Agent thread. */
static int validate(dc_certwatch_t *cw, cw_candidate_t *c, bool *wait,
                    char *why, size_t why_size) {
  dc_cw_file_t *fc = &cw->f[DC_CW_CERT], *fk = &cw->f[DC_CW_KEY],
               *fa = &cw->f[DC_CW_CA];
  char ossl[200];
  X509 *x = NULL, *cax = NULL;
  EVP_PKEY *k = NULL;
  int rc = -1;
  *wait = false;
  memset(c, 0, sizeof(*c));
  for (int i = 0; i < 3; i++)
    if (cw->f[i].path && !cw->f[i].seen_ok) {
      dc_seterr(why, why_size, "%s", cw->f[i].seen_err);
      *wait = cw->f[i].seen_missing;
      return -1;
    }
  ERR_clear_error();
  if (fc->path && !(x = pem_cert(fc->data, fc->len))) {
    dc_seterr(why, why_size, "%s %s holds no PEM certificate (%s)", fc->prop,
             fc->path, last_ssl_error(ossl, sizeof(ossl)));
    goto out;
  }
  if (fk->path && !(k = pem_key(fk->data, fk->len, cw->key_password))) {
    dc_seterr(why, why_size,
             "%s %s holds no PEM private key that opens%s (%s)", fk->prop,
             fk->path, cw->key_password ? " with ssl.key.password" : "",
             last_ssl_error(ossl, sizeof(ossl)));
    goto out;
  }
  describe_cert(x, &c->cert);
  if (x && X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
    dc_seterr(why, why_size, "the certificate in %s (%.100s) expired on %.31s",
             fc->path, c->cert.subject, c->cert.not_after);
    goto out;
  }
  if (x && k && X509_check_private_key(x, k) != 1) {
    *wait = true;
    dc_seterr(why, why_size,
             "the certificate in %s (%.100s) and the key in %s do not match",
             fc->path, c->cert.subject, fk->path);
    goto out;
  }
  if (fa->path && pem_count(fa->data, fa->len, &cax) == 0) {
    dc_seterr(why, why_size, "%s %s holds no PEM certificate", fa->prop,
             fa->path);
    goto out;
  }
  describe_cert(cax, &c->ca);
  describe_key(k, c->key, sizeof(c->key));
  rc = 0;
out:
  X509_free(x);
  X509_free(cax);
  EVP_PKEY_free(k);
  ERR_clear_error(); /* the agent thread's queue: leave nothing behind */
  return rc;
}

/* Identifies the set on disk, to report each unusable one once. */
static void candidate_id(const dc_certwatch_t *cw, unsigned char id[32]) {
  unsigned char buf[3 * 33];
  size_t n = 0;
  for (int i = 0; i < 3; i++) {
    buf[n++] = cw->f[i].path ? (cw->f[i].seen_ok ? 1 : 2) : 0;
    memcpy(buf + n, cw->f[i].seen_hash, 32);
    n += 32;
  }
  unsigned int mdlen = 0;
  EVP_Digest(buf, n, id, &mdlen, EVP_sha256(), NULL);
}

/* ---- the watcher ------------------------------------------------------- */

int dc_certwatch_init(dynconf_t *dc) {
  dc_certwatch_t *cw = &dc->cw;
  for (int i = 0; i < 3; i++)
    cw->f[i].prop = cw_props[i];
  cw->interval_ms = dc->conf.ssl_check_interval_ms;
  char *proto = app_get(dc, "security.protocol");
  bool tls = proto && (!strcasecmp(proto, "ssl") ||
                       !strcasecmp(proto, "sasl_ssl"));
  free(proto);
  if (!tls || cw->interval_ms <= 0)
    return 0;
  int watched = 0;
  for (int i = 0; i < 3; i++) {
    char *path = app_get(dc, cw_props[i]);
    struct stat st;
    if (path && !stat(path, &st) && S_ISREG(st.st_mode)) {
      cw->f[i].path = path; /* ours now */
      watched++;
      continue;
    }
    if (path) /* a CA directory, "probe", a missing file... */
      dc_agent_log(dc, 7, "SSL", "not watching %s=%s: not a regular file",
                   cw_props[i], path);
    free(path);
  }
  if (!watched)
    return 0;
  cw->key_password = app_get(dc, "ssl.key.password");
  cw->enabled = true;
  /* The baseline: what librdkafka is about to load. */
  for (int i = 0; i < 3; i++)
    if (cw->f[i].path) {
      refresh_file(&cw->f[i]);
      cw->f[i].applied_ok = cw->f[i].seen_ok;
      memcpy(cw->f[i].applied_hash, cw->f[i].seen_hash, 32);
    }
  cw_candidate_t c;
  bool wait;
  char why[320];
  if (!validate(cw, &c, &wait, why, sizeof(why))) {
    cw->cert = c.cert;
    cw->ca = c.ca;
    snprintf(cw->key, sizeof(cw->key), "%s", c.key);
  } else {
    /* librdkafka will say so too, when it loads them. */
    dc_agent_log(dc, 4, "SSL", "the ssl files in use do not look right: %s",
                 why);
  }
  cw->next_check_ms = dc_mono_ms() + cw->interval_ms;
  dc_agent_log(dc, 7, "SSL",
               "checking the ssl files every %d ms (certificate %s, key %s, "
               "CA %s)",
               cw->interval_ms, cw->f[0].path ? cw->f[0].path : "-",
               cw->f[1].path ? cw->f[1].path : "-",
               cw->f[2].path ? cw->f[2].path : "-");
  return 0;
}

void dc_certwatch_free(dc_certwatch_t *cw) {
  for (int i = 0; i < 3; i++) {
    free(cw->f[i].path);
    free(cw->f[i].data);
    cw->f[i].path = NULL;
    cw->f[i].data = NULL;
  }
  free(cw->key_password);
  cw->key_password = NULL;
}

int64_t dc_certwatch_next_ms(const dc_certwatch_t *cw) {
  return cw->enabled ? cw->next_check_ms : INT64_MAX;
}

static dynconf_event_t *cert_error_event(const char *why) {
  static const char tail[] = "; the current certificates stay in use";
  dynconf_event_t *ev = calloc(1, sizeof(*ev));
  size_t n = strlen(why) + sizeof(tail);
  if (ev && !(ev->errstr = malloc(n))) {
    free(ev);
    return NULL;
  }
  if (ev)
    snprintf(ev->errstr, n, "%s%s", why, tail);
  if (ev) {
    ev->type = DYNCONF_EVENT_CERT_ERROR;
    ev->err = DYNCONF_ERR_INVALID_CONFIG;
  }
  return ev;
}

/* The changed set cannot be used: report it once (a state a rotation
 * passes through only when it persists), keep everything. */
static void unusable(dynconf_t *dc, const char *why, bool wait) {
  dc_certwatch_t *cw = &dc->cw;
  unsigned char id[32];
  candidate_id(cw, id);
  bool same = cw->have_pending_id && !memcmp(id, cw->pending_id, 32);
  memcpy(cw->pending_id, id, 32);
  cw->have_pending_id = true;
  pthread_mutex_lock(&dc->lock);
  if (!same) {
    snprintf(cw->pending, sizeof(cw->pending), "%s", why);
    cw->pending_since_ms = dc_wall_ms();
    cw->pending_checks = 1;
    cw->pending_waiting = wait;
    cw->rejected++;
  } else {
    cw->pending_checks++;
  }
  bool report = wait ? same && cw->pending_checks == DC_CW_MISMATCH_CHECKS
                     : !same;
  int checks = cw->pending_checks;
  if (report) {
    dynconf_event_t *ev = cert_error_event(why);
    if (ev)
      dc_agent_enqueue_locked(dc, ev);
  }
  pthread_mutex_unlock(&dc->lock);
  if (!same && wait)
    dc_agent_log(dc, 5, "SSL", "%s (yet); waiting for the rest of the "
                 "rotation, the current certificate stays in use", why);
  else if (!same)
    dc_agent_log(dc, 4, "SSL", "%s; the current certificates stay in use",
                 why);
  else if (report)
    dc_agent_log(dc, 4, "SSL", "%s, still after %d checks; the current "
                 "certificate stays in use", why, checks);
}

/* One entry per changed file of a rotation from the files in use to c,
 * sorted by key: ca < certificate < key. Caller holds lock. */
static void add_rotation_entries(dynconf_event_t *ev, const dc_certwatch_t *cw,
                                 const cw_candidate_t *c,
                                 const bool changed[3]) {
  static const int order[3] = {DC_CW_CA, DC_CW_CERT, DC_CW_KEY};
  for (int j = 0; j < 3; j++) {
    int i = order[j];
    if (!changed[i])
      continue;
    dc_event_entry_t *en = &ev->entries[ev->n++];
    en->key = strdup(cw_props[i]);
    en->source = DYNCONF_SOURCE_FILE;
    en->outcome = DYNCONF_OUTCOME_APPLIED;
    if (i == DC_CW_KEY) {
      en->old_value = strdup(*cw->key ? cw->key : "(none)");
      en->new_value = strdup(*c->key ? c->key : "(none)");
    } else {
      en->old_value = cert_value(i == DC_CW_CA ? &cw->ca : &cw->cert);
      en->new_value = cert_value(i == DC_CW_CA ? &c->ca : &c->cert);
    }
  }
}

static void log_rotation(dynconf_t *dc, const cw_candidate_t *c, int64_t gen) {
  if (c->cert.valid)
    dc_agent_log(dc, 6, "SSL", "rotated to the certificate %s (SHA-256 %s, "
                 "expires %s); generation %lld, clients rebuild",
                 c->cert.subject, c->cert.fingerprint, c->cert.not_after,
                 (long long)gen);
  else
    dc_agent_log(dc, 6, "SSL", "rotated to the CA %s; generation %lld, "
                 "clients rebuild", c->ca.subject, (long long)gen);
}

/* Queues the CHANGE event of a rotation and moves the generation. */
static void rotate(dynconf_t *dc, const cw_candidate_t *c) {
  dc_certwatch_t *cw = &dc->cw;
  bool changed[3];
  for (int i = 0; i < 3; i++)
    changed[i] = differs(&cw->f[i]);
  dynconf_event_t *ev = calloc(1, sizeof(*ev));
  if (ev)
    ev->entries = calloc(3, sizeof(*ev->entries));
  pthread_mutex_lock(&dc->lock);
  if (ev && ev->entries)
    add_rotation_entries(ev, cw, c, changed);
  dc->generation++;
  cw->rotations++;
  cw->last_rotation_ms = dc_wall_ms();
  cw->cert = c->cert;
  cw->ca = c->ca;
  snprintf(cw->key, sizeof(cw->key), "%s", c->key);
  cw->pending[0] = '\0';
  cw->pending_checks = 0;
  if (ev && ev->entries) {
    ev->type = DYNCONF_EVENT_CHANGE;
    ev->accepted = 1;
    ev->generation = dc->generation;
    dc_agent_enqueue_locked(dc, ev);
  } else {
    dc_event_free(ev); /* out of memory: the rotation happens anyway */
  }
  int64_t gen = dc->generation;
  /* Prove the new files on the agent's own connection at once. */
  dc->refresh_requested = true;
  pthread_mutex_unlock(&dc->lock);
  for (int i = 0; i < 3; i++) {
    cw->f[i].applied_ok = cw->f[i].seen_ok;
    memcpy(cw->f[i].applied_hash, cw->f[i].seen_hash, 32);
  }
  cw->have_pending_id = false;
  log_rotation(dc, c, gen);
}

void dc_certwatch_check(dynconf_t *dc) {
  dc_certwatch_t *cw = &dc->cw;
  cw->next_check_ms = dc_mono_ms() + cw->interval_ms;
  bool changed = false;
  for (int i = 0; i < 3; i++)
    if (cw->f[i].path) {
      refresh_file(&cw->f[i]);
      changed |= differs(&cw->f[i]);
    }
  pthread_mutex_lock(&dc->lock);
  cw->checks++;
  bool was_pending = cw->pending[0] != '\0';
  if (!changed) {
    cw->pending[0] = '\0';
    cw->pending_checks = 0;
  }
  pthread_mutex_unlock(&dc->lock);
  if (!changed) {
    cw->have_pending_id = false;
    if (was_pending)
      dc_agent_log(dc, 6, "SSL", "the ssl files are back to the ones in use");
    return;
  }
  cw_candidate_t c;
  bool wait;
  char why[320];
  if (validate(cw, &c, &wait, why, sizeof(why))) {
    unusable(dc, why, wait);
    return;
  }
  rotate(dc, &c);
  char errstr[512];
  if (dc_agent_conn_rebuild(dc, errstr, sizeof(errstr)))
    dc_agent_log(dc, 3, "SSL", "the agent's own connection cannot use the "
                 "new files: %s", errstr);
}
