/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The forwarding thread (see forwarder.h).
 */
#include "broker/api/forwarder.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct dc_forwarder {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  dc_fwd_job_t *todo, **todo_tail; /* submitted, not yet sent */
  dc_fwd_job_t *done, **done_tail; /* answered, not yet taken */
  bool stop;
  bool busy;                       /* a job is being forwarded */
  bool interrupted;                /* ... and was told to give up */
  int done_fd;                     /* eventfd: answers waiting */
  int cancel[2];                   /* ends the thread's waits at destroy */
  dc_kclient_t *kc;                /* the thread's */
  char addr[300];                  /* where kc is connected */
  int timeout_ms;
  const dc_replica_key_t *key;     /* borrowed; signs each Envelope */
  int32_t node;                    /* this server, the signer */
};

void dc_fwd_job_free(dc_fwd_job_t *job) {
  if (!job)
    return;
  free(job->addr);
  free(job->request);
  free(job->principal);
  free(job->client_host);
  free(job->response);
  free(job);
}

/* Did the writer refuse this replica's credentials (rather than not
 * answer)? */
static bool credentials_refused(dc_err_t err) {
  return err == DC_ERR_SASL_AUTHENTICATION_FAILED ||
         err == DC_ERR_UNSUPPORTED_SASL_MECHANISM ||
         err == DC_ERR_ILLEGAL_SASL_STATE;
}

/* The thread's connection to addr, (re)made when needed. */
static int connect_to(dc_forwarder_t *f, dc_fwd_job_t *job) {
  /* A kept connection the writer closed meanwhile (its idle sweep, a
   * restart), or whose SASL session may end before the writer reads the
   * request (past its end the writer closes the connection unread; a
   * writer inside a commit reads late), is replaced before the request,
   * not found broken after it: then a failure means the writer may have
   * read the request. */
  int64_t left = dc_kclient_session_left_ms(f->kc);
  if (dc_kclient_idle_broken(f->kc) || (left >= 0 && left < f->timeout_ms))
    dc_kclient_close(f->kc);
  if (dc_kclient_connected(f->kc) && !strcmp(f->addr, job->addr))
    return 0;
  f->addr[0] = '\0';
  char err[400];
  dc_err_t e = dc_kclient_connect(f->kc, job->addr, f->timeout_ms, err,
                                  sizeof(err));
  if (!e)
    e = dc_kclient_api_versions(f->kc, f->timeout_ms, err, sizeof(err));
  if (e && credentials_refused(e))
    snprintf(job->error, sizeof(job->error), "cannot authenticate to node %d "
             "at %s, which writes, with this replica's credentials "
             "(--forward-config): %s", (int)job->node, job->addr, err);
  else if (e)
    snprintf(job->error, sizeof(job->error), "cannot reach node %d at %s, "
             "which writes: %s", (int)job->node, job->addr, err);
  if (e)
    return -1;
  snprintf(f->addr, sizeof(f->addr), "%s", job->addr);
  return 0;
}

/* Signs req as this server, now: the writer takes it only from a
 * replica it knows, within its clock window. */
static int sign(const dc_forwarder_t *f, dc_envelope_req_t *req) {
  if (!f->key)
    return 0; /* sent unsigned: the writer says why it refuses it */
  req->signer = f->node;
  req->signed_ms = dc_wall_ms();
  dc_replica_msg_t m = {.node = req->signer,
                        .time_ms = req->signed_ms,
                        .principal = req->principal,
                        .principal_len = (size_t)req->principal_len,
                        .host = req->client_host,
                        .host_len = (size_t)req->client_host_len,
                        .request = req->request_data,
                        .request_len = (size_t)req->request_data_len};
  if (dc_replica_sign(f->key, &m, req->signature))
    return -1;
  req->has_signature = true;
  return 0;
}

/* Sends one job's Envelope and keeps the answer in it. */
static void forward_one(dc_forwarder_t *f, dc_fwd_job_t *job) {
  dc_arena_t arena = {0};
  dc_rd_t rd;
  char err[400];
  dc_envelope_req_t req = {
      .request_data = job->request,
      .request_data_len = (int32_t)job->request_len,
      .principal = (const uint8_t *)job->principal,
      .principal_len = (int32_t)strlen(job->principal),
      .client_host = (const uint8_t *)job->client_host,
      .client_host_len = (int32_t)strlen(job->client_host),
      .position = job->from_position};
  dc_envelope_resp_t resp;
  if (connect_to(f, job))
    goto out;
  if (sign(f, &req)) {
    snprintf(job->error, sizeof(job->error), "cannot sign the forwarded "
             "request (out of memory)");
    goto out;
  }
  if (dc_kclient_request(f->kc, DC_API_ENVELOPE, 0,
                         (dc_kclient_encode_fn *)dc_envelope_req_encode, &req,
                         f->timeout_ms, &rd, &arena, err, sizeof(err)) ||
      dc_envelope_resp_decode(&rd, 0, &resp)) {
    /* The request may have reached the writer, which may have stored it
     * before its answer was lost: the outcome is not known. */
    job->error_code = DC_ERR_REQUEST_TIMED_OUT;
    snprintf(job->error, sizeof(job->error), "forwarded to node %d at %s, "
             "whose answer was lost (%s): the change may or may not have "
             "been applied", (int)job->node, job->addr,
             rd.err ? dc_err_str(rd.err) : err);
    dc_kclient_close(f->kc);
    goto out;
  }
  job->error_code = resp.error_code;
  job->position = resp.position;
  if (resp.error_code || resp.response_data_len <= 0) {
    snprintf(job->error, sizeof(job->error), "node %d at %s did not take the "
             "forwarded request: %s", (int)job->node, job->addr,
             dc_err_str(resp.error_code ? resp.error_code
                                        : DC_ERR__BAD_RESPONSE));
    goto out;
  }
  job->response = malloc((size_t)resp.response_data_len);
  if (!job->response) {
    snprintf(job->error, sizeof(job->error), "out of memory");
    goto out;
  }
  memcpy(job->response, resp.response_data, (size_t)resp.response_data_len);
  job->response_len = (size_t)resp.response_data_len;
out:
  dc_arena_free(&arena);
}

