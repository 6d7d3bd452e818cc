/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for end-to-end C tests that run the real dynconfd: scratch
 * directories, files and shell commands, spawning the daemon and learning
 * its port, raw loopback sockets and frame I/O, loopback listeners for
 * test proxies, the process's threads. Header-only; every function is
 * static inline (state lives in function-local statics) so a test that
 * uses only some of them still builds with -Werror.
 *
 * The daemon binary is $DC_BUILDDIR/dynconfd (DC_BUILDDIR defaults to ".").
 * $DC_DAEMON_WRAPPER, when set, is split on spaces and put in front of the
 * command line, e.g. DC_DAEMON_WRAPPER="valgrind --leak-check=full
 * --error-exitcode=99" to check the daemon's own leaks from a test.
 */
#ifndef DC_TESTUTIL_H
#define DC_TESTUTIL_H

#include "common/buf.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the daemon may take to print its listening line, and to exit
 * after SIGTERM, before the test gives up on it. Generous for valgrind. */
#define DC_TU_START_TIMEOUT_MS 10000
#define DC_TU_STOP_TIMEOUT_MS 10000

typedef struct dc_tu_daemon {
  pid_t pid;  /* 0 when not running */
  int port;   /* from its "listening on 127.0.0.1:PORT" line */
  /* Every listener it reported ("listening on H:P (NAME PROTO)"), in order;
   * names[i] is NAME ("" for an old-style line). */
  int n_listeners;
  int ports[8];
  char names[8][32];
  int out_fd; /* read end of its stdout pipe, kept open until stop so a
                 late write on the daemon's side never raises SIGPIPE */
  char log_path[PATH_MAX]; /* its stderr, "" = inherited */
} dc_tu_daemon_t;

static inline int64_t dc_tu_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void dc_tu_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
    ;
}

/* ---- scratch directories ------------------------------------------------ */

/* Creates a fresh private directory under $TMPDIR (or /tmp) into out.
 * The caller removes it with dc_tu_rmrf(). 0 or -1. */
static inline int dc_tu_tmpdir(char *out, size_t n) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base)
    base = "/tmp";
  if ((size_t)snprintf(out, n, "%s/dynconf-test-XXXXXX", base) >= n)
    return -1;
  return mkdtemp(out) ? 0 : -1;
}

static inline int dc_tu_rmrf_cb_(const char *path, const struct stat *st,
                                 int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0; /* keep going: remove as much as possible */
}

