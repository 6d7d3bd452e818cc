/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf - live, central configuration of running librdkafka clients
 * (Apache Kafka KIP-649, client side).
 *
 * Public API. All symbols carry the dynconf_ / DYNCONF_ prefix.
 * Thread safety is stated per function.
 */
#ifndef DYNCONF_H
#define DYNCONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DYNCONF_VERSION (0xMMmmpp: major, minor, patch) and
 * DYNCONF_VERSION_STR, generated from configure.ac. */
#include "dynconf_version.h"

/** Runtime version of the linked library, same encoding as DYNCONF_VERSION.
 *  Any thread. */
int dynconf_version(void);
/** Runtime version string; static storage, never free. Any thread. */
const char *dynconf_version_str(void);

/*
 * Error codes. Positive and -1 are Kafka protocol error codes, exactly as on
 * the wire; values <= -100 are local to this library (codec, I/O, usage).
 * One table generates the enum, the names and the descriptions.
 */
#define DYNCONF_ERR_MAP(X)                                                     \
  X(NO_ERROR, 0, "Success")                                                    \
  X(UNKNOWN_SERVER_ERROR, -1, "Unknown server error")                          \
  X(REQUEST_TIMED_OUT, 7, "Timed out: the outcome is not known")             \
  X(REPLICA_NOT_AVAILABLE, 9, "Not caught up with what the client has seen") \
  X(CLUSTER_AUTHORIZATION_FAILED, 31, "Cluster authorization failed")          \
  X(UNSUPPORTED_SASL_MECHANISM, 33, "Unsupported SASL mechanism")              \
  X(ILLEGAL_SASL_STATE, 34, "Illegal SASL state")                              \
  X(UNSUPPORTED_VERSION, 35, "Unsupported API version")                        \
  X(INVALID_CONFIG, 40, "Invalid configuration")                               \
  X(NOT_CONTROLLER, 41, "This server does not take writes")                    \
  X(INVALID_REQUEST, 42, "Invalid request")                                    \
  X(POLICY_VIOLATION, 44, "Policy violation")                                  \
  X(SASL_AUTHENTICATION_FAILED, 58, "SASL authentication failed")              \
  X(RESOURCE_NOT_FOUND, 91, "Resource not found")                              \
  X(_TRUNCATED, -100, "Input ends before the message does")                    \
  X(_BAD_LENGTH, -101, "Negative or impossible length field")                  \
  X(_BAD_VARINT, -102, "Variable-length integer is over-long")                 \
  X(_BAD_BOOL, -103, "Boolean field is neither 0 nor 1")                       \
  X(_BAD_STRING, -104, "String contains a NUL byte")                           \
  X(_FRAME_TOO_LARGE, -105, "Frame exceeds the maximum request size")          \
  X(_UNSUPPORTED_API, -106, "Unknown API key or version")                      \
  X(_NOMEM, -107, "Out of memory")                                             \
  X(_TRANSPORT, -108, "Connection failed or was closed")                       \
  X(_TIMED_OUT, -109, "Operation timed out")                                   \
  X(_INVALID_ARG, -110, "Invalid argument")                                    \
  X(_IO, -111, "Storage I/O error")                                            \
  X(_BAD_RESPONSE, -112, "Response does not match the request")                \
  X(_TOO_LONG, -113, "String or frame too long for its length field")

typedef enum dynconf_err {
#define DYNCONF_ERR_ENUM_(name, code, desc) DYNCONF_ERR_##name = code,
  DYNCONF_ERR_MAP(DYNCONF_ERR_ENUM_)
#undef DYNCONF_ERR_ENUM_
} dynconf_err_t;

/** Symbolic name of an error ("INVALID_CONFIG"); "UNKNOWN" for codes not in
 *  the table. Static storage. Any thread. */
const char *dynconf_err_name(dynconf_err_t err);
/** Human description of an error. Static storage. Any thread. */
const char *dynconf_err_str(dynconf_err_t err);


