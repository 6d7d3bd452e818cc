/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * attack: the hostile clients of bench/run-attacks.sh that bench/fleet
 * does not play. Every command runs the probe of bench/probe.h beside its
 * work (one PLAINTEXT connection to --target, set up first, sending a
 * DescribeConfigs every 5 ms, and dynconfd's RSS sampled with it) and
 * ends with bench/probe.h's RESULT line for its phase plus one
 * "OUTCOME NAME text" line saying what dynconfd answered the attack.
 *
 *   attack idle --target H:P --pid PID [--seconds S]
 *       Nothing but the probe, for S seconds (5): the idle baseline.
 *   attack run --target H:P --pid PID [--after-ms MS] -- CMD [ARGS...]
 *       Runs CMD (its output passes through); the phase starts MS ms after
 *       CMD started (its own quiet baseline left out) and ends when it
 *       exits. Exit status: CMD's.
 *   attack hijack --target H:P --pid PID --sasl H:P --user-a U
 *                 --password-a P --user-b U --password-b P [--n N]
 *       Connection A (SCRAM-SHA-256 as U-a on the SASL_PLAINTEXT listener)
 *       reports an instance id; connection B (as U-b) then reports the
 *       same id N times (1000), 8 in flight; then DescribeFleet (as A)
 *       shows whether A's entry is as A reported it.
 *   attack envelope --target H:P --pid PID [--n N]
 *       N Envelope requests (ApiKey 58; 1000), 8 in flight, from an
 *       unauthenticated connection, each wrapping an
 *       IncrementalAlterConfigs of client 'envelope-victim' in the name of
 *       User:admin (every other one with a made-up replica signature);
 *       then a DescribeConfigs shows whether anything was altered.
 *   attack login --target H:P --pid PID --attack H:P --mode plain|scram|tls
 *                [--user U --password P] [--tls-ca FILE] [--n N]
 *                [--concurrency C]
 *       N log-in attempts (3000), C at a time (128, one thread each), at
 *       the --attack listener: plain = SaslHandshake PLAIN + a
 *       SaslAuthenticate with the (wrong) password, so dynconfd runs
 *       PBKDF2; scram = SCRAM-SHA-256 with a made-up proof (no PBKDF2 on
 *       this side); tls = a full TLS handshake, then close. An attempt is
 *       complete once dynconfd has answered it (its refusal, however late,
 *       or the finished handshake); each has 30 s from its connect().
 *       Prints the attempts per second and dynconfd's CPU.
 *
 * Every command also takes --name NAME (the phase's name; default the
 * command's). Exit status 0; 1 when something failed outright (a
 * connection the attack needs, an answer that cannot be read, the probe
 * lost); 2 on a usage error. A refusal is the expected outcome, never a
 * failure.
 */
#include "alter.h"
#include "lg_setup.h"
#include "lg_tls.h"
#include "probe.h"
#include "proc.h"

#include "client/kclient.h"
#include "codec/proto.h"
#include "common/arena.h"
#include "common/clock.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ATTEMPT_MS 30000 /* dynconfd's own bound on a log-in */

typedef struct cfg {
  const char *cmd, *name, *target, *sasl, *attack, *mode;
  const char *user_a, *password_a, *user_b, *password_b;
  const char *user, *password, *tls_ca;
  pid_t pid;
  int n, concurrency, after_ms;
  double seconds;
  char **argv; /* run: the command */
} cfg_t;

static int enc_report(dc_buf_t *b, int16_t v, const void *q) {
  return dc_client_report_req_encode(b, v, q);
}
static int enc_fleet(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_fleet_req_encode(b, v, q);
}
static int enc_envelope(dc_buf_t *b, int16_t v, const void *q) {
  return dc_envelope_req_encode(b, v, q);
}
static int enc_describe(dc_buf_t *b, int16_t v, const void *q) {
  return dc_describe_configs_req_encode(b, v, q);
}

static void outcome(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void outcome(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("OUTCOME %s ", name);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  fflush(stdout);
}

/* A connection: PLAINTEXT, or SASL_PLAINTEXT SCRAM-SHA-256 as user. */
static dc_kclient_t *connect_as(const char *addr, const char *user,
                                const char *password) {
  char err[512] = "";
  dc_kclient_t *kc = dc_kclient_new("dynconf-attack");
  dc_kclient_security_t sec = {.protocol = "SASL_PLAINTEXT",
                               .sasl_mechanism = "SCRAM-SHA-256",
                               .sasl_username = user,
                               .sasl_password = password};
  if (kc && (!user || !dc_kclient_set_security(kc, &sec, err, sizeof(err))) &&
      !dc_kclient_connect(kc, addr, ATTEMPT_MS, err, sizeof(err)))
    return kc;
  fprintf(stderr, "attack: connect %s%s%s: %s\n", addr, user ? " as " : "",
          user ? user : "", kc ? err : "out of memory");
  dc_kclient_destroy(kc);
  return NULL;
}

/* ---- idle and run ---------------------------------------------------------- */

static int cmd_idle(const cfg_t *c) {
  bench_phase_t p = bench_phase_begin(c->pid);
  usleep((useconds_t)(c->seconds * 1e6));
  bench_phase_result_t r = bench_phase_end(&p, c->name, 0);
  outcome(c->name, "%zu probes in %.0f s", r.probes, c->seconds);
  return 0;
}

static int cmd_run(const cfg_t *c) {
  fflush(stdout);
  int64_t t0 = dc_mono_ms();
  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "attack: fork: %s\n", strerror(errno));
    return 1;
  }
  if (child == 0) {
    execvp(c->argv[0], c->argv);
    static const char msg[] = "attack: cannot run the command\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
    _exit(127);
  }
  int st = 0;
  pid_t got = 0;
  while (dc_mono_ms() < t0 + c->after_ms &&
         (got = waitpid(child, &st, WNOHANG)) == 0)
    usleep(10000);
  bench_phase_t p = bench_phase_begin(c->pid);
  while (got == 0 && (got = waitpid(child, &st, 0)) < 0 && errno == EINTR)
    got = 0;
  int rc = got > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  bench_phase_end(&p, c->name, 0);
  outcome(c->name, "%s exited %d", c->argv[0], rc);
  return rc;
}

