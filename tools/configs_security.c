/*
 * dynconf-configs: the security bits. --command-config reads the
 * connection's TLS/SASL properties; --reload-keystore asks dynconfd to
 * reload its listeners' certificates (ReloadSecurity, API key 20000).
 */
#include "configs.h"

#include "common/json.h"
#include "common/errors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- --command-config ------------------------------------------------- */

int cli_load_command_config(opts_t *o, const char *path) {
  if (o->command_config) {
    cli_usage_error("--command-config given more than once");
    return -1;
  }
  o->command_config = path;
  FILE *f = fopen(path, "r");
  if (!f) {
    cli_usage_error("cannot read --command-config file %s: %s", path,
                    strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  int lineno = 0, rc = 0;
  while (rc == 0 && getline(&line, &cap, f) != -1) {
    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    char *t = cli_trim(line);
    if (!*t || *t == '#' || *t == '!')
      continue;
    char *eq = strchr(t, '=');
    if (!eq) {
      cli_usage_error("%s line %d: expected KEY=VALUE", path, lineno);
      rc = -1;
      break;
    }
    *eq = '\0';
    char *key = cli_trim(t);
    char *val = dc_arena_strdup(&o->arena, cli_trim(eq + 1));
    if (!val) {
      cli_fail("out of memory");
      rc = -1;
      break;
    }
    if (!strcmp(key, "security.protocol"))
      o->sec.protocol = val;
    else if (!strcmp(key, "ssl.ca.location"))
      o->sec.ssl_ca = val;
    else if (!strcmp(key, "ssl.certificate.location"))
      o->sec.ssl_cert = val;
    else if (!strcmp(key, "ssl.key.location"))
      o->sec.ssl_key = val;
    else if (!strcmp(key, "sasl.mechanism") || !strcmp(key, "sasl.mechanisms"))
      o->sec.sasl_mechanism = val;
    else if (!strcmp(key, "sasl.username"))
      o->sec.sasl_username = val;
    else if (!strcmp(key, "sasl.password"))
      o->sec.sasl_password = val;
    else if (!strcmp(key, "enable.ssl.certificate.verification") &&
             (!strcmp(val, "true") || !strcmp(val, "false")))
      o->sec.ssl_no_verify = !strcmp(val, "false");
    else if (!strcmp(key, "ssl.endpoint.identification.algorithm") &&
             (!strcmp(val, "https") || !strcmp(val, "none")))
      o->sec.ssl_no_hostname_check = !strcmp(val, "none");
    else if (!strcmp(key, "enable.ssl.certificate.verification") ||
             !strcmp(key, "ssl.endpoint.identification.algorithm")) {
      cli_usage_error("%s line %d: bad value '%s' for %s", path, lineno, val,
                      key);
      rc = -1;
    } else {
      cli_usage_error("%s line %d: unknown property '%s' (known: "
                      "security.protocol, ssl.ca.location, "
                      "ssl.certificate.location, ssl.key.location, "
                      "sasl.mechanism, sasl.username, sasl.password, "
                      "enable.ssl.certificate.verification, "
                      "ssl.endpoint.identification.algorithm)",
                      path, lineno, key);
      rc = -1;
    }
  }
  if (line)
    explicit_bzero(line, cap); /* it may have held the password */
  free(line);
  fclose(f);
  return rc;
}

/* ---- --reload-keystore ------------------------------------------------ */

static int enc_reload(dc_buf_t *b, int16_t v, const void *req) {
  return dc_reload_req_encode(b, v, req);
}

static int dec_reload(dc_rd_t *rd, int16_t v, void *resp) {
  return dc_reload_resp_decode(rd, v, resp);
}

/* "2026-12-30T12:00:00Z" for wall-clock ms. */
static void iso_time(int64_t ms, char *buf, size_t size) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
    snprintf(buf, size, "%lld ms", (long long)ms);
}

/* One line (or JSON object) per listener reloaded or not. */
static int report_reload(const opts_t *o, dc_kclient_t *kc, int16_t v,
                         void *r) {
  (void)v;
  const dc_reload_resp_t *resp = r;
  int rc = cli_check_error(resp->error_code, resp->error_message);
  if (rc != EXIT_OK)
    return rc;
  dc_buf_t b;
  dc_buf_init(&b);
  bool all_ok = true;
  if (o->json)
    dc_buf_printf(&b, "{\"listeners\":[");
  for (int32_t i = 0; i < resp->n_listeners; i++) {
    const dc_reload_listener_t *l = &resp->listeners[i];
    const char *name = l->listener_name ? l->listener_name : "?";
    char until[64] = "";
    if (l->not_after_ms >= 0)
      iso_time(l->not_after_ms, until, sizeof(until));
    char nb[32];
    const char *why = l->error_message && *l->error_message
                          ? l->error_message
                          : cli_err_name(l->error_code, nb, sizeof(nb));
    all_ok &= l->error_code == 0;
    if (o->json) {
      dc_buf_printf(&b, "%s{\"listener\":", i ? "," : "");
      dc_json_str(&b, name);
      dc_buf_printf(&b, ",\"ok\":%s,\"error\":",
                    l->error_code ? "false" : "true");
      dc_json_str(&b, l->error_code ? why : NULL);
      dc_buf_printf(&b, ",\"subject\":");
      dc_json_str(&b, l->subject);
      dc_buf_printf(&b, ",\"not_after\":");
      dc_json_str(&b, until[0] ? until : NULL);
      dc_buf_printf(&b, "}");
    } else if (l->error_code) {
      dc_buf_printf(&b, "listener %s: reload failed: %s\n", name, why);
    } else {
      dc_buf_printf(&b, "reloaded listener %s", name);
      if (l->subject && *l->subject)
        dc_buf_printf(&b, ": subject %s", l->subject);
      if (until[0])
        dc_buf_printf(&b, ", valid until %s", until);
      dc_buf_printf(&b, "\n");
    }
  }
  if (o->json)
    dc_buf_printf(&b, "]}\n");
  else if (resp->n_listeners == 0)
    dc_buf_printf(&b, "no TLS listener%s%s on %s: nothing to reload\n",
                  o->listener ? " named " : "", o->listener ? o->listener : "",
                  dc_kclient_peer(kc));
  rc = cli_flush_out(&b);
  dc_buf_free(&b);
  if (rc == EXIT_OK && !all_ok)
    rc = EXIT_FAIL;
  return rc;
}

int cli_reload(const opts_t *o, dc_kclient_t *kc, int64_t deadline) {
  static const cli_api_t api = {
      .key = DC_API_RELOAD_SECURITY,
      .name = "ReloadSecurity",
      .unsupported = ", which --reload-keystore needs; is it a dynconfd with "
                     "TLS?",
      .encode = enc_reload,
      .decode = dec_reload,
      .report = report_reload,
  };
  dc_reload_req_t req = {.listener_name = (char *)o->listener};
  dc_reload_resp_t resp;
  return cli_call(o, kc, deadline, &api, &req, &resp);
}

