/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kerberos principal-to-local rules: Kafka's
 * sasl.kerberos.principal.to.local.rules (KerberosShortNamer, the same
 * language as Hadoop's auth_to_local). They map an authenticated principal
 * such as alice/host.example.com@EXAMPLE.COM to a short name (alice); the
 * server then uses User:<short name> as the principal.
 *
 * A list holds up to DC_KRB_RULES_MAX rules, separated by commas and/or
 * whitespace (newlines too); a ',' always ends a rule, as Kafka splits the
 * list on commas first. Each rule is
 *   DEFAULT            the primary, when the realm is the default realm
 *   RULE:[n:format](match)s/from/to/g/L
 * where n is 1 (primary@REALM) or 2 (primary/instance@REALM) and only
 * names with that many components are tried; format makes the base name
 * from $0 (realm), $1 (primary) and $2 (instance), other text literal;
 * the optional (match) must match the whole base; the optional s/from/to/
 * replaces the first match of from (every match with g), where to may use
 * $0..$9 for groups and \ to quote the next character (\$ is a '$'); an
 * optional final /L or /U (the '/' may be left out) turns the result to
 * ASCII lower or upper case. The first rule that yields a name wins; a name
 * holding '/' or '@' is an error, as is an empty one.
 *
 * Unlike Kafka, the regular expressions are POSIX extended (regcomp
 * REG_EXTENDED), not Java: matching is leftmost-longest, not
 * leftmost-first, so "a|ab" takes "ab". Syntax that Java and POSIX read
 * differently is refused when the list is parsed rather than left to mean
 * something else: glibc would read \d as a plain 'd', so a '\' before a
 * letter, a digit or one of <>`' is refused (this also rules out
 * back-references and GNU's \w, \s, \b, \<); so are '\', '[' and "&&"
 * inside [...] (POSIX takes them literally), an unmatched ')' (literal in
 * POSIX), lazy, possessive and doubled quantifiers (*?, ++, ** ...) and
 * "(?" groups ((?i), (?:...), lookaround; regcomp refuses them anyway).
 * A ',' cannot appear in a pattern, so neither can {n,m}. The expressions
 * are compiled once, in the locale current at parse time.
 *
 * Other differences from Kafka. Refused when parsed (Kafka fails only when
 * such a rule is used, or never): n other than 1 or 2, a '$' in format
 * that names none of the name's components, a '$' in to that names none
 * of from's groups or one above $9. Refused when applied: an empty
 * result, and a principal with an empty part, a control character, or
 * more than one '/' or '@'. A name with a '/' but no '@' is split as
 * primary/instance without a realm and goes through the rules (Kafka
 * returns it unchanged, '/' and all). Empty list entries (",,") are
 * skipped (Kafka refuses them).
 *
 * Work is bounded by the limits below: a rule makes names of at most
 * DC_KRB_PRINCIPAL_MAX bytes, with at most one regexec per byte of its
 * base name (plus one). The cost of one regexec depends on the pattern:
 * without back-references glibc's is polynomial, but a perverse pattern
 * such as (a?){500}a{500} takes about 0.1 s on a 1024-byte name; the
 * patterns come from the operator, not from the client.
 *
 * Pure and without globals; a parsed list is read-only, so any number of
 * threads may apply it at once.
 */
#ifndef DC_KRB_RULES_H
#define DC_KRB_RULES_H
#include <stddef.h>

typedef struct dc_krb_rules dc_krb_rules_t;

/* Parses a rule list; NULL or "" (or only separators) means "DEFAULT".
 * Rules are separated by commas and/or whitespace (newlines too). NULL
 * with errstr on a bad list, e.g. "invalid Kerberos principal-to-local
 * rule at 'RULE:[x...': expected the number of components (1 or 2)".
 * Caller owns the result. */
dc_krb_rules_t *dc_krb_rules_parse(const char *text, char *errstr,
                                   size_t errstr_size);
void dc_krb_rules_destroy(dc_krb_rules_t *r);

/* Maps principal (primary[/instance][@REALM]) to its short name in out.
 * default_realm is the realm DEFAULT accepts (may be NULL or "": DEFAULT
 * then accepts only principals without a realm). A bare primary (no '/',
 * no '@') is its own short name, with no rule consulted, as in Kafka.
 * Returns 0, or -1 with errstr: no rule applies ("no principal-to-local
 * rule applies to 'bob@OTHER.ORG' (rules: DEFAULT)"), a rule made a name
 * that is not simple ("the rule 'RULE:[2:$1/$2]' made 'a/b', which is not
 * a simple name"), empty or too long, the name does not fit in out_size
 * bytes (it is never truncated), or the principal is malformed. */
int dc_krb_rules_apply(const dc_krb_rules_t *r, const char *principal,
                       const char *default_realm, char *out, size_t out_size,
                       char *errstr, size_t errstr_size);

/* The rule text as parsed ("DEFAULT" for NULL or ""), for messages; owned
 * by r. */
const char *dc_krb_rules_text(const dc_krb_rules_t *r);

/* Limits; each keeps the cost of parsing and applying bounded. */
#define DC_KRB_RULES_MAX_TEXT 65536 /* bytes of rule text */
#define DC_KRB_RULES_MAX 100        /* rules in a list */
#define DC_KRB_PRINCIPAL_MAX 1024   /* bytes of a principal, and of any name
                                       a rule makes on the way */
#endif
