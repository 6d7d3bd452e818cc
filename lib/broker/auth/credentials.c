/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hashed credentials file (see credentials.h): parse, look up, and
 * add/replace a user by rewriting the file atomically.
 */
#include "broker/auth/credentials.h"
#include "common/entity.h"
#include "common/principal.h"
#include "common/text.h"

#include <openssl/crypto.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct entry {
  char *user; /* owned, decoded */
  dc_scram_cred_t cred;
} entry_t;

struct dc_credentials {
  atomic_int refs; /* the broker's and each log-in in flight */
  entry_t *v; /* owned, sorted by (user, hash) */
  size_t n;
  int common_iterations[2]; /* by dc_scram_hash_t */
};


/* ---- user name encoding ---------------------------------------------- */

static bool needs_pct(unsigned char c) {
  return c <= 0x20 || c >= 0x7f || c == '%' || c == '#';
}

/* Percent-encoded copy of user (malloc'd), NULL on out of memory. */
static char *pct_encode(const char *user) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)user; *p; p++)
    n += needs_pct(*p) ? 3 : 1;
  char *s = malloc(n + 1), *w = s;
  if (!s)
    return NULL;
  for (const unsigned char *p = (const unsigned char *)user; *p; p++) {
    if (needs_pct(*p))
      w += sprintf(w, "%%%02X", *p);
    else
      *w++ = (char)*p;
  }
  *w = '\0';
  return s;
}


/* Decodes in place; false on a bad %XX or a decoded NUL. */
static bool pct_decode(char *s) {
  char *w = s;
  for (char *p = s; *p; p++) {
    if (*p != '%') {
      *w++ = *p;
      continue;
    }
    int hi = dc_hexval(p[1]), lo = hi < 0 ? -1 : dc_hexval(p[2]);
    if (hi < 0 || lo < 0 || (hi | lo) == 0)
      return false;
    *w++ = (char)(hi << 4 | lo);
    p += 2;
  }
  *w = '\0';
  return true;
}

/* ---- loading ----------------------------------------------------------- */

static int cmp_entry(const void *a, const void *b) {
  const entry_t *x = a, *y = b;
  int c = strcmp(x->user, y->user);
  return c ? c : (int)x->cred.hash - (int)y->cred.hash;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Fills c->common_iterations: the most frequent count per mechanism. */
static int common_iterations(dc_credentials_t *c) {
  int *its = malloc((c->n ? c->n : 1) * sizeof(int));
  if (!its)
    return -1;
  for (int h = 0; h < 2; h++) {
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++)
      if ((int)c->v[i].cred.hash == h)
        its[k++] = c->v[i].cred.iterations;
    int best = DC_SCRAM_DEFAULT_ITERATIONS;
    size_t best_run = 0;
    qsort(its, k, sizeof(int), cmp_int);
    for (size_t i = 0; i < k;) {
      size_t j = i;
      while (j < k && its[j] == its[i])
        j++;
      if (j - i > best_run) {
        best_run = j - i;
        best = its[i];
      }
      i = j;
    }
    c->common_iterations[h] = best;
  }
  free(its);
  return 0;
}

int dc_credentials_common_iterations(const dc_credentials_t *c,
                                     const char *mechanism) {
  dc_scram_hash_t h;
  if (!c || !dc_scram_hash_from_name(mechanism, &h))
    return DC_SCRAM_DEFAULT_ITERATIONS;
  return c->common_iterations[h];
}

dc_credentials_t *dc_credentials_ref(dc_credentials_t *c) {
  if (c)
    atomic_fetch_add(&c->refs, 1);
  return c;
}

void dc_credentials_destroy(dc_credentials_t *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) > 1)
    return;
  for (size_t i = 0; i < c->n; i++) {
    free(c->v[i].user);
    OPENSSL_cleanse(&c->v[i].cred, sizeof(c->v[i].cred));
  }
  free(c->v);
  free(c);
}