/* rm -rf path; never follows symlinks. */
static inline void dc_tu_rmrf(const char *path) {
  if (path && *path)
    nftw(path, dc_tu_rmrf_cb_, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh scratch directory (into dir, removed by the caller with
 * dc_tu_rmrf()) with an empty data/ in it; data gets DIR/data and log
 * DIR/dynconfd.log, the usual places for dc_tu_daemon_start(). 0 or -1
 * (errno set, nothing created). */
static inline int dc_tu_scratch(char *dir, size_t dir_size, char *data,
                                size_t data_size, char *log, size_t log_size) {
  if (dc_tu_tmpdir(dir, dir_size))
    return -1;
  snprintf(log, log_size, "%s/dynconfd.log", dir);
  snprintf(data, data_size, "%s/data", dir);
  mkdir(data, 0700);
  return 0;
}

/* ---- files and commands ------------------------------------------------- */

/* dir/name in one of a ring of 16 buffers, so a handful may be live at
 * once. */
static inline const char *dc_tu_path(const char *dir, const char *name) {
  static char ring[16][PATH_MAX];
  static int next;
  char *p = ring[next++ % 16];
  snprintf(p, PATH_MAX, "%s/%s", dir, name);
  return p;
}

/* The texts dc_tu_file_text() handed out, freed by dc_tu_file_texts_free(). */
typedef struct dc_tu_texts {
  char *v[64];
  int n;
} dc_tu_texts_t;

static inline dc_tu_texts_t *dc_tu_texts_(void) {
  static dc_tu_texts_t texts;
  return &texts;
}

/* The content of the file at path (its first 64 KiB), valid until
 * dc_tu_file_texts_free(); "" when it cannot be read (the check using it
 * then fails). */
static inline const char *dc_tu_file_text(const char *path) {
  dc_tu_texts_t *t = dc_tu_texts_();
  FILE *f = fopen(path, "r");
  char *buf = calloc(1, 65536);
  if (f && buf)
    buf[fread(buf, 1, 65535, f)] = '\0';
  if (f)
    fclose(f);
  if (buf && t->n < (int)(sizeof(t->v) / sizeof(t->v[0])))
    t->v[t->n++] = buf;
  else
    free(buf), buf = NULL;
  return buf ? buf : "";
}

/* Frees every text dc_tu_file_text() returned. */
static inline void dc_tu_file_texts_free(void) {
  dc_tu_texts_t *t = dc_tu_texts_();
  for (int i = 0; i < t->n; i++)
    free(t->v[i]);
  t->n = 0;
}

/* Runs cmd with sh -c (TAP output so far flushed first, so lines keep
 * their order): its exit status, or -1 when it did not exit. */
static inline int dc_tu_system(const char *cmd) {
  fflush(stdout);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- the daemon --------------------------------------------------------- */

static inline const char *dc_tu_builddir(void) {
  const char *d = getenv("DC_BUILDDIR");
  return d && *d ? d : ".";
}

/* Parses "listening on HOST:PORT [(NAME PROTOCOL)]" (the last ':' before
 * the first space separates the port, so an IPv6 host would also parse).
 * Returns the port or -1. */
static inline int dc_tu_parse_listening(const char *line, char *host,
                                        size_t hostsz) {
  static const char prefix[] = "listening on ";
  if (strncmp(line, prefix, sizeof(prefix) - 1))
    return -1;
  const char *hp = line + sizeof(prefix) - 1;
  /* The address ends at the first space: "(NAME PROTOCOL)" may follow. */
  const char *sp = strchr(hp, ' ');
  const char *colon = hp;
  for (const char *q = hp; *q && (!sp || q < sp); q++)
    if (*q == ':')
      colon = q;
  if (colon == hp)
    return -1;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (end == colon + 1 ||
      (*end && *end != '\n' && *end != '\r' && *end != ' ') ||
      port <= 0 || port > 65535)
    return -1;
  if (host && hostsz) {
    size_t hl = (size_t)(colon - hp);
    if (hl >= hostsz)
      hl = hostsz - 1;
    memcpy(host, hp, hl);
    host[hl] = '\0';
  }
  return (int)port;
}

/* Starts dynconfd --listen 127.0.0.1:0 --data-dir data_dir [extra...]
 * (extra is NULL-terminated, may be NULL), its stderr appended to log_path
 * (NULL = inherit). Waits for its listening line. On success fills *d and
 * returns 0; on failure returns -1 with the reason in errstr and nothing
 * left running. */
static inline int dc_tu_daemon_start(dc_tu_daemon_t *d, const char *data_dir,
                                     const char *log_path,
                                     const char *const *extra, char *errstr,
                                     size_t errstr_size) {
  char bin[PATH_MAX];
  const char *argv[64];
  int argc = 0;
  /* Wrapper words live in a copy we split in place; freed before return. */
  char *wrap = getenv("DC_DAEMON_WRAPPER") ? strdup(getenv("DC_DAEMON_WRAPPER"))
                                           : NULL;
  memset(d, 0, sizeof(*d));
  d->out_fd = -1;
  snprintf(bin, sizeof(bin), "%s/dynconfd", dc_tu_builddir());
  if (wrap)
    for (char *save = NULL, *w = strtok_r(wrap, " ", &save); w && argc < 32;
         w = strtok_r(NULL, " ", &save))
      argv[argc++] = w;
  argv[argc++] = bin;
  argv[argc++] = "--listen";
  argv[argc++] = "127.0.0.1:0";
  argv[argc++] = "--data-dir";
  argv[argc++] = data_dir;
  for (size_t i = 0; extra && extra[i] && argc < 62; i++)
    argv[argc++] = extra[i];
  argv[argc] = NULL;
  if (log_path)
    snprintf(d->log_path, sizeof(d->log_path), "%s", log_path);

  int p[2];
  if (pipe2(p, O_CLOEXEC) == -1) {
    snprintf(errstr, errstr_size, "pipe: %s", strerror(errno));
    free(wrap);
    return -1;
  }
  fflush(stdout); /* or the child would repeat buffered TAP lines */
  pid_t pid = fork();
  if (pid == -1) {
    snprintf(errstr, errstr_size, "fork: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
    free(wrap);
    return -1;
  }
  if (pid == 0) {
    dup2(p[1], 1);
    if (log_path) {
      int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0)
        dup2(fd, 2);
    }
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  free(wrap);
  close(p[1]);
  d->pid = pid;
  d->out_fd = p[0];

  /* Read stdout until the listening line, the deadline or EOF. */
  char line[2048];
  size_t have = 0;
  int64_t deadline = dc_tu_now_ms() + DC_TU_START_TIMEOUT_MS;
  for (;;) {
    char *nl = memchr(line, '\n', have);
    if (nl) {
      *nl = '\0';
      int port = dc_tu_parse_listening(line, NULL, 0);
      if (port > 0) {
        d->port = port;
        /* dynconfd writes all its listener lines in one go: take them. */
        char *cur = line, *eol = nl;
        for (;;) {
          int lp = dc_tu_parse_listening(cur, NULL, 0);
          if (lp > 0 && d->n_listeners < 8) {
            int k = d->n_listeners++;
            const char *paren = strchr(cur, '(');
            d->ports[k] = lp;
            d->names[k][0] = '\0';
            if (paren)
              sscanf(paren + 1, "%31[^ )]", d->names[k]);
          }
          char *next = eol + 1;
          if (next >= line + have)
            break;
          char *next_eol = memchr(next, '\n', (size_t)(line + have - next));
          if (!next_eol)
            break;
          *next_eol = '\0';
          cur = next;
          eol = next_eol;
        }
        return 0;
      }
      /* Some other line: drop it and keep reading. */
      size_t used = (size_t)(nl - line) + 1;
      memmove(line, nl + 1, have - used);
      have -= used;
      continue;
    }
    int left = (int)(deadline - dc_tu_now_ms());
    if (left <= 0 || have == sizeof(line) - 1) {
      snprintf(errstr, errstr_size,
               left <= 0 ? "no 'listening on' line within %d ms"
                         : "over-long stdout line (%d ms)",
               DC_TU_START_TIMEOUT_MS);
      break;
    }
    struct pollfd pfd = {d->out_fd, POLLIN, 0};
    int r = poll(&pfd, 1, left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue; /* the deadline check above reports it */
    ssize_t n = read(d->out_fd, line + have, sizeof(line) - 1 - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      snprintf(errstr, errstr_size,
               "dynconfd closed stdout before listening (exited?)");
      break;
    }
    have += (size_t)n;
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  close(d->out_fd);
  d->out_fd = -1;
  d->pid = 0;
  return -1;
}

/* The usual set-up of a test: a fresh scratch directory (into dir) with an
 * empty data/ in it, and dynconfd started with --data-dir DIR/data, its
 * stderr in DIR/dynconfd.log and extra as for dc_tu_daemon_start(). 0, or
 * -1 with the reason in errstr and nothing left (the directory removed). */
static inline int dc_tu_daemon_start_tmp(dc_tu_daemon_t *d, char *dir,
                                         size_t dir_size,
                                         const char *const *extra,
                                         char *errstr, size_t errstr_size) {
  char log[PATH_MAX], data[PATH_MAX];
  memset(d, 0, sizeof(*d));
  d->out_fd = -1;
  if (dc_tu_scratch(dir, dir_size, data, sizeof(data), log, sizeof(log))) {
    snprintf(errstr, errstr_size, "cannot create a scratch directory: %s",
             strerror(errno));
    return -1;
  }
  if (dc_tu_daemon_start(d, data, log, extra, errstr, errstr_size)) {
    dc_tu_rmrf(dir);
    return -1;
  }
  return 0;
}

/* dc_tu_daemon_start() with an extra listener on 127.0.0.1:port, e.g. a
 * port an earlier daemon had, retrying for up to 10 s while the port is
 * not free yet. 0, or -1 with the last reason in errstr. */
static inline int dc_tu_daemon_start_port(dc_tu_daemon_t *d,
                                          const char *data_dir,
                                          const char *log_path, int port,
                                          char *errstr, size_t errstr_size) {
  char listen[64];
  snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
  const char *extra[] = {"--listen", listen, NULL};
  for (int i = 0; i < 40; i++) {
    if (!dc_tu_daemon_start(d, data_dir, log_path, extra, errstr, errstr_size))
      return 0;
    dc_tu_sleep_ms(250);
  }
  return -1;
}

/* The port of the listener called name, or -1. */
static inline int dc_tu_daemon_port_of(const dc_tu_daemon_t *d,
                                       const char *name) {
  for (int i = 0; i < d->n_listeners; i++)
    if (!strcmp(d->names[i], name))
      return d->ports[i];
  return -1;
}

/* True while the daemon process has not exited. */
static inline bool dc_tu_daemon_alive(dc_tu_daemon_t *d) {
  if (!d->pid)
    return false;
  int st;
  pid_t r = waitpid(d->pid, &st, WNOHANG);
  if (r == d->pid) {
    d->pid = 0; /* reaped: it died */
    return false;
  }
  return r == 0;
}

/* Sends sig and waits up to DC_TU_STOP_TIMEOUT_MS for the exit. Returns the
 * exit status (0..255), 128+signal if it died of a signal, or -1 if it had
 * to be SIGKILLed after the timeout or was not running. */
static inline int dc_tu_daemon_signal_wait(dc_tu_daemon_t *d, int sig) {
  int rc = -1;
  if (d->pid) {
    kill(d->pid, sig);
    int64_t deadline = dc_tu_now_ms() + DC_TU_STOP_TIMEOUT_MS;
    for (;;) {
      int st;
      pid_t r = waitpid(d->pid, &st, WNOHANG);
      if (r == d->pid) {
        rc = WIFEXITED(st) ? WEXITSTATUS(st)
                           : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
        break;
      }
      if (r == -1 || dc_tu_now_ms() > deadline) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        break;
      }
      dc_tu_sleep_ms(10);
    }
    d->pid = 0;
  }
  if (d->out_fd >= 0)
    close(d->out_fd);
  d->out_fd = -1;
  return rc;
}

/* Clean shutdown: SIGTERM. 0 is the contract's answer. */
static inline int dc_tu_daemon_stop(dc_tu_daemon_t *d) {
  return dc_tu_daemon_signal_wait(d, SIGTERM);
}

/* Prints the last lines of a dynconfd log file (its stderr) as TAP
 * comments, to explain a failure. */
static inline void dc_tu_log_tail(const char *log_path, int lines) {
  FILE *f = fopen(log_path, "r");
  if (!f)
    return;
  char buf[8192];
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  long off = sz > (long)sizeof(buf) - 1 ? sz - (long)sizeof(buf) + 1 : 0;
  fseek(f, off, SEEK_SET);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* Find the start of the last `lines` lines. */
  char *start = buf + n;
  for (int seen = 0; start > buf; start--)
    if (start[-1] == '\n' && start != buf + n && ++seen >= lines)
      break;
  printf("# --- dynconfd log (%s) ---\n", log_path);
  for (char *s = start, *nl; *s; s = nl + 1) {
    nl = strchr(s, '\n');
    if (!nl) {
      printf("# %s\n", s);
      break;
    }
    printf("# %.*s\n", (int)(nl - s), s);
  }
  fflush(stdout);
}

/* Prints the last lines of the daemon's stderr as TAP comments, to explain
 * a failure. */
static inline void dc_tu_daemon_log_tail(const dc_tu_daemon_t *d, int lines) {
  if (d->log_path[0])
    dc_tu_log_tail(d->log_path, lines);
}

/* ---- sockets and frames ------------------------------------------------- */

/* Blocking TCP connection to 127.0.0.1:port, or -1. */
static inline int dc_tu_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

/* Writes text to dir/name (path gets the file's path); 0 or -1. */
static inline int dc_tu_put_file(const char *dir, const char *name,
                                 const char *text, char *path,
                                 size_t path_size) {
  snprintf(path, path_size, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  int rc = fputs(text, f) < 0 ? -1 : 0;
  return fclose(f) ? -1 : rc;
}

/* Writes everything; MSG_NOSIGNAL so a server that closed on us gives
 * EPIPE instead of killing the test. 0 or -1. */
static inline int dc_tu_write_all(int fd, const void *p, size_t n) {
  const uint8_t *q = p;
  while (n) {
    ssize_t w = send(fd, q, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    q += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Waits until fd has input (or EOF, or an error) before the absolute
 * deadline (dc_tu_now_ms()): 1 = it has, 0 = the deadline passed. */
static inline int dc_tu_wait_readable(int fd, int64_t deadline) {
  for (;;) {
    int left = (int)(deadline - dc_tu_now_ms());
    if (left <= 0)
      return 0;
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, left) > 0)
      return 1; /* else EINTR or a spurious wake-up: the deadline decides */
  }
}

/* Reads exactly n bytes before the absolute deadline (dc_tu_now_ms()).
 * 1 = done, 0 = EOF or reset before any byte, -1 = timeout, error or EOF
 * part-way. */
static inline int dc_tu_read_exact(int fd, void *p, size_t n, int64_t deadline) {
  uint8_t *q = p;
  size_t got = 0;
  while (got < n) {
    if (!dc_tu_wait_readable(fd, deadline))
      return -1;
    ssize_t k = recv(fd, q + got, n - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k == 0 || (k < 0 && errno == ECONNRESET))
      return got == 0 ? 0 : -1;
    if (k < 0)
      return -1;
    got += (size_t)k;
  }
  return 1;
}

/* Reads one response frame; out is cleared and gets the payload (without
 * the 4-byte size). Frames above max_size are refused. Returns 1 = frame,
 * 0 = connection closed cleanly before a frame, -1 = timeout or error. */
static inline int dc_tu_read_frame(int fd, int timeout_ms, size_t max_size,
                                   dc_buf_t *out) {
  int64_t deadline = dc_tu_now_ms() + timeout_ms;
  uint8_t hdr[4];
  int r = dc_tu_read_exact(fd, hdr, 4, deadline);
  if (r <= 0)
    return r;
  uint32_t n = ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) |
               ((uint32_t)hdr[2] << 8) | hdr[3];
  if (n > max_size)
    return -1;
  dc_buf_clear(out);
  if (dc_buf_reserve(out, n ? n : 1))
    return -1;
  if (n && dc_tu_read_exact(fd, out->data, n, deadline) != 1)
    return -1;
  out->len = n;
  return 1;
}

/* Waits for the peer to close: 1 = closed (EOF or reset), 0 = still open at
 * the timeout. Any bytes received meanwhile are counted in *nbytes (may be
 * NULL) and dropped. */
static inline int dc_tu_wait_closed(int fd, int timeout_ms, size_t *nbytes) {
  int64_t deadline = dc_tu_now_ms() + timeout_ms;
  uint8_t sink[4096];
  if (nbytes)
    *nbytes = 0;
  for (;;) {
    if (!dc_tu_wait_readable(fd, deadline))
      return 0;
    ssize_t k = recv(fd, sink, sizeof(sink), 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return 1;
    if (nbytes)
      *nbytes += (size_t)k;
  }
}

/* ---- loopback listeners for test servers --------------------------------- */

/* A TCP socket (SOCK_STREAM | SOCK_CLOEXEC | flags) bound to
 * 127.0.0.1:<ephemeral>, *port; listening with backlog, or only bound when
 * backlog < 0 (connecting to it is refused). The fd, or -1 with errno set
 * (*port untouched). */
static inline int dc_tu_loopback_socket(int flags, int backlog, int *port) {
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
      (backlog >= 0 && listen(fd, backlog)) ||
      getsockname(fd, (struct sockaddr *)&sa, &sl)) {
    int saved = errno;
    if (fd >= 0)
      close(fd);
    errno = saved;
    return -1;
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

/* A loopback port nobody listens on (bound, then closed), or -1. */
static inline int dc_tu_closed_port(void) {
  int port = -1;
  int fd = dc_tu_loopback_socket(0, -1, &port);
  if (fd >= 0)
    close(fd);
  return fd >= 0 ? port : -1;
}

/* Closes what dc_tu_listen() opened (fds < 0 are skipped) and sets them to
 * -1. errno is kept. */
static inline void dc_tu_unlisten(int *lfd, int wake[2]) {
  int saved = errno;
  int *fds[3] = {lfd, &wake[0], &wake[1]};
  for (int i = 0; i < 3; i++) {
    if (*fds[i] >= 0)
      close(*fds[i]);
    *fds[i] = -1;
  }
  errno = saved;
}

/* For a test server run by one thread: a TCP socket listening on
 * 127.0.0.1:<ephemeral> (*lfd, its *port) and a self-pipe wake[2]; a byte
 * on wake[1] (dc_tu_wake) tells the thread polling wake[0] to stop. All
 * close-on-exec. 0, or -1 with errno set and all three fds -1. */
static inline int dc_tu_listen(int *lfd, int *port, int wake[2]) {
  int p = 0;
  wake[0] = wake[1] = -1;
  *lfd = dc_tu_loopback_socket(0, 64, &p);
  if (*lfd < 0 || pipe2(wake, O_CLOEXEC)) {
    dc_tu_unlisten(lfd, wake);
    return -1;
  }
  *port = p;
  return 0;
}

/* Wakes the thread polling wake[0] (see dc_tu_listen). */
static inline void dc_tu_wake(int wake_fd) {
  ssize_t w;
  do
    w = write(wake_fd, "x", 1);
  while (w < 0 && errno == EINTR);
}

/* ---- threads ------------------------------------------------------------ */

static inline void *dc_tu_warm_up_(void *arg) { return arg; }

/* The process's threads (entries of /proc/self/task), or -1. A sanitizer
 * runtime may start a helper thread with the first pthread_create (TSan
 * does): the first call starts and joins one thread, so that helper is in
 * every count. */
static inline int dc_tu_thread_count(void) {
  static bool warm;
  if (!warm) {
    pthread_t t;
    if (!pthread_create(&t, NULL, dc_tu_warm_up_, NULL))
      pthread_join(t, NULL);
    warm = true;
  }
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* The thread count once it has come down to at most want (an exited,
 * joined thread may linger in /proc/self/task for a moment), or what it
 * is after 10 s. */
static inline int dc_tu_thread_count_settled(int want) {
  int64_t deadline = dc_tu_now_ms() + 10000;
  int n = dc_tu_thread_count();
  while (n > want && dc_tu_now_ms() < deadline) {
    dc_tu_sleep_ms(20);
    n = dc_tu_thread_count();
  }
  return n;
}

#endif
