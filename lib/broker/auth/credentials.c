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

/* The fields of a line seen so far. */
typedef struct seen {
  bool iterations, salt, stored_key, server_key;
} seen_t;

/* One NAME=VALUE field of a line (modified in place) into e. Returns 0,
 * or -1 with why (a phrase) set. */
static int parse_field(char *f, entry_t *e, seen_t *seen, const char **why) {
  char *eq = strchr(f, '=');
  if (!eq) {
    *why = "field without '='";
    return -1;
  }
  *eq = '\0';
  const char *v = eq + 1;
  if (!strcmp(f, "iterations") && !seen->iterations) {
    char *end;
    errno = 0;
    long it = strtol(v, &end, 10);
    if (errno || *end || end == v || it < DC_SCRAM_MIN_ITERATIONS ||
        it > DC_SCRAM_MAX_ITERATIONS) {
      *why = "iterations must be a number in 4096..16384";
      return -1;
    }
    e->cred.iterations = (int)it;
    seen->iterations = true;
  } else if (!strcmp(f, "salt") && !seen->salt) {
    long n = b64_field(v, e->cred.salt, sizeof(e->cred.salt), 0);
    if (n < 0) {
      *why = "salt is not base64 of 1..128 bytes";
      return -1;
    }
    e->cred.salt_len = (size_t)n;
    seen->salt = true;
  } else if (!strcmp(f, "stored_key") && !seen->stored_key) {
    if (b64_field(v, e->cred.stored_key, sizeof(e->cred.stored_key),
                  e->cred.key_len) < 0) {
      *why = "stored_key is not base64 of one digest";
      return -1;
    }
    seen->stored_key = true;
  } else if (!strcmp(f, "server_key") && !seen->server_key) {
    if (b64_field(v, e->cred.server_key, sizeof(e->cred.server_key),
                  e->cred.key_len) < 0) {
      *why = "server_key is not base64 of one digest";
      return -1;
    }
    seen->server_key = true;
  } else {
    *why = "unknown or repeated field";
    return -1;
  }
  return 0;
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
  seen_t seen = {0};
  for (char *f; (f = strtok_r(NULL, " \t", &save));)
    if (parse_field(f, e, &seen, why))
      return -1;
  if (!seen.iterations || !seen.salt || !seen.stored_key ||
      !seen.server_key) {
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

/* The sentence for running out of memory while reading path; -1. */
static int read_oom(const char *path, char *errstr, size_t errstr_size) {
  dc_seterr(errstr, errstr_size, "out of memory reading credentials file %s",
         path);
  return -1;
}

/* Room in c for one more entry; -1 when out of memory. */
static int make_room(dc_credentials_t *c, size_t *cap) {
  if (c->n < *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  entry_t *v = realloc(c->v, nc * sizeof(*v));
  if (!v)
    return -1;
  c->v = v;
  *cap = nc;
  return 0;
}

/* Every entry of f into c, in file order; 0, or -1 with errstr. The line
 * buffer (*line, *lcap) is the caller's to free. */
static int read_entries(FILE *f, const char *path, dc_credentials_t *c,
                        char **line, size_t *lcap, char *errstr,
                        size_t errstr_size) {
  size_t cap = 0;
  ssize_t got;
  long lineno = 0;
  while ((got = getline(line, lcap, f)) != -1) {
    lineno++;
    if (memchr(*line, '\0', (size_t)got)) {
      dc_seterr(errstr, errstr_size, "credentials file %s line %ld: NUL byte",
             path, lineno);
      return -1;
    }
    chomp(*line);
    if (blank_or_comment(*line))
      continue;
    if (make_room(c, &cap))
      return read_oom(path, errstr, errstr_size);
    const char *why = NULL;
    if (parse_line(*line, &c->v[c->n], &why)) {
      dc_seterr(errstr, errstr_size, "credentials file %s line %ld: %s", path,
             lineno, why);
      return -1;
    }
    c->n++;
  }
  if (ferror(f)) {
    dc_seterr(errstr, errstr_size, "cannot read credentials file %s: %s", path,
           strerror(errno));
    return -1;
  }
  return 0;
}

/* The entries sorted for lookup, their common iteration counts known, and
 * no user with a mechanism twice; 0, or -1 with errstr. */
static int index_entries(dc_credentials_t *c, const char *path, char *errstr,
                         size_t errstr_size) {
  if (c->n)
    qsort(c->v, c->n, sizeof(*c->v), cmp_entry);
  if (common_iterations(c))
    return read_oom(path, errstr, errstr_size);
  for (size_t i = 1; i < c->n; i++)
    if (!cmp_entry(&c->v[i - 1], &c->v[i])) {
      dc_seterr(errstr, errstr_size,
             "credentials file %s: user '%s' has %s twice", path,
             c->v[i].user, dc_scram_mechanism_name(c->v[i].cred.hash));
      return -1;
    }
  return 0;
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
  char *line = NULL;
  size_t lcap = 0;
  int rc;
  if (c) {
    atomic_init(&c->refs, 1);
    rc = read_entries(f, path, c, &line, &lcap, errstr, errstr_size) ||
                 index_entries(c, path, errstr, errstr_size)
             ? -1
             : 0;
  } else {
    rc = read_oom(path, errstr, errstr_size);
  }
  if (rc && line)
    OPENSSL_cleanse(line, lcap);
  free(line);
  fclose(f);
  if (!rc)
    return c;
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

/* A user and password fit for the file: a name that could authenticate,
 * a password; 0, or -1 with errstr. */
static int check_new_user(const char *user, const char *password,
                          char *errstr, size_t errstr_size) {
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
  return 0;
}

/* An existing file must parse: never rewrite (and so propagate or lose)
 * something we do not understand. *in: the file open for reading, or NULL
 * when there is none yet; 0, or -1 with errstr. */
static int open_existing(const char *path, FILE **in, char *errstr,
                         size_t errstr_size) {
  *in = fopen(path, "r");
  if (!*in && errno != ENOENT) {
    dc_seterr(errstr, errstr_size, "cannot open credentials file %s: %s", path,
           strerror(errno));
    return -1;
  }
  if (*in) {
    dc_credentials_t *old = dc_credentials_load(path, errstr, errstr_size);
    if (!old) {
      fclose(*in);
      *in = NULL;
      return -1;
    }
    dc_credentials_destroy(old);
  }
  return 0;
}

/* The lines of in but user's copied to out; with no in, a new file's
 * first line. */
static void copy_other_users(FILE *in, FILE *out, const char *user) {
  char *line = NULL;
  size_t lcap = 0;
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
  free(line);
}

/* The new file written to tmp and synced: the others' lines, then user's
 * entries (enc: the name as the file spells it); 0, or -1 with errstr. */
static int write_tmp(const char *tmp, FILE *in, const char *user,
                     const char *enc, const dc_scram_cred_t creds[2],
                     char *errstr, size_t errstr_size) {
  FILE *out = NULL;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || !(out = fdopen(fd, "w"))) {
    dc_seterr(errstr, errstr_size, "cannot create %s: %s", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  fchmod(fd, 0600); /* in case a stale tmp file had another mode */
  copy_other_users(in, out, user);
  if (write_entry(out, enc, &creds[0]) || write_entry(out, enc, &creds[1]) ||
      fflush(out) || fsync(fileno(out)) || ferror(out)) {
    dc_seterr(errstr, errstr_size, "cannot write %s: %s", tmp, strerror(errno));
    fclose(out);
    return -1;
  }
  if (fclose(out)) {
    dc_seterr(errstr, errstr_size, "cannot write %s: %s", tmp, strerror(errno));
    return -1;
  }
  return 0;
}

int dc_credentials_add(const char *path, const char *user, const char *password,
                       int iterations, char *errstr, size_t errstr_size) {
  if (check_new_user(user, password, errstr, errstr_size))
    return -1;
  if (iterations == 0)
    iterations = DC_SCRAM_DEFAULT_ITERATIONS;
  dc_scram_cred_t creds[2];
  for (int i = 0; i < 2; i++)
    if (dc_scram_cred_make(i ? DC_SCRAM_SHA512 : DC_SCRAM_SHA256, password,
                           iterations, NULL, 0, &creds[i], errstr,
                           errstr_size))
      return -1;
  FILE *in;
  if (open_existing(path, &in, errstr, errstr_size))
    return -1;

  size_t tl = strlen(path) + 32;
  char *tmp = malloc(tl);
  char *enc = pct_encode(user);
  int rc = -1;
  if (!tmp || !enc) {
    dc_seterr(errstr, errstr_size, "out of memory");
  } else {
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    rc = write_tmp(tmp, in, user, enc, creds, errstr, errstr_size);
    if (!rc && rename(tmp, path)) {
      dc_seterr(errstr, errstr_size, "cannot rename %s to %s: %s", tmp, path,
             strerror(errno));
      rc = -1;
    }
    if (rc)
      unlink(tmp);
    else
      sync_dir(path);
  }
  if (in)
    fclose(in);
  free(enc);
  free(tmp);
  OPENSSL_cleanse(creds, sizeof(creds));
  return rc;
}
