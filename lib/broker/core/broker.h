/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Request dispatch: one complete request frame in, one complete response
 * frame out. No sockets here (the event loop in net/server_loop.c owns
 * I/O), which is what lets the fuzz target drive this directly.
 *
 * Threading: a dc_broker_t belongs to one thread (the event loop).
 */
#ifndef DC_HANDLERS_H
#define DC_HANDLERS_H
#include "common/arena.h"
#include "common/buf.h"
#include "broker/store/store.h"

struct dc_kclient_security;
struct dc_answer_memo; /* a connection's kept answer (api/answer_memo.h) */

#include <stdbool.h>
#include <stdint.h>

/* One listener's outcome of a TLS reload. */
typedef struct dc_reload_report {
  char listener[64];
  int16_t error_code;   /* 0, or a Kafka error code (e.g. -1) */
  char message[512];    /* why it failed; empty on success */
  char subject[512];    /* the certificate served from now on */
  int64_t not_after_ms; /* its expiry, wall-clock ms; -1 if none */
} dc_reload_report_t;

typedef struct dc_broker_opts {
  int32_t node_id;                 /* default 1 */
  const char *cluster_id;          /* Metadata v2+; default "dynconf" */
  int64_t session_timeout_min_ms;  /* server bounds on session.timeout.ms, */
  int64_t session_timeout_max_ms;  /* default 6000..1800000 */
  bool allow_unknown_keys;         /* relay keys outside the schema */
  /* Per-request bounds, so no request's cost grows without limit.
   * A request naming more resources than max_request_resources gets
   * INVALID_REQUEST for each (or closes the connection when even that
   * answer would exceed max_response_size); a resource with more keys than
   * max_request_configs gets INVALID_REQUEST; an alter leaving an entity
   * with more than max_entity_configs keys gets INVALID_CONFIG; a
   * DescribeConfigs result that would take the response past
   * max_response_size bytes gets INVALID_REQUEST instead of its configs. */
  int32_t max_request_resources;   /* default 1000 */
  int32_t max_request_configs;     /* default 1000 */
  int32_t max_entity_configs;      /* default 1000 */
  /* Entities (clients, users, user+clients with configs) the server
   * holds; an alter creating one more gets POLICY_VIOLATION. */
  int64_t max_entities;            /* default 2,000,000 */
  /* Store rows one alter request may write (each changed entity's new
   * set, its old one removed, one audit row per change): what bounds
   * the commit's time on the event loop. A resource that would go past
   * it gets INVALID_REQUEST; default 5000 (about 10 ms of writing). */
  int32_t max_request_writes;
  size_t max_response_size;        /* default 4 MiB */
  /* How long an agent whose connection closed stays in the fleet view;
   * default 3600000 (one hour). */
  int64_t fleet_retention_ms;
  /* The fleet view's entries together hold at most fleet_max_bytes; a
   * report that needs more when the gone ones are dropped gets
   * POLICY_VIOLATION (0 = no bound). DescribeFleet requests parked at
   * once: at most fleet_max_waits, fleet_max_waits_per_principal of one
   * principal; more get POLICY_VIOLATION (0 = no bound). */
  size_t fleet_max_bytes;
  int32_t fleet_max_waits;
  int32_t fleet_max_waits_per_principal;
  /* Kafka's connection.failed.authentication.delay.ms: a failed SASL
   * authentication is answered this late, then the connection closes
   * (0 = at once), so a client guessing passwords in a loop waits. */
  int32_t failed_auth_delay_ms;
  /* The server's own settings, served read-only as the BROKER resource.
   * n_static pairs; borrowed, must outlive the broker. */
  size_t n_static;
  const char *const *static_keys;
  const char *const *static_values;
  /* Security (all optional; borrowed strings that must outlive the broker).
   * acl_path NULL = no authorizer: every principal may do everything, as a
   * Kafka broker without authorizer.class.name. super_users: comma list of
   * principals ("User:admin,User:CN=ops") that pass every check.
   * credentials_path: the hashed SCRAM credentials file SASL checks. */
  const char *acl_path;
  const char *super_users;
  const char *credentials_path;
  /* Comma list offered in SaslHandshake; NULL = DC_SASL_DEFAULT_MECHANISMS */
  const char *sasl_enabled_mechanisms;
  /* OAUTHBEARER token checks (lib/broker/auth/jwt.h), as Kafka's
   * sasl.oauthbearer.* settings: tokens signed by a key of the JWKS file
   * oauth_jwks_path (reloaded with the credentials), unsigned ones only
   * with oauth_unsecured (tests); issuer and audience NULL = unchecked;
   * the principal from the claim oauth_principal_claim (NULL = "sub"). */
  const char *oauth_jwks_path;
  bool oauth_unsecured;
  const char *oauth_issuer;
  const char *oauth_audience;
  const char *oauth_principal_claim;
  int64_t oauth_clock_skew_s; /* default 30 */
  /* GSSAPI (Kerberos, lib/broker/auth/sasl_gssapi.h), when kerberos is set:
   * tickets for kerberos_service_name/ANY-HOST (NULL = "kafka") checked
   * with the keys of kerberos_keytab (NULL = the default keytab), the
   * principal mapped by kerberos_rules (Kafka's
   * sasl.kerberos.principal.to.local.rules; NULL = DEFAULT). Reloaded
   * with the credentials. */
  bool kerberos;
  const char *kerberos_service_name;
  const char *kerberos_keytab;
  const char *kerberos_rules;
  /* KIP-368 connections.max.reauth.ms: a SASL session lasts at most this
   * long without re-authenticating (0 = no limit but a token's expiry). */
  int64_t connections_max_reauth_ms;
  /* ReloadSecurity (key 20000) and SIGHUP: reloads the TLS material of the
   * named listener (NULL = all) and fills up to max reports; returns the
   * number filled. Set by the program that owns the listeners. */
  int (*reload_tls)(void *opaque, const char *listener,
                    dc_reload_report_t *reports, int max);
  void *reload_opaque;
  /* With a replicated store: alters reaching a server that does not
   * write are forwarded (Envelope, KIP-590) to the one that does, on its
   * listener named forward_listener (NULL = the listener the alter came
   * in on), secured with forward_security (NULL = PLAINTEXT; borrowed
   * for dc_broker_new only), waiting at most forward_timeout_ms. */
  bool forward;
  const char *forward_listener;
  const struct dc_kclient_security *forward_security;
  int forward_timeout_ms;
} dc_broker_opts_t;