/* Decodes one "key=<b64>" field into out (exactly want bytes unless want
 * is 0: then 1..cap). Returns the length or -1. */
static long b64_field(const char *val, uint8_t *out, size_t cap, size_t want) {
  long n = dc_b64_decode(val, strlen(val), out, cap);
  if (n <= 0 || (want && (size_t)n != want))
    return -1;
  return n;
}

/* Parses one non-comment line (modified in place) into e. Returns 0, or -1
 * with why (a phrase) set. */
static int parse_line(char *line, entry_t *e, const char **why) {
  char *save = NULL;
  char *user = strtok_r(line, " \t", &save);
  char *mech = strtok_r(NULL, " \t", &save);
  memset(e, 0, sizeof(*e));
  if (!user || !mech) {
    *why = "expected USER MECHANISM iterations=N salt=B64 stored_key=B64 "
           "server_key=B64";
    return -1;
  }
  if (!pct_decode(user) || !*user) {
    *why = "bad user name (percent-encoding, or empty)";
    return -1;
  }
  if (!dc_scram_hash_from_name(mech, &e->cred.hash)) {
    *why = "unknown mechanism (expected SCRAM-SHA-256 or SCRAM-SHA-512)";
    return -1;
  }
  e->cred.key_len = dc_scram_digest_len(e->cred.hash);
  bool have_i = false, have_salt = false, have_st = false, have_sv = false;
  for (char *f; (f = strtok_r(NULL, " \t", &save));) {
    char *eq = strchr(f, '=');
    if (!eq) {
      *why = "field without '='";
      return -1;
    }
    *eq = '\0';
    const char *v = eq + 1;
    if (!strcmp(f, "iterations") && !have_i) {
      char *end;
      errno = 0;
      long it = strtol(v, &end, 10);
      if (errno || *end || end == v || it < DC_SCRAM_MIN_ITERATIONS ||
          it > DC_SCRAM_MAX_ITERATIONS) {
        *why = "iterations must be a number in 4096..16384";
        return -1;
      }
      e->cred.iterations = (int)it;
      have_i = true;
    } else if (!strcmp(f, "salt") && !have_salt) {
      long n = b64_field(v, e->cred.salt, sizeof(e->cred.salt), 0);
      if (n < 0) {
        *why = "salt is not base64 of 1..128 bytes";
        return -1;
      }
      e->cred.salt_len = (size_t)n;
      have_salt = true;
    } else if (!strcmp(f, "stored_key") && !have_st) {
      if (b64_field(v, e->cred.stored_key, sizeof(e->cred.stored_key),
                    e->cred.key_len) < 0) {
        *why = "stored_key is not base64 of one digest";
        return -1;
      }
      have_st = true;
    } else if (!strcmp(f, "server_key") && !have_sv) {
      if (b64_field(v, e->cred.server_key, sizeof(e->cred.server_key),
                    e->cred.key_len) < 0) {
        *why = "server_key is not base64 of one digest";
        return -1;
      }
      have_sv = true;
    } else {
      *why = "unknown or repeated field";
      return -1;
    }
  }
  if (!have_i || !have_salt || !have_st || !have_sv) {
    *why = "missing field (iterations, salt, stored_key and server_key are "
           "all required)";
    return -1;
  }
  e->user = strdup(user);
  if (!e->user) {
    *why = "out of memory";
    return -1;
  }
  return 0;
}

/* True for lines that carry no entry. */
static bool blank_or_comment(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return *s == '\0' || *s == '#';
}

static void chomp(char *line) {
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
}

