/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Export and import of a store's entities (see transfer.h), with jansson
 * reading and writing the JSON.
 */
#include "broker/store/transfer.h"
#include "broker/config/scope.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/schema.h"
#include "common/strset.h"
#include "common/text.h"

#include <jansson.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "dynconf-export"
#define FORMAT_VERSION 1

/* ---- export ------------------------------------------------------------ */

typedef struct exporter {
  FILE *f;
  int8_t type;
  char *entity;       /* the entity being gathered (owned), NULL = none */
  json_t *configs;    /* its keys so far (owned) */
  size_t n_written;
  char *errstr;
  size_t errstr_size;
} exporter_t;

/* Writes the gathered entity as one line. 0, or -1 with errstr. */
static int flush_entity(exporter_t *x) {
  if (!x->entity)
    return 0;
  json_t *e = json_object();
  json_t *name = json_string(x->entity);
  int rc = -1;
  if (!e || !name) {
    snprintf(x->errstr, x->errstr_size, "%s entity '%.300s': its name is not "
             "valid UTF-8, which JSON cannot carry", dc_scope_type_name(x->type),
             x->entity);
  } else if (json_object_set_new(e, "type", json_string(dc_scope_type_name(x->type))) ||
             json_object_set_new(e, "name", name) ||
             json_object_set(e, "configs", x->configs)) {
    name = NULL;
    snprintf(x->errstr, x->errstr_size, "out of memory");
  } else {
    name = NULL;
    if (fputs(x->n_written ? ",\n" : "\n", x->f) < 0 ||
        json_dumpf(e, x->f, JSON_COMPACT) ||
        ferror(x->f))
      snprintf(x->errstr, x->errstr_size, "cannot write: %s", strerror(errno));
    else
      rc = 0;
  }
  json_decref(name);
  json_decref(e);
  json_decref(x->configs);
  free(x->entity);
  x->entity = NULL;
  x->configs = NULL;
  x->n_written += rc == 0;
  return rc;
}

static int export_row(void *opaque, int8_t type, const char *entity,
                      const char *key, const char *value) {
  exporter_t *x = opaque;
  if (!dc_scope_type_name(type))
    return 0; /* nothing else is stored; a future type is not ours */
  if (!x->entity || x->type != type || strcmp(x->entity, entity)) {
    if (flush_entity(x))
      return -1;
    x->type = type;
    x->entity = strdup(entity);
    x->configs = json_object();
    if (!x->entity || !x->configs) {
      snprintf(x->errstr, x->errstr_size, "out of memory");
      return -1;
    }
  }
  json_t *v = json_string(value);
  if (!v || json_object_set_new(x->configs, key, v)) {
    snprintf(x->errstr, x->errstr_size, "%s entity '%.300s', key '%.200s': "
             "not valid UTF-8, which JSON cannot carry", dc_scope_type_name(type),
             entity, key);
    return -1;
  }
  return 0;
}