/* ---- identity hijack ------------------------------------------------------- */

#define VICTIM_CLIENT "victim-app"
#define VICTIM_ID "victim-instance-1"

/* The answer to a ClientReport: its error code, -1 when unreadable. */
static int report_answer(dc_kclient_t *kc, char *msg, size_t msg_size) {
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_client_report_resp_t resp;
  int rc = -1;
  if (!dc_kclient_receive(kc, 600000, NULL, &rd, &a, msg, msg_size) &&
      !dc_client_report_resp_decode(&rd, 0, &resp)) {
    rc = resp.error_code;
    snprintf(msg, msg_size, "%s", resp.error_message ? resp.error_message : "");
  }
  dc_arena_free(&a);
  return rc;
}

/* Whether A's entry is listed as A reported it: into what (a sentence). */
static bool victim_intact(dc_kclient_t *kc, const char *user, char *what,
                          size_t what_size) {
  dc_describe_fleet_req_t q = {VICTIM_CLIENT, NULL, -1, 0, NULL, NULL, 0};
  dc_arena_t a;
  dc_arena_init(&a);
  dc_rd_t rd;
  dc_describe_fleet_resp_t r;
  char principal[256], err[256];
  bool ok = false;
  snprintf(principal, sizeof(principal), "User:%s", user);
  snprintf(what, what_size, "%s's entry not listed", user);
  if (dc_kclient_request(kc, DC_API_DESCRIBE_FLEET, 1, enc_fleet, &q, 600000,
                         &rd, &a, err, sizeof(err)) ||
      dc_describe_fleet_resp_decode(&rd, 1, &r)) {
    snprintf(what, what_size, "DescribeFleet failed: %s", err);
  } else {
    for (int32_t i = 0; i < r.n_clients; i++) {
      const dc_fleet_client_t *e = &r.clients[i];
      if (!e->instance_id || strcmp(e->instance_id, VICTIM_ID))
        continue;
      ok = e->principal && !strcmp(e->principal, principal) && e->kind &&
           !strcmp(e->kind, "producer") && e->outcome == DC_OUTCOME_APPLIED;
      snprintf(what, what_size, "%s's entry %s (%s, %s, %s)", user,
               ok ? "unchanged" : "CHANGED",
               e->principal ? e->principal : "-", e->kind ? e->kind : "-",
               e->outcome == DC_OUTCOME_APPLIED ? "applied" : "not applied");
    }
  }
  dc_arena_free(&a);
  return ok;
}

