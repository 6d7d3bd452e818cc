/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Token buckets for connection creation, one per listener and one per
 * client address (conn_rate.h).
 */
#include "broker/net/conn_rate.h"
#include "common/siphash.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* ---- one bucket -------------------------------------------------------- */

static double burst(const dc_rate_t *r) { return r->per_s < 1 ? 1 : r->per_s; }

static void refill(dc_rate_t *r, int64_t now_ms) {
  if (now_ms > r->last_ms) {
    r->tokens += (double)(now_ms - r->last_ms) * r->per_s / 1000;
    if (r->tokens > burst(r))
      r->tokens = burst(r);
  }
  r->last_ms = now_ms;
}

void dc_rate_init(dc_rate_t *r, double per_s, int64_t now_ms) {
  r->per_s = per_s > 0 ? per_s : 0;
  r->tokens = burst(r);
  r->last_ms = now_ms;
}

bool dc_rate_ready(dc_rate_t *r, int64_t now_ms) {
  if (r->per_s <= 0)
    return true;
  refill(r, now_ms);
  return r->tokens >= 1;
}

bool dc_rate_take(dc_rate_t *r, int64_t now_ms) {
  if (r->per_s <= 0)
    return true;
  refill(r, now_ms);
  if (r->tokens < 1)
    return false;
  r->tokens -= 1;
  return true;
}

int64_t dc_rate_next_ms(const dc_rate_t *r, int64_t now_ms) {
  if (r->per_s <= 0 || r->tokens >= 1)
    return now_ms;
  double wait = (1 - r->tokens) * 1000 / r->per_s;
  return r->last_ms + (int64_t)wait + 1;
}

/* ---- by client address ------------------------------------------------- */

typedef struct ip_entry {
  uint8_t addr[16]; /* IPv6, or IPv4 mapped into it */
  dc_rate_t rate;
  struct ip_entry *next;
} ip_entry_t;

struct dc_ip_rates {
  double per_s;
  ip_entry_t **slots; /* chains; n_slots a power of two */
  size_t n_slots, n;
};

dc_ip_rates_t *dc_ip_rates_new(double per_s) {
  dc_ip_rates_t *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  t->per_s = per_s > 0 ? per_s : 0;
  t->n_slots = 64;
  t->slots = calloc(t->n_slots, sizeof(*t->slots));
  if (!t->slots) {
    free(t);
    return NULL;
  }
  return t;
}

void dc_ip_rates_destroy(dc_ip_rates_t *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->n_slots; i++)
    while (t->slots[i]) {
      ip_entry_t *e = t->slots[i];
      t->slots[i] = e->next;
      free(e);
    }
  free(t->slots);
  free(t);
}

static void addr_key(const struct sockaddr_storage *ss, uint8_t out[16]) {
  memset(out, 0, 16);
  if (ss->ss_family == AF_INET6) {
    memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
  } else if (ss->ss_family == AF_INET) {
    out[10] = out[11] = 0xff;
    memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
  }
}

static size_t slot_of(const dc_ip_rates_t *t, const uint8_t addr[16]) {
  return (size_t)dc_siphash24(dc_hash_key(), addr, 16) & (t->n_slots - 1);
}

/* Twice the slots once the chains average past two (out of memory: the
 * table keeps working, with longer chains). */
static void grow(dc_ip_rates_t *t) {
  size_t n = t->n_slots * 2;
  ip_entry_t **slots = calloc(n, sizeof(*slots));
  if (!slots)
    return;
  ip_entry_t **old = t->slots;
  size_t old_n = t->n_slots;
  t->slots = slots;
  t->n_slots = n;
  for (size_t i = 0; i < old_n; i++)
    while (old[i]) {
      ip_entry_t *e = old[i];
      old[i] = e->next;
      size_t s = slot_of(t, e->addr);
      e->next = t->slots[s];
      t->slots[s] = e;
    }
  free(old);
}

bool dc_ip_rates_take(dc_ip_rates_t *t, const struct sockaddr_storage *ss,
                      int64_t now_ms) {
  if (t->per_s <= 0)
    return true;
  uint8_t addr[16];
  addr_key(ss, addr);
  size_t s = slot_of(t, addr);
  for (ip_entry_t *e = t->slots[s]; e; e = e->next)
    if (!memcmp(e->addr, addr, 16))
      return dc_rate_take(&e->rate, now_ms);
  ip_entry_t *e = calloc(1, sizeof(*e));
  if (!e)
    return true;
  memcpy(e->addr, addr, 16);
  dc_rate_init(&e->rate, t->per_s, now_ms);
  e->next = t->slots[s];
  t->slots[s] = e;
  if (++t->n > t->n_slots * 2)
    grow(t);
  return dc_rate_take(&e->rate, now_ms);
}

void dc_ip_rates_forget_idle(dc_ip_rates_t *t, int64_t now_ms) {
  for (size_t i = 0; i < t->n_slots; i++)
    for (ip_entry_t **p = &t->slots[i]; *p;) {
      ip_entry_t *e = *p;
      refill(&e->rate, now_ms);
      if (e->rate.tokens >= burst(&e->rate)) {
        *p = e->next;
        free(e);
        t->n--;
      } else {
        p = &e->next;
      }
    }
}
