/* SPDX-License-Identifier: BSD-2-Clause */
/* Agent internals shared by the files of lib/agent. */
#ifndef DC_AGENT_INT_H
#define DC_AGENT_INT_H
#include "client/kclient.h"
#include "common/buf.h"
#include "common/clock.h"
#include "dynconf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Upper bounds (µs) of the fetch-time histogram in the statistics. */
#define DC_FETCH_BUCKETS 12
#define DC_FETCH_BOUNDS_US                                                    \
  {100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,       \
   1000000}

/* The connection properties the agent reads from the application's
 * rd_kafka_conf_t for its own connection to the config server; each is
 * overridden by the dynconf property "dynconf." + its name. */
#define DC_SEC_PROPS(X)                                                        \
  X(PROTOCOL, "security.protocol")                                             \
  X(CA_LOCATION, "ssl.ca.location")                                            \
  X(CA_PEM, "ssl.ca.pem")                                                      \
  X(CERT_LOCATION, "ssl.certificate.location")                                 \
  X(CERT_PEM, "ssl.certificate.pem")                                           \
  X(KEY_LOCATION, "ssl.key.location")                                          \
  X(KEY_PEM, "ssl.key.pem")                                                    \
  X(KEY_PASSWORD, "ssl.key.password")                                          \
  X(KEYSTORE_LOCATION, "ssl.keystore.location")                                \
  X(KEYSTORE_PASSWORD, "ssl.keystore.password")                                \
  X(ENDPOINT_ID, "ssl.endpoint.identification.algorithm")                      \
  X(CIPHER_SUITES, "ssl.cipher.suites")                                        \
  X(CERT_VERIFY, "enable.ssl.certificate.verification")                        \
  X(SASL_MECHANISMS, "sasl.mechanisms")                                        \
  X(SASL_USERNAME, "sasl.username")                                            \
  X(SASL_PASSWORD, "sasl.password")                                            \
  X(OAUTH_CONFIG, "sasl.oauthbearer.config")                                   \
  X(OAUTH_UNSECURE, "enable.sasl.oauthbearer.unsecure.jwt")                  \
  X(KRB_SERVICE, "sasl.kerberos.service.name")                                \
  X(KRB_PRINCIPAL, "sasl.kerberos.principal")                                 \
  X(KRB_KEYTAB, "sasl.kerberos.keytab")

typedef enum {
#define DC_SEC_ENUM_(id, name) DC_SEC_##id,
  DC_SEC_PROPS(DC_SEC_ENUM_)
#undef DC_SEC_ENUM_
  DC_SEC_N,
  /* Not a property: the OAUTHBEARER token made for one connection. */
  DC_SEC_TOKEN = DC_SEC_N,
  DC_SEC_STORE_N
} dc_sec_prop_t;

/* The application's property name of each DC_SEC_* (static storage). */
extern const char *const dc_sec_prop_names[DC_SEC_N];

struct dynconf_conf_s {
  char *bootstrap_servers;  /* "" = the application's bootstrap.servers */
  char *client_id;          /* "" = the application's client.id */
  int refresh_interval_ms;  /* -1 = topic.metadata.refresh.interval.ms */
  int startup_timeout_ms;
  int startup_required;
  char *allow_keys;         /* comma-separated schema keys */
  int resource_type;
  int request_timeout_ms;
  int retry_backoff_ms;
  int retry_backoff_max_ms;
  int unsupported_reprobe_ms;
  int jitter_pct;
  int log_level;
  int producer_max_block_ms;
  int producer_close_timeout_ms;
  int ssl_check_interval_ms; /* 0 = do not watch the ssl.* files */
  int watch;                 /* use the server's Watch when it offers it */
  int apply_live;            /* 0: the client takes its config at creation */
  int log_queue;             /* 0: the agent's thread calls log_cb */
  char *software_name;       /* reported to the fleet */
  char *client_library;      /* reported to the fleet; "" = librdkafka's */
  char *sec[DC_SEC_N];       /* dynconf.<name> overrides; "" = the app's */
  dynconf_change_cb_t *change_cb;
  dynconf_log_cb_t *log_cb;
  dynconf_oauthbearer_token_refresh_cb_t *oauth_refresh_cb;
  void *opaque;
};

