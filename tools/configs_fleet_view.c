/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: the fleet as the replicas list it. Each replica's
 * listing is kept on its own, in pages when the server pages
 * (DescribeFleet v1), and the listings are merged by instance id on
 * demand. To follow a rollout, a DescribeFleet is parked on every
 * replica with the change sequence its listing was made at; the first
 * replica whose fleet moves answers with its new listing, so --wait
 * learns of each report within a round trip. A replica is not parked
 * again before as long as its last listing took has passed, so a large
 * fleet that moves all the time is listed at most half the time. Against
 * servers that only speak v0 the caller polls instead
 * (cli_fleet_view_refresh).
 */
#include "configs.h"

#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One replica's listing, all its pages. */
typedef struct listing {
  dc_arena_t arena;     /* its clients' strings */
  dc_fleet_client_t *v; /* malloc'd */
  int32_t n, cap;
  int64_t seq;  /* the fleet_seq of its first page; -1 from a v0 server */
  bool parked;  /* a DescribeFleet waits on the replica's connection */
  int64_t park_at; /* not parked again before (monotonic ms) */
} listing_t;

struct cli_fleet_view {
  const opts_t *o;
  cli_replicas_t *reps;
  dc_describe_fleet_req_t filter;
  listing_t *l;      /* one per replica, in reps->kc's order */
  dc_arena_t merged; /* cli_fleet_view_merged()'s clients */
};

/* A parked request's time on the server, at most: the command's own
 * deadline usually comes first. */
#define PARK_MAX_MS 60000

static void listing_clear(listing_t *l) {
  dc_arena_reset(&l->arena);
  l->n = 0;
  l->seq = -1;
}

static char *keep(dc_arena_t *a, const char *s, bool *oom) {
  char *c = s ? dc_arena_strdup(a, s) : NULL;
  *oom |= s && !c;
  return c;
}

/* Copies c, strings and all, into l. 0, or -1 without memory. */
static int keep_client(listing_t *l, const dc_fleet_client_t *c) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? 2 * l->cap : 64;
    dc_fleet_client_t *v = realloc(l->v, (size_t)cap * sizeof(*v));
    if (!v)
      return -1;
    l->v = v;
    l->cap = cap;
  }
  bool oom = false;
  dc_fleet_client_t k = *c; /* its strings copied in place below */
  char **str[] = {&k.instance_id,  &k.client_id, &k.principal,
                  &k.peer,         &k.listener,  &k.agent_software,
                  &k.app_software, &k.kind,      &k.reason};
  for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++)
    *str[i] = keep(&l->arena, *str[i], &oom);
  if (oom)
    return -1;
  l->v[l->n++] = k;
  return 0;
}

/* ---- one page ------------------------------------------------------------ */

typedef struct page {
  dc_describe_fleet_resp_t resp; /* first: cli_call() decodes into it */
  listing_t *l;
} page_t;

static int enc_fleet(dc_buf_t *b, int16_t v, const void *req) {
  return dc_describe_fleet_req_encode(b, v, req);
}

static int dec_fleet(dc_rd_t *rd, int16_t v, void *resp) {
  return dc_describe_fleet_resp_decode(rd, v, &((page_t *)resp)->resp);
}

/* The most clients one replica's listing may hold (dynconfd keeps at most
 * 100,000): a server that pages on past it is not believed. */
#define LISTING_MAX 100000

static int cmp_ids(const dc_fleet_client_t *a, const dc_fleet_client_t *b) {
  int c = strcmp(a->client_id ? a->client_id : "",
                 b->client_id ? b->client_id : "");
  return c ? c : strcmp(a->instance_id ? a->instance_id : "",
                        b->instance_id ? b->instance_id : "");
}

/* Why a page cannot be part of the listing l, or NULL. A page that is
 * empty yet says more follow, or does not move past the cursor, would
 * page forever. */
static const char *page_wrong(const listing_t *l,
                              const dc_describe_fleet_resp_t *r) {
  if (r->more && !r->n_clients)
    return "an empty page of its fleet that says more follow";
  if (l->n && r->n_clients && cmp_ids(&r->clients[0], &l->v[l->n - 1]) <= 0)
    return "a page of its fleet that does not start after the last one";
  if (r->n_clients > LISTING_MAX - l->n)
    return "more than 100000 clients in its fleet";
  return NULL;
}

/* Keeps a page's clients. */
static int take_page(const opts_t *o, dc_kclient_t *kc, int16_t v,
                     void *resp) {
  (void)o;
  (void)v;
  page_t *p = resp;
  int rc = cli_check_error(p->resp.error_code, p->resp.error_message);
  if (rc != EXIT_OK)
    return rc;
  const char *wrong = page_wrong(p->l, &p->resp);
  if (wrong) {
    cli_fail("the server at %s answered %s", dc_kclient_peer(kc), wrong);
    return EXIT_FAIL;
  }
  if (!p->l->n)
    p->l->seq = p->resp.fleet_seq;
  for (int32_t i = 0; i < p->resp.n_clients; i++)
    if (keep_client(p->l, &p->resp.clients[i])) {
      cli_fail("out of memory");
      return EXIT_FAIL;
    }
  return EXIT_OK;
}

