/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * send_floor: what a fan-out costs the kernel alone on this machine, the
 * floor under dynconfd's Watch fan-out. One thread sends one B-byte
 * message on each of N loopback TCP connections, as dynconfd answers N
 * parked watches; another thread waits in epoll_wait for them and reads
 * each, as the watching clients do. No decoding, no framing, no
 * configuration: only the sends, the wake-ups and the reads.
 *
 *   send_floor [--pairs N] [--bytes B] [--rounds R]
 *
 * N is lowered to what the open-file limit allows (two descriptors per
 * connection). Prints one line per round (the sender's CPU time, per send
 * too, and the time until the last message was read) and a RESULT line
 * with the means. Exit 0, or 1 when a connection or a send failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct floor_run {
  int n, bytes;
  int *send_fd, *recv_fd;
  int ep;
  double start_ms, last_ms; /* the sends' start; the last message read */
} floor_run_t;

static double clock_ms(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Reads until every connection delivered its message (or 30 s). */
static void *reader(void *arg) {
  floor_run_t *f = arg;
  struct epoll_event evs[256];
  char buf[65536];
  long want = (long)f->n * f->bytes, got = 0;
  double deadline = clock_ms(CLOCK_MONOTONIC) + 30000;
  while (got < want && clock_ms(CLOCK_MONOTONIC) < deadline) {
    int k = epoll_wait(f->ep, evs, 256, 1000);
    for (int i = 0; i < k; i++) {
      ssize_t r;
      while ((r = recv(evs[i].data.fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
        got += r;
    }
  }
  f->last_ms = got == want ? clock_ms(CLOCK_MONOTONIC) : -1;
  return NULL;
}

/* N connected pairs through one listener on 127.0.0.1; -1 on failure. */
static int connect_pairs(floor_run_t *f) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
      listen(l, 4096) || getsockname(l, (struct sockaddr *)&a, &al))
    return -1;
  int one = 1;
  for (int i = 0; i < f->n; i++) {
    f->recv_fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->recv_fd[i] < 0 ||
        connect(f->recv_fd[i], (struct sockaddr *)&a, sizeof(a)) ||
        (f->send_fd[i] = accept(l, NULL, NULL)) < 0)
      return -1;
    setsockopt(f->send_fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = f->recv_fd[i]};
    epoll_ctl(f->ep, EPOLL_CTL_ADD, f->recv_fd[i], &ev);
  }
  close(l);
  return 0;
}

/* One round: the sender's CPU ms into *cpu, the wall ms until the last
 * message was read into *all. -1 when a send or a read failed. */
static int round_once(floor_run_t *f, const char *msg, double *cpu,
                      double *all) {
  pthread_t t;
  f->last_ms = -1;
  *cpu = *all = 0;
  if (pthread_create(&t, NULL, reader, f))
    return -1;
  usleep(50000); /* lets the reader block in epoll_wait, as clients do */
  double c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
  f->start_ms = clock_ms(CLOCK_MONOTONIC);
  int bad = 0;
  for (int i = 0; i < f->n; i++)
    bad += send(f->send_fd[i], msg, (size_t)f->bytes, MSG_DONTWAIT) !=
           f->bytes;
  *cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
  pthread_join(t, NULL);
  *all = f->last_ms - f->start_ms;
  return bad || f->last_ms < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
  int n = 10000, bytes = 150, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    int *p = !strcmp(argv[i], "--pairs")    ? &n
             : !strcmp(argv[i], "--bytes")  ? &bytes
             : !strcmp(argv[i], "--rounds") ? &rounds
                                            : NULL;
    if (!p || (*p = atoi(argv[i + 1])) <= 0) {
      fprintf(stderr, "usage: send_floor [--pairs N] [--bytes B] "
                      "[--rounds R]\n");
      return 2;
    }
  }
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl)) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if ((rlim_t)n > (rl.rlim_cur - 64) / 2)
      n = (int)((rl.rlim_cur - 64) / 2);
  }
  floor_run_t f = {.n = n, .bytes = bytes, .ep = epoll_create1(EPOLL_CLOEXEC)};
  f.send_fd = calloc((size_t)n, sizeof(int));
  f.recv_fd = calloc((size_t)n, sizeof(int));
  char *msg = calloc(1, (size_t)bytes);
  if (!f.send_fd || !f.recv_fd || !msg || f.ep < 0 || connect_pairs(&f)) {
    fprintf(stderr, "send_floor: cannot set up %d connections: %s\n", n,
            strerror(errno));
    return 1;
  }
  double sum_cpu = 0, sum_all = 0;
  int rc = 0;
  for (int r = 0; r < rounds && !rc; r++) {
    double cpu = 0, all = 0;
    rc = round_once(&f, msg, &cpu, &all);
    printf("floor round %d: %d sends of %d B: sender %.1f ms CPU (%.2f us "
           "each), all read %.1f ms after the first send\n",
           r + 1, n, bytes, cpu, 1e3 * cpu / n, all);
    sum_cpu += cpu;
    sum_all += all;
  }
  printf("RESULT floor pairs=%d bytes=%d rounds=%d mean_send_cpu_ms=%.1f "
         "mean_us_per_send=%.2f mean_all_read_ms=%.1f ok=%d\n",
         n, bytes, rounds, sum_cpu / rounds, 1e3 * sum_cpu / rounds / n,
         sum_all / rounds, rc == 0);
  return rc ? 1 : 0;
}