int dc_transfer_export(dc_store_t *st, FILE *f, char *errstr,
                       size_t errstr_size) {
  exporter_t x = {.f = f, .errstr = errstr, .errstr_size = errstr_size};
  errstr[0] = '\0';
  fprintf(f, "{\"format\":\"%s\",\"version\":%d,\"entities\":[", FORMAT_NAME,
          FORMAT_VERSION);
  int r = dc_store_load(st, export_row, &x, errstr, errstr_size);
  if (!r)
    r = flush_entity(&x);
  json_decref(x.configs);
  free(x.entity);
  if (r)
    return -1;
  if (fputs("\n]}\n", f) < 0 || fflush(f) || ferror(f)) {
    dc_seterr(errstr, errstr_size, "cannot write: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- import ------------------------------------------------------------ */

/* Everything import builds lives in one arena, freed at the end. */
typedef struct importer {
  const dc_import_opts_t *o;
  dc_arena_t arena;
  dc_strset_t seen;           /* (type, canonical name) already read */
  dc_store_commit_t *commits; /* one per entity */
  size_t n, n_configs;
  char *errstr;
  size_t errstr_size;
} importer_t;

/* The top level: the format's name and version, an entities array, and
 * nothing else. The array, or NULL with errstr. */
static json_t *check_document(json_t *root, importer_t *im) {
  const char *k;
  json_t *v;
  if (!json_is_object(root)) {
    snprintf(im->errstr, im->errstr_size, "the document is not a JSON object");
    return NULL;
  }
  json_object_foreach(root, k, v) {
    if (strcmp(k, "format") && strcmp(k, "version") && strcmp(k, "entities")) {
      snprintf(im->errstr, im->errstr_size, "unknown member '%.100s' (the "
               "document has format, version and entities)", k);
      return NULL;
    }
  }
  json_t *fmt = json_object_get(root, "format");
  json_t *ver = json_object_get(root, "version");
  json_t *ents = json_object_get(root, "entities");
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), FORMAT_NAME)) {
    snprintf(im->errstr, im->errstr_size, "not a dynconf export (\"format\" "
             "must be \"%s\")", FORMAT_NAME);
    return NULL;
  }
  if (!json_is_integer(ver) || json_integer_value(ver) != FORMAT_VERSION) {
    snprintf(im->errstr, im->errstr_size, "unsupported export version (this "
             "dynconfd reads version %d)", FORMAT_VERSION);
    return NULL;
  }
  if (!json_is_array(ents)) {
    snprintf(im->errstr, im->errstr_size, "\"entities\" must be an array");
    return NULL;
  }
  return ents;
}

/* One key: a string value an alter would accept. */
static int check_config(importer_t *im, const char *ent, const char *key,
                        json_t *v) {
  char why[300];
  const dc_schema_entry_t *e = dc_schema_find(key);
  if (!json_is_string(v)) {
    snprintf(why, sizeof(why), "the value must be a JSON string");
  } else if (!*key || strlen(key) > DC_CONFIG_NAME_MAX) {
    snprintf(why, sizeof(why), "a key is 1 to %d bytes", DC_CONFIG_NAME_MAX);
  } else if (!e && !im->o->allow_unknown_keys) {
    snprintf(why, sizeof(why), "not a client config dynconfd knows (import "
             "with --allow-unknown-keys to keep it)");
  } else if (dc_schema_validate(e, json_string_value(v), why, sizeof(why))) {
    return 0;
  }
  snprintf(im->errstr, im->errstr_size, "entity %s, key '%.200s': %s", ent,
           key, why);
  return -1;
}

/* The configs of entity ent (its type rt, its canonical name canon), as
 * the importer's next commit. */
static int read_configs(importer_t *im, const char *ent, int8_t rt,
                        const char *canon, json_t *cfg) {
  size_t n = json_object_size(cfg);
  if (n > im->o->max_entity_configs) {
    snprintf(im->errstr, im->errstr_size, "entity %s: %zu keys, over "
             "max.entity.configs (%zu)", ent, n, im->o->max_entity_configs);
    return -1;
  }
  dc_store_commit_t *c = &im->commits[im->n];
  const char **keys = dc_arena_alloc(&im->arena, (n ? n : 1) * sizeof(char *));
  const char **vals = dc_arena_alloc(&im->arena, (n ? n : 1) * sizeof(char *));
  dc_store_change_t *ch = dc_arena_alloc(&im->arena, (n ? n : 1) * sizeof(*ch));
  if (!keys || !vals || !ch) {
    snprintf(im->errstr, im->errstr_size, "out of memory");
    return -1;
  }
  const char *k;
  json_t *v;
  size_t m = 0;
  json_object_foreach(cfg, k, v) {
    if (check_config(im, ent, k, v))
      return -1;
    keys[m] = k;
    vals[m] = json_string_value(v);
    ch[m] = (dc_store_change_t){.key = k, .op = DC_OP_SET,
                                .new_value = vals[m]};
    m++;
  }
  *c = (dc_store_commit_t){.resource_type = rt, .entity = canon,
                           .principal = "dynconfd --import",
                           .peer = im->o->source, .api = "Import",
                           .n_configs = m, .keys = keys, .values = vals,
                           .n_changes = m, .changes = ch};
  im->n++;
  im->n_configs += m;
  return 0;
}

