/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's settings by their config-file names: each key's parsing and
 * bounds (the command line's options map onto them), the --config file,
 * the checks across settings, and freeing them.
 */
#include "dynconfd.h"

#include "broker/handlers.h"
#include "common/kvfile.h"
#include "common/schema.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool set_str(char **dst, const char *v) {
  free(*dst);
  *dst = strdup(v);
  return *dst != NULL;
}

/* A key with two values, no and yes (e.g. "false", "true"): *out = the
 * value is yes. False, said, for anything else. */
static bool parse_choice(const char *key, const char *v, const char *no,
                         const char *yes, bool *out) {
  if (strcmp(v, no) && strcmp(v, yes)) {
    fprintf(stderr, "dynconfd: %s must be %s or %s\n", key, yes, no);
    return false;
  }
  *out = !strcmp(v, yes);
  return true;
}

bool parse_num(const char *what, const char *v, int64_t min,
               int64_t max, int64_t *out) {
  if (!dc_parse_int64(v, out) || *out < min || *out > max) {
    fprintf(stderr, "dynconfd: %s must be an integer in %lld..%lld, not '%s'\n",
            what, (long long)min, (long long)max, v);
    return false;
  }
  return true;
}

/* The store.* settings; false (with a message) for a bad value, and
 * *known false for a key that is not one of them. */
static bool apply_store_setting(settings_t *st, const char *key,
                                const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "store")) {
    if (strcmp(val, "sqlite") && strcmp(val, "kafka")) {
      fprintf(stderr, "dynconfd: store must be sqlite or kafka, not '%s'\n",
              val);
      return false;
    }
    return set_str(&st->store, val);
  }
  if (!strcmp(key, "store.bootstrap.servers"))
    return set_str(&st->store_bootstrap, val);
  if (!strcmp(key, "store.topic"))
    return set_str(&st->store_topic, val);
  if (!strcmp(key, "store.config.file"))
    return set_str(&st->store_config, val);
  if (!strcmp(key, "store.timeout.ms"))
    return parse_num(key, val, 100, 3600000, &st->store_timeout_ms);
  if (!strcmp(key, "log.format"))
    return parse_choice(key, val, "text", "json", &st->log_json);
  if (!strcmp(key, "metrics.listen"))
    return set_str(&st->metrics_listen, val);
  if (!strcmp(key, "store.history.topic"))
    return set_str(&st->store_history_topic, val);
  if (!strcmp(key, "forward.listener"))
    return set_str(&st->forward_listener, val);
  if (!strcmp(key, "forward.config"))
    return set_str(&st->forward_config, val);
  if (!strcmp(key, "store.session.timeout.ms"))
    return parse_num(key, val, 1000, 3600000, &st->store_session_ms);
  if (!strcmp(key, "store.read.only"))
    return parse_choice(key, val, "false", "true", &st->store_read_only);
  *known = false;
  return false;
}

/* An unsigned setting in min..max; false (with a message) when not. */
static bool parse_unsigned(const char *key, const char *v, unsigned min,
                           unsigned max, unsigned *out) {
  int64_t n;
  if (!parse_num(key, v, min, max, &n))
    return false;
  *out = (unsigned)n;
  return true;
}

/* The metrics endpoint's bounds, as apply_listener_setting. */
static bool apply_metrics_setting(settings_t *st, const char *key,
                                  const char *val, bool *known) {
  dc_http_limits_t *l = &st->srv.http;
  unsigned bytes;
  *known = true;
  if (!strcmp(key, "metrics.max.connections"))
    return parse_unsigned(key, val, 1, 65536, &l->max_connections);
  if (!strcmp(key, "metrics.max.connections.per.ip"))
    return parse_unsigned(key, val, 1, 65536, &l->max_per_address);
  if (!strcmp(key, "metrics.idle.timeout.seconds"))
    return parse_unsigned(key, val, 1, 3600, &l->idle_timeout_s);
  if (!strcmp(key, "metrics.max.header.bytes")) {
    if (!parse_unsigned(key, val, 4096, 1024 * 1024, &bytes))
      return false;
    l->max_header_bytes = bytes;
    return true;
  }
  *known = false;
  return false;
}

/* The listener settings; false (with a message) for a bad value, and
 * *known false for a key that is not one of them. */
