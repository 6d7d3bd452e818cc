/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kerberos principal-to-local rules (see krb_rules.h): a hand-written
 * parser for Kafka's rule grammar, POSIX regcomp/regexec for the patterns,
 * and fixed-size buffers of DC_KRB_PRINCIPAL_MAX bytes for every name made
 * on the way, so the work per rule is bounded.
 */
#include "broker/auth/krb_rules.h"
#include "common/text.h"

#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEPS ", \t\r\n\v\f" /* between rules */
#define DIGITS "0123456789"
#define GNU_ESCAPES "<>`'" /* glibc anchors after '\\', literal in Java */
#define MAX_GROUP 9 /* the highest $n a replacement may use */
#define QBUF 72     /* room for a quoted excerpt in a sentence */
#define QBUF_LONG 200
#define STR_(x) #x
#define STR(x) STR_(x)
#define TOO_LONG "longer than " STR(DC_KRB_PRINCIPAL_MAX) " bytes"

typedef enum { FOLD_NONE, FOLD_LOWER, FOLD_UPPER } fold_t;

typedef struct rule {
  char *src;      /* the rule's own text, for messages */
  int ncomp;      /* 0 = DEFAULT, else 1 or 2 */
  char *format;   /* checked: every '$' is followed by 0..ncomp */
  bool has_match; /* match is compiled */
  regex_t match;  /* "^(" pattern ")$": Java's matches() */
  bool has_from;  /* from and to are set */
  regex_t from;
  char *to; /* checked: quotes and group references are sound */
  bool global;
  fold_t fold;
} rule_t;

struct dc_krb_rules {
  char *text;
  size_t n;
  rule_t rule[DC_KRB_RULES_MAX];
};

/* ---- text helpers ------------------------------------------------------ */

/* Copies n bytes of s for a sentence: control bytes become spaces, quotes
 * and non-ASCII bytes '?'; "..." marks a cut or, with more, text after. */
static const char *quote(char *dst, size_t cap, const char *s, size_t n,
                         bool more) {
  size_t o = 0, max = cap - 4;
  for (size_t i = 0; i < n && o < max; i++) {
    unsigned char c = (unsigned char)s[i];
    dst[o++] = c < 0x20 || c == 0x7f ? ' '
               : c == '\'' || c > 0x7f ? '?'
                                       : (char)c;
  }
  if (n > max || more) {
    memcpy(dst + o, "...", 3);
    o += 3;
  }
  dst[o] = '\0';
  return dst;
}

#define QUOTE(buf, s) quote(buf, sizeof(buf), s, strlen(s), false)

/* The value of the leading digits of s (capped at 1000), and their
 * count. */
static size_t digits(const char *s, unsigned *value) {
  size_t n = strspn(s, DIGITS);
  unsigned v = 0;
  for (size_t i = 0; i < n; i++)
    v = v < 1000 ? v * 10 + (unsigned)(s[i] - '0') : v;
  *value = v;
  return n;
}

/* A Java replacement's group reference after a '$': the first digit, then
 * more while the number stays within nsub. Returns the digits used (0 if
 * none); *g may exceed nsub only when a single digit was read. */
static size_t group_ref(const char *s, size_t nsub, size_t *g) {
  *g = 0;
  if (*s < '0' || *s > '9')
    return 0;
  size_t n = 1;
  *g = (size_t)(*s - '0');
  while (*g <= nsub && s[n] >= '0' && s[n] <= '9' &&
         *g * 10 + (size_t)(s[n] - '0') <= nsub)
    *g = *g * 10 + (size_t)(s[n++] - '0');
  return n;
}

/* ---- parsing rules ----------------------------------------------------- */

typedef struct parser {
  const char *p;     /* the next byte */
  const char *start; /* the current rule's first byte */
  char *errstr;
  size_t errstr_size;
} parser_t;

/* Reports a bad rule, quoting it from its start to end (exclusive).
 * Returns -1. */
__attribute__((format(printf, 3, 4))) static int
fail(parser_t *ps, const char *end, const char *fmt, ...) {
  char why[256], ex[QBUF];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  quote(ex, sizeof(ex), ps->start, (size_t)(end - ps->start), *end != '\0');
  dc_seterr(ps->errstr, ps->errstr_size,
            "invalid Kerberos principal-to-local rule at '%s': %s", ex, why);
  return -1;
}

