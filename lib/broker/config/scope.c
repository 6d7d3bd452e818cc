/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Principal-scoped configs: the addressing and resolution scheme.
 *
 * Entities (all kept in the configdb and the store as (type, name)):
 *   (9,  "<default>")   every client's defaults                source 8
 *   (9,  "C")           client-id C                            source 7
 *   (10, "U")           user U: every client U runs            source 9
 *   (10, "U/C")         user U's clients with client-id C      source 10
 * U is the principal without its "User:" type ("User:alice" -> "alice",
 * "User:CN=alice,O=x" -> "CN=alice,O=x"); in type-10 names each part is
 * percent-encoded (lib/common/entity.h) and stored in its canonical
 * spelling, so "%61lice" and "alice" are one entity. A type-10 part may
 * not be "<default>": there is no default user (the user entity "U"
 * already covers every client of U).
 *
 * DescribeConfigs resolves each key from the first level that has it:
 *   CLIENT "C", caller U    U/C > U > C > <default>   (sources 10/9/7/8)
 *   CLIENT "<default>"      <default>'s own values    (source 8)
 *   USER "U"                U's own values            (source 9)
 *   USER "U/C"              U/C > U > C > <default>   (sources 10/9/7/8)
 * so an agent describing its own client-id gets exactly what applies to
 * it, and an operator can see any (user, client-id) view without being
 * that user. IncludeSynonyms lists every level that has the key, in that
 * order, the winner first. v0 has no source byte: is_default is true
 * exactly when the value comes from <default> (and the described entity
 * is not <default> itself), as before users existed.
 *
 * Alters change one entity's own set. APPEND/SUBTRACT start from the
 * entity's own value, else from what it inherits: <default> for C and
 * for U (U sits above every client, so the client level is skipped), and
 * U > C > <default> for U/C.
 *
 * heartbeat.interval.ms (HB) < session.timeout.ms (ST) must hold for
 * every resolved (user, client-id) pair, each key resolved on its own;
 * unknown or non-numeric halves are not checked (nothing to compare). An
 * alter of X is checked against the pairs whose resolution reaches X,
 * with X's new set; every other pair is as before, and held before.
 * Finding those pairs must not cost a walk of the configdb: the configdb
 * indexes the entities setting HB or ST (pairindex.h), and an entity
 * setting neither is transparent: a pair resolves through it as if it
 * were absent. Below, "sets" means the key is present; the index's heaps
 * hold the numeric values; D is <default>. Pair (U, C) resolves
 * U/C > U > C > D.
 *   U/C        only (U, C) reaches it.
 *   C          (no user, C), and (U, C) for every user U. If U/C sets
 *              HB or ST, check (U, C) itself (U/C entities of C, by the
 *              index's client chain). Else the pair is
 *              (U.hb ?: C.hb ?: D.hb, U.st ?: C.st ?: D.st): U setting
 *              both does not reach C; setting neither gives (no user, C);
 *              setting HB only gives (U.hb, C.st ?: D.st), which reaches
 *              C only if C sets ST: need U.hb < C.st over the users
 *              setting HB but not ST (HB_ONLY); symmetrically C.hb < U.st
 *              over ST_ONLY users when C sets HB.
 *   U          (U, no client), and (U, C) for every client-id C. U/C
 *              setting HB or ST: check it (U's user chain). Else U
 *              setting both makes the pair (U, no client); setting
 *              neither, it does not reach U; HB only gives
 *              (U.hb, C.st ?: D.st): with C setting ST, need U.hb < C.st
 *              over every client setting ST (ST_ALL), else it is
 *              (U, no client); ST only: C.hb < U.st over HB_ALL clients.
 *   <default>  (no user, no client); (no user, C): C setting both does
 *              not reach D, neither is (no user, no client), HB only is
 *              (C.hb, D.st): need C.hb < D.st over HB_ONLY clients, and
 *              D.hb < C.st over ST_ONLY ones; (U, no client) the same over
 *              users; (U, C) with U/C setting one key only, say HB: it is
 *              (UC.hb, U.st ?: C.st ?: D.st), which reaches D exactly when
 *              U and C leave ST unset: need UC.hb < D.st over HB_ONLY
 *              user+client entities (and ST_ONLY likewise). (U, C) with a
 *              U/C setting both does not reach D; without one: U setting
 *              both does not reach D, neither gives (no user, C), HB only
 *              reaches D only when C leaves ST unset, and is then
 *              (U.hb, D.st) = (U, no client); likewise ST only.
 * Each bound is tested by visiting the heap members whose value would
 * break it (HB >= bound, ST <= bound) and running the full check on the
 * pair each names. That check decides: it fails unless a U/C entity
 * shadows the pair (so C, or U, never reached X there; that pair is
 * checked through the chains) or, for <default>, U or C sets the key;
 * only then does the visit look further down the heap. So an alter costs
 * O(log n) plus the U/C entities of the altered user or client-id, plus
 * the members that would break the bound but are shadowed.
 */
#include "broker/config/scope.h"
#include "codec/proto.h"
#include "broker/config/pairindex.h"
#include "common/schema.h"
#include "common/text.h"

#include <stdio.h>
#include <string.h>

#define HB "heartbeat.interval.ms"
#define ST "session.timeout.ms"

const char *dc_scope_type_name(int8_t type) {
  return type == DC_RES_CLIENT ? "client" : type == DC_RES_USER ? "user" : NULL;
}

int dc_scope_ent_init(dc_scope_ent_t *e, int8_t type, const char *name,
                      char *errstr, size_t errstr_size) {
  memset(e, 0, sizeof(*e));
  e->type = type;
  if (type == DC_RES_CLIENT) {
    if (dc_entity_client_check(name, errstr, errstr_size))
      return -1;
    size_t n = strlen(name);
    memcpy(e->name, name, n + 1);
    memcpy(e->parts.client, name, n + 1);
    return 0;
  }
  char why[200];
  if (dc_entity_user_parse(name, &e->parts, why, sizeof(why)) ||
      dc_entity_user_name(e->parts.user, e->parts.client, e->name,
                          sizeof(e->name), why, sizeof(why))) {
    dc_seterr(errstr, errstr_size, "bad user entity name '%.300s': %s", name,
             why);
    return -1;
  }
  return dc_entity_user_check(e->parts.user, e->parts.client, errstr,
                              errstr_size);
}

static const char *user_of(const char *principal) {
  if (!principal)
    return "ANONYMOUS";
  return !strncmp(principal, "User:", 5) ? principal + 5 : principal;
}

int dc_scope_levels(const dc_configdb_t *db, const dc_scope_ent_t *e,
                    const char *principal,
                    dc_scope_level_t out[DC_SCOPE_MAX_LEVELS]) {
  int n = 0;
  if (e->type == DC_RES_USER && !*e->parts.client) {
    out[n++] = (dc_scope_level_t){dc_configdb_get(db, DC_RES_USER, e->name),
                                  DC_SRC_DYNAMIC_USER, false};
    return n;
  }
  const char *client = e->parts.client;
  const dc_entity_t *def =
      dc_configdb_get(db, DC_RES_CLIENT, DC_ENTITY_DEFAULT);
  if (dc_entity_is_default(client)) {
    out[n++] = (dc_scope_level_t){def, DC_SRC_DYNAMIC_DEFAULT, false};
    return n;
  }
  const char *user =
      e->type == DC_RES_USER ? e->parts.user : user_of(principal);
  char uc[DC_ENTITY_ENC_NAME_SIZE], u[DC_ENTITY_ENC_NAME_SIZE];
  /* A principal whose user cannot be named (empty, over 255 bytes) has
   * no user levels. */
  if (!dc_entity_user_name(user, client, uc, sizeof(uc), NULL, 0) &&
      !dc_entity_user_name(user, NULL, u, sizeof(u), NULL, 0)) {
    out[n++] = (dc_scope_level_t){dc_configdb_get(db, DC_RES_USER, uc),
                                  DC_SRC_DYNAMIC_USER_CLIENT, false};
    out[n++] = (dc_scope_level_t){dc_configdb_get(db, DC_RES_USER, u),
                                  DC_SRC_DYNAMIC_USER, false};
  }
  out[n++] = (dc_scope_level_t){dc_configdb_get(db, DC_RES_CLIENT, client),
                                DC_SRC_DYNAMIC_CLIENT, false};
  out[n++] = (dc_scope_level_t){def, DC_SRC_DYNAMIC_DEFAULT, true};
  return n;
}

const char *dc_scope_inherited(const dc_configdb_t *db,
                               const dc_scope_ent_t *e, const char *key) {
  const dc_entity_t *def =
      dc_configdb_get(db, DC_RES_CLIENT, DC_ENTITY_DEFAULT);
  if (e->type == DC_RES_CLIENT)
    return dc_entity_is_default(e->name) ? NULL : dc_entity_value(def, key);
  if (!*e->parts.client)
    return dc_entity_value(def, key);
  const char *slash = strchr(e->name, '/');
  char u[DC_ENTITY_ENC_NAME_SIZE];
  snprintf(u, sizeof(u), "%.*s", (int)(slash - e->name), e->name);
  const char *v = dc_entity_value(dc_configdb_get(db, DC_RES_USER, u), key);
  if (!v)
    v = dc_entity_value(dc_configdb_get(db, DC_RES_CLIENT, e->parts.client),
                        key);
  return v ? v : dc_entity_value(def, key);
}

/* ---- the heartbeat/session rule ----------------------------------------- */

typedef struct pair {
  const char *hb, *st; /* NULL = not set at that level */
} pair_t;

/* The configdb as it would be with e's new set: what the checks read. */
typedef struct view {
  const dc_configdb_t *db;
  const dc_scope_ent_t *e;
  size_t n;
  const char *const *keys, *const *values;
  char *msg;
  size_t msg_size;
} view_t;

static const char *set_value(const view_t *v, const char *key) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->keys[i], key))
      return v->values[i];
  return NULL;
}

