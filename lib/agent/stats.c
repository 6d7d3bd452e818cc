/* SPDX-License-Identifier: BSD-2-Clause */
/* The agent's statistics document, in the spirit of librdkafka's. It reads
 * the figures the other parts keep in dynconf_t (the certificate watch's in
 * dc->cw) rather than asking each part to write its own section. */
#include "agent/agent_int.h"
#include "common/buf.h"
#include "common/json.h"

#include <stdlib.h>

/* ,"fetches":{...},"fetch_latency_us":{...},"last_ok_age_ms":N */
static void fetches_json(dc_buf_t *b, const dynconf_t *dc, int64_t now) {
  int64_t n_fetch = dc->n_fetch_ok + dc->n_fetch_err + dc->n_fetch_unsupported;
  dc_buf_printf(b,
                ",\"fetches\":{\"total\":%lld,\"ok\":%lld,\"errors\":%lld,"
                "\"unsupported\":%lld,\"consecutive_failures\":%d,"
                "\"last_us\":%lld,\"avg_us\":%lld,\"max_us\":%lld}",
                (long long)n_fetch, (long long)dc->n_fetch_ok,
                (long long)dc->n_fetch_err, (long long)dc->n_fetch_unsupported,
                dc->failures, (long long)dc->last_fetch_us,
                (long long)(n_fetch ? dc->sum_fetch_us / n_fetch : 0),
                (long long)dc->max_fetch_us);
  static const int64_t bounds[DC_FETCH_BUCKETS] = DC_FETCH_BOUNDS_US;
  dc_buf_printf(b, ",\"fetch_latency_us\":{\"bounds\":[");
  for (size_t i = 0; i < DC_FETCH_BUCKETS; i++)
    dc_buf_printf(b, "%s%lld", i ? "," : "", (long long)bounds[i]);
  dc_buf_printf(b, "],\"counts\":[");
  for (size_t i = 0; i <= DC_FETCH_BUCKETS; i++)
    dc_buf_printf(b, "%s%lld", i ? "," : "", (long long)dc->fetch_hist[i]);
  dc_buf_printf(b, "]},\"last_ok_age_ms\":%lld",
                (long long)(dc->last_ok_ms ? now - dc->last_ok_ms : -1));
}

/* ,"last_error":{...} or null */
static void last_error_json(dc_buf_t *b, const dynconf_t *dc) {
  if (!dc->last_err) {
    dc_buf_printf(b, ",\"last_error\":null");
    return;
  }
  dc_buf_printf(b, ",\"last_error\":{\"code\":\"%s\",\"message\":",
                dynconf_err_name(dc->last_err));
  dc_json_str(b, dc->last_errstr);
  dc_buf_printf(b, ",\"ts\":%lld}", (long long)dc->last_err_ms);
}

/* ,"effective":{...},"rejected":{...} */
static void configs_json(dc_buf_t *b, const dynconf_t *dc) {
  dc_buf_printf(b, ",\"effective\":{");
  for (size_t i = 0; i < dc->allow.n; i++) {
    const char *v = dc->eff.value[i] ? dc->eff.value[i] : dc->app.values[i];
    dc_buf_printf(b, "%s", i ? "," : "");
    dc_json_str(b, dc->allow.keys[i]);
    dc_buf_printf(b, ":{\"value\":");
    dc_json_str(b, v);
    dc_buf_printf(b, ",\"source\":\"%s\"}",
                  dynconf_source_name(dc->eff.value[i] ? dc->eff.source[i]
                                                       : DYNCONF_SOURCE_APP));
  }
  dc_buf_printf(b, "},\"rejected\":{");
  for (size_t i = 0; dc->last_rejected && i < dc->last_rejected->n; i++) {
    const dc_event_entry_t *e = &dc->last_rejected->entries[i];
    dc_buf_printf(b, "%s", i ? "," : "");
    dc_json_str(b, e->key);
    dc_buf_printf(b, ":{\"value\":");
    dc_json_str(b, e->new_value);
    dc_buf_printf(b, ",\"reason\":");
    dc_json_str(b, e->reason);
    dc_buf_printf(b, "}");
  }
  dc_buf_printf(b, "}");
}

static void certinfo_json(dc_buf_t *b, const char *name,
                          const dc_cw_certinfo_t *ci) {
  dc_buf_printf(b, ",\"%s\":", name);
  if (!ci->valid) {
    dc_buf_printf(b, "null");
    return;
  }
  dc_buf_printf(b, "{\"subject\":");
  dc_json_str(b, ci->subject);
  dc_buf_printf(b, ",\"issuer\":");
  dc_json_str(b, ci->issuer);
  dc_buf_printf(b, ",\"not_after\":");
  dc_json_str(b, ci->not_after);
  dc_buf_printf(b, ",\"fingerprint_sha256\":");
  dc_json_str(b, ci->fingerprint);
  dc_buf_printf(b, "}");
}