/* Just past the byte at s, unless s is the end. */
static const char *past(const char *s) { return s + (*s != '\0'); }

/* A copy of the text from ps->p up to stop, which must come before any ','
 * (a ',' always ends a rule) and the end; ps->p moves past stop. NULL
 * after fail(). */
static char *part(parser_t *ps, char stop, const char *what) {
  const char *s = ps->p;
  size_t n = strcspn(s, (const char[]){stop, ',', '\0'});
  if (s[n] != stop) {
    fail(ps, past(s + n), "missing '%c' after the %s%s", stop, what,
         s[n] == ',' ? " (a ',' always ends a rule)" : "");
    return NULL;
  }
  char *d = strndup(s, n);
  if (!d)
    fail(ps, past(s + n), "out of memory");
  ps->p = s + n + 1;
  return d;
}

/* Checks that every '$' in format (copied from orig) names one of the
 * ncomp + 1 parameters: $0 the realm, $1 the primary, $2 the instance. */
static int check_format(parser_t *ps, const char *format, const char *orig,
                        int ncomp) {
  for (const char *f = strchr(format, '$'); f; f = strchr(f + 1, '$')) {
    unsigned v;
    size_t n = digits(f + 1, &v);
    const char *at = orig + (f - format) + 1 + n;
    if (n == 0)
      return fail(ps, past(at), "a '$' in the format must be followed by "
                                "a component number ($0..$%d)", ncomp);
    if (v > (unsigned)ncomp)
      return fail(ps, at, "$%u is beyond the %d-component name ($0..$%d)",
                  v, ncomp, ncomp);
  }
  return 0;
}

/* Moves *i from a '[' to its ']' (or the end, left to regcomp), refusing
 * what Java reads differently inside: '\' (an escape), '[' (a nested
 * class) and "&&" (an intersection); POSIX takes them literally. */
static int skip_bracket(parser_t *ps, const char *re, const char *orig,
                        size_t *i) {
  size_t j = *i + 1;
  j += re[j] == '^';
  j += re[j] == ']';
  for (; re[j] && re[j] != ']'; j++) {
    char c = re[j], d = re[j + 1];
    bool posix_class = c == '[' && d && strchr(":.=", d);
    if (c == '\\' || (c == '[' && !posix_class) || (c == '&' && d == '&'))
      return fail(ps, orig + j + 1 + (c == '&'), "'%.*s' inside [...] is "
                  "literal in POSIX but not in Java", c == '&' ? 2 : 1,
                  re + j);
    if (posix_class) {
      const char *end = strstr(re + j + 2, (const char[]){d, ']', 0});
      j = end ? (size_t)(end - re) + 1 : strlen(re) - 1;
    }
  }
  *i = j - (re[j] == '\0');
  return 0;
}

static bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z');
}

/* A quantifier that Java reads as lazy or possessive (*? *+ ...) or
 * refuses (** ?{ ...), where glibc would take it as another repetition. */
static bool stacked_quantifier(char c, char d) {
  return d && ((strchr("*+?", c) && strchr("*+?{", d)) ||
               (c == '}' && strchr("?+", d)));
}

/* Refuses Java regular expression syntax that POSIX ERE would read
 * differently, or that glibc would take as an extension (see
 * krb_rules.h); re was copied from orig. */
static int check_syntax(parser_t *ps, const char *re, const char *orig) {
  int depth = 0; /* open '(' */
  for (size_t i = 0; re[i]; i++) {
    char c = re[i], d = re[i + 1];
    const char *past_d = orig + i + 1 + (d != '\0');
    if (c == '[' && skip_bracket(ps, re, orig, &i))
      return -1;
    if (c == '\\' && d && (strchr(GNU_ESCAPES, d) || is_alnum(d)))
      return fail(ps, past_d, "'\\%c' is not supported (the patterns are "
                              "POSIX extended, not Java)", d);
    if (c == '(' && d == '?')
      return fail(ps, past_d, "'(?' is Java syntax (the patterns are POSIX "
                              "extended)");
    if (c == ')' && depth == 0)
      return fail(ps, orig + i + 1, "an unmatched ')' (literal in POSIX, an "
                                    "error in Java)");
    if (stacked_quantifier(c, d))
      return fail(ps, past_d, "'%c%c' is not supported (Java reads a lazy "
                              "or possessive quantifier, or refuses it)", c,
                  d);
    depth += (c == '(') - (c == ')');
    i += c == '\\' && d;
  }
  return 0;
}

