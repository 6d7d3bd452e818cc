/* SPDX-License-Identifier: BSD-2-Clause */
/* ACL file parser and evaluator (format and rules in acl.h). */
#include "broker/auth/acl.h"
#include "codec/proto.h"
#include "common/entity.h"
#include "common/text.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ACL_FILE_MAX (16 << 20) /* a sanity bound, not a design limit */
#define ANONYMOUS "User:ANONYMOUS"

enum { OP_ALL = DC_ACL_DESCRIBE | DC_ACL_ALTER };
enum { K_CLIENT = 1, K_USER = 2, K_BROKER = 4, K_ANY = 7 };

typedef struct rule {
  bool allow;
  char *principal; /* "User:NAME", or NULL = User:* (owned) */
  int ops;         /* DC_ACL_* bits */
  int kinds;       /* K_* bits */
  char *name;      /* NULL = every name of the kind (owned) */
  bool prefix;     /* name is a prefix */
  int line;
} rule_t;

struct dc_acl {
  rule_t *rules; /* owned array of n */
  size_t n;
};

void dc_acl_destroy(dc_acl_t *acl) {
  if (!acl)
    return;
  for (size_t i = 0; i < acl->n; i++) {
    free(acl->rules[i].principal);
    free(acl->rules[i].name);
  }
  free(acl->rules);
  free(acl);
}

size_t dc_acl_rule_count(const dc_acl_t *acl) { return acl ? acl->n : 0; }

/* ---- parsing ------------------------------------------------------------ */

typedef struct parser {
  const char *origin;
  int line;
  char *errstr;
  size_t errstr_size;
} parser_t;

