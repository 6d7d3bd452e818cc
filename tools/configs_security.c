/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: the security bits. --command-config reads the
 * connection's TLS/SASL properties; --reload-keystore asks dynconfd to
 * reload its listeners' certificates and its security files
 * (ReloadSecurity, API key 20000).
 */
#include "configs.h"

#include "common/errors.h"
#include "common/json.h"
#include "client/oauth_client.h"
#include "common/kvfile.h"
#include "common/text.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

/* ---- --command-config ------------------------------------------------- */

/* The string properties and where each goes in dc_kclient_security_t;
 * pem: the value is PEM text written on one line, "\n" for each newline. */
static const struct {
  const char *key;
  size_t off;
  bool pem;
} string_props[] = {
    {"security.protocol", offsetof(dc_kclient_security_t, protocol), false},
    {"ssl.ca.location", offsetof(dc_kclient_security_t, ssl_ca), false},
    {"ssl.ca.pem", offsetof(dc_kclient_security_t, ssl_ca_pem), true},
    {"ssl.certificate.location", offsetof(dc_kclient_security_t, ssl_cert),
     false},
    {"ssl.certificate.pem", offsetof(dc_kclient_security_t, ssl_cert_pem),
     true},
    {"ssl.key.location", offsetof(dc_kclient_security_t, ssl_key), false},
    {"ssl.key.pem", offsetof(dc_kclient_security_t, ssl_key_pem), true},
    {"ssl.key.password", offsetof(dc_kclient_security_t, ssl_key_password),
     false},
    {"ssl.keystore.location", offsetof(dc_kclient_security_t, ssl_keystore),
     false},
    {"ssl.keystore.password",
     offsetof(dc_kclient_security_t, ssl_keystore_password), false},
    {"ssl.cipher.suites", offsetof(dc_kclient_security_t, ssl_cipher_suites),
     false},
    {"sasl.mechanism", offsetof(dc_kclient_security_t, sasl_mechanism), false},
    {"sasl.mechanisms", offsetof(dc_kclient_security_t, sasl_mechanism),
     false},
    {"sasl.username", offsetof(dc_kclient_security_t, sasl_username), false},
    {"sasl.password", offsetof(dc_kclient_security_t, sasl_password), false},
    {"sasl.kerberos.service.name",
     offsetof(dc_kclient_security_t, sasl_kerberos_service_name), false},
    {"sasl.kerberos.principal",
     offsetof(dc_kclient_security_t, sasl_kerberos_principal), false},
    {"sasl.kerberos.keytab",
     offsetof(dc_kclient_security_t, sasl_kerberos_keytab), false},
};

/* In place: "\n" becomes a newline and "\\" a backslash; any other
 * backslash stays as written. */
static void unescape_pem(char *s) {
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (r[0] == '\\' && (r[1] == 'n' || r[1] == '\\'))
      *w++ = *++r == 'n' ? '\n' : '\\';
    else
      *w++ = *r;
  }
  *w = '\0';
}

/* Stores val for a string property; false when key is not one. */
static bool set_string_prop(dc_kclient_security_t *sec, const char *key,
                            char *val) {
  for (size_t i = 0; i < sizeof(string_props) / sizeof(string_props[0]);
       i++) {
    if (strcmp(key, string_props[i].key))
      continue;
    if (string_props[i].pem)
      unescape_pem(val);
    *(const char **)((char *)sec + string_props[i].off) = val;
    return true;
  }
  return false;
}

/* One KEY=VALUE of --command-config (a dc_kvfile_cb_t; opaque is the
 * opts_t). The value is copied into the options' arena, which outlives
 * the connection. 0, or -1 with the sentence in why. */
