/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit hash. A
 * table whose keys a peer chooses hashes them with this process's random
 * key, so no peer can aim its keys at one bucket: without the key, which
 * names collide is as hard to tell as a MAC.
 *
 * Threads: any; the process key is made once, on first use.
 */
#ifndef DC_SIPHASH_H
#define DC_SIPHASH_H
#include <stddef.h>
#include <stdint.h>

#define DC_SIPHASH_KEY_LEN 16

/* SipHash-2-4 of data[len] under key. */
uint64_t dc_siphash24(const uint8_t key[DC_SIPHASH_KEY_LEN], const void *data,
                      size_t len);

/* This process's key: 16 random bytes (getrandom, else OpenSSL's
 * RAND_bytes; the process aborts when neither gives any). */
const uint8_t *dc_hash_key(void);

/* SipHash-2-4 of tag then s (without its NUL) under the process key: for
 * tables keyed by strings, or by (type, string). */
uint64_t dc_hash_str(uint8_t tag, const char *s);
#endif