static int perr(parser_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int perr(parser_t *p, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(p->errstr, p->errstr_size, "%s:%d: %s", p->origin, p->line, msg);
  return -1;
}

#define MAX_TOKENS 5 /* one more than a rule has, to notice extras */

/* Splits one line (NUL-terminated, modified in place) into tokens:
 * whitespace-separated, "quoted" with \" and \\, '#' at a token's start
 * ends the line. Returns the count, or -1 on an unterminated quote. */
static int tokenize(parser_t *p, char *s, char *tok[MAX_TOKENS]) {
  int n = 0;
  for (;;) {
    while (*s && isspace((unsigned char)*s))
      s++;
    if (!*s || *s == '#')
      return n;
    if (n == MAX_TOKENS)
      return n; /* the caller reports the extra token */
    char *out = s;
    tok[n++] = out;
    if (*s == '"') {
      s++;
      for (;;) {
        if (!*s)
          return perr(p, "unterminated quote");
        if (*s == '"') {
          s++;
          break;
        }
        if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
          s++;
        *out++ = *s++;
      }
      if (*s && !isspace((unsigned char)*s))
        return perr(p, "text right after a closing quote");
    } else {
      while (*s && !isspace((unsigned char)*s))
        *out++ = *s++;
    }
    bool end = !*s;
    *out = '\0';
    if (end)
      return n;
    s++;
  }
}

static int parse_resource(parser_t *p, const char *t, rule_t *r) {
  if (!strcmp(t, "*")) {
    r->kinds = K_ANY;
    return 0;
  }
  if (!strcasecmp(t, "broker")) {
    r->kinds = K_BROKER;
    return 0;
  }
  const char *colon = strchr(t, ':');
  size_t kl = colon ? (size_t)(colon - t) : 0;
  if (colon && kl == 6 && !strncasecmp(t, "client", 6))
    r->kinds = K_CLIENT;
  else if (colon && kl == 4 && !strncasecmp(t, "user", 4))
    r->kinds = K_USER;
  else
    return perr(p,
                "unknown resource '%s' (use client:NAME, client:PREFIX*, "
                "client:<default>, client:*, user:NAME, user:PREFIX*, "
                "user:*, broker or *)",
                t);
  const char *name = colon + 1;
  size_t nl = strlen(name);
  if (nl == 0)
    return perr(p, "resource '%s' has an empty name (use %.*s:* for all)", t,
                (int)kl, t);
  if (!strcmp(name, "*"))
    return 0; /* every name */
  const char *star = strchr(name, '*');
  if (star && star != name + nl - 1)
    return perr(p, "'*' may only end a resource name (a prefix): '%s'", t);
  if (r->kinds == K_USER && dc_entity_is_default(name))
    return perr(p, "there is no default user entity; 'user:<default>' "
                   "matches nothing (use client:<default>)");
  r->prefix = star != NULL;
  if (r->prefix && nl - 1 == strlen(DC_ENTITY_DEFAULT) &&
      !strncmp(name, DC_ENTITY_DEFAULT, nl - 1))
    return perr(p, "'%s' is not a prefix pattern", t);
  r->name = strndup(name, r->prefix ? nl - 1 : nl);
  if (!r->name)
    return perr(p, "out of memory");
  if (strlen(r->name) > DC_ENTITY_PART_MAX)
    return perr(p, "resource name longer than %d bytes", DC_ENTITY_PART_MAX);
  return 0;
}

/* Parses one rule from tokens into r (r's strings owned by r afterwards,
 * also on error). */
static int parse_rule(parser_t *p, char **tok, int n, rule_t *r) {
  if (n != 4)
    return perr(p,
                n > 4 ? "too many words; a rule is: allow|deny PRINCIPAL "
                        "OPERATION RESOURCE (quote names with spaces)"
                      : "incomplete rule; a rule is: allow|deny PRINCIPAL "
                        "OPERATION RESOURCE");
  if (!strcasecmp(tok[0], "allow"))
    r->allow = true;
  else if (strcasecmp(tok[0], "deny"))
    return perr(p, "a rule starts with allow or deny, not '%s'", tok[0]);
  if (strncmp(tok[1], "User:", 5) || !tok[1][5])
    return perr(p, "principal must be User:NAME or User:*, not '%s'",
                tok[1]);
  if (strcmp(tok[1], "User:*")) {
    r->principal = strdup(tok[1]);
    if (!r->principal)
      return perr(p, "out of memory");
  }
  if (!strcasecmp(tok[2], "describe"))
    r->ops = DC_ACL_DESCRIBE;
  else if (!strcasecmp(tok[2], "alter"))
    r->ops = DC_ACL_ALTER;
  else if (!strcasecmp(tok[2], "all"))
    r->ops = OP_ALL;
  else
    return perr(p, "unknown operation '%s' (use describe, alter or all)",
                tok[2]);
  return parse_resource(p, tok[3], r);
}

dc_acl_t *dc_acl_parse(const char *text, size_t len, const char *origin,
                       char *errstr, size_t errstr_size) {
  parser_t p = {origin ? origin : "acl", 0, errstr, errstr_size};
  if (errstr_size)
    errstr[0] = '\0';
  dc_acl_t *acl = calloc(1, sizeof(*acl));
  char *line = malloc(len + 1); /* scratch: no line is longer than text */
  size_t cap = 0;
  if (!acl || !line)
    goto oom;
  for (size_t pos = 0; pos < len;) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
    memcpy(line, text + pos, ll);
    line[ll] = '\0';
    pos += ll + 1;
    p.line++;
    if (strlen(line) != ll) {
      perr(&p, "NUL byte in the ACL file");
      goto fail;
    }
    char *tok[MAX_TOKENS];
    int n = tokenize(&p, line, tok);
    if (n < 0)
      goto fail;
    if (n == 0)
      continue;
    if (acl->n == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      rule_t *nr = realloc(acl->rules, ncap * sizeof(*nr));
      if (!nr)
        goto oom;
      acl->rules = nr;
      cap = ncap;
    }
    rule_t *r = &acl->rules[acl->n++];
    memset(r, 0, sizeof(*r));
    r->line = p.line;
    if (parse_rule(&p, tok, n, r))
      goto fail;
  }
  free(line);
  return acl;
oom:
  perr(&p, "out of memory");
fail:
  free(line);
  dc_acl_destroy(acl);
  return NULL;
}