static bool apply_listener_setting(settings_t *st, const char *key,
                                   const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "listeners") || !strcmp(key, "listen")) {
    char *copy = strdup(val), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (st->n_listen == MAX_LISTEN) {
        fprintf(stderr, "dynconfd: at most %d listeners\n", MAX_LISTEN);
        free(copy);
        return false;
      }
      st->listen[st->n_listen++] = strdup(t);
    }
    free(copy);
    return true;
  }
  if (!strcmp(key, "advertised.listeners") || !strcmp(key, "advertise")) {
    char *copy = strdup(val), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
      if (st->n_advertise < MAX_LISTEN)
        st->advertise[st->n_advertise++] = strdup(t);
    free(copy);
    return true;
  }
  if (!strcmp(key, "listener.security.protocol.map"))
    return set_str(&st->protocol_map, val);
  *known = false;
  return false;
}

/* sasl.oauthbearer.*, as apply_listener_setting. */
static bool apply_oauth_setting(settings_t *st, const char *key,
                                const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "sasl.oauthbearer.jwks.file"))
    return set_str(&st->oauth_jwks, val);
  if (!strcmp(key, "sasl.oauthbearer.unsecured"))
    return parse_choice(key, val, "false", "true", &st->oauth_unsecured);
  if (!strcmp(key, "sasl.oauthbearer.expected.issuer"))
    return set_str(&st->oauth_issuer, val);
  if (!strcmp(key, "sasl.oauthbearer.expected.audience"))
    return set_str(&st->oauth_audience, val);
  if (!strcmp(key, "sasl.oauthbearer.sub.claim.name"))
    return set_str(&st->oauth_claim, val);
  if (!strcmp(key, "sasl.oauthbearer.clock.skew.seconds"))
    return parse_num(key, val, 0, 3600, &st->oauth_skew_s);
  *known = false;
  return false;
}

/* The TLS, SASL and authorization settings, as apply_listener_setting. */
static bool apply_security_setting(settings_t *st, const char *key,
                                   const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "ssl.certificate.location"))
    return set_str(&st->ssl_cert, val);
  if (!strcmp(key, "ssl.key.location"))
    return set_str(&st->ssl_key, val);
  if (!strcmp(key, "ssl.ca.location"))
    return set_str(&st->ssl_ca, val);
  if (!strcmp(key, "ssl.client.auth")) {
    if (!strcmp(val, "none"))
      st->ssl_client_auth = DC_TLS_CLIENT_AUTH_NONE;
    else if (!strcmp(val, "requested"))
      st->ssl_client_auth = DC_TLS_CLIENT_AUTH_REQUESTED;
    else if (!strcmp(val, "required"))
      st->ssl_client_auth = DC_TLS_CLIENT_AUTH_REQUIRED;
    else {
      fprintf(stderr, "dynconfd: %s must be none, requested or required, not "
                      "'%s'\n", key, val);
      return false;
    }
    return true;
  }
  if (!strcmp(key, "sasl.credentials.file"))
    return set_str(&st->credentials, val);
  if (!strcmp(key, "sasl.enabled.mechanisms"))
    return set_str(&st->sasl_mechanisms, val);
  if (!strcmp(key, "acl.file"))
    return set_str(&st->acl_file, val);
  if (!strncmp(key, "sasl.oauthbearer.", 17))
    return apply_oauth_setting(st, key, val, known);
  if (!strcmp(key, "sasl.kerberos.service.name"))
    return set_str(&st->krb_service, val);
  if (!strcmp(key, "sasl.kerberos.keytab")) { /* empty: none */
    free(st->krb_keytab);
    st->krb_keytab = NULL;
    return !*val || set_str(&st->krb_keytab, val);
  }
  if (!strcmp(key, "sasl.kerberos.principal.to.local.rules"))
    return set_str(&st->krb_rules, val);
  if (!strcmp(key, "super.users"))
    return set_str(&st->super_users, val);
  *known = false;
  return false;
}

/* The bounds on sessions, requests, entities and the fleet view, as
 * apply_listener_setting. */
