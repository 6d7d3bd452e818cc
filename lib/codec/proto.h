/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kafka request/response structures and their codecs for the APIs dynconf
 * speaks. Field names follow apache/kafka's message schemas
 * (clients/src/main/resources/common/message/<Name>{Request,Response}.json).
 *
 * Conventions for every message type M:
 *   int dc_M_decode(dc_rd_t *rd, int16_t version, M_t *out);
 *       Decodes the body (after the header). Strings and arrays are
 *       allocated in rd->arena. Returns 0 or a negative dc_err_t
 *       (also left in rd->err). Trailing bytes after the body are ignored,
 *       as Kafka does.
 *   int dc_M_encode(dc_buf_t *b, int16_t version, const M_t *in);
 *       Appends the body. Returns 0, _UNSUPPORTED_API for a version
 *       outside the API's range, or _NOMEM.
 * Fields absent from a version are ignored when encoding and left zero
 * when decoding (is_default etc. get the schema default). Strings are
 * NUL-terminated; NULL means a null string. Arrays are (n, ptr) pairs;
 * n == -1 means a null array where the schema allows it.
 */
#ifndef DC_PROTO_H
#define DC_PROTO_H

#include "wire.h"

enum {
  DC_API_METADATA = 3,
  /* Served only as librdkafka's GSSAPI probe: it will not try GSSAPI on
   * a server whose ApiVersions lacks JoinGroup (0.9's marker). */
  DC_API_JOIN_GROUP = 11,
  DC_API_SASL_HANDSHAKE = 17,
  DC_API_API_VERSIONS = 18,
  DC_API_DESCRIBE_CONFIGS = 32,
  DC_API_ALTER_CONFIGS = 33,
  DC_API_SASL_AUTHENTICATE = 36,
  DC_API_INCREMENTAL_ALTER_CONFIGS = 44,
  /* KIP-590: a request forwarded by another server on behalf of a client
   * (between dynconfd replicas: a follower to the writer). */
  DC_API_ENVELOPE = 58,
  /* dynconf's own, outside Kafka's range (a targeted reload, as KIP-226
   * does for brokers):
   * reload TLS key/certificate/CA (and ACLs, credentials) from the same
   * paths. Advertised in ApiVersions. */
  DC_API_RELOAD_SECURITY = 20000,
  /* dynconf's own: a parked request answered when the configuration that
   * resolves for the caller changes (or at its timeout). */
  DC_API_WATCH = 20001,
  /* dynconf's own: an agent says what it did with a configuration. */
  DC_API_CLIENT_REPORT = 20002,
  /* dynconf's own: the clients a server knows and their rollout state. */
  DC_API_DESCRIBE_FLEET = 20003,
};

/* ConfigResource types and config sources. */
enum {
  DC_RES_TOPIC = 2,
  DC_RES_BROKER = 4,
  DC_RES_CLIENT = 9, /* dynconf / KIP-649 first draft */
  /* dynconf: a principal-scoped entity (KIP-649 later drafts). Name is
   * "USER" (the user entity) or "USER/CLIENT" (user + client-id), each part
   * percent-encoded (see lib/common/entity.h). */
  DC_RES_USER = 10,
};
enum {
  DC_SRC_UNKNOWN = 0,
  DC_SRC_STATIC_BROKER = 4,
  DC_SRC_DEFAULT = 5,
  DC_SRC_DYNAMIC_CLIENT = 7,  /* the client-id's own override */
  DC_SRC_DYNAMIC_DEFAULT = 8, /* inherited from <default> */
  DC_SRC_DYNAMIC_USER = 9,        /* from the principal's user entity */
  DC_SRC_DYNAMIC_USER_CLIENT = 10, /* from the user + client-id entity */
};
/* IncrementalAlterConfigs operations (KIP-339). */
enum { DC_OP_SET = 0, DC_OP_DELETE = 1, DC_OP_APPEND = 2, DC_OP_SUBTRACT = 3 };