dc_acl_t *dc_acl_load(const char *path, char *errstr, size_t errstr_size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot open ACL file %s: %s", path,
             strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (len == cap) {
      if (cap >= ACL_FILE_MAX) {
        dc_seterr(errstr, errstr_size, "ACL file %s is larger than %d bytes",
                 path, ACL_FILE_MAX);
        free(buf);
        fclose(f);
        return NULL;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0)
      break;
  }
  if (!buf || ferror(f)) {
    dc_seterr(errstr, errstr_size, "cannot read ACL file %s: %s", path,
             buf ? strerror(errno) : "out of memory");
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  dc_acl_t *acl = dc_acl_parse(buf, len, path, errstr, errstr_size);
  free(buf);
  return acl;
}

/* ---- evaluation --------------------------------------------------------- */

bool dc_acl_is_super_user(const char *list, const char *principal) {
  if (!list || !principal)
    return false;
  size_t plen = strlen(principal);
  const char *p = list;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == ';' || *p == ',')
      p++;
    if (!*p)
      break;
    /* The item ends at ';' or at a ',' that starts another principal. */
    const char *end = p;
    while (*end && *end != ';') {
      if (*end == ',') {
        const char *q = end + 1;
        while (*q == ' ' || *q == '\t')
          q++;
        if (!strncmp(q, "User:", 5))
          break;
      }
      end++;
    }
    const char *e = end;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    if ((size_t)(e - p) == plen && !memcmp(p, principal, plen))
      return true;
    p = end;
  }
  return false;
}

static const char *op_name(int op) {
  return op == DC_ACL_ALTER ? "alter" : "describe";
}

static bool name_matches(const rule_t *r, const char *name) {
  if (!r->name)
    return true;
  if (!r->prefix)
    return !strcmp(r->name, name);
  /* Prefixes never reach <default>: it affects every client. */
  return !dc_entity_is_default(name) &&
         !strncmp(name, r->name, strlen(r->name));
}

/* Outcome of one (kind, name) check. */
enum { DENIED_BY_RULE = -1, NOT_ALLOWED = 0, ALLOWED = 1 };

static int check_one(const dc_acl_t *acl, const char *principal,
                     const char *user, int op, int kind, const char *name,
                     const char *client_id, char *why, size_t why_size) {
  const rule_t *allow = NULL;
  for (size_t i = 0; i < acl->n; i++) {
    const rule_t *r = &acl->rules[i];
    if (r->principal && strcmp(r->principal, principal))
      continue;
    if (!(r->kinds & kind) || !name_matches(r, name))
      continue;
    if (!r->allow && (r->ops & op)) {
      dc_seterr(why, why_size, "denied by ACL rule at line %d", r->line);
      return DENIED_BY_RULE;
    }
    /* An allow of alter implies describe. */
    if (r->allow && !allow &&
        ((r->ops & op) || (op == DC_ACL_DESCRIBE && (r->ops & DC_ACL_ALTER))))
      allow = r;
  }
  if (allow) {
    dc_seterr(why, why_size, "allowed by ACL rule at line %d", allow->line);
    return ALLOWED;
  }
  if (op == DC_ACL_DESCRIBE && kind == K_CLIENT && client_id &&
      !strcmp(name, client_id)) {
    dc_seterr(why, why_size, "its own client-id (default rule)");
    return ALLOWED;
  }
  if (op == DC_ACL_DESCRIBE && kind == K_USER && !strcmp(name, user)) {
    dc_seterr(why, why_size, "its own user (default rule)");
    return ALLOWED;
  }
  dc_seterr(why, why_size, "no ACL rule allows it");
  return NOT_ALLOWED;
}

/* The ACL resources a config resource needs, and how to name it. */
typedef struct needs {
  struct {
    int kind;
    const char *name;
  } need[2];
  int n;
  char what[700];
  dc_user_entity_t ue; /* a USER resource's parts, which need[] names */
} needs_t;