/* ======================================================================
 * The agent (KIP-649 client side)
 *
 * An agent keeps one librdkafka client's configuration in step with what
 * operators set on dynconfd for its client.id. Typical use:
 *
 *   dynconf_conf_t *dconf = dynconf_conf_new();
 *   dynconf_conf_set(dconf, "dynconf.bootstrap.servers", "cfg:9092", ...);
 *   dynconf_conf_set_change_cb(dconf, on_change);
 *   dynconf_t *dc = dynconf_new(RD_KAFKA_CONSUMER, app_conf, dconf, ...);
 *   rd_kafka_conf_t *eff = dynconf_effective_conf(dc);  // app + dynamic
 *   rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, eff, ...);
 *   for (;;) { ...; dynconf_poll(dc, 0); }   // serves callbacks
 *   dynconf_destroy(dc);
 * ====================================================================== */

#include <librdkafka/rdkafka.h>

typedef struct dynconf_conf_s dynconf_conf_t;
typedef struct dynconf_s dynconf_t;
typedef struct dynconf_event_s dynconf_event_t;

typedef enum {
  DYNCONF_CONF_UNKNOWN = -2, /* no such property */
  DYNCONF_CONF_INVALID = -1, /* bad value */
  DYNCONF_CONF_OK = 0,
} dynconf_conf_res_t;

/** New agent configuration with every property at its default. The
 *  caller owns it until it is passed to a successful dynconf_new(). Any
 *  thread. */
dynconf_conf_t *dynconf_conf_new(void);
/** Copy of conf (callbacks and opaque included); the caller owns it.
 *  NULL on OOM. Any thread (not while conf is being changed). */
dynconf_conf_t *dynconf_conf_dup(const dynconf_conf_t *conf);
/** Frees a configuration not handed to a successful dynconf_new() (NULL
 *  is a no-op). Any thread. */
void dynconf_conf_destroy(dynconf_conf_t *conf);
/** Sets property `name` (a dynconf.* property, see the README's table).
 *  On failure writes a reason to errstr. Not thread-safe on one conf. */
dynconf_conf_res_t dynconf_conf_set(dynconf_conf_t *conf, const char *name,
                                    const char *value, char *errstr,
                                    size_t errstr_size);
/** Reads property `name` into dest (size *dest_size, updated to the size
 *  needed including the NUL: larger than given means dest holds a cut
 *  copy). dest NULL only queries the size. The caller owns dest. Any
 *  thread (not while conf is being changed). */
dynconf_conf_res_t dynconf_conf_get(const dynconf_conf_t *conf,
                                    const char *name, char *dest,
                                    size_t *dest_size);
/** Prints the property table (name, default, description) to fp as a
 *  Markdown table (CONFIGURATION.md is made from it). Any thread. */
void dynconf_conf_properties_show(FILE *fp);

/** Change-event callback: called from dynconf_poll() on the application's
 *  thread. `ev` is valid during the call only. */
typedef void(dynconf_change_cb_t)(dynconf_t *dc, const dynconf_event_t *ev,
                                  void *opaque);
/** Sets the change callback (NULL = none). Not thread-safe on one conf. */
void dynconf_conf_set_change_cb(dynconf_conf_t *conf, dynconf_change_cb_t *cb);
/** Log callback: syslog levels (3 error, 4 warning, 6 info, 7 debug).
 *  Called from dynconf_poll() (and from dynconf_new() on its caller's
 *  thread), never from an internal thread. Without one, logs go to
 *  stderr from dynconf_poll(). */
typedef void(dynconf_log_cb_t)(const dynconf_t *dc, int level,
                               const char *fac, const char *msg);
/** Sets the log callback (NULL = stderr). Not thread-safe on one conf. */
void dynconf_conf_set_log_cb(dynconf_conf_t *conf, dynconf_log_cb_t *cb);
/** Opaque handed to the change callback, and dynconf_opaque()'s answer
 *  (for the log callback, which gets the agent); borrowed, never freed.
 *  Not thread-safe on one conf. */