static int cmd_hijack(const cfg_t *c) {
  dc_kclient_t *a = connect_as(c->sasl, c->user_a, c->password_a);
  dc_kclient_t *b = a ? connect_as(c->sasl, c->user_b, c->password_b) : NULL;
  char msg[512] = "", first[512] = "";
  int bad = !b;
  dc_client_report_req_t mine = {VICTIM_CLIENT, VICTIM_ID, "producer",
                                 "dynconf-agent", "1.0", "librdkafka/2.0.2",
                                 1, 1, DC_OUTCOME_APPLIED, NULL};
  dc_client_report_req_t theirs = {VICTIM_CLIENT, VICTIM_ID, "consumer",
                                   "hijacker", "6.6.6", "librdkafka/2.0.2",
                                   1, 1, DC_OUTCOME_REJECTED, "hijacked"};
  if (!bad && (dc_kclient_send(a, DC_API_CLIENT_REPORT, 0, enc_report, &mine,
                               600000, NULL, msg, sizeof(msg)) ||
               report_answer(a, msg, sizeof(msg)) != 0)) {
    fprintf(stderr, "attack: A's own report failed: %s\n", msg);
    bad = 1;
  }
  long refused = 0, accepted = 0;
  int code = 0;
  bench_phase_t p = bench_phase_begin(c->pid);
  for (int sent = 0, got = 0; !bad && got < c->n;) {
    while (sent < c->n && dc_kclient_in_flight(b) < DC_KCLIENT_MAX_INFLIGHT) {
      if (dc_kclient_send(b, DC_API_CLIENT_REPORT, 0, enc_report, &theirs,
                          600000, NULL, msg, sizeof(msg))) {
        bad = 1;
        break;
      }
      sent++;
    }
    int rc = bad ? -1 : report_answer(b, msg, sizeof(msg));
    if (rc < 0) {
      fprintf(stderr, "attack: B's report %d: %s\n", got, msg);
      bad = 1;
    } else if (rc) {
      refused++;
      if (!code) {
        code = rc;
        snprintf(first, sizeof(first), "%s", msg);
      }
    } else {
      accepted++;
    }
    got++;
  }
  bench_phase_end(&p, c->name, c->n);
  if (!bad) {
    char what[512];
    bool intact = victim_intact(a, c->user_a, what, sizeof(what));
    printf("  first refusal: %s\n", first[0] ? first : "(none)");
    outcome(c->name, "%ld of %d refused%s%s%s; %s%s", refused, c->n,
            code ? ": " : "", code ? dc_err_name(code) : "",
            accepted ? " (SOME ACCEPTED)" : "", what,
            intact ? "" : " (!)");
    bad = strstr(what, "failed") != NULL;
  }
  dc_kclient_destroy(b);
  dc_kclient_destroy(a);
  return bad ? 1 : 0;
}

/* ---- forged Envelopes ------------------------------------------------------ */

#define ENVELOPE_VICTIM "envelope-victim"
#define ENVELOPE_VALUE "4321"

/* What dynconfd holds for the victim's linger.ms ("-" when nothing), or
 * NULL when the describe failed. */
