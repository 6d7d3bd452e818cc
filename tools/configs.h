/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconf-configs internals, shared by its files, each calling only
 * the ones below it:
 *   configs_main.c      option parsing, entity resolution, main()
 *   configs_fleet.c     --describe-fleet and --alter --wait
 *   configs_shown.c     --alter --wait's first step: the replicas show
 *                       the change
 *   configs_fleet_view.c  the fleet as every replica lists it
 *   configs_replicas.c  the replicas a fleet question goes to
 *   configs_security.c  --command-config and --reload-keystore
 *   configs_requests.c  connecting, the request/response plumbing every
 *                       command shares, --describe and --alter
 *   configs_util.c      output, errors and entity phrasing
 * Single-threaded; everything reports errors on stderr itself and returns
 * an exit status (EXIT_*) or -1 as documented per function.
 */
#ifndef DYNCONF_TOOLS_CONFIGS_H
#define DYNCONF_TOOLS_CONFIGS_H

#include "codec/proto.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/entity.h"
#include "client/client_props.h"
#include "client/kclient.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* EXIT_FAIL is also --wait's "a client rejected the change"; 3 is its
 * time-out. */
enum {
  EXIT_OK = 0,
  EXIT_FAIL = 1,
  EXIT_USAGE = 2,
  EXIT_WAIT_TIMEOUT = 3,
  EXIT_WAIT_NOBODY = 4, /* --wait: no connected client is concerned */
  /* --wait: none rejected, none behind, some need a restart to apply it */
  EXIT_WAIT_RESTART = 5
};
enum { ENT_NONE = 0, ENT_CLIENTS, ENT_BROKERS, ENT_USERS };

#define PROG "dynconf-configs"

typedef struct opts {
  const char *bootstrap;
  int entity_type;
  const char *entity_name; /* argv, DC_ENTITY_DEFAULT, or wire_name */
  /* --entity-type/--entity-name as given, paired in order like
   * kafka-configs.sh: "users U" or "users U clients C" (either order). */
  int types[2], n_types;
  const char *names[2];
  int n_names;
  /* ENT_USERS: the user-principal and client-id (argv; client NULL for
   * the user entity), and the type-10 name sent (lib/common/entity.h). */
  const char *user, *client;
  char wire_name[DC_ENTITY_ENC_NAME_SIZE];
  bool entity_default;
  bool describe, alter, all, dry_run, json;
  bool describe_fleet, wait; /* --describe-fleet, --alter --wait */
  int timeout_ms;            /* 0 until main() applies the default */
  /* Set on a copy for a request to one replica of several, whose own
   * time limit is shorter than what --timeout-ms leaves: a time-out then
   * names it. */
  int replica_limit_ms;
  /* Security (--command-config, read into props: its sec is the
   * connection's) and the keystore reload command. */
  const char *command_config;
  dc_client_props_t props;
  bool reload;              /* --reload-keystore */
  const char *listener;     /* --listener NAME, or NULL for all */
  /* Alter operations. The array is malloc'd (freed by main()); names and
   * values live in `arena`. */
  dc_alter_config_t *ops;
  size_t n_ops, cap_ops;
  dc_arena_t arena;
} opts_t;

/* ---- configs_util.c --------------------------------------------------- */
/* Every part prints its messages and output the same way through these. */

/* "Error: <message> (see dynconf-configs --help)" on stderr. */
void cli_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* "Error: <message>" on stderr. */
void cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Kafka error name, or "error N" for a code outside our table. Returns a
 * static string or one written into buf. */
const char *cli_err_name(int code, char *buf, size_t size);
/* EXIT_OK for error code 0; else prints "NAME: message" (the server's
 * message, or the code's description) and returns EXIT_FAIL. */
int cli_check_error(int16_t code, const char *message);
/* Strips leading and trailing blanks in place; returns the new start. */
char *cli_trim(char *s);
/* Writes the buffer to stdout; EXIT_FAIL (said) if stdout cannot take it. */
int cli_flush_out(dc_buf_t *b);
/* The entity as a phrase for messages, into buf: "client-id 'x'", "the
 * default client-id", "broker 1", "user-principal 'u'",
 * "user-principal 'u', client-id 'x'". */
