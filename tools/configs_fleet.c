/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: the fleet. --describe-fleet lists the clients a server
 * knows with their rollout state (DescribeFleet, dynconf's API key 20003);
 * --alter --wait follows one change until the clients it concerns have
 * applied it (or need a restart to), one of them rejected it, or
 * --timeout-ms passed (once every replica shows the change:
 * configs_shown.c).
 *
 * The state of each client is the server's judgement (proto.h: DC_FLEET_*);
 * this file only groups, prints and counts. Requests go through
 * configs_requests.c, output through configs_util.c.
 */
#include "configs.h"

#include "common/clock.h"
#include "common/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long --wait waits for a client the change concerns to be there at
 * all (an agent starting up reports as soon as it has connected), before
 * it says that no client is concerned. */
#define WAIT_GRACE_MS 5000
#define BAR_WIDTH 20

/* ---- naming and formatting (pure) --------------------------------------- */

enum { N_STATES = DC_FLEET_N_STATES };
static const char *const state_json[N_STATES] = {
    "up_to_date", "behind", "rejected", "silent", "restart_needed"};
static const char *const state_heading[N_STATES] = {
    "Up to date", "Behind", "Rejected", "Silent", "Restart needed"};
static const char *const state_words[N_STATES] = {
    "up to date", "behind", "rejected", "silent", "restart needed"};

static bool known_state(int8_t s) {
  return s >= 0 && s < N_STATES;
}

/* The outcome as words, or NULL for none (or one this tool does not know). */
static const char *outcome_words(int8_t outcome) {
  switch (outcome) {
  case DC_OUTCOME_APPLIED: return "applied";
  case DC_OUTCOME_PARTLY: return "partly applied";
  case DC_OUTCOME_REJECTED: return "rejected";
  case DC_OUTCOME_RESTART: return "restart needed";
  }
  return NULL;
}

static const char *outcome_json(int8_t outcome) {
  switch (outcome) {
  case DC_OUTCOME_APPLIED: return "applied";
  case DC_OUTCOME_PARTLY: return "partly_applied";
  case DC_OUTCOME_REJECTED: return "rejected";
  case DC_OUTCOME_RESTART: return "restart_needed";
  }
  return NULL;
}

/* A configuration version (a 64-bit hash) as 16 hex digits; -1 is "none". */
typedef struct { char s[17]; } hexver_t;

static hexver_t hex_version(int64_t v) {
  hexver_t h;
  if (v == -1)
    snprintf(h.s, sizeof(h.s), "none");
  else
    snprintf(h.s, sizeof(h.s), "%016" PRIx64, (uint64_t)v);
  return h;
}

/* "3s ago", "4m05s ago", "2h10m ago", "3d04h ago": coarse enough to read,
 * fine enough to tell a client that just left from one gone for hours. A
 * time ahead of ours (clock skew) reads "0s ago"; 0 or less is "never". */
typedef struct { char s[48]; } age_t;

static age_t age_of(int64_t now_ms, int64_t then_ms) {
  age_t a;
  if (then_ms <= 0) {
    snprintf(a.s, sizeof(a.s), "never");
    return a;
  }
  long long s = now_ms > then_ms ? (now_ms - then_ms) / 1000 : 0;
  if (s < 60)
    snprintf(a.s, sizeof(a.s), "%llds ago", s);
  else if (s < 3600)
    snprintf(a.s, sizeof(a.s), "%lldm%02llds ago", s / 60, s % 60);
  else if (s < 86400)
    snprintf(a.s, sizeof(a.s), "%lldh%02lldm ago", s / 3600, s / 60 % 60);
  else
    snprintf(a.s, sizeof(a.s), "%lldd%02lldh ago", s / 86400, s / 3600 % 24);
  return a;
}

static const char *str_or(const char *s, const char *dflt) {
  return s && *s ? s : dflt;
}

/* ---- ordering --------------------------------------------------------- */

static int cmp_client(const void *a, const void *b) {
  const dc_fleet_client_t *x = *(const dc_fleet_client_t *const *)a;
  const dc_fleet_client_t *y = *(const dc_fleet_client_t *const *)b;
  int c = strcmp(str_or(x->client_id, ""), str_or(y->client_id, ""));
  return c ? c : strcmp(str_or(x->instance_id, ""), str_or(y->instance_id, ""));
}

/* The clients sorted by client-id, then instance: a malloc'd array of
 * pointers into cs (the caller frees it), or NULL (said) when out of
 * memory. */
static const dc_fleet_client_t **sorted_clients(const dc_fleet_client_t *cs,
                                                int32_t n) {
  const dc_fleet_client_t **v = calloc(n > 0 ? (size_t)n : 1, sizeof(*v));
  if (!v) {
    cli_fail("out of memory");
    return NULL;
  }
  for (int32_t i = 0; i < n; i++)
    v[i] = &cs[i];
  qsort(v, (size_t)(n > 0 ? n : 0), sizeof(*v), cmp_client);
  return v;
}

/* ---- one client as text ----------------------------------------------- */

/* Agents choose these strings: a control byte (an escape sequence for the
 * operator's terminal, a newline faking a line of output) becomes '?'. */
static void defang(char *s) {
  for (; s && *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      *s = '?';
}

static void defang_all(dc_describe_fleet_resp_t *r) {
  for (int32_t i = 0; i < r->n_clients; i++) {
    dc_fleet_client_t *c = &r->clients[i];
    char *f[] = {c->instance_id,  c->client_id, c->principal,
                 c->peer,         c->listener,  c->agent_software,
                 c->app_software, c->kind,      c->reason};
    for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
      defang(f[k]);
  }
}

/* "app-a instance 5b0e..., User:alice at 10.0.0.7:51234": enough to find
 * the process. */
static void put_who(dc_buf_t *b, const dc_fleet_client_t *c) {
  dc_buf_printf(b, "%s instance %s, %s at %s", str_or(c->client_id, "?"),
                str_or(c->instance_id, "?"), str_or(c->principal, "?"),
                str_or(c->peer, "?"));
}

/* What the client last said, and for a silent one what is known instead. */
static void put_report(dc_buf_t *b, const dc_fleet_client_t *c,
                       int64_t now_ms) {
  if (c->reported_version == -1) {
    dc_buf_printf(b, "never reported");
  } else {
    const char *w = outcome_words(c->outcome);
    dc_buf_printf(b, "reported %s %s", hex_version(c->reported_version).s,
                  w ? w : "without an outcome");
  }
  if (c->state == DC_FLEET_BEHIND)
    dc_buf_printf(b, ", now %s", hex_version(c->current_version).s);
  if (!c->connected)
    dc_buf_printf(b, ", gone since %s", age_of(now_ms, c->last_seen_ms).s);
}

/* One line of --describe-fleet's text output. The reason goes last: it
 * is free text and may hold commas. */
static void put_client_line(dc_buf_t *b, const dc_fleet_client_t *c,
                            int64_t now_ms) {
  dc_buf_printf(b, "  ");
  put_who(b, c);
  dc_buf_printf(b, " via %s, %s, %s, %s, generation %" PRId64 ", ",
                str_or(c->listener, "?"), str_or(c->kind, "?"),
                str_or(c->app_software, "?"), str_or(c->agent_software, "?"),
                c->generation);
  put_report(b, c, now_ms);
  dc_buf_printf(b, ", first seen %s, last seen %s",
                age_of(now_ms, c->first_seen_ms).s,
                age_of(now_ms, c->last_seen_ms).s);
  if (c->reason && *c->reason)
    dc_buf_printf(b, "; %s", c->reason);
  dc_buf_printf(b, "\n");
}

/* ---- --describe-fleet's output ---------------------------------------- */

static void count_states(const dc_fleet_client_t *const *v, int32_t n,
                         size_t count[N_STATES]) {
  memset(count, 0, N_STATES * sizeof(count[0]));
  for (int32_t i = 0; i < n; i++)
    count[v[i]->state]++;
}

/* "12 clients: 10 up to date, 1 behind, 1 rejected, 0 silent, 0 restart
 * needed" */
static void put_summary(dc_buf_t *b, int32_t n, const size_t count[N_STATES]) {
  dc_buf_printf(b, "%d client%s:", (int)n, n == 1 ? "" : "s");
  for (int s = 0; s < N_STATES; s++)
    dc_buf_printf(b, "%s %zu %s", s ? "," : "", count[s], state_words[s]);
  dc_buf_printf(b, "\n");
}

/* One group per state in the order of a rollout, up to date first, each
 * with its count; the clients in v's order. */
static void render_text(dc_buf_t *b, const dc_fleet_client_t *const *v,
                        int32_t n, int64_t now_ms) {
  size_t count[N_STATES];
  count_states(v, n, count);
  for (int s = 0; s < N_STATES; s++) {
    if (!count[s])
      continue;
    dc_buf_printf(b, "%s (%zu):\n", state_heading[s], count[s]);
    for (int32_t i = 0; i < n; i++)
      if (v[i]->state == s)
        put_client_line(b, v[i], now_ms);
  }
  put_summary(b, n, count);
}

static void json_str_member(dc_buf_t *b, const char *name, const char *s) {
  dc_buf_printf(b, ",\"%s\":", name);
  dc_json_str(b, s);
}

/* Versions are strings of hex digits in JSON too: a 64-bit hash does not
 * survive a double. */
static void json_version_member(dc_buf_t *b, const char *name, int64_t v) {
  json_str_member(b, name, v == -1 ? NULL : hex_version(v).s);
}

static void render_json_client(dc_buf_t *b, const dc_fleet_client_t *c) {
  dc_buf_printf(b, "{\"client_id\":");
  dc_json_str(b, c->client_id);
  json_str_member(b, "instance_id", c->instance_id);
  json_str_member(b, "principal", c->principal);
  json_str_member(b, "peer", c->peer);
  json_str_member(b, "listener", c->listener);
  json_str_member(b, "kind", c->kind);
  json_str_member(b, "app_software", c->app_software);
  json_str_member(b, "agent_software", c->agent_software);
  dc_buf_printf(b, ",\"first_seen_ms\":%" PRId64 ",\"last_seen_ms\":%" PRId64
                   ",\"connected\":%s",
                c->first_seen_ms, c->last_seen_ms,
                c->connected ? "true" : "false");
  json_version_member(b, "served_version", c->served_version);
  json_version_member(b, "current_version", c->current_version);
  json_version_member(b, "reported_version", c->reported_version);
  dc_buf_printf(b, ",\"generation\":%" PRId64, c->generation);
  json_str_member(b, "outcome", outcome_json(c->outcome));
  json_str_member(b, "reason", c->reason);
  json_str_member(b, "state", state_json[c->state]);
  dc_buf_printf(b, "}");
}

static void render_json(dc_buf_t *b, const dc_fleet_client_t *const *v,
                        int32_t n) {
  size_t count[N_STATES];
  count_states(v, n, count);
  dc_buf_printf(b, "{\"clients\":[");
  for (int32_t i = 0; i < n; i++) {
    dc_buf_printf(b, "%s", i ? "," : "");
    render_json_client(b, v[i]);
  }
  dc_buf_printf(b, "],\"summary\":{\"clients\":%d", (int)n);
  for (int s = 0; s < N_STATES; s++)
    dc_buf_printf(b, ",\"%s\":%zu", state_json[s], count[s]);
  dc_buf_printf(b, "}}\n");
}

/* ---- the DescribeFleet request ---------------------------------------- */

/* --wait's state between polls. */
typedef struct fleet_call {
  dc_describe_fleet_resp_t resp; /* the last poll's, merged */
  int verdict;     /* WAIT_* after a poll */
  bool bar_drawn;  /* a progress bar is on stderr */
  dc_buf_t behind; /* the last poll's behind list */
  int64_t grace_end; /* monotonic ms: no client concerned by then: exit 4 */
  bool nobody;       /* the last poll found no connected client concerned */
} fleet_call_t;

/* A state this tool has no group for would be miscounted: refuse the
 * response instead. EXIT_OK, or EXIT_FAIL said. */
static int check_response(const dc_describe_fleet_resp_t *r) {
  for (int32_t i = 0; i < r->n_clients; i++)
    if (!known_state(r->clients[i].state)) {
      cli_fail("DescribeFleet gives client '%s' state %d, which this " PROG
               " does not know",
               str_or(r->clients[i].client_id, "?"), r->clients[i].state);
      return EXIT_FAIL;
    }
  return EXIT_OK;
}

/* Whether the server lists DescribeFleet in a version we speak; else says
 * so, naming the server, with `tail` appended. */
static bool fleet_offered(dc_kclient_t *kc, const char *tail) {
  int16_t lo, hi;
  if (!dc_kclient_api_range(kc, DC_API_DESCRIBE_FLEET, &lo, &hi)) {
    cli_fail("the server at %s does not offer DescribeFleet (a dynconfd "
             "older than the fleet view)%s",
             dc_kclient_peer(kc), tail);
    return false;
  }
  if (dc_kclient_pick_version(kc, DC_API_DESCRIBE_FLEET) < 0) {
    cli_fail("the server at %s offers DescribeFleet v%d to v%d, none of "
             "which this " PROG " speaks%s",
             dc_kclient_peer(kc), lo, hi, tail);
    return false;
  }
  return true;
}

/* The filter for the entity: a client-id, a user-principal's name, both,
 * or neither (all) for <default> and for no entity at all. */
static dc_describe_fleet_req_t fleet_filter(const opts_t *o) {
  dc_describe_fleet_req_t req = {0};
  if (o->entity_type == ENT_USERS) {
    req.user = (char *)o->user;
    req.client_id = (char *)o->client;
  } else if (o->entity_type == ENT_CLIENTS &&
             !dc_entity_is_default(o->entity_name)) {
    req.client_id = (char *)o->entity_name;
  }
  return req;
}

/* ---- --describe-fleet ------------------------------------------------- */

static int print_fleet(const opts_t *o, dc_describe_fleet_resp_t *r) {
  int rc = check_response(r);
  if (rc != EXIT_OK)
    return rc;
  if (!o->json) /* JSON escapes them */
    defang_all(r);
  const dc_fleet_client_t **sorted = sorted_clients(r->clients, r->n_clients);
  if (!sorted)
    return EXIT_FAIL;
  dc_buf_t b;
  dc_buf_init(&b);
  if (o->json)
    render_json(&b, sorted, r->n_clients);
  else
    render_text(&b, sorted, r->n_clients, dc_wall_ms());
  free(sorted);
  rc = cli_flush_out(&b);
  dc_buf_free(&b);
  return rc;
}

int cli_describe_fleet(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  if (!fleet_offered(kc, ""))
    return EXIT_FAIL;
  cli_replicas_t reps;
  int rc = cli_replicas_open(o, kc, deadline, &reps);
  dc_describe_fleet_req_t req = fleet_filter(o);
  dc_describe_fleet_resp_t resp;
  cli_fleet_view_t *fv = NULL;
  if (rc == EXIT_OK)
    rc = cli_fleet_view_open(o, &reps, &req, deadline, &fv);
  if (rc == EXIT_OK)
    rc = cli_fleet_view_merged(fv, &resp);
  if (rc == EXIT_OK)
    rc = print_fleet(o, &resp);
  cli_fleet_view_close(fv);
  cli_replicas_close(&reps);
  return rc;
}

/* ---- --wait, step 2: the clients apply it ----------------------------- */

enum { WAIT_PENDING, WAIT_DONE };

/* The connected clients by state: a gone client is nobody to wait for. */
typedef struct rollout {
  size_t n[N_STATES];
} rollout_t;

static rollout_t count_rollout(const dc_describe_fleet_resp_t *r) {
  rollout_t t = {{0}};
  for (int32_t i = 0; i < r->n_clients; i++)
    if (r->clients[i].connected)
      t.n[r->clients[i].state]++;
  return t;
}

static void bar_clear(fleet_call_t *call) {
  if (!call->bar_drawn)
    return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  call->bar_drawn = false;
}

/* "\r[#####.....] 312/500 applied, 2 behind" on a terminal's stderr; a
 * pipe or file gets nothing (it would only fill logs with \r). */
static void bar_draw(fleet_call_t *call, const rollout_t *t) {
  if (!isatty(STDERR_FILENO))
    return;
  size_t applied = t->n[DC_FLEET_UP_TO_DATE];
  size_t total = applied + t->n[DC_FLEET_BEHIND] + t->n[DC_FLEET_REJECTED] +
                 t->n[DC_FLEET_RESTART];
  int full = total ? (int)(applied * BAR_WIDTH / total) : BAR_WIDTH;
  fprintf(stderr, "\r[%.*s%.*s] %zu/%zu applied, %zu behind\033[K", full,
          "####################", BAR_WIDTH - full, "....................",
          applied, total, t->n[DC_FLEET_BEHIND]);
  fflush(stderr);
  call->bar_drawn = true;
}

/* Appends one line per connected client in state to b, prefixed, with
 * what its state calls for: the reason of a rejection, the values a
 * restart would apply, the versions of a client behind. */
static void put_state_list(dc_buf_t *b, const dc_fleet_client_t *const *v,
                           int32_t n, int8_t state) {
  for (int32_t i = 0; i < n; i++) {
    const dc_fleet_client_t *c = v[i];
    if (!c->connected || c->state != state)
      continue;
    dc_buf_printf(b, "  ");
    put_who(b, c);
    if (state == DC_FLEET_REJECTED)
      dc_buf_printf(b, ": %s\n", str_or(c->reason, "no reason given"));
    else if (state == DC_FLEET_RESTART)
      dc_buf_printf(b, ": %s\n", str_or(c->reason, "no values given"));
    else if (state == DC_FLEET_BEHIND)
      dc_buf_printf(b, ": %s%s, needs %s\n",
                    c->reported_version == -1 ? "reports nothing" : "reports ",
                    c->reported_version == -1
                        ? ""
                        : hex_version(c->reported_version).s,
                    hex_version(c->current_version).s);
    else
      dc_buf_printf(b, ": silent: cannot tell (connected, never reported)\n");
  }
}

/* How many applied the change and, when any, who needs a restart for it
 * (with the values a restart would apply). */
static void put_applied(dc_buf_t *b, const dc_fleet_client_t *const *v,
                        int32_t n, const rollout_t *t) {
  size_t k = t->n[DC_FLEET_UP_TO_DATE];
  dc_buf_printf(b, "%zu client%s applied the change\n", k, k == 1 ? "" : "s");
  if (!(k = t->n[DC_FLEET_RESTART]))
    return;
  dc_buf_printf(b, "%zu client%s a restart to apply it:\n", k,
                k == 1 ? " needs" : "s need");
  put_state_list(b, v, n, DC_FLEET_RESTART);
}

/* Exit 1 as soon as one client refused the version that resolves now. */
static int say_rejected(dc_buf_t *b, const dc_fleet_client_t *const *v,
                        int32_t n, const rollout_t *t) {
  size_t k = t->n[DC_FLEET_REJECTED];
  put_applied(b, v, n, t);
  dc_buf_printf(b, "%zu client%s rejected it:\n", k, k == 1 ? "" : "s");
  put_state_list(b, v, n, DC_FLEET_REJECTED);
  int rc = cli_flush_out(b);
  cli_fail("%zu client%s rejected the change", k, k == 1 ? "" : "s");
  return rc == EXIT_OK ? EXIT_FAIL : rc;
}

/* Exit 4: no connected client is concerned; how many the server knew,
 * gone now. */
static int say_nobody(const dc_describe_fleet_resp_t *r) {
  int32_t gone = 0;
  for (int32_t i = 0; i < r->n_clients; i++)
    gone += !r->clients[i].connected;
  cli_fail("no connected client is concerned by the change (waited %d ms for "
           "one to report)%s", WAIT_GRACE_MS,
           gone ? "; clients it concerned were connected before and are gone"
                : "");
  return EXIT_WAIT_NOBODY;
}

/* No connected client that reported is behind, none rejected: exit 0
 * when all of them applied the change, 5 when some only acknowledged it
 * and apply it once restarted. */
static int say_settled(dc_buf_t *b, const dc_fleet_client_t *const *v,
                       int32_t n, const rollout_t *t) {
  put_applied(b, v, n, t);
  put_state_list(b, v, n, DC_FLEET_SILENT);
  int rc = cli_flush_out(b);
  size_t k = t->n[DC_FLEET_RESTART];
  if (!k || rc != EXIT_OK)
    return rc;
  cli_fail("%zu client%s a restart to apply the change", k,
           k == 1 ? " needs" : "s need");
  return EXIT_WAIT_RESTART;
}

/* Judges one poll: done (said) when every connected client that reported
 * runs the new version or needs a restart to, failed when one rejected
 * it, nobody when no connected client is concerned past the grace period;
 * else keeps the list of those behind for a time-out to print. */
static int judge_poll(fleet_call_t *call, const dc_fleet_client_t *const *v,
                      int32_t n) {
  rollout_t t = count_rollout(&call->resp);
  size_t concerned = 0;
  for (int s = 0; s < N_STATES; s++)
    concerned += t.n[s];
  call->nobody = !concerned;
  if (!concerned) {
    if (dc_mono_ms() < call->grace_end)
      return EXIT_OK; /* an agent starting now reports within it */
    call->verdict = WAIT_DONE;
    return say_nobody(&call->resp);
  }
  dc_buf_t b;
  dc_buf_init(&b);
  int rc = EXIT_OK;
  if (t.n[DC_FLEET_REJECTED] || !t.n[DC_FLEET_BEHIND])
    bar_clear(call);
  if (t.n[DC_FLEET_REJECTED]) {
    rc = say_rejected(&b, v, n, &t);
    call->verdict = WAIT_DONE;
  } else if (!t.n[DC_FLEET_BEHIND]) {
    rc = say_settled(&b, v, n, &t);
    call->verdict = WAIT_DONE;
  } else {
    dc_buf_clear(&call->behind);
    put_applied(&call->behind, v, n, &t);
    dc_buf_printf(&call->behind, "%zu client%s behind:\n",
                  t.n[DC_FLEET_BEHIND], t.n[DC_FLEET_BEHIND] == 1 ? "" : "s");
    put_state_list(&call->behind, v, n, DC_FLEET_BEHIND);
    bar_draw(call, &t);
  }
  dc_buf_free(&b);
  return rc;
}

static int judge_fleet(fleet_call_t *call) {
  int rc = check_response(&call->resp);
  if (rc != EXIT_OK)
    return rc;
  defang_all(&call->resp);
  const dc_fleet_client_t **sorted =
      sorted_clients(call->resp.clients, call->resp.n_clients);
  if (!sorted)
    return EXIT_FAIL;
  rc = judge_poll(call, sorted, call->resp.n_clients);
  free(sorted);
  return rc;
}

/* Exit 3: who is still behind, as the last poll saw them. */
static int say_timeout(const opts_t *o, fleet_call_t *call) {
  int rc = cli_flush_out(&call->behind);
  cli_fail("the clients did not all apply the change within %d ms "
           "(--timeout-ms)",
           o->timeout_ms);
  return rc == EXIT_OK ? EXIT_WAIT_TIMEOUT : rc;
}

/* The next listing of the fleet: at its next move where every replica
 * can say so (DescribeFleet v1), else at the next poll. EXIT_OK, or
 * EXIT_WAIT_TIMEOUT / EXIT_FAIL. */
static int next_listing(cli_fleet_view_t *fv, int64_t deadline,
                        int *pause_ms) {
  if (cli_fleet_view_can_park(fv))
    return cli_fleet_view_await(fv, deadline);
  if (!cli_pause_poll(deadline, pause_ms))
    return EXIT_WAIT_TIMEOUT;
  return cli_fleet_view_refresh(fv, deadline);
}

/* Follows the altered entity's clients on every replica until
 * judge_poll() decides or the deadline passes. */
static int wait_fleet(const opts_t *o, cli_replicas_t *reps,
                      int64_t deadline) {
  dc_describe_fleet_req_t req = fleet_filter(o);
  fleet_call_t call = {.verdict = WAIT_PENDING,
                      .grace_end = dc_mono_ms() + WAIT_GRACE_MS};
  dc_buf_init(&call.behind);
  cli_fleet_view_t *fv = NULL;
  int rc = cli_fleet_view_open(o, reps, &req, deadline, &fv),
      pause_ms = POLL_FIRST_MS;
  while (rc == EXIT_OK) {
    rc = cli_fleet_view_merged(fv, &call.resp);
    if (rc == EXIT_OK)
      rc = judge_fleet(&call);
    if (rc != EXIT_OK || call.verdict == WAIT_DONE)
      break;
    bar_clear(&call); /* an error printed gets a line of its own */
    /* While nobody is concerned, the grace period's end is judged too. */
    int64_t until = call.nobody && call.grace_end < deadline ? call.grace_end
                                                             : deadline;
    rc = next_listing(fv, until, &pause_ms);
    if (rc == EXIT_WAIT_TIMEOUT && until < deadline)
      rc = EXIT_OK;
  }
  bar_clear(&call);
  if (call.verdict == WAIT_PENDING &&
      (rc == EXIT_WAIT_TIMEOUT ||
       (rc == EXIT_FAIL && dc_mono_ms() >= deadline)))
    rc = call.nobody ? say_nobody(&call.resp) /* before the grace ended */
                     : say_timeout(o, &call); /* the last request ran out of
                                                 time too */
  cli_fleet_view_close(fv);
  dc_buf_free(&call.behind);
  return rc;
}

int cli_alter_wait(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  /* Before the alter: a change nobody can follow is better not made. */
  if (!fleet_offered(kc, ", which --wait needs; nothing was changed"))
    return EXIT_FAIL;
  /* The replicas first too: after the alter the server is busy pushing
   * it, and a Metadata round trip would queue behind that. */
  cli_replicas_t reps = {0};
  int rc = cli_replicas_open(o, kc, deadline, &reps);
  if (rc == EXIT_OK)
    rc = cli_alter(o, kc, deadline);
  if (rc == EXIT_OK)
    rc = cli_wait_shown(o, &reps, deadline);
  if (rc == EXIT_OK)
    rc = wait_fleet(o, &reps, deadline);
  cli_replicas_close(&reps);
  return rc;
}
