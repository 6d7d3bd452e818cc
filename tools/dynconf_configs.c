/*
 * dynconf-configs: operator CLI for dynconfd, modelled on kafka-configs.sh.
 *
 *   dynconf-configs --bootstrap-server H:P --entity-type clients \
 *       --entity-name app-1 --describe [--all] [--json]
 *   dynconf-configs --bootstrap-server H:P --entity-type clients \
 *       --entity-default --alter --add-config 'session.timeout.ms=30000'
 *
 * Talks the Kafka wire protocol through lib/common/kclient (sockets) and
 * lib/codec (encoding). Exit status: 0 success, 1 the server refused or
 * could not be reached, 2 usage error.
 */
#include "codec/proto.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/kclient.h"
#include "common/schema.h"
#include "dynconf.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };
enum { ENT_NONE = 0, ENT_CLIENTS, ENT_BROKERS };

#define PROG "dynconf-configs"
#define MAX_ENTITY_NAME 255
#define DEFAULT_ENTITY "<default>"

typedef struct opts {
  const char *bootstrap;
  int entity_type;
  const char *entity_name; /* points into argv, or DEFAULT_ENTITY */
  bool entity_default;
  bool describe, alter, all, dry_run, json;
  int timeout_ms;
  /* Alter operations. The array is malloc'd (freed by opts_free); names and
   * values live in `arena`. */
  dc_alter_config_t *ops;
  size_t n_ops, cap_ops;
  dc_arena_t arena;
} opts_t;