/* Version range and flexible-from version of each API we implement.
 * Returns NULL for an API we do not speak. */
typedef struct dc_api_info {
  int16_t key, min_version, max_version;
  int16_t flexible_from; /* -1: never flexible */
  const char *name;
} dc_api_info_t;
const dc_api_info_t *dc_api_info(int16_t api_key);
/* All implemented APIs, for ApiVersions responses; *np gets the count. */
const dc_api_info_t *dc_api_all(size_t *np);
bool dc_api_flexible(int16_t api_key, int16_t version);
bool dc_api_supported(int16_t api_key, int16_t version);

/* ---- Headers ---------------------------------------------------------- */
typedef struct dc_req_header {
  int16_t api_key;
  int16_t api_version;
  int32_t correlation_id;
  char *client_id; /* nullable; classic string even in header v2 */
} dc_req_header_t;

/* Header v2 when (api_key, api_version) is flexible, else v1. For an
 * unknown api key the v1 form is used. */
int dc_req_header_decode(dc_rd_t *rd, dc_req_header_t *out);
int dc_req_header_encode(dc_buf_t *b, const dc_req_header_t *in);
/* Response header v1 when flexible, except ApiVersions (always v0). */
int dc_resp_header_decode(dc_rd_t *rd, int16_t api_key, int16_t api_version,
                          int32_t *correlation_id);
int dc_resp_header_encode(dc_buf_t *b, int16_t api_key, int16_t api_version,
                          int32_t correlation_id);

/* ---- ApiVersions (18), v0-3 ------------------------------------------- */
typedef struct dc_apiversions_req {
  char *client_software_name;    /* v3+ */
  char *client_software_version; /* v3+ */
} dc_apiversions_req_t;

typedef struct dc_api_range {
  int16_t api_key, min_version, max_version;
} dc_api_range_t;

typedef struct dc_apiversions_resp {
  int16_t error_code;
  int32_t n_api_keys;
  dc_api_range_t *api_keys;
  int32_t throttle_time_ms; /* v1+ */
  /* v3 tagged fields (features, epochs) are never sent, skipped on read. */
} dc_apiversions_resp_t;

int dc_apiversions_req_decode(dc_rd_t *rd, int16_t v, dc_apiversions_req_t *out);
int dc_apiversions_req_encode(dc_buf_t *b, int16_t v, const dc_apiversions_req_t *in);
int dc_apiversions_resp_decode(dc_rd_t *rd, int16_t v, dc_apiversions_resp_t *out);
int dc_apiversions_resp_encode(dc_buf_t *b, int16_t v, const dc_apiversions_resp_t *in);

/* ---- Metadata (3), v0-12 ---------------------------------------------- */
typedef struct dc_metadata_req_topic {
  uint8_t topic_id[16]; /* v10+ */
  char *name;           /* nullable from v10 */
} dc_metadata_req_topic_t;

typedef struct dc_metadata_req {
  int32_t n_topics; /* -1 = null = all topics (v1+); v0 empty = all */
  dc_metadata_req_topic_t *topics;
  bool allow_auto_topic_creation;                /* v4+, default true */
  bool include_cluster_authorized_operations;    /* v8-10 */
  bool include_topic_authorized_operations;      /* v8+ */
} dc_metadata_req_t;

typedef struct dc_metadata_broker {
  int32_t node_id;
  char *host;
  int32_t port;
  char *rack; /* v1+, nullable */
} dc_metadata_broker_t;

typedef struct dc_metadata_partition {
  int16_t error_code;
  int32_t partition_index;
  int32_t leader_id;
  int32_t leader_epoch; /* v7+, default -1 */
  int32_t n_replica_nodes;
  int32_t *replica_nodes;
  int32_t n_isr_nodes;
  int32_t *isr_nodes;
  int32_t n_offline_replicas; /* v5+ */
  int32_t *offline_replicas;
} dc_metadata_partition_t;

