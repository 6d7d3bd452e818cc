/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs: output, errors and entity phrasing shared by the CLI's
 * parts. The bottom of the tool: it calls nothing in the other configs_*
 * files, so configs_main.c, configs_requests.c and configs_security.c can
 * all use it.
 */
#include "configs.h"

#include "common/json.h"
#include "common/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- errors ----------------------------------------------------------- */

void cli_usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("Error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(" (see " PROG " --help)\n", stderr);
}

void cli_fail(const char *fmt, ...) {
  va_list ap;
  fputs("Error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

const char *cli_err_name(int code, char *buf, size_t size) {
  const char *n = dc_err_name((dc_err_t)code);
  if (strcmp(n, "UNKNOWN"))
    return n;
  snprintf(buf, size, "error %d", code);
  return buf;
}

int cli_check_error(int16_t code, const char *message) {
  if (!code)
    return EXIT_OK;
  char nb[32];
  cli_fail("%s: %s", cli_err_name(code, nb, sizeof(nb)),
           message && *message ? message
                               : dc_err_str((dc_err_t)code));
  return EXIT_FAIL;
}

/* ---- text and output -------------------------------------------------- */

char *cli_trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

int cli_flush_out(dc_buf_t *b) {
  if (b->err) {
    cli_fail("out of memory");
    return EXIT_FAIL;
  }
  if ((b->len && fwrite(b->data, 1, b->len, stdout) != b->len) ||
      fflush(stdout)) {
    cli_fail("cannot write to standard output");
    return EXIT_FAIL;
  }
  return EXIT_OK;
}

/* ---- entity naming ---------------------------------------------------- */

void cli_entity_phrase(const opts_t *o, char *buf, size_t size) {
  if (o->entity_type == ENT_BROKERS)
    snprintf(buf, size, "broker %s", o->entity_name);
  else if (o->entity_type == ENT_USERS && o->client)
    snprintf(buf, size, "user-principal '%s', client-id '%s'", o->user,
             o->client);
  else if (o->entity_type == ENT_USERS)
    snprintf(buf, size, "user-principal '%s'", o->user);
  else if (dc_entity_is_default(o->entity_name))
    snprintf(buf, size, "the default client-id");
  else
    snprintf(buf, size, "client-id '%s'", o->entity_name);
}

void cli_json_entity(dc_buf_t *b, const opts_t *o) {
  dc_buf_printf(b, "\"entity_type\":\"%s\",\"entity_name\":",
                o->entity_type == ENT_BROKERS ? "brokers"
                : o->entity_type == ENT_USERS ? "users"
                                              : "clients");
  dc_json_str(b, o->entity_type == ENT_USERS ? o->user : o->entity_name);
  if (o->entity_type == ENT_USERS && o->client) {
    dc_buf_printf(b, ",\"client_id\":");
    dc_json_str(b, o->client);
  }
}