void dynconf_conf_set_opaque(dynconf_conf_t *conf, void *opaque);

/** OAUTHBEARER token refresh callback, as librdkafka's: when the agent's
 *  connection uses SASL OAUTHBEARER, it is called from dynconf_new() on its
 *  caller's thread before the first fetch, then from dynconf_poll() when
 *  80 % of the current token's life has passed (every 10 s after a
 *  failure, until a token is set). It answers with
 *  dynconf_oauthbearer_set_token() (the same token the application hands
 *  librdkafka) or dynconf_oauthbearer_set_token_failure(), from any
 *  thread. `oauthbearer_config` is the sasl.oauthbearer.config in force
 *  (NULL when unset); valid during the call only. */
typedef void(dynconf_oauthbearer_token_refresh_cb_t)(
    dynconf_t *dc, const char *oauthbearer_config, void *opaque);
/** Sets the token refresh callback (NULL = none: the agent then makes
 *  unsigned tokens when enable.sasl.oauthbearer.unsecure.jwt=true). Not
 *  thread-safe on one conf. */
void dynconf_conf_set_oauthbearer_token_refresh_cb(
    dynconf_conf_t *conf, dynconf_oauthbearer_token_refresh_cb_t *cb);

/** Where a value comes from. */
typedef enum {
  DYNCONF_SOURCE_APP = 0,     /* the application's own configuration */
  DYNCONF_SOURCE_CLIENT = 1,  /* dynconfd: this client-id's override */
  DYNCONF_SOURCE_DEFAULT = 2, /* dynconfd: the <default> entity */
  /* dynconfd: the entity of the agent's authenticated user (config source
   * 9, DYNAMIC_USER), e.g. User:alice or the certificate subject */
  DYNCONF_SOURCE_USER = 3,
  /* dynconfd: that user's entry for this client-id (config source 10,
   * DYNAMIC_USER_CLIENT); it beats USER, CLIENT and DEFAULT */
  DYNCONF_SOURCE_USER_CLIENT = 4,
  /* a file on disk: the application's ssl.* files (certificate rotation,
   * see dynconf.ssl.check.interval.ms) */
  DYNCONF_SOURCE_FILE = 5,
} dynconf_source_t;
/** "application", "client-override", "default-entity", "user-override",
 *  "user-client-override", "file". Static storage. Any thread. */
const char *dynconf_source_name(dynconf_source_t s);

/** What the agent did with one key of a change set. */
typedef enum {
  DYNCONF_OUTCOME_APPLIED = 0,  /* now in the effective configuration */
  DYNCONF_OUTCOME_REJECTED = 1, /* the change set was refused; see reason */
  DYNCONF_OUTCOME_PINNED = 2,   /* kept at a value the app's settings force */
  DYNCONF_OUTCOME_IGNORED = 3,  /* not in dynconf.allow.keys */
} dynconf_outcome_t;
/** "applied", "rejected", "pinned" or "ignored" ("unknown" for another
 *  value; static storage). Any thread. */
const char *dynconf_outcome_name(dynconf_outcome_t o);

typedef enum {
  DYNCONF_EVENT_CHANGE = 1,      /* a change set arrived (see entries) */
  DYNCONF_EVENT_ERROR = 2,       /* fetching failed; the last good config
                                    stays (reported once per outage) */
  DYNCONF_EVENT_UNSUPPORTED = 3, /* the server does not serve CLIENT
                                    configs (a plain Kafka broker) */
  DYNCONF_EVENT_CERT_ERROR = 4,  /* changed ssl.* files cannot be used (not
                                    readable, not PEM, or a certificate and
                                    key that still do not match after
                                    several checks); the certificates in use
                                    stay. Once per distinct content. */
} dynconf_event_type_t;

