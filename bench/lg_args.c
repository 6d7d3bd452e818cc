/* SPDX-License-Identifier: BSD-2-Clause */
/* loadgen's command line: the usage text, the options and their checks. */
#include "lg_run.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void lg_usage(FILE *f) {
  fprintf(f,
          "usage: loadgen (--target HOST:PORT | --mock) [options]\n"
          "  --api describe|metadata|watch|alter\n"
          "                           request type (default describe); watch:\n"
          "                           a Watch of the client knowing no version\n"
          "                           (answered at once); alter: a validate-only\n"
          "                           IncrementalAlterConfigs of the client\n"
          "                           (session.timeout.ms=30000)\n"
          "  --version V              API version (default: describe 1, "
          "metadata 2, watch 1, alter 1)\n"
          "  --connections N          connections (default 16)\n"
          "  --pipeline D             requests in flight per connection "
          "(default 32)\n"
          "  --duration S             run for S seconds (default 10)\n"
          "  --requests N             stop after N requests in total (and\n"
          "                           after --duration only if also given)\n"
          "  --client NAME            DescribeConfigs client-id entity "
          "(default bench-client)\n"
          "  --clients K              cycle through K clients named NAME and a\n"
          "                           7-digit number from 0000000 (bench/run-scale.sh's\n"
          "                           names): no two requests in a row alike\n"
          "  --mock                   start librdkafka's mock cluster in this "
          "process and target it\n"
          "  --quiet                  only the RESULT line\n"
          "  --tls-ca FILE            connect with TLS, trusting this CA "
          "(PEM)\n"
          "  --tls-cert FILE --tls-key FILE  client certificate and key "
          "(PEM)\n"
          "  --sasl-mechanism M       authenticate with PLAIN, SCRAM-SHA-256, "
          "SCRAM-SHA-512 or GSSAPI\n"
          "  --sasl-user U --sasl-password P  SASL credentials (a "
          "throw-away bench user;\n"
          "                           GSSAPI: a principal and its keytab, "
          "else the ticket cache)\n"
          "  --sasl-kerberos-service-name S  GSSAPI: the server is "
          "S/HOST (default kafka)\n"
          "  --setup N                measure connection set-up instead: N "
          "connections one\n"
          "                           after another (TCP [+ TLS] [+ SASL] + "
          "ApiVersions, close),\n"
          "                           stopping early at --duration if "
          "given\n");
}

int lg_split_hostport(const char *target, char *host, size_t hsz, char *port,
                      size_t psz) {
  const char *colon = strrchr(target, ':');
  if (!colon || colon == target || !colon[1])
    return -1;
  size_t hl = (size_t)(colon - target);
  if (target[0] == '[' && hl >= 2 && target[hl - 1] == ']') { /* [v6]:port */
    target++;
    hl -= 2;
  }
  if (hl >= hsz || strlen(colon + 1) >= psz)
    return -1;
  memcpy(host, target, hl);
  host[hl] = 0;
  snprintf(port, psz, "%s", colon + 1);
  return 0;
}

/* The numeric options; -1 when the value is bad. */
static int parse_number(cfg_t *c, int o, const char *arg, int *version) {
  char *end;
  switch (o) {
  case 'v':
    *version = (int)strtol(arg, &end, 10);
    return *end || *version < 0 || *version > 32767 ? -1 : 0;
  case 'c':
    c->connections = (int)strtol(arg, &end, 10);
    return *end || c->connections < 1 || c->connections > 10000 ? -1 : 0;
  case 'p':
    c->pipeline = (int)strtol(arg, &end, 10);
    return *end || c->pipeline < 1 || c->pipeline > 100000 ? -1 : 0;
  case 'd':
    c->duration_s = strtod(arg, &end);
    if (*end || !(c->duration_s > 0))
      return -1;
    c->duration_set = true;
    return 0;
  case 'n':
    c->requests = strtoull(arg, &end, 10);
    return *end || c->requests == 0 ? -1 : 0;
  case 'S':
    c->setup_count = strtoull(arg, &end, 10);
    return *end || c->setup_count == 0 ? -1 : 0;
  default:
    return -1;
  }
}

