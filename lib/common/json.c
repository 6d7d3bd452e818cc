/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON string output shared by the CLI and the agent's statistics. */
#include "json.h"

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  size_t n;
  unsigned min;
  if (c < 0x80)
    return 1;
  if ((c & 0xe0) == 0xc0)
    n = 2, min = 0x80;
  else if ((c & 0xf0) == 0xe0)
    n = 3, min = 0x800;
  else if ((c & 0xf8) == 0xf0)
    n = 4, min = 0x10000;
  else
    return 0;
  unsigned cp = c & (0x7f >> n);
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

/* JSON string literal; NULL gives null. Invalid UTF-8 bytes become U+FFFD
 * so the output always parses. */
void dc_json_str(dc_buf_t *b, const char *s) {
  if (!s) {
    dc_buf_printf(b, "null");
    return;
  }
  dc_buf_append(b, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      dc_buf_printf(b, "\\%c", c);
      p++;
    } else if (c == '\n') {
      dc_buf_printf(b, "\\n");
      p++;
    } else if (c == '\t') {
      dc_buf_printf(b, "\\t");
      p++;
    } else if (c == '\r') {
      dc_buf_printf(b, "\\r");
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      dc_buf_printf(b, "\\u%04x", c);
      p++;
    } else {
      size_t n = utf8_len(p);
      if (n) {
        dc_buf_append(b, p, n);
        p += n;
      } else {
        dc_buf_printf(b, "\\ufffd");
        p++;
      }
    }
  }
  dc_buf_append(b, "\"", 1);
}