/* An event and every string it returns belong to the agent and are valid
 * during the change callback only; read them on that (the application's)
 * thread. */
dynconf_event_type_t dynconf_event_type(const dynconf_event_t *ev);
/** For ERROR/UNSUPPORTED/CERT_ERROR: the error and a sentence about it
 *  (CERT_ERROR: DYNCONF_ERR_INVALID_CONFIG, naming the file and why). */
dynconf_err_t dynconf_event_error(const dynconf_event_t *ev);
const char *dynconf_event_error_string(const dynconf_event_t *ev);
/** For CHANGE: 1 when the set was applied, 0 when it was rejected. */
int dynconf_event_accepted(const dynconf_event_t *ev);
/** Generation of the effective configuration after this event: it grows
 *  by one with every applied change set that changes an effective value
 *  (a change of source alone does not count) and with every certificate
 *  rotation (see "Client certificate rotation" below). */
int64_t dynconf_event_generation(const dynconf_event_t *ev);
/** Entries of a CHANGE event, one per key that changed, sorted by key. */
size_t dynconf_event_entry_count(const dynconf_event_t *ev);
const char *dynconf_event_key(const dynconf_event_t *ev, size_t i);
/** Old and new effective value; NULL means "the application's own
 *  setting". For IGNORED entries (never applied) they are the server's
 *  previous and new values instead, NULL meaning "not set there". */
const char *dynconf_event_old_value(const dynconf_event_t *ev, size_t i);
const char *dynconf_event_new_value(const dynconf_event_t *ev, size_t i);
dynconf_source_t dynconf_event_source(const dynconf_event_t *ev, size_t i);
dynconf_outcome_t dynconf_event_outcome(const dynconf_event_t *ev, size_t i);
/** Why a key was rejected or pinned; NULL otherwise. */
const char *dynconf_event_reason(const dynconf_event_t *ev, size_t i);

/*
 * Client certificate rotation
 *
 * With security.protocol SSL or SASL_SSL, the agent polls (no inotify) the
 * files named by the application's ssl.certificate.location,
 * ssl.key.location and ssl.ca.location (those that are set and are
 * regular files) every dynconf.ssl.check.interval.ms (default 10000; 0 =
 * never) on its own thread: a stat() first, and a SHA-256 of the bytes
 * only when the stat changed. A file counts as changed when its content
 * differs from the one in use. Before acting, the new set must be whole:
 * the certificate and the key parse and match (ssl.key.password is used
 * for an encrypted key) and the CA file holds at least one certificate.
 * Until then nothing changes: a certificate and key that do not match yet
 * (one written, the other not) or a file not there (yet) are waited for,
 * logged once; a file that cannot be read, is not PEM or holds an expired
 * certificate is logged once and reported with one
 * DYNCONF_EVENT_CERT_ERROR (as is a state waited for that persists for
 * three checks). The certificates in use stay in use meanwhile; the
 * statistics show what is pending and why.
 *
 * A whole new set is applied at once: the generation moves by one (managed
 * producers and consumers rebuild their handles, and librdkafka reads the
 * files again at rd_kafka_new(); an application that builds its own
 * handles from dynconf_effective_conf() should do the same), one
 * DYNCONF_EVENT_CHANGE is queued with an entry per changed file (key
 * "ssl.certificate.location", "ssl.key.location" or "ssl.ca.location",
 * source DYNCONF_SOURCE_FILE, outcome APPLIED, old and new value
 * describing the certificate: subject, SHA-256 fingerprint, expiry), and
 * the agent's own connection to the config server is rebuilt with the new
 * files. The statistics show the certificate in use and the rotation
 * count under "ssl". Events still reach the application only through
 * dynconf_poll(). Write each file atomically (write a temporary file,
 * then rename it): a rebuild reads whatever is on disk at that moment.
 */

