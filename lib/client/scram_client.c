/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SCRAM client state machine (RFC 5802/7677) over the shared
 * primitives in common/scram.h; see scram_client.h.
 */
#include "client/scram_client.h"
#include "common/text.h"

#include <openssl/crypto.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- client ------------------------------------------------------------ */

enum { C_INIT, C_SENT_FIRST, C_SENT_FINAL, C_DONE, C_FAILED };

struct dc_scram_client {
  dc_scram_hash_t hash;
  int state;
  char *user;     /* owned, escaped saslname */
  char *password; /* owned, wiped on destroy */
  char nonce[48]; /* client nonce */
  char *first_bare; /* owned: client-first-message-bare */
  uint8_t server_sig[DC_SCRAM_MAX_DIGEST]; /* expected in server-final */
};

dc_scram_client_t *dc_scram_client_new(dc_scram_hash_t h, const char *user,
                                       const char *password,
                                       const char *nonce) {
  dc_scram_client_t *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->hash = h;
  c->user = dc_scram_escape_name(user ? user : "");
  c->password = strdup(password ? password : "");
  if (!c->user || !c->password)
    goto fail;
  if (nonce) {
    if (!*nonce || strlen(nonce) >= sizeof(c->nonce) || strchr(nonce, ','))
      goto fail;
    strcpy(c->nonce, nonce);
  } else if (dc_scram_nonce(c->nonce, 32)) {
    goto fail;
  }
  return c;
fail:
  dc_scram_client_destroy(c);
  return NULL;
}

void dc_scram_client_destroy(dc_scram_client_t *c) {
  if (!c)
    return;
  free(c->user);
  if (c->password) {
    OPENSSL_cleanse(c->password, strlen(c->password));
    free(c->password);
  }
  free(c->first_bare);
  OPENSSL_cleanse(c, sizeof(*c));
  free(c);
}