static const cli_api_t fleet_api = {
    .key = DC_API_DESCRIBE_FLEET,
    .name = "DescribeFleet",
    .unsupported = " (a dynconfd older than the fleet view)",
    .encode = enc_fleet,
    .decode = dec_fleet,
    .report = take_page,
};

/* The pages of replica i after its listing's last client (all of them
 * when it is empty), asked at once, at least one. EXIT_OK, or EXIT_FAIL
 * said. */
static int list_rest(cli_fleet_view_t *fv, int i, int64_t deadline) {
  listing_t *l = &fv->l[i];
  dc_describe_fleet_req_t req = fv->filter;
  req.since_seq = -1;
  page_t p = {.l = l};
  do {
    if (l->n) {
      req.after_client_id = l->v[l->n - 1].client_id;
      req.after_instance_id = l->v[l->n - 1].instance_id;
    }
    opts_t co;
    int64_t d = cli_replica_deadline(fv->reps, deadline, fv->o, &co);
    int rc = cli_call(&co, fv->reps->kc[i], d, &fleet_api, &req, &p);
    if (rc != EXIT_OK)
      return rc;
  } while (p.resp.more);
  return EXIT_OK;
}

/* Leaves replica i out (said), with its listing; false when it is the
 * last one (nothing done). */
static bool drop(cli_fleet_view_t *fv, int i) {
  if (!cli_replicas_drop(fv->reps, i))
    return false;
  dc_arena_free(&fv->l[i].arena);
  free(fv->l[i].v);
  memmove(fv->l + i, fv->l + i + 1,
          (size_t)(fv->reps->n - i) * sizeof(*fv->l));
  return true;
}

int cli_fleet_view_refresh(cli_fleet_view_t *fv, int64_t deadline) {
  for (int i = 0; i < fv->reps->n;) {
    listing_clear(&fv->l[i]);
    int rc = list_rest(fv, i, deadline);
    if (rc == EXIT_OK)
      i++;
    else if (dc_mono_ms() >= deadline || !drop(fv, i))
      return rc; /* else said; the others still count */
  }
  return EXIT_OK;
}

int cli_fleet_view_open(const opts_t *o, cli_replicas_t *reps,
                        const dc_describe_fleet_req_t *filter,
                        int64_t deadline, cli_fleet_view_t **out) {
  cli_fleet_view_t *fv = calloc(1, sizeof(*fv));
  if (!fv || !(fv->l = calloc((size_t)reps->n, sizeof(*fv->l)))) {
    free(fv);
    cli_fail("out of memory");
    return EXIT_FAIL;
  }
  fv->o = o;
  fv->reps = reps;
  fv->filter = *filter;
  dc_arena_init(&fv->merged);
  for (int i = 0; i < reps->n; i++)
    dc_arena_init(&fv->l[i].arena);
  *out = fv;
  return cli_fleet_view_refresh(fv, deadline);
}

void cli_fleet_view_close(cli_fleet_view_t *fv) {
  if (!fv)
    return;
  for (int i = 0; i < fv->reps->n; i++) {
    dc_arena_free(&fv->l[i].arena);
    free(fv->l[i].v);
  }
  free(fv->l);
  dc_arena_free(&fv->merged);
  free(fv);
}

/* ---- merging ------------------------------------------------------------- */

/* One instance's entries together, the one to keep first: connected,
 * then seen last. */
static int cmp_instance(const void *pa, const void *pb) {
  const dc_fleet_client_t *a = pa, *b = pb;
  int c = strcmp(a->instance_id ? a->instance_id : "",
                 b->instance_id ? b->instance_id : "");
  if (c)
    return c;
  if (a->connected != b->connected)
    return a->connected ? -1 : 1;
  return (a->last_seen_ms < b->last_seen_ms) - (a->last_seen_ms > b->last_seen_ms);
}

/* Keeps one entry per instance id. */
static int32_t merge(dc_fleet_client_t *v, int32_t n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_instance);
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++)
    if (!k || !v[i].instance_id || !v[k - 1].instance_id ||
        strcmp(v[i].instance_id, v[k - 1].instance_id))
      v[k++] = v[i];
  return k;
}

int cli_fleet_view_merged(cli_fleet_view_t *fv,
                          dc_describe_fleet_resp_t *out) {
  *out = (dc_describe_fleet_resp_t){0};
  dc_arena_reset(&fv->merged);
  size_t total = 0;
  for (int i = 0; i < fv->reps->n; i++)
    total += (size_t)fv->l[i].n;
  if (!total)
    return EXIT_OK;
  dc_fleet_client_t *v = dc_arena_alloc(&fv->merged, total * sizeof(*v));
  if (!v) {
    cli_fail("out of memory");
    return EXIT_FAIL;
  }
  size_t k = 0;
  for (int i = 0; i < fv->reps->n; i++) {
    memcpy(v + k, fv->l[i].v, (size_t)fv->l[i].n * sizeof(*v));
    k += (size_t)fv->l[i].n;
  }
  out->clients = v;
  out->n_clients = merge(v, (int32_t)total);
  return EXIT_OK;
}