typedef enum {
  DYNCONF_STATE_INIT = 0,   /* no answer yet */
  DYNCONF_STATE_UP,         /* in step with the server */
  DYNCONF_STATE_DEGRADED,   /* the last fetch failed; last good config kept */
  DYNCONF_STATE_UNSUPPORTED /* the server has no CLIENT configs */
} dynconf_state_t;
/** "init", "up", "degraded" or "unsupported" ("unknown" for another
 *  value; static storage). Any thread. */
const char *dynconf_state_name(dynconf_state_t s);

/** Creates an agent for a client of `type` whose own configuration is
 *  app_conf (borrowed: copied, the caller keeps and frees it). On success
 *  the agent takes ownership of `conf` (NULL = all defaults).
 *  Fetches the client's dynamic configs once before returning, bounded by
 *  dynconf.startup.timeout.ms: on failure it fails open (returns an agent
 *  that uses the application's config, and reports the failure) unless
 *  dynconf.startup.required=true, when it returns NULL. A refusal (wrong
 *  password, untrusted certificate, ACL, a server without CLIENT configs)
 *  ends the first fetch at once, not at the timeout. Returns NULL with
 *  errstr on failure; conf is then still the caller's. Any thread; the
 *  calling thread becomes "the application's thread" for callbacks.
 *
 *  The agent talks to the config server itself (its own Kafka-protocol
 *  connection on its one background thread; no librdkafka handle of its
 *  own), using app_conf's security.protocol, ssl.* and sasl.* settings,
 *  each overridden by "dynconf." + its name. */
dynconf_t *dynconf_new(rd_kafka_type_t type, const rd_kafka_conf_t *app_conf,
                       dynconf_conf_t *conf, char *errstr,
                       size_t errstr_size);
/** Stops the background thread and frees the agent. Returns at once: a
 *  request or connect in flight is abandoned, not waited for. Undelivered
 *  events are dropped. Application thread. */
void dynconf_destroy(dynconf_t *dc);
/** Serves queued events and logs through the callbacks, waiting up to
 *  timeout_ms (-1 = forever) for the first one. Returns the number of
 *  events served. Application thread only. */
int dynconf_poll(dynconf_t *dc, int timeout_ms);
/** A new librdkafka configuration: the application's own settings with the
 *  accepted dynamic values applied. The caller owns it (hand it to
 *  rd_kafka_new or rd_kafka_conf_destroy it). NULL on OOM. Any thread. */
rd_kafka_conf_t *dynconf_effective_conf(dynconf_t *dc);
/** Generation of the effective configuration (0 = the app's own, +1 per
 *  applied change set). Any thread. */
int64_t dynconf_generation(dynconf_t *dc);
/** Current value of an allowed key in the effective configuration, copied
 *  into dest (dest_size bytes, NUL included; dest may be NULL with
 *  dest_size 0 to ask the size); its source in *sourcep (may be NULL).
 *  Returns the size the value needs including its NUL (so a return above
 *  dest_size means dest holds a truncated copy, as dynconf_conf_get
 *  reports), or -1 when the key is not in dynconf.allow.keys. Any
 *  thread. */
int dynconf_effective_get(dynconf_t *dc, const char *key, char *dest,
                          size_t dest_size, dynconf_source_t *sourcep);
dynconf_state_t dynconf_state(dynconf_t *dc);
/** The client-id this agent fetches for; owned by the agent, valid for its
 *  life. Any thread. */
const char *dynconf_client_id(const dynconf_t *dc);
/** Hands the agent an OAUTHBEARER token (a JWT; copied) valid until
 *  md_lifetime_ms (wall-clock ms since the epoch) for md_principal_name;
 *  its next connection uses it (a connection the server ends at the old
 *  token's expiry is replaced at once). DYNCONF_ERR__INVALID_ARG with
 *  errstr when the agent has no token refresh callback, the token is
 *  empty or not one word of printable characters, the principal is
 *  empty or the lifetime has already passed. Any thread. */
