/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The key=value file reader (lib/common/kvfile.c): the dialect (trimming,
 * comments, CRLF, the first '=' splits), errors naming the file and line,
 * a line over the limit refused rather than cut, the callback's refusal
 * and an unreadable file.
 */
#include "common/kvfile.h"
#include "../tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct seen {
  char text[4096]; /* "key=value@line;" for each call */
  const char *refuse; /* a key the callback refuses */
  size_t last_len;    /* the length of the last value seen */
} seen_t;

static int record(void *opaque, const char *key, const char *value,
                  int lineno, char *why, size_t why_size) {
  seen_t *s = opaque;
  if (s->refuse && !strcmp(key, s->refuse)) {
    snprintf(why, why_size, "no %s here", key);
    return -1;
  }
  s->last_len = strlen(value);
  size_t n = strlen(s->text);
  snprintf(s->text + n, sizeof(s->text) - n, "[%s]=[%s]@%d;", key, value,
           lineno);
  return 0;
}

static char g_path[64];

static void write_file(const char *body, size_t len) {
  FILE *f = fopen(g_path, "wb");
  fwrite(body, 1, len, f);
  fclose(f);
}

/* Reads body; returns the reader's result, with what it saw and said. */
static int read_body(const char *body, seen_t *s, char *err, size_t err_size) {
  write_file(body, strlen(body));
  memset(s->text, 0, sizeof(s->text));
  err[0] = '\0';
  return dc_kvfile_read(g_path, record, s, err, err_size);
}

static void test_dialect(void) {
  seen_t s = {.refuse = NULL};
  char err[512];
  is_int(read_body("# comment\n  ! also a comment\n\n \t\n"
                   "a=1\n  b  =  two words  \r\nc==x=y\nd=\n"
                   "sasl.jaas.config=x y\tz\n",
                   &s, err, sizeof(err)),
         0, "a file of settings and comments reads");
  is_str(s.text,
         "[a]=[1]@5;[b]=[two words]@6;[c]=[=x=y]@7;[d]=[]@8;"
         "[sasl.jaas.config]=[x y\tz]@9;",
         "trimmed around key and value, CRLF dropped, first '=' splits, "
         "an empty value kept, inner blanks kept");
  is_int(read_body("a=1\nno equals here\nb=2\n", &s, err, sizeof(err)), -1,
         "a line without '=' is refused");
  char want[128];
  snprintf(want, sizeof(want), "%s:2: expected key=value", g_path);
  is_str(err, want, "  the error names the file and line");
  is_str(s.text, "[a]=[1]@1;", "  nothing after it is read");
  is_int(read_body(" = v\n", &s, err, sizeof(err)), -1, "an empty key");
  ok(strstr(err, ":1: empty key"), "  said: %s", err);
  is_int(read_body("a=1\nlast=no newline", &s, err, sizeof(err)), 0,
         "a last line without a newline");
  is_str(s.text, "[a]=[1]@1;[last]=[no newline]@2;", "  is read");
}

static void test_limits(void) {
  seen_t s = {.refuse = NULL};
  char err[512];
  size_t n = DC_KVFILE_LINE_MAX + 10;
  char *big = malloc(n + 1);
  memcpy(big, "k=", 2);
  memset(big + 2, 'v', n - 3);
  big[n - 1] = '\n';
  big[n] = '\0';
  is_int(read_body(big, &s, err, sizeof(err)), -1,
         "a line over %d bytes is refused, not cut", DC_KVFILE_LINE_MAX);
  ok(strstr(err, ":1: line longer than"), "  said: %s", err);
  is_str(s.text, "", "  and no part of it reaches the callback");
  big[DC_KVFILE_LINE_MAX - 1] = '\n';
  big[DC_KVFILE_LINE_MAX] = '\0';
  is_int(read_body(big, &s, err, sizeof(err)), 0,
         "a line of exactly %d bytes is read", DC_KVFILE_LINE_MAX);
  is_int((int)s.last_len, DC_KVFILE_LINE_MAX - 3, "  with its whole value");
  free(big);
  write_file("a=1\nb=x\0y\n", 10);
  memset(s.text, 0, sizeof(s.text));
  is_int(dc_kvfile_read(g_path, record, &s, err, sizeof(err)), -1,
         "a NUL byte in a line is refused");
  ok(strstr(err, ":2: NUL byte"), "  said: %s", err);
}

static void test_refusals(void) {
  seen_t s = {.refuse = "bad"};
  char err[512];
  is_int(read_body("good=1\nbad=2\nafter=3\n", &s, err, sizeof(err)), -1,
         "the callback's refusal stops the read");
  char want[128];
  snprintf(want, sizeof(want), "%s:2: no bad here", g_path);
  is_str(err, want, "  its sentence after the file and line");
  is_str(s.text, "[good]=[1]@1;", "  nothing after it is read");
  is_int(dc_kvfile_read("/nonexistent/dir/f.conf", record, &s, err,
                        sizeof(err)),
         -1, "an unreadable file");
  is_str(err, "cannot read /nonexistent/dir/f.conf: No such file or directory",
         "  said with the reason");
  is_int(dc_kvfile_read("/", record, &s, err, sizeof(err)), -1,
         "a directory");
  ok(strstr(err, "cannot read /"), "  said: %s", err);
}

int main(void) {
  snprintf(g_path, sizeof(g_path), "/tmp/dc-kvfile-%d.conf", (int)getpid());
  test_dialect();
  test_limits();
  test_refusals();
  unlink(g_path);
  return done_testing();
}