static const char *victim_linger(dc_kclient_t *kc, dc_arena_t *a) {
  char *keys[] = {"linger.ms"};
  dc_describe_configs_req_resource_t res = {DC_RES_CLIENT, ENVELOPE_VICTIM, 1,
                                            keys};
  dc_describe_configs_req_t q = {1, &res, false, false, 0, false};
  dc_rd_t rd;
  dc_describe_configs_resp_t r;
  char err[256];
  if (dc_kclient_request(kc, DC_API_DESCRIBE_CONFIGS, 1, enc_describe, &q,
                         600000, &rd, a, err, sizeof(err)) ||
      dc_describe_configs_resp_decode(&rd, 1, &r) || r.n_results != 1)
    return NULL;
  for (int32_t i = 0; i < r.results[0].n_configs; i++)
    if (r.results[0].configs[i].name &&
        !strcmp(r.results[0].configs[i].name, "linger.ms"))
      return r.results[0].configs[i].value ? r.results[0].configs[i].value
                                           : "-";
  return "-";
}

/* What the forged Envelopes got back. */
typedef struct env_tally {
  long refused, accepted, closed;
  int code; /* the first refusal's error code */
} env_tally_t;

/* The wrapped request into inner: header and body, as a replica would
 * forward it. Nonzero after saying it could not be encoded. */
static int wrap_alter(dc_buf_t *inner) {
  dc_alter_config_t op = {"linger.ms", DC_OP_SET, ENVELOPE_VALUE};
  dc_alter_resource_t res = {DC_RES_CLIENT, ENVELOPE_VICTIM, 1, &op};
  dc_alter_configs_req_t alter = {1, &res, false};
  dc_req_header_t h = {.api_key = DC_API_INCREMENTAL_ALTER_CONFIGS,
                       .api_version = 1,
                       .correlation_id = 1,
                       .client_id = "admin-console"};
  int bad = dc_req_header_encode(inner, &h) ||
            bench_enc_incremental(inner, 1, &alter) || inner->err;
  if (bad)
    fprintf(stderr, "attack: cannot encode the wrapped request\n");
  return bad;
}

/* An Envelope of inner (borrowed) in the name of User:admin. */
static dc_envelope_req_t forged_envelope(const dc_buf_t *inner) {
  static const char principal[] = "User:admin", host[] = "127.0.0.1:4242";
  dc_envelope_req_t env = {
      .request_data = inner->data,
      .request_data_len = (int32_t)inner->len,
      .principal = (const uint8_t *)principal,
      .principal_len = (int32_t)strlen(principal),
      .client_host = (const uint8_t *)host,
      .client_host_len = (int32_t)strlen(host),
      .position = 0,
      .signer = 2,
  };
  memset(env.signature, 0x5a, sizeof(env.signature));
  return env;
}

/* Sends c->n Envelopes, 8 in flight, on *kcp (a new connection whenever
 * dynconfd closes one; every other one signed). 1 when a connection the
 * flood needs could not be made. */
static int envelope_flood(const cfg_t *c, dc_kclient_t **kcp,
                          dc_envelope_req_t *env, env_tally_t *t) {
  char msg[512] = "";
  int bad = 0;
  for (int sent = 0, got = 0; !bad && got < c->n;) {
    while (sent < c->n && dc_kclient_in_flight(*kcp) < DC_KCLIENT_MAX_INFLIGHT) {
      env->has_signature = sent % 2;
      env->signed_ms = dc_wall_ms();
      if (dc_kclient_send(*kcp, DC_API_ENVELOPE, 0, enc_envelope, env, 600000,
                          NULL, msg, sizeof(msg)))
        break;
      sent++;
    }
    dc_arena_t a;
    dc_arena_init(&a);
    dc_rd_t rd;
    dc_envelope_resp_t r;
    size_t lost = dc_kclient_in_flight(*kcp);
    if (!dc_kclient_receive(*kcp, 600000, NULL, &rd, &a, msg, sizeof(msg)) &&
        !dc_envelope_resp_decode(&rd, 0, &r)) {
      got++;
      if (r.error_code) {
        t->refused++;
        t->code = t->code ? t->code : r.error_code;
      } else {
        t->accepted++;
      }
    } else {
      /* dynconfd closed the connection: each Envelope in flight counts as
       * refused that way; go on with a new connection. */
      t->closed += (long)(lost ? lost : 1);
      got += (int)(lost ? lost : 1);
      sent = got;
      dc_kclient_destroy(*kcp);
      bad |= !(*kcp = connect_as(c->target, NULL, NULL));
    }
    dc_arena_free(&a);
  }
  return bad;
}

