/* SPDX-License-Identifier: BSD-2-Clause */
/* May a request's principal do an operation on a config resource? The
 * broker's ACLs (auth/acl.h) asked for every handler, denials counted. */
#include "broker/auth/acl.h"
#include "broker/core/broker_int.h"

bool dc_broker_authorized(const dc_req_t *r, int op, int8_t resource_type,
                          const char *resource_name, char *why,
                          size_t why_size) {
  bool ok = dc_acl_authorize(r->b->acl, r->b->opts.super_users,
                             r->conn->principal, op, resource_type,
                             resource_name, r->hdr->client_id, why, why_size);
  r->b->metrics.authz_denied += !ok;
  return ok;
}
