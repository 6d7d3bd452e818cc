/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection creation rates, as Kafka's max.connection.creation.rate (a
 * listener's) and its per-IP connection_creation_rate quota: token
 * buckets holding one second's worth, refilled continuously.
 *
 * The per-address table is keyed by the peer's address, which the peer
 * chooses: it hashes with SipHash under the process key, and forgets an
 * address whose bucket is full again (dc_ip_rates_forget_idle), so it
 * holds at most the addresses seen within about a second. Loop thread.
 */
#ifndef DC_BROKER_CONN_RATE_H
#define DC_BROKER_CONN_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct dc_rate {
  double per_s;    /* 0 = unlimited */
  double tokens;
  int64_t last_ms; /* when tokens was brought up to date */
} dc_rate_t;

/* A bucket allowing per_s a second (0 = no limit), full. */
void dc_rate_init(dc_rate_t *r, double per_s, int64_t now_ms);
/* Takes one token: true when allowed. */
bool dc_rate_take(dc_rate_t *r, int64_t now_ms);
/* Whether a token is there now (taking none). */
bool dc_rate_ready(dc_rate_t *r, int64_t now_ms);
/* When the next token is there (now_ms when one is). */
int64_t dc_rate_next_ms(const dc_rate_t *r, int64_t now_ms);

typedef struct dc_ip_rates dc_ip_rates_t;

/* NULL when out of memory. per_s 0: every take is allowed, nothing kept. */
dc_ip_rates_t *dc_ip_rates_new(double per_s);
void dc_ip_rates_destroy(dc_ip_rates_t *t);
/* Takes one token of the address's bucket: true when allowed (and when
 * the table cannot grow: a refusal must be earned, not caused by memory). */
bool dc_ip_rates_take(dc_ip_rates_t *t, const struct sockaddr_storage *ss,
                      int64_t now_ms);
/* Forgets the addresses whose bucket is full again. */
void dc_ip_rates_forget_idle(dc_ip_rates_t *t, int64_t now_ms);

#endif
