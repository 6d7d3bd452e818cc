/* Internals shared by the request handlers (not for the event loop). */
#ifndef DC_BROKER_INT_H
#define DC_BROKER_INT_H
#include "broker/configdb.h"
#include "broker/handlers.h"
#include "codec/proto.h"

struct dc_broker {
  dc_broker_opts_t opts;
  char *cluster_id;   /* owned copy */
  char node_name[16]; /* node id as a BROKER resource name */
  dc_store_t *store;  /* borrowed; NULL = memory only */
  dc_configdb_t *db;  /* owned snapshot */
  struct dc_acl *acl;           /* owned; NULL = no authorizer */
  struct dc_credentials *creds; /* owned; NULL = no SASL users */
};

/* Everything a handler needs about the request in hand. */
typedef struct dc_req {
  dc_broker_t *b;
  const dc_conn_info_t *conn;
  const dc_req_header_t *hdr;
  dc_rd_t *rd;      /* positioned at the body */
  dc_arena_t *arena;
  dc_buf_t *out;    /* the response body goes here (header already in) */
} dc_req_t;

/* Handlers return 0 when a response body was written, or a negative
 * dynconf_err_t when the request cannot be answered (connection closes). */
int dc_handle_describe_configs(dc_req_t *r);
int dc_handle_alter_configs(dc_req_t *r);
int dc_handle_incremental_alter_configs(dc_req_t *r);

#define DC_DEFAULT_ENTITY "<default>"
#endif
