/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: the security bits. --command-config reads the
 * connection's TLS/SASL properties (client/client_props.h);
 * --reload-keystore asks dynconfd to reload its listeners' certificates
 * and its security files (ReloadSecurity, API key 20000).
 */
#include "configs.h"

#include "common/errors.h"
#include "common/json.h"

#include <stdbool.h>
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
  char err[1600];
  if (dc_client_props_load(&o->props, path, err, sizeof(err))) {
    cli_usage_error("--command-config: %s", err);
    return -1;
  }
  return 0;
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

/* Why an entry failed: its message, else its error's name. */
static const char *why_failed(int16_t code, const char *message, char *nb,
                              size_t nb_size) {
  return message && *message ? message : cli_err_name(code, nb, nb_size);
}

/* One line (or JSON object) per listener reloaded or not. */
static void say_listener(const opts_t *o, dc_buf_t *b, int32_t i,
                         const dc_reload_listener_t *l) {
  const char *name = l->listener_name ? l->listener_name : "?";
  char until[64] = "", nb[32];
  if (l->not_after_ms >= 0)
    iso_time(l->not_after_ms, until, sizeof(until));
  const char *why = why_failed(l->error_code, l->error_message, nb,
                               sizeof(nb));
  if (o->json) {
    dc_buf_printf(b, "%s{\"listener\":", i ? "," : "");
    dc_json_str(b, name);
    dc_buf_printf(b, ",\"ok\":%s,\"error\":",
                  l->error_code ? "false" : "true");
    dc_json_str(b, l->error_code ? why : NULL);
    dc_buf_printf(b, ",\"subject\":");
    dc_json_str(b, l->subject);
    dc_buf_printf(b, ",\"not_after\":");
    dc_json_str(b, until[0] ? until : NULL);
    dc_buf_printf(b, "}");
  } else if (l->error_code) {
    dc_buf_printf(b, "listener %s: reload failed: %s\n", name, why);
  } else {
    dc_buf_printf(b, "reloaded listener %s", name);
    if (l->subject && *l->subject)
      dc_buf_printf(b, ": subject %s", l->subject);
    if (until[0])
      dc_buf_printf(b, ", valid until %s", until);
    dc_buf_printf(b, "\n");
  }
}

/* One line (or JSON object) per security file reloaded or not. */
static void say_file(const opts_t *o, dc_buf_t *b, int32_t i,
                     const dc_reload_file_t *f) {
  char nb[32];
  const char *why = f->error_code ? why_failed(f->error_code,
                                               f->error_message, nb,
                                               sizeof(nb))
                                  : NULL;
  if (o->json) {
    dc_buf_printf(b, "%s{\"what\":", i ? "," : "");
    dc_json_str(b, f->what);
    dc_buf_printf(b, ",\"path\":");
    dc_json_str(b, f->path);
    dc_buf_printf(b, ",\"ok\":%s,\"error\":", why ? "false" : "true");
    dc_json_str(b, why);
    dc_buf_printf(b, "}");
    return;
  }
  int len = dc_reload_file_say(NULL, 0, f->what, f->path, why);
  char *line = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (!line) {
    b->err = DC_ERR__NOMEM;
    return;
  }
  dc_reload_file_say(line, (size_t)len + 1, f->what, f->path, why);
  dc_buf_printf(b, "%s\n", line);
  free(line);
}

/* Nothing reloaded: no TLS listener (or none of that name), and from a
 * v1 server no file either; a v0 server does not say which files. */
static void say_nothing(const opts_t *o, dc_kclient_t *kc, dc_buf_t *b,
                        int16_t v) {
  dc_buf_printf(b, "no TLS listener%s%s on %s", o->listener ? " named " : "",
                o->listener ? o->listener : "", dc_kclient_peer(kc));
  if (v >= 1)
    dc_buf_printf(b, " and no security file: nothing to reload\n");
  else
    dc_buf_printf(b, "; its security files, if any, were reloaded (this "
                     "server does not say which)\n");
}

static int report_reload(const opts_t *o, dc_kclient_t *kc, int16_t v,
                         void *r) {
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
    say_listener(o, &b, i, &resp->listeners[i]);
    all_ok &= resp->listeners[i].error_code == 0;
  }
  if (o->json)
    dc_buf_printf(&b, "],\"files\":[");
  for (int32_t i = 0; i < resp->n_files; i++) {
    say_file(o, &b, i, &resp->files[i]);
    all_ok &= resp->files[i].error_code == 0;
  }
  if (o->json)
    dc_buf_printf(&b, "]}\n");
  else if (resp->n_listeners == 0 && resp->n_files == 0)
    say_nothing(o, kc, &b, v);
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