typedef struct dc_metadata_topic {
  int16_t error_code;
  char *name;           /* nullable from v12 */
  uint8_t topic_id[16]; /* v10+ */
  bool is_internal;     /* v1+ */
  int32_t n_partitions;
  dc_metadata_partition_t *partitions;
  int32_t topic_authorized_operations; /* v8+, default INT32_MIN */
} dc_metadata_topic_t;

typedef struct dc_metadata_resp {
  int32_t throttle_time_ms; /* v3+ */
  int32_t n_brokers;
  dc_metadata_broker_t *brokers;
  char *cluster_id;      /* v2+, nullable */
  int32_t controller_id; /* v1+, default -1 */
  int32_t n_topics;
  dc_metadata_topic_t *topics;
  int32_t cluster_authorized_operations; /* v8-10, default INT32_MIN */
} dc_metadata_resp_t;

int dc_metadata_req_decode(dc_rd_t *rd, int16_t v, dc_metadata_req_t *out);
int dc_metadata_req_encode(dc_buf_t *b, int16_t v, const dc_metadata_req_t *in);
int dc_metadata_resp_decode(dc_rd_t *rd, int16_t v, dc_metadata_resp_t *out);
int dc_metadata_resp_encode(dc_buf_t *b, int16_t v, const dc_metadata_resp_t *in);

/* dynconf's tagged field (flexible versions) carrying a store position:
 * how far into the replicated config log a server had applied it. Sent by
 * dynconf's own clients and servers only, and answered only to a request
 * that carried it (librdkafka 2.0.2 mis-skips non-empty tag sections). */
#define DC_TAG_STORE_POSITION 10000
/* dynconf's tagged field of a DescribeConfigs v4 result: the version of
 * the configuration a dynconf server resolved for that client resource
 * (the version a Watch would name), to a request that carried
 * DC_TAG_STORE_POSITION. */
#define DC_TAG_CONFIG_VERSION 10001
/* dynconf's tagged field of an Envelope request: the forwarding replica's
 * signature (DC_ENVELOPE_SIG_*). */
#define DC_TAG_REPLICA_SIGNATURE 10002

/* ---- DescribeConfigs (32), v0-4 --------------------------------------- */
/* v4 (flexible) requests may carry min_position (DC_TAG_STORE_POSITION,
 * the highest store position the client has seen; 0 = none seen yet): a
 * server that has not applied that far answers every resource
 * REPLICA_NOT_AVAILABLE rather than from an older state, and a server
 * asked with the tag says its own position in the response's. */
typedef struct dc_describe_configs_req_resource {
  int8_t resource_type;
  char *resource_name;
  int32_t n_configuration_keys; /* -1 = null = all keys */
  char **configuration_keys;
} dc_describe_configs_req_resource_t;

typedef struct dc_describe_configs_req {
  int32_t n_resources;
  dc_describe_configs_req_resource_t *resources;
  bool include_synonyms;      /* v1+ */
  bool include_documentation; /* v3+ */
  int64_t min_position;       /* v4+, tagged; <= 0 = none seen (decoded:
                               * -1 without the tag) */
  bool ask_position;          /* v4+: the tag even without one seen (0);
                               * decoded: the tag was there */
} dc_describe_configs_req_t;

typedef struct dc_describe_configs_synonym {
  char *name;
  char *value; /* nullable */
  int8_t source;
} dc_describe_configs_synonym_t;

typedef struct dc_describe_configs_entry {
  char *name;
  char *value; /* nullable */
  bool read_only;
  bool is_default;     /* v0 only */
  int8_t config_source; /* v1+, default -1 */
  bool is_sensitive;
  int32_t n_synonyms; /* v1+ */
  dc_describe_configs_synonym_t *synonyms;
  int8_t config_type;  /* v3+, default 0 */
  char *documentation; /* v3+, nullable */
} dc_describe_configs_entry_t;

