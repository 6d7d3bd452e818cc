/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Log lines: text and JSON (dc_log_set_format). A JSON line is one
 * object with ts, level and msg; the message's quotes, backslashes,
 * newlines and control characters are escaped, valid UTF-8 kept, bytes
 * that are not UTF-8 written as U+FFFD, so every line parses.
 */
#include "common/log.h"
#include "../tap.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void escapes(const char *in, const char *want, const char *what) {
  char out[256];
  dc_log_json_escape(in, out, sizeof(out));
  is_str(out, want, "%s", what);
}

/* What dc_log writes to stderr for one message. */
static const char *logged(dc_log_level_t level, const char *msg) {
  static char buf[2048];
  int p[2];
  fflush(stderr);
  int saved = dup(2);
  if (pipe(p) || saved < 0)
    return "";
  dup2(p[1], 2);
  dc_log(level, "%s", msg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(p[1]);
  ssize_t n = read(p[0], buf, sizeof(buf) - 1);
  close(p[0]);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

int main(void) {
  escapes("plain", "plain", "plain text as is");
  escapes("a \"quote\" and \\", "a \\\"quote\\\" and \\\\",
          "quotes and backslashes escaped");
  escapes("two\nlines\ttab\x01", "two\\nlines\\u0009tab\\u0001",
          "newline and control characters escaped");
  escapes("caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5",
          "valid UTF-8 kept");
  escapes("bad \xff\xc3 \xed\xa0\x80 end",
          "bad \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd end",
          "bytes that are not UTF-8 (a lone byte, a cut sequence, a "
          "surrogate) become U+FFFD");
  char small[8];
  dc_log_json_escape("ab\"cd", small, 5);
  is_str(small, "ab\\\"", "a short buffer stops before an escape is cut");

  const char *t = logged(DC_LOG_WARN, "hello");
  ok(strlen(t) > 30 && !strcmp(t + 24, " WARN hello\n"),
     "a text line: time, level, message (%s)", t);
  dc_log_set_format(DC_LOG_JSON);
  const char *j = logged(DC_LOG_ERR, "say \"hi\"\n");
  ok(!strncmp(j, "{\"ts\":\"", 7) && strstr(j, "Z\",\"level\":\"ERROR\",") &&
         strstr(j, ",\"msg\":\"say \\\"hi\\\"\\n\"}\n") &&
         !strchr(j, '\n')[1],
     "a JSON line: one object, ts, level, escaped msg (%s)", j);
  dc_log_set_level(DC_LOG_WARN);
  is_str(logged(DC_LOG_INFO, "dropped"), "", "below the level: nothing");
  return done_testing();
}
