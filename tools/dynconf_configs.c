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
#include "common/entity.h"
#include "common/json.h"
#include "common/kclient.h"
#include "common/schema.h"
#include "dynconf.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };
enum { ENT_NONE = 0, ENT_CLIENTS, ENT_BROKERS, ENT_USERS };

#define PROG "dynconf-configs"
#define MAX_ENTITY_NAME 255
#define DEFAULT_ENTITY "<default>"

typedef struct opts {
  const char *bootstrap;
  int entity_type;
  const char *entity_name; /* argv, DEFAULT_ENTITY, or wire_name */
  /* --entity-type/--entity-name as given, paired in order like
   * kafka-configs.sh: "users U" or "users U clients C" (either order). */
  int types[2], n_types;
  const char *names[2];
  int n_names;
  /* ENT_USERS: the user-principal and client-id (argv; client NULL for
   * the user entity), and the type-10 name sent (lib/common/entity.h). */
  const char *user, *client;
  char wire_name[DC_ENTITY_ENC_NAME_SIZE];
  bool entity_default;
  bool describe, alter, all, dry_run, json;
  int timeout_ms;
  /* Security and the keystore reload command (strings point into argv or
   * into `arena`). */
  const char *command_config;
  dc_kclient_security_t sec;
  bool reload;              /* --reload-keystore */
  const char *listener;     /* --listener NAME, or NULL for all */
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
  case DC_SRC_DYNAMIC_USER: return "DYNAMIC_USER_CONFIG";
  case DC_SRC_DYNAMIC_USER_CLIENT: return "DYNAMIC_USER_CLIENT_CONFIG";
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

/* ---- --command-config ------------------------------------------------- */

/* Reads librdkafka-style "key=value" properties ('#' and '!' comments)
 * into o->sec, then hands them to the connection in main(). Returns 0, or
 * -1 after printing a usage error naming the file, line and key. */
static int load_command_config(opts_t *o, const char *path) {
  if (o->command_config) {
    usage_error("--command-config given more than once");
    return -1;
  }
  o->command_config = path;
  FILE *f = fopen(path, "r");
  if (!f) {
    usage_error("cannot read --command-config file %s: %s", path,
                strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  int lineno = 0, rc = 0;
  while (rc == 0 && getline(&line, &cap, f) != -1) {
    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    char *t = trim(line);
    if (!*t || *t == '#' || *t == '!')
      continue;
    char *eq = strchr(t, '=');
    if (!eq) {
      usage_error("%s line %d: expected KEY=VALUE", path, lineno);
      rc = -1;
      break;
    }
    *eq = '\0';
    char *key = trim(t), *val = dc_arena_strdup(&o->arena, trim(eq + 1));
    if (!val) {
      fail("out of memory");
      rc = -1;
      break;
    }
    if (!strcmp(key, "security.protocol"))
      o->sec.protocol = val;
    else if (!strcmp(key, "ssl.ca.location"))
      o->sec.ssl_ca = val;
    else if (!strcmp(key, "ssl.certificate.location"))
      o->sec.ssl_cert = val;
    else if (!strcmp(key, "ssl.key.location"))
      o->sec.ssl_key = val;
    else if (!strcmp(key, "sasl.mechanism") || !strcmp(key, "sasl.mechanisms"))
      o->sec.sasl_mechanism = val;
    else if (!strcmp(key, "sasl.username"))
      o->sec.sasl_username = val;
    else if (!strcmp(key, "sasl.password"))
      o->sec.sasl_password = val;
    else if (!strcmp(key, "enable.ssl.certificate.verification") &&
             (!strcmp(val, "true") || !strcmp(val, "false")))
      o->sec.ssl_no_verify = !strcmp(val, "false");
    else if (!strcmp(key, "ssl.endpoint.identification.algorithm") &&
             (!strcmp(val, "https") || !strcmp(val, "none")))
      o->sec.ssl_no_hostname_check = !strcmp(val, "none");
    else if (!strcmp(key, "enable.ssl.certificate.verification") ||
             !strcmp(key, "ssl.endpoint.identification.algorithm")) {
      usage_error("%s line %d: bad value '%s' for %s", path, lineno, val, key);
      rc = -1;
    } else {
      usage_error("%s line %d: unknown property '%s' (known: "
                  "security.protocol, ssl.ca.location, "
                  "ssl.certificate.location, ssl.key.location, "
                  "sasl.mechanism, sasl.username, sasl.password, "
                  "enable.ssl.certificate.verification, "
                  "ssl.endpoint.identification.algorithm)",
                  path, lineno, key);
      rc = -1;
    }
  }
  if (line)
    explicit_bzero(line, cap); /* it may have held the password */
  free(line);
  fclose(f);
  return rc;
}

static void print_help(void) {
  printf(
      "Usage: " PROG " --bootstrap-server HOST:PORT[,HOST:PORT]\n"
      "         --entity-type clients|users|brokers (--entity-name NAME | --entity-default)\n"
      "         [--entity-type clients --entity-name CLIENT_ID]  (after users)\n"
      "         (--describe [--all] | --alter CHANGES [--dry-run])\n"
      "         [--json] [--timeout-ms N] [--command-config FILE]\n"
      "       " PROG " --bootstrap-server HOST:PORT --reload-keystore\n"
      "         [--listener NAME] [--command-config FILE]\n"
      "\n"
      "Describe or change the dynamic configuration dynconfd serves to\n"
      "librdkafka clients (KIP-649), like kafka-configs.sh.\n"
      "\n"
      "  --bootstrap-server LIST  dynconfd address(es), tried in turn\n"
      "  --entity-type TYPE       clients (client-ids), users (user-principals:\n"
      "                           overrides for every client a principal runs)\n"
      "                           or brokers (the server); users then clients,\n"
      "                           each with its --entity-name, names one\n"
      "                           principal's overrides for one client-id\n"
      "  --entity-name NAME       client-id, user-principal (the principal\n"
      "                           without \"User:\"), or broker node id\n"
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
      "  --command-config FILE    connection properties, one KEY=VALUE a line:\n"
      "                           security.protocol (PLAINTEXT, SSL,\n"
      "                           SASL_PLAINTEXT, SASL_SSL), ssl.ca.location,\n"
      "                           ssl.certificate.location, ssl.key.location,\n"
      "                           sasl.mechanism (PLAIN, SCRAM-SHA-256,\n"
      "                           SCRAM-SHA-512), sasl.username, sasl.password,\n"
      "                           enable.ssl.certificate.verification (true),\n"
      "                           ssl.endpoint.identification.algorithm\n"
      "                           (https, or none: no host name check)\n"
      "  --reload-keystore        make dynconfd reload its TLS certificate, key\n"
      "                           and CA from the same files (needs alter on\n"
      "                           broker); one line per listener\n"
      "  --listener NAME          with --reload-keystore: only this listener\n"
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
      "      --entity-name app-1 --describe --all\n"
      "  " PROG " --bootstrap-server localhost:9092 --entity-type users \\\n"
      "      --entity-name alice --entity-type clients --entity-name app-1 \\\n"
      "      --alter --add-config acks=all\n");
}

enum {
  O_BOOTSTRAP = 256, O_ENTITY_TYPE, O_ENTITY_NAME, O_ENTITY_DEFAULT,
  O_DESCRIBE, O_ALL, O_ALTER, O_ADD, O_DELETE, O_APPEND, O_SUBTRACT,
  O_DRY_RUN, O_JSON, O_TIMEOUT, O_HELP, O_VERSION,
  O_COMMAND_CONFIG, O_RELOAD_KEYSTORE, O_LISTENER
};

/* Pairs the --entity-type and --entity-name values in the order given
 * (kafka-configs.sh style), checks them, and sets entity_type and
 * entity_name (the name sent). 0, or -1 after printing a usage error. */
static int resolve_entities(opts_t *o) {
  if (o->n_types == 0) {
    usage_error("--entity-type is required");
    return -1;
  }
  if (o->n_types == 2) {
    int ui = o->types[0] == ENT_USERS ? 0 : 1;
    if (o->types[ui] != ENT_USERS || o->types[1 - ui] != ENT_CLIENTS) {
      usage_error("two --entity-type values go together only as users and "
                  "clients (a user-principal's overrides for one client-id)");
      return -1;
    }
    if (o->entity_default) {
      usage_error("--entity-default does not combine users and clients: "
                  "the user entity alone applies to all its client-ids");
      return -1;
    }
    if (o->n_names != 2) {
      usage_error("--entity-type users --entity-type clients needs two "
                  "--entity-name values, in the same order");
      return -1;
    }
    o->user = o->names[ui];
    o->client = o->names[1 - ui];
    o->entity_type = ENT_USERS;
  } else {
    o->entity_type = o->types[0];
    if (o->n_names > 1) {
      usage_error("--entity-name given more than once");
      return -1;
    }
    o->entity_name = o->n_names ? o->names[0] : NULL;
    if (o->entity_name && o->entity_default) {
      usage_error("--entity-name and --entity-default cannot be used "
                  "together");
      return -1;
    }
    if (!o->entity_name && !o->entity_default) {
      usage_error("--entity-name or --entity-default is required");
      return -1;
    }
    if (o->entity_default) {
      if (o->entity_type == ENT_BROKERS) {
        usage_error("--entity-default is for clients; dynconfd has no "
                    "cluster-wide broker defaults (use --entity-name "
                    "NODE_ID)");
        return -1;
      }
      if (o->entity_type == ENT_USERS) {
        usage_error("dynconfd has no default user entity; use "
                    "--entity-type clients --entity-default for defaults "
                    "every client inherits");
        return -1;
      }
      o->entity_name = DEFAULT_ENTITY;
    } else if (o->entity_type == ENT_CLIENTS) {
      size_t n = strlen(o->entity_name);
      if (n == 0 || n > MAX_ENTITY_NAME) {
        usage_error("--entity-name must be 1..%d bytes", MAX_ENTITY_NAME);
        return -1;
      }
    } else if (o->entity_type == ENT_BROKERS) {
      int64_t id;
      if (!dc_parse_int64(o->entity_name, &id) || id < 0 ||
          id > 0x7fffffff) {
        usage_error("--entity-name for brokers is a node id, not '%s'",
                    o->entity_name);
        return -1;
      }
    } else {
      o->user = o->entity_name;
    }
  }
  if (o->entity_type != ENT_USERS)
    return 0;
  if (!strcmp(o->user, DEFAULT_ENTITY)) {
    usage_error("dynconfd has no default user entity");
    return -1;
  }
  if (o->client && !strcmp(o->client, DEFAULT_ENTITY)) {
    usage_error("a user-principal with the default client-id is the user "
                "entity itself: drop --entity-type clients");
    return -1;
  }
  char why[128];
  if (dc_entity_user_name(o->user, o->client, o->wire_name,
                          sizeof(o->wire_name), why, sizeof(why))) {
    usage_error("--entity-name: %s", why);
    return -1;
  }
  o->entity_name = o->wire_name;
  return 0;
}

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
      {"command-config", required_argument, NULL, O_COMMAND_CONFIG},
      {"reload-keystore", no_argument, NULL, O_RELOAD_KEYSTORE},
      {"listener", required_argument, NULL, O_LISTENER},
      {NULL, 0, NULL, 0}};
  opterr = 0; /* we print our own one-line reasons */
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case O_BOOTSTRAP:
      o->bootstrap = optarg;
      break;
    case O_ENTITY_TYPE: {
      int t = !strcmp(optarg, "clients")   ? ENT_CLIENTS
              : !strcmp(optarg, "brokers") ? ENT_BROKERS
              : !strcmp(optarg, "users")   ? ENT_USERS
                                           : ENT_NONE;
      if (t == ENT_NONE) {
        usage_error("--entity-type must be clients, users or brokers, not "
                    "'%s'",
                    optarg);
        return EXIT_USAGE;
      }
      if (o->n_types == 2) {
        usage_error("--entity-type given more than twice");
        return EXIT_USAGE;
      }
      o->types[o->n_types++] = t;
      o->entity_type = o->types[0]; /* final value: resolve_entities() */
      break;
    }
    case O_ENTITY_NAME:
      if (o->n_names == 2) {
        usage_error("--entity-name given more than twice");
        return EXIT_USAGE;
      }
      o->names[o->n_names++] = optarg;
      o->entity_name = o->names[0]; /* final value: resolve_entities() */
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
    case O_COMMAND_CONFIG:
      if (load_command_config(o, optarg))
        return EXIT_USAGE;
      break;
    case O_RELOAD_KEYSTORE:
      o->reload = true;
      break;
    case O_LISTENER:
      if (!*optarg) {
        usage_error("--listener needs a listener name");
        return EXIT_USAGE;
      }
      o->listener = optarg;
      break;
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
  if (o->reload) {
    if (o->describe || o->alter || o->entity_type != ENT_NONE ||
        o->entity_name || o->entity_default || o->n_ops || o->all ||
        o->dry_run) {
      usage_error("--reload-keystore is a command of its own: no --describe, "
                  "--alter or --entity-* with it");
      return EXIT_USAGE;
    }
    return -1;
  }
  if (o->listener) {
    usage_error("--listener goes with --reload-keystore");
    return EXIT_USAGE;
  }
  if (o->describe == o->alter) {
    usage_error("exactly one of --describe or --alter is required");
    return EXIT_USAGE;
  }
  if (resolve_entities(o))
    return EXIT_USAGE;
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

/* "client-id 'x'", "the default client-id", "broker 1",
 * "user-principal 'u'", "user-principal 'u', client-id 'x'". */
static void entity_phrase(const opts_t *o, char *buf, size_t size) {
  if (o->entity_type == ENT_BROKERS)
    snprintf(buf, size, "broker %s", o->entity_name);
  else if (o->entity_type == ENT_USERS && o->client)
    snprintf(buf, size, "user-principal '%s', client-id '%s'", o->user,
             o->client);
  else if (o->entity_type == ENT_USERS)
    snprintf(buf, size, "user-principal '%s'", o->user);
  else if (!strcmp(o->entity_name, DEFAULT_ENTITY))
    snprintf(buf, size, "the default client-id");
  else
    snprintf(buf, size, "client-id '%s'", o->entity_name);
}

/* The JSON members naming the entity: "entity_type", "entity_name" (the
 * user-principal for users) and, for a user + client-id, "client_id". */
static void json_entity(dc_buf_t *b, const opts_t *o) {
  dc_buf_printf(b, "\"entity_type\":\"%s\",\"entity_name\":",
                o->entity_type == ENT_BROKERS ? "brokers"
                : o->entity_type == ENT_USERS ? "users"
                                              : "clients");
  dc_json_str(b, o->entity_type == ENT_USERS ? o->user : o->entity_name);
  if (o->entity_type == ENT_USERS && o->client) {
    dc_buf_printf(b, ",\"client_id\":");
    dc_json_str(b, o->client);
  }
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
  /* The source of the entity's own values (the others are inherited). */
  int own_src = is_default_entity           ? DC_SRC_DYNAMIC_DEFAULT
                : o->entity_type != ENT_USERS ? DC_SRC_DYNAMIC_CLIENT
                : o->client                   ? DC_SRC_DYNAMIC_USER_CLIENT
                                              : DC_SRC_DYNAMIC_USER;
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
        e->config_source = e->is_default ? DC_SRC_DYNAMIC_DEFAULT : own_src;
    }
    if (o->entity_type != ENT_BROKERS && !o->all &&
        e->config_source != own_src) {
      /* A level above the entity (the caller's user) may shadow its own
       * value: show the entity's value from its synonym then. */
      int32_t j = 0;
      while (j < e->n_synonyms && e->synonyms[j].source != own_src)
        j++;
      if (j == e->n_synonyms)
        continue; /* inherited, not the entity's own */
      e->value = e->synonyms[j].value;
      e->config_source = (int8_t)own_src;
      e->synonyms += j;
      e->n_synonyms -= j;
    }
    sel[n++] = e;
  }
  qsort(sel, n, sizeof(*sel), cmp_entry);

  dc_buf_t b;
  dc_buf_init(&b);
  char sbuf[32];
  if (o->json) {
    dc_buf_printf(&b, "{");
    json_entity(&b, o);
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
    char who[600];
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
  return o->entity_type == ENT_BROKERS ? DC_RES_BROKER
         : o->entity_type == ENT_USERS ? DC_RES_USER
                                       : DC_RES_CLIENT;
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
  else if (err == DYNCONF_ERR__TRANSPORT &&
           !(o->sec.protocol && strcasestr(o->sec.protocol, "SASL")))
    /* What a SASL listener does to an unauthenticated request. */
    fail("%s (if it is a SASL listener, authenticate with --command-config)",
         errstr);
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
    char who[600];
    entity_phrase(o, who, sizeof(who));
    fail("the DescribeConfigs response from %s does not mention %s",
         dc_kclient_peer(kc), who);
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
    char who[600];
    entity_phrase(o, who, sizeof(who));
    fail("the IncrementalAlterConfigs response from %s does not mention "
         "%s; the change may or may not have been applied",
         dc_kclient_peer(kc), who);
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
  char who[600];
  entity_phrase(o, who, sizeof(who));
  dc_buf_t b;
  dc_buf_init(&b);
  if (o->json) {
    dc_buf_printf(&b, "{");
    json_entity(&b, o);
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

static int enc_reload(dc_buf_t *b, int16_t v, const void *req) {
  return dc_reload_req_encode(b, v, req);
}

/* "2026-12-30T12:00:00Z" for wall-clock ms. */
static void iso_time(int64_t ms, char *buf, size_t size) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
    snprintf(buf, size, "%lld ms", (long long)ms);
}

/* --reload-keystore: ReloadSecurity (dynconf's API key 20000). One line
 * per listener; EXIT_FAIL when any listener (or the request) failed. */
static int cmd_reload(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  int16_t v = dc_kclient_pick_version(kc, DC_API_RELOAD_SECURITY);
  if (v < 0) {
    fail("the server at %s does not support ReloadSecurity (API key %d), "
         "which --reload-keystore needs; is it a dynconfd with TLS?",
         dc_kclient_peer(kc), DC_API_RELOAD_SECURITY);
    return EXIT_FAIL;
  }
  dc_reload_req_t req = {.listener_name = (char *)o->listener};
  dc_arena_t arena;
  dc_arena_init(&arena);
  char errstr[512];
  dc_rd_t rd;
  int rc = EXIT_FAIL;
  dynconf_err_t err =
      dc_kclient_request(kc, DC_API_RELOAD_SECURITY, v, enc_reload, &req,
                         remaining_ms(deadline), &rd, &arena, errstr,
                         sizeof(errstr));
  if (err) {
    fail_request(o, kc, err, "ReloadSecurity", errstr);
    goto out;
  }
  dc_reload_resp_t resp;
  if (dc_reload_resp_decode(&rd, v, &resp)) {
    fail("malformed ReloadSecurity v%d response from %s: %s", v,
         dc_kclient_peer(kc), dynconf_err_str((dynconf_err_t)rd.err));
    goto out;
  }
  if (resp.error_code) {
    char nb[32];
    fail("%s: %s", err_name(resp.error_code, nb, sizeof(nb)),
         resp.error_message && *resp.error_message
             ? resp.error_message
             : dynconf_err_str((dynconf_err_t)resp.error_code));
    goto out;
  }
  dc_buf_t b;
  dc_buf_init(&b);
  bool all_ok = true;
  if (o->json)
    dc_buf_printf(&b, "{\"listeners\":[");
  for (int32_t i = 0; i < resp.n_listeners; i++) {
    const dc_reload_listener_t *l = &resp.listeners[i];
    const char *name = l->listener_name ? l->listener_name : "?";
    char until[64] = "";
    if (l->not_after_ms >= 0)
      iso_time(l->not_after_ms, until, sizeof(until));
    char nb[32];
    const char *why = l->error_message && *l->error_message
                          ? l->error_message
                          : err_name(l->error_code, nb, sizeof(nb));
    all_ok &= l->error_code == 0;
    if (o->json) {
      dc_buf_printf(&b, "%s{\"listener\":", i ? "," : "");
      dc_json_str(&b, name);
      dc_buf_printf(&b, ",\"ok\":%s,\"error\":",
                    l->error_code ? "false" : "true");
      dc_json_str(&b, l->error_code ? why : NULL);
      dc_buf_printf(&b, ",\"subject\":");
      dc_json_str(&b, l->subject);
      dc_buf_printf(&b, ",\"not_after\":");
      dc_json_str(&b, until[0] ? until : NULL);
      dc_buf_printf(&b, "}");
    } else if (l->error_code) {
      dc_buf_printf(&b, "listener %s: reload failed: %s\n", name, why);
    } else {
      dc_buf_printf(&b, "reloaded listener %s", name);
      if (l->subject && *l->subject)
        dc_buf_printf(&b, ": subject %s", l->subject);
      if (until[0])
        dc_buf_printf(&b, ", valid until %s", until);
      dc_buf_printf(&b, "\n");
    }
  }
  if (o->json)
    dc_buf_printf(&b, "]}\n");
  else if (resp.n_listeners == 0)
    dc_buf_printf(&b, "no TLS listener%s%s on %s: nothing to reload\n",
                  o->listener ? " named " : "", o->listener ? o->listener : "",
                  dc_kclient_peer(kc));
  rc = flush_out(&b);
  dc_buf_free(&b);
  if (rc == EXIT_OK && !all_ok)
    rc = EXIT_FAIL;
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
  if (o.command_config &&
      dc_kclient_set_security(kc, &o.sec, errstr, sizeof(errstr))) {
    usage_error("--command-config %s: %s", o.command_config, errstr);
    rc = EXIT_USAGE;
    goto out;
  }
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
  if (err == DYNCONF_ERR__TRANSPORT &&
      !(o.sec.protocol && strcasestr(o.sec.protocol, "SSL"))) {
    /* A TLS listener drops a plaintext request without a word. */
    fail("%s (if it is a TLS listener, set security.protocol=SSL or "
         "SASL_SSL with --command-config)", errstr);
    goto out;
  }
  if (err) {
    fail_request(&o, kc, err, "ApiVersions", errstr);
    goto out;
  }
  rc = o.reload     ? cmd_reload(&o, kc, deadline)
       : o.describe ? cmd_describe(&o, kc, deadline)
                    : cmd_alter(&o, kc, deadline);
out:
  dc_kclient_destroy(kc);
  free(o.ops);
  dc_arena_free(&o.arena);
  return rc;
}
