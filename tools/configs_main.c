/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: operator CLI for dynconfd, modelled on kafka-configs.sh.
 *
 *   dynconf-configs --bootstrap-server H:P --entity-type clients \
 *       --entity-name app-1 --describe [--all] [--json]
 *   dynconf-configs --bootstrap-server H:P --entity-type clients \
 *       --entity-default --alter --add-config 'session.timeout.ms=30000'
 *
 *   dynconf-configs --bootstrap-server H:P --describe-fleet [--json]
 *
 * Talks the Kafka wire protocol through lib/common/kclient (sockets) and
 * lib/codec (encoding). Exit status: 0 success, 1 the server refused or
 * could not be reached (or, with --wait, a client rejected the change),
 * 2 usage error, 3 --wait timed out, 4 --wait found no connected client
 * the change concerns, 5 --wait: none rejected it and some clients need a
 * restart to apply it.
 *
 * This file: option parsing, entity resolution and main(). The requests
 * are in configs_requests.c, --describe-fleet and --wait in
 * configs_fleet.c, --command-config and --reload-keystore in
 * configs_security.c, the shared output and error helpers in
 * configs_util.c (see configs.h).
 */
#include "config.h"
#include "configs.h"

#include "common/clock.h"
#include "common/schema.h"
#include "common/errors.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- option parsing --------------------------------------------------- */

static int add_op(opts_t *o, const char *name, int8_t op, const char *value) {
  for (size_t i = 0; i < o->n_ops; i++)
    if (!strcmp(o->ops[i].name, name)) {
      cli_usage_error("config '%s' is given more than once", name);
      return -1;
    }
  if (o->n_ops == o->cap_ops) {
    size_t cap = o->cap_ops ? o->cap_ops * 2 : 8;
    dc_alter_config_t *p = realloc(o->ops, cap * sizeof(*p));
    if (!p) {
      cli_fail("out of memory");
      return -1;
    }
    o->ops = p;
    o->cap_ops = cap;
  }
  char *n = dc_arena_strdup(&o->arena, name);
  char *v = value ? dc_arena_strdup(&o->arena, value) : NULL;
  if (!n || (value && !v)) {
    cli_fail("out of memory");
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
    cli_fail("out of memory");
    return -1;
  }
  int depth = 0;
  char *start = copy;
  for (char *p = copy;; p++) {
    if (*p == '[') {
      if (++depth > 1) {
        cli_usage_error("nested '[' in %s '%s'", flag, spec);
        return -1;
      }
    } else if (*p == ']') {
      if (--depth < 0) {
        cli_usage_error("unbalanced ']' in %s '%s'", flag, spec);
        return -1;
      }
    } else if (*p == '\0' && depth) {
      cli_usage_error("missing ']' in %s '%s'", flag, spec);
      return -1;
    }
    if (*p != '\0' && !(*p == ',' && depth == 0))
      continue;
    bool last = *p == '\0';
    *p = '\0';
    char *pair = cli_trim(start);
    char *eq = strchr(pair, '=');
    if (!eq) {
      cli_usage_error("%s entry '%s' is not KEY=VALUE", flag, pair);
      return -1;
    }
    *eq = '\0';
    char *key = cli_trim(pair), *val = cli_trim(eq + 1);
    if (!*key) {
      cli_usage_error("%s entry '=%s' has an empty key", flag, val);
      return -1;
    }
    size_t vl = strlen(val);
    if (vl && val[0] == '[') {
      if (val[vl - 1] != ']') {
        cli_usage_error("%s value '%s' has text after ']'", flag, val);
        return -1;
      }
      val[vl - 1] = '\0';
      val = cli_trim(val + 1);
    } else if (strchr(val, '[') || strchr(val, ']')) {
      cli_usage_error("%s value '%s': '[' must start the value", flag, val);
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
    cli_fail("out of memory");
    return -1;
  }
  char *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *key = cli_trim(tok);
    if (!*key)
      continue;
    if (strchr(key, '=')) {
      cli_usage_error("--delete-config takes key names, not '%s'", key);
      return -1;
    }
    if (add_op(o, key, DC_OP_DELETE, NULL))
      return -1;
    n++;
  }
  if (!n) {
    cli_usage_error("--delete-config needs at least one key name");
    return -1;
  }
  return 0;
}