/* The OUTCOME line: refusals and whether the victim was altered. 1 when
 * the DescribeConfigs failed. */
static int envelope_outcome(const cfg_t *c, dc_kclient_t *kc,
                            const env_tally_t *t) {
  dc_arena_t a;
  dc_arena_init(&a);
  const char *v = victim_linger(kc, &a);
  char how[128] = "";
  if (t->closed)
    snprintf(how, sizeof(how), "%s%ld by closing the connection",
             t->refused ? ", " : "", t->closed);
  outcome(c->name, "%ld of %d refused%s%s%s%s; %s", t->refused + t->closed,
          c->n, t->code ? ": " : "", t->code ? dc_err_name(t->code) : "", how,
          t->accepted ? " (SOME ACCEPTED)" : "",
          !v ? "DescribeConfigs failed"
          : !strcmp(v, ENVELOPE_VALUE) ? "the victim WAS altered"
                                       : "nothing altered");
  dc_arena_free(&a);
  return !v;
}

static int cmd_envelope(const cfg_t *c) {
  dc_buf_t inner;
  dc_buf_init(&inner);
  int bad = wrap_alter(&inner);
  dc_envelope_req_t env = forged_envelope(&inner);
  env_tally_t t = {0, 0, 0, 0};
  dc_kclient_t *kc = bad ? NULL : connect_as(c->target, NULL, NULL);
  bad |= !kc;
  bench_phase_t p = bench_phase_begin(c->pid);
  if (!bad)
    bad = envelope_flood(c, &kc, &env, &t);
  bench_phase_end(&p, c->name, c->n);
  if (!bad)
    bad = envelope_outcome(c, kc, &t);
  dc_kclient_destroy(kc);
  dc_buf_free(&inner);
  return bad ? 1 : 0;
}

/* ---- log-in floods --------------------------------------------------------- */

enum { MODE_PLAIN, MODE_SCRAM, MODE_TLS };

typedef struct login {
  int mode, n;
  char host[256];
  struct sockaddr_storage addr;
  socklen_t addr_len;
  lg_sasl_conf_t sasl;
  lg_tls_t *tls; /* owned; tls mode */
  atomic_int next;
  atomic_long done, refused, accepted, failed;
  atomic_int code; /* the first refusal's error code */
  int64_t *took_us; /* owned: each attempt's time to its answer, or -1 */
  pthread_mutex_t lock;
  char first_failure[512]; /* under lock */
} login_t;

/* A non-blocking socket connected to L->addr before deadline_ns; -1 with
 * why. Slow accepts (a full backlog) wait here, within the deadline. */
static int connect_nb(const login_t *L, uint64_t deadline_ns, char *why,
                      size_t why_size) {
  int fd = socket(L->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  0);
  if (fd < 0) {
    snprintf(why, why_size, "socket: %s", strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, (const struct sockaddr *)&L->addr, L->addr_len) &&
      errno != EINPROGRESS) {
    snprintf(why, why_size, "connect: %s", strerror(errno));
    close(fd);
    return -1;
  }
  struct pollfd pf = {.fd = fd, .events = POLLOUT};
  for (;;) {
    uint64_t now = (uint64_t)dc_mono_us() * 1000;
    if (now >= deadline_ns) {
      snprintf(why, why_size, "connect: timed out");
      break;
    }
    int r = poll(&pf, 1, (int)((deadline_ns - now) / 1000000 + 1));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (!err)
      return fd;
    snprintf(why, why_size, "connect: %s", strerror(err));
    break;
  }
  close(fd);
  return -1;
}