typedef struct dc_describe_configs_result {
  int16_t error_code;
  char *error_message; /* nullable */
  int8_t resource_type;
  char *resource_name;
  int32_t n_configs;
  dc_describe_configs_entry_t *configs;
  int64_t config_version; /* v4+, tag DC_TAG_CONFIG_VERSION; <= 0 = not
                           * said (decoded as -1) */
} dc_describe_configs_result_t;

typedef struct dc_describe_configs_resp {
  int32_t throttle_time_ms;
  int32_t n_results;
  dc_describe_configs_result_t *results;
  int64_t position; /* v4+, tagged; <= 0 = not said (decoded as -1) */
} dc_describe_configs_resp_t;

int dc_describe_configs_req_decode(dc_rd_t *rd, int16_t v, dc_describe_configs_req_t *out);
int dc_describe_configs_req_encode(dc_buf_t *b, int16_t v, const dc_describe_configs_req_t *in);
int dc_describe_configs_resp_decode(dc_rd_t *rd, int16_t v, dc_describe_configs_resp_t *out);
int dc_describe_configs_resp_encode(dc_buf_t *b, int16_t v, const dc_describe_configs_resp_t *in);
/* The response piece by piece, for a server that checks its size as it
 * goes: begin (throttle time and result count), one result_encode per
 * result, then end (returns b->err). v must be supported. */
void dc_describe_configs_resp_begin(dc_buf_t *b, int16_t v,
                                    int32_t throttle_time_ms,
                                    int32_t n_results);
void dc_describe_configs_result_encode(dc_buf_t *b, int16_t v,
                                       const dc_describe_configs_result_t *r);
/* position: the tag DC_TAG_STORE_POSITION when > 0 (v4+), else none. */
int dc_describe_configs_resp_end(dc_buf_t *b, int16_t v, int64_t position);

/* ---- AlterConfigs (33) v0-2 and IncrementalAlterConfigs (44) v0-1 -------
 * One request shape for both: AlterConfigs carries no op (decoded as SET),
 * IncrementalAlterConfigs carries config_operation. */
typedef struct dc_alter_config {
  char *name;
  int8_t op; /* Incremental only; DC_OP_SET for AlterConfigs */
  char *value; /* nullable */
} dc_alter_config_t;

typedef struct dc_alter_resource {
  int8_t resource_type;
  char *resource_name;
  int32_t n_configs;
  dc_alter_config_t *configs;
} dc_alter_resource_t;

typedef struct dc_alter_configs_req {
  int32_t n_resources;
  dc_alter_resource_t *resources;
  bool validate_only;
} dc_alter_configs_req_t;

typedef struct dc_alter_result {
  int16_t error_code;
  char *error_message; /* nullable */
  int8_t resource_type;
  char *resource_name;
} dc_alter_result_t;

typedef struct dc_alter_configs_resp {
  int32_t throttle_time_ms;
  int32_t n_responses;
  dc_alter_result_t *responses;
} dc_alter_configs_resp_t;

int dc_alter_configs_req_decode(dc_rd_t *rd, int16_t v, dc_alter_configs_req_t *out);
int dc_alter_configs_req_encode(dc_buf_t *b, int16_t v, const dc_alter_configs_req_t *in);
int dc_alter_configs_resp_decode(dc_rd_t *rd, int16_t v, dc_alter_configs_resp_t *out);
int dc_alter_configs_resp_encode(dc_buf_t *b, int16_t v, const dc_alter_configs_resp_t *in);
int dc_incremental_alter_configs_req_decode(dc_rd_t *rd, int16_t v, dc_alter_configs_req_t *out);
int dc_incremental_alter_configs_req_encode(dc_buf_t *b, int16_t v, const dc_alter_configs_req_t *in);
/* The IncrementalAlterConfigs response has the AlterConfigs shape. */
int dc_incremental_alter_configs_resp_decode(dc_rd_t *rd, int16_t v, dc_alter_configs_resp_t *out);
int dc_incremental_alter_configs_resp_encode(dc_buf_t *b, int16_t v, const dc_alter_configs_resp_t *in);