/* One entity: its type, name and configs, into a commit. */
static int read_entity(importer_t *im, size_t i, json_t *j) {
  char ent[400], why[400];
  snprintf(ent, sizeof(ent), "#%zu", i + 1);
  json_t *type = json_object_get(j, "type"), *name = json_object_get(j, "name");
  json_t *cfg = json_object_get(j, "configs");
  if (!json_is_object(j) || json_object_size(j) != 3 || !json_is_string(type) ||
      !json_is_string(name) || !json_is_object(cfg)) {
    snprintf(im->errstr, im->errstr_size, "entity %s: must be an object with "
             "exactly \"type\", \"name\" (strings) and \"configs\" (an object)",
             ent);
    return -1;
  }
  const char *t = json_string_value(type);
  int8_t rt = !strcmp(t, "client") ? DC_RES_CLIENT
              : !strcmp(t, "user") ? DC_RES_USER : 0;
  dc_scope_ent_t se;
  if (!rt) {
    snprintf(why, sizeof(why), "type '%.50s' is neither client nor user", t);
  } else if (dc_scope_ent_init(&se, rt, json_string_value(name), why,
                               sizeof(why)) == 0) {
    why[0] = '\0';
  }
  snprintf(ent, sizeof(ent), "#%zu (%s '%.300s')", i + 1, t,
           json_string_value(name));
  if (why[0]) {
    snprintf(im->errstr, im->errstr_size, "entity %s: %s", ent, why);
    return -1;
  }
  char *canon = dc_arena_strdup(&im->arena, se.name);
  if (!canon) {
    snprintf(im->errstr, im->errstr_size, "out of memory");
    return -1;
  }
  if (dc_strset_add(&im->seen, rt, canon, (int32_t)i) >= 0) {
    snprintf(im->errstr, im->errstr_size, "entity %s: named twice", ent);
    return -1;
  }
  return read_configs(im, ent, rt, canon, cfg);
}

/* Counts the store's rows; the first one ends the walk. */
static int count_row(void *opaque, int8_t type, const char *entity,
                     const char *key, const char *value) {
  (void)type, (void)entity, (void)key, (void)value;
  ++*(size_t *)opaque;
  return 1;
}

static int read_all(importer_t *im, json_t *ents) {
  size_t n = json_array_size(ents);
  im->commits = dc_arena_alloc(&im->arena, (n ? n : 1) * sizeof(*im->commits));
  if (!im->commits || dc_strset_init(&im->seen, &im->arena, n ? n : 1)) {
    snprintf(im->errstr, im->errstr_size, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (read_entity(im, i, json_array_get(ents, i)))
      return -1;
  return 0;
}

int dc_transfer_import(dc_store_t *st, const char *path,
                       const dc_import_opts_t *opts, size_t *n_entities,
                       size_t *n_configs, char *errstr, size_t errstr_size) {
  importer_t im = {.o = opts, .errstr = errstr, .errstr_size = errstr_size};
  dc_arena_init(&im.arena);
  size_t rows = 0;
  int rc = -1;
  json_error_t jerr;
  json_t *root = NULL;
  if (dc_store_load(st, count_row, &rows, errstr, errstr_size) < 0)
    goto out;
  if (rows) {
    dc_seterr(errstr, errstr_size, "the store already holds entities; an "
             "import fills an empty store (export what is there first, or "
             "import into a new data directory)");
    goto out;
  }
  root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    dc_seterr(errstr, errstr_size, "%s:%d:%d: %s", path, jerr.line, jerr.column,
             jerr.text);
    goto out;
  }
  json_t *ents = check_document(root, &im);
  if (!ents || read_all(&im, ents))
    goto out;
  if (im.n && dc_store_commit_many(st, im.commits, im.n, errstr, errstr_size))
    goto out;
  if (n_entities)
    *n_entities = im.n;
  if (n_configs)
    *n_configs = im.n_configs;
  rc = 0;
out:
  json_decref(root);
  dc_arena_free(&im.arena);
  return rc;
}