/* --help: the synopsis and what the tool is for. */
static void help_synopsis(void) {
  printf(
      "Usage: " PROG " --bootstrap-server HOST:PORT[,HOST:PORT]\n"
      "         --entity-type clients|users|brokers (--entity-name NAME | --entity-default)\n"
      "         [--entity-type clients --entity-name CLIENT_ID]  (after users)\n"
      "         (--describe [--all] | --alter CHANGES [--dry-run | --wait])\n"
      "         [--json] [--timeout-ms N] [--command-config FILE]\n"
      "       " PROG " --bootstrap-server HOST:PORT --describe-fleet\n"
      "         [--entity-type clients|users (--entity-name NAME | --entity-default)]\n"
      "         [--entity-type clients --entity-name CLIENT_ID]  (after users)\n"
      "         [--json] [--timeout-ms N] [--command-config FILE]\n"
      "       " PROG " --bootstrap-server HOST:PORT --reload-keystore\n"
      "         [--listener NAME] [--command-config FILE]\n"
      "\n"
      "Describe or change the dynamic configuration dynconfd serves to\n"
      "librdkafka clients (KIP-649), like kafka-configs.sh.\n"
      "\n");
}

/* --help: choosing the server and the entity. */
static void help_entity_options(void) {
  printf(
      "  --bootstrap-server LIST  dynconfd address(es), tried in turn\n"
      "  --entity-type TYPE       clients (client-ids), users (user-principals:\n"
      "                           overrides for every client a principal runs)\n"
      "                           or brokers (the server); users then clients,\n"
      "                           each with its --entity-name, names one\n"
      "                           principal's overrides for one client-id\n"
      "  --entity-name NAME       client-id, user-principal (the principal\n"
      "                           without \"User:\"), or broker node id\n"
      "  --entity-default         the default client-id entity (<default>),\n"
      "                           inherited by every client without an override\n");
}

/* --help: what to do with the entity. */
static void help_command_options(void) {
  printf(
      "  --describe               show the entity's configs\n"
      "  --all                    with --describe: include inherited values\n"
      "  --alter                  change configs (one IncrementalAlterConfigs)\n"
      "  --add-config 'k=v,...'   set keys; k=[a,b] gives a list value \"a,b\"\n"
      "  --delete-config 'k,...'  remove overrides (revert to the default)\n"
      "  --append-config 'k=v'    add items to a list key\n"
      "  --subtract-config 'k=v'  remove items from a list key\n"
      "  --dry-run                validate on the server, change nothing\n"
      "  --wait                   with --alter: then wait until every connected\n"
      "                           client of the entity that reports to the\n"
      "                           server has applied the change (exit 0) or\n"
      "                           some need a restart to (exit 5), one\n"
      "                           rejected it (exit 1) or --timeout-ms passed\n"
      "                           (exit 3), saying who\n");
}

/* --help: --describe-fleet, the output, the connection, --reload-keystore. */
static void help_fleet_and_connection(void) {
  printf(
      "  --describe-fleet         the clients the server knows, grouped by\n"
      "                           whether they run the configuration that\n"
      "                           resolves for them now (up to date, behind,\n"
      "                           rejected, silent, restart needed); the\n"
      "                           entity, if given, narrows the list to a\n"
      "                           client-id or a user\n"
      "  --json                   machine-readable output\n"
      "  --timeout-ms N           give up after N ms (default 10000; with\n"
      "                           --wait 30000, the wait included)\n"
      "  --command-config FILE    connection properties, one KEY=VALUE a line:\n"
      "                           security.protocol (PLAINTEXT, SSL,\n"
      "                           SASL_PLAINTEXT, SASL_SSL), ssl.ca.location\n"
      "                           (PEM file, hashed directory or probe),\n"
      "                           ssl.ca.pem, ssl.certificate.location,\n"
      "                           ssl.certificate.pem, ssl.key.location,\n"
      "                           ssl.key.pem, ssl.key.password,\n"
      "                           ssl.keystore.location (PKCS#12),\n"
      "                           ssl.keystore.password, ssl.cipher.suites,\n"
      "                           sasl.mechanism (PLAIN, SCRAM-SHA-256,\n"
      "                           SCRAM-SHA-512), sasl.username, sasl.password,\n"
      "                           enable.ssl.certificate.verification (true),\n"
      "                           ssl.endpoint.identification.algorithm\n"
      "                           (https, or none: no host name check);\n"
      "                           *.pem values are PEM text on one line with\n"
      "                           \\n for each newline\n"
      "  --reload-keystore        make dynconfd reload its TLS certificate, key\n"
      "                           and CA, ACL file, credentials, JWKS file and\n"
      "                           keytab from the same files (needs alter on\n"
      "                           broker); one line per listener and per file\n"
      "  --listener NAME          with --reload-keystore: only this listener\n"
      "  --help, --version\n"
      "\n");
}

