/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's ClientReport (dynconfd's API 20002): after each change set
 * it judged, the agent tells the server on its own connection what it did
 * with which configuration version (applied, applied partly, rejected and
 * why), what it is and runs, so dynconfd's fleet view can say who is up to
 * date. A report goes out when something in it changed or the connection
 * is new; a server that does not list ClientReport is not asked.
 */
#include "config.h"
#include "agent/agent_int.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/text.h"

#include <stdio.h>
#include <string.h>

/* Appends "sep key=value (reason)" to buf (a pinned key's reason names
 * the value requested), or says how many more did not fit. */
static void note(char *buf, size_t size, const char *sep,
                 const dc_event_entry_t *e, int *left_out) {
  size_t used = strlen(buf);
  char one[600];
  if (e->outcome == DYNCONF_OUTCOME_PINNED && e->reason)
    snprintf(one, sizeof(one), "%s%s", used ? sep : "", e->reason);
  else
    snprintf(one, sizeof(one), "%s%s=%s%s%s%s", used ? sep : "", e->key,
             e->new_value ? e->new_value : "(app)", e->reason ? " (" : "",
             e->reason ? e->reason : "", e->reason ? ")" : "");
  if (used + strlen(one) + 24 < size)
    memcpy(buf + used, one, strlen(one) + 1);
  else
    (*left_out)++;
}

/* A client that takes its configuration only at creation runs with the
 * values it started with: when they differ from the effective ones now,
 * the report says restart needed and lists what would apply, ahead of
 * the notes of the change set. */
static void restart_note_locked(dynconf_t *dc, dc_agent_report_state_t *s) {
  char list[sizeof(s->reason)] = "";
  int differ = 0, more = 0;
  for (size_t i = 0; i < dc->allow.n; i++) {
    const char *now = dc->eff.value[i], *then = dc->start_eff.value[i];
    if ((!now && !then) || (now && then && !strcmp(now, then)))
      continue;
    char one[sizeof(list)];
    size_t used = strlen(list);
    snprintf(one, sizeof(one), "%s%s=%s", used ? "; " : "",
             dc->allow.keys[i], now ? now : "(app)");
    if (used + strlen(one) + 24 < sizeof(list))
      memcpy(list + used, one, strlen(one) + 1);
    else
      more++;
    differ++;
  }
  if (!differ)
    return;
  if (more) {
    size_t used = strlen(list);
    snprintf(list + used, sizeof(list) - used, "; and %d more", more);
  }
  char all[3 * sizeof(s->reason)];
  int n = snprintf(all, sizeof(all), "after a restart: %s%s%s", list,
                   *s->reason ? "; " : "", s->reason);
  if (n >= (int)sizeof(s->reason)) /* said so, never cut silently */
    snprintf(all + sizeof(s->reason) - 16, 16, "; and more");
  memcpy(s->reason, all, strlen(all) + 1);
  s->outcome = DC_OUTCOME_RESTART;
}

void dc_agent_report_state_locked(dynconf_t *dc, const dynconf_event_t *ev) {
  dc_agent_report_state_t *s = &dc->report;
  int left_out = 0;
  s->reason[0] = '\0';
  s->outcome = ev->accepted ? DC_OUTCOME_APPLIED : DC_OUTCOME_REJECTED;
  for (size_t i = 0; i < ev->n; i++) {
    const dc_event_entry_t *e = &ev->entries[i];
    bool partly = e->outcome == DYNCONF_OUTCOME_PINNED ||
                  e->outcome == DYNCONF_OUTCOME_IGNORED;
    if (ev->accepted && partly)
      s->outcome = DC_OUTCOME_PARTLY;
    if (partly || (!ev->accepted && e->reason))
      note(s->reason, sizeof(s->reason), "; ", e, &left_out);
  }
  if (left_out) {
    size_t used = strlen(s->reason);
    snprintf(s->reason + used, sizeof(s->reason) - used, "; and %d more",
             left_out);
  }
  if (ev->accepted && !dc->conf.apply_live && dc->started)
    restart_note_locked(dc, s);
}