/* Compiles re (copied from orig, which it ends before end) with regcomp's
 * flags, after check_syntax; regcomp's errors are reported. */
static int compile(parser_t *ps, regex_t *out, const char *re,
                   const char *orig, const char *end, int flags) {
  if (check_syntax(ps, re, orig))
    return -1;
  int rc = regcomp(out, re, REG_EXTENDED | flags);
  if (rc == 0)
    return 0;
  char why[128];
  regerror(rc, out, why, sizeof(why));
  return fail(ps, end, "bad regular expression: %s", why);
}

/* The optional "(match)". Checked alone first, so that errors are about
 * the pattern as written, then anchored at both ends. */
static int parse_match(parser_t *ps, rule_t *ru) {
  if (*ps->p != '(')
    return 0;
  const char *orig = ++ps->p;
  char *m = part(ps, ')', "match pattern");
  if (!m)
    return -1;
  size_t n = strlen(m);
  char *anchored = malloc(n + 5);
  int rc = anchored ? compile(ps, &ru->match, m, orig, ps->p, REG_NOSUB)
                    : fail(ps, ps->p, "out of memory");
  if (rc == 0) {
    regfree(&ru->match);
    snprintf(anchored, n + 5, "^(%s)$", m);
    rc = compile(ps, &ru->match, anchored, orig, ps->p, REG_NOSUB);
    ru->has_match = rc == 0;
  }
  free(anchored);
  free(m);
  return rc;
}

/* Checks the replacement (copied from orig) as Java reads it: '\' quotes
 * the next byte, '$' starts a group number that from must have. */
static int check_to(parser_t *ps, const char *to, const char *orig,
                    size_t nsub) {
  for (size_t i = 0; to[i]; i++) {
    size_t g = 0, n;
    if (to[i] == '\\' && !to[i + 1])
      return fail(ps, orig + i + 1, "a '\\' ends the replacement");
    if (to[i] == '\\') {
      i++;
      continue;
    }
    if (to[i] != '$')
      continue;
    if ((n = group_ref(to + i + 1, nsub, &g)) == 0)
      return fail(ps, past(orig + i + 1), "a '$' in the replacement must be "
                                          "followed by a group number "
                                          "(write \\$ for a '$')");
    if (g > nsub)
      return fail(ps, orig + i + 1 + n, "there is no group $%zu (the "
                  "pattern has %zu)", g, nsub);
    if (g > MAX_GROUP)
      return fail(ps, orig + i + 1 + n, "group references above $%d are "
                  "not supported", MAX_GROUP);
    i += n;
  }
  return 0;
}

/* The optional "s/from/to/" and "g". */
static int parse_subst(parser_t *ps, rule_t *ru) {
  if (strncmp(ps->p, "s/", 2))
    return 0;
  ps->p += 2;
  const char *from_orig = ps->p, *to_orig;
  char *from = part(ps, '/', "pattern of s/from/to/");
  if (!from)
    return -1;
  to_orig = ps->p;
  ru->to = part(ps, '/', "replacement of s/from/to/");
  int rc = ru->to ? compile(ps, &ru->from, from, from_orig, ps->p, 0) : -1;
  free(from);
  if (rc)
    return -1;
  ru->has_from = true;
  if (check_to(ps, ru->to, to_orig, ru->from.re_nsub))
    return -1;
  ru->global = *ps->p == 'g';
  ps->p += ru->global;
  return 0;
}

/* "RULE:[n:format]" past "RULE:[". */
static int parse_head(parser_t *ps, rule_t *ru) {
  unsigned n;
  const char *s = ps->p;
  size_t nd = digits(s, &n);
  if (nd == 0)
    return fail(ps, past(s), "expected the number of components (1 or 2)");
  if (s[nd] != ':')
    return fail(ps, past(s + nd), "expected ':' after the number of "
                                  "components");
  if (n != 1 && n != 2)
    return fail(ps, s + nd, "the number of components must be 1 or 2");
  ru->ncomp = (int)n;
  ps->p = s + nd + 1;
  const char *orig = ps->p;
  ru->format = part(ps, ']', "format");
  return ru->format ? check_format(ps, ru->format, orig, ru->ncomp) : -1;
}