/* ---- resolve.c: the pure decision logic ------------------------------ */

#define DC_AGENT_MAX_KEYS 16

/* One key as fetched from the server. */
typedef struct dc_fetched {
  char *key, *value; /* owned */
  dynconf_source_t source;
} dc_fetched_t;

/* A fetched set: sorted by key, each key once (dc_fetched_set_normalize).
 * Owns its entries. */
typedef struct dc_fetched_set {
  size_t n;
  dc_fetched_t *v;
} dc_fetched_set_t;
void dc_fetched_set_free(dc_fetched_set_t *s);
/* Binary search in a normalized set; NULL when absent (or s NULL). */
const dc_fetched_t *dc_fetched_find(const dc_fetched_set_t *s, const char *k);

/* The most config entries the agent accepts in one DescribeConfigs answer.
 * The schema has about a dozen keys and an operator relaying keys dynconf
 * does not know might send a few hundred; the limit bounds the agent's
 * work per fetch (copying, sorting, resolving) so a hostile or broken
 * server cannot stall the agent or dynconf_new(). A larger answer is a
 * fetch error (DYNCONF_ERR__BAD_RESPONSE); the last good configuration
 * stays. */
#define DC_AGENT_MAX_ENTRIES 10000

/* The largest response frame the agent reads: 16 MiB, room for
 * DC_AGENT_MAX_ENTRIES entries of 1.6 KB each. A larger size field drops
 * the connection after its 4 bytes, before anything is allocated. */
#define DC_AGENT_MAX_RESPONSE_BYTES (16 * 1024 * 1024)

/* -1 with "server answered N config entries; the agent accepts at most
 * MAX" in errstr when n > max, else 0. */
int dc_fetched_count_check(size_t n, size_t max, char *errstr,
                           size_t errstr_size);

/* Makes a freshly fetched set what dc_resolve() expects: checks its size
 * against max (as dc_fetched_count_check), sorts it by key, and rejects a
 * key named twice. Duplicates are malformed, whatever their values: the
 * answer is refused as a whole ("server answered config 'K' twice") and
 * the agent keeps its last good configuration, so a server repeating the
 * same broken answer never produces a CHANGE event. 0, or -1 with errstr
 * (the set is left to the caller to free). n log n. */
int dc_fetched_set_normalize(dc_fetched_set_t *s, size_t max, char *errstr,
                             size_t errstr_size);

/* The application's settings that the rules look at, read once. */
typedef struct dc_app_settings {
  bool consumer;            /* RD_KAFKA_CONSUMER */
  bool idempotent;          /* enable.idempotence=true */
  bool transactional;       /* transactional.id set */
  /* group.protocol=consumer (KIP-848, librdkafka 2.4+): the broker owns
   * session.timeout.ms and heartbeat.interval.ms, and librdkafka refuses
   * them from the client. */
  bool broker_owns_timeouts;
  char *values[DC_AGENT_MAX_KEYS]; /* app's value of each allowed key,
                                      owned; NULL = librdkafka default */
  int64_t max_poll_interval_ms;
  int64_t session_timeout_ms;    /* the app's own (or librdkafka default) */
  int64_t heartbeat_interval_ms;
} dc_app_settings_t;

/* Effective value of each allowed key. */
typedef struct dc_effective {
  char *value[DC_AGENT_MAX_KEYS];   /* owned; NULL = the app's own */
  dynconf_source_t source[DC_AGENT_MAX_KEYS];
} dc_effective_t;
void dc_effective_free(dc_effective_t *e);
int dc_effective_copy(dc_effective_t *dst, const dc_effective_t *src);

typedef struct dc_event_entry {
  char *key, *old_value, *new_value, *reason; /* owned; values NULL = app */
  dynconf_source_t source;
  dynconf_outcome_t outcome;
} dc_event_entry_t;

struct dynconf_event_s {
  dynconf_event_type_t type;
  dynconf_err_t err;
  char *errstr;
  int accepted;
  int64_t generation;
  size_t n;
  dc_event_entry_t *entries;
  struct dynconf_event_s *next; /* queue link */
};
void dc_event_free(dynconf_event_t *ev);