dynconf_err_t dynconf_oauthbearer_set_token(dynconf_t *dc,
                                            const char *token_value,
                                            int64_t md_lifetime_ms,
                                            const char *md_principal_name,
                                            char *errstr, size_t errstr_size);
/** Tells the agent no token could be had (errstr says why, copied): a
 *  fetch that needs a new connection fails with that sentence, and the
 *  callback is called again 10 s later. DYNCONF_ERR__INVALID_ARG when
 *  the agent has no token refresh callback or errstr is NULL or empty.
 *  Any thread. */
dynconf_err_t dynconf_oauthbearer_set_token_failure(dynconf_t *dc,
                                                    const char *errstr);

/** The opaque set with dynconf_conf_set_opaque(), e.g. from the log
 *  callback. Any thread. */
void *dynconf_opaque(const dynconf_t *dc);
/** Statistics as a JSON document; the caller frees it with free().
 *  Any thread. */
char *dynconf_stats_json(dynconf_t *dc);
/** Asks the background thread to fetch now (e.g. after an operator
 *  command). Any thread. */
void dynconf_refresh_now(dynconf_t *dc);


/* ======================================================================
 * Managed clients: apply rebuild-class changes by themselves.
 *
 * librdkafka freezes acks, session.timeout.ms and heartbeat.interval.ms at
 * rd_kafka_new(). A managed client builds its librdkafka handle from
 * dynconf_effective_conf() and, when the agent's generation moves, builds
 * a new handle and retires the old one without losing a message.
 * The application's own callbacks (dr_msg_cb, rebalance_cb, opaque...)
 * come from the configuration the agent was created with.
 * ====================================================================== */

typedef struct dynconf_producer_s dynconf_producer_t;

/** How a managed producer switches to a new handle. */
typedef enum {
  /** Default: the old handle drains (every message delivered or failed,
   *  its delivery report served) before the new one sends; produce calls
   *  during the drain wait (bounded by dynconf.producer.max.block.ms).
   *  Per-partition order is kept across the switch. */
  DYNCONF_SWITCH_ORDERED = 0,
  /** Opt-in: the new handle takes new messages at once while the old one
   *  drains beside it; order across the switch may change. */
  DYNCONF_SWITCH_FAST = 1,
} dynconf_switch_policy_t;

/** Creates a managed producer for agent dc (created with
 *  RD_KAFKA_PRODUCER; borrowed, must outlive the producer). Returns NULL
 *  with errstr when librdkafka refuses the effective configuration.
 *  Application thread. */
dynconf_producer_t *dynconf_producer_new(dynconf_t *dc,
                                         dynconf_switch_policy_t policy,
                                         char *errstr, size_t errstr_size);
/** Produces a copy of payload/key (RD_KAFKA_MSG_F_COPY) to topic/partition
 *  (RD_KAFKA_PARTITION_UA for the partitioner). msg_opaque reaches the
 *  application's dr_msg_cb unchanged, exactly once. During an ordered
 *  switch it waits up to dynconf.producer.max.block.ms and then returns
 *  RD_KAFKA_RESP_ERR__TIMED_OUT (nothing was enqueued). Any thread. */
rd_kafka_resp_err_t dynconf_producer_produce(dynconf_producer_t *p,
                                             const char *topic,
                                             int32_t partition,
                                             const void *payload, size_t len,
                                             const void *key, size_t keylen,
                                             void *msg_opaque);
/** Serves delivery reports and the agent's events, and switches handles
 *  when the effective configuration changed. Returns the number of
 *  events served. Application thread (the one that polls). */
int dynconf_producer_poll(dynconf_producer_t *p, int timeout_ms);
/** Waits until every message produced so far has its delivery report
 *  served. Application thread. */
rd_kafka_resp_err_t dynconf_producer_flush(dynconf_producer_t *p,
                                           int timeout_ms);