/* ---- SaslHandshake (17) v0-1 -------------------------------------------
 * v0 means the SASL tokens that follow travel as raw size-prefixed frames
 * (the path kafka-python uses); v1 means they travel in SaslAuthenticate. */
typedef struct dc_sasl_handshake_req {
  char *mechanism;
} dc_sasl_handshake_req_t;

typedef struct dc_sasl_handshake_resp {
  int16_t error_code;
  int32_t n_mechanisms;
  char **mechanisms;
} dc_sasl_handshake_resp_t;

int dc_sasl_handshake_req_decode(dc_rd_t *rd, int16_t v, dc_sasl_handshake_req_t *out);
int dc_sasl_handshake_req_encode(dc_buf_t *b, int16_t v, const dc_sasl_handshake_req_t *in);
int dc_sasl_handshake_resp_decode(dc_rd_t *rd, int16_t v, dc_sasl_handshake_resp_t *out);
int dc_sasl_handshake_resp_encode(dc_buf_t *b, int16_t v, const dc_sasl_handshake_resp_t *in);

/* ---- SaslAuthenticate (36) v0-2 (flexible from 2) ---------------------- */
typedef struct dc_sasl_authenticate_req {
  const uint8_t *auth_bytes; /* arena (decode) or borrowed (encode) */
  int32_t n_auth_bytes;
} dc_sasl_authenticate_req_t;

typedef struct dc_sasl_authenticate_resp {
  int16_t error_code;
  char *error_message; /* nullable */
  const uint8_t *auth_bytes;
  int32_t n_auth_bytes;
  int64_t session_lifetime_ms; /* v1+ */
} dc_sasl_authenticate_resp_t;

int dc_sasl_authenticate_req_decode(dc_rd_t *rd, int16_t v, dc_sasl_authenticate_req_t *out);
int dc_sasl_authenticate_req_encode(dc_buf_t *b, int16_t v, const dc_sasl_authenticate_req_t *in);
int dc_sasl_authenticate_resp_decode(dc_rd_t *rd, int16_t v, dc_sasl_authenticate_resp_t *out);
int dc_sasl_authenticate_resp_encode(dc_buf_t *b, int16_t v, const dc_sasl_authenticate_resp_t *in);

/* ---- ReloadSecurity (20000) v0-1, dynconf's own ------------------------
 * request:  listener_name (nullable string; null = every listener)
 * response: throttle_time_ms, error_code, error_message (nullable),
 *           [listener_name, error_code, error_message (nullable),
 *            subject (nullable: the certificate now served),
 *            not_after_ms (int64; -1 = none)],
 *           v1+: [what (DC_RELOAD_ACL ...), path (nullable),
 *                 error_code, error_message (nullable)]
 *           one entry per security file configured; a failed one keeps
 *           its old contents and stops no other.
 * A file that fails is said in its own entry in v1 (top-level error 0, as
 * for a listener), in the top-level error (INVALID_CONFIG) in v0.
 * Not flexible (request header v1, response header v0). */
typedef struct dc_reload_req {
  char *listener_name;
} dc_reload_req_t;

typedef struct dc_reload_listener {
  char *listener_name;
  int16_t error_code;
  char *error_message;
  char *subject;
  int64_t not_after_ms;
} dc_reload_listener_t;

/* The files' "what" on the wire. */
#define DC_RELOAD_ACL "ACL file"
#define DC_RELOAD_CREDENTIALS "credentials"
#define DC_RELOAD_JWKS "OAUTHBEARER keys"
#define DC_RELOAD_KEYTAB "Kerberos keytab"

typedef struct dc_reload_file {
  char *what;
  char *path;
  int16_t error_code;
  char *error_message;
} dc_reload_file_t;

typedef struct dc_reload_resp {
  int32_t throttle_time_ms;
  int16_t error_code;
  char *error_message;
  int32_t n_listeners;
  dc_reload_listener_t *listeners;
  int32_t n_files; /* v1+ */
  dc_reload_file_t *files;
} dc_reload_resp_t;