/* The allow list, parsed. */
typedef struct dc_allow {
  size_t n;
  const char *keys[DC_AGENT_MAX_KEYS]; /* schema names (static storage) */
} dc_allow_t;
/* Parses a comma list of schema keys; -1 with errstr for unknown keys. */
int dc_allow_parse(const char *list, dc_allow_t *out, char *errstr,
                   size_t errstr_size);
int dc_allow_index(const dc_allow_t *a, const char *key);

/* Maps a DescribeConfigs config source byte to where the value comes
 * from: 7 client-id, 8 <default>, 9 user, 10 user + client-id. Returns
 * false for sources the agent does not apply (static, broker...). */
bool dc_source_from_wire(int wire, dynconf_source_t *out);

/* Decides what a newly fetched set means. Both sets are normalized
 * (sorted, unique keys). Compares `fetched` with
 * `prev_fetched`; when nothing differs returns 0 and *evp = NULL.
 * Otherwise builds a CHANGE event (caller owns it) listing every key whose
 * fetched value or source changed, validates the complete candidate
 * configuration against the app's settings, and on success replaces *eff
 * with it (accepted = 1). A failing candidate is rejected as a whole and
 * *eff is untouched. generation is the current generation; the event
 * carries the new one. Returns 0 or -1 on OOM. O(n log n) in the size of
 * the sets. */
int dc_resolve(const dc_app_settings_t *app, const dc_allow_t *allow,
               const dc_fetched_set_t *prev_fetched,
               const dc_fetched_set_t *fetched, dc_effective_t *eff,
               int64_t generation, dynconf_event_t **evp);


/* ---- certwatch.c: the ssl.* files, polled ---------------------------- */

/* One watched file. Agent thread only (and dynconf_new/agent_free before
 * the thread starts / after it ended). */
typedef struct dc_cw_file {
  const char *prop;   /* "ssl.certificate.location"... (static) */
  char *path;         /* owned; NULL = not watched */
  bool have_stat;     /* st_* below describe the content last read */
  uint64_t st_dev, st_ino, st_size;
  int64_t st_mtime_ns, st_ctime_ns;
  bool seen_ok;                /* the last read succeeded */
  bool seen_missing;           /* ... it failed because the file is gone */
  char seen_err[160];          /* why it did not */
  unsigned char seen_hash[32]; /* SHA-256 of the content last read */
  unsigned char *data;         /* that content (owned) */
  size_t len;
  bool applied_ok;                /* the content in use could be read */
  unsigned char applied_hash[32]; /* SHA-256 of the content in use */
} dc_cw_file_t;

#define DC_CW_CERT 0
#define DC_CW_KEY 1
#define DC_CW_CA 2

/* What the statistics say about one certificate. */
typedef struct dc_cw_certinfo {
  bool valid;
  char subject[256], issuer[256], not_after[32];
  char fingerprint[100]; /* SHA-256 of the DER, "AB:CD:..." */
} dc_cw_certinfo_t;

typedef struct dc_certwatch {
  bool enabled;      /* set once in dynconf_new() */
  int interval_ms;
  char *key_password; /* ssl.key.password (owned, may be NULL) */
  dc_cw_file_t f[3];  /* agent thread only */
  int64_t next_check_ms; /* monotonic; agent thread only */
  unsigned char pending_id[32]; /* the unusable candidate last reported */
  bool have_pending_id;
  /* Below: under dc->lock (read by the statistics). */
  dc_cw_certinfo_t cert, ca;
  char key[128]; /* the key in use: type, size, public key hash */
  int64_t checks, rotations, rejected, last_rotation_ms;
  char pending[320];       /* why the changed files are not used; "" = none */
  int64_t pending_since_ms; /* wall clock */
  int pending_checks;       /* consecutive checks with the same candidate */
  bool pending_waiting;     /* a state a rotation passes through (a key
                               and certificate that do not match yet, a
                               file not there yet): waited for */
} dc_certwatch_t;

/* Checks that a mismatched pair (or a missing file) must persist before
 * it is reported as an error: a rotation writes one file, then the other. */
#define DC_CW_MISMATCH_CHECKS 3

/* Reads the application's ssl.* settings and the files' current content
 * (the baseline in use). Watching starts only with
 * dynconf.ssl.check.interval.ms > 0, security.protocol SSL or SASL_SSL and
 * at least one of the three locations naming a regular file. Called by
 * dynconf_new() before the agent thread starts. 0, or -1 on OOM. */