/* --help: the exit status and examples. */
static void help_exit_and_examples(void) {
  printf(
      "Exit status: 0 success, 1 server error or unreachable (with --wait: or\n"
      "a client rejected the change), 2 usage error, 3 --wait timed out,\n"
      "4 --wait: no connected client is concerned by the change, 5 --wait:\n"
      "none rejected it, some clients need a restart to apply it.\n"
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
      "      --alter --add-config acks=all\n"
      "  " PROG " --bootstrap-server localhost:9092 --entity-type clients \\\n"
      "      --entity-default --alter --add-config linger.ms=20 --wait\n"
      "  " PROG " --bootstrap-server localhost:9092 --describe-fleet\n");
}

static void print_help(void) {
  help_synopsis();
  help_entity_options();
  help_command_options();
  help_fleet_and_connection();
  help_exit_and_examples();
}

enum {
  O_BOOTSTRAP = 256, O_ENTITY_TYPE, O_ENTITY_NAME, O_ENTITY_DEFAULT,
  O_DESCRIBE, O_ALL, O_ALTER, O_ADD, O_DELETE, O_APPEND, O_SUBTRACT,
  O_DRY_RUN, O_JSON, O_TIMEOUT, O_HELP, O_VERSION,
  O_COMMAND_CONFIG, O_RELOAD_KEYSTORE, O_LISTENER, O_DESCRIBE_FLEET, O_WAIT
};

/* ---- entity resolution ------------------------------------------------ */

/* --entity-type users and clients, in either order: a user-principal's
 * overrides for one client-id. Sets user, client and entity_type; 0, or
 * -1 after printing a usage error. */
static int resolve_user_client(opts_t *o) {
  int ui = o->types[0] == ENT_USERS ? 0 : 1;
  if (o->types[ui] != ENT_USERS || o->types[1 - ui] != ENT_CLIENTS) {
    cli_usage_error("two --entity-type values go together only as users "
                    "and clients (a user-principal's overrides for one "
                    "client-id)");
    return -1;
  }
  if (o->entity_default) {
    cli_usage_error("--entity-default does not combine users and clients: "
                    "the user entity alone applies to all its client-ids");
    return -1;
  }
  if (o->n_names != 2) {
    cli_usage_error("--entity-type users --entity-type clients needs two "
                    "--entity-name values, in the same order");
    return -1;
  }
  o->user = o->names[ui];
  o->client = o->names[1 - ui];
  o->entity_type = ENT_USERS;
  return 0;
}

/* --entity-default for the one --entity-type: only clients have a default
 * entity. 0, or -1 after printing a usage error. */
static int resolve_default_entity(opts_t *o) {
  if (o->entity_type == ENT_BROKERS) {
    cli_usage_error("--entity-default is for clients; dynconfd has no "
                    "cluster-wide broker defaults (use --entity-name "
                    "NODE_ID)");
    return -1;
  }
  if (o->entity_type == ENT_USERS) {
    cli_usage_error("dynconfd has no default user entity; use "
                    "--entity-type clients --entity-default for defaults "
                    "every client inherits");
    return -1;
  }
  o->entity_name = DC_ENTITY_DEFAULT;
  return 0;
}

/* Checks --entity-name against its type: a client-id's length, a broker's
 * node id; a user-principal becomes o->user. 0, or -1 after printing a
 * usage error. */