static void login_failed(login_t *L, const char *why) {
  atomic_fetch_add(&L->failed, 1);
  pthread_mutex_lock(&L->lock);
  if (!L->first_failure[0])
    snprintf(L->first_failure, sizeof(L->first_failure), "%s", why);
  pthread_mutex_unlock(&L->lock);
}

static void login_attempt(login_t *L, int i) {
  char why[512] = "";
  int64_t t0 = dc_mono_us();
  uint64_t deadline = (uint64_t)(t0 + (int64_t)ATTEMPT_MS * 1000) * 1000;
  L->took_us[i] = -1;
  int fd = connect_nb(L, deadline, why, sizeof(why));
  if (fd < 0) {
    login_failed(L, why);
    return;
  }
  if (L->mode == MODE_TLS) {
    SSL *ssl = lg_tls_connect(L->tls, fd, L->host, deadline, why, sizeof(why));
    if (ssl) {
      L->took_us[i] = dc_mono_us() - t0;
      atomic_fetch_add(&L->done, 1);
    } else {
      login_failed(L, why);
    }
    lg_tls_close(ssl);
  } else {
    int16_t code = 0;
    int rc = lg_sasl_authenticate(fd, NULL, &L->sasl, deadline, &code, why,
                                  sizeof(why));
    if (!rc || code) {
      L->took_us[i] = dc_mono_us() - t0;
      atomic_fetch_add(&L->done, 1);
      atomic_fetch_add(rc ? &L->refused : &L->accepted, 1);
      int none = 0;
      if (code)
        atomic_compare_exchange_strong(&L->code, &none, code);
    } else {
      login_failed(L, why);
    }
  }
  close(fd);
}

static void *login_thread(void *arg) {
  login_t *L = arg;
  for (int i; (i = atomic_fetch_add(&L->next, 1)) < L->n;)
    login_attempt(L, i);
  return NULL;
}

static int login_setup(const cfg_t *c, login_t *L) {
  const char *colon = strrchr(c->attack, ':');
  char why[512];
  if (!colon || (size_t)(colon - c->attack) >= sizeof(L->host))
    return -1;
  memcpy(L->host, c->attack, (size_t)(colon - c->attack));
  L->host[colon - c->attack] = '\0';
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(L->host, colon + 1, &hints, &ai) || !ai) {
    fprintf(stderr, "attack: cannot resolve %s\n", c->attack);
    return -1;
  }
  memcpy(&L->addr, ai->ai_addr, ai->ai_addrlen);
  L->addr_len = ai->ai_addrlen;
  freeaddrinfo(ai);
  L->n = c->n;
  if (!strcmp(c->mode, "tls")) {
    L->mode = MODE_TLS;
    if (!(L->tls = lg_tls_new(c->tls_ca, NULL, NULL, why, sizeof(why)))) {
      fprintf(stderr, "attack: %s\n", why);
      return -1;
    }
  } else {
    L->mode = !strcmp(c->mode, "scram") ? MODE_SCRAM : MODE_PLAIN;
    L->sasl = (lg_sasl_conf_t){
        .mechanism = L->mode == MODE_SCRAM ? "SCRAM-SHA-256" : "PLAIN",
        .user = c->user,
        .password = c->password,
        .scram_forged_proof = L->mode == MODE_SCRAM};
    if (lg_sasl_conf_check(&L->sasl, why, sizeof(why))) {
      fprintf(stderr, "attack: %s\n", why);
      return -1;
    }
  }
  return (L->took_us = calloc((size_t)c->n, sizeof(*L->took_us))) ? 0 : -1;
}

/* Starts c->concurrency threads on L and waits for them all. */
static void login_threads(const cfg_t *c, login_t *L, pthread_t *th) {
  int started = 0;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  for (; started < c->concurrency; started++)
    if (pthread_create(&th[started], &attr, login_thread, L)) {
      fprintf(stderr, "attack: cannot start thread %d\n", started);
      atomic_store(&L->next, c->n); /* the others stop */
      break;
    }
  pthread_attr_destroy(&attr);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
}

