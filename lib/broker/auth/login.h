/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The log-in thread: the costly part of setting up a connection (TLS
 * handshakes, SASL steps: PLAIN's PBKDF2, GSSAPI, OAUTHBEARER signatures)
 * runs here, one piece of work at a time, so that a crowd logging in does
 * not stall the event loop serving connections already in.
 *
 * A piece of work is a struct of its owner's that embeds dc_login_work_t:
 * run() does the work on the log-in thread and touches only what the work
 * owns while in flight; the loop thread queues it, is woken through the
 * fd of the work's sink when it is done, and takes it back from there.
 */
#ifndef DC_BROKER_LOGIN_H
#define DC_BROKER_LOGIN_H

#include <stddef.h>

/* Where finished work goes: each owner takes back its own. */
enum { DC_LOGIN_SASL = 0, DC_LOGIN_TLS = 1, DC_LOGIN_SINKS = 2 };

typedef struct dc_login_work dc_login_work_t;
struct dc_login_work {
  void (*run)(dc_login_work_t *w);  /* on the log-in thread */
  void (*drop)(dc_login_work_t *w); /* frees work never taken back */
  int sink;                         /* DC_LOGIN_SASL or DC_LOGIN_TLS */
  dc_login_work_t *next;
};

typedef struct dc_login dc_login_t;

/* Starts the thread. NULL with errstr on failure. */
dc_login_t *dc_login_new(char *errstr, size_t errstr_size);
/* Stops the thread (the work running finishes first) and drops every
 * piece of work not taken back. */
void dc_login_destroy(dc_login_t *l);
/* Readable while finished work of sink waits to be taken. */
int dc_login_fd(const dc_login_t *l, int sink);
/* Queues w; the log-in thread has it until dc_login_take_done. */
void dc_login_submit(dc_login_t *l, dc_login_work_t *w);
/* Finished work of sink, oldest first, or NULL. Loop thread. */
dc_login_work_t *dc_login_take_done(dc_login_t *l, int sink);

#endif