static int check_entity_name(opts_t *o) {
  if (o->entity_type == ENT_CLIENTS) {
    char why[160];
    if (dc_entity_client_check(o->entity_name, why, sizeof(why))) {
      cli_usage_error("--entity-name: %s", why);
      return -1;
    }
  } else if (o->entity_type == ENT_BROKERS) {
    int64_t id;
    if (!dc_parse_int64(o->entity_name, &id) || id < 0 || id > 0x7fffffff) {
      cli_usage_error("--entity-name for brokers is a node id, not '%s'",
                      o->entity_name);
      return -1;
    }
  } else {
    o->user = o->entity_name;
  }
  return 0;
}

/* One --entity-type with one --entity-name or --entity-default. Sets
 * entity_type and entity_name (and user for users); 0, or -1 after
 * printing a usage error. */
static int resolve_single_entity(opts_t *o) {
  o->entity_type = o->types[0];
  if (o->n_names > 1) {
    cli_usage_error("--entity-name given more than once");
    return -1;
  }
  o->entity_name = o->n_names ? o->names[0] : NULL;
  if (o->entity_name && o->entity_default) {
    cli_usage_error("--entity-name and --entity-default cannot be used "
                    "together");
    return -1;
  }
  if (!o->entity_name && !o->entity_default) {
    cli_usage_error("--entity-name or --entity-default is required");
    return -1;
  }
  if (o->entity_default)
    return resolve_default_entity(o);
  return check_entity_name(o);
}

/* A user entity (with or without a client-id): checks the names and sets
 * entity_name to the type-10 name sent (wire_name). 0, or -1 after
 * printing a usage error. */
static int encode_user_entity(opts_t *o) {
  char why[800];
  if (dc_entity_user_check(o->user, o->client, why, sizeof(why))) {
    /* Only a user paired with the <default> client-id fails on the client. */
    bool on_client = !dc_entity_is_default(o->user);
    cli_usage_error("--entity-name: %s%s", why,
                    on_client ? "; drop --entity-type clients" : "");
    return -1;
  }
  if (dc_entity_user_name(o->user, o->client, o->wire_name,
                          sizeof(o->wire_name), why, sizeof(why))) {
    cli_usage_error("--entity-name: %s", why);
    return -1;
  }
  o->entity_name = o->wire_name;
  return 0;
}

/* Pairs the --entity-type and --entity-name values in the order given
 * (kafka-configs.sh style), checks them, and sets entity_type and
 * entity_name (the name sent). 0, or -1 after printing a usage error. */
static int resolve_entities(opts_t *o) {
  if (o->n_types == 0) {
    cli_usage_error("--entity-type is required");
    return -1;
  }
  int rc = o->n_types == 2 ? resolve_user_client(o) : resolve_single_entity(o);
  if (rc || o->entity_type != ENT_USERS)
    return rc;
  return encode_user_entity(o);
}

/* ---- the command line ------------------------------------------------- */

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
    {"describe-fleet", no_argument, NULL, O_DESCRIBE_FLEET},
    {"wait", no_argument, NULL, O_WAIT},
    {NULL, 0, NULL, 0}};

/* --entity-type: records one of up to two types, in order (paired with
 * the names by resolve_entities()). 0, or -1 after a usage error. */
static int add_entity_type(opts_t *o, const char *arg) {
  int t = !strcmp(arg, "clients")   ? ENT_CLIENTS
          : !strcmp(arg, "brokers") ? ENT_BROKERS
          : !strcmp(arg, "users")   ? ENT_USERS
                                    : ENT_NONE;
  if (t == ENT_NONE) {
    cli_usage_error("--entity-type must be clients, users or brokers, not "
                    "'%s'",
                    arg);
    return -1;
  }
  if (o->n_types == 2) {
    cli_usage_error("--entity-type given more than twice");
    return -1;
  }
  o->types[o->n_types++] = t;
  o->entity_type = o->types[0]; /* final value: resolve_entities() */
  return 0;
}

/* --entity-name: records one of up to two names, in order. 0, or -1
 * after a usage error. */
static int add_entity_name(opts_t *o, const char *arg) {
  if (o->n_names == 2) {
    cli_usage_error("--entity-name given more than twice");
    return -1;
  }
  o->names[o->n_names++] = arg;
  o->entity_name = o->names[0]; /* final value: resolve_entities() */
  return 0;
}