/* The optional "/L" or "/U"; Kafka lets the '/' be left out. */
static void parse_fold(parser_t *ps, rule_t *ru) {
  ps->p += *ps->p == '/';
  if (*ps->p == 'L' || *ps->p == 'U')
    ru->fold = *ps->p++ == 'L' ? FOLD_LOWER : FOLD_UPPER;
}

static int parse_rule(parser_t *ps, rule_t *ru) {
  ps->start = ps->p;
  if (!strncmp(ps->p, "DEFAULT", 7)) {
    ps->p += 7;
  } else if (!strncmp(ps->p, "RULE:[", 6)) {
    ps->p += 6;
    if (parse_head(ps, ru) || parse_match(ps, ru) || parse_subst(ps, ru))
      return -1;
    parse_fold(ps, ru);
  } else {
    return fail(ps, ps->p + strcspn(ps->p, SEPS),
                "expected DEFAULT or RULE:[n:format]...");
  }
  if (*ps->p && !strchr(SEPS, *ps->p))
    return fail(ps, past(ps->p), "unexpected text after the rule");
  ru->src = strndup(ps->start, (size_t)(ps->p - ps->start));
  return ru->src ? 0 : fail(ps, ps->p, "out of memory");
}

static int parse_list(dc_krb_rules_t *r, parser_t *ps) {
  for (;;) {
    ps->p += strspn(ps->p, SEPS);
    if (!*ps->p)
      return 0;
    if (r->n == DC_KRB_RULES_MAX) {
      dc_seterr(ps->errstr, ps->errstr_size, "invalid Kerberos "
                "principal-to-local rules: more than %d rules",
                DC_KRB_RULES_MAX);
      return -1;
    }
    if (parse_rule(ps, &r->rule[r->n++]))
      return -1;
  }
}

dc_krb_rules_t *dc_krb_rules_parse(const char *text, char *errstr,
                                   size_t errstr_size) {
  if (text && strnlen(text, DC_KRB_RULES_MAX_TEXT + 1) >
                  DC_KRB_RULES_MAX_TEXT) {
    dc_seterr(errstr, errstr_size, "invalid Kerberos principal-to-local "
              "rules: longer than %d bytes", DC_KRB_RULES_MAX_TEXT);
    return NULL;
  }
  if (!text || !text[strspn(text, SEPS)])
    text = "DEFAULT";
  dc_krb_rules_t *r = calloc(1, sizeof(*r));
  parser_t ps = {.p = text, .start = text, .errstr = errstr,
                 .errstr_size = errstr_size};
  if (!r || !(r->text = strdup(text))) {
    dc_seterr(errstr, errstr_size, "out of memory");
  } else if (parse_list(r, &ps) == 0) {
    return r;
  }
  dc_krb_rules_destroy(r);
  return NULL;
}

void dc_krb_rules_destroy(dc_krb_rules_t *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n; i++) {
    rule_t *ru = &r->rule[i];
    if (ru->has_match)
      regfree(&ru->match);
    if (ru->has_from)
      regfree(&ru->from);
    free(ru->src);
    free(ru->format);
    free(ru->to);
  }
  free(r->text);
  free(r);
}

const char *dc_krb_rules_text(const dc_krb_rules_t *r) {
  return r ? r->text : "";
}

/* ---- applying rules ---------------------------------------------------- */

/* A name being made; over once it would pass DC_KRB_PRINCIPAL_MAX. */
typedef struct sbuf {
  char s[DC_KRB_PRINCIPAL_MAX + 1];
  size_t len;
  bool over;
} sbuf_t;

static void sb_reset(sbuf_t *b) {
  b->s[0] = '\0';
  b->len = 0;
  b->over = false;
}

static void sb_add(sbuf_t *b, const char *p, size_t n) {
  if (b->over || n > DC_KRB_PRINCIPAL_MAX - b->len) {
    b->over = true;
    return;
  }
  memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = '\0';
}