/* One file's outcome in words, as dynconfd logs it and the CLI prints it:
 * "reloaded ACL file PATH", or with error (NULL = none) "Kerberos keytab
 * PATH: not reloaded, old keys kept: ERROR". Returns snprintf's count. */
int dc_reload_file_say(char *out, size_t size, const char *what,
                       const char *path, const char *error);

int dc_reload_req_decode(dc_rd_t *rd, int16_t v, dc_reload_req_t *out);
int dc_reload_req_encode(dc_buf_t *b, int16_t v, const dc_reload_req_t *in);
int dc_reload_resp_decode(dc_rd_t *rd, int16_t v, dc_reload_resp_t *out);
int dc_reload_resp_encode(dc_buf_t *b, int16_t v, const dc_reload_resp_t *in);

/* ---- JoinGroup (11) v0 -------------------------------------------------
 * request:  group_id, session_timeout_ms, member_id, protocol_type,
 *           [name, metadata (bytes)]
 * response: error_code, generation_id, protocol_name, leader, member_id,
 *           [member_id, metadata (bytes)] (always empty here) */
typedef struct dc_join_group_req {
  char *group_id;
  int32_t session_timeout_ms;
  char *member_id;
  char *protocol_type;
  int32_t n_protocols;
} dc_join_group_req_t;

typedef struct dc_join_group_resp {
  int16_t error_code;
  int32_t generation_id;
  const char *protocol_name, *leader, *member_id;
} dc_join_group_resp_t;

int dc_join_group_req_decode(dc_rd_t *rd, int16_t v, dc_join_group_req_t *out);
int dc_join_group_resp_encode(dc_buf_t *b, int16_t v,
                              const dc_join_group_resp_t *in);

/* ---- Watch (20001) v0-1, dynconf's own, flexible ----------------------
 * request:  client_id (the client-id entity whose resolution for the
 *           caller's principal is watched), known_version (int64; -1 =
 *           none: answer at once), timeout_ms (int32),
 *           v1+: min_position (int64; -1 = none)
 * response: throttle_time_ms, error_code, error_message (nullable),
 *           changed (bool), version (int64), [name, value (nullable),
 *           source (int8)] (the resolved configuration when changed),
 *           v1+: position (int64; -1 = the server keeps no log)
 * The version names a resolved configuration: equal versions, equal
 * configurations. The position is how far into the replicated config
 * log the answering server had applied: a client that has seen position
 * P is never answered from an older state (the server waits until it has
 * applied P, or answers REPLICA_NOT_AVAILABLE at the timeout). */
typedef struct dc_watch_req {
  char *client_id;
  int64_t known_version;
  int32_t timeout_ms;
  int64_t min_position;
} dc_watch_req_t;

typedef struct dc_watch_entry {
  char *name;
  char *value;
  int8_t source;
} dc_watch_entry_t;

typedef struct dc_watch_resp {
  int32_t throttle_time_ms;
  int16_t error_code;
  char *error_message;
  bool changed;
  int64_t version;
  int32_t n_configs;
  dc_watch_entry_t *configs;
  int64_t position;
} dc_watch_resp_t;

int dc_watch_req_decode(dc_rd_t *rd, int16_t v, dc_watch_req_t *out);
int dc_watch_req_encode(dc_buf_t *b, int16_t v, const dc_watch_req_t *in);
int dc_watch_resp_decode(dc_rd_t *rd, int16_t v, dc_watch_resp_t *out);
int dc_watch_resp_encode(dc_buf_t *b, int16_t v, const dc_watch_resp_t *in);

