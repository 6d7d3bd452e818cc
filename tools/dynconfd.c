/*
 * dynconfd: the dynconf config broker. Serves KIP-649 CLIENT configs over
 * the Kafka wire protocol, stores them in SQLite, prints its audit history.
 */
#include "broker/handlers.h"
#include "broker/server.h"
#include "broker/store.h"
#include "codec/proto.h"
#include "common/log.h"
#include "common/schema.h"
#include "dynconf.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define MAX_LISTEN 16

typedef struct settings {
  char *listen[MAX_LISTEN];
  int n_listen;
  char *advertise[MAX_LISTEN];
  int n_advertise;
  char *data_dir;
  int32_t node_id;
  int64_t st_min, st_max;
  bool allow_unknown;
  dc_server_opts_t srv;
  bool verbose;
} settings_t;

static dc_server_t *g_server;

static void usage(FILE *f) {
  fprintf(f,
"Usage: dynconfd [OPTIONS]\n"
"       dynconfd --data-dir DIR --history [--entity NAME]\n"
"\n"
"The dynconf config broker: serves dynamic client configs (KIP-649 CLIENT\n"
"resource, type 9) to librdkafka agents and any Kafka admin client.\n"
"\n"
"  --listen HOST:PORT        listen address, repeatable (default 127.0.0.1:9092;\n"
"                            port 0 picks a free port)\n"
"  --advertise HOST:PORT     address Metadata returns for the listener with the\n"
"                            same position (default: the bound address)\n"
"  --data-dir DIR            SQLite store directory (default ./dynconfd-data)\n"
"  --node-id N               broker node id (default 1)\n"
"  --config FILE             read settings from FILE (key=value lines, see README);\n"
"                            flags after it override it\n"
"  --session-timeout-min-ms N  lowest session.timeout.ms accepted (default 6000)\n"
"  --session-timeout-max-ms N  highest session.timeout.ms accepted (default 1800000)\n"
"  --allow-unknown-keys      relay config keys outside the schema\n"
"  --max-request-size BYTES  largest request frame accepted (default 1048576)\n"
"  --idle-timeout-ms N       close connections idle this long (default 600000)\n"
"  --max-connections N       refuse connections beyond N (default 100000)\n"
"  --history                 print the audit history of changes and exit\n"
"  --entity NAME             with --history: only this client-id\n"
"  -v, --verbose             debug logging\n"
"  -h, --help                this help\n"
"  -V, --version             print the version\n"
"\n"
"Prints 'listening on HOST:PORT' on stdout for each listener once it accepts\n"
"connections; logs go to stderr. SIGTERM or SIGINT stops it cleanly.\n"
"Exit status: 0 clean stop, 1 runtime failure, 2 usage error.\n");
}

static void on_signal(int sig) {
  (void)sig;
  if (g_server)
    dc_server_stop(g_server);
}

/* Splits "host:port" or "[v6]:port". */
static bool split_hostport(const char *s, char *host, size_t hsz, int *port) {
  const char *colon = strrchr(s, ':');
  if (!colon)
    return false;
  const char *h = s;
  size_t hl = (size_t)(colon - s);
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl >= hsz)
    return false;
  memcpy(host, h, hl);
  host[hl] = '\0';
  int64_t p;
  if (!dc_parse_int64(colon + 1, &p) || p < 0 || p > 65535)
    return false;
  *port = (int)p;
  return true;
}

static bool parse_num(const char *what, const char *v, int64_t min,
                      int64_t max, int64_t *out) {
  if (!dc_parse_int64(v, out) || *out < min || *out > max) {
    fprintf(stderr, "dynconfd: %s must be an integer in %lld..%lld, not '%s'\n",
            what, (long long)min, (long long)max, v);
    return false;
  }
  return true;
}

/* Applies one setting by its config-file name. Strings are duplicated and
 * owned by settings (freed at exit). */
