/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sasl.jaas.config (see client_props.h): one login module, its control
 * flag and its options, parsed in one pass.
 */
#include "client/client_props.h"
#include "common/text.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Where the words go: one buffer twice the size of the whole text (a
 * word copies no more characters than it consumes, plus its NUL), so
 * parsing is linear. */
typedef struct words {
  char *buf;
  size_t used;
} words_t;

/* The next word or quoted string at *p into ws; NULL at the end (*p at
 * ';' or NUL) or with why on a bad quote. */
static char *next_word(words_t *ws, const char **p, char *why,
                       size_t why_size) {
  const char *s = *p + strspn(*p, " \t\r\n");
  *p = s;
  if (!*s || *s == ';')
    return NULL;
  size_t n = 0;
  char *w = ws->buf + ws->used;
  bool quoted = false;
  for (; *s; s++) {
    if (*s == '"') {
      quoted = !quoted;
    } else if (quoted && *s == '\\' && (s[1] == '"' || s[1] == '\\')) {
      w[n++] = *++s;
    } else if (!quoted && (strchr(" \t\r\n;", *s))) {
      break;
    } else if (!quoted && *s == '=' && n) {
      w[n++] = *s++; /* KEY= ends a word, so VALUE may be quoted */
      break;
    } else {
      w[n++] = *s;
    }
  }
  if (quoted) {
    dc_seterr(why, why_size, "sasl.jaas.config: unterminated quote");
    return NULL;
  }
  w[n] = '\0';
  ws->used += n + 1;
  *p = s;
  return w;
}

static void set_if_unset(const char **field, const char *val) {
  if (!*field || !**field)
    *field = val;
}

/* One KEY=VALUE of the module named by kind ('k' Kerberos, 'p' PLAIN or
 * SCRAM). Unknown options are ignored, as JAAS ignores them. */
static void take_option(dc_kclient_security_t *sec, char kind,
                        const char *key, const char *val, bool *use_keytab) {
  if (kind == 'k' && !strcmp(key, "keyTab"))
    set_if_unset(&sec->sasl_kerberos_keytab, val);
  else if (kind == 'k' && !strcmp(key, "principal"))
    set_if_unset(&sec->sasl_kerberos_principal, val);
  else if (kind == 'k' && !strcmp(key, "useKeyTab"))
    *use_keytab = !strcmp(val, "true");
  else if (kind == 'p' && !strcmp(key, "username"))
    set_if_unset(&sec->sasl_username, val);
  else if (kind == 'p' && !strcmp(key, "password"))
    set_if_unset(&sec->sasl_password, val);
}

static char module_kind(const char *cls) {
  const char *dot = strrchr(cls, '.');
  const char *name = dot ? dot + 1 : cls;
  if (!strcmp(name, "Krb5LoginModule"))
    return 'k';
  if (!strcmp(name, "PlainLoginModule") || !strcmp(name, "ScramLoginModule"))
    return 'p';
  return 0;
}

int dc_client_props_jaas(dc_client_props_t *props, const char *jaas,
                         char *why, size_t why_size) {
  const char *p = jaas;
  why[0] = '\0';
  words_t ws = {dc_arena_alloc(&props->arena, 2 * strlen(jaas) + 2), 0};
  if (!ws.buf) {
    dc_seterr(why, why_size, "out of memory");
    return -1;
  }
  char *cls = next_word(&ws, &p, why, why_size);
  char *flag = cls ? next_word(&ws, &p, why, why_size) : NULL;
  char kind = cls ? module_kind(cls) : 0;
  if (!cls || !flag) {
    if (!why[0])
      dc_seterr(why, why_size, "sasl.jaas.config: expected 'LoginModule "
                "required KEY=VALUE ...;'");
    return -1;
  }
  if (!kind) {
    dc_seterr(why, why_size, "sasl.jaas.config: login module %.200s is not "
              "read here (Krb5LoginModule, PlainLoginModule and "
              "ScramLoginModule are; for OAUTHBEARER use "
              "sasl.oauthbearer.token.endpoint.url)", cls);
    return -1;
  }
  const char *kt = props->sec.sasl_kerberos_keytab;
  bool use_keytab = false;
  char *w;
  while ((w = next_word(&ws, &p, why, why_size))) {
    char *eq = strchr(w, '=');
    char *val = eq && !eq[1] ? next_word(&ws, &p, why, why_size) : NULL;
    if (!eq || eq == w || (!eq[1] && !val)) {
      if (!why[0])
        dc_seterr(why, why_size, "sasl.jaas.config: expected KEY=VALUE, "
                  "not '%.100s'", w);
      return -1;
    }
    *eq = '\0';
    take_option(&props->sec, kind, w, val ? val : eq + 1, &use_keytab);
  }
  if (why[0])
    return -1;
  if (*p != ';' || p[1 + strspn(p + 1, " \t\r\n")]) {
    dc_seterr(why, why_size, "sasl.jaas.config: expected one login module "
              "ending in ';'");
    return -1;
  }
  /* Krb5LoginModule reads keyTab only with useKeyTab=true. */
  if (kind == 'k' && !use_keytab)
    props->sec.sasl_kerberos_keytab = kt;
  return 0;
}