/* --timeout-ms: 1..3600000. 0, or -1 after a usage error. */
static int parse_timeout(opts_t *o, const char *arg) {
  int64_t v;
  if (!dc_parse_int64(arg, &v) || v < 1 || v > 3600000) {
    cli_usage_error("--timeout-ms must be a whole number of ms in "
                    "1..3600000, not '%s'", arg);
    return -1;
  }
  o->timeout_ms = (int)v;
  return 0;
}

/* The options that only set a flag or keep their value as given; false
 * for any other option. */
static bool set_plain_option(opts_t *o, int c, char *arg) {
  switch (c) {
  case O_BOOTSTRAP:
    o->bootstrap = arg;
    return true;
  case O_ENTITY_DEFAULT:
    o->entity_default = true;
    return true;
  case O_DESCRIBE:
    o->describe = true;
    return true;
  case O_ALL:
    o->all = true;
    return true;
  case O_ALTER:
    o->alter = true;
    return true;
  case O_DRY_RUN:
    o->dry_run = true;
    return true;
  case O_JSON:
    o->json = true;
    return true;
  case O_RELOAD_KEYSTORE:
    o->reload = true;
    return true;
  case O_DESCRIBE_FLEET:
    o->describe_fleet = true;
    return true;
  case O_WAIT:
    o->wait = true;
    return true;
  }
  return false;
}

/* Applies one option getopt_long() returned (c, with arg its value).
 * Returns -1 to go on, or an exit status: EXIT_OK after --help or
 * --version, EXIT_USAGE after a usage error. */
static int apply_option(opts_t *o, int c, char *arg, char **argv) {
  if (set_plain_option(o, c, arg))
    return -1;
  int bad = 0;
  switch (c) {
  case O_ENTITY_TYPE:
    bad = add_entity_type(o, arg);
    break;
  case O_ENTITY_NAME:
    bad = add_entity_name(o, arg);
    break;
  case O_ADD:
    bad = parse_pairs(o, "--add-config", arg, DC_OP_SET);
    break;
  case O_APPEND:
    bad = parse_pairs(o, "--append-config", arg, DC_OP_APPEND);
    break;
  case O_SUBTRACT:
    bad = parse_pairs(o, "--subtract-config", arg, DC_OP_SUBTRACT);
    break;
  case O_DELETE:
    bad = parse_delete(o, arg);
    break;
  case O_TIMEOUT:
    bad = parse_timeout(o, arg);
    break;
  case O_COMMAND_CONFIG:
    bad = cli_load_command_config(o, arg);
    break;
  case O_LISTENER:
    if (!*arg) {
      cli_usage_error("--listener needs a listener name");
      return EXIT_USAGE;
    }
    o->listener = arg;
    break;
  case 'h':
  case O_HELP:
    print_help();
    return EXIT_OK;
  case O_VERSION:
    printf(PROG " %s\n", PACKAGE_VERSION);
    return EXIT_OK;
  case ':':
    cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    return EXIT_USAGE;
  default:
    cli_usage_error("unknown option '%s'", argv[optind - 1]);
    return EXIT_USAGE;
  }
  return bad ? EXIT_USAGE : -1;
}

/* --reload-keystore is a command of its own. -1 when nothing else was
 * asked for, else EXIT_USAGE after a usage error. */
static int check_reload_alone(const opts_t *o) {
  if (o->describe || o->alter || o->entity_type != ENT_NONE ||
      o->entity_name || o->entity_default || o->n_ops || o->all ||
      o->dry_run || o->describe_fleet || o->wait) {
    cli_usage_error("--reload-keystore is a command of its own: no "
                    "--describe, --alter, --describe-fleet or --entity-* "
                    "with it");
    return EXIT_USAGE;
  }
  return -1;
}

/* --describe-fleet is a command of its own; an entity, optional, narrows
 * the list to a client-id, a user-principal, or both. Resolves it. -1, or
 * EXIT_USAGE after a usage error. */