static bool apply_setting(settings_t *st, const char *key, const char *val) {
  int64_t n;
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
  } else if (!strcmp(key, "advertised.listeners") || !strcmp(key, "advertise")) {
    char *copy = strdup(val), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
      if (st->n_advertise < MAX_LISTEN)
        st->advertise[st->n_advertise++] = strdup(t);
    free(copy);
  } else if (!strcmp(key, "data.dir")) {
    free(st->data_dir);
    st->data_dir = strdup(val);
  } else if (!strcmp(key, "node.id")) {
    if (!parse_num(key, val, 0, INT32_MAX, &n))
      return false;
    st->node_id = (int32_t)n;
  } else if (!strcmp(key, "group.min.session.timeout.ms")) {
    if (!parse_num(key, val, 1, 3600000, &st->st_min))
      return false;
  } else if (!strcmp(key, "group.max.session.timeout.ms")) {
    if (!parse_num(key, val, 1, 3600000, &st->st_max))
      return false;
  } else if (!strcmp(key, "allow.unknown.configs")) {
    if (strcmp(val, "true") && strcmp(val, "false")) {
      fprintf(stderr, "dynconfd: %s must be true or false\n", key);
      return false;
    }
    st->allow_unknown = !strcmp(val, "true");
  } else if (!strcmp(key, "socket.request.max.bytes")) {
    if (!parse_num(key, val, 64, 100 * 1024 * 1024, &n))
      return false;
    st->srv.max_request_size = (size_t)n;
  } else if (!strcmp(key, "connections.max.idle.ms")) {
    if (!parse_num(key, val, 100, INT32_MAX, &n))
      return false;
    st->srv.idle_timeout_ms = (int)n;
  } else if (!strcmp(key, "max.connections")) {
    if (!parse_num(key, val, 1, 10000000, &n))
      return false;
    st->srv.max_connections = (int)n;
  } else {
    fprintf(stderr, "dynconfd: unknown setting '%s'\n", key);
    return false;
  }
  return true;
}

static bool load_config_file(settings_t *st, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "dynconfd: cannot read config file %s: %s\n", path,
            strerror(errno));
    return false;
  }
  char line[4096];
  int lineno = 0;
  bool ok = true;
  while (ok && fgets(line, sizeof(line), f)) {
    lineno++;
    char *p = line + strspn(line, " \t");
    p[strcspn(p, "\r\n")] = '\0';
    if (!*p || *p == '#')
      continue;
    char *eq = strchr(p, '=');
    if (!eq) {
      fprintf(stderr, "dynconfd: %s:%d: expected key=value\n", path, lineno);
      ok = false;
      break;
    }
    *eq = '\0';
    char *k = p, *v = eq + 1;
    for (char *e = k + strlen(k); e > k && (e[-1] == ' ' || e[-1] == '\t');)
      *--e = '\0';
    v += strspn(v, " \t");
    if (!apply_setting(st, k, v)) {
      fprintf(stderr, "dynconfd: in %s line %d\n", path, lineno);
      ok = false;
    }
  }
  fclose(f);
  return ok;
}

static const char *op_name(int8_t op) {
  switch (op) {
  case DC_OP_SET: return "SET";
  case DC_OP_DELETE: return "DELETE";
  case DC_OP_APPEND: return "APPEND";
  case DC_OP_SUBTRACT: return "SUBTRACT";
  }
  return "?";
}

static int print_row(void *opaque, const dc_audit_row_t *r) {
  (void)opaque;
  time_t secs = (time_t)(r->time_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  printf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s %s %s %s:%s %s %s %s -> %s\n",
         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
         tm.tm_sec, (int)(r->time_ms % 1000), r->principal, r->peer, r->api,
         r->resource_type == DC_RES_CLIENT ? "client" : "resource",
         r->entity, r->key, op_name(r->op),
         r->old_value ? r->old_value : "(unset)",
         r->new_value ? r->new_value : "(unset)");
  return 0;
}