static pair_t get_pair(const view_t *v, int8_t type, const char *name) {
  if (type == v->e->type && !strcmp(name, v->e->name))
    return (pair_t){set_value(v, HB), set_value(v, ST)};
  const dc_entity_t *ent = dc_configdb_get(v->db, type, name);
  return (pair_t){dc_entity_value(ent, HB), dc_entity_value(ent, ST)};
}

static void describe_combo(const char *uenc, const char *client, char *buf,
                           size_t size) {
  dc_user_entity_t ue = {"", ""};
  if (uenc)
    dc_entity_user_parse(uenc, &ue, NULL, 0); /* canonical: cannot fail */
  if (!uenc)
    snprintf(buf, size, "client-id '%.300s'",
             client ? client : DC_ENTITY_DEFAULT);
  else if (!client)
    snprintf(buf, size, "user '%.300s'", ue.user);
  else
    snprintf(buf, size, "user '%.300s' with client-id '%.300s'", ue.user,
             client);
}

/* Checks the pair (user uenc, client-id client) resolves to; either may
 * be NULL (none). True when fine; else false with v->msg set. */
static bool check(const view_t *v, const char *uenc, const char *client) {
  pair_t lv[4];
  int n = 0;
  if (uenc && client) {
    char uc[DC_ENTITY_ENC_NAME_SIZE], cenc[DC_ENTITY_ENC_PART_MAX + 1];
    if (dc_entity_encode_part(client, cenc, sizeof(cenc)) >= 0) {
      snprintf(uc, sizeof(uc), "%s/%s", uenc, cenc);
      lv[n++] = get_pair(v, DC_RES_USER, uc);
    }
  }
  if (uenc)
    lv[n++] = get_pair(v, DC_RES_USER, uenc);
  if (client)
    lv[n++] = get_pair(v, DC_RES_CLIENT, client);
  lv[n++] = get_pair(v, DC_RES_CLIENT, DC_ENTITY_DEFAULT);
  const char *hb = NULL, *st = NULL;
  for (int i = 0; i < n; i++) {
    if (!hb)
      hb = lv[i].hb;
    if (!st)
      st = lv[i].st;
  }
  int64_t h, s;
  if (!hb || !st || !dc_parse_int64(hb, &h) || !dc_parse_int64(st, &s) ||
      h < s)
    return true;
  char combo[700], self[700];
  describe_combo(uenc, client, combo, sizeof(combo));
  const dc_scope_ent_t *e = v->e;
  bool is_self;
  if (e->type == DC_RES_CLIENT) {
    is_self = !uenc && (client ? !strcmp(client, e->name)
                               : dc_entity_is_default(e->name));
    snprintf(self, sizeof(self), "client-id '%.300s'", e->name);
  } else {
    const char *slash = strchr(e->name, '/');
    size_t ulen = slash ? (size_t)(slash - e->name) : strlen(e->name);
    is_self = uenc && strlen(uenc) == ulen &&
              !strncmp(uenc, e->name, ulen) &&
              (client ? !strcmp(client, e->parts.client) : !slash);
    if (slash)
      snprintf(self, sizeof(self), "user '%.300s' with client-id '%.300s'",
               e->parts.user, e->parts.client);
    else
      snprintf(self, sizeof(self), "user '%.300s'", e->parts.user);
  }
  if (is_self)
    snprintf(v->msg, v->msg_size,
             HB " (%s) must be lower than " ST " (%s) for %s", hb, st, combo);
  else
    snprintf(v->msg, v->msg_size,
             "this change to %s would break %s, which resolves " HB
             " (%s) not lower than " ST " (%s)",
             self, combo, hb, st);
  return false;
}