static void *run(void *arg) {
  dc_forwarder_t *f = arg;
  pthread_mutex_lock(&f->lock);
  for (;;) {
    while (!f->todo && !f->stop)
      pthread_cond_wait(&f->cond, &f->lock);
    if (f->stop)
      break;
    dc_fwd_job_t *job = f->todo;
    f->todo = job->next;
    if (!f->todo)
      f->todo_tail = &f->todo;
    job->next = NULL;
    f->busy = true;
    pthread_mutex_unlock(&f->lock);
    forward_one(f, job);
    pthread_mutex_lock(&f->lock);
    f->busy = false;
    if (f->interrupted && !f->stop) {
      char drain[16];
      while (read(f->cancel[0], drain, sizeof(drain)) > 0)
        ;
      f->interrupted = false;
      if (!job->response)
        snprintf(job->error, sizeof(job->error), "node %d stopped writing "
                 "while the alter was forwarded to it%s", (int)job->node,
                 job->error_code == DC_ERR_REQUEST_TIMED_OUT
                     ? ", which may have stored it first: the change may or "
                       "may not have been applied"
                     : "; retry");
    }
    *f->done_tail = job;
    f->done_tail = &job->next;
    uint64_t one = 1;
    ssize_t w = write(f->done_fd, &one, sizeof(one));
    (void)w; /* an eventfd write only fails at 2^64 - 1 */
  }
  pthread_mutex_unlock(&f->lock);
  return NULL;
}

dc_forwarder_t *dc_forwarder_new(const char *client_id,
                                 const dc_kclient_security_t *sec,
                                 int timeout_ms, const dc_replica_key_t *key,
                                 int32_t node, char *errstr,
                                 size_t errstr_size) {
  dc_forwarder_t *f = calloc(1, sizeof(*f));
  if (!f) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  f->todo_tail = &f->todo;
  f->done_tail = &f->done;
  f->timeout_ms = timeout_ms;
  f->key = key;
  f->node = node;
  f->cancel[0] = f->cancel[1] = -1;
  f->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (f->done_fd < 0 || pipe2(f->cancel, O_CLOEXEC | O_NONBLOCK) ||
      !(f->kc = dc_kclient_new(client_id))) {
    dc_seterr(errstr, errstr_size, "cannot set up forwarding: %s",
             f->kc ? strerror(errno) : "out of memory");
    goto fail;
  }
  if (dc_kclient_set_security(f->kc, sec, errstr, errstr_size))
    goto fail;
  dc_kclient_set_cancel_fd(f->kc, f->cancel[0]);
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  if (pthread_create(&f->thread, NULL, run, f)) {
    dc_seterr(errstr, errstr_size, "cannot start the forwarding thread");
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    goto fail;
  }
  return f;
fail:
  dc_kclient_destroy(f->kc);
  for (int i = 0; i < 2; i++)
    if (f->cancel[i] >= 0)
      close(f->cancel[i]);
  if (f->done_fd >= 0)
    close(f->done_fd);
  free(f);
  return NULL;
}

static void free_list(dc_fwd_job_t *j) {
  while (j) {
    dc_fwd_job_t *next = j->next;
    dc_fwd_job_free(j);
    j = next;
  }
}

void dc_forwarder_destroy(dc_forwarder_t *f) {
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  f->stop = true;
  pthread_cond_signal(&f->cond);
  pthread_mutex_unlock(&f->lock);
  ssize_t w = write(f->cancel[1], "x", 1); /* ends a forward in progress */
  (void)w;
  pthread_join(f->thread, NULL);
  free_list(f->todo);
  free_list(f->done);
  dc_kclient_destroy(f->kc);
  close(f->cancel[0]);
  close(f->cancel[1]);
  close(f->done_fd);
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->lock);
  free(f);
}

int dc_forwarder_event_fd(const dc_forwarder_t *f) { return f->done_fd; }

void dc_forwarder_interrupt(dc_forwarder_t *f) {
  pthread_mutex_lock(&f->lock);
  if (f->busy && !f->interrupted) {
    f->interrupted = true;
    ssize_t w = write(f->cancel[1], "x", 1);
    (void)w; /* a full pipe is as readable */
  }
  pthread_mutex_unlock(&f->lock);
}

void dc_forwarder_submit(dc_forwarder_t *f, dc_fwd_job_t *job) {
  job->next = NULL;
  pthread_mutex_lock(&f->lock);
  *f->todo_tail = job;
  f->todo_tail = &job->next;
  pthread_cond_signal(&f->cond);
  pthread_mutex_unlock(&f->lock);
}

dc_fwd_job_t *dc_forwarder_take_done(dc_forwarder_t *f) {
  uint64_t n;
  pthread_mutex_lock(&f->lock);
  dc_fwd_job_t *job = f->done;
  if (job) {
    f->done = job->next;
    if (!f->done)
      f->done_tail = &f->done;
    job->next = NULL;
  } else {
    ssize_t r = read(f->done_fd, &n, sizeof(n)); /* drained: re-arm */
    (void)r;
  }
  pthread_mutex_unlock(&f->lock);
  return job;
}
