/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Config entity names, the one place their rules live.
 *
 * CLIENT entities (ConfigResource type 9) are named by a client-id of
 * 1..DC_ENTITY_PART_MAX bytes, or DC_ENTITY_DEFAULT for the values every
 * client inherits. There is no default user entity, and "USER/<default>"
 * names nothing: the user entity itself covers all that user's client-ids.
 *
 * Names of principal-scoped config entities (ConfigResource type 10,
 * DC_RES_USER): "USER" for a user's own overrides, "USER/CLIENT" for that
 * user's overrides of one client-id. Each part is percent-encoded so the
 * '/' separator is unambiguous:
 *
 *   '%', '/', and every byte < 0x21 or > 0x7e  ->  %XX (upper-case hex)
 *   every other byte                           ->  itself
 *
 * e.g. user "CN=alice smith,O=x" with client-id "a/b" is
 * "CN=alice%20smith,O=x/a%2Fb". Decoding accepts either hex case and raw
 * bytes that should have been encoded (other than '/' and '%'), so a name
 * from a more eager encoder (Kafka's URL Sanitizer) still parses;
 * dc_entity_user_canonical() gives the one spelling dynconfd stores.
 *
 * A decoded part is 1..DC_ENTITY_PART_MAX bytes and never contains NUL.
 * Pure functions, no allocation, any thread. Used by dynconfd (lookup and
 * authorization) and the CLI (building names).
 */
#ifndef DC_ENTITY_H
#define DC_ENTITY_H
#include <stdbool.h>
#include <stddef.h>

#define DC_ENTITY_PART_MAX 255
/* The CLIENT entity every client inherits from. */
#define DC_ENTITY_DEFAULT "<default>"
/* Longest encoded part, and longest encoded "USER/CLIENT" (+ NUL). */
#define DC_ENTITY_ENC_PART_MAX (3 * DC_ENTITY_PART_MAX)
#define DC_ENTITY_ENC_NAME_SIZE (2 * DC_ENTITY_ENC_PART_MAX + 2)

/* A decoded type-10 name. client is "" for a plain user entity. */
typedef struct dc_user_entity {
  char user[DC_ENTITY_PART_MAX + 1];
  char client[DC_ENTITY_PART_MAX + 1];
} dc_user_entity_t;

/* Whether name is DC_ENTITY_DEFAULT. */
bool dc_entity_is_default(const char *name);

/* A CLIENT entity name (a client-id, or DC_ENTITY_DEFAULT): 1..
 * DC_ENTITY_PART_MAX bytes. 0, or -1 with errstr. */
int dc_entity_client_check(const char *name, char *errstr, size_t errstr_size);

/* A user entity's decoded parts (client NULL or "" = the user entity
 * itself): neither part is DC_ENTITY_DEFAULT. 0, or -1 with errstr. */
int dc_entity_user_check(const char *user, const char *client, char *errstr,
                         size_t errstr_size);

/* Percent-encodes part (NUL-terminated) into out. Returns the encoded
 * length, or -1 (out set to "" when out_size > 0) when part is empty,
 * longer than DC_ENTITY_PART_MAX, or out is too small. */
int dc_entity_encode_part(const char *part, char *out, size_t out_size);

/* Builds the type-10 name for user (and client, NULL or "" = the user
 * entity) into out, which DC_ENTITY_ENC_NAME_SIZE bytes always fit.
 * 0, or -1 with errstr (empty or over-long part, small buffer). */
int dc_entity_user_name(const char *user, const char *client, char *out,
                        size_t out_size, char *errstr, size_t errstr_size);

/* Parses a type-10 name. 0, or -1 with errstr saying what is wrong (more
 * than one '/', empty part, bad or NUL %XX, part over 255 bytes). */
int dc_entity_user_parse(const char *name, dc_user_entity_t *out,
                         char *errstr, size_t errstr_size);

/* Parses name and writes its canonical encoding into out (at least
 * DC_ENTITY_ENC_NAME_SIZE bytes). 0, or -1 with errstr as above. */
int dc_entity_user_canonical(const char *name, char *out, size_t out_size,
                             char *errstr, size_t errstr_size);
#endif