/* ---- the pairs an alter reaches, through the index (top comment) ------- */

/* The other half of the pairs probed: the altered entity's user or
 * client-id, combined with each indexed entity found. */
typedef struct probe {
  const view_t *v;
  const char *uenc, *client; /* NULL: taken from the indexed entity */
} probe_t;

static int probe_cb(void *opaque, const char *uenc, const char *client) {
  const probe_t *p = opaque;
  return !check(p->v, uenc ? uenc : p->uenc, client ? client : p->client);
}

/* X's new value of key, when it is a number. */
static bool new_num(const view_t *v, const char *key, int64_t *out) {
  const char *s = set_value(v, key);
  return s && dc_parse_int64(s, out);
}

/* The members of heap h in group g that would break against bound. */
static bool probe_heap(probe_t *p, dc_pix_group_t g, dc_pix_heap_t h,
                       bool has_bound, int64_t bound) {
  const dc_pairidx_t *ix = dc_configdb_pairidx(p->v->db);
  return !has_bound || !dc_pairidx_visit(ix, g, h, bound, probe_cb, p);
}

/* X is client-id C: the users above it, then C's U/C entities. */
static bool check_client(const view_t *v) {
  probe_t p = {v, NULL, v->e->name};
  int64_t hb, st;
  bool has_hb = new_num(v, HB, &hb), has_st = new_num(v, ST, &st);
  return probe_heap(&p, DC_PIX_USERS, DC_PIX_ST_ONLY, has_hb, hb) &&
         probe_heap(&p, DC_PIX_USERS, DC_PIX_HB_ONLY, has_st, st) &&
         !dc_pairidx_of_client(dc_configdb_pairidx(v->db), v->e->name,
                               probe_cb, &p);
}

