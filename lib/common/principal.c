/* SPDX-License-Identifier: BSD-2-Clause */
/* The principal name rule; see principal.h. */
#include "common/principal.h"

#include <stdbool.h>
#include <string.h>

/* UTF-8 encodings of the blanks (principal.h). */
static const char *const blanks[] = {
    " ",            "\xc2\xa0",     "\xe1\x9a\x80", "\xe2\x80\x80",
    "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84",
    "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88",
    "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\x8b", "\xe2\x80\xaf",
    "\xe2\x81\x9f", "\xe3\x80\x80", "\xef\xbb\xbf"};

static bool blank_at(const char *s, size_t n, bool at_end) {
  for (size_t i = 0; i < sizeof(blanks) / sizeof(blanks[0]); i++) {
    size_t bl = strlen(blanks[i]);
    if (bl <= n && !memcmp(at_end ? s + n - bl : s, blanks[i], bl))
      return true;
  }
  return false;
}

static bool has_control(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] < 0x20 || s[i] == 0x7f)
      return true;
    /* U+0080..U+009F, U+2028, U+2029 */
    if (i + 1 < n && s[i] == 0xc2 && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
      return true;
    if (i + 2 < n && s[i] == 0xe2 && s[i + 1] == 0x80 &&
        (s[i + 2] == 0xa8 || s[i + 2] == 0xa9))
      return true;
  }
  return false;
}

const char *dc_principal_name_fault(const char *name, size_t n) {
  if (has_control((const unsigned char *)name, n))
    return "holds a control character";
  if (blank_at(name, n, false))
    return "begins with a blank";
  if (blank_at(name, n, true))
    return "ends with a blank";
  return NULL;
}