static bool apply_limit_setting(settings_t *st, const char *key,
                                const char *val, bool *known) {
  *known = true;
  if (!strcmp(key, "group.min.session.timeout.ms"))
    return parse_num(key, val, 1, 3600000, &st->st_min);
  if (!strcmp(key, "group.max.session.timeout.ms"))
    return parse_num(key, val, 1, 3600000, &st->st_max);
  if (!strcmp(key, "connections.max.reauth.ms"))
    return parse_num(key, val, 0, INT64_C(86400000) * 365, &st->reauth_ms);
  if (!strcmp(key, "max.request.resources"))
    return parse_num(key, val, 1, 1000000, &st->max_req_resources);
  if (!strcmp(key, "max.request.configs"))
    return parse_num(key, val, 1, 1000000, &st->max_req_configs);
  if (!strcmp(key, "max.entity.configs"))
    return parse_num(key, val, 1, 1000000, &st->max_entity_configs);
  if (!strcmp(key, "max.entities"))
    return parse_num(key, val, 1, INT64_MAX / 2, &st->max_entities);
  if (!strcmp(key, "max.request.writes"))
    return parse_num(key, val, 3000, 100000000, &st->max_req_writes);
  if (!strcmp(key, "fleet.retention.ms"))
    return parse_num(key, val, 0, INT64_C(86400000) * 30,
                     &st->fleet_retention_ms);
  if (!strcmp(key, "fleet.max.bytes"))
    return parse_num(key, val, 1024 * 1024, INT64_MAX / 2,
                     &st->fleet_max_bytes);
  if (!strcmp(key, "fleet.max.waits"))
    return parse_num(key, val, 1, 100000, &st->fleet_max_waits);
  if (!strcmp(key, "fleet.max.waits.per.principal"))
    return parse_num(key, val, 1, 100000, &st->fleet_max_waits_pp);
  if (!strcmp(key, "connection.failed.authentication.delay.ms"))
    return parse_num(key, val, 0, 60000, &st->failed_auth_delay_ms);
  if (!strcmp(key, "max.response.bytes"))
    return parse_num(key, val, 65536, 1024 * 1024 * 1024, &st->max_response);
  *known = false;
  return false;
}

/* The event loop's bounds on frames, idle time, buffers and connections
 * (st->srv), as apply_listener_setting. */
static bool apply_server_setting(settings_t *st, const char *key,
                                 const char *val, bool *known) {
  int64_t n;
  *known = true;
  if (!strcmp(key, "socket.request.max.bytes")) {
    if (!parse_num(key, val, 64, 100 * 1024 * 1024, &n))
      return false;
    st->srv.max_request_size = (size_t)n;
    return true;
  }
  if (!strcmp(key, "connections.max.idle.ms")) {
    if (!parse_num(key, val, 100, INT32_MAX, &n))
      return false;
    st->srv.idle_timeout_ms = (int)n;
    return true;
  }
  if (!strcmp(key, "max.buffered.bytes")) {
    if (!parse_num(key, val, 16 * 1024 * 1024, INT64_MAX / 2, &n))
      return false;
    st->srv.max_buffered = (size_t)n;
    return true;
  }
  if (!strcmp(key, "max.connections")) {
    if (!parse_num(key, val, 1, 10000000, &n))
      return false;
    st->srv.max_connections = (int)n;
    return true;
  }
  if (!strcmp(key, "max.connection.creation.rate") ||
      !strcmp(key, "max.connection.creation.rate.per.ip")) {
    if (!parse_num(key, val, 0, 10000000, &n))
      return false;
    if (strstr(key, "per.ip"))
      st->srv.max_connection_rate_per_ip = (double)n;
    else
      st->srv.max_connection_rate = (double)n;
    return true;
  }
  *known = false;
  return false;
}

/* Applies one setting by its config-file name. Strings are duplicated and
 * owned by settings (freed at exit). */
bool apply_setting(settings_t *st, const char *key, const char *val) {
  int64_t n;
  if (!strcmp(key, "data.dir")) {
    free(st->data_dir);
    st->data_dir = strdup(val);
    return true;
  }
  if (!strcmp(key, "node.id")) {
    if (!parse_num(key, val, 0, INT32_MAX, &n))
      return false;
    st->node_id = (int32_t)n;
    return true;
  }
  if (!strcmp(key, "allow.unknown.configs"))
    return parse_choice(key, val, "false", "true", &st->allow_unknown);
  /* The other keys belong to one group each; the first that knows the
   * key applies it. */
  static bool (*const groups[])(settings_t *, const char *, const char *,
                                bool *) = {
      apply_listener_setting, apply_security_setting, apply_limit_setting,
      apply_server_setting, apply_store_setting, apply_metrics_setting};
  for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
    bool known;
    bool ok = groups[i](st, key, val, &known);
    if (known)
      return ok;
  }
  fprintf(stderr, "dynconfd: unknown setting '%s'\n", key);
  return false;
}

/* One setting of the --config file (a dc_kvfile_cb_t; opaque is the
 * settings). apply_setting() has said what is wrong on stderr. */