/** The current librdkafka handle, for what the wrapper does not cover;
 *  owned by the producer (never destroy it), valid until the next
 *  dynconf_producer_poll() (which may switch). Application thread. */
rd_kafka_t *dynconf_producer_handle(dynconf_producer_t *p);
/** Transactions (the application set transactional.id): the managed
 *  producer runs init_transactions on every handle it builds, and a switch
 *  waits until the open transaction is committed or aborted. Same
 *  semantics and return values as librdkafka's. Application thread. */
rd_kafka_error_t *dynconf_producer_begin_transaction(dynconf_producer_t *p);
rd_kafka_error_t *dynconf_producer_commit_transaction(dynconf_producer_t *p,
                                                      int timeout_ms);
rd_kafka_error_t *dynconf_producer_abort_transaction(dynconf_producer_t *p,
                                                     int timeout_ms);
/** Number of handle switches so far. Any thread. */
int64_t dynconf_producer_switches(dynconf_producer_t *p);
/** Statistics of the switches (count, drain time, produce-call waits) as
 *  JSON; caller frees with free(). Any thread. */
char *dynconf_producer_stats_json(dynconf_producer_t *p);
/** Flushes what it can within dynconf.producer.close.timeout.ms, fails
 *  the rest with delivery reports (RD_KAFKA_RESP_ERR__PURGE_QUEUE) served
 *  before it returns, and frees the producer. Application thread. */
void dynconf_producer_destroy(dynconf_producer_t *p);

typedef struct dynconf_consumer_s dynconf_consumer_t;

/** Creates a managed consumer for agent dc (created with
 *  RD_KAFKA_CONSUMER, group.id set; borrowed, must outlive it).
 *  Application thread. */
dynconf_consumer_t *dynconf_consumer_new(dynconf_t *dc, char *errstr,
                                         size_t errstr_size);
/** Subscribes to topics (copied: the caller keeps its list; kept across
 *  rebuilds). Application thread. */
rd_kafka_resp_err_t
dynconf_consumer_subscribe(dynconf_consumer_t *c,
                           const rd_kafka_topic_partition_list_t *topics);
/** Like rd_kafka_consumer_poll(). Messages returned by earlier calls count
 *  as processed: when the effective configuration changed, this call
 *  commits their offsets, closes the old handle (the application's
 *  rebalance_cb sees the revoke), creates a new one with the new timeouts
 *  and rejoins before polling (the new handle is created before the old
 *  one closes: when librdkafka refuses it, the current handle keeps
 *  running). With group.instance.id the rebuild causes no rebalance of
 *  other members. The caller destroys the message.
 *  Application thread. */
rd_kafka_message_t *dynconf_consumer_poll(dynconf_consumer_t *c,
                                          int timeout_ms);
/** Commits the offsets of the messages returned so far (async != 0: does
 *  not wait). Application thread. */
rd_kafka_resp_err_t dynconf_consumer_commit(dynconf_consumer_t *c, int async);
/** Commits the offsets of the messages returned so far, leaves the group
 *  (unless static) and closes the handle. Returns the commit's error
 *  (RD_KAFKA_RESP_ERR_NO_ERROR also when there was nothing to commit);
 *  the handle is closed either way. Application thread. */
rd_kafka_resp_err_t dynconf_consumer_close(dynconf_consumer_t *c);
/** The current handle, owned by the consumer (never destroy it); valid
 *  until the next dynconf_consumer_poll(), NULL after close. Application
 *  thread. */
rd_kafka_t *dynconf_consumer_handle(dynconf_consumer_t *c);
/** Handle rebuilds so far. Application thread. */
int64_t dynconf_consumer_rebuilds(dynconf_consumer_t *c);
/** Frees the consumer (closing it first if needed; NULL is a no-op); the
 *  agent stays the caller's. Application thread. */
void dynconf_consumer_destroy(dynconf_consumer_t *c);

#ifdef __cplusplus
}
#endif
#endif /* DYNCONF_H */
