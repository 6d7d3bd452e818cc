/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SCRAM (RFC 5802, RFC 7677) building blocks with OpenSSL 3: key
 * derivation, HMAC/hash, base64, nonces, attribute parsing, and a client
 * state machine (used by lib/client/kclient_security.c and the tests). The server
 * side lives in lib/broker/auth/sasl_scram.c.
 *
 * Like Kafka, passwords are used as their raw UTF-8 bytes (no SASLprep).
 *
 * Threads: every function is reentrant; a dc_scram_client_t has one owner.
 * Errors: functions returning int give 0 on success and -1 on failure, with
 * a sentence in errstr where they take one.
 */
#ifndef DC_SCRAM_H
#define DC_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum dc_scram_hash {
  DC_SCRAM_SHA256 = 0,
  DC_SCRAM_SHA512 = 1,
} dc_scram_hash_t;

#define DC_SCRAM_MAX_DIGEST 64       /* SHA-512 */
#define DC_SCRAM_MAX_SALT 128        /* longest salt accepted, bytes */
#define DC_SCRAM_SALT_LEN 32         /* salt length we generate */
#define DC_SCRAM_MIN_ITERATIONS 4096 /* Kafka's minimum */
#define DC_SCRAM_MAX_ITERATIONS 16384 /* Kafka's maximum; bounds the CPU a
                                         peer can make us spend */
#define DC_SCRAM_DEFAULT_ITERATIONS 8192

/* One stored SCRAM credential (what Kafka keeps in ZooKeeper/KRaft). */
typedef struct dc_scram_cred {
  dc_scram_hash_t hash;
  int iterations;
  size_t salt_len;
  uint8_t salt[DC_SCRAM_MAX_SALT];
  size_t key_len; /* digest length of hash */
  uint8_t stored_key[DC_SCRAM_MAX_DIGEST];
  uint8_t server_key[DC_SCRAM_MAX_DIGEST];
} dc_scram_cred_t;

/* "SCRAM-SHA-256" / "SCRAM-SHA-512" <-> hash. from_name returns false for
 * anything else (case-sensitive, as Kafka's mechanism names). */
bool dc_scram_hash_from_name(const char *mechanism, dc_scram_hash_t *out);
const char *dc_scram_mechanism_name(dc_scram_hash_t h);
size_t dc_scram_digest_len(dc_scram_hash_t h);

/* Hi(): PBKDF2-HMAC over the password bytes. out gets digest_len bytes. */
int dc_scram_salted_password(dc_scram_hash_t h, const char *password,
                             size_t password_len, const uint8_t *salt,
                             size_t salt_len, int iterations, uint8_t *out);
/* HMAC(key, data) and H(data); out gets digest_len bytes. */
int dc_scram_hmac(dc_scram_hash_t h, const uint8_t *key, size_t key_len,
                  const void *data, size_t data_len, uint8_t *out);
int dc_scram_digest(dc_scram_hash_t h, const void *data, size_t len,
                    uint8_t *out);

/* Derives a credential from a password: a fresh random salt when salt is
 * NULL (DC_SCRAM_SALT_LEN bytes), else the given one (salt_len <=
 * DC_SCRAM_MAX_SALT). iterations must be within MIN..MAX. */
int dc_scram_cred_make(dc_scram_hash_t h, const char *password, int iterations,
                       const uint8_t *salt, size_t salt_len,
                       dc_scram_cred_t *out, char *errstr, size_t errstr_size);

/* Recomputes the keys from password with cred's salt and iterations and
 * compares them in constant time. Used for SASL/PLAIN. */
bool dc_scram_cred_check(const dc_scram_cred_t *cred, const char *password,
                         size_t password_len);

/* Standard base64 with padding. encode: malloc'd NUL-terminated string
 * (caller frees), NULL on out of memory. decode: strict (padding required,
 * no whitespace, no junk); writes at most out_cap bytes, returns the
 * decoded length or -1 (bad input or too long). */
char *dc_b64_encode(const uint8_t *p, size_t n);
long dc_b64_decode(const char *s, size_t n, uint8_t *out, size_t out_cap);

/* Fills out[0..n) with random nonce characters (letters, digits, '+' and
 * '-': printable, never ','), then NUL; out has n+1 bytes. */
int dc_scram_nonce(char *out, size_t n);

/* saslname escaping: ',' -> "=2C", '=' -> "=3D". escape: malloc'd (caller
 * frees), NULL on out of memory. unescape: malloc'd NUL-terminated result,
 * NULL for a bad escape, an embedded NUL or out of memory. */
char *dc_scram_escape_name(const char *name);
char *dc_scram_unescape_name(const char *s, size_t n);

/* ClientKey, StoredKey and ServerKey from a salted password. Any of the
 * outputs may be NULL. 0, or -1 on a crypto failure. */
int dc_scram_derive_keys(dc_scram_hash_t h, const uint8_t *salted,
                         uint8_t *client_key, uint8_t *stored_key,
                         uint8_t *server_key);

/* Finds attribute `key` ("k=value") in a comma-separated SCRAM message.
 * Returns a pointer to the value (not NUL-terminated) and its length in
 * *vlen, or NULL when absent. */
const char *dc_scram_attr(const char *msg, size_t n, char key, size_t *vlen);

#endif