/* ---- small helpers ---------------------------------------------------- */

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("Error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(" (see " PROG " --help)\n", stderr);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  va_list ap;
  fputs("Error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static int remaining_ms(int64_t deadline) {
  int64_t left = deadline - dc_mono_ms();
  return left < 1 ? 1 : left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* Kafka error name, or "error N" for a code outside our table. Returns a
 * static string or one written into buf. */
static const char *err_name(int code, char *buf, size_t size) {
  const char *n = dynconf_err_name((dynconf_err_t)code);
  if (strcmp(n, "UNKNOWN"))
    return n;
  snprintf(buf, size, "error %d", code);
  return buf;
}

static const char *source_name(int src, char *buf, size_t size) {
  switch (src) {
  case 0: return "UNKNOWN";
  case 1: return "DYNAMIC_TOPIC_CONFIG";
  case 2: return "DYNAMIC_BROKER_CONFIG";
  case 3: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
  case DC_SRC_STATIC_BROKER: return "STATIC_BROKER_CONFIG";
  case DC_SRC_DEFAULT: return "DEFAULT_CONFIG";
  case 6: return "DYNAMIC_BROKER_LOGGER_CONFIG";
  case DC_SRC_DYNAMIC_CLIENT: return "DYNAMIC_CLIENT_CONFIG";
  case DC_SRC_DYNAMIC_DEFAULT: return "DYNAMIC_DEFAULT_CLIENT_CONFIG";
  }
  snprintf(buf, size, "SOURCE_%d", src);
  return buf;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

/* ---- option parsing --------------------------------------------------- */

static int add_op(opts_t *o, const char *name, int8_t op, const char *value) {
  for (size_t i = 0; i < o->n_ops; i++)
    if (!strcmp(o->ops[i].name, name)) {
      usage_error("config '%s' is given more than once", name);
      return -1;
    }
  if (o->n_ops == o->cap_ops) {
    size_t cap = o->cap_ops ? o->cap_ops * 2 : 8;
    dc_alter_config_t *p = realloc(o->ops, cap * sizeof(*p));
    if (!p) {
      fail("out of memory");
      return -1;
    }
    o->ops = p;
    o->cap_ops = cap;
  }
  char *n = dc_arena_strdup(&o->arena, name);
  char *v = value ? dc_arena_strdup(&o->arena, value) : NULL;
  if (!n || (value && !v)) {
    fail("out of memory");
    return -1;
  }
  o->ops[o->n_ops++] = (dc_alter_config_t){.name = n, .op = op, .value = v};
  return 0;
}

/* Parses kafka-configs "k=v,k2=[a,b]" syntax: commas separate pairs except
 * inside square brackets, which group a list value (brackets dropped, inner
 * commas kept). Returns 0, or -1 after printing a usage error. */
static int parse_pairs(opts_t *o, const char *flag, const char *spec,
                       int8_t op) {
  char *copy = dc_arena_strdup(&o->arena, spec);
  if (!copy) {
    fail("out of memory");
    return -1;
  }
  int depth = 0;
  char *start = copy;
  for (char *p = copy;; p++) {
    if (*p == '[') {
      if (++depth > 1) {
        usage_error("nested '[' in %s '%s'", flag, spec);
        return -1;
      }
    } else if (*p == ']') {
      if (--depth < 0) {
        usage_error("unbalanced ']' in %s '%s'", flag, spec);
        return -1;
      }
    } else if (*p == '\0' && depth) {
      usage_error("missing ']' in %s '%s'", flag, spec);
      return -1;
    }
    if (*p != '\0' && !(*p == ',' && depth == 0))
      continue;
    bool last = *p == '\0';
    *p = '\0';
    char *pair = trim(start);
    char *eq = strchr(pair, '=');
    if (!eq) {
      usage_error("%s entry '%s' is not KEY=VALUE", flag, pair);
      return -1;
    }
    *eq = '\0';
    char *key = trim(pair), *val = trim(eq + 1);
    if (!*key) {
      usage_error("%s entry '=%s' has an empty key", flag, val);
      return -1;
    }
    size_t vl = strlen(val);
    if (vl && val[0] == '[') {
      if (val[vl - 1] != ']') {
        usage_error("%s value '%s' has text after ']'", flag, val);
        return -1;
      }
      val[vl - 1] = '\0';
      val = trim(val + 1);
    } else if (strchr(val, '[') || strchr(val, ']')) {
      usage_error("%s value '%s': '[' must start the value", flag, val);
      return -1;
    }
    if (add_op(o, key, op, val))
      return -1;
    if (last)
      break;
    start = p + 1;
  }
  return 0;
}

static int parse_delete(opts_t *o, const char *spec) {
  char *copy = dc_arena_strdup(&o->arena, spec);
  if (!copy) {
    fail("out of memory");
    return -1;
  }
  char *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *key = trim(tok);
    if (!*key)
      continue;
    if (strchr(key, '=')) {
      usage_error("--delete-config takes key names, not '%s'", key);
      return -1;
    }
    if (add_op(o, key, DC_OP_DELETE, NULL))
      return -1;
    n++;
  }
  if (!n) {
    usage_error("--delete-config needs at least one key name");
    return -1;
  }
  return 0;
}

static void print_help(void) {
  printf(
      "Usage: " PROG " --bootstrap-server HOST:PORT[,HOST:PORT]\n"
      "         --entity-type clients|brokers (--entity-name NAME | --entity-default)\n"
      "         (--describe [--all] | --alter CHANGES [--dry-run])\n"
      "         [--json] [--timeout-ms N]\n"
      "\n"
      "Describe or change the dynamic configuration dynconfd serves to\n"
      "librdkafka clients (KIP-649), like kafka-configs.sh.\n"
      "\n"
      "  --bootstrap-server LIST  dynconfd address(es), tried in turn\n"
      "  --entity-type TYPE       clients (client-ids) or brokers (the server)\n"
      "  --entity-name NAME       client-id, or broker node id\n"
      "  --entity-default         the default client-id entity (<default>),\n"
      "                           inherited by every client without an override\n"
      "  --describe               show the entity's configs\n"
      "  --all                    with --describe: include inherited values\n"
      "  --alter                  change configs (one IncrementalAlterConfigs)\n"
      "  --add-config 'k=v,...'   set keys; k=[a,b] gives a list value \"a,b\"\n"
      "  --delete-config 'k,...'  remove overrides (revert to the default)\n"
      "  --append-config 'k=v'    add items to a list key\n"
      "  --subtract-config 'k=v'  remove items from a list key\n"
      "  --dry-run                validate on the server, change nothing\n"
      "  --json                   machine-readable output\n"
      "  --timeout-ms N           give up after N ms (default 10000)\n"
      "  --help, --version\n"
      "\n"
      "Exit status: 0 success, 1 server error or unreachable, 2 usage error.\n"
      "\n"
      "Examples:\n"
      "  " PROG " --bootstrap-server localhost:9092 --entity-type clients \\\n"
      "      --entity-default --alter --add-config session.timeout.ms=30000\n"
      "  " PROG " --bootstrap-server localhost:9092 --entity-type clients \\\n"
      "      --entity-name app-1 --alter \\\n"
      "      --add-config 'acks=1,partition.assignment.strategy=[range,roundrobin]'\n"
      "  " PROG " --bootstrap-server localhost:9092 --entity-type clients \\\n"
      "      --entity-name app-1 --describe --all\n");
}

enum {
  O_BOOTSTRAP = 256, O_ENTITY_TYPE, O_ENTITY_NAME, O_ENTITY_DEFAULT,
  O_DESCRIBE, O_ALL, O_ALTER, O_ADD, O_DELETE, O_APPEND, O_SUBTRACT,
  O_DRY_RUN, O_JSON, O_TIMEOUT, O_HELP, O_VERSION
};

/* Returns -1 to continue, or an exit status. */
static int parse_args(opts_t *o, int argc, char **argv) {
  static const struct option longopts[] = {
      {"bootstrap-server", required_argument, NULL, O_BOOTSTRAP},
      {"entity-type", required_argument, NULL, O_ENTITY_TYPE},
      {"entity-name", required_argument, NULL, O_ENTITY_NAME},
      {"entity-default", no_argument, NULL, O_ENTITY_DEFAULT},
      {"describe", no_argument, NULL, O_DESCRIBE},
      {"all", no_argument, NULL, O_ALL},
      {"alter", no_argument, NULL, O_ALTER},
      {"add-config", required_argument, NULL, O_ADD},
      {"delete-config", required_argument, NULL, O_DELETE},
      {"append-config", required_argument, NULL, O_APPEND},
      {"subtract-config", required_argument, NULL, O_SUBTRACT},
      {"dry-run", no_argument, NULL, O_DRY_RUN},
      {"json", no_argument, NULL, O_JSON},
      {"timeout-ms", required_argument, NULL, O_TIMEOUT},
      {"help", no_argument, NULL, O_HELP},
      {"version", no_argument, NULL, O_VERSION},
      {NULL, 0, NULL, 0}};
  opterr = 0; /* we print our own one-line reasons */
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case O_BOOTSTRAP:
      o->bootstrap = optarg;
      break;
    case O_ENTITY_TYPE:
      if (!strcmp(optarg, "clients"))
        o->entity_type = ENT_CLIENTS;
      else if (!strcmp(optarg, "brokers"))
        o->entity_type = ENT_BROKERS;
      else {
        usage_error("--entity-type must be clients or brokers, not '%s'",
                    optarg);
        return EXIT_USAGE;
      }
      break;
    case O_ENTITY_NAME:
      if (o->entity_name) {
        usage_error("--entity-name given more than once");
        return EXIT_USAGE;
      }
      o->entity_name = optarg;
      break;
    case O_ENTITY_DEFAULT:
      o->entity_default = true;
      break;
    case O_DESCRIBE:
      o->describe = true;
      break;
    case O_ALL:
      o->all = true;
      break;
    case O_ALTER:
      o->alter = true;
      break;
    case O_ADD:
      if (parse_pairs(o, "--add-config", optarg, DC_OP_SET))
        return EXIT_USAGE;
      break;
    case O_APPEND:
      if (parse_pairs(o, "--append-config", optarg, DC_OP_APPEND))
        return EXIT_USAGE;
      break;
    case O_SUBTRACT:
      if (parse_pairs(o, "--subtract-config", optarg, DC_OP_SUBTRACT))
        return EXIT_USAGE;
      break;
    case O_DELETE:
      if (parse_delete(o, optarg))
        return EXIT_USAGE;
      break;
    case O_DRY_RUN:
      o->dry_run = true;
      break;
    case O_JSON:
      o->json = true;
      break;
    case O_TIMEOUT: {
      int64_t v;
      if (!dc_parse_int64(optarg, &v) || v < 1 || v > 3600000) {
        usage_error("--timeout-ms must be a whole number of ms in 1..3600000, "
                    "not '%s'", optarg);
        return EXIT_USAGE;
      }
      o->timeout_ms = (int)v;
      break;
    }
    case 'h':
    case O_HELP:
      print_help();
      return EXIT_OK;
    case O_VERSION:
      printf(PROG " %s\n", dynconf_version_str());
      return EXIT_OK;
    case ':':
      usage_error("option '%s' needs a value", argv[optind - 1]);
      return EXIT_USAGE;
    default:
      usage_error("unknown option '%s'", argv[optind - 1]);
      return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    usage_error("unexpected argument '%s'", argv[optind]);
    return EXIT_USAGE;
  }

  /* Cross-option rules, in the order an operator would fix them. */
  if (!o->bootstrap || !*o->bootstrap) {
    usage_error("--bootstrap-server is required");
    return EXIT_USAGE;
  }
  if (o->describe == o->alter) {
    usage_error("exactly one of --describe or --alter is required");
    return EXIT_USAGE;
  }
  if (o->entity_type == ENT_NONE) {
    usage_error("--entity-type is required");
    return EXIT_USAGE;
  }
  if (o->entity_name && o->entity_default) {
    usage_error("--entity-name and --entity-default cannot be used together");
    return EXIT_USAGE;
  }
  if (!o->entity_name && !o->entity_default) {
    usage_error("--entity-name or --entity-default is required");
    return EXIT_USAGE;
  }
  if (o->entity_default) {
    if (o->entity_type == ENT_BROKERS) {
      usage_error("--entity-default is for clients; dynconfd has no "
                  "cluster-wide broker defaults (use --entity-name NODE_ID)");
      return EXIT_USAGE;
    }
    o->entity_name = DEFAULT_ENTITY;
  } else if (o->entity_type == ENT_CLIENTS) {
    size_t n = strlen(o->entity_name);
    if (n == 0 || n > MAX_ENTITY_NAME) {
      usage_error("--entity-name must be 1..%d bytes", MAX_ENTITY_NAME);
      return EXIT_USAGE;
    }
  } else {
    int64_t id;
    if (!dc_parse_int64(o->entity_name, &id) || id < 0 || id > 0x7fffffff) {
      usage_error("--entity-name for brokers is a node id, not '%s'",
                  o->entity_name);
      return EXIT_USAGE;
    }
  }
  if (o->describe && (o->n_ops || o->dry_run)) {
    usage_error("--add-config, --delete-config, --append-config, "
                "--subtract-config and --dry-run go with --alter");
    return EXIT_USAGE;
  }
  if (o->alter && o->all) {
    usage_error("--all goes with --describe");
    return EXIT_USAGE;
  }
  if (o->alter && !o->n_ops) {
    usage_error("--alter needs --add-config, --delete-config, "
                "--append-config or --subtract-config");
    return EXIT_USAGE;
  }
  return -1;
}

/* ---- output ----------------------------------------------------------- */

/* "client-id 'x'", "the default client-id", "broker 1". */
static void entity_phrase(const opts_t *o, char *buf, size_t size) {
  if (o->entity_type == ENT_BROKERS)
    snprintf(buf, size, "broker %s", o->entity_name);
  else if (!strcmp(o->entity_name, DEFAULT_ENTITY))
    snprintf(buf, size, "the default client-id");
  else
    snprintf(buf, size, "client-id '%s'", o->entity_name);
}

static int cmp_entry(const void *a, const void *b) {
  const dc_describe_configs_entry_t *x = *(dc_describe_configs_entry_t *const *)a;
  const dc_describe_configs_entry_t *y = *(dc_describe_configs_entry_t *const *)b;
  return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* Writes the buffer to stdout; EXIT_FAIL if stdout cannot take it. */
static int flush_out(dc_buf_t *b) {
  if (b->err) {
    fail("out of memory");
    return EXIT_FAIL;
  }
  if ((b->len && fwrite(b->data, 1, b->len, stdout) != b->len) ||
      fflush(stdout)) {
    fail("cannot write to standard output");
    return EXIT_FAIL;
  }
  return EXIT_OK;
}

static int print_describe(const opts_t *o, dc_describe_configs_result_t *res,
                          int16_t v) {
  bool is_default_entity =
      o->entity_type == ENT_CLIENTS && !strcmp(o->entity_name, DEFAULT_ENTITY);
  /* Select and sort. v0 has no source byte: derive it from is_default. */
  dc_describe_configs_entry_t **sel =
      calloc(res->n_configs > 0 ? (size_t)res->n_configs : 1, sizeof(*sel));
  if (!sel) {
    fail("out of memory");
    return EXIT_FAIL;
  }
  size_t n = 0;
  for (int32_t i = 0; i < res->n_configs; i++) {
    dc_describe_configs_entry_t *e = &res->configs[i];
    if (!e->name)
      continue; /* a nameless config cannot be shown or sorted */
    if (v == 0) {
      if (o->entity_type == ENT_BROKERS)
        e->config_source = e->is_default ? DC_SRC_DEFAULT : DC_SRC_STATIC_BROKER;
      else
        e->config_source = e->is_default || is_default_entity
                               ? DC_SRC_DYNAMIC_DEFAULT
                               : DC_SRC_DYNAMIC_CLIENT;
    }
    if (o->entity_type == ENT_CLIENTS && !o->all &&
        e->config_source != (is_default_entity ? DC_SRC_DYNAMIC_DEFAULT
                                               : DC_SRC_DYNAMIC_CLIENT))
      continue;
    sel[n++] = e;
  }
  qsort(sel, n, sizeof(*sel), cmp_entry);

  dc_buf_t b;
  dc_buf_init(&b);
  char sbuf[32];
  if (o->json) {
    dc_buf_printf(&b, "{\"entity_type\":\"%s\",\"entity_name\":",
                  o->entity_type == ENT_BROKERS ? "brokers" : "clients");
    dc_json_str(&b, o->entity_name);
    dc_buf_printf(&b, ",\"configs\":[");
    for (size_t i = 0; i < n; i++) {
      const dc_describe_configs_entry_t *e = sel[i];
      dc_buf_printf(&b, "%s{\"name\":", i ? "," : "");
      dc_json_str(&b, e->name);
      dc_buf_printf(&b, ",\"value\":");
      dc_json_str(&b, e->value);
      dc_buf_printf(&b, ",\"source\":");
      dc_json_str(&b, source_name(e->config_source, sbuf, sizeof(sbuf)));
      dc_buf_printf(&b, ",\"read_only\":%s,\"sensitive\":%s,\"synonyms\":[",
                    e->read_only ? "true" : "false",
                    e->is_sensitive ? "true" : "false");
      for (int32_t j = 0; j < e->n_synonyms; j++) {
        const dc_describe_configs_synonym_t *s = &e->synonyms[j];
        dc_buf_printf(&b, "%s{\"name\":", j ? "," : "");
        dc_json_str(&b, s->name);
        dc_buf_printf(&b, ",\"value\":");
        dc_json_str(&b, s->value);
        dc_buf_printf(&b, ",\"source\":");
        dc_json_str(&b, source_name(s->source, sbuf, sizeof(sbuf)));
        dc_buf_printf(&b, "}");
      }
      dc_buf_printf(&b, "]}");
    }
    dc_buf_printf(&b, "]}\n");
  } else {
    char who[300];
    entity_phrase(o, who, sizeof(who));
    const char *kind = o->all ? "All configs"
                       : o->entity_type == ENT_BROKERS ? "Configs"
                                                       : "Dynamic configs";
    dc_buf_printf(&b, "%s for %s are:\n", kind, who);
    for (size_t i = 0; i < n; i++) {
      const dc_describe_configs_entry_t *e = sel[i];
      dc_buf_printf(&b, "  %s=%s", e->name, e->value ? e->value : "null");
      if (o->all)
        dc_buf_printf(&b, " source=%s",
                      source_name(e->config_source, sbuf, sizeof(sbuf)));
      dc_buf_printf(&b, " sensitive=%s synonyms={",
                    e->is_sensitive ? "true" : "false");
      for (int32_t j = 0; j < e->n_synonyms; j++) {
        const dc_describe_configs_synonym_t *s = &e->synonyms[j];
        dc_buf_printf(&b, "%s%s:%s=%s", j ? ", " : "",
                      source_name(s->source, sbuf, sizeof(sbuf)),
                      s->name ? s->name : "", s->value ? s->value : "null");
      }
      dc_buf_printf(&b, "}\n");
    }
  }
  free(sel);
  int rc = flush_out(&b);
  dc_buf_free(&b);
  return rc;
}

/* ---- commands --------------------------------------------------------- */

static int8_t wire_type(const opts_t *o) {
  return o->entity_type == ENT_BROKERS ? DC_RES_BROKER : DC_RES_CLIENT;
}

static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

static int enc_incremental(dc_buf_t *b, int16_t v, const void *req) {
  return dc_incremental_alter_configs_req_encode(b, v, req);
}

/* Prints a transport-level failure; a time-out is reported against the
 * whole --timeout-ms budget rather than the remainder a step was given. */
static void fail_request(const opts_t *o, dc_kclient_t *kc, dynconf_err_t err,
                         const char *api, const char *errstr) {
  if (err == DYNCONF_ERR__TIMED_OUT)
    fail("no %s response from %s within %d ms (--timeout-ms)", api,
         dc_kclient_peer(kc)[0] ? dc_kclient_peer(kc) : o->bootstrap,
         o->timeout_ms);
  else
    fail("%s", errstr);
}

static int cmd_describe(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  int16_t v = dc_kclient_pick_version(kc, DC_API_DESCRIBE_CONFIGS);
  if (v < 0) {
    fail("the server at %s does not support DescribeConfigs (API key %d) in "
         "any version this tool speaks",
         dc_kclient_peer(kc), DC_API_DESCRIBE_CONFIGS);
    return EXIT_FAIL;
  }
  dc_describe_configs_req_resource_t r = {
      .resource_type = wire_type(o),
      .resource_name = (char *)o->entity_name,
      .n_configuration_keys = -1,
  };
  dc_describe_configs_req_t req = {
      .n_resources = 1, .resources = &r, .include_synonyms = true};
  dc_arena_t arena;
  dc_arena_init(&arena);
  char errstr[512];
  dc_rd_t rd;
  int rc = EXIT_FAIL;
  dynconf_err_t err =
      dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, v, enc_describe, &req,
                         remaining_ms(deadline), &rd, &arena, errstr,
                         sizeof(errstr));
  if (err) {
    fail_request(o, kc, err, "DescribeConfigs", errstr);
    goto out;
  }
  dc_describe_configs_resp_t resp;
  if (dc_describe_configs_resp_decode(&rd, v, &resp)) {
    fail("malformed DescribeConfigs v%d response from %s: %s", v,
         dc_kclient_peer(kc), dynconf_err_str((dynconf_err_t)rd.err));
    goto out;
  }
  dc_describe_configs_result_t *res = NULL;
  for (int32_t i = 0; i < resp.n_results; i++) {
    dc_describe_configs_result_t *x = &resp.results[i];
    if (x->resource_type == r.resource_type && x->resource_name &&
        !strcmp(x->resource_name, r.resource_name)) {
      res = x;
      break;
    }
  }
  if (!res) {
    fail("the DescribeConfigs response from %s does not mention %s '%s'",
         dc_kclient_peer(kc), o->entity_type == ENT_BROKERS ? "broker" : "client",
         o->entity_name);
    goto out;
  }
  if (res->error_code) {
    char nb[32];
    fail("%s: %s", err_name(res->error_code, nb, sizeof(nb)),
         res->error_message && *res->error_message
             ? res->error_message
             : dynconf_err_str((dynconf_err_t)res->error_code));
    goto out;
  }
  rc = print_describe(o, res, v);
out:
  dc_arena_free(&arena);
  return rc;
}

static int cmd_alter(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  int16_t v = dc_kclient_pick_version(kc, DC_API_INCREMENTAL_ALTER_CONFIGS);
  if (v < 0) {
    fail("the server at %s does not support IncrementalAlterConfigs (API key "
         "%d), which --alter needs; is it a dynconfd?",
         dc_kclient_peer(kc), DC_API_INCREMENTAL_ALTER_CONFIGS);
    return EXIT_FAIL;
  }
  dc_alter_resource_t r = {
      .resource_type = wire_type(o),
      .resource_name = (char *)o->entity_name,
      .n_configs = (int32_t)o->n_ops,
      .configs = o->ops,
  };
  dc_alter_configs_req_t req = {
      .n_resources = 1, .resources = &r, .validate_only = o->dry_run};
  dc_arena_t arena;
  dc_arena_init(&arena);
  char errstr[512];
  dc_rd_t rd;
  int rc = EXIT_FAIL;
  dynconf_err_t err = dc_kclient_request(
      kc, DC_API_INCREMENTAL_ALTER_CONFIGS, v, enc_incremental, &req,
      remaining_ms(deadline), &rd, &arena, errstr, sizeof(errstr));
  if (err) {
    fail_request(o, kc, err, "IncrementalAlterConfigs", errstr);
    goto out;
  }
  dc_alter_configs_resp_t resp;
  if (dc_incremental_alter_configs_resp_decode(&rd, v, &resp)) {
    fail("malformed IncrementalAlterConfigs v%d response from %s: %s", v,
         dc_kclient_peer(kc), dynconf_err_str((dynconf_err_t)rd.err));
    goto out;
  }
  dc_alter_result_t *res = NULL;
  for (int32_t i = 0; i < resp.n_responses; i++) {
    dc_alter_result_t *x = &resp.responses[i];
    if (x->resource_type == r.resource_type && x->resource_name &&
        !strcmp(x->resource_name, r.resource_name)) {
      res = x;
      break;
    }
  }
  if (!res) {
    fail("the IncrementalAlterConfigs response from %s does not mention "
         "%s '%s'; the change may or may not have been applied",
         dc_kclient_peer(kc), o->entity_type == ENT_BROKERS ? "broker" : "client",
         o->entity_name);
    goto out;
  }
  if (res->error_code) {
    char nb[32];
    fail("%s: %s", err_name(res->error_code, nb, sizeof(nb)),
         res->error_message && *res->error_message
             ? res->error_message
             : dynconf_err_str((dynconf_err_t)res->error_code));
    goto out;
  }
  char who[300];
  entity_phrase(o, who, sizeof(who));
  dc_buf_t b;
  dc_buf_init(&b);
  if (o->json) {
    dc_buf_printf(&b, "{\"entity_type\":\"%s\",\"entity_name\":",
                  o->entity_type == ENT_BROKERS ? "brokers" : "clients");
    dc_json_str(&b, o->entity_name);
    dc_buf_printf(&b, ",\"dry_run\":%s,\"result\":\"ok\"}\n",
                  o->dry_run ? "true" : "false");
  } else if (o->dry_run) {
    dc_buf_printf(&b, "Validated config for %s (dry run, nothing changed).\n",
                  who);
  } else {
    dc_buf_printf(&b, "Completed updating config for %s.\n", who);
  }
  rc = flush_out(&b);
  dc_buf_free(&b);
out:
  dc_arena_free(&arena);
  return rc;
}

int main(int argc, char **argv) {
  opts_t o = {.timeout_ms = 10000};
  dc_arena_init(&o.arena);
  dc_kclient_t *kc = NULL;
  int rc = parse_args(&o, argc, argv);
  if (rc >= 0)
    goto out;

  rc = EXIT_FAIL;
  int64_t deadline = dc_mono_ms() + o.timeout_ms;
  kc = dc_kclient_new(PROG);
  if (!kc) {
    fail("out of memory");
    goto out;
  }
  char errstr[1024];
  dynconf_err_t err = dc_kclient_connect(kc, o.bootstrap, remaining_ms(deadline),
                                         errstr, sizeof(errstr));
  if (err == DYNCONF_ERR__TIMED_OUT) {
    fail("cannot connect to %s within %d ms (--timeout-ms)", o.bootstrap,
         o.timeout_ms);
    goto out;
  }
  if (err == DYNCONF_ERR__INVALID_ARG) {
    usage_error("%s", errstr);
    rc = EXIT_USAGE;
    goto out;
  }
  if (err) {
    fail("%s", errstr);
    goto out;
  }
  err = dc_kclient_api_versions(kc, remaining_ms(deadline), errstr,
                                sizeof(errstr));
  if (err) {
    fail_request(&o, kc, err, "ApiVersions", errstr);
    goto out;
  }
  rc = o.describe ? cmd_describe(&o, kc, deadline)
                  : cmd_alter(&o, kc, deadline);
out:
  dc_kclient_destroy(kc);
  free(o.ops);
  dc_arena_free(&o.arena);
  return rc;
}