/* ---- ClientReport (20002) v0, dynconf's own, flexible -----------------
 * request:  client_id, instance_id (the agent's, random, fixed for its
 *           life), kind ("producer"/"consumer"), software_name,
 *           software_version (the agent's), client_library (the
 *           application's, e.g. "librdkafka/2.0.2"), version (int64: the configuration the report is about; -1 =
 *           the one this connection was served last), generation (int64),
 *           outcome (int8, DC_OUTCOME_*), reason (nullable: why it
 *           rejected, which keys it pinned or ignored, or for RESTART
 *           the values a restart would apply)
 * response: throttle_time_ms, error_code, error_message (nullable) */
enum {
  DC_OUTCOME_NONE = -1, /* nothing reported yet */
  DC_OUTCOME_APPLIED = 0,
  DC_OUTCOME_PARTLY = 1,   /* applied; some keys pinned or ignored */
  DC_OUTCOME_REJECTED = 2, /* refused as a whole; the last good stays */
  /* accepted; takes effect when the client is restarted (a client the
   * plugin configures at creation); reason: the values a restart would
   * apply, e.g. "after a restart: acks=0; session.timeout.ms=30000" */
  DC_OUTCOME_RESTART = 3,
};

typedef struct dc_client_report_req {
  char *client_id, *instance_id, *kind, *software_name, *software_version;
  char *client_library;
  int64_t version, generation;
  int8_t outcome;
  char *reason;
} dc_client_report_req_t;

typedef struct dc_client_report_resp {
  int32_t throttle_time_ms;
  int16_t error_code;
  char *error_message;
} dc_client_report_resp_t;

int dc_client_report_req_decode(dc_rd_t *rd, int16_t v,
                                dc_client_report_req_t *out);
int dc_client_report_req_encode(dc_buf_t *b, int16_t v,
                                const dc_client_report_req_t *in);
int dc_client_report_resp_decode(dc_rd_t *rd, int16_t v,
                                 dc_client_report_resp_t *out);
int dc_client_report_resp_encode(dc_buf_t *b, int16_t v,
                                 const dc_client_report_resp_t *in);

/* ---- DescribeFleet (20003) v0-v1, dynconf's own, flexible -------------
 * request:  client_id (nullable: any), user (nullable: any; the name of
 *           the User: principal);
 *           v1+: since_seq (int64; -1 = answer now, else park until the
 *           fleet's change sequence differs from it), timeout_ms (int32,
 *           how long to park), after_client_id, after_instance_id
 *           (nullable both: the page starts after this client, in the
 *           listing's order), max_clients (int32; 0 = as many as fit)
 * response: throttle_time_ms, error_code, error_message (nullable),
 *           v1+: fleet_seq (int64), more (bool: a page was cut; ask again
 *           after its last client),
 *           [instance_id, client_id, principal, peer, listener,
 *            agent_software, app_software, kind, first_seen_ms,
 *            last_seen_ms, connected (bool), served_version,
 *            current_version, reported_version, generation, outcome
 *            (int8), reason (nullable), state (int8, DC_FLEET_*)]
 * Clients are listed by client_id, then instance_id. A client's state is
 * judged against the version that resolves for it now: a report of
 * another version is BEHIND whatever its outcome; of that version,
 * REJECTED, RESTART or UP_TO_DATE (APPLIED, PARTLY) by its outcome. */
enum {
  DC_FLEET_UP_TO_DATE = 0, /* applied the version that resolves now */
  DC_FLEET_BEHIND = 1,     /* connected; its report is of another version */
  DC_FLEET_REJECTED = 2,   /* refused the version that resolves now */
  DC_FLEET_SILENT = 3,     /* gone, or never reported */
  /* acknowledged the version that resolves now (DC_OUTCOME_RESTART);
   * runs with the values it started with until restarted */
  DC_FLEET_RESTART = 4,
};
/* How many DC_FLEET_* states there are (counts per state). */
#define DC_FLEET_N_STATES 5

typedef struct dc_fleet_client {
  char *instance_id, *client_id, *principal, *peer, *listener;
  char *agent_software, *app_software, *kind;
  int64_t first_seen_ms, last_seen_ms;
  bool connected;
  int64_t served_version, current_version, reported_version, generation;
  int8_t outcome;
  char *reason;
  int8_t state;
} dc_fleet_client_t;