/* ---- following the fleet ---------------------------------------------- */

bool cli_fleet_view_can_park(const cli_fleet_view_t *fv) {
  for (int i = 0; i < fv->reps->n; i++)
    if (fv->l[i].seq < 0)
      return false;
  return true;
}

/* Parks a DescribeFleet on replica i: answered when its fleet is no
 * longer as listed. EXIT_OK, or EXIT_FAIL said. */
static int park(cli_fleet_view_t *fv, int i, int64_t deadline) {
  dc_kclient_t *kc = fv->reps->kc[i];
  int64_t left = deadline - dc_mono_ms();
  dc_describe_fleet_req_t req = fv->filter;
  req.since_seq = fv->l[i].seq;
  req.timeout_ms = (int32_t)(left < PARK_MAX_MS ? (left > 0 ? left : 1)
                                                : PARK_MAX_MS);
  char err[512];
  if (dc_kclient_send(kc, DC_API_DESCRIBE_FLEET,
                      dc_kclient_pick_version(kc, DC_API_DESCRIBE_FLEET),
                      enc_fleet, &req, cli_remaining_ms(deadline), NULL, err,
                      sizeof(err))) {
    cli_fail("DescribeFleet to %s: %s", dc_kclient_peer(kc), err);
    return EXIT_FAIL;
  }
  fv->l[i].parked = true;
  return EXIT_OK;
}

/* The answer to replica i's parked request: its new listing, with the
 * pages after the first asked at once. EXIT_OK, or EXIT_FAIL said. */
static int take_parked(cli_fleet_view_t *fv, int i, int64_t deadline) {
  int64_t t0 = dc_mono_ms();
  dc_kclient_t *kc = fv->reps->kc[i];
  int16_t v = dc_kclient_pick_version(kc, DC_API_DESCRIBE_FLEET);
  fv->l[i].parked = false;
  dc_arena_t arena;
  dc_arena_init(&arena);
  char err[512];
  dc_rd_t rd;
  page_t p = {.l = &fv->l[i]};
  int rc = EXIT_FAIL;
  if (dc_kclient_receive(kc, cli_remaining_ms(deadline), NULL, &rd, &arena,
                         err, sizeof(err)))
    cli_fail("DescribeFleet to %s: %s", dc_kclient_peer(kc), err);
  else if (dc_describe_fleet_resp_decode(&rd, v, &p.resp))
    cli_fail("malformed DescribeFleet v%d response from %s: %s", v,
             dc_kclient_peer(kc), dc_err_str((dc_err_t)rd.err));
  else {
    listing_clear(p.l);
    rc = take_page(fv->o, kc, v, &p);
  }
  dc_arena_free(&arena);
  if (rc == EXIT_OK && p.resp.more)
    rc = list_rest(fv, i, deadline);
  /* A fleet that moves all the time is listed at most half the time:
   * the next park waits as long as this listing took. */
  int64_t now = dc_mono_ms();
  p.l->park_at = now + (now - t0);
  return rc;
}

/* Parks every replica not parked whose pause is over; the earliest pause
 * still running into *next (else left). EXIT_OK, or EXIT_FAIL said when
 * the last replica failed. */
static int park_all(cli_fleet_view_t *fv, int64_t deadline, int64_t *next) {
  int64_t now = dc_mono_ms();
  for (int i = 0; i < fv->reps->n;) {
    listing_t *l = &fv->l[i];
    if (!l->parked && l->park_at > now) {
      *next = l->park_at < *next ? l->park_at : *next;
      i++;
      continue;
    }
    int rc = l->parked ? EXIT_OK : park(fv, i, deadline);
    if (rc == EXIT_OK)
      i++;
    else if (!drop(fv, i))
      return rc;
  }
  return EXIT_OK;
}

static bool any_parked(const cli_fleet_view_t *fv) {
  for (int i = 0; i < fv->reps->n; i++)
    if (fv->l[i].parked)
      return true;
  return false;
}

/* Replica i answered its parked request. */
static int take_answer(cli_fleet_view_t *fv, int i, int64_t deadline) {
  int rc = take_parked(fv, i, deadline);
  if (rc != EXIT_OK && dc_mono_ms() < deadline && drop(fv, i))
    rc = EXIT_OK; /* said; its clients are left out from now on */
  return rc;
}

static void sleep_until(int64_t at) {
  int64_t ms = at - dc_mono_ms();
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The deadline is looked at first: a fleet that keeps moving answers
 * every park at once. */
int cli_fleet_view_await(cli_fleet_view_t *fv, int64_t deadline) {
  while (dc_mono_ms() < deadline) {
    int64_t next = deadline;
    int rc = park_all(fv, deadline, &next);
    if (rc != EXIT_OK)
      return rc;
    if (!any_parked(fv)) { /* every replica pausing */
      sleep_until(next);
      continue;
    }
    int i = dc_kclient_wait_any(fv->reps->kc, fv->reps->n,
                                cli_remaining_ms(next));
    if (i >= 0)
      return take_answer(fv, i, deadline);
  }
  return EXIT_WAIT_TIMEOUT;
}