static int print_history(const char *dir, const char *entity) {
  char err[512] = "";
  dc_store_t *store;
  if (dc_store_open_sqlite_ro(dir, &store, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: %s\n", err);
    return 1;
  }
  int r = dc_store_history(store, entity, print_row, NULL, err, sizeof(err));
  dc_store_close(store);
  if (r) {
    fprintf(stderr, "dynconfd: cannot read history: %s\n", err);
    return 1;
  }
  return 0;
}

static void raise_fd_limit(void) {
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static void settings_free(settings_t *st) {
  for (int i = 0; i < st->n_listen; i++)
    free(st->listen[i]);
  for (int i = 0; i < st->n_advertise; i++)
    free(st->advertise[i]);
  free(st->data_dir);
}

int main(int argc, char **argv) {
  settings_t st = {.node_id = 1, .st_min = 6000, .st_max = 1800000};
  dc_server_opts_init(&st.srv);
  bool history = false;
  const char *entity = NULL;
  enum { O_LISTEN = 256, O_ADV, O_DATA, O_NODE, O_CONFIG, O_STMIN, O_STMAX,
         O_UNKNOWN, O_MAXREQ, O_IDLE, O_MAXCONN, O_HISTORY, O_ENTITY };
  static const struct option longopts[] = {
      {"listen", required_argument, NULL, O_LISTEN},
      {"advertise", required_argument, NULL, O_ADV},
      {"data-dir", required_argument, NULL, O_DATA},
      {"node-id", required_argument, NULL, O_NODE},
      {"config", required_argument, NULL, O_CONFIG},
      {"session-timeout-min-ms", required_argument, NULL, O_STMIN},
      {"session-timeout-max-ms", required_argument, NULL, O_STMAX},
      {"allow-unknown-keys", no_argument, NULL, O_UNKNOWN},
      {"max-request-size", required_argument, NULL, O_MAXREQ},
      {"idle-timeout-ms", required_argument, NULL, O_IDLE},
      {"max-connections", required_argument, NULL, O_MAXCONN},
      {"history", no_argument, NULL, O_HISTORY},
      {"entity", required_argument, NULL, O_ENTITY},
      {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  static const char *const names[] = {
      [O_LISTEN - 256] = "listen",
      [O_ADV - 256] = "advertise",
      [O_DATA - 256] = "data.dir",
      [O_NODE - 256] = "node.id",
      [O_STMIN - 256] = "group.min.session.timeout.ms",
      [O_STMAX - 256] = "group.max.session.timeout.ms",
      [O_MAXREQ - 256] = "socket.request.max.bytes",
      [O_IDLE - 256] = "connections.max.idle.ms",
      [O_MAXCONN - 256] = "max.connections",
  };
  int opt, rc = 0;
  while ((opt = getopt_long(argc, argv, "vhV", longopts, NULL)) != -1) {
    bool ok = true;
    switch (opt) {
    case 'h':
      usage(stdout);
      settings_free(&st);
      return 0;
    case 'V':
      printf("dynconfd %s\n", dynconf_version_str());
      settings_free(&st);
      return 0;
    case 'v':
      st.verbose = true;
      break;
    case O_CONFIG:
      ok = load_config_file(&st, optarg);
      break;
    case O_UNKNOWN:
      st.allow_unknown = true;
      break;
    case O_HISTORY:
      history = true;
      break;
    case O_ENTITY:
      entity = optarg;
      break;
    case '?':
      ok = false;
      break;
    default:
      ok = apply_setting(&st, names[opt - 256], optarg);
    }
    if (!ok) {
      fprintf(stderr, "dynconfd: see --help\n");
      settings_free(&st);
      return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "dynconfd: unexpected argument '%s'; see --help\n",
            argv[optind]);
    settings_free(&st);
    return EXIT_USAGE;
  }
  if (!st.data_dir)
    st.data_dir = strdup("dynconfd-data");
  if (history) {
    rc = print_history(st.data_dir, entity);
    settings_free(&st);
    return rc;
  }
  if (st.st_min > st.st_max) {
    fprintf(stderr, "dynconfd: session timeout minimum %lld is above the "
                    "maximum %lld\n", (long long)st.st_min, (long long)st.st_max);
    settings_free(&st);
    return EXIT_USAGE;
  }
  if (st.n_listen == 0)
    st.listen[st.n_listen++] = strdup("127.0.0.1:9092");
  if (st.verbose)
    dc_log_set_level(DC_LOG_DEBUG);
  raise_fd_limit();
  signal(SIGPIPE, SIG_IGN);

  char err[512] = "";
  dc_store_t *store = NULL;
  dc_broker_t *broker = NULL;
  rc = 1;
  if (dc_store_open_sqlite(st.data_dir, &store, err, sizeof(err))) {
    dc_log(DC_LOG_ERR, "cannot open the store: %s", err);
    goto out;
  }

  /* The BROKER resource: our own settings, read-only. */
  char node[16], stmin[24], stmax[24], maxreq[24], idle[24], maxconn[24];
  char listeners[1024] = "", adv[1024] = "";
  snprintf(node, sizeof(node), "%d", (int)st.node_id);
  snprintf(stmin, sizeof(stmin), "%lld", (long long)st.st_min);
  snprintf(stmax, sizeof(stmax), "%lld", (long long)st.st_max);
  snprintf(maxreq, sizeof(maxreq), "%zu", st.srv.max_request_size);
  snprintf(idle, sizeof(idle), "%d", st.srv.idle_timeout_ms);
  snprintf(maxconn, sizeof(maxconn), "%d", st.srv.max_connections);
  const char *skeys[] = {"node.id", "listeners", "advertised.listeners",
                         "data.dir", "group.min.session.timeout.ms",
                         "group.max.session.timeout.ms",
                         "allow.unknown.configs", "socket.request.max.bytes",
                         "connections.max.idle.ms", "max.connections",
                         "dynconf.version"};
  const char *svals[] = {node, listeners, adv, st.data_dir, stmin, stmax,
                         st.allow_unknown ? "true" : "false", maxreq, idle,
                         maxconn, dynconf_version_str()};
  dc_broker_opts_t bo;
  dc_broker_opts_init(&bo);
  bo.node_id = st.node_id;
  bo.session_timeout_min_ms = st.st_min;
  bo.session_timeout_max_ms = st.st_max;
  bo.allow_unknown_keys = st.allow_unknown;
  bo.n_static = sizeof(skeys) / sizeof(skeys[0]);
  bo.static_keys = skeys;
  bo.static_values = svals;
  broker = dc_broker_new(&bo, store, err, sizeof(err));
  if (!broker) {
    dc_log(DC_LOG_ERR, "cannot load the store: %s", err);
    goto out;
  }
  g_server = dc_server_new(broker, &st.srv, err, sizeof(err));
  if (!g_server) {
    dc_log(DC_LOG_ERR, "%s", err);
    goto out;
  }
  char bound[MAX_LISTEN][300];
  for (int i = 0; i < st.n_listen; i++) {
    char host[256], ahost[256] = "";
    int port, aport = 0;
    if (!split_hostport(st.listen[i], host, sizeof(host), &port)) {
      fprintf(stderr, "dynconfd: listen address must be HOST:PORT, not '%s'\n",
              st.listen[i]);
      rc = EXIT_USAGE;
      goto out;
    }
    if (i < st.n_advertise &&
        !split_hostport(st.advertise[i], ahost, sizeof(ahost), &aport)) {
      fprintf(stderr, "dynconfd: advertise address must be HOST:PORT, not '%s'\n",
              st.advertise[i]);
      rc = EXIT_USAGE;
      goto out;
    }
    if (dc_server_listen(g_server, host, port, ahost, aport, bound[i],
                         sizeof(bound[i]), err, sizeof(err))) {
      dc_log(DC_LOG_ERR, "%s", err);
      goto out;
    }
    /* BROKER resource values: the addresses actually bound. */
    size_t lused = strlen(listeners);
    snprintf(listeners + lused, sizeof(listeners) - lused, "%s%.300s",
             i ? "," : "", bound[i]);
    size_t used = strlen(adv);
    snprintf(adv + used, sizeof(adv) - used, "%s%.300s", i ? "," : "",
             i < st.n_advertise ? st.advertise[i] : bound[i]);
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  for (int i = 0; i < st.n_listen; i++)
    printf("listening on %s\n", bound[i]);
  fflush(stdout);
  dc_log(DC_LOG_INFO, "dynconfd %s node %d serving from %s",
         dynconf_version_str(), (int)st.node_id, st.data_dir);
  rc = dc_server_run(g_server) ? 1 : 0;
  dc_log(DC_LOG_INFO, "shutting down");
out:
  dc_server_destroy(g_server);
  g_server = NULL;
  dc_broker_destroy(broker);
  if (store)
    dc_store_close(store);
  settings_free(&st);
  return rc;
}
