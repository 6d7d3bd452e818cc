/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's modes that run once and exit instead of serving: --history,
 * --export, --import and --add-user.
 */
#include "dynconfd.h"

#include "broker/credentials.h"
#include "broker/store.h"
#include "broker/store_kafka.h"
#include "broker/transfer.h"
#include "codec/proto.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *op_name(int8_t op) {
  switch (op) {
  case DC_OP_SET: return "SET";
  case DC_OP_DELETE: return "DELETE";
  case DC_OP_APPEND: return "APPEND";
  case DC_OP_SUBTRACT: return "SUBTRACT";
  }
  return "?";
}

static int print_row(void *opaque, const dc_audit_row_t *r) {
  (void)opaque;
  time_t secs = (time_t)(r->time_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  printf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s %s %s %s:%s %s %s %s -> %s\n",
         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
         tm.tm_sec, (int)(r->time_ms % 1000), r->principal, r->peer, r->api,
         r->resource_type == DC_RES_CLIENT ? "client"
         : r->resource_type == DC_RES_USER ? "user"
                                           : "resource",
         r->entity, r->key, op_name(r->op),
         r->old_value ? r->old_value : "(unset)",
         r->new_value ? r->new_value : "(unset)");
  return 0;
}

static int print_history(const char *dir, const char *entity) {
  char err[512] = "";
  dc_store_t *store;
  if (dc_store_open_sqlite_ro(dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  int r = dc_store_history(store, entity, print_row, NULL, err, sizeof(err));
  dc_store_close(store);
  if (r) {
    fprintf(stderr, "dynconfd: cannot read history: %s\n", err);
    return 1;
  }
  return 0;
}

/* --history with --store kafka: from the history topic, which holds every
 * change (a replica's cache has those it applied). */
static int print_kafka_history(const settings_t *st, const char *entity) {
  char err[1024] = "";
  dc_kafka_store_opts_t o;
  if (kafka_opts(st, &o, err, sizeof(err)) ||
      dc_kafka_history(&o, entity, print_row, NULL, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: cannot read history: %s\n", err);
    return 1;
  }
  return 0;
}

/* --history: from the data directory, or with --store kafka the history
 * topic. */
int run_history(const settings_t *st, const char *entity) {
  return st->store && !strcmp(st->store, "kafka")
             ? print_kafka_history(st, entity)
             : print_history(st->data_dir, entity);
}

/* --export: the store's entities as the export document, to a file
 * (written whole, then renamed into place) or "-" (stdout). */
int export_store(const char *dir, const char *path) {
  char err[3 * PATH_MAX] = "", tmp[PATH_MAX];
  dc_store_t *store;
  if (dc_store_open_sqlite_ro(dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  bool to_stdout = !strcmp(path, "-");
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = to_stdout ? stdout : fopen(tmp, "w");
  int r = f ? dc_transfer_export(store, f, err, sizeof(err)) : -1;
  if (!f)
    snprintf(err, sizeof(err), "cannot create %s: %s", tmp, strerror(errno));
  dc_store_close(store);
  if (!to_stdout && f) {
    if (!r && (fflush(f) || fsync(fileno(f)))) {
      snprintf(err, sizeof(err), "cannot write %s: %s", tmp, strerror(errno));
      r = -1;
    }
    fclose(f);
    if (!r && rename(tmp, path)) {
      snprintf(err, sizeof(err), "cannot rename %s to %s: %s", tmp, path,
               strerror(errno));
      r = -1;
    }
    if (r)
      unlink(tmp);
  }
  if (r) {
    fprintf(stderr, "dynconfd: export failed: %s\n", err);
    return 1;
  }
  return 0;
}

/* --import: fills an empty store from an export document. */
int import_store(const settings_t *st, const char *path) {
  char err[768] = "";
  dc_store_t *store;
  if (dc_store_open_sqlite(st->data_dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  dc_import_opts_t o = {.allow_unknown_keys = st->allow_unknown,
                        .max_entity_configs = (size_t)st->max_entity_configs,
                        .source = path};
  size_t n_ent = 0, n_cfg = 0;
  int r = dc_transfer_import(store, path, &o, &n_ent, &n_cfg, err,
                             sizeof(err));
  dc_store_close(store);
  if (r) {
    fprintf(stderr, "dynconfd: import from %s failed, nothing written: %s\n",
            path, err);
    return 1;
  }
  printf("imported %zu entities (%zu configs) from %s into %s\n", n_ent, n_cfg,
         path, st->data_dir);
  return 0;
}

/* --add-user: the password is the first line of stdin. */
int add_user(const char *path, const char *user, int iterations) {
  if (!path) {
    fprintf(stderr, "dynconfd: --add-user needs --credentials FILE\n");
    return EXIT_USAGE;
  }
  char pw[1024];
  if (isatty(0))
    fprintf(stderr, "password for %s: ", user);
  if (!fgets(pw, sizeof(pw), stdin)) {
    fprintf(stderr, "dynconfd: --add-user reads the password from stdin; "
                    "got nothing\n");
    return EXIT_USAGE;
  }
  pw[strcspn(pw, "\r\n")] = '\0';
  char err[512] = "";
  int r = dc_credentials_add(path, user, pw, iterations, err, sizeof(err));
  memset(pw, 0, sizeof(pw));
  if (r) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  printf("stored SCRAM-SHA-256 and SCRAM-SHA-512 credentials for '%s' in %s\n",
         user, path);
  return 0;
}