int dc_scram_client_first(dc_scram_client_t *c, char **out, size_t *outlen,
                          char *errstr, size_t errstr_size) {
  *out = NULL;
  *outlen = 0;
  if (c->state != C_INIT) {
    dc_seterr(errstr, errstr_size, "SCRAM client-first already sent");
    return -1;
  }
  size_t n = strlen(c->user) + strlen(c->nonce) + 6;
  c->first_bare = malloc(n + 1);
  char *msg = malloc(n + 3 + 1);
  if (!c->first_bare || !msg) {
    free(msg);
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  snprintf(c->first_bare, n + 1, "n=%s,r=%s", c->user, c->nonce);
  *outlen = (size_t)snprintf(msg, n + 4, "n,,%s", c->first_bare);
  *out = msg;
  c->state = C_SENT_FIRST;
  return 0;
}

/* What server-first carries: the whole nonce, the salt and the
 * iteration count. */
typedef struct server_first {
  const char *r;
  size_t rl;
  uint8_t salt[DC_SCRAM_MAX_SALT];
  long saltn;
  long iters;
} server_first_t;

/* The decimal count i[0..il); -1 when it is not one or is above the most
 * accepted. */
static long parse_iterations(const char *i, size_t il) {
  long iters = 0;
  for (size_t k = 0; k < il; k++) {
    if (i[k] < '0' || i[k] > '9' || iters > DC_SCRAM_MAX_ITERATIONS)
      return -1;
    iters = iters * 10 + (i[k] - '0');
  }
  return iters;
}

/* Parses and checks server-first (sf[0..n)); 0, or -1 with errstr set. */
static int parse_server_first(const dc_scram_client_t *c, const char *sf,
                              size_t n, server_first_t *f, char *errstr,
                              size_t errstr_size) {
  const char *mech = dc_scram_mechanism_name(c->hash);
  size_t rl = 0, sl = 0, il = 0;
  const char *r = NULL, *s = NULL, *i = NULL;
  if (sf && !memchr(sf, '\0', n)) {
    r = dc_scram_attr(sf, n, 'r', &rl);
    s = dc_scram_attr(sf, n, 's', &sl);
    i = dc_scram_attr(sf, n, 'i', &il);
  }
  if (n >= 2 && sf[0] == 'e' && sf[1] == '=') {
    dc_seterr(errstr, errstr_size, "%s: server error: %.*s", mech,
           (int)(n - 2 > 200 ? 200 : n - 2), sf + 2);
    return -1;
  }
  if (!r || r != sf + 2 || !s || !i) {
    dc_seterr(errstr, errstr_size, "%s: malformed server-first message", mech);
    return -1;
  }
  size_t cn = strlen(c->nonce);
  if (rl <= cn || memcmp(r, c->nonce, cn)) {
    dc_seterr(errstr, errstr_size,
           "%s: the server's nonce does not extend ours", mech);
    return -1;
  }
  for (size_t k = 0; k < rl; k++)
    if (r[k] < 0x21 || r[k] > 0x7e) {
      dc_seterr(errstr, errstr_size, "%s: bad character in server nonce", mech);
      return -1;
    }
  long iters = parse_iterations(i, il);
  if (il == 0 || iters < DC_SCRAM_MIN_ITERATIONS ||
      iters > DC_SCRAM_MAX_ITERATIONS) {
    dc_seterr(errstr, errstr_size,
           "%s: server asked for %.*s iterations (accepted: %d..%d)", mech,
           (int)(il > 20 ? 20 : il), i, DC_SCRAM_MIN_ITERATIONS,
           DC_SCRAM_MAX_ITERATIONS);
    return -1;
  }
  f->saltn = dc_b64_decode(s, sl, f->salt, sizeof(f->salt));
  if (f->saltn <= 0) {
    dc_seterr(errstr, errstr_size, "%s: bad salt in server-first message", mech);
    return -1;
  }
  f->r = r;
  f->rl = rl;
  f->iters = iters;
  return 0;
}

/* The client-final message: without (client-final-message-without-proof)
 * and the proof over auth (the AuthMessage); keeps the server signature
 * to expect. 0, or -1 with errstr set. */
static int prove(dc_scram_client_t *c, const server_first_t *f,
                 const char *without, const char *auth, size_t al,
                 char **out, size_t *outlen, char *errstr,
                 size_t errstr_size) {
  size_t dl = dc_scram_digest_len(c->hash);
  uint8_t salted[DC_SCRAM_MAX_DIGEST], ck[DC_SCRAM_MAX_DIGEST],
      stored[DC_SCRAM_MAX_DIGEST], sk[DC_SCRAM_MAX_DIGEST],
      sig[DC_SCRAM_MAX_DIGEST];
  int rc = -1;
  char *proof_b64 = NULL;
  if (dc_scram_salted_password(c->hash, c->password, strlen(c->password),
                               f->salt, (size_t)f->saltn, (int)f->iters,
                               salted) ||
      dc_scram_derive_keys(c->hash, salted, ck, stored, sk) ||
      dc_scram_hmac(c->hash, stored, dl, auth, al, sig) ||
      dc_scram_hmac(c->hash, sk, dl, auth, al, c->server_sig)) {
    dc_seterr(errstr, errstr_size, "%s: key derivation failed (OpenSSL error)",
           dc_scram_mechanism_name(c->hash));
    goto out;
  }
  for (size_t k = 0; k < dl; k++)
    ck[k] ^= sig[k]; /* ClientProof */
  proof_b64 = dc_b64_encode(ck, dl);
  size_t ol = strlen(without) + 3 + (proof_b64 ? strlen(proof_b64) : 0);
  char *msg = proof_b64 ? malloc(ol + 1) : NULL;
  if (!msg) {
    dc_seterr(errstr, errstr_size, "out of memory");
    goto out;
  }
  snprintf(msg, ol + 1, "%s,p=%s", without, proof_b64);
  *out = msg;
  *outlen = ol;
  rc = 0;
out:
  OPENSSL_cleanse(salted, sizeof(salted));
  OPENSSL_cleanse(ck, sizeof(ck));
  OPENSSL_cleanse(sk, sizeof(sk));
  free(proof_b64);
  return rc;
}

int dc_scram_client_final(dc_scram_client_t *c, const uint8_t *server_first,
                          size_t n, char **out, size_t *outlen, char *errstr,
                          size_t errstr_size) {
  *out = NULL;
  *outlen = 0;
  const char *sf = (const char *)server_first;
  if (c->state != C_SENT_FIRST) {
    dc_seterr(errstr, errstr_size, "%s: server-first message out of order",
              dc_scram_mechanism_name(c->hash));
    return -1;
  }
  c->state = C_FAILED;
  server_first_t f;
  if (parse_server_first(c, sf, n, &f, errstr, errstr_size))
    return -1;

  /* client-final-message-without-proof, then AuthMessage. */
  size_t wl = 9 + f.rl; /* "c=biws,r=" + nonce */
  char *without = malloc(wl + 1);
  size_t bl = strlen(c->first_bare);
  size_t al = bl + 1 + n + 1 + wl;
  char *auth = malloc(al + 1);
  if (!without || !auth) {
    free(without);
    free(auth);
    dc_seterr(errstr, errstr_size, "out of memory");
    return -1;
  }
  snprintf(without, wl + 1, "c=biws,r=%.*s", (int)f.rl, f.r);
  snprintf(auth, al + 1, "%s,%.*s,%s", c->first_bare, (int)n, sf, without);
  int rc = prove(c, &f, without, auth, al, out, outlen, errstr, errstr_size);
  if (!rc)
    c->state = C_SENT_FINAL;
  free(without);
  free(auth);
  return rc;
}

int dc_scram_client_verify(dc_scram_client_t *c, const uint8_t *server_final,
                           size_t n, char *errstr, size_t errstr_size) {
  const char *m = (const char *)server_final;
  const char *mech = dc_scram_mechanism_name(c->hash);
  if (c->state != C_SENT_FINAL) {
    dc_seterr(errstr, errstr_size, "%s: server-final message out of order", mech);
    return -1;
  }
  c->state = C_FAILED;
  if (m && n >= 2 && m[0] == 'e' && m[1] == '=') {
    dc_seterr(errstr, errstr_size, "%s: server error: %.*s", mech,
           (int)(n - 2 > 200 ? 200 : n - 2), m + 2);
    return -1;
  }
  size_t vl = 0;
  const char *v = m && !memchr(m, '\0', n) ? dc_scram_attr(m, n, 'v', &vl)
                                           : NULL;
  uint8_t sig[DC_SCRAM_MAX_DIGEST];
  size_t dl = dc_scram_digest_len(c->hash);
  if (!v || v != m + 2 || dc_b64_decode(v, vl, sig, sizeof(sig)) != (long)dl) {
    dc_seterr(errstr, errstr_size, "%s: malformed server-final message", mech);
    return -1;
  }
  if (CRYPTO_memcmp(sig, c->server_sig, dl)) {
    dc_seterr(errstr, errstr_size,
           "%s: the server's signature is wrong (it does not know the "
           "password: not the server we meant to reach?)",
           mech);
    return -1;
  }
  c->state = C_DONE;
  return 0;
}