static int enc_report(dc_buf_t *b, int16_t v, const void *req) {
  return dc_client_report_req_encode(b, v, req);
}

/* The request for version from what the agent holds now. */
static void fill(dynconf_t *dc, int64_t version, dc_client_report_req_t *q,
                 char *reason, size_t reason_size, char *lib,
                 size_t lib_size) {
  pthread_mutex_lock(&dc->lock);
  *q = (dc_client_report_req_t){
      .client_id = dc->client_id, .instance_id = dc->instance_id,
      .kind = dc->type == RD_KAFKA_CONSUMER ? "consumer" : "producer",
      .software_name = dc->conf.software_name,
      .software_version = PACKAGE_VERSION,
      .client_library = lib, .version = version,
      .generation = dc->generation, .outcome = dc->report.outcome,
      .reason = reason};
  snprintf(reason, reason_size, "%s", dc->report.reason);
  pthread_mutex_unlock(&dc->lock);
  if (*dc->conf.client_library)
    snprintf(lib, lib_size, "%s%s%s", dc->conf.client_library,
             *dc->app_software ? " " : "", dc->app_software);
  else
    snprintf(lib, lib_size, "librdkafka/%s%s%s", rd_kafka_version_str(),
             *dc->app_software ? " " : "", dc->app_software);
  if (!*reason)
    q->reason = NULL;
}

/* Whether q says nothing the server has from this connection already. */
static bool already_said(const dc_agent_conn_t *c,
                         const dc_client_report_req_t *q) {
  return c->report_conn == c->conn_seq && c->report_version == q->version &&
         c->report_generation == q->generation &&
         c->report_outcome == q->outcome;
}

bool dc_agent_report(dynconf_t *dc, int64_t version) {
  dc_agent_conn_t *c = &dc->conn;
  if (!dc_kclient_connected(c->kc) ||
      dc_kclient_pick_version(c->kc, DC_API_CLIENT_REPORT) != 0)
    return true;
  dc_client_report_req_t q;
  char reason[sizeof(dc->report.reason)], lib[sizeof(dc->app_software) + 48];
  fill(dc, version, &q, reason, sizeof(reason), lib, sizeof(lib));
  if (already_said(c, &q))
    return true;
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  char errstr[512];
  dc_client_report_resp_t resp;
  dc_err_t err = dc_kclient_request(c->kc, DC_API_CLIENT_REPORT, 0, enc_report,
                                    &q, dc->conf.request_timeout_ms, &rd,
                                    &arena, errstr, sizeof(errstr));
  if (!err && dc_client_report_resp_decode(&rd, 0, &resp)) {
    dc_kclient_close(c->kc); /* what follows in the stream is unknown */
    snprintf(errstr, sizeof(errstr), "malformed ClientReport response");
    err = DC_ERR__BAD_RESPONSE;
  } else if (!err && resp.error_code) {
    snprintf(errstr, sizeof(errstr), "%s: %s",
             dynconf_err_name((dynconf_err_t)resp.error_code),
             resp.error_message ? resp.error_message : "");
    err = (dc_err_t)resp.error_code;
  }
  if (err) {
    /* The configuration is applied either way: the fleet view is the
     * operator's, and a refresh that cut the report short is no fault. */
    dc_agent_log(dc, c->report_noted ? 7 : 6, "REPORT",
                 "cannot report to %s: %s", dc_kclient_peer(c->kc), errstr);
    c->report_noted = true;
  } else {
    c->report_conn = c->conn_seq;
    c->report_version = q.version;
    c->report_generation = q.generation;
    c->report_outcome = q.outcome;
    c->report_noted = false;
  }
  dc_arena_free(&arena);
  return dc_kclient_connected(c->kc);
}
