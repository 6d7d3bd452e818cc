/* SPDX-License-Identifier: BSD-2-Clause */
/* loadgen's configuration and run state, shared by its files. */
#ifndef LG_RUN_H
#define LG_RUN_H

#include "common/arena.h"
#include "common/buf.h"
#include "codec/wire.h"
#include "lg_hist.h"
#include "lg_setup.h"
#include "lg_tls.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* What loadgen sends: DescribeConfigs, Metadata, a Watch answered at once
 * (it knows no version yet), a validate-only IncrementalAlterConfigs. */
enum { API_DESCRIBE, API_METADATA, API_WATCH, API_ALTER };
/* lg_apis.c: each kind's API key, --api name and title; its request body
 * (after the header) for c into b (0 or an error); whether a decoded
 * answer (rd at its body) reports success. */
struct cfg;
int16_t lg_api_key(int api);
const char *lg_api_arg(int api);
const char *lg_api_title(int api);
int lg_api_encode(const struct cfg *c, dc_buf_t *b);
bool lg_api_answer_ok(const struct cfg *c, dc_rd_t *rd);

typedef struct slot {
  int32_t corr;
  uint64_t sent_ns;
} slot_t;

typedef struct conn {
  int fd;
  SSL *ssl; /* owned; NULL on plaintext */
  bool dead;
  dc_buf_t in, out; /* owned; freed at exit */
  size_t out_off;   /* bytes of out already written */
  slot_t *ring;     /* owned; pipeline entries, FIFO of requests in flight */
  int head, inflight;
  uint32_t next_corr; /* wraps; ids sent are its low 31 bits */
} conn_t;

typedef struct cfg {
  const char *target;
  int api;
  int16_t version;
  int connections, pipeline;
  double duration_s; /* with --requests: a limit only when given */
  bool duration_set;
  uint64_t requests; /* 0 = duration mode */
  bool mock, quiet;
  const char *client_name;
  int clients; /* > 1: client_name + a 7-digit number, cycling */
  const char *tls_ca, *tls_cert, *tls_key; /* TLS when tls_ca is set */
  lg_sasl_conf_t sasl;                     /* SASL when mechanism is set */
  uint64_t setup_count;                    /* --setup N; 0 = load mode */
} cfg_t;

typedef struct lg_run {
  cfg_t cfg;
  dc_buf_t *tmpls; /* owned: n_tmpls complete request frames */
  int n_tmpls;     /* 1, or cfg.clients */
  uint64_t next_tmpl; /* the one sent next, cycling */
  conn_t *conns; /* owned */
  hist_t *hist;  /* owned */
  dc_arena_t arena; /* response decode scratch, reset after each response */
  /* errors = requests that failed: lost with a connection, never
   * answered, or answered with an error or undecodable response. */
  uint64_t sent, done, lost, errors, resp_errors, conn_failures, logged;
  uint64_t rx_bytes; /* response frames, size fields included */
  bool stopping;
  lg_tls_t *tls;      /* owned; NULL without --tls-ca */
  char tls_desc[96];  /* protocol and cipher of the last handshake */
  double setup_cpu_s; /* --setup: this process's CPU during the loop */
} run_t;

/* bench/lg_args.c */
void lg_usage(FILE *f);
/* The command line into c; -1 on a usage error (--help exits 0). */
int lg_parse_args(int argc, char **argv, cfg_t *c);
/* "HOST:PORT" or "[V6]:PORT" into host and port; -1 when malformed. */
int lg_split_hostport(const char *target, char *host, size_t hsz, char *port,
                      size_t psz);

/* bench/lg_report.c: each prints its summary and RESULT line and returns
 * the exit status. */
const char *lg_security_protocol(const cfg_t *c);
int lg_report_setup(const run_t *r, const char *target, double secs,
                    double cpu);
int lg_report_load(const run_t *r, const char *target, double secs,
                   double cpu);

#endif
