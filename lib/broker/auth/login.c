/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The log-in thread (login.h): a FIFO of work in, a FIFO of finished work
 * out per sink, an eventfd per sink telling the loop that work waits.
 */
#include "broker/auth/login.h"
#include "common/text.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct fifo {
  dc_login_work_t *head, **tail;
} fifo_t;

struct dc_login {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  fifo_t todo;
  fifo_t done[DC_LOGIN_SINKS];
  int done_fd[DC_LOGIN_SINKS]; /* eventfd: finished work waiting */
  bool stop;
};

static void fifo_init(fifo_t *f) {
  f->head = NULL;
  f->tail = &f->head;
}

static void fifo_push(fifo_t *f, dc_login_work_t *w) {
  w->next = NULL;
  *f->tail = w;
  f->tail = &w->next;
}

static dc_login_work_t *fifo_pop(fifo_t *f) {
  dc_login_work_t *w = f->head;
  if (w) {
    f->head = w->next;
    if (!f->head)
      f->tail = &f->head;
    w->next = NULL;
  }
  return w;
}

static void fifo_drop(fifo_t *f) {
  dc_login_work_t *w;
  while ((w = fifo_pop(f)))
    w->drop(w);
}

static void *login_thread(void *arg) {
  dc_login_t *l = arg;
  pthread_setname_np(pthread_self(), "dynconfd:login");
  pthread_mutex_lock(&l->lock);
  for (;;) {
    while (!l->todo.head && !l->stop)
      pthread_cond_wait(&l->cond, &l->lock);
    if (l->stop)
      break;
    dc_login_work_t *w = fifo_pop(&l->todo);
    pthread_mutex_unlock(&l->lock);
    w->run(w);
    pthread_mutex_lock(&l->lock);
    fifo_push(&l->done[w->sink], w);
    uint64_t one = 1;
    ssize_t r = write(l->done_fd[w->sink], &one, sizeof(one));
    (void)r;
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

static void free_login(dc_login_t *l) {
  for (int i = 0; i < DC_LOGIN_SINKS; i++)
    if (l->done_fd[i] >= 0)
      close(l->done_fd[i]);
  pthread_cond_destroy(&l->cond);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

dc_login_t *dc_login_new(char *errstr, size_t errstr_size) {
  dc_login_t *l = calloc(1, sizeof(*l));
  if (!l) {
    dc_seterr(errstr, errstr_size, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&l->lock, NULL);
  pthread_cond_init(&l->cond, NULL);
  fifo_init(&l->todo);
  int err = 0;
  for (int i = 0; i < DC_LOGIN_SINKS; i++) {
    fifo_init(&l->done[i]);
    l->done_fd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->done_fd[i] < 0)
      err = errno;
  }
  if (!err)
    err = pthread_create(&l->thread, NULL, login_thread, l);
  if (err) {
    dc_seterr(errstr, errstr_size, "cannot start the log-in thread: %s",
              strerror(err));
    free_login(l);
    return NULL;
  }
  return l;
}

void dc_login_destroy(dc_login_t *l) {
  if (!l)
    return;
  pthread_mutex_lock(&l->lock);
  l->stop = true;
  pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->lock);
  pthread_join(l->thread, NULL);
  fifo_drop(&l->todo);
  for (int i = 0; i < DC_LOGIN_SINKS; i++)
    fifo_drop(&l->done[i]);
  free_login(l);
}

int dc_login_fd(const dc_login_t *l, int sink) { return l->done_fd[sink]; }

void dc_login_submit(dc_login_t *l, dc_login_work_t *w) {
  pthread_mutex_lock(&l->lock);
  fifo_push(&l->todo, w);
  pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->lock);
}

dc_login_work_t *dc_login_take_done(dc_login_t *l, int sink) {
  pthread_mutex_lock(&l->lock);
  dc_login_work_t *w = fifo_pop(&l->done[sink]);
  if (!w) {
    uint64_t n;
    ssize_t r = read(l->done_fd[sink], &n, sizeof(n)); /* drained: re-arm */
    (void)r;
  }
  pthread_mutex_unlock(&l->lock);
  return w;
}