void cli_entity_phrase(const opts_t *o, char *buf, size_t size);
/* Appends the JSON members naming the entity to b: "entity_type",
 * "entity_name" (the user-principal for users) and, for a user +
 * client-id, "client_id". */
void cli_json_entity(dc_buf_t *b, const opts_t *o);

/* ---- configs_requests.c ----------------------------------------------- */
/* The connection and the request plumbing, used by main() and by the
 * commands in configs_security.c. */

/* One request type the CLI sends, for cli_call(). */
typedef struct cli_api {
  int16_t key;
  const char *name;        /* "DescribeConfigs", for messages */
  const char *unsupported; /* ends "the server at P does not support NAME
                              (API key K)" when no version is common */
  dc_kclient_encode_fn *encode;
  int (*decode)(dc_rd_t *rd, int16_t v, void *resp);
  /* Checks and prints the decoded response; returns an exit status. */
  int (*report)(const opts_t *o, dc_kclient_t *kc, int16_t v, void *resp);
} cli_api_t;

/* Milliseconds left until the monotonic deadline, at least 1. */
int cli_remaining_ms(int64_t deadline);
/* Sends req (of api's request type) with the highest version both sides
 * speak, decodes the response into resp (of api's response type) and
 * hands it to api->report; the decoded strings live in an arena freed on
 * return. Returns report's status, or EXIT_FAIL after saying why there
 * was nothing to report (no common version, transport error, time-out,
 * malformed response). */
int cli_call(const opts_t *o, dc_kclient_t *kc, int64_t deadline,
             const cli_api_t *api, const void *req, void *resp);
/* Applies --command-config, connects to --bootstrap-server and learns the
 * server's versions. Returns -1 when connected, else the exit status
 * (EXIT_USAGE for a bad address or security setting), said on stderr. */
int cli_connect(const opts_t *o, dc_kclient_t *kc, int64_t deadline);
/* The entity's resource type on the wire. */
int8_t cli_wire_type(const opts_t *o);
/* The DescribeConfigs request for the entity (with synonyms) into *req,
 * its one resource in *r. */
void cli_describe_req(const opts_t *o, dc_describe_configs_req_resource_t *r,
                      dc_describe_configs_req_t *req);
/* --describe and --alter: one request for the entity; exit status. */
int cli_describe(const opts_t *o, dc_kclient_t *kc, int64_t deadline);
int cli_alter(const opts_t *o, dc_kclient_t *kc, int64_t deadline);

/* ---- configs_security.c ----------------------------------------------- */
/* The security options, used by main(). */

/* --command-config: reads Kafka client properties (client/client_props.h)
 * into o->props. Returns 0, or -1 after printing a usage error naming
 * the file, line and key. */
int cli_load_command_config(opts_t *o, const char *path);
/* --reload-keystore: ReloadSecurity (dynconf's API key 20000). One line
 * per listener; EXIT_FAIL when any listener (or the request) failed. */
int cli_reload(const opts_t *o, dc_kclient_t *kc, int64_t deadline);

/* ---- configs_replicas.c ----------------------------------------------- */
/* The replicas a fleet question goes to: every live one Metadata lists on
 * the server connected to, each on a connection of its own, or that
 * server alone (one replica, no Metadata, none of the listed reachable). */
typedef struct cli_replicas {
  dc_kclient_t **kc; /* n of them; owned unless kc == &first */
  int n;
  dc_kclient_t *first; /* main()'s connection */
  bool alone; /* Metadata lists the server connected to alone */
} cli_replicas_t;

/* The deadline for one request to a replica of r: at most
 * REPLICA_TIMEOUT_MS (5 s) away when there are several; *call_opts is
 * o, marked when that limit is the nearer one (for the message). */
int64_t cli_replica_deadline(const cli_replicas_t *r, int64_t deadline,
                             const opts_t *o, opts_t *call_opts);