#define DC_DEFAULT_MAX_REQUEST_RESOURCES 1000
#define DC_DEFAULT_MAX_REQUEST_CONFIGS 1000
#define DC_DEFAULT_MAX_ENTITY_CONFIGS 1000
#define DC_DEFAULT_MAX_REQUEST_WRITES 5000
#define DC_DEFAULT_MAX_ENTITIES 2000000
#define DC_DEFAULT_MAX_RESPONSE_SIZE (4u * 1024 * 1024)
#define DC_DEFAULT_FLEET_MAX_BYTES (64u * 1024 * 1024)
#define DC_DEFAULT_FLEET_MAX_WAITS 64
#define DC_DEFAULT_FLEET_MAX_WAITS_PER_PRINCIPAL 8
#define DC_DEFAULT_FAILED_AUTH_DELAY_MS 100

#define DC_SASL_DEFAULT_MECHANISMS "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"

/* Fills opts with the defaults above. */
void dc_broker_opts_init(dc_broker_opts_t *opts);

typedef struct dc_broker dc_broker_t;

/* Creates a broker serving the snapshot loaded from store (borrowed; must
 * outlive the broker; NULL = memory only, nothing persisted). Returns NULL
 * with errstr on failure. Caller owns the result. */
dc_broker_t *dc_broker_new(const dc_broker_opts_t *opts, dc_store_t *store,
                           char *errstr, size_t errstr_size);
void dc_broker_destroy(dc_broker_t *b);

/* Forwarded requests: an fd readable when answers are waiting (-1
 * without forwarding), and the answers, each handed to cb with the token
 * of the connection that asked (dc_conn_info_t.token) as a complete
 * size-prefixed response frame, valid during the call. Loop thread. */
int dc_broker_event_fd(const dc_broker_t *b);
/* Parked Watch requests: an fd readable when answers are due (always
 * valid); the answers come through dc_broker_answers too. */
int dc_broker_watch_fd(const dc_broker_t *b);
/* SASL steps run on the log-in thread: an fd readable when their answers
 * are waiting (-1 when there is no such thread); the answers come through
 * dc_broker_answers too. */
int dc_broker_login_fd(const dc_broker_t *b);
/* The log-in thread (login.h), for the server's TLS handshakes; NULL when
 * there is none. */
struct dc_login *dc_broker_login(dc_broker_t *b);
typedef void(dc_broker_answer_cb)(void *opaque, void *token,
                                  const uint8_t *frame, size_t len);
void dc_broker_answers(dc_broker_t *b, dc_broker_answer_cb *cb, void *opaque);
/* The connection that waits for *pending (dc_conn_info_t.pending) closed:
 * its answer is dropped. */
void dc_broker_abandon(dc_broker_t *b, void *pending);
/* The connection whose fleet slot holds entry closed: the agent it
 * carried is kept as gone (fleet.retention.ms). */
void dc_broker_fleet_conn_closed(dc_broker_t *b, void *entry);
/* Frees a connection's kept answer (dc_conn_info_t.memo); NULL is fine. */
void dc_broker_memo_free(struct dc_answer_memo *m);
/* The bytes it holds, for the connection's share of max.buffered.bytes. */
size_t dc_broker_memo_bytes(const struct dc_answer_memo *m);

/* Appends the broker's metrics (requests, alters, security, the store,
 * entities) as Prometheus text. Loop thread. */
void dc_broker_metrics(dc_broker_t *b, dc_buf_t *out);

/* Applies what other servers wrote to the store since the last call
 * (dc_store_poll) to the in-memory view, so reads serve it. Errors are
 * logged; what was not applied is tried again at the next call. Loop
 * thread. */
void dc_broker_store_poll(dc_broker_t *b);

