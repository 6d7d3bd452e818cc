/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON output helpers. */
#ifndef DC_JSON_H
#define DC_JSON_H
#include "buf.h"

/* Appends s as a JSON string literal; NULL gives null. Invalid UTF-8 bytes
 * become U+FFFD so the output always parses. */
void dc_json_str(dc_buf_t *b, const char *s);
#endif
