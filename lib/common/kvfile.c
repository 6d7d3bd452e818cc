/* SPDX-License-Identifier: BSD-2-Clause */
/* The key=value file reader; the dialect is described in kvfile.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* getline, explicit_bzero */
#endif
#include "common/kvfile.h"
#include "common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static char *trim(char *s) {
  s += strspn(s, " \t");
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

/* One line (newline already removed): 0 = skipped or handled, -1 with
 * errstr holding the sentence without its "PATH:LINE: " prefix. */
static int read_line(char *line, int lineno, dc_kvfile_cb_t *cb, void *opaque,
                     char *why, size_t why_size) {
  char *t = trim(line);
  if (!*t || *t == '#' || *t == '!')
    return 0;
  char *eq = strchr(t, '=');
  if (!eq) {
    dc_seterr(why, why_size, "expected key=value");
    return -1;
  }
  *eq = '\0';
  char *key = trim(t);
  if (!*key) {
    dc_seterr(why, why_size, "empty key before '='");
    return -1;
  }
  return cb(opaque, key, trim(eq + 1), lineno, why, why_size);
}

int dc_kvfile_read(const char *path, dc_kvfile_cb_t *cb, void *opaque,
                   char *errstr, size_t errstr_size) {
  FILE *f = fopen(path, "r");
  if (!f) {
    dc_seterr(errstr, errstr_size, "cannot read %s: %s", path,
              strerror(errno));
    return -1;
  }
  char *line = NULL, why[1024];
  size_t cap = 0;
  int lineno = 0, rc = 0;
  ssize_t n;
  while (!rc && (n = getline(&line, &cap, f)) != -1) {
    lineno++;
    why[0] = '\0';
    if (n > DC_KVFILE_LINE_MAX) {
      dc_seterr(why, sizeof(why), "line longer than %d bytes",
                DC_KVFILE_LINE_MAX);
      rc = -1;
    } else if (memchr(line, '\0', (size_t)n)) {
      dc_seterr(why, sizeof(why), "NUL byte in the line");
      rc = -1;
    } else {
      line[strcspn(line, "\r\n")] = '\0';
      rc = read_line(line, lineno, cb, opaque, why, sizeof(why));
    }
    if (rc)
      dc_seterr(errstr, errstr_size, "%s:%d: %s", path, lineno, why);
  }
  if (!rc && ferror(f)) {
    dc_seterr(errstr, errstr_size, "cannot read %s: %s", path,
              strerror(errno));
    rc = -1;
  }
  if (line)
    explicit_bzero(line, cap);
  free(line);
  fclose(f);
  return rc;
}
