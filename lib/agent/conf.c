/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's configuration: one table of dynconf.* properties. */
#include "agent/agent_int.h"
#include "common/schema.h"
#include "common/text.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { P_STR, P_INT, P_BOOL } prop_type_t;

static const struct prop {
  const char *name;
  prop_type_t type;
  size_t offset;
  int min, max;
  const char *def;
  const char *desc;
} props[] = {
#define O(f) offsetof(dynconf_conf_t, f)
    {"dynconf.bootstrap.servers", P_STR, O(bootstrap_servers), 0, 0, "",
     "dynconfd address(es); empty = the application's bootstrap.servers"},
    {"dynconf.client.id", P_STR, O(client_id), 0, 0, "",
     "entity to fetch; empty = the application's client.id"},
    {"dynconf.refresh.interval.ms", P_INT, O(refresh_interval_ms), -1,
     86400000, "-1",
     "re-fetch interval; -1 = the application's "
     "topic.metadata.refresh.interval.ms"},
    {"dynconf.startup.timeout.ms", P_INT, O(startup_timeout_ms), 1, 3600000,
     "10000", "bound on the synchronous first fetch in dynconf_new()"},
    {"dynconf.startup.required", P_BOOL, O(startup_required), 0, 1, "false",
     "true: dynconf_new() fails when the first fetch fails (fail-closed)"},
    {"dynconf.allow.keys", P_STR, O(allow_keys), 0, 0,
     "acks,session.timeout.ms,heartbeat.interval.ms",
     "the only keys ever applied (comma-separated schema keys)"},
    {"dynconf.resource.type", P_INT, O(resource_type), 0, 127, "9",
     "ConfigResource type byte of the CLIENT resource"},
    {"dynconf.request.timeout.ms", P_INT, O(request_timeout_ms), 10, 3600000,
     "10000", "timeout of one DescribeConfigs request"},
    {"dynconf.retry.backoff.ms", P_INT, O(retry_backoff_ms), 1, 3600000,
     "1000", "first retry delay after a failed fetch (doubles per failure)"},
    {"dynconf.retry.backoff.max.ms", P_INT, O(retry_backoff_max_ms), 1,
     86400000, "60000", "cap on the retry delay"},
    {"dynconf.unsupported.reprobe.ms", P_INT, O(unsupported_reprobe_ms), 1000,
     86400000, "600000",
     "re-probe interval when the server has no CLIENT configs"},
    {"dynconf.refresh.jitter.pct", P_INT, O(jitter_pct), 0, 50, "10",
     "each interval is shortened by a random 0..N% so a fleet does not poll "
     "in step"},
    {"dynconf.log.level", P_INT, O(log_level), 0, 7, "6",
     "syslog level: logs above it are dropped"},
    {"dynconf.producer.max.block.ms", P_INT, O(producer_max_block_ms), 0,
     3600000, "60000",
     "managed producer: longest a produce call waits for an ordered switch"},
    {"dynconf.producer.close.timeout.ms", P_INT, O(producer_close_timeout_ms),
     0, 3600000, "30000",
     "managed producer: flush time granted in dynconf_producer_destroy()"},
    {"dynconf.ssl.check.interval.ms", P_INT, O(ssl_check_interval_ms), 0,
     86400000, "10000",
     "how often the application's ssl.certificate.location, ssl.key.location "
     "and ssl.ca.location files are checked for a rotation (SSL and SASL_SSL "
     "only); 0 = never"},
    {"dynconf.apply.live", P_BOOL, O(apply_live), 0, 1, "true",
     "true: the application applies accepted changes while it runs (managed "
     "clients, or its own rebuild); false: it takes the configuration only "
     "when it creates its client (the librdkafka plugin), and a change "
     "accepted later is reported to the fleet as restart needed, with the "
     "values that would apply"},
    {"dynconf.log.queue", P_BOOL, O(log_queue), 0, 1, "true",
     "true: log lines wait for dynconf_poll(), which calls the log callback "
     "on the application's thread; false: the agent's thread calls it as "
     "lines come (the callback must then be thread-safe)"},
    {"dynconf.software.name", P_STR, O(software_name), 1, 64, "dynconf-agent",
     "the name of the software this agent reports to the fleet with its "
     "version (the plugin reports dynconf-plugin)"},
    {"dynconf.client.library", P_STR, O(client_library), 0, 64, "",
     "the client library reported to the fleet; empty = librdkafka and the "
     "version this agent runs with (a binding's own librdkafka copy sets its "
     "version here)"},
    {"dynconf.watch", P_BOOL, O(watch), 0, 1, "true",
     "between fetches, wait for changes with the server's Watch (pushed in "
     "milliseconds) when it offers it; false = poll only"},
#define SEC_PROP_(id, name)                                                    \
  {"dynconf." name, P_STR, O(sec[DC_SEC_##id]), 0, 0, "",                     \
   "the agent's own connection to the config server: overrides the "          \
   "application's " name "; empty = the application's"},
    DC_SEC_PROPS(SEC_PROP_)
#undef SEC_PROP_
#undef O
};

static const struct prop *find(const char *name) {
  if (!strcmp(name, "dynconf.sasl.mechanism")) /* librdkafka's alias */
    name = "dynconf.sasl.mechanisms";
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
    if (!strcmp(props[i].name, name))
      return &props[i];
  return NULL;
}

static dynconf_conf_res_t set_prop(dynconf_conf_t *c, const struct prop *p,
                                   const char *value, char *errstr,
                                   size_t errstr_size) {
  void *field = (char *)c + p->offset;
  int64_t v;
  switch (p->type) {
  case P_STR: {
    if (!strcmp(p->name, "dynconf.allow.keys")) {
      dc_allow_t a;
      if (dc_allow_parse(value, &a, errstr, errstr_size))
        return DYNCONF_CONF_INVALID;
    }
    if (p->max && (strlen(value) < (size_t)p->min ||
                   strlen(value) > (size_t)p->max)) {
      dc_seterr(errstr, errstr_size, "%s must be %d to %d characters long, "
               "not %zu", p->name, p->min, p->max, strlen(value));
      return DYNCONF_CONF_INVALID;
    }
    char *d = strdup(value);
    if (!d) {
      dc_seterr(errstr, errstr_size, "out of memory");
      return DYNCONF_CONF_INVALID;
    }
    free(*(char **)field);
    *(char **)field = d;
    return DYNCONF_CONF_OK;
  }
  case P_INT:
    if (!dc_parse_int64(value, &v) || v < p->min || v > p->max) {
      dc_seterr(errstr, errstr_size, "%s must be an integer in %d..%d, not \"%s\"",
               p->name, p->min, p->max, value);
      return DYNCONF_CONF_INVALID;
    }
    *(int *)field = (int)v;
    return DYNCONF_CONF_OK;
  case P_BOOL:
    if (strcmp(value, "true") && strcmp(value, "false")) {
      dc_seterr(errstr, errstr_size, "%s must be true or false, not \"%s\"",
               p->name, value);
      return DYNCONF_CONF_INVALID;
    }
    *(int *)field = !strcmp(value, "true");
    return DYNCONF_CONF_OK;
  }
  return DYNCONF_CONF_INVALID;
}

int dc_conf_init_defaults(dynconf_conf_t *c) {
  char err[256];
  memset(c, 0, sizeof(*c));
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
    if (set_prop(c, &props[i], props[i].def, err, sizeof(err)))
      return -1;
  return 0;
}

void dc_conf_free_fields(dynconf_conf_t *c) {
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
    if (props[i].type == P_STR) {
      char **f = (char **)((char *)c + props[i].offset);
      free(*f);
      *f = NULL;
    }
}

dynconf_conf_t *dynconf_conf_new(void) {
  dynconf_conf_t *c = malloc(sizeof(*c));
  if (c && dc_conf_init_defaults(c)) {
    dc_conf_free_fields(c);
    free(c);
    return NULL;
  }
  return c;
}

void dynconf_conf_destroy(dynconf_conf_t *c) {
  if (!c)
    return;
  dc_conf_free_fields(c);
  free(c);
}

dynconf_conf_t *dynconf_conf_dup(const dynconf_conf_t *src) {
  dynconf_conf_t *c = malloc(sizeof(*c));
  if (!c)
    return NULL;
  *c = *src;
  bool oom = false;
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
    if (props[i].type == P_STR) {
      char **f = (char **)((char *)c + props[i].offset);
      *f = *f ? strdup(*f) : NULL;
      oom |= !*f;
    }
  if (oom) {
    dynconf_conf_destroy(c);
    return NULL;
  }
  return c;
}

dynconf_conf_res_t dynconf_conf_set(dynconf_conf_t *c, const char *name,
                                    const char *value, char *errstr,
                                    size_t errstr_size) {
  const struct prop *p = find(name);
  if (!p) {
    dc_seterr(errstr, errstr_size, "No such configuration property: \"%s\"",
             name);
    return DYNCONF_CONF_UNKNOWN;
  }
  if (!value) {
    dc_seterr(errstr, errstr_size, "%s: value must not be NULL", name);
    return DYNCONF_CONF_INVALID;
  }
  return set_prop(c, p, value, errstr, errstr_size);
}

dynconf_conf_res_t dynconf_conf_get(const dynconf_conf_t *c, const char *name,
                                    char *dest, size_t *dest_size) {
  const struct prop *p = find(name);
  if (!p)
    return DYNCONF_CONF_UNKNOWN;
  const void *field = (const char *)c + p->offset;
  char tmp[32];
  const char *v = tmp;
  if (p->type == P_STR)
    v = *(char *const *)field;
  else if (p->type == P_BOOL)
    v = *(const int *)field ? "true" : "false";
  else
    snprintf(tmp, sizeof(tmp), "%d", *(const int *)field);
  size_t need = strlen(v) + 1;
  if (dest && *dest_size > 0)
    snprintf(dest, *dest_size, "%s", v);
  *dest_size = need;
  return DYNCONF_CONF_OK;
}

void dynconf_conf_properties_show(FILE *fp) {
  fprintf(fp, "| property | default | description |\n|---|---|---|\n");
  for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
    fprintf(fp, "| `%s` | `%s` | %s |\n", props[i].name, props[i].def,
            props[i].desc);
}

void dynconf_conf_set_change_cb(dynconf_conf_t *c, dynconf_change_cb_t *cb) {
  c->change_cb = cb;
}
void dynconf_conf_set_log_cb(dynconf_conf_t *c, dynconf_log_cb_t *cb) {
  c->log_cb = cb;
}
void dynconf_conf_set_opaque(dynconf_conf_t *c, void *opaque) {
  c->opaque = opaque;
}

void dynconf_conf_set_oauthbearer_token_refresh_cb(
    dynconf_conf_t *c, dynconf_oauthbearer_token_refresh_cb_t *cb) {
  c->oauth_refresh_cb = cb;
}