static int check_describe_fleet(opts_t *o) {
  if (o->describe || o->alter || o->all || o->dry_run || o->n_ops ||
      o->wait) {
    cli_usage_error("--describe-fleet is a command of its own: no "
                    "--describe, --alter, --all, --dry-run, --wait or "
                    "config changes with it");
    return EXIT_USAGE;
  }
  if (!o->n_types && !o->n_names && !o->entity_default)
    return -1; /* every client */
  if (resolve_entities(o))
    return EXIT_USAGE;
  if (o->entity_type == ENT_BROKERS) {
    cli_usage_error("--describe-fleet lists clients: --entity-type clients "
                    "or users, not brokers");
    return EXIT_USAGE;
  }
  return -1;
}

/* --wait follows a change to client configs until the clients run it.
 * -1, or EXIT_USAGE after a usage error. */
static int check_wait(const opts_t *o) {
  const char *why =
      !o->alter ? "--wait goes with --alter"
      : o->dry_run ? "--wait follows a change, and --dry-run makes none"
      : o->entity_type == ENT_BROKERS
          ? "--wait follows clients applying a change; broker configs are "
            "not served to clients"
      : o->json ? "--wait reports in text (its exit status says how the "
                  "rollout ended); drop --json"
                : NULL;
  if (!why)
    return -1;
  cli_usage_error("%s", why);
  return EXIT_USAGE;
}

/* Cross-option rules, in the order an operator would fix them; resolves
 * the entity on the way. -1 when the options make one command, else
 * EXIT_USAGE after a usage error. */
static int check_option_rules(opts_t *o) {
  if (!o->bootstrap || !*o->bootstrap) {
    cli_usage_error("--bootstrap-server is required");
    return EXIT_USAGE;
  }
  if (o->reload)
    return check_reload_alone(o);
  if (o->listener) {
    cli_usage_error("--listener goes with --reload-keystore");
    return EXIT_USAGE;
  }
  if (o->describe_fleet)
    return check_describe_fleet(o);
  if (o->describe == o->alter) {
    cli_usage_error("exactly one of --describe, --alter or "
                    "--describe-fleet is required");
    return EXIT_USAGE;
  }
  if (resolve_entities(o))
    return EXIT_USAGE;
  if (o->describe && (o->n_ops || o->dry_run)) {
    cli_usage_error("--add-config, --delete-config, --append-config, "
                    "--subtract-config and --dry-run go with --alter");
    return EXIT_USAGE;
  }
  if (o->alter && o->all) {
    cli_usage_error("--all goes with --describe");
    return EXIT_USAGE;
  }
  if (o->alter && !o->n_ops) {
    cli_usage_error("--alter needs --add-config, --delete-config, "
                    "--append-config or --subtract-config");
    return EXIT_USAGE;
  }
  return o->wait ? check_wait(o) : -1;
}

/* Returns -1 to continue, or an exit status. */
static int parse_args(opts_t *o, int argc, char **argv) {
  opterr = 0; /* we print our own one-line reasons */
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    int rc = apply_option(o, c, optarg, argv);
    if (rc >= 0)
      return rc;
  }
  if (optind < argc) {
    cli_usage_error("unexpected argument '%s'", argv[optind]);
    return EXIT_USAGE;
  }
  return check_option_rules(o);
}

int main(int argc, char **argv) {
  opts_t o = {.timeout_ms = 0};
  dc_arena_init(&o.arena);
  dc_kclient_t *kc = NULL;
  int rc = parse_args(&o, argc, argv);
  if (rc >= 0)
    goto out;

  if (!o.timeout_ms) /* a wait takes longer than one request */
    o.timeout_ms = o.wait ? 30000 : 10000;
  rc = EXIT_FAIL;
  int64_t deadline = dc_mono_ms() + o.timeout_ms;
  kc = dc_kclient_new(PROG);
  if (!kc) {
    cli_fail("out of memory");
    goto out;
  }
  rc = cli_connect(&o, kc, deadline);
  if (rc >= 0)
    goto out;
  rc = o.reload           ? cli_reload(&o, kc, deadline)
       : o.describe_fleet ? cli_describe_fleet(&o, kc, deadline)
       : o.describe       ? cli_describe(&o, kc, deadline)
       : o.wait           ? cli_alter_wait(&o, kc, deadline)
                          : cli_alter(&o, kc, deadline);
out:
  dc_kclient_destroy(kc);
  free(o.ops);
  dc_arena_free(&o.arena);
  dc_client_props_free(&o.props);
  return rc;
}