dc_credentials_t *dc_credentials_load(const char *path, char *errstr,
                                      size_t errstr_size) {
  FILE *f = fopen(path, "r");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot open credentials file %s: %s", path,
           strerror(errno));
    return NULL;
  }
  dc_credentials_t *c = calloc(1, sizeof(*c));
  if (c)
    atomic_init(&c->refs, 1);
  size_t cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t got;
  long lineno = 0;
  if (!c)
    goto oom;
  while ((got = getline(&line, &lcap, f)) != -1) {
    lineno++;
    if (memchr(line, '\0', (size_t)got)) {
      dc_seterr(errstr, errstr_size, "credentials file %s line %ld: NUL byte",
             path, lineno);
      goto fail;
    }
    chomp(line);
    if (blank_or_comment(line))
      continue;
    if (c->n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      entry_t *v = realloc(c->v, nc * sizeof(*v));
      if (!v)
        goto oom;
      c->v = v;
      cap = nc;
    }
    const char *why = NULL;
    if (parse_line(line, &c->v[c->n], &why)) {
      dc_seterr(errstr, errstr_size, "credentials file %s line %ld: %s", path,
             lineno, why);
      goto fail;
    }
    c->n++;
  }
  if (ferror(f)) {
    dc_seterr(errstr, errstr_size, "cannot read credentials file %s: %s", path,
           strerror(errno));
    goto fail;
  }
  if (c->n)
    qsort(c->v, c->n, sizeof(*c->v), cmp_entry);
  if (common_iterations(c))
    goto oom;
  for (size_t i = 1; i < c->n; i++)
    if (!cmp_entry(&c->v[i - 1], &c->v[i])) {
      dc_seterr(errstr, errstr_size,
             "credentials file %s: user '%s' has %s twice", path,
             c->v[i].user, dc_scram_mechanism_name(c->v[i].cred.hash));
      goto fail;
    }
  free(line);
  fclose(f);
  return c;
oom:
  dc_seterr(errstr, errstr_size, "out of memory reading credentials file %s",
         path);
fail:
  if (line)
    OPENSSL_cleanse(line, lcap);
  free(line);
  fclose(f);
  dc_credentials_destroy(c);
  return NULL;
}

const dc_scram_cred_t *dc_credentials_find(const dc_credentials_t *c,
                                           const char *user,
                                           const char *mechanism) {
  dc_scram_hash_t h;
  if (!c || !user || !dc_scram_hash_from_name(mechanism, &h))
    return NULL;
  entry_t key = {.user = (char *)user};
  key.cred.hash = h;
  const entry_t *e = c->n ? bsearch(&key, c->v, c->n, sizeof(*c->v),
                                    cmp_entry)
                          : NULL;
  return e ? &e->cred : NULL;
}

size_t dc_credentials_count(const dc_credentials_t *c) { return c ? c->n : 0; }

/* ---- adding ------------------------------------------------------------ */

/* Writes one entry line to f. */
static int write_entry(FILE *f, const char *enc_user,
                       const dc_scram_cred_t *cr) {
  char *salt = dc_b64_encode(cr->salt, cr->salt_len);
  char *st = dc_b64_encode(cr->stored_key, cr->key_len);
  char *sv = dc_b64_encode(cr->server_key, cr->key_len);
  int rc = -1;
  if (salt && st && sv &&
      fprintf(f, "%s %s iterations=%d salt=%s stored_key=%s server_key=%s\n",
              enc_user, dc_scram_mechanism_name(cr->hash), cr->iterations,
              salt, st, sv) > 0)
    rc = 0;
  free(salt);
  free(st);
  free(sv);
  return rc;
}

/* The user a raw file line belongs to (decoded, malloc'd), or NULL for a
 * comment/blank line or out of memory. */
static char *line_user(const char *line) {
  if (blank_or_comment(line))
    return NULL;
  while (*line == ' ' || *line == '\t')
    line++;
  size_t n = strcspn(line, " \t\r\n");
  char *u = strndup(line, n);
  if (u && !pct_decode(u)) {
    free(u);
    return NULL;
  }
  return u;
}

/* fsyncs the directory holding path so the rename survives a crash. */
static void sync_dir(const char *path) {
  char *copy = strdup(path);
  if (!copy)
    return;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(copy);
}

