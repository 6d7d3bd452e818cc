/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs --alter --wait, step 1: every replica shows the change.
 * A replica of the Kafka-topic store applies an alter from its log a
 * moment after the writer acknowledged it; until it shows the change, its
 * fleet would be judged against the old configuration. Step 2, the
 * clients applying it, is in configs_fleet.c.
 */
#include "configs.h"

#include "common/clock.h"

#include <string.h>
#include <time.h>

/* Sleeps *pause_ms (then doubles it, up to POLL_MS) and returns true when
 * another poll fits before the deadline; else returns false at once. */
bool cli_pause_poll(int64_t deadline, int *pause_ms) {
  if (deadline - dc_mono_ms() <= *pause_ms)
    return false;
  struct timespec ts = {0, *pause_ms * 1000000L};
  nanosleep(&ts, NULL);
  *pause_ms = *pause_ms * 2 < POLL_MS ? *pause_ms * 2 : POLL_MS;
  return true;
}

/* The source of the entity's own values, as --describe picks it. */
static int own_source(const opts_t *o) {
  if (o->entity_type == ENT_USERS)
    return o->client ? DC_SRC_DYNAMIC_USER_CLIENT : DC_SRC_DYNAMIC_USER;
  return dc_entity_is_default(o->entity_name) ? DC_SRC_DYNAMIC_DEFAULT
                                              : DC_SRC_DYNAMIC_CLIENT;
}

/* Whether item (len bytes) is one of list's comma-separated items;
 * blanks around items do not count. */
static bool list_has(const char *list, const char *item, size_t len) {
  while (*list) {
    const char *end = strchr(list, ',');
    size_t n = end ? (size_t)(end - list) : strlen(list);
    while (n && *list == ' ')
      list++, n--;
    while (n && list[n - 1] == ' ')
      n--;
    if (n == len && !memcmp(list, item, len))
      return true;
    if (!end)
      break;
    list = end + 1;
  }
  return false;
}

/* Whether each item of items is in list (want) or absent from it (!want).
 * A hidden (NULL) list cannot be checked: it counts as shown. */
static bool items_are(const char *items, const char *list, bool want) {
  if (!list)
    return true;
  while (*items) {
    while (*items == ' ')
      items++;
    size_t n = strcspn(items, ",");
    size_t t = n;
    while (t && items[t - 1] == ' ')
      t--;
    if (t && list_has(list, items, t) != want)
      return false;
    items += n + (items[n] == ',');
  }
  return true;
}

/* Whether the entity's own value of the op's key (set says whether it has
 * one; value NULL when hidden) shows the op done. */
static bool op_shown(const dc_alter_config_t *op, bool set,
                     const char *value) {
  switch (op->op) {
  case DC_OP_SET:
    return set && (!value || !strcmp(value, op->value));
  case DC_OP_DELETE:
    return !set;
  case DC_OP_APPEND:
    return set && items_are(op->value, value, true);
  case DC_OP_SUBTRACT:
    return !set || items_are(op->value, value, false);
  }
  return true;
}

/* The entity's own value of key in the result: the entry's when it is
 * the entity's, else its synonym at the entity's level (a level above may
 * shadow it). False when the entity does not set the key. */
static bool own_value(const dc_describe_configs_result_t *res, int16_t v,
                      int own, const char *key, const char **value) {
  for (int32_t i = 0; i < res->n_configs; i++) {
    const dc_describe_configs_entry_t *e = &res->configs[i];
    if (!e->name || strcmp(e->name, key))
      continue;
    if (v == 0 ? !e->is_default : e->config_source == own) {
      *value = e->value;
      return true;
    }
    for (int32_t j = 0; j < e->n_synonyms; j++)
      if (e->synonyms[j].source == own) {
        *value = e->synonyms[j].value;
        return true;
      }
  }
  return false;
}

typedef struct shown_call {
  dc_describe_configs_resp_t resp;
  bool shown;
} shown_call_t;

static int enc_describe(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_configs_req_encode(b, v, req);
}

static int dec_describe(dc_rd_t *rd, int16_t v, void *resp) {
  return dc_describe_configs_resp_decode(rd, v, &((shown_call_t *)resp)->resp);
}

/* Sets shown when every op of --alter shows in the entity's configs. */
static int report_shown(const opts_t *o, dc_kclient_t *kc, int16_t v,
                        void *resp) {
  shown_call_t *call = resp;
  const dc_describe_configs_result_t *res = NULL;
  for (int32_t i = 0; i < call->resp.n_results && !res; i++)
    if (call->resp.results[i].resource_type == cli_wire_type(o) &&
        call->resp.results[i].resource_name &&
        !strcmp(call->resp.results[i].resource_name, o->entity_name))
      res = &call->resp.results[i];
  if (!res) {
    cli_fail("the DescribeConfigs response from %s does not mention the "
             "entity just altered",
             dc_kclient_peer(kc));
    return EXIT_FAIL;
  }
  if (cli_check_error(res->error_code, res->error_message) != EXIT_OK)
    return EXIT_FAIL;
  call->shown = true;
  for (size_t i = 0; i < o->n_ops && call->shown; i++) {
    const char *value = NULL;
    bool set = own_value(res, v, own_source(o), o->ops[i].name, &value);
    call->shown = op_shown(&o->ops[i], set, value);
  }
  return EXIT_OK;
}

/* Polls DescribeConfigs on replica i until it shows the change. EXIT_OK,
 * or EXIT_WAIT_TIMEOUT / EXIT_FAIL said. */
static int wait_shown(const opts_t *o, cli_replicas_t *reps, int i,
                      int64_t deadline) {
  dc_kclient_t *kc = reps->kc[i];
  static const cli_api_t api = {
      .key = DC_API_DESCRIBE_CONFIGS,
      .name = "DescribeConfigs",
      .unsupported = ", which --wait needs",
      .encode = enc_describe,
      .decode = dec_describe,
      .report = report_shown,
  };
  dc_describe_configs_req_resource_t r;
  dc_describe_configs_req_t req;
  cli_describe_req(o, &r, &req);
  shown_call_t call = {.shown = false};
  int pause_ms = POLL_FIRST_MS;
  do {
    opts_t co;
    int64_t d = cli_replica_deadline(reps, deadline, o, &co);
    int rc = cli_call(&co, kc, d, &api, &req, &call);
    if (rc != EXIT_OK)
      return dc_mono_ms() >= deadline ? EXIT_WAIT_TIMEOUT : rc;
    if (call.shown)
      return EXIT_OK;
  } while (cli_pause_poll(deadline, &pause_ms));
  cli_fail("the server at %s still does not show the change after %d ms "
           "(--timeout-ms)",
           dc_kclient_peer(kc), o->timeout_ms);
  return EXIT_WAIT_TIMEOUT;
}

/* Every replica shows the change before its fleet is judged: each judges
 * its clients against the configuration it resolves itself. A server
 * that is the only replica made the change itself before it answered. */
int cli_wait_shown(const opts_t *o, cli_replicas_t *reps, int64_t deadline) {
  if (reps->alone)
    return EXIT_OK;
  for (int i = 0; i < reps->n;) {
    int rc = wait_shown(o, reps, i, deadline);
    if (rc == EXIT_OK)
      i++;
    else if (rc != EXIT_FAIL || !cli_replicas_drop(reps, i))
      return rc;
  }
  return EXIT_OK;
}