/* ,"ssl":{...}: the watched files (paths set once before the agent thread
 * starts) and the figures certwatch.c keeps under dc->lock. */
static void ssl_json(dc_buf_t *b, const dc_certwatch_t *cw) {
  dc_buf_printf(b,
                ",\"ssl\":{\"watching\":%s,\"check_interval_ms\":%d,"
                "\"checks\":%lld,\"rotations\":%lld,\"rejected\":%lld",
                cw->enabled ? "true" : "false", cw->interval_ms,
                (long long)cw->checks, (long long)cw->rotations,
                (long long)cw->rejected);
  if (!cw->enabled) {
    dc_buf_printf(b, "}");
    return;
  }
  if (cw->last_rotation_ms)
    dc_buf_printf(b, ",\"last_rotation_ts\":%lld",
                  (long long)cw->last_rotation_ms);
  else
    dc_buf_printf(b, ",\"last_rotation_ts\":null");
  dc_buf_printf(b, ",\"files\":{");
  for (int i = 0, n = 0; i < 3; i++)
    if (cw->f[i].path) {
      dc_buf_printf(b, "%s\"%s\":", n++ ? "," : "", cw->f[i].prop);
      dc_json_str(b, cw->f[i].path);
    }
  dc_buf_printf(b, "}");
  certinfo_json(b, "certificate", &cw->cert);
  dc_buf_printf(b, ",\"key\":");
  dc_json_str(b, *cw->key ? cw->key : NULL);
  certinfo_json(b, "ca", &cw->ca);
  if (cw->pending[0]) {
    dc_buf_printf(b, ",\"pending\":{\"reason\":");
    dc_json_str(b, cw->pending);
    dc_buf_printf(b, ",\"since\":%lld,\"checks\":%d,\"waiting\":%s}",
                  (long long)cw->pending_since_ms, cw->pending_checks,
                  cw->pending_waiting ? "true" : "false");
  } else {
    dc_buf_printf(b, ",\"pending\":null");
  }
  dc_buf_printf(b, "}");
}

/* ,"watch":{...}: the server's Watch between fetches (watch.c) */
static void watch_json(dc_buf_t *b, const dynconf_t *dc) {
  dc_buf_printf(b,
                ",\"watch\":{\"enabled\":%s,\"active\":%s,\"version\":",
                dc->conf.watch ? "true" : "false",
                dc->watching ? "true" : "false");
  if (dc->watched_version >= 0)
    dc_buf_printf(b, "%lld", (long long)dc->watched_version);
  else
    dc_buf_printf(b, "null");
  dc_buf_printf(b, ",\"changes\":%lld,\"unchanged\":%lld,\"failures\":%lld,"
                "\"refusals\":%lld}",
                (long long)dc->n_watch_changed, (long long)dc->n_watch_unchanged,
                (long long)dc->n_watch_failed, (long long)dc->n_watch_refused);
}

char *dc_stats_json_locked(const dynconf_t *dc) {
  dc_buf_t b;
  dc_buf_init(&b);
  int64_t now = dc_wall_ms();
  dc_buf_printf(&b, "{\"name\":");
  dc_json_str(&b, dc->client_id);
  dc_buf_printf(&b, ",\"type\":\"%s\",\"ts\":%lld,\"age_ms\":%lld,\"state\":\"%s\"",
                dc->type == RD_KAFKA_CONSUMER ? "consumer" : "producer",
                (long long)now, (long long)(now - dc->started_ms),
                dynconf_state_name(dc->state));
  dc_buf_printf(&b, ",\"bootstrap\":");
  dc_json_str(&b, dc->bootstrap);
  dc_buf_printf(&b, ",\"server\":");
  dc_json_str(&b, *dc->server ? dc->server : NULL);
  dc_buf_printf(&b, ",\"describe_configs_version\":%d", dc->server_version);
  int64_t next = dc->next_fetch_ms - dc_mono_ms();
  dc_buf_printf(&b,
                ",\"resource_type\":%d,\"refresh_interval_ms\":%d,"
                "\"next_fetch_in_ms\":%lld,\"generation\":%lld",
                dc->conf.resource_type, dc->interval_ms,
                (long long)(next > 0 ? next : 0), (long long)dc->generation);
  fetches_json(&b, dc, now);
  watch_json(&b, dc);
  dc_buf_printf(&b, ",\"events\":{\"delivered\":%lld,\"queued\":%zu,\"dropped\":%lld}",
                (long long)dc->n_events, dc->evq_len, (long long)dc->n_dropped);
  last_error_json(&b, dc);
  configs_json(&b, dc);
  ssl_json(&b, &dc->cw);
  dc_buf_printf(&b, "}");
  dc_buf_append(&b, "", 1);
  if (b.err) {
    dc_buf_free(&b);
    return NULL;
  }
  return (char *)b.data; /* the caller frees it */
}