/* The ACL resources op on resource_type resource_name needs: true, or
 * false with why (the denial) set. */
static bool resource_needs(needs_t *nd, int8_t resource_type,
                           const char *resource_name, int op,
                           const char *principal, char *why,
                           size_t why_size) {
  char perr_msg[200];
  nd->n = 0;
  if (resource_type == DC_RES_CLIENT) {
    nd->need[nd->n++].kind = K_CLIENT;
    nd->need[0].name = resource_name;
    snprintf(nd->what, sizeof(nd->what), "client '%s'", resource_name);
  } else if (resource_type == DC_RES_BROKER) {
    nd->need[nd->n++].kind = K_BROKER;
    nd->need[0].name = resource_name;
    snprintf(nd->what, sizeof(nd->what), "broker '%s'", resource_name);
  } else if (resource_type == DC_RES_USER &&
             dc_entity_user_parse(resource_name, &nd->ue, perr_msg,
                                  sizeof(perr_msg))) {
    dc_seterr(why, why_size,
             "principal %s is not authorized to %s user entity '%s' (bad "
             "name: %s)",
             principal, op_name(op), resource_name, perr_msg);
    return false;
  } else if (resource_type == DC_RES_USER) {
    nd->need[nd->n].kind = K_USER;
    nd->need[nd->n++].name = nd->ue.user;
    if (*nd->ue.client) {
      snprintf(nd->what, sizeof(nd->what), "user '%s' with client-id '%s'",
               nd->ue.user, nd->ue.client);
      if (op == DC_ACL_DESCRIBE) {
        nd->need[nd->n].kind = K_CLIENT;
        nd->need[nd->n++].name = nd->ue.client;
      }
    } else {
      snprintf(nd->what, sizeof(nd->what), "user '%s'", nd->ue.user);
    }
  } else {
    dc_seterr(why, why_size,
             "principal %s is not authorized to %s resource type %d '%s' "
             "(not a resource dynconfd authorizes)",
             principal, op_name(op), resource_type, resource_name);
    return false;
  }
  return true;
}

/* A fixed reason, copied: every request of a server without ACLs passes
 * here, and a format would cost more than the check. */
static void say(char *why, size_t size, const char *s) {
  size_t n = strlen(s);
  if (n >= size)
    n = size - 1;
  memcpy(why, s, n);
  why[n] = '\0';
}

bool dc_acl_authorize(const dc_acl_t *acl, const char *super_users,
                      const char *principal, int op, int8_t resource_type,
                      const char *resource_name, const char *client_id,
                      char *why, size_t why_size) {
  char dummy[1];
  if (!why || !why_size) {
    why = dummy;
    why_size = sizeof(dummy);
  }
  if (!principal)
    principal = ANONYMOUS;
  if (!resource_name)
    resource_name = "";
  if (!acl) {
    say(why, why_size, "no authorizer");
    return true;
  }
  if (dc_acl_is_super_user(super_users, principal)) {
    say(why, why_size, "super user");
    return true;
  }
  /* The caller's user: the principal without its "User:" type. */
  const char *user =
      !strncmp(principal, "User:", 5) ? principal + 5 : principal;

  needs_t nd;
  if (!resource_needs(&nd, resource_type, resource_name, op, principal, why,
                      why_size))
    return false;

  char reason[128];
  for (int i = 0; i < nd.n; i++) {
    int rc = check_one(acl, principal, user, op, nd.need[i].kind,
                       nd.need[i].name, client_id, reason, sizeof(reason));
    if (rc == ALLOWED)
      continue;
    if (i > 0) /* name the part that failed */
      dc_seterr(why, why_size,
               "principal %s is not authorized to %s %s (%s on client '%s')",
               principal, op_name(op), nd.what, reason, nd.need[i].name);
    else
      dc_seterr(why, why_size, "principal %s is not authorized to %s %s (%s)",
               principal, op_name(op), nd.what, reason);
    return false;
  }
  dc_seterr(why, why_size, "%s", reason);
  return true;
}
