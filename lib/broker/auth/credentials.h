/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hashed SASL credentials file (dynconfd --credentials FILE).
 *
 * Text, one line per (user, mechanism), '#' comments and blank lines
 * allowed:
 *   alice SCRAM-SHA-256 iterations=8192 salt=<b64> stored_key=<b64> server_key=<b64>
 * The user name is percent-encoded (%XX) where it has a byte <= 0x20, '%',
 * '#' or a byte >= 0x7f. Only SCRAM salts and keys are stored, never a
 * password; SASL/PLAIN is checked by re-deriving the SCRAM keys.
 *
 * Threads: a loaded dc_credentials_t is immutable and may be read from any
 * thread; the broker swaps in a new one on reload, and a log-in in flight
 * on another thread keeps the one it started with by a reference.
 * Errors: sentences in errstr, e.g. "credentials file /x line 3: ...".
 */
#ifndef DC_CREDENTIALS_H
#define DC_CREDENTIALS_H

#include "common/scram.h"

#include <stddef.h>

typedef struct dc_credentials dc_credentials_t;

/* Loads path. Returns NULL with errstr on a missing, unreadable or bad file
 * (an empty file is fine: no users). Caller owns the result. */
dc_credentials_t *dc_credentials_load(const char *path, char *errstr,
                                      size_t errstr_size);
/* Another reference to c (NULL stays NULL); dc_credentials_destroy drops
 * one, the last frees it. Any thread. */
dc_credentials_t *dc_credentials_ref(dc_credentials_t *c);
void dc_credentials_destroy(dc_credentials_t *c);

/* The credential of user for mechanism ("SCRAM-SHA-256"/"SCRAM-SHA-512"),
 * or NULL. c may be NULL (no users). Owned by c. */
const dc_scram_cred_t *dc_credentials_find(const dc_credentials_t *c,
                                           const char *user,
                                           const char *mechanism);
/* Number of (user, mechanism) entries. */
size_t dc_credentials_count(const dc_credentials_t *c);

/* The iteration count most entries for mechanism use (ties: the lower),
 * or DC_SCRAM_DEFAULT_ITERATIONS when there are none (or c is NULL). The
 * SASL server gives it to unknown users so they look like the others. */
int dc_credentials_common_iterations(const dc_credentials_t *c,
                                     const char *mechanism);

/* Adds or replaces user's SCRAM-SHA-256 and SCRAM-SHA-512 credentials in
 * path (created with mode 0600 if absent; other lines kept as they are).
 * iterations 0 = DC_SCRAM_DEFAULT_ITERATIONS, else MIN..MAX. The new file is
 * written to a temporary file, fsynced and renamed over path. An existing
 * file that does not parse is left alone (error). Returns 0 or -1. */
int dc_credentials_add(const char *path, const char *user, const char *password,
                       int iterations, char *errstr, size_t errstr_size);

#endif