/* A principal split in place. */
typedef struct kname {
  char buf[DC_KRB_PRINCIPAL_MAX + 1];
  const char *param[3]; /* realm ("" if none), primary, instance */
  int ncomp;            /* 1 or 2 */
  bool has_realm;
} kname_t;

/* Why p (len bytes, or more when len is over the limit) is not
 * primary[/instance][@REALM] with non-empty parts, or NULL. */
static const char *principal_fault(const char *p, size_t len) {
  if (len > DC_KRB_PRINCIPAL_MAX)
    return TOO_LONG;
  if (len == 0)
    return "empty";
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
      return "it holds a control character";
  const char *at = strchr(p, '@'), *slash = strchr(p, '/');
  if (at && strchr(at + 1, '@'))
    return "more than one '@'";
  if (slash && strchr(slash + 1, '/'))
    return "more than one '/'";
  if (at && slash > at)
    return "a '/' in the realm";
  if (p[0] == '/' || p[0] == '@')
    return "an empty primary";
  if (slash && (slash[1] == '@' || slash[1] == '\0'))
    return "an empty instance";
  return at && at[1] == '\0' ? "an empty realm" : NULL;
}

static int split_principal(const char *p, kname_t *k, char *errstr,
                           size_t errstr_size) {
  size_t len = strnlen(p, DC_KRB_PRINCIPAL_MAX + 1);
  const char *why = principal_fault(p, len);
  if (why) {
    char q[QBUF];
    dc_seterr(errstr, errstr_size, "malformed Kerberos principal '%s': %s",
              quote(q, sizeof(q), p, len, false), why);
    return -1;
  }
  memcpy(k->buf, p, len + 1);
  char *at = strchr(k->buf, '@'), *slash = strchr(k->buf, '/');
  k->has_realm = at != NULL;
  k->param[0] = at ? at + 1 : "";
  k->param[1] = k->buf;
  k->param[2] = slash ? slash + 1 : NULL;
  k->ncomp = slash ? 2 : 1;
  if (at)
    *at = '\0';
  if (slash)
    *slash = '\0';
  return 0;
}

/* The format with $0/$1/$2 replaced (checked when parsed). */
static void make_base(const char *format, const kname_t *k, sbuf_t *base) {
  for (const char *f = format; *f; f++) {
    unsigned v;
    if (*f != '$') {
      sb_add(base, f, 1);
      continue;
    }
    f += digits(f + 1, &v);
    sb_add(base, k->param[v], strlen(k->param[v]));
  }
}