int dc_credentials_add(const char *path, const char *user, const char *password,
                       int iterations, char *errstr, size_t errstr_size) {
  if (!user || !*user || strlen(user) > DC_ENTITY_PART_MAX) {
    dc_seterr(errstr, errstr_size, "the user name must be 1..%d bytes",
              DC_ENTITY_PART_MAX);
    return -1;
  }
  /* Such a user could never authenticate (sasl_user.c refuses it). */
  const char *fault = dc_principal_name_fault(user, strlen(user));
  if (fault) {
    dc_seterr(errstr, errstr_size,
              "the user name %s (a principal's name may not begin or end "
              "with a blank, nor hold a control character)",
              fault);
    return -1;
  }
  if (!password || !*password) {
    dc_seterr(errstr, errstr_size, "the password must not be empty");
    return -1;
  }
  if (iterations == 0)
    iterations = DC_SCRAM_DEFAULT_ITERATIONS;
  dc_scram_cred_t creds[2];
  for (int i = 0; i < 2; i++)
    if (dc_scram_cred_make(i ? DC_SCRAM_SHA512 : DC_SCRAM_SHA256, password,
                           iterations, NULL, 0, &creds[i], errstr,
                           errstr_size))
      return -1;

  /* An existing file must parse: never rewrite (and so propagate or lose)
   * something we do not understand. */
  FILE *in = fopen(path, "r");
  if (!in && errno != ENOENT) {
    dc_seterr(errstr, errstr_size, "cannot open credentials file %s: %s", path,
           strerror(errno));
    return -1;
  }
  if (in) {
    dc_credentials_t *old = dc_credentials_load(path, errstr, errstr_size);
    if (!old) {
      fclose(in);
      return -1;
    }
    dc_credentials_destroy(old);
  }

  size_t tl = strlen(path) + 32;
  char *tmp = malloc(tl);
  char *enc = pct_encode(user);
  char *line = NULL;
  size_t lcap = 0;
  FILE *out = NULL;
  int rc = -1;
  if (!tmp || !enc) {
    dc_seterr(errstr, errstr_size, "out of memory");
    goto out;
  }
  snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || !(out = fdopen(fd, "w"))) {
    dc_seterr(errstr, errstr_size, "cannot create %s: %s", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    goto out;
  }
  fchmod(fd, 0600); /* in case a stale tmp file had another mode */
  if (in) {
    while (getline(&line, &lcap, in) != -1) {
      char *lu = line_user(line);
      bool same = lu && !strcmp(lu, user);
      free(lu);
      if (same)
        continue; /* replaced below */
      size_t ll = strlen(line);
      if (fputs(line, out) == EOF ||
          (ll && line[ll - 1] != '\n' && fputc('\n', out) == EOF))
        break;
    }
  } else {
    fputs("# dynconf SASL credentials (hashed; see dynconfd --add-user)\n", out);
  }
  if (write_entry(out, enc, &creds[0]) || write_entry(out, enc, &creds[1]) ||
      fflush(out) || fsync(fileno(out)) || ferror(out)) {
    dc_seterr(errstr, errstr_size, "cannot write %s: %s", tmp, strerror(errno));
    goto out;
  }
  int cr = fclose(out);
  out = NULL;
  if (cr) {
    dc_seterr(errstr, errstr_size, "cannot write %s: %s", tmp, strerror(errno));
    goto out;
  }
  if (rename(tmp, path)) {
    dc_seterr(errstr, errstr_size, "cannot rename %s to %s: %s", tmp, path,
           strerror(errno));
    goto out;
  }
  sync_dir(path);
  rc = 0;
out:
  if (out)
    fclose(out);
  if (rc && tmp)
    unlink(tmp);
  if (in)
    fclose(in);
  free(line);
  free(enc);
  free(tmp);
  OPENSSL_cleanse(creds, sizeof(creds));
  return rc;
}