/* One security file's outcome of a reload. */
typedef struct dc_reload_file_report {
  const char *what;   /* DC_RELOAD_ACL, ... (lib/codec/proto.h) */
  char path[1024];    /* the file read */
  int16_t error_code; /* 0, or DC_ERR_INVALID_CONFIG: old contents kept */
  char message[512];  /* why not; empty on success */
} dc_reload_file_report_t;

/* ACL file, credentials, OAUTHBEARER keys, Kerberos keytab. */
#define DC_RELOAD_FILES_MAX 4

/* Reads again each security file the broker was started with (ACL file,
 * credentials, OAUTHBEARER JWKS, Kerberos keytab), each on its own: a
 * file that fails keeps its old contents in force and stops no other.
 * Fills one report per file configured, in that order; returns how many
 * (0..DC_RELOAD_FILES_MAX). Loop thread only. */
int dc_broker_reload_security(dc_broker_t *b,
                              dc_reload_file_report_t *files);

/* The reports in one line, "; " between them (dc_reload_file_say's
 * words), only the failed ones when failed_only; cut to size. Returns
 * how many failed. */
int dc_reload_files_say(const dc_reload_file_report_t *files, int n,
                        bool failed_only, char *out, size_t size);

/* Per-connection SASL state, owned by the connection (net/server_conn.c),
 * changed by the SaslHandshake/SaslAuthenticate handlers. */
enum {
  DC_AUTH_NONE = 0,      /* listener without SASL */
  DC_AUTH_HANDSHAKE,     /* SASL listener: waiting for SaslHandshake */
  DC_AUTH_AUTHENTICATE,  /* after SaslHandshake v1: SaslAuthenticate next */
  DC_AUTH_RAW,           /* after SaslHandshake v0: raw token frames next */
  DC_AUTH_DONE,          /* authenticated; principal is set */
};
struct dc_sasl_server;
typedef struct dc_conn_auth {
  int state;
  char mechanism[32];
  struct dc_sasl_server *sasl; /* exchange in progress; owned */
  char *principal;             /* "User:NAME" once DONE; owned */
  /* KIP-368: the session's length told to the client (0 = unlimited) and
   * when it ends (monotonic ms); after that only a re-authentication
   * (SaslHandshake v1 with the same mechanism and principal) goes on. */
  int64_t lifetime_ms;
  int64_t session_end_ms;
  bool reauth; /* a re-authentication is in progress */
  bool failed; /* authentication failed: close once the answer is out */
} dc_conn_auth_t;

/* Longest principal ("User:" + name, bytes, without the NUL) dynconfd
 * accepts. Principals are compared whole, never shortened: a client
 * certificate whose subject would make a longer one fails the TLS
 * handshake, and such a SASL name fails authentication. */
#define DC_PRINCIPAL_MAX 4096

/* Frees what an auth state holds (not the struct itself) and sets the
 * pointers it freed to NULL. */
void dc_conn_auth_clear(dc_conn_auth_t *a);

/* Who sent a request and on which listener. */
typedef struct dc_conn_info {
  const char *peer;      /* "ip:port" of the client, for the audit log */
  const char *principal; /* "User:NAME": SASL user, TLS certificate subject,
                            or "User:ANONYMOUS" */
  const char *listener;  /* listener name, e.g. "SASL_SSL" */
  const char *advertised_host; /* this listener's advertised address, */
  int32_t advertised_port;     /* returned by Metadata */
  dc_conn_auth_t *auth;  /* SASL state; NULL or state NONE = no SASL */
  /* For answers that come later (DC_HANDLE_DEFER): the connection's
   * token, handed back by dc_broker_answers, and where the broker puts
   * what the connection waits for (NULL: the caller cannot wait, so
   * nothing is deferred). */
  void *token;
  void **pending;
  /* The connection's place for the fleet entry of the agent reporting on
   * it (NULL: reports are refused). The caller starts it NULL and calls
   * dc_broker_fleet_conn_closed() at close when it is not NULL. */
  void **fleet;
  /* The connection's last DescribeConfigs answer, sent again for the same
   * request while nothing it was made from changed (NULL: none kept).
   * The caller starts it NULL and frees it with dc_broker_memo_free() at
   * close. */
  struct dc_answer_memo **memo;
} dc_conn_info_t;

enum {
  DC_HANDLE_OK = 0,    /* response (if any) appended to out */
  DC_HANDLE_CLOSE = 1, /* flush out, then close the connection */
  DC_HANDLE_DEFER = 2, /* nothing appended: the answer comes through
                          dc_broker_answers; read no further request of
                          this connection until then */
};

/* Handles one request: payload is the frame without its 4-byte size.
 * Appends the size-prefixed response frame to out. Scratch memory comes
 * from arena, which the caller resets after the call. Returns DC_HANDLE_*.
 * On close, errstr (if non-NULL) says why, for the server's log. */
int dc_broker_handle(dc_broker_t *b, const dc_conn_info_t *conn,
                     const uint8_t *payload, size_t len, dc_arena_t *arena,
                     dc_buf_t *out, char *errstr, size_t errstr_size);
#endif
