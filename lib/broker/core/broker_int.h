/* SPDX-License-Identifier: BSD-2-Clause */
/* Internals shared by the request handlers (not for the event loop). */
#ifndef DC_BROKER_INT_H
#define DC_BROKER_INT_H
#include "broker/config/configdb.h"
#include "broker/core/broker.h"
#include "broker/core/metrics.h"
#include "codec/proto.h"

/* Envelope refusals already logged, by peer address and reason
 * (forward_auth.c): the latest DC_ENV_REFUSED_MAX are remembered. */
#define DC_ENV_REFUSED_MAX 32
struct dc_env_refused {
  char peer[64];
  int reason; /* 0 = unused */
};

/* Handles one request as dc_broker_handle does, with fail_code/fail_msg
 * (nullable) set on it and forwarded marking it as a forwarded one: how
 * the Envelope and forwarding code reach the dispatcher above them. */
typedef int(dc_broker_handle_fn)(dc_broker_t *b, const dc_conn_info_t *conn,
                                 const uint8_t *payload, size_t len,
                                 dc_arena_t *arena, dc_buf_t *out,
                                 bool forwarded, int16_t fail_code,
                                 const char *fail_msg, char *errstr,
                                 size_t errstr_size);

struct dc_broker {
  dc_broker_opts_t opts;
  dc_broker_handle_fn *handle_as; /* the dispatcher (dispatch.c) */
  char *cluster_id;   /* owned copy */
  char node_name[16]; /* node id as a BROKER resource name */
  dc_store_t *store;  /* borrowed; NULL = memory only */
  dc_configdb_t *db;  /* owned snapshot */
  struct dc_acl *acl;           /* owned; NULL = no authorizer */
  uint64_t acl_generation;      /* moves whenever acl is replaced */
  struct dc_credentials *creds; /* owned; NULL = no SASL users */
  struct dc_jwks *jwks;         /* owned; NULL = no signed tokens */
  bool oauth;                   /* OAUTHBEARER configured */
  struct dc_gssapi_acceptor *gss; /* one reference; NULL = no GSSAPI */
  struct dc_forwarder *fwd;     /* owned; NULL = no forwarding */
  /* The log-in thread (login.h), owned: SASL steps, and the server's TLS
   * handshakes; failed SASL steps are held for failed_auth_delay_ms
   * before their answer, oldest first. */
  struct dc_login *login;
  struct dc_sasl_job *login_held, **login_held_tail;
  /* Parked Watch requests (watch.c), owned: a min-heap by deadline and
   * the woken (a doubly linked list), n_watches in all. */
  struct dc_watch **watch_heap;
  size_t n_heap, heap_cap;
  struct dc_watch *watch_woken;
  size_t n_watches;
  size_t n_behind;      /* parked until the store reaches their position */
  int64_t position;     /* the store's, when watches were last looked at */
  int watch_fd;          /* timerfd: due answers; owned (pending.c) */
  int64_t watch_armed;   /* when it fires (monotonic ms), -1 = disarmed */
  /* Something was parked, woken or held since the timer was set: each
   * entry point of the broker sets it again before returning. */
  bool timer_stale;
  bool store_applied;    /* the last store poll changed the snapshot */
  uint64_t watches_woken, watches_timed_out; /* answered parked watches */
  int32_t writer;               /* the store's writer at the last poll */
  size_t fwd_bytes;             /* requests held by forwards in flight */
  /* Forwarded alters answered OK by the writer, held until this server's
   * store has applied as much as the writer had (forward.c). */
  struct dc_fwd_job *fwd_held;
  uint64_t forwarded_ok, forwarded_failed;
  uint64_t envelopes_refused;   /* Envelopes not trusted (forward_auth.c) */
  struct dc_env_refused env_refused[DC_ENV_REFUSED_MAX];
  size_t n_env_refused;
  dc_metrics_t metrics;
  struct dc_fleet *fleet; /* owned: the fleet view (rollout/fleet.h) */
  struct dc_fleet_wait *fleet_waits; /* parked DescribeFleet (fleet_wait.c) */
  size_t n_fleet_waits;
};

/* Everything a handler needs about the request in hand. */
typedef struct dc_req {
  dc_broker_t *b;
  const dc_conn_info_t *conn;
  const dc_req_header_t *hdr;
  dc_rd_t *rd;      /* positioned at the body */
  dc_arena_t *arena;
  dc_buf_t *out;    /* the response body goes here (header already in) */
  bool close_after; /* send the response, then close (why says why) */
  const uint8_t *payload; /* the whole request (header and body) */
  size_t payload_len;
  bool forwarded;   /* came in an Envelope: never forwarded again */
  bool deferred;    /* the handler forwarded it: no response now */
  /* When set, every resource of an alter answers this error, unread. */
  int16_t fail_code;
  const char *fail_msg;
  int16_t error;    /* the request's error for the metrics (0 = none) */
  int64_t served;   /* the configuration version said to the fleet (0) */
  /* Last: the dispatcher zeroes the fields before it and only empties it. */
  char why[256];
} dc_req_t;