/* Appends to with its group references filled from match m of s. */
static void expand_to(const rule_t *ru, const char *s, const regmatch_t *m,
                      sbuf_t *res) {
  for (const char *t = ru->to; *t; t++) {
    size_t g;
    if (*t == '\\') {
      sb_add(res, ++t, 1);
    } else if (*t == '$') {
      t += group_ref(t + 1, ru->from.re_nsub, &g);
      if (m[g].rm_so >= 0) /* Java skips a group that took no part */
        sb_add(res, s + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
    } else {
      sb_add(res, t, 1);
    }
  }
}

/* Java's replaceFirst/replaceAll of from by to in base: after an empty
 * match the next search starts one byte on, so g always ends. Returns
 * regexec's error, or 0. */
static int substitute(const rule_t *ru, const char *base, size_t len,
                      sbuf_t *res) {
  size_t pos = 0;
  while (pos <= len && !res->over) {
    regmatch_t m[MAX_GROUP + 1];
    int rc = regexec(&ru->from, base + pos, MAX_GROUP + 1, m,
                     pos ? REG_NOTBOL : 0);
    if (rc == REG_NOMATCH)
      break;
    if (rc)
      return rc;
    size_t so = pos + (size_t)m[0].rm_so, eo = pos + (size_t)m[0].rm_eo;
    sb_add(res, base + pos, so - pos);
    expand_to(ru, base + pos, m, res);
    pos = eo;
    if (!ru->global)
      break;
    if (so == eo) {
      sb_add(res, base + eo, eo < len);
      pos = eo + 1;
    }
  }
  if (pos < len)
    sb_add(res, base + pos, len - pos);
  return 0;
}

/* Checks a rule's result and folds its case. 1, or -1 with errstr. */
static int finish(const rule_t *ru, sbuf_t *res, char *errstr,
                  size_t errstr_size) {
  char q[QBUF_LONG], n[QBUF];
  const char *why = res->over      ? "a name " TOO_LONG
                    : res->len == 0 ? "an empty name"
                                    : NULL;
  if (why) {
    dc_seterr(errstr, errstr_size, "the rule '%s' made %s",
              QUOTE(q, ru->src), why);
    return -1;
  }
  if (strpbrk(res->s, "/@")) {
    dc_seterr(errstr, errstr_size, "the rule '%s' made '%s', which is not "
              "a simple name", QUOTE(q, ru->src), QUOTE(n, res->s));
    return -1;
  }
  for (char *c = res->s; *c; c++) {
    if (ru->fold == FOLD_LOWER && *c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
    if (ru->fold == FOLD_UPPER && *c >= 'a' && *c <= 'z')
      *c = (char)(*c - 'a' + 'A');
  }
  return 1;
}

/* One rule on a name: 1 with the result in res, 0 when it does not apply,
 * -1 with errstr. */
static int apply_rule(const rule_t *ru, const kname_t *k,
                      const char *default_realm, sbuf_t *res, char *errstr,
                      size_t errstr_size) {
  sbuf_t base;
  sb_reset(res);
  if (ru->ncomp == 0) { /* DEFAULT */
    if (strcmp(k->param[0], default_realm ? default_realm : ""))
      return 0;
    sb_add(res, k->param[1], strlen(k->param[1]));
    return finish(ru, res, errstr, errstr_size);
  }
  if (ru->ncomp != k->ncomp)
    return 0;
  sb_reset(&base);
  make_base(ru->format, k, &base);
  if (base.over) {
    res->over = true; /* finish() reports it */
    return finish(ru, res, errstr, errstr_size);
  }
  int rc = ru->has_match ? regexec(&ru->match, base.s, 0, NULL, 0) : 0;
  if (rc == REG_NOMATCH)
    return 0;
  if (rc == 0 && ru->has_from)
    rc = substitute(ru, base.s, base.len, res);
  else if (rc == 0)
    sb_add(res, base.s, base.len);
  if (rc) { /* REG_ESPACE: out of memory */
    char why[128], q[QBUF_LONG];
    regerror(rc, ru->has_from ? &ru->from : &ru->match, why, sizeof(why));
    dc_seterr(errstr, errstr_size, "the rule '%s' failed: %s",
              QUOTE(q, ru->src), why);
    return -1;
  }
  return finish(ru, res, errstr, errstr_size);
}

/* Copies name into out, or says it does not fit. */
static int put_name(const char *name, const char *principal, char *out,
                    size_t out_size, char *errstr, size_t errstr_size) {
  size_t len = strlen(name);
  if (!out || len >= out_size) {
    char q[QBUF];
    dc_seterr(errstr, errstr_size, "the short name of '%s' (%zu bytes) does "
              "not fit in %zu bytes", QUOTE(q, principal), len, out_size);
    return -1;
  }
  memcpy(out, name, len + 1);
  return 0;
}

int dc_krb_rules_apply(const dc_krb_rules_t *r, const char *principal,
                       const char *default_realm, char *out, size_t out_size,
                       char *errstr, size_t errstr_size) {
  kname_t k;
  sbuf_t res;
  if (!r || !principal) {
    dc_seterr(errstr, errstr_size, "no rules or no principal");
    return -1;
  }
  if (split_principal(principal, &k, errstr, errstr_size))
    return -1;
  if (k.ncomp == 1 && !k.has_realm) /* already simple: Kafka keeps it */
    return put_name(k.param[1], principal, out, out_size, errstr,
                    errstr_size);
  for (size_t i = 0; i < r->n; i++) {
    int rc = apply_rule(&r->rule[i], &k, default_realm, &res, errstr,
                        errstr_size);
    if (rc)
      return rc < 0 ? -1
                    : put_name(res.s, principal, out, out_size, errstr,
                               errstr_size);
  }
  char q[QBUF], t[QBUF_LONG];
  dc_seterr(errstr, errstr_size, "no principal-to-local rule applies to "
            "'%s' (rules: %s)", QUOTE(q, principal), QUOTE(t, r->text));
  return -1;
}
