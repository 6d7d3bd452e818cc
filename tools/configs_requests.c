/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: the requests. cli_call() is the plumbing every command
 * shares (pick a version, encode, send, decode, report); cli_connect()
 * the connection and ApiVersions; then --describe and --alter. Messages
 * and output go through configs_util.c.
 */
#include "configs.h"

#include "common/clock.h"
#include "common/json.h"
#include "common/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the deadline ----------------------------------------------------- */

int cli_remaining_ms(int64_t deadline) {
  int64_t left = deadline - dc_mono_ms();
  return left < 1 ? 1 : left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* ---- the plumbing every request shares -------------------------------- */

/* Prints a transport-level failure; a time-out is reported against the
 * whole --timeout-ms budget rather than the remainder a step was given. */
static void fail_request(const opts_t *o, dc_kclient_t *kc, dc_err_t err,
                         const char *api, const char *errstr) {
  if (err == DC_ERR__TIMED_OUT && o->replica_limit_ms)
    cli_fail("no %s response from %s within %d ms (the limit for one "
             "replica of several)", api, dc_kclient_peer(kc),
             o->replica_limit_ms);
  else if (err == DC_ERR__TIMED_OUT)
    cli_fail("no %s response from %s within %d ms (--timeout-ms)", api,
             dc_kclient_peer(kc)[0] ? dc_kclient_peer(kc) : o->bootstrap,
             o->timeout_ms);
  else if (err == DC_ERR__TRANSPORT &&
           !(o->props.sec.protocol && strcasestr(o->props.sec.protocol, "SASL")))
    /* What a SASL listener does to an unauthenticated request. */
    cli_fail("%s (if it is a SASL listener, authenticate with "
             "--command-config)", errstr);
  else
    cli_fail("%s", errstr);
}

int cli_call(const opts_t *o, dc_kclient_t *kc, int64_t deadline,
             const cli_api_t *api, const void *req, void *resp) {
  int16_t v = dc_kclient_pick_version(kc, api->key);
  if (v < 0) {
    cli_fail("the server at %s does not support %s (API key %d)%s",
             dc_kclient_peer(kc), api->name, api->key, api->unsupported);
    return EXIT_FAIL;
  }
  dc_arena_t arena; /* the response body and what decoding allocates */
  dc_arena_init(&arena);
  char errstr[512];
  dc_rd_t rd;
  int rc = EXIT_FAIL;
  dc_err_t err =
      dc_kclient_request(kc, api->key, v, api->encode, req,
                         cli_remaining_ms(deadline), &rd, &arena, errstr,
                         sizeof(errstr));
  if (err)
    fail_request(o, kc, err, api->name, errstr);
  else if (api->decode(&rd, v, resp))
    cli_fail("malformed %s v%d response from %s: %s", api->name, v,
             dc_kclient_peer(kc), dc_err_str((dc_err_t)rd.err));
  else
    rc = api->report(o, kc, v, resp);
  dc_arena_free(&arena);
  return rc;
}

int cli_connect(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  char errstr[1024];
  if (o->command_config &&
      dc_kclient_set_security(kc, &o->props.sec, errstr, sizeof(errstr))) {
    cli_usage_error("--command-config %s: %s", o->command_config, errstr);
    return EXIT_USAGE;
  }
  dc_err_t err =
      dc_kclient_connect(kc, o->bootstrap, cli_remaining_ms(deadline), errstr,
                         sizeof(errstr));
  if (err == DC_ERR__TIMED_OUT) {
    cli_fail("cannot connect to %s within %d ms (--timeout-ms)", o->bootstrap,
             o->timeout_ms);
    return EXIT_FAIL;
  }
  if (err == DC_ERR__INVALID_ARG) {
    cli_usage_error("%s", errstr);
    return EXIT_USAGE;
  }
  if (err) {
    cli_fail("%s", errstr);
    return EXIT_FAIL;
  }
  err = dc_kclient_api_versions(kc, cli_remaining_ms(deadline), errstr,
                                sizeof(errstr));
  if (err == DC_ERR__TRANSPORT &&
      !(o->props.sec.protocol && strcasestr(o->props.sec.protocol, "SSL"))) {
    /* A TLS listener drops a plaintext request without a word. */
    cli_fail("%s (if it is a TLS listener, set security.protocol=SSL or "
             "SASL_SSL with --command-config)", errstr);
    return EXIT_FAIL;
  }
  if (err) {
    fail_request(o, kc, err, "ApiVersions", errstr);
    return EXIT_FAIL;
  }
  return -1;
}

/* ---- the entity's result ---------------------------------------------- */

int8_t cli_wire_type(const opts_t *o) {
  return o->entity_type == ENT_BROKERS ? DC_RES_BROKER
         : o->entity_type == ENT_USERS ? DC_RES_USER
                                       : DC_RES_CLIENT;
}

/* Whether a per-resource result is the entity's. */
static bool is_entity(const opts_t *o, int8_t type, const char *name) {
  return type == cli_wire_type(o) && name && !strcmp(name, o->entity_name);
}

/* EXIT_OK when the response had a result for the entity (found) without
 * an error; else EXIT_FAIL after saying which. `tail` ends the sentence
 * saying the response does not mention the entity. */
static int entity_outcome(const opts_t *o, dc_kclient_t *kc, const char *api,
                          const char *tail, bool found, int16_t code,
                          const char *message) {
  if (!found) {
    char who[600];
    cli_entity_phrase(o, who, sizeof(who));
    cli_fail("the %s response from %s does not mention %s%s", api,
             dc_kclient_peer(kc), who, tail);
    return EXIT_FAIL;
  }
  return cli_check_error(code, message);
}

/* ---- --describe ------------------------------------------------------- */

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

static int cmp_entry(const void *a, const void *b) {
  const dc_describe_configs_entry_t *x = *(dc_describe_configs_entry_t *const *)a;
  const dc_describe_configs_entry_t *y = *(dc_describe_configs_entry_t *const *)b;
  return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* The source of the entity's own values (the others are inherited). */
static int own_source(const opts_t *o) {
  bool is_default_entity =
      o->entity_type == ENT_CLIENTS && dc_entity_is_default(o->entity_name);
  return is_default_entity             ? DC_SRC_DYNAMIC_DEFAULT
         : o->entity_type != ENT_USERS ? DC_SRC_DYNAMIC_CLIENT
         : o->client                   ? DC_SRC_DYNAMIC_USER_CLIENT
                                       : DC_SRC_DYNAMIC_USER;
}

/* The entries to show, into sel (room for all), sorted by name; their
 * count. v0 has no source byte: derived from is_default. Without --all,
 * an entity's value shadowed by a level above is shown from its synonym. */
static size_t select_entries(const opts_t *o, dc_describe_configs_result_t *res,
                             int16_t v, dc_describe_configs_entry_t **sel) {
  int own_src = own_source(o);
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
  return n;
}

/* --describe --json: the entity and its configs, one object. */
static void put_describe_json(dc_buf_t *b, const opts_t *o,
                              dc_describe_configs_entry_t *const *sel,
                              size_t n) {
  char sbuf[32];
  dc_buf_printf(b, "{");
  cli_json_entity(b, o);
  dc_buf_printf(b, ",\"configs\":[");
  for (size_t i = 0; i < n; i++) {
    const dc_describe_configs_entry_t *e = sel[i];
    dc_buf_printf(b, "%s{\"name\":", i ? "," : "");
    dc_json_str(b, e->name);
    dc_buf_printf(b, ",\"value\":");
    dc_json_str(b, e->value);
    dc_buf_printf(b, ",\"source\":");
    dc_json_str(b, source_name(e->config_source, sbuf, sizeof(sbuf)));
    dc_buf_printf(b, ",\"read_only\":%s,\"sensitive\":%s,\"synonyms\":[",
                  e->read_only ? "true" : "false",
                  e->is_sensitive ? "true" : "false");
    for (int32_t j = 0; j < e->n_synonyms; j++) {
      const dc_describe_configs_synonym_t *s = &e->synonyms[j];
      dc_buf_printf(b, "%s{\"name\":", j ? "," : "");
      dc_json_str(b, s->name);
      dc_buf_printf(b, ",\"value\":");
      dc_json_str(b, s->value);
      dc_buf_printf(b, ",\"source\":");
      dc_json_str(b, source_name(s->source, sbuf, sizeof(sbuf)));
      dc_buf_printf(b, "}");
    }
    dc_buf_printf(b, "]}");
  }
  dc_buf_printf(b, "]}\n");
}

/* --describe as text, like kafka-configs.sh: a heading, a line a config. */
static void put_describe_text(dc_buf_t *b, const opts_t *o,
                              dc_describe_configs_entry_t *const *sel,
                              size_t n) {
  char sbuf[32];
  char who[600];
  cli_entity_phrase(o, who, sizeof(who));
  const char *kind = o->all ? "All configs"
                     : o->entity_type == ENT_BROKERS ? "Configs"
                                                     : "Dynamic configs";
  dc_buf_printf(b, "%s for %s are:\n", kind, who);
  for (size_t i = 0; i < n; i++) {
    const dc_describe_configs_entry_t *e = sel[i];
    dc_buf_printf(b, "  %s=%s", e->name, e->value ? e->value : "null");
    if (o->all)
      dc_buf_printf(b, " source=%s",
                    source_name(e->config_source, sbuf, sizeof(sbuf)));
    dc_buf_printf(b, " sensitive=%s synonyms={",
                  e->is_sensitive ? "true" : "false");
    for (int32_t j = 0; j < e->n_synonyms; j++) {
      const dc_describe_configs_synonym_t *s = &e->synonyms[j];
      dc_buf_printf(b, "%s%s:%s=%s", j ? ", " : "",
                    source_name(s->source, sbuf, sizeof(sbuf)),
                    s->name ? s->name : "", s->value ? s->value : "null");
    }
    dc_buf_printf(b, "}\n");
  }
}

/* Prints the entity's configs (its own, or with --all every one that
 * applies) as text or JSON; v0 responses have no source: derived. */
static int print_describe(const opts_t *o, dc_describe_configs_result_t *res,
                          int16_t v) {
  dc_describe_configs_entry_t **sel =
      calloc(res->n_configs > 0 ? (size_t)res->n_configs : 1, sizeof(*sel));
  if (!sel) {
    cli_fail("out of memory");
    return EXIT_FAIL;
  }
  size_t n = select_entries(o, res, v, sel);
  dc_buf_t b;
  dc_buf_init(&b);
  if (o->json)
    put_describe_json(&b, o, sel, n);
  else
    put_describe_text(&b, o, sel, n);
  free(sel);
  int rc = cli_flush_out(&b);
  dc_buf_free(&b);
  return rc;
}


static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

static int dec_describe(dc_rd_t *rd, int16_t v, void *resp) {
  return dc_describe_configs_resp_decode(rd, v, resp);
}

static int report_describe(const opts_t *o, dc_kclient_t *kc, int16_t v,
                           void *resp) {
  dc_describe_configs_resp_t *r = resp;
  dc_describe_configs_result_t *res = NULL;
  for (int32_t i = 0; i < r->n_results && !res; i++)
    if (is_entity(o, r->results[i].resource_type, r->results[i].resource_name))
      res = &r->results[i];
  int rc = entity_outcome(o, kc, "DescribeConfigs", "", res != NULL,
                          res ? res->error_code : 0,
                          res ? res->error_message : NULL);
  return rc == EXIT_OK ? print_describe(o, res, v) : rc;
}

void cli_describe_req(const opts_t *o, dc_describe_configs_req_resource_t *r,
                      dc_describe_configs_req_t *req) {
  *r = (dc_describe_configs_req_resource_t){
      .resource_type = cli_wire_type(o),
      .resource_name = (char *)o->entity_name,
      .n_configuration_keys = -1,
  };
  *req = (dc_describe_configs_req_t){
      .n_resources = 1, .resources = r, .include_synonyms = true};
}

int cli_describe(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  static const cli_api_t api = {
      .key = DC_API_DESCRIBE_CONFIGS,
      .name = "DescribeConfigs",
      .unsupported = " in any version this tool speaks",
      .encode = enc_describe,
      .decode = dec_describe,
      .report = report_describe,
  };
  dc_describe_configs_req_resource_t r;
  dc_describe_configs_req_t req;
  cli_describe_req(o, &r, &req);
  dc_describe_configs_resp_t resp;
  return cli_call(o, kc, deadline, &api, &req, &resp);
}

/* ---- --alter ---------------------------------------------------------- */

static int enc_incremental(dc_buf_t *b, int16_t v, const void *req) {
  return dc_incremental_alter_configs_req_encode(b, v, req);
}

static int dec_incremental(dc_rd_t *rd, int16_t v, void *resp) {
  return dc_incremental_alter_configs_resp_decode(rd, v, resp);
}

/* NOT_CONTROLLER (replicas electing a writer, or the writer changing
 * while the alter was forwarded) is retried, as Kafka's admin client
 * does, every RETRY_MS until alter_deadline; report_alter then returns
 * ALTER_RETRY without printing. */
#define RETRY_MS 250
enum { ALTER_RETRY = 100 };
static int64_t alter_deadline;

static int report_alter(const opts_t *o, dc_kclient_t *kc, int16_t v,
                        void *resp) {
  (void)v;
  dc_alter_configs_resp_t *r = resp;
  dc_alter_result_t *res = NULL;
  for (int32_t i = 0; i < r->n_responses && !res; i++)
    if (is_entity(o, r->responses[i].resource_type,
                  r->responses[i].resource_name))
      res = &r->responses[i];
  if (res && res->error_code == DC_ERR_NOT_CONTROLLER &&
      cli_remaining_ms(alter_deadline) > 2 * RETRY_MS)
    return ALTER_RETRY;
  int rc = entity_outcome(o, kc, "IncrementalAlterConfigs",
                          "; the change may or may not have been applied",
                          res != NULL, res ? res->error_code : 0,
                          res ? res->error_message : NULL);
  if (rc != EXIT_OK)
    return rc;
  char who[600];
  cli_entity_phrase(o, who, sizeof(who));
  dc_buf_t b;
  dc_buf_init(&b);
  if (o->json) {
    dc_buf_printf(&b, "{");
    cli_json_entity(&b, o);
    dc_buf_printf(&b, ",\"dry_run\":%s,\"result\":\"ok\"}\n",
                  o->dry_run ? "true" : "false");
  } else if (o->dry_run) {
    dc_buf_printf(&b, "Validated config for %s (dry run, nothing changed).\n",
                  who);
  } else {
    dc_buf_printf(&b, "Completed updating config for %s.\n", who);
  }
  rc = cli_flush_out(&b);
  dc_buf_free(&b);
  return rc;
}

int cli_alter(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  static const cli_api_t api = {
      .key = DC_API_INCREMENTAL_ALTER_CONFIGS,
      .name = "IncrementalAlterConfigs",
      .unsupported = ", which --alter needs; is it a dynconfd?",
      .encode = enc_incremental,
      .decode = dec_incremental,
      .report = report_alter,
  };
  dc_alter_resource_t r = {
      .resource_type = cli_wire_type(o),
      .resource_name = (char *)o->entity_name,
      .n_configs = (int32_t)o->n_ops,
      .configs = o->ops,
  };
  dc_alter_configs_req_t req = {
      .n_resources = 1, .resources = &r, .validate_only = o->dry_run};
  dc_alter_configs_resp_t resp;
  alter_deadline = deadline;
  int rc;
  while ((rc = cli_call(o, kc, deadline, &api, &req, &resp)) == ALTER_RETRY) {
    struct timespec ts = {0, RETRY_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
  return rc;
}