int dc_certwatch_init(dynconf_t *dc);
/* Frees what init allocated. */
void dc_certwatch_free(dc_certwatch_t *cw);
/* Monotonic time of the next check; INT64_MAX when not watching. Agent
 * thread. */
int64_t dc_certwatch_next_ms(const dc_certwatch_t *cw);
/* One poll of the files: on a valid new set moves the generation, queues
 * one CHANGE event (source FILE), reconnects the agent's own connection; on an
 * unusable one keeps everything and reports it once. Agent thread, lock
 * not held. */
void dc_certwatch_check(dynconf_t *dc);


/* ---- the agent ----------------------------------------------------------- */

typedef struct dc_logmsg {
  int level;
  char *fac, *msg; /* owned */
  struct dc_logmsg *next;
} dc_logmsg_t;

#define DC_AGENT_MAX_QUEUED 1000 /* events or log lines kept for poll */

/* The agent's one connection to the config server. */
typedef struct dc_agent_conn {
  dc_kclient_t *kc;   /* owned */
  int cancel[2];      /* pipe; a byte in it ends every wait */
  bool secured;       /* kc has the current security settings */
  bool token;         /* they hold an OAUTHBEARER token made for them */
  char sec_err[512];  /* why they could not be used ("" = they could) */
  size_t next_entry;  /* bootstrap entry the next connect starts with */
  int16_t version;    /* DescribeConfigs version in use; -1 = none yet */
  /* The highest store position of an answer the agent took (Watch v1,
   * DescribeConfigs v4), kept across connections: no server behind it is
   * believed. -1 none yet. */
  int64_t position;
  /* The configuration version the last DescribeConfigs answer named
   * (dynconfd says it to the agent's v4 requests); -1 = not said. */
  int64_t fetched_version;
  /* Watch (watch.c). */
  int64_t watch_version; /* of the last Watch answer on this connection;
                            -1 = none yet */
  int watch_strikes;     /* odd answers since the last good one */
  int watch_hollow;      /* "changed" answers in a row with nothing new */
  bool watch_off;        /* poll until the next fetch */
  bool watch_noted;      /* the fallback to polling was logged */
  /* ClientReport (report.c): what this connection was told last. */
  uint64_t conn_seq;     /* connections made so far */
  uint64_t report_conn;  /* conn_seq of the last report; 0 = none */
  int64_t report_version, report_generation;
  int8_t report_outcome;
  bool report_noted;     /* a failed report was logged */
} dc_agent_conn_t;

/* What the agent did with the last change set, for its reports. */
typedef struct dc_agent_report_state {
  int8_t outcome;    /* DC_OUTCOME_* (codec/proto.h) */
  char reason[1024]; /* the keys rejected, pinned or ignored, and why */
} dc_agent_report_state_t;

/* OAUTHBEARER tokens the application hands over through its refresh
 * callback (oauth.c). Under dc->lock. */
typedef struct dc_oauth_state {
  bool active;             /* the callback supplies this agent's tokens */
  char *token;             /* owned, wiped when replaced; NULL = none yet */
  char *failure;           /* the application's last "no token" sentence */
  int64_t expires_wall_ms; /* the token's md_lifetime_ms */
  int64_t refresh_mono_ms; /* when dynconf_poll() calls the callback; 0 =
                              not due */
} dc_oauth_state_t;

struct dynconf_s {
  dynconf_conf_t conf; /* owned fields */
  rd_kafka_type_t type;
  rd_kafka_conf_t *app_conf; /* owned copy of the application's conf */
  char *client_id, *bootstrap; /* owned */
  int interval_ms;
  dc_allow_t allow;
  dc_app_settings_t app;
  /* The connection to the config server (fetch.c): used only by the
   * thread that fetches (dynconf_new(), then the agent thread). */
  dc_agent_conn_t conn;
  pthread_t thread;
  bool thread_started;