/* EXIT_OK, or EXIT_FAIL said; a replica that cannot be reached is left
 * out with a warning. */
int cli_replicas_open(const opts_t *o, dc_kclient_t *kc, int64_t deadline,
                      cli_replicas_t *out);
/* Leaves out replica i (it stopped answering), with a warning, and
 * returns true; false (nothing done) when it is the only one left or
 * main()'s own connection. */
bool cli_replicas_drop(cli_replicas_t *r, int i);
void cli_replicas_close(cli_replicas_t *r);

/* ---- configs_fleet_view.c --------------------------------------------- */
/* The fleet as every replica lists it (DescribeFleet, all pages), merged
 * by instance id: an agent that moved counts once, as the replica it is
 * connected to sees it (else as the one that saw it last). A replica
 * that fails is dropped (said) while others remain. All return EXIT_OK,
 * or EXIT_FAIL said, unless told otherwise. */
typedef struct cli_fleet_view cli_fleet_view_t;
/* Lists the fleet (filter's client_id and user) on every replica of reps,
 * which must outlive the view; *out is the view even on failure. */
int cli_fleet_view_open(const opts_t *o, cli_replicas_t *reps,
                        const dc_describe_fleet_req_t *filter,
                        int64_t deadline, cli_fleet_view_t **out);
/* Lists again, at once, on every replica. */
int cli_fleet_view_refresh(cli_fleet_view_t *fv, int64_t deadline);
/* Every replica's listing merged into *out; valid until the next call. */
int cli_fleet_view_merged(cli_fleet_view_t *fv,
                          dc_describe_fleet_resp_t *out);
/* Whether every replica can be asked to answer when its fleet moves
 * (DescribeFleet v1); else the caller refreshes now and then. */
bool cli_fleet_view_can_park(const cli_fleet_view_t *fv);
/* Waits until one replica's fleet moves and lists it again: EXIT_OK, or
 * EXIT_WAIT_TIMEOUT when the deadline came first. */
int cli_fleet_view_await(cli_fleet_view_t *fv, int64_t deadline);
void cli_fleet_view_close(cli_fleet_view_t *fv);

/* ---- configs_shown.c -------------------------------------------------- */
/* --alter --wait's first step, used by configs_fleet.c. */

/* How often --wait asks again where it must poll (whether the server
 * shows the change; the fleet of a server without DescribeFleet v1):
 * from POLL_FIRST_MS, doubling up to POLL_MS. A rollout pushed by Watch
 * takes milliseconds, so the first polls see its end at once; a longer
 * one costs one request a tenth of a second. */
#define POLL_FIRST_MS 5
#define POLL_MS 100

/* Sleeps *pause_ms (then doubles it, up to POLL_MS) and returns true when
 * another poll fits before the deadline; else returns false at once. */
bool cli_pause_poll(int64_t deadline, int *pause_ms);
/* After the alter: polls DescribeConfigs on each replica of reps until it
 * shows the change; a replica that fails is left out where
 * cli_replicas_drop() allows. EXIT_OK, or EXIT_WAIT_TIMEOUT / EXIT_FAIL
 * said. */
int cli_wait_shown(const opts_t *o, cli_replicas_t *reps, int64_t deadline);

/* ---- configs_fleet.c -------------------------------------------------- */
/* DescribeFleet (dynconf's API key 20003), used by main(). */

/* --describe-fleet: the clients of the entity (o->entity_type ENT_NONE:
 * all) grouped by rollout state, or as JSON; exit status. */
int cli_describe_fleet(const opts_t *o, dc_kclient_t *kc, int64_t deadline);
/* --alter --wait: refuses before altering a server without DescribeFleet;
 * alters; waits until the server shows the change, then until every
 * connected client of the entity that reports has applied it (EXIT_OK)
 * or applied it or needs a restart to (EXIT_WAIT_RESTART), one rejected
 * it (EXIT_FAIL) or the deadline passed (EXIT_WAIT_TIMEOUT), saying who. */
int cli_alter_wait(const opts_t *o, dc_kclient_t *kc, int64_t deadline);

#endif