/* Handlers return 0 when a response body was written, or a negative
 * dc_err_t when the request cannot be answered (connection closes). */
int dc_handle_describe_configs(dc_req_t *r);
int dc_handle_alter_configs(dc_req_t *r);
int dc_handle_incremental_alter_configs(dc_req_t *r);
/* sasl_apis.c */
int dc_handle_sasl_handshake(dc_req_t *r);
int dc_handle_sasl_authenticate(dc_req_t *r);
int dc_handle_reload_security(dc_req_t *r);
/* A bare SASL token frame (after SaslHandshake v0): payload is the token.
 * Appends the bare reply frame; returns DC_HANDLE_*. */
int dc_broker_handle_raw_token(dc_broker_t *b, const dc_conn_info_t *conn,
                               const uint8_t *payload, size_t len,
                               dc_buf_t *out, char *errstr, size_t errstr_size);

/* forward.c */
/* Starts the forwarder when opts.forward; -1 with errstr. */
int dc_broker_forward_init(dc_broker_t *b, char *errstr, size_t errstr_size);
void dc_broker_forward_free(dc_broker_t *b);
/* For an alter on a server that does not write: 1 when r was forwarded
 * (r->deferred) or given fail_code/fail_msg (no writer known), 0 when it
 * is this server's to handle, a negative dc_err_t on failure. */
int dc_broker_forward_alter(dc_req_t *r);
/* After the store was polled: a forward in flight to a server that no
 * longer writes gives up (its client is told to retry). */
void dc_broker_forward_writer_changed(dc_broker_t *b);
/* The forwards that came back, and the held ones now due: answered
 * through cb. */
void dc_broker_forward_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                               void *opaque);
/* The client of a forward in flight left: its answer is dropped. */
void dc_broker_forward_abandon(void *pending);
/* envelope.c: an Envelope from another replica (the writer's side). */
int dc_handle_envelope(dc_req_t *r);
/* dispatch.c */
dc_broker_handle_fn dc_broker_handle_as;
/* pending.c: the answer timer (dc_broker_watch_fd). */
int dc_broker_timer_init(dc_broker_t *b, char *errstr, size_t errstr_size);
void dc_broker_timer_free(dc_broker_t *b);
/* Sets the timer again if timer_stale. */
void dc_broker_timer_settle(dc_broker_t *b);

/* security.c (rules in acl.h). */
/* Loads opts.acl_path and opts.credentials_path (those set) into b;
 * -1 with the file's error. dc_broker_new calls it; b owns the results,
 * freed by dc_broker_security_free (dc_broker_destroy). */
int dc_broker_security_init(dc_broker_t *b, char *errstr, size_t errstr_size);
void dc_broker_security_free(dc_broker_t *b);
/* May the request's principal (conn->principal, NULL = User:ANONYMOUS)
 * do op (DC_ACL_DESCRIBE/ALTER, acl.h) on the config resource? Uses the
 * request header's client id for the default rule. why (may be NULL) gets
 * the reason; on denial a sentence for the client's error message. */
struct dc_jwt_policy;
/* The OAUTHBEARER policy as of now, for one SASL step; NULL when
 * OAUTHBEARER is not configured. Valid until the broker's next reload. */
const struct dc_jwt_policy *dc_broker_oauth_policy(dc_broker_t *b,
                                                   struct dc_jwt_policy *p);

bool dc_broker_authorized(const dc_req_t *r, int op, int8_t resource_type,
                          const char *resource_name, char *why,
                          size_t why_size);
/* What a connection waits for (dc_conn_info_t.pending) starts with one
 * of these, so the broker can tell a forwarded alter from a watch. */
enum { DC_PENDING_FORWARD = 0, DC_PENDING_WATCH = 1, DC_PENDING_FLEET = 2,
       DC_PENDING_LOGIN = 3 };

/* ---- fleet.c: the clients that report, and their rollout state -------- */

int dc_handle_client_report(dc_req_t *r);
int dc_handle_describe_fleet(dc_req_t *r);
/* Agents per DC_FLEET_* state, as DescribeFleet would list them all. */
void dc_broker_fleet_counts(dc_broker_t *b,
                            uint64_t counts[DC_FLEET_N_STATES]);
/* A Watch answer of version went out on the connection with slot. */
void dc_broker_fleet_served(void **slot, int64_t version);
/* Drops the gone entries past fleet.retention.ms (the seq moves). */
void dc_broker_fleet_expire(dc_broker_t *b);
/* When the next gone entry passes the retention (monotonic ms), -1 = none. */
int64_t dc_broker_fleet_next_expiry(const dc_broker_t *b);
/* DescribeFleet's response body for q into r->out (one page), resolving
 * through memo (NULL: its own); 0, or a negative dc_err_t. */
