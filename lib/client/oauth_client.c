/* SPDX-License-Identifier: BSD-2-Clause */
/* SASL OAUTHBEARER, the client's half (see oauth_client.h). */
#include "client/oauth_client.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/scram.h"
#include "common/errors.h"
#include "common/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

char *dc_oauth_client_first(const char *token, size_t *len) {
  static const char head[] = "n,,\x01" "auth=Bearer ";
  size_t tl = strlen(token), hl = sizeof(head) - 1;
  char *m = malloc(hl + tl + 3);
  if (!m)
    return NULL;
  memcpy(m, head, hl);
  memcpy(m + hl, token, tl);
  memcpy(m + hl + tl, "\x01\x01", 3);
  *len = hl + tl + 2;
  return m;
}

/* The settings of an unsecured token, as librdkafka reads them. */
typedef struct unsecured {
  char *principal, *principal_claim, *scope, *scope_claim;
  int64_t life_s;
} unsecured_t;

/* Points *field at the value of one "key=value" word (inside the caller's
 * copy of the config). 0, or -1 with errstr. */
static int take_word(unsecured_t *u, char *word, char *errstr,
                     size_t errstr_size) {
  char *eq = strchr(word, '=');
  if (!eq || eq == word || !eq[1]) {
    dc_seterr(errstr, errstr_size, "sasl.oauthbearer.config: '%.100s' is not "
              "key=value", word);
    return -1;
  }
  *eq = '\0';
  char *v = eq + 1;
  if (!strcmp(word, "principal"))
    u->principal = v;
  else if (!strcmp(word, "principalClaimName"))
    u->principal_claim = v;
  else if (!strcmp(word, "scope"))
    u->scope = v;
  else if (!strcmp(word, "scopeClaimName"))
    u->scope_claim = v;
  else if (!strcmp(word, "lifeSeconds")) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || n < 1 || n > 86400 * 365) {
      dc_seterr(errstr, errstr_size, "sasl.oauthbearer.config: lifeSeconds "
                "must be 1 to 31536000, not '%.40s'", v);
      return -1;
    }
    u->life_s = n;
  } else {
    dc_seterr(errstr, errstr_size, "sasl.oauthbearer.config: unknown key "
              "'%.60s' (principal, principalClaimName, lifeSeconds, scope, "
              "scopeClaimName)", word);
    return -1;
  }
  return 0;
}

/* The claims as JSON into b. */
static void claims_json(dc_buf_t *b, const unsecured_t *u, int64_t now_s) {
  dc_buf_printf(b, "{");
  dc_json_str(b, u->principal_claim ? u->principal_claim : "sub");
  dc_buf_printf(b, ":");
  dc_json_str(b, u->principal);
  dc_buf_printf(b, ",\"iat\":%" PRId64 ",\"exp\":%" PRId64, now_s,
                now_s + u->life_s);
  if (u->scope) {
    dc_buf_printf(b, ",");
    dc_json_str(b, u->scope_claim ? u->scope_claim : "scope");
    dc_buf_printf(b, ":[");
    char *save = NULL;
    int i = 0;
    for (char *s = strtok_r(u->scope, ",", &save); s;
         s = strtok_r(NULL, ",", &save), i++) {
      dc_buf_printf(b, "%s", i ? "," : "");
      dc_json_str(b, s);
    }
    dc_buf_printf(b, "]");
  }
  dc_buf_printf(b, "}");
}

/* base64url without padding of p into b. */
static void b64url(dc_buf_t *b, const void *p, size_t n) {
  char *s = dc_b64_encode(p, n);
  if (!s) {
    b->err = DC_ERR__NOMEM;
    return;
  }
  size_t l = strcspn(s, "=");
  for (size_t i = 0; i < l; i++)
    s[i] = s[i] == '+' ? '-' : s[i] == '/' ? '_' : s[i];
  dc_buf_append(b, s, l);
  free(s);
}

char *dc_oauth_unsecured_token(const char *config, int64_t now_s,
                               char *errstr, size_t errstr_size) {
  unsecured_t u = {.life_s = 3600};
  char *copy = strdup(config ? config : "");
  if (!copy) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  char *save = NULL;
  for (char *w = strtok_r(copy, " \t", &save); w;
       w = strtok_r(NULL, " \t", &save))
    if (take_word(&u, w, errstr, errstr_size)) {
      free(copy);
      return NULL;
    }
  if (!u.principal) {
    dc_seterr(errstr, errstr_size, "sasl.oauthbearer.config needs "
                                   "principal=NAME");
    free(copy);
    return NULL;
  }
  static const char header[] = "{\"alg\":\"none\"}";
  dc_buf_t claims, tok;
  dc_buf_init(&claims);
  dc_buf_init(&tok);
  claims_json(&claims, &u, now_s);
  b64url(&tok, header, sizeof(header) - 1);
  dc_buf_append(&tok, ".", 1);
  b64url(&tok, claims.data, claims.len);
  dc_buf_append(&tok, ".", 2); /* the empty signature, and a NUL */
  free(copy);
  int err = claims.err || tok.err;
  dc_buf_free(&claims);
  if (err) {
    dc_buf_free(&tok);
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  return (char *)tok.data; /* the buffer's memory becomes the caller's */
}

char *dc_oauth_token_file_read(const char *path, char *errstr,
                               size_t errstr_size) {
  FILE *f = fopen(path, "r");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot read the token file %s: %s", path,
              strerror(errno));
    return NULL;
  }
  char buf[DC_OAUTH_TOKEN_MAX + 2];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  bool more = fgetc(f) != EOF;
  fclose(f);
  buf[n] = '\0';
  char *t = buf + strspn(buf, " \t\r\n");
  for (size_t l = strlen(t); l && strchr(" \t\r\n", t[l - 1]); l--)
    t[l - 1] = '\0';
  char *tok = NULL;
  if (more || strlen(t) > DC_OAUTH_TOKEN_MAX)
    dc_seterr(errstr, errstr_size, "the token file %s is over %d bytes", path,
              DC_OAUTH_TOKEN_MAX);
  else if (!*t || strpbrk(t, " \t\r\n"))
    dc_seterr(errstr, errstr_size, "the token file %s does not hold one "
              "token", path);
  else if (!(tok = strdup(t)))
    dc_seterr(errstr, errstr_size, "out of memory");
  OPENSSL_cleanse(buf, sizeof(buf));
  return tok;
}
