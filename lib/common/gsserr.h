/* SPDX-License-Identifier: BSD-2-Clause */
/* The GSS-API's own words for its status codes. Any thread. */
#ifndef DC_GSSERR_H
#define DC_GSSERR_H
#include <stddef.h>
#include <stdint.h>

/* "major words: minor words" for a (major, minor) status pair, into buf
 * (cut to size). The minor code must come from this process: MIT maps
 * mechanism codes per process. */
void dc_gss_words(uint32_t major, uint32_t minor, char *buf, size_t size);
#endif