typedef struct dc_describe_fleet_req {
  char *client_id, *user;
  int64_t since_seq;                        /* v1+ */
  int32_t timeout_ms;                       /* v1+ */
  char *after_client_id, *after_instance_id; /* v1+ */
  int32_t max_clients;                      /* v1+ */
} dc_describe_fleet_req_t;

typedef struct dc_describe_fleet_resp {
  int32_t throttle_time_ms;
  int16_t error_code;
  char *error_message;
  int64_t fleet_seq; /* v1+ */
  bool more;         /* v1+ */
  int32_t n_clients;
  dc_fleet_client_t *clients;
} dc_describe_fleet_resp_t;

int dc_describe_fleet_req_decode(dc_rd_t *rd, int16_t v,
                                 dc_describe_fleet_req_t *out);
int dc_describe_fleet_req_encode(dc_buf_t *b, int16_t v,
                                 const dc_describe_fleet_req_t *in);
int dc_describe_fleet_resp_decode(dc_rd_t *rd, int16_t v,
                                  dc_describe_fleet_resp_t *out);
int dc_describe_fleet_resp_encode(dc_buf_t *b, int16_t v,
                                  const dc_describe_fleet_resp_t *in);
/* One client as the response lists it (its size bounds a page). */
void dc_fleet_client_encode(dc_buf_t *b, const dc_fleet_client_t *c);

/* ---- Envelope (58), v0 (flexible) --------------------------------------- */
/* DC_TAG_REPLICA_SIGNATURE's bytes: int32 signer node, int64 signed_ms,
 * then the signature. */
#define DC_ENVELOPE_SIG_LEN 64
#define DC_ENVELOPE_SIG_TAG_LEN (4 + 8 + DC_ENVELOPE_SIG_LEN)
typedef struct dc_envelope_req {
  const uint8_t *request_data;  /* the client's request: header and body */
  int32_t request_data_len;
  const uint8_t *principal;     /* nullable; dynconf: "User:NAME" */
  int32_t principal_len;        /* -1 = null */
  const uint8_t *client_host;   /* dynconf: the client's "ip:port" */
  int32_t client_host_len;
  /* dynconf's tag DC_TAG_STORE_POSITION: how far the forwarding replica
   * had applied the config log (<= 0 = not said; decoded as -1). */
  int64_t position;
  /* dynconf's tag DC_TAG_REPLICA_SIGNATURE: the forwarding replica's
   * node, the wall-clock ms it signed at, and its signature over what the
   * Envelope carries (broker/replica_key.h). has_signature false: no such
   * tag, or not DC_ENVELOPE_SIG_TAG_LEN bytes long. */
  bool has_signature;
  int32_t signer;
  int64_t signed_ms;
  uint8_t signature[DC_ENVELOPE_SIG_LEN];
} dc_envelope_req_t;

typedef struct dc_envelope_resp {
  const uint8_t *response_data; /* nullable: the response, header and body */
  int32_t response_data_len;    /* -1 = null */
  int16_t error_code;
  /* dynconf's tagged field DC_TAG_STORE_POSITION: how far the writer had
   * applied the replicated config log once it handled the request (<= 0 =
   * not said; decoded as -1), so the forwarding server answers only once
   * it has applied as much (read your writes). */
  int64_t position;
} dc_envelope_resp_t;

int dc_envelope_req_decode(dc_rd_t *rd, int16_t v, dc_envelope_req_t *out);
int dc_envelope_req_encode(dc_buf_t *b, int16_t v, const dc_envelope_req_t *in);
int dc_envelope_resp_decode(dc_rd_t *rd, int16_t v, dc_envelope_resp_t *out);
int dc_envelope_resp_encode(dc_buf_t *b, int16_t v,
                            const dc_envelope_resp_t *in);
#endif