/* One getopt_long result into c; -1 when it is unknown or its value bad. */
static int parse_opt(cfg_t *c, int o, const char *arg, int *version) {
  switch (o) {
  case 't': c->target = arg; break;
  case 'a':
    if (!strcmp(arg, "describe"))
      c->api = API_DESCRIBE;
    else if (!strcmp(arg, "metadata"))
      c->api = API_METADATA;
    else if (!strcmp(arg, "watch"))
      c->api = API_WATCH;
    else if (!strcmp(arg, "alter"))
      c->api = API_ALTER;
    else
      return -1;
    break;
  case 'C': c->client_name = arg; break;
  case 'L':
    c->clients = atoi(arg);
    if (c->clients < 1 || c->clients > 1000000)
      return -1;
    break;
  case 'm': c->mock = true; break;
  case 'q': c->quiet = true; break;
  case 'A': c->tls_ca = arg; break;
  case 'E': c->tls_cert = arg; break;
  case 'K': c->tls_key = arg; break;
  case 'M': c->sasl.mechanism = arg; break;
  case 'U': c->sasl.user = arg; break;
  case 'P': c->sasl.password = arg; break;
  case 'k': c->sasl.krb_service = arg; break;
  case 'h': lg_usage(stdout); exit(0);
  default: return parse_number(c, o, arg, version);
  }
  return 0;
}

/* What the options need of each other, once all are read. */
static int check_cfg(cfg_t *c, int version) {
  if ((!c->target && !c->mock) || (c->target && c->mock))
    return -1;
  if ((c->tls_cert || c->tls_key) && !c->tls_ca) {
    fprintf(stderr, "loadgen: --tls-cert/--tls-key need --tls-ca\n");
    return -1;
  }
  char why[256];
  if ((c->sasl.mechanism || c->sasl.user || c->sasl.password) &&
      lg_sasl_conf_check(&c->sasl, why, sizeof(why))) {
    fprintf(stderr, "loadgen: %s\n", why);
    return -1;
  }
  if (c->sasl.mechanism && !strcmp(c->sasl.mechanism, "GSSAPI") &&
      c->target) {
    static char host[256], port[16];
    if (lg_split_hostport(c->target, host, sizeof(host), port, sizeof(port)))
      return -1;
    c->sasl.krb_host = host;
    if (lg_sasl_gssapi_creds(&c->sasl, why, sizeof(why))) {
      fprintf(stderr, "loadgen: %s\n", why);
      return -1;
    }
  }
  if (c->mock && (c->tls_ca || c->sasl.mechanism || c->setup_count)) {
    fprintf(stderr, "loadgen: --mock speaks plaintext load only\n");
    return -1;
  }
  if (c->mock && c->api != API_METADATA && c->api != API_DESCRIBE) {
    fprintf(stderr, "loadgen: the mock cluster serves no dynconf API\n");
    return -1;
  }
  static const int16_t default_version[] = {[API_DESCRIBE] = 1,
                                            [API_METADATA] = 2,
                                            [API_WATCH] = 1, [API_ALTER] = 1};
  c->version = (int16_t)(version >= 0 ? version : default_version[c->api]);
  return 0;
}

int lg_parse_args(int argc, char **argv, cfg_t *c) {
  static const struct option opts[] = {
      {"target", required_argument, 0, 't'},
      {"api", required_argument, 0, 'a'},
      {"version", required_argument, 0, 'v'},
      {"connections", required_argument, 0, 'c'},
      {"pipeline", required_argument, 0, 'p'},
      {"duration", required_argument, 0, 'd'},
      {"requests", required_argument, 0, 'n'},
      {"client", required_argument, 0, 'C'},
      {"clients", required_argument, 0, 'L'},
      {"mock", no_argument, 0, 'm'},
      {"quiet", no_argument, 0, 'q'},
      {"tls-ca", required_argument, 0, 'A'},
      {"tls-cert", required_argument, 0, 'E'},
      {"tls-key", required_argument, 0, 'K'},
      {"sasl-mechanism", required_argument, 0, 'M'},
      {"sasl-user", required_argument, 0, 'U'},
      {"sasl-password", required_argument, 0, 'P'},
      {"sasl-kerberos-service-name", required_argument, 0, 'k'},
      {"setup", required_argument, 0, 'S'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  int version = -1;
  c->api = API_DESCRIBE;
  c->connections = 16;
  c->pipeline = 32;
  c->duration_s = 10;
  c->client_name = "bench-client";
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
    if (parse_opt(c, o, optarg, &version))
      return -1;
  if (optind != argc)
    return -1;
  return check_cfg(c, version);
}
