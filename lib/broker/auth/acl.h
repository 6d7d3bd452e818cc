/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's authorizer: allow/deny rules read from an ACL file
 * (dynconfd --acl-file FILE), evaluated per config resource.
 *
 * File format: one rule per line; blank lines and '#' comments (a token
 * starting with '#' ends the line) are ignored; an empty file is valid and
 * leaves only the default rule below.
 *
 *   allow|deny PRINCIPAL OPERATION RESOURCE
 *
 *   PRINCIPAL  User:NAME (exact match) or User:* (anyone)
 *   OPERATION  describe | alter | all. An allow of alter also allows
 *              describe (as Kafka's ALTER_CONFIGS implies DESCRIBE_CONFIGS);
 *              a deny of alter denies only alter.
 *   RESOURCE   client:NAME       the client-id NAME (type 9)
 *              client:PREFIX*    client-ids starting with PREFIX (not
 *                                <default>: name it explicitly)
 *              client:<default>  the default entity every client inherits
 *              client:*          every client-id, <default> included
 *              user:NAME         user NAME's entities (type 10 "NAME" and
 *                                "NAME/CLIENT"); NAME is the decoded user
 *                                name, i.e. the principal without "User:"
 *              user:PREFIX*      users starting with PREFIX
 *              user:*            every user
 *              broker            the BROKER resource (describe) and
 *                                ReloadSecurity (alter)
 *              *                 everything above
 *
 * Keywords are case-insensitive; principals and names are not. A token
 * may be double-quoted (with \" and \\ escapes) when it holds spaces or a
 * '#', e.g. allow "User:CN=alice smith,O=x" describe user:*
 *
 * Evaluation (dc_acl_authorize):
 *   1. no ACL loaded: allowed (like Kafka without an authorizer);
 *   2. a super user (dynconfd --super-users) is allowed;
 *   3. any matching deny rule denies (deny beats allow);
 *   4. any matching allow rule allows;
 *   5. default rule: a principal may describe the client-id it sends in
 *      its request header, and the user entities of its own user;
 *   6. anything else is denied.
 * Config resources map to ACL resources like this:
 *   CLIENT X         client:X
 *   BROKER n         broker
 *   USER "U"         user:U
 *   USER "U/C"       alter: user:U; describe: user:U and client:C (the
 *                    resolved view shows client C's own values too)
 * Describing CLIENT X resolves it for the caller's own user (see
 * scope.h); that needs describe on client:X only.
 *
 * Ownership: dc_acl_load()/dc_acl_parse() return a rule set the caller
 * frees with dc_acl_destroy(). Immutable once loaded, so any thread may
 * evaluate it.
 */
#ifndef DC_ACL_H
#define DC_ACL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dc_acl dc_acl_t;

/* Operations checked (an ACL rule's "all" covers both). */
enum { DC_ACL_DESCRIBE = 1, DC_ACL_ALTER = 2 };

/* Reads and parses the ACL file at path. NULL with errstr ("PATH:LINE:
 * what is wrong", or why the file cannot be read) on failure. */
dc_acl_t *dc_acl_load(const char *path, char *errstr, size_t errstr_size);

/* Parses rules from text (len bytes, need not be NUL-terminated); origin
 * names it in errors ("PATH:LINE: ..."). NULL with errstr on failure. */
dc_acl_t *dc_acl_parse(const char *text, size_t len, const char *origin,
                       char *errstr, size_t errstr_size);

void dc_acl_destroy(dc_acl_t *acl);

/* Number of rules loaded. */
size_t dc_acl_rule_count(const dc_acl_t *acl);

/* True when principal is in super_users (NULL = none): principals
 * separated by ';', or by ',' where the next one starts with "User:" (so
 * "User:admin,User:CN=ops,O=x" is two principals); spaces around each
 * are ignored. */
bool dc_acl_is_super_user(const char *super_users, const char *principal);

/* Decides whether principal ("User:NAME"; NULL = "User:ANONYMOUS") may do
 * op (DC_ACL_*) on the config resource (resource_type, resource_name)
 * (wire type 9 CLIENT, 10 USER, 4 BROKER), given the client_id of its
 * request header (NULL = none). acl NULL = no authorizer: allowed.
 * why (may be NULL) receives the reason: on denial a sentence for the
 * client, e.g. "principal User:bob is not authorized to alter client
 * 'payments' (no ACL rule allows it)". */
bool dc_acl_authorize(const dc_acl_t *acl, const char *super_users,
                      const char *principal, int op, int8_t resource_type,
                      const char *resource_name, const char *client_id,
                      char *why, size_t why_size);
#endif
