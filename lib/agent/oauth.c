/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OAUTHBEARER tokens handed over by the application through its token
 * refresh callback, as librdkafka's oauthbearer_token_refresh_cb: asked for
 * once in dynconf_new(), then from dynconf_poll() at 80 % of a token's
 * life (every 10 s after a failure); the fetching thread takes a copy for
 * each new connection.
 */
#include "agent/agent_int.h"
#include "common/clock.h"
#include "common/text.h"

#include <openssl/crypto.h>

#include <stdlib.h>
#include <string.h>

#define RETRY_MS 10000

static void wipe_free(char *s) {
  if (s) {
    OPENSSL_cleanse(s, strlen(s));
    free(s);
  }
}

void dc_oauth_free(dc_oauth_state_t *o) {
  wipe_free(o->token);
  free(o->failure);
  o->token = o->failure = NULL;
}

/* Calls the callback with sasl.oauthbearer.config as the agent reads it
 * (the override, else the application's). Application thread. */
static void call_refresh(dynconf_t *dc) {
  const char *over = dc->conf.sec[DC_SEC_OAUTH_CONFIG];
  char *cfg = NULL;
  size_t sz = 0;
  if (!*over && rd_kafka_conf_get(dc->app_conf, "sasl.oauthbearer.config",
                                  NULL, &sz) == RD_KAFKA_CONF_OK &&
      sz > 1 && (cfg = malloc(sz)) &&
      rd_kafka_conf_get(dc->app_conf, "sasl.oauthbearer.config", cfg, &sz) !=
          RD_KAFKA_CONF_OK) {
    free(cfg);
    cfg = NULL;
  }
  dc->conf.oauth_refresh_cb(dc, *over ? over : cfg, dc->conf.opaque);
  wipe_free(cfg);
}

void dc_oauth_start(dynconf_t *dc, bool oauthbearer) {
  if (!dc->conf.oauth_refresh_cb || !oauthbearer)
    return;
  pthread_mutex_lock(&dc->lock);
  dc->oauth.active = true;
  dc->oauth.refresh_mono_ms = dc_mono_ms() + RETRY_MS;
  pthread_mutex_unlock(&dc->lock);
  call_refresh(dc);
}

void dc_oauth_poll(dynconf_t *dc) {
  pthread_mutex_lock(&dc->lock);
  bool due = dc->oauth.active && dc->oauth.refresh_mono_ms &&
             dc_mono_ms() >= dc->oauth.refresh_mono_ms;
  if (due) /* asked again unless a token or a failure comes */
    dc->oauth.refresh_mono_ms = dc_mono_ms() + RETRY_MS;
  pthread_mutex_unlock(&dc->lock);
  if (due)
    call_refresh(dc);
}

char *dc_oauth_token_copy(dynconf_t *dc, char *why, size_t why_size) {
  pthread_mutex_lock(&dc->lock);
  char *t = NULL;
  if (dc->oauth.token && dc->oauth.expires_wall_ms > dc_wall_ms()) {
    if (!(t = strdup(dc->oauth.token)))
      dc_seterr(why, why_size, "out of memory");
  } else if (dc->oauth.failure) {
    dc_seterr(why, why_size, "no OAUTHBEARER token: %s", dc->oauth.failure);
  } else {
    dc_seterr(why, why_size, "no OAUTHBEARER token: the token refresh "
              "callback has %s", dc->oauth.token ? "not replaced the "
              "expired one" : "not set one (dynconf_oauthbearer_set_token)");
  }
  pthread_mutex_unlock(&dc->lock);
  return t;
}

/* A token is one word of printable ASCII (a JWT's three base64url parts). */
static bool token_ok(const char *t) {
  if (!t || !*t)
    return false;
  for (; *t; t++)
    if (*t <= ' ' || *t > '~')
      return false;
  return true;
}

dynconf_err_t dynconf_oauthbearer_set_token(dynconf_t *dc,
                                            const char *token_value,
                                            int64_t md_lifetime_ms,
                                            const char *md_principal_name,
                                            char *errstr, size_t errstr_size) {
  int64_t now = dc_wall_ms();
  const char *bad = !dc->conf.oauth_refresh_cb
                        ? "the agent has no token refresh callback"
                    : !token_ok(token_value)
                        ? "the token must be one word of printable characters"
                    : !md_principal_name || !*md_principal_name
                        ? "the principal name must not be empty"
                    : md_lifetime_ms <= now ? "the token's lifetime has passed"
                                            : NULL;
  if (bad) {
    dc_seterr(errstr, errstr_size, "dynconf_oauthbearer_set_token: %s", bad);
    return DYNCONF_ERR__INVALID_ARG;
  }
  char *copy = strdup(token_value);
  if (!copy) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return DYNCONF_ERR__NOMEM;
  }
  pthread_mutex_lock(&dc->lock);
  dc_oauth_free(&dc->oauth);
  dc->oauth.token = copy;
  dc->oauth.expires_wall_ms = md_lifetime_ms;
  dc->oauth.refresh_mono_ms = dc_mono_ms() + (md_lifetime_ms - now) * 8 / 10;
  pthread_mutex_unlock(&dc->lock);
  return DYNCONF_ERR_NO_ERROR;
}

dynconf_err_t dynconf_oauthbearer_set_token_failure(dynconf_t *dc,
                                                    const char *errstr) {
  char *copy;
  if (!dc->conf.oauth_refresh_cb || !errstr || !*errstr ||
      !(copy = strdup(errstr)))
    return DYNCONF_ERR__INVALID_ARG;
  pthread_mutex_lock(&dc->lock);
  free(dc->oauth.failure);
  dc->oauth.failure = copy;
  dc->oauth.refresh_mono_ms = dc_mono_ms() + RETRY_MS;
  pthread_mutex_unlock(&dc->lock);
  dc_agent_log(dc, 4, "OAUTHBEARER", "the application has no token: %s",
               errstr);
  return DYNCONF_ERR_NO_ERROR;
}
