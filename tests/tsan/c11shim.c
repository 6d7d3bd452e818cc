/* SPDX-License-Identifier: BSD-2-Clause */
/* LD_PRELOAD shim for TSan runs: gcc 12's libtsan does not intercept glibc's
 * C11 threads (thrd_create, mtx_lock, cnd_wait...) that Debian's librdkafka
 * uses, so librdkafka's threads are invisible to TSan and crash it. Route
 * them through the pthread functions TSan does intercept. glibc's mtx_t /
 * cnd_t / once_flag share layout with the pthread types. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>
#include <errno.h>

struct start { thrd_start_t f; void *arg; };
static void *trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  return (void *)(intptr_t)s.f(s.arg);
}
int thrd_create(thrd_t *thr, thrd_start_t f, void *arg) {
  struct start *s = malloc(sizeof(*s));
  if (!s) return thrd_nomem;
  s->f = f; s->arg = arg;
  int r = pthread_create((pthread_t *)thr, NULL, trampoline, s);
  if (r) { free(s); return r == ENOMEM ? thrd_nomem : thrd_error; }
  return thrd_success;
}
int thrd_join(thrd_t thr, int *res) {
  void *v;
  if (pthread_join((pthread_t)thr, &v)) return thrd_error;
  if (res) *res = (int)(intptr_t)v;
  return thrd_success;
}
thrd_t thrd_current(void) { return (thrd_t)pthread_self(); }
int mtx_init(mtx_t *m, int type) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  int r = pthread_mutex_init((pthread_mutex_t *)m, &a);
  pthread_mutexattr_destroy(&a);
  return r ? thrd_error : thrd_success;
}
int mtx_lock(mtx_t *m) { return pthread_mutex_lock((pthread_mutex_t *)m) ? thrd_error : thrd_success; }
int mtx_unlock(mtx_t *m) { return pthread_mutex_unlock((pthread_mutex_t *)m) ? thrd_error : thrd_success; }
void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }
int cnd_init(cnd_t *c) { return pthread_cond_init((pthread_cond_t *)c, NULL) ? thrd_error : thrd_success; }
int cnd_signal(cnd_t *c) { return pthread_cond_signal((pthread_cond_t *)c) ? thrd_error : thrd_success; }
int cnd_broadcast(cnd_t *c) { return pthread_cond_broadcast((pthread_cond_t *)c) ? thrd_error : thrd_success; }
int cnd_wait(cnd_t *c, mtx_t *m) { return pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m) ? thrd_error : thrd_success; }
int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict ts) {
  int r = pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts);
  return r == 0 ? thrd_success : r == ETIMEDOUT ? thrd_timedout : thrd_error;
}
void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }
void call_once(once_flag *f, void (*fn)(void)) { pthread_once((pthread_once_t *)f, fn); }