struct dc_resolved_memo;
int dc_broker_fleet_answer(dc_req_t *r, const dc_describe_fleet_req_t *q,
                           struct dc_resolved_memo *memo);
/* The fleet's work so far, for tests and benches. */
typedef struct dc_fleet_stats {
  size_t entries, bytes;  /* held now; bytes as fleet.max.bytes counts */
  size_t longest_chain;   /* entries in the fullest hash bucket */
  uint64_t probes;        /* entries compared by instance-id lookups */
  uint64_t examined;      /* entries DescribeFleet answers looked at */
  uint64_t listings;      /* DescribeFleet answers built */
  size_t waits;           /* DescribeFleet requests parked */
} dc_fleet_stats_t;
void dc_broker_fleet_stats(dc_broker_t *b, dc_fleet_stats_t *out);

/* ---- fleet_wait.c: parked DescribeFleet requests ---------------------- */
typedef struct dc_fleet_wait dc_fleet_wait_t;
/* Whether r's principal may park one more DescribeFleet
 * (fleet.max.waits.per.principal, fleet.max.waits); why not in why. */
bool dc_broker_fleet_may_park(const dc_req_t *r, char *why, size_t why_size);
/* Parks r (q->since_seq is the fleet's seq now): 0, or -1 without memory. */
int dc_broker_fleet_park(dc_req_t *r, const dc_describe_fleet_req_t *q);
/* The fleet changed: its seq moves and the waiters are woken
 * (fleet_list.c). */
void dc_broker_fleet_moved(dc_broker_t *b);
/* fleet.c: the connection holding entry closed; the agent it carried is
 * kept as gone. */
void dc_broker_fleet_gone(dc_broker_t *b, void *entry);
/* fleet_list.c: a DescribeFleet answer that names what is wrong instead
 * of the clients. */
int dc_broker_fleet_refuse(dc_req_t *r, int16_t code, const char *msg);
/* When the first waiter is due (monotonic ms; 0 = now, -1 = none). */
int64_t dc_broker_fleet_waits_due(const dc_broker_t *b);
/* Answers the due waiters (the fleet moved, or past their timeout). */
void dc_broker_fleet_waits_answer(dc_broker_t *b, dc_broker_answer_cb *cb,
                                  void *opaque);
/* True (and pending freed) when pending is a fleet waiter. */
bool dc_broker_fleet_wait_abandon(dc_broker_t *b, void *pending);
void dc_broker_fleet_waits_free(dc_broker_t *b);

/* forward.c: when the next held forwarded answer is due (monotonic ms):
 * 0 now, -1 none held. */
int64_t dc_broker_fwd_held_due(const dc_broker_t *b);
/* sasl_apis.c: the log-in thread's answers; when the first held failure
 * is due (0 = now, -1 = none held). */
int dc_broker_login_init(dc_broker_t *b, char *errstr, size_t errstr_size);
void dc_broker_login_free(dc_broker_t *b);
void dc_broker_login_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                             void *opaque);
int64_t dc_broker_login_held_due(const dc_broker_t *b);
/* The connection waiting for the SASL step pending closed. */
void dc_broker_login_abandon(void *pending);
/* forward_auth.c: may the Envelope req (on r's connection) act for the
 * principal inside? 0, or the error to answer it with:
 * CLUSTER_AUTHORIZATION_FAILED, or NOT_CONTROLLER (retriable) when the
 * forwarding replica's current key may not have been read here yet.
 * Refusals are counted and logged once per peer address and reason. */
int16_t dc_broker_envelope_check(dc_req_t *r, const dc_envelope_req_t *req);

/* ---- watch.c: parked Watch requests ------------------------------------ */
typedef struct dc_watch dc_watch_t;
void dc_broker_watch_free(dc_broker_t *b);
/* When the first watch is due (monotonic ms; 0 = now, -1 = none). */
int64_t dc_broker_watch_due(const dc_broker_t *b);
int dc_handle_watch(dc_req_t *r);
/* The configuration changed: wakes the watches whose version moved. */
void dc_broker_watch_changed(dc_broker_t *b);
/* Why a server at store position pos does not answer a client that has
 * seen min_position (REPLICA_NOT_AVAILABLE's message). */
void dc_broker_behind_why(char *buf, size_t size, int64_t pos,
                          int64_t min_position);
/* The store applied records that changed no configuration: watches of
 * clients that were ahead of it are judged again. */
void dc_broker_watch_position(dc_broker_t *b);
/* Answers the due watches (woken, or past their timeout). */
void dc_broker_watch_answers(dc_broker_t *b, dc_broker_answer_cb *cb,
                             void *opaque);
/* The version of the configuration that resolves now for client_id and
 * principal (as Watch computes it); -1 for a name no entity may have. */
int64_t dc_broker_config_version(dc_broker_t *b, const char *client_id,
                                 const char *principal);
/* True (and pending freed) when pending is a watch. */
bool dc_broker_watch_abandon(dc_broker_t *b, void *pending);

#endif