static int set_prop(void *opaque, const char *key, const char *value,
                    int lineno, char *why, size_t why_size) {
  (void)lineno;
  opts_t *o = opaque;
  char *val = dc_arena_strdup(&o->arena, value);
  if (!val) {
    dc_seterr(why, why_size, "out of memory");
    return -1;
  }
  if (set_string_prop(&o->sec, key, val))
    return 0;
  if (!strcmp(key, "sasl.jaas.config")) {
    o->jaas = val;
    return 0;
  }
  if (!strcmp(key, "sasl.oauthbearer.config")) {
    o->oauth_config = val;
    return 0;
  }
  if (!strcmp(key, "sasl.oauthbearer.token.endpoint.url")) {
    if (strncmp(val, "file://", 7)) {
      dc_seterr(why, why_size, "%s: only file:// URLs are read here, not "
                "'%.100s'", key, val);
      return -1;
    }
    o->oauth_token_url = val;
    return 0;
  }
  if (!strcmp(key, "enable.sasl.oauthbearer.unsecure.jwt") &&
      (!strcmp(val, "true") || !strcmp(val, "false"))) {
    o->oauth_unsecure = !strcmp(val, "true");
    return 0;
  }
  if (!strcmp(key, "enable.ssl.certificate.verification") &&
      (!strcmp(val, "true") || !strcmp(val, "false"))) {
    o->sec.ssl_no_verify = !strcmp(val, "false");
    return 0;
  }
  if (!strcmp(key, "ssl.endpoint.identification.algorithm") &&
      (!strcmp(val, "https") || !strcmp(val, "none"))) {
    o->sec.ssl_no_hostname_check = !strcmp(val, "none");
    return 0;
  }
  if (!strcmp(key, "enable.ssl.certificate.verification") ||
      !strcmp(key, "ssl.endpoint.identification.algorithm")) {
    dc_seterr(why, why_size, "bad value '%s' for %s", val, key);
    return -1;
  }
  char known[1024] = "";
  size_t n = 0;
  for (size_t i = 0; i < sizeof(string_props) / sizeof(string_props[0]);
       i++)
    if (n < sizeof(known))
      n += (size_t)snprintf(known + n, sizeof(known) - n, "%s, ",
                            string_props[i].key);
  dc_seterr(why, why_size,
            "unknown property '%s' (known: %s"
            "enable.ssl.certificate.verification, "
            "ssl.endpoint.identification.algorithm, sasl.jaas.config, "
            "sasl.oauthbearer.config, "
            "sasl.oauthbearer.token.endpoint.url, "
            "enable.sasl.oauthbearer.unsecure.jwt)",
            key, known);
  return -1;
}

/* The token file's one JWT (blanks around it dropped), into the arena. */
static const char *read_token_file(opts_t *o, const char *path, char *why,
                                   size_t why_size) {
  FILE *f = fopen(path, "r");
  if (!f) {
    dc_seterr(why, why_size, "cannot read the token file %s: %s", path,
              strerror(errno));
    return NULL;
  }
  char buf[8194];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  bool more = fgetc(f) != EOF;
  fclose(f);
  buf[n] = '\0';
  char *t = buf + strspn(buf, " \t\r\n");
  for (size_t l = strlen(t); l && strchr(" \t\r\n", t[l - 1]); l--)
    t[l - 1] = '\0';
  const char *tok = NULL;
  if (more || strlen(t) > 8192)
    dc_seterr(why, why_size, "the token file %s is over 8192 bytes", path);
  else if (!*t || strpbrk(t, " \t\r\n"))
    dc_seterr(why, why_size, "the token file %s does not hold one token",
              path);
  else if (!(tok = dc_arena_strdup(&o->arena, t)))
    dc_seterr(why, why_size, "out of memory");
  OPENSSL_cleanse(buf, sizeof(buf));
  return tok;
}

/* sasl.mechanism=OAUTHBEARER: the token from the file the configuration
 * names, or an unsigned one when that is explicitly allowed. 0, or -1
 * with why. */
static int oauth_token(opts_t *o, char *why, size_t why_size) {
  if (!o->sec.sasl_mechanism || strcmp(o->sec.sasl_mechanism, "OAUTHBEARER"))
    return 0;
  if (o->oauth_token_url) {
    o->sec.sasl_oauthbearer_token =
        read_token_file(o, o->oauth_token_url + 7, why, why_size);
    return o->sec.sasl_oauthbearer_token ? 0 : -1;
  }
  if (!o->oauth_unsecure) {
    dc_seterr(why, why_size, "OAUTHBEARER needs "
              "sasl.oauthbearer.token.endpoint.url=file://PATH, or "
              "sasl.oauthbearer.config with "
              "enable.sasl.oauthbearer.unsecure.jwt=true (unsigned, tests)");
    return -1;
  }
  char *tok = dc_oauth_unsecured_token(o->oauth_config, (int64_t)time(NULL),
                                       why, why_size);
  if (!tok)
    return -1;
  o->sec.sasl_oauthbearer_token = dc_arena_strdup(&o->arena, tok);
  free(tok);
  if (!o->sec.sasl_oauthbearer_token)
    dc_seterr(why, why_size, "out of memory");
  return o->sec.sasl_oauthbearer_token ? 0 : -1;
}

int cli_load_command_config(opts_t *o, const char *path) {
  if (o->command_config) {
    cli_usage_error("--command-config given more than once");
    return -1;
  }
  o->command_config = path;
  char err[1600];
  if (dc_kvfile_read(path, set_prop, o, err, sizeof(err)) ||
      (o->jaas && cli_jaas_apply(o, o->jaas, err, sizeof(err))) ||
      oauth_token(o, err, sizeof(err))) {
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