  pthread_mutex_t lock; /* guards everything below */
  dc_oauth_state_t oauth;
  pthread_cond_t wake;  /* background thread: stop, refresh, interval */
  pthread_cond_t ready; /* dynconf_poll(): events or logs queued */
  bool stop, refresh_requested;
  bool watching; /* the agent thread is in a Watch: refresh must cancel it */
  dynconf_state_t state;
  /* fetched, eff and generation are written (under the lock) only by the
   * thread that fetches: dynconf_new() before the agent thread starts,
   * then the agent thread, which may therefore read them unlocked. */
  dc_fetched_set_t fetched; /* last successful fetch */
  dc_effective_t eff;
  int64_t generation;
  dynconf_event_t *evq_head, *evq_tail;
  size_t evq_len;
  dc_logmsg_t *logq_head, *logq_tail;
  size_t logq_len;
  /* statistics */
  int64_t started_ms;
  int64_t n_fetch_ok, n_fetch_err, n_fetch_unsupported, n_events, n_dropped;
  int64_t n_watch_changed, n_watch_unchanged, n_watch_failed, n_watch_refused;
  int64_t watched_version; /* conn.watch_version, for the statistics */
  int64_t last_fetch_us, sum_fetch_us, max_fetch_us;
  /* Fetch times: counts per bucket of DC_FETCH_BOUNDS_US (and above). */
  int64_t fetch_hist[DC_FETCH_BUCKETS + 1];
  int64_t last_ok_ms;  /* wall clock of the last good fetch; 0 = none */
  dynconf_err_t last_err;
  char last_errstr[512];
  int64_t last_err_ms; /* wall clock */
  int failures;        /* consecutive */
  int64_t next_fetch_ms; /* monotonic */
  char server[300];      /* host:port of the last answer ("" = none yet) */
  int server_version;    /* its DescribeConfigs version; -1 = none yet */
  dynconf_event_t *last_rejected; /* copy of the last rejected change set */
  dc_agent_report_state_t report;
  /* dynconf.apply.live=false: the effective config when dynconf_new()
   * returned, which the client was created with (under lock). */
  bool started;
  dc_effective_t start_eff;
  /* The application's software beside librdkafka, from its
   * client.software.name and .version ("" = plain librdkafka). */
  char app_software[80];
  char instance_id[33]; /* random hex, fixed for the agent's life */
  uint64_t rng;
  dc_certwatch_t cw; /* see the comments in its type */
};

/* ---- queue.c: the events and log lines dynconf_poll() serves ---------- */