/* X is user U: the client-ids below it, then U's U/C entities. */
static bool check_user(const view_t *v) {
  probe_t p = {v, v->e->name, NULL};
  int64_t hb, st;
  bool has_hb = new_num(v, HB, &hb), has_st = new_num(v, ST, &st);
  bool sets_hb = set_value(v, HB), sets_st = set_value(v, ST);
  return probe_heap(&p, DC_PIX_CLIENTS, DC_PIX_ST_ALL, has_hb && !sets_st,
                    hb) &&
         probe_heap(&p, DC_PIX_CLIENTS, DC_PIX_HB_ALL, has_st && !sets_hb,
                    st) &&
         !dc_pairidx_of_user(dc_configdb_pairidx(v->db), v->e->name,
                             probe_cb, &p);
}

/* X is <default>: the one-key members of every group. */
static bool check_default(const view_t *v) {
  probe_t p = {v, NULL, NULL};
  int64_t hb, st;
  bool has_hb = new_num(v, HB, &hb), has_st = new_num(v, ST, &st);
  for (int g = DC_PIX_CLIENTS; g <= DC_PIX_USER_CLIENTS; g++)
    if (!probe_heap(&p, g, DC_PIX_ST_ONLY, has_hb, hb) ||
        !probe_heap(&p, g, DC_PIX_HB_ONLY, has_st, st))
      return false;
  return true;
}

static bool same(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

bool dc_scope_check_pair(const dc_configdb_t *db, const dc_scope_ent_t *e,
                         size_t n, const char *const *keys,
                         const char *const *values, char *msg,
                         size_t msg_size) {
  view_t v = {db, e, n, keys, values, msg, msg_size};
  const dc_entity_t *cur = dc_configdb_get(db, e->type, e->name);
  if (same(dc_entity_value(cur, HB), set_value(&v, HB)) &&
      same(dc_entity_value(cur, ST), set_value(&v, ST)))
    return true; /* the pair is untouched: nothing can break */
  if (e->type == DC_RES_USER && *e->parts.client) {
    /* Only (U, C); e->name's user half is U's canonical name. */
    char uenc[DC_ENTITY_ENC_NAME_SIZE];
    snprintf(uenc, sizeof(uenc), "%.*s",
             (int)(strchr(e->name, '/') - e->name), e->name);
    return check(&v, uenc, e->parts.client);
  }
  if (e->type == DC_RES_USER)
    return check(&v, e->name, NULL) && check_user(&v);
  if (dc_entity_is_default(e->name))
    return check(&v, NULL, NULL) && check_default(&v);
  return check(&v, NULL, e->name) && check_client(&v);
}

void dc_scope_merge_init(dc_scope_merge_t *m, const dc_scope_level_t *lv,
                         int nl) {
  *m = (dc_scope_merge_t){.lv = lv, .nl = nl};
}

const char *dc_scope_merge_next(dc_scope_merge_t *m,
                                const char *vals[DC_SCOPE_MAX_LEVELS],
                                int have[DC_SCOPE_MAX_LEVELS], int *nh) {
  const dc_scope_level_t *lv = m->lv;
  const char *key = NULL;
  for (int i = 0; i < m->nl; i++)
    if (lv[i].e && m->pos[i] < lv[i].e->n &&
        (!key || strcmp(lv[i].e->keys[m->pos[i]], key) < 0))
      key = lv[i].e->keys[m->pos[i]];
  *nh = 0;
  for (int i = 0; key && i < m->nl; i++)
    if (lv[i].e && m->pos[i] < lv[i].e->n &&
        !strcmp(lv[i].e->keys[m->pos[i]], key)) {
      have[*nh] = i;
      vals[(*nh)++] = lv[i].e->values[m->pos[i]++];
    }
  return key;
}