static int config_file_setting(void *opaque, const char *key,
                               const char *value, int lineno, char *why,
                               size_t why_size) {
  (void)lineno;
  if (apply_setting(opaque, key, value))
    return 0;
  dc_seterr(why, why_size, "the setting '%s' was refused (see above)", key);
  return -1;
}

bool load_config_file(settings_t *st, const char *path) {
  char err[1600];
  if (dc_kvfile_read(path, config_file_setting, st, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return false;
  }
  return true;
}

void settings_free(settings_t *st) {
  for (int i = 0; i < st->n_listen; i++)
    free(st->listen[i]);
  for (int i = 0; i < st->n_advertise; i++)
    free(st->advertise[i]);
  free(st->data_dir);
  free(st->store);
  free(st->store_bootstrap);
  free(st->store_topic);
  free(st->store_config);
  free(st->protocol_map);
  free(st->forward_listener);
  free(st->forward_config);
  free(st->store_history_topic);
  free(st->metrics_listen);
  free(st->ssl_cert);
  free(st->ssl_key);
  free(st->ssl_ca);
  free(st->credentials);
  free(st->sasl_mechanisms);
  free(st->oauth_jwks);
  free(st->oauth_issuer);
  free(st->oauth_audience);
  free(st->oauth_claim);
  free(st->krb_service);
  free(st->krb_keytab);
  free(st->krb_rules);
  free(st->acl_file);
  free(st->super_users);
}

/* The Kafka store's options from the settings. */
int kafka_opts(const settings_t *st, dc_kafka_store_opts_t *o,
               char *errstr, size_t errstr_size) {
  if (!st->store_bootstrap) {
    dc_seterr(errstr, errstr_size, "--store kafka needs --store-bootstrap "
             "HOST:PORT,...");
    return -1;
  }
  *o = (dc_kafka_store_opts_t){.data_dir = st->data_dir,
                               .bootstrap = st->store_bootstrap,
                               .topic = st->store_topic,
                               .history_topic = st->store_history_topic,
                               .config_file = st->store_config,
                               .timeout_ms = (int)st->store_timeout_ms,
                               .node_id = st->node_id,
                               .read_only = st->store_read_only,
                               .session_timeout_ms =
                                   (int)st->store_session_ms};
  return 0;
}

/* Settings valid one by one that cannot work together. */
bool limits_consistent(const settings_t *st) {
  if (st->st_min > st->st_max) {
    fprintf(stderr, "dynconfd: session timeout minimum %lld is above the "
                    "maximum %lld\n",
            (long long)st->st_min, (long long)st->st_max);
    return false;
  }
  if (st->max_req_writes < 3 * st->max_entity_configs) {
    /* One entity's largest change: its old set, its new set, an audit
     * row per key. */
    fprintf(stderr, "dynconfd: max.request.writes (%lld) must be at least "
                    "three times max.entity.configs (%lld), or an entity "
                    "could hold more than one request may rewrite\n",
            (long long)st->max_req_writes, (long long)st->max_entity_configs);
    return false;
  }
  return true;
}

/* GSSAPI is configured by a keytab, or by naming it (the default keytab). */
bool kerberos_enabled(const settings_t *st) {
  const char *m = st->sasl_mechanisms;
  for (size_t n; m && *m; m += n) {
    m += strspn(m, ", ");
    n = strcspn(m, ", ");
    if (n == 6 && !strncmp(m, "GSSAPI", 6))
      return true;
  }
  return st->krb_keytab != NULL;
}

/* OAUTHBEARER and GSSAPI are offered by default once configured (GSSAPI
 * by its keytab), and OAUTHBEARER never unconfigured. False after a
 * usage error. */
bool resolve_mechanisms(settings_t *st) {
  bool oauth = st->oauth_jwks || st->oauth_unsecured;
  if (!st->sasl_mechanisms && (oauth || st->krb_keytab)) {
    char list[128];
    snprintf(list, sizeof(list), "%s%s%s", DC_SASL_DEFAULT_MECHANISMS,
             oauth ? ",OAUTHBEARER" : "", st->krb_keytab ? ",GSSAPI" : "");
    return set_str(&st->sasl_mechanisms, list);
  }
  if (st->sasl_mechanisms && !oauth &&
      strstr(st->sasl_mechanisms, "OAUTHBEARER")) {
    fprintf(stderr, "dynconfd: OAUTHBEARER is enabled but neither "
                    "--sasl-oauthbearer-jwks nor --sasl-oauthbearer-unsecured "
                    "is set\n");
    return false;
  }
  return true;
}
