/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The index behind the heartbeat/session rule (scope.c): which stored
 * entities set heartbeat.interval.ms (HB) or session.timeout.ms (ST), so
 * an alter checks only the (user, client-id) pairs it can break instead
 * of walking every entity.
 *
 * Three groups: client entities (type 9, not <default>), user entities
 * (type 10 "U") and user+client entities (type 10 "U/C"). In each group,
 * binary heaps over the members whose value parses as an integer:
 *   HB_ALL   members setting HB, highest HB first
 *   ST_ALL   members setting ST, lowest ST first
 *   HB_ONLY  members setting HB but not ST (ST absent), highest HB first
 *   ST_ONLY  members setting ST but not HB (HB absent), lowest ST first
 * (the user+client group keeps only the _ONLY heaps), and the user+client
 * entities setting either key, chained by user and by client-id.
 *
 * The configdb owns the index and keeps it current: every stored change
 * calls dc_pairidx_update(). Each indexed entity has one node (a few
 * dozen bytes plus two heap slots); entities setting neither key cost
 * nothing. Threading: the configdb's (one owner thread).
 */
#ifndef DC_PAIRINDEX_H
#define DC_PAIRINDEX_H
#include "broker/config/configdb.h"

#include <stdint.h>

typedef struct dc_pairidx dc_pairidx_t;
typedef struct dc_pairidx_node dc_pairidx_node_t;

typedef enum { DC_PIX_CLIENTS, DC_PIX_USERS, DC_PIX_USER_CLIENTS } dc_pix_group_t;
typedef enum {
  DC_PIX_HB_ALL,
  DC_PIX_ST_ALL,
  DC_PIX_HB_ONLY,
  DC_PIX_ST_ONLY
} dc_pix_heap_t;

dc_pairidx_t *dc_pairidx_new(void);
/* Frees the index and every node (the entities are the configdb's). */
void dc_pairidx_destroy(dc_pairidx_t *ix);

/* Makes *node (the slot the configdb keeps with one entity; NULL for an
 * entity not yet indexed) describe e, the entity's new version (same type
 * and name; NULL = the entity is gone), and points the node at e. 0, or -1
 * on OOM with nothing changed; never fails when e is NULL. */
int dc_pairidx_update(dc_pairidx_t *ix, dc_pairidx_node_t **node,
                      const dc_entity_t *e);

/* Receives one indexed entity as the pair it names: (NULL, client-id) for
 * a client entity, (user, NULL) for a user entity, (user, client-id) for a
 * user+client entity; user in its stored (encoded) form, client-id
 * decoded. Non-zero stops the walk. */
typedef int (*dc_pix_cb)(void *opaque, const char *uenc, const char *client);

/* Visits the members of heap h in group g whose value reaches bound (HB
 * heaps: HB >= bound; ST heaps: ST <= bound), going deeper into the heap
 * past a member only when cb returned 0 for it. Returns cb's first
 * non-zero result, else 0. Cost: O(1 + members cb returned 0 for). */
int dc_pairidx_visit(const dc_pairidx_t *ix, dc_pix_group_t g,
                     dc_pix_heap_t h, int64_t bound, dc_pix_cb cb,
                     void *opaque);

/* Calls cb for every user+client entity setting HB or ST whose user
 * (encoded) is uenc / whose client-id is client, until it returns
 * non-zero, which is then returned. */
int dc_pairidx_of_user(const dc_pairidx_t *ix, const char *uenc,
                       dc_pix_cb cb, void *opaque);
int dc_pairidx_of_client(const dc_pairidx_t *ix, const char *client,
                         dc_pix_cb cb, void *opaque);

/* Number of members in one heap (tests, diagnostics). */
size_t dc_pairidx_size(const dc_pairidx_t *ix, dc_pix_group_t g,
                       dc_pix_heap_t h);
#endif
