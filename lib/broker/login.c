/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The log-in thread (login.h): a FIFO of SASL steps in, a FIFO of results
 * out, an eventfd telling the loop that results wait.
 */
#include "broker/login.h"
#include "broker/credentials.h"
#include "broker/sasl_gssapi.h"
#include "broker/sasl_server.h"
#include "common/text.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct dc_login {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  dc_login_job_t *todo, **todo_tail;
  dc_login_job_t *done, **done_tail;
  size_t queued; /* in todo, and the one running */
  bool stop;
  int done_fd;   /* eventfd: results waiting */
};

void dc_login_job_free(dc_login_job_t *job) {
  if (!job)
    return;
  dc_sasl_server_destroy(job->sasl);
  dc_credentials_destroy(job->creds);
  dc_jwks_free(job->jwks);
  dc_gssapi_acceptor_unref(job->gss);
  free(job->in);
  free(job->out);
  free(job);
}

/* The step, with what it was queued with. */
static void run(dc_login_job_t *job) {
  dc_sasl_server_set_oauth(job->sasl, job->oauth ? &job->policy : NULL);
  dc_sasl_server_set_gssapi(job->sasl, job->gss);
  job->rc = dc_sasl_server_step(job->sasl, job->creds, job->in, job->inlen,
                                &job->out, &job->outlen, job->why,
                                sizeof(job->why));
}

static void *login_thread(void *arg) {
  dc_login_t *l = arg;
  pthread_setname_np(pthread_self(), "dynconfd:login");
  pthread_mutex_lock(&l->lock);
  for (;;) {
    while (!l->todo && !l->stop)
      pthread_cond_wait(&l->cond, &l->lock);
    if (l->stop)
      break;
    dc_login_job_t *job = l->todo;
    l->todo = job->next;
    if (!l->todo)
      l->todo_tail = &l->todo;
    job->next = NULL;
    pthread_mutex_unlock(&l->lock);
    run(job);
    pthread_mutex_lock(&l->lock);
    l->queued--;
    *l->done_tail = job;
    l->done_tail = &job->next;
    uint64_t one = 1;
    ssize_t r = write(l->done_fd, &one, sizeof(one));
    (void)r;
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

dc_login_t *dc_login_new(char *errstr, size_t errstr_size) {
  dc_login_t *l = calloc(1, sizeof(*l));
  if (!l) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  l->todo_tail = &l->todo;
  l->done_tail = &l->done;
  l->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->cond, NULL);
  int err = l->done_fd < 0 ? errno
                           : pthread_create(&l->thread, NULL, login_thread, l);
  if (err) {
    dc_seterr(errstr, errstr_size, "cannot start the log-in thread: %s",
              strerror(err));
    if (l->done_fd >= 0)
      close(l->done_fd);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    free(l);
    return NULL;
  }
  return l;
}

static void free_list(dc_login_job_t *job) {
  while (job) {
    dc_login_job_t *next = job->next;
    dc_login_job_free(job);
    job = next;
  }
}

void dc_login_destroy(dc_login_t *l) {
  if (!l)
    return;
  pthread_mutex_lock(&l->lock);
  l->stop = true;
  pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->lock);
  pthread_join(l->thread, NULL);
  free_list(l->todo);
  free_list(l->done);
  close(l->done_fd);
  pthread_cond_destroy(&l->cond);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

int dc_login_fd(const dc_login_t *l) { return l->done_fd; }

void dc_login_submit(dc_login_t *l, dc_login_job_t *job) {
  job->next = NULL;
  pthread_mutex_lock(&l->lock);
  *l->todo_tail = job;
  l->todo_tail = &job->next;
  l->queued++;
  pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->lock);
}

dc_login_job_t *dc_login_take_done(dc_login_t *l) {
  pthread_mutex_lock(&l->lock);
  dc_login_job_t *job = l->done;
  if (job) {
    l->done = job->next;
    if (!l->done)
      l->done_tail = &l->done;
    job->next = NULL;
  } else {
    uint64_t n;
    ssize_t r = read(l->done_fd, &n, sizeof(n)); /* drained: re-arm */
    (void)r;
  }
  pthread_mutex_unlock(&l->lock);
  return job;
}

size_t dc_login_queued(dc_login_t *l) {
  pthread_mutex_lock(&l->lock);
  size_t n = l->queued;
  pthread_mutex_unlock(&l->lock);
  return n;
}