/* The flood's summary, RESULT and OUTCOME lines; 1 when nothing was
 * answered. */
static int login_report(const cfg_t *c, login_t *L,
                        const bench_phase_result_t *r) {
  long done = atomic_load(&L->done), failed = atomic_load(&L->failed);
  int64_t *v = malloc((size_t)c->n * sizeof(*v));
  size_t k = 0;
  for (int i = 0; v && i < c->n; i++)
    if (L->took_us[i] >= 0)
      v[k++] = L->took_us[i];
  double a50 = v && k ? (double)bench_pct(v, k, 50) / 1000 : -1;
  double a99 = v && k ? (double)bench_pct(v, k, 99) / 1000 : -1;
  free(v);
  double rate = r->wall_s > 0 ? (double)done / r->wall_s : 0;
  char what[160];
  if (L->mode == MODE_TLS)
    snprintf(what, sizeof(what), "%ld handshakes", done);
  else
    snprintf(what, sizeof(what), "%ld refused%s%s%s", atomic_load(&L->refused),
             L->code ? " (" : "", L->code ? dc_err_name(L->code) : "",
             L->code ? ")" : "");
  printf("  %d attempts, %d at a time: %ld answered in %.2f s (%.0f/s), "
         "%ld failed%s%s; time to the answer p50 %.1f ms, p99 %.1f ms; "
         "dynconfd CPU %.2f s\n", c->n, c->concurrency, done, r->wall_s,
         rate, failed, failed ? ", first: " : "",
         failed ? L->first_failure : "", a50, a99, r->cpu_s);
  printf("RESULT phase=%s_rate attempts=%d answered=%ld failed=%ld "
         "per_s=%.1f answer_p50_ms=%.2f answer_p99_ms=%.2f\n", c->name,
         c->n, done, failed, rate, a50, a99);
  outcome(c->name, "%s%s%s, %.0f/s (answer p50 %.0f ms); dynconfd CPU "
          "%.1f s", what,
          atomic_load(&L->accepted) ? ", SOME ACCEPTED" : "",
          failed ? ", some failed" : "", rate, a50, r->cpu_s);
  if (failed)
    printf("  %ld attempts failed; the first: %s\n", failed,
           L->first_failure);
  return done == 0;
}

static int cmd_login(const cfg_t *c) {
  login_t *L = calloc(1, sizeof(*L)); /* owned here */
  pthread_t *th = calloc((size_t)c->concurrency, sizeof(*th));
  int bad = !L || !th;
  if (!bad) {
    pthread_mutex_init(&L->lock, NULL);
    bad = login_setup(c, L) != 0;
  }
  bench_phase_t p = bench_phase_begin(c->pid);
  if (!bad)
    login_threads(c, L, th);
  bench_phase_result_t r = bench_phase_end(&p, c->name, c->n);
  if (!bad)
    bad = login_report(c, L, &r);
  if (L) {
    lg_tls_destroy(L->tls);
    free(L->took_us);
    pthread_mutex_destroy(&L->lock);
  }
  free(L);
  free(th);
  return bad ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f) {
  fputs("usage: attack idle|run|hijack|envelope|login --target H:P --pid PID\n"
        "         [--name NAME] [--n N] [--seconds S] [--after-ms MS]\n"
        "         [--sasl H:P --user-a U --password-a P --user-b U "
        "--password-b P]\n"
        "         [--attack H:P --mode plain|scram|tls --user U --password P\n"
        "          --tls-ca FILE --concurrency C] [-- CMD ARGS...]\n",
        f);
}

