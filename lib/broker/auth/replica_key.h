/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A replica's identity among the replicas of a Kafka-topic store: an
 * Ed25519 key pair made at start and kept in memory only. Its public key
 * goes out in the replica's heartbeats (the config log is the directory of
 * replicas); the replica signs every Envelope it forwards, and the writer
 * takes an Envelope only with a valid signature of a replica it knows.
 *
 * What is signed (dc_replica_msg_t) is laid out with a fixed prefix and a
 * length before each variable part, so no part can be shifted into
 * another. Pure apart from OpenSSL; a key may sign on one thread while
 * others read its public half.
 */
#ifndef DC_REPLICA_KEY_H
#define DC_REPLICA_KEY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DC_REPLICA_KEY_LEN 32 /* an Ed25519 public key */
#define DC_REPLICA_SIG_LEN 64 /* an Ed25519 signature */
#define DC_REPLICA_KEY_HEX_LEN (2 * DC_REPLICA_KEY_LEN)
/* How far a signed Envelope's time may be from the writer's clock, either
 * way (replicas keep their clocks in step with NTP). */
#define DC_REPLICA_CLOCK_WINDOW_MS 60000

typedef struct dc_replica_key dc_replica_key_t;

/* What a forwarded request's signature covers. A NULL principal (len
 * ignored) is signed as a null, not as an empty string. */
typedef struct dc_replica_msg {
  int32_t node;    /* the signer */
  int64_t time_ms; /* wall clock when it signed */
  const uint8_t *principal;
  size_t principal_len;
  const uint8_t *host;
  size_t host_len;
  const uint8_t *request; /* the client's request, header and body */
  size_t request_len;
} dc_replica_msg_t;

/* A new key pair, or NULL with errstr. */
dc_replica_key_t *dc_replica_key_new(char *errstr, size_t errstr_size);
/* The key pair of a 32-byte seed (tests: known keys). */
dc_replica_key_t *dc_replica_key_from_seed(const uint8_t seed[32]);
void dc_replica_key_free(dc_replica_key_t *k);
const uint8_t *dc_replica_key_public(const dc_replica_key_t *k);

/* Signs bytes / checks a signature of them (the primitive). 0 or -1. */
int dc_replica_sign_bytes(const dc_replica_key_t *k, const uint8_t *p,
                          size_t n, uint8_t sig[DC_REPLICA_SIG_LEN]);
bool dc_replica_verify_bytes(const uint8_t pub[DC_REPLICA_KEY_LEN],
                             const uint8_t *p, size_t n,
                             const uint8_t sig[DC_REPLICA_SIG_LEN]);
/* Signs m / checks its signature. Sign: 0, or -1 (out of memory). */
int dc_replica_sign(const dc_replica_key_t *k, const dc_replica_msg_t *m,
                    uint8_t sig[DC_REPLICA_SIG_LEN]);
bool dc_replica_verify(const uint8_t pub[DC_REPLICA_KEY_LEN],
                       const dc_replica_msg_t *m,
                       const uint8_t sig[DC_REPLICA_SIG_LEN]);
/* The bytes m's signature covers, malloc'd (caller frees; NULL on OOM). */
uint8_t *dc_replica_msg_bytes(const dc_replica_msg_t *m, size_t *lenp);

/* A public key as lowercase hex (out: DC_REPLICA_KEY_HEX_LEN + 1 bytes),
 * and back: 0, or -1 unless s is exactly that many hex digits. */
void dc_replica_key_hex(const uint8_t key[DC_REPLICA_KEY_LEN], char *out);
int dc_replica_key_unhex(const char *s, uint8_t key[DC_REPLICA_KEY_LEN]);
#endif