/* Queues a log line for the application's next poll. Any thread. */
void dc_agent_log(dynconf_t *dc, int level, const char *fac, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));
/* The same, for a caller that holds dc->lock. */
void dc_agent_log_locked(dynconf_t *dc, int level, const char *fac,
                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Queues an event for the application's next poll. Caller holds
 * dc->lock; the queue owns ev. */
void dc_agent_enqueue_locked(dynconf_t *dc, dynconf_event_t *ev);

/* Frees one log line taken off the queue. */
void dc_logmsg_free(dc_logmsg_t *m);
/* Frees whatever is still queued (dynconf_destroy(), no other thread). */
void dc_agent_queues_free(dynconf_t *dc);

/* ---- fetch.c: the agent's own connection and DescribeConfigs ---------- */

typedef enum { FETCH_OK, FETCH_UNSUPPORTED, FETCH_ERROR } dc_fetch_res_t;

/* Opens the cancel pipe and reads the connection settings (security.c).
 * A setting the agent cannot use is not an error here: it is kept in
 * conn.sec_err and every fetch reports it. 0, or -1 with errstr (out of
 * memory, no pipe). Before the agent thread starts. */
int dc_agent_conn_init(dynconf_t *dc, char *errstr, size_t errstr_size);
/* Closes the connection and frees what init made. */
void dc_agent_conn_free(dc_agent_conn_t *c);
/* Ends any wait of the fetching thread now and every later one at once
 * (dynconf_destroy()). Any thread. */
void dc_agent_conn_cancel(dc_agent_conn_t *c);
/* Empties the cancel pipe: after a Watch that dynconf_refresh_now()
 * interrupted. Agent thread, with dc->lock held and dc->stop false, so a
 * byte dynconf_destroy() writes (after setting stop) is never taken. */
void dc_agent_conn_drain(dc_agent_conn_t *c);
/* Reads the connection settings again (the ssl.* files included) and
 * drops the connection, so the next fetch connects with them. Agent
 * thread. 0, or -1 with errstr (the old settings stay). */
int dc_agent_conn_rebuild(dynconf_t *dc, char *errstr, size_t errstr_size);
/* One DescribeConfigs round trip for the agent's CLIENT resource,
 * connecting first when needed, within timeout_ms. On FETCH_OK *out is a
 * normalized set (caller frees); otherwise *errp and errstr say why.
 * Fetching thread only. */
dc_fetch_res_t dc_agent_fetch(dynconf_t *dc, int timeout_ms,
                              dc_fetched_set_t *out, dynconf_err_t *errp,
                              char *errstr, size_t errstr_size);

/* ---- agent.c: the agent thread and dynconf_poll() --------------------- */

/* One fetch and what it changes: the state, events, when the next fetch
 * is due. Takes dc->lock. dynconf_new() (lifecycle.c) or the agent
 * thread. */
dc_fetch_res_t dc_agent_fetch_and_record(dynconf_t *dc, int timeout_ms);
/* The agent thread (arg: the dynconf_t), until dc->stop. */
void *dc_agent_thread(void *arg);
/* Serves queued log lines through the log callback. Application thread. */
void dc_agent_serve_logs(dynconf_t *dc);

/* ---- answer.c: one DescribeConfigs answer, read (pure) ----------------- */

/* What the answer must be about. */
typedef struct dc_agent_answer {
  int16_t version;           /* the DescribeConfigs version asked with */
  int8_t resource_type;      /* the resource asked about */
  const char *resource_name;
  const char *peer;          /* "host:port", for sentences */
  int64_t min_position;      /* the store position asked with; <= 0 none */
  int64_t position;          /* out: the answer's; -1 = not said */
  int64_t config_version;    /* out: the result's configuration version;
                              * -1 = not said */
} dc_agent_answer_t;

/* Decodes the response body in rd and judges it: exactly one result, for
 * the resource asked about, no entry without a name or with a source no
 * version defines, at most DC_AGENT_MAX_ENTRIES entries, each key once, a
 * store position (when said) not older than want->min_position.
 * FETCH_OK with *out the entries the agent may apply (normalized; caller
 * frees); FETCH_UNSUPPORTED for INVALID_REQUEST or UNSUPPORTED_VERSION
 * (what a Kafka broker answers for a type it does not know); otherwise
 * FETCH_ERROR. *errp and errstr say why; *undecodable is set when the
 * body could not be decoded at all. Linear in the body (n log n in the
 * entries), bounded by DC_AGENT_MAX_ENTRIES. */
dc_fetch_res_t dc_agent_answer_read(dc_rd_t *rd, dc_agent_answer_t *want,
                                    dc_fetched_set_t *out, dynconf_err_t *errp,
                                    bool *undecodable, char *errstr,
                                    size_t errstr_size);

/* ---- watch.c: waiting for changes with the server's Watch -------------- */

/* The longest Watch the agent asks for (dynconfd's own bound). */
#define DC_AGENT_WATCH_MAX_MS 600000
/* A shorter wait for the next fetch is not worth a Watch round trip. */
#define DC_AGENT_WATCH_MIN_MS 10
/* Odd Watch answers in a row after which the agent polls until its next
 * fetch. */
#define DC_AGENT_WATCH_STRIKES 3

/* How a Watch ended (watch.c, answer.c). */
typedef enum {
  WATCH_CHANGED,   /* a new version and its configuration */
  WATCH_UNCHANGED, /* the server's timeout passed */
  WATCH_REFUSED,   /* the server answered an error: use polling */
  WATCH_FAILED     /* transport, timeout, cancel or a wrong answer */
} dc_watch_res_t;

/* What a Watch answer is judged against, and what it said besides. */
typedef struct dc_watch_ask {
  int16_t v;            /* the Watch version asked with (0 or 1) */
  int64_t known;        /* the configuration version watched */
  int64_t min_position; /* the store position the agent has seen; -1 */
  int64_t version;      /* out: the answer's version */
  int64_t position;     /* out: the answer's store position; -1 = none */
} dc_watch_ask_t;

/* Decodes and judges a Watch response body for the watch ask describes:
 * WATCH_CHANGED with *out (normalized as dc_agent_answer_read()'s, caller
 * frees) and ask->version; WATCH_UNCHANGED when the server kept version
 * known; WATCH_REFUSED for an error answer; WATCH_FAILED for an answer no
 * honest server sends (undecodable, "unchanged" with another version,
 * "changed" with the same one, entries refused as a DescribeConfigs
 * answer's would be, a store position older than one the agent has seen)
 * and for REPLICA_NOT_AVAILABLE (a server behind the agent: ask another).
 * *errp and errstr say why unless changed or unchanged. Pure; linear in
 * the body, bounded by DC_AGENT_MAX_ENTRIES. */
dc_watch_res_t dc_agent_watch_answer_read(dc_rd_t *rd, const char *peer,
                                          dc_watch_ask_t *ask,
                                          dc_fetched_set_t *out,
                                          dynconf_err_t *errp,
                                          bool *undecodable, char *errstr,
                                          size_t errstr_size);

/* The connection is open and its server lists Watch. Agent thread. */
bool dc_agent_watch_offered(const dynconf_t *dc);
/* One Watch on the open connection for conn.watch_version, asking the
 * server to answer within wait_ms (at most DC_AGENT_WATCH_MAX_MS). On
 * WATCH_CHANGED *out is the new configuration (caller frees) and
 * conn.watch_version its version. WATCH_FAILED: *errp and errstr say why;
 * the connection is closed unless the answer was read whole. An answer
 * "unchanged" before half of wait_ms is WATCH_FAILED. Agent thread. */
dc_watch_res_t dc_agent_watch(dynconf_t *dc, int wait_ms,
                              dc_fetched_set_t *out, dynconf_err_t *errp,
                              char *errstr, size_t errstr_size);

/* ---- report.c: telling the server what the agent did ------------------ */

/* Records what ev did, for the next report. Caller holds dc->lock. */
void dc_agent_report_state_locked(dynconf_t *dc, const dynconf_event_t *ev);
/* Sends a ClientReport for version (-1 = the one the server served this
 * connection last) when the server lists it and the report says anything
 * new on this connection. Failures are logged. false when the connection
 * was lost doing so. Agent thread. */
bool dc_agent_report(dynconf_t *dc, int64_t version);

/* ---- oauth.c: tokens from the application ----------------------------- */

/* dynconf_new(), before the first fetch: when the connection uses
 * OAUTHBEARER (dc_agent_uses_oauthbearer) and the application set a
 * refresh callback, calls it once on the caller's thread. */
void dc_oauth_start(dynconf_t *dc, bool oauthbearer);
/* dynconf_poll(): calls the refresh callback when it is due. */
void dc_oauth_poll(dynconf_t *dc);
/* A copy of the current token (caller wipes and frees), or NULL with the
 * sentence saying why there is none. Any thread; takes dc->lock. */
char *dc_oauth_token_copy(dynconf_t *dc, char *why, size_t why_size);
void dc_oauth_free(dc_oauth_state_t *o);

/* ---- security.c: the connection settings ----------------------------- */

/* Fills *sec (and the owned strings behind it, in *store) from the
 * application's conf and the dynconf.* overrides. -1 with a sentence
 * naming the property and the override that fixes it when the agent
 * cannot use a setting (a SASL mechanism it does not speak, an unknown
 * protocol); 0 otherwise. */
int dc_agent_security_read(dynconf_t *dc, dc_kclient_security_t *sec,
                           char *store[DC_SEC_STORE_N], char *errstr,
                           size_t errstr_size);
/* Whether the agent's connection authenticates with SASL OAUTHBEARER. */
bool dc_agent_uses_oauthbearer(dynconf_t *dc);
/* Frees (and wipes) the strings dc_agent_security_read() kept. */
void dc_agent_security_free(char *store[DC_SEC_STORE_N]);

/* stats.c: the statistics document, the certificate watch's figures
 * (dc->cw) included; caller holds dc->lock and frees the result. */
char *dc_stats_json_locked(const dynconf_t *dc);

/* ---- conf.c ------------------------------------------------------------ */
int dc_conf_init_defaults(dynconf_conf_t *c);
void dc_conf_free_fields(dynconf_conf_t *c);
#endif