/* One getopt_long result into c; -1 when it is not an option. */
static int parse_opt(cfg_t *c, int o, char *arg) {
  switch (o) {
  case 't': c->target = arg; break;
  case 'p': c->pid = (pid_t)atol(arg); break;
  case 'N': c->name = arg; break;
  case 'n': c->n = atoi(arg); break;
  case 's': c->seconds = atof(arg); break;
  case 'A': c->after_ms = atoi(arg); break;
  case 'S': c->sasl = arg; break;
  case 'u': c->user_a = arg; break;
  case 'w': c->password_a = arg; break;
  case 'U': c->user_b = arg; break;
  case 'W': c->password_b = arg; break;
  case 'a': c->attack = arg; break;
  case 'm': c->mode = arg; break;
  case 'x': c->user = arg; break;
  case 'y': c->password = arg; break;
  case 'c': c->tls_ca = arg; break;
  case 'C': c->concurrency = atoi(arg); break;
  default: return -1;
  }
  return 0;
}

/* What the command needs of the options, once all are read; has_cmd:
 * words follow them (run's command). -1 when something is missing. */
static int check_cfg(const cfg_t *c, bool has_cmd) {
  if (!c->target || c->pid <= 0 || c->n <= 0 || c->concurrency <= 0 ||
      c->seconds <= 0 || c->after_ms < 0 || has_cmd != !strcmp(c->cmd, "run"))
    return -1;
  if (!strcmp(c->cmd, "hijack"))
    return c->sasl && c->user_a && c->password_a && c->user_b &&
                   c->password_b
               ? 0
               : -1;
  if (!strcmp(c->cmd, "login"))
    return c->attack && c->mode &&
                   (!strcmp(c->mode, "tls")
                        ? c->tls_ca != NULL
                        : (!strcmp(c->mode, "plain") ||
                           !strcmp(c->mode, "scram")) &&
                              c->user && c->password)
               ? 0
               : -1;
  return !strcmp(c->cmd, "idle") || !strcmp(c->cmd, "run") ||
                 !strcmp(c->cmd, "envelope")
             ? 0
             : -1;
}

static int parse(int argc, char **argv, cfg_t *c) {
  static const struct option opts[] = {
      {"target", 1, NULL, 't'},     {"pid", 1, NULL, 'p'},
      {"name", 1, NULL, 'N'},       {"n", 1, NULL, 'n'},
      {"seconds", 1, NULL, 's'},    {"after-ms", 1, NULL, 'A'},
      {"sasl", 1, NULL, 'S'},       {"user-a", 1, NULL, 'u'},
      {"password-a", 1, NULL, 'w'}, {"user-b", 1, NULL, 'U'},
      {"password-b", 1, NULL, 'W'}, {"attack", 1, NULL, 'a'},
      {"mode", 1, NULL, 'm'},       {"user", 1, NULL, 'x'},
      {"password", 1, NULL, 'y'},   {"tls-ca", 1, NULL, 'c'},
      {"concurrency", 1, NULL, 'C'}, {NULL, 0, NULL, 0}};
  if (argc < 2)
    return -1;
  *c = (cfg_t){.cmd = argv[1], .name = argv[1], .concurrency = 128,
               .seconds = 5};
  c->n = !strcmp(c->cmd, "login") ? 3000 : 1000;
  int o;
  while ((o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1)
    if (parse_opt(c, o, optarg))
      return -1;
  c->argv = argv + 1 + optind;
  return check_cfg(c, 1 + optind < argc);
}

int main(int argc, char **argv) {
  cfg_t c;
  if (parse(argc, argv, &c)) {
    usage(stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  if (bench_probe_start(c.target, c.pid))
    return 1;
  int rc;
  if (!strcmp(c.cmd, "idle"))
    rc = cmd_idle(&c);
  else if (!strcmp(c.cmd, "run"))
    rc = cmd_run(&c);
  else if (!strcmp(c.cmd, "hijack"))
    rc = cmd_hijack(&c);
  else if (!strcmp(c.cmd, "envelope"))
    rc = cmd_envelope(&c);
  else
    rc = cmd_login(&c);
  bench_probe_stop();
  if (bench_probe_failed()) {
    fprintf(stderr, "attack: the probe's connection failed\n");
    rc = rc ? rc : 1;
  }
  return rc;
}
