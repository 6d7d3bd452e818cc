/* SPDX-License-Identifier: BSD-2-Clause */
#include "common/gsserr.h"

#include <gssapi/gssapi.h>

#include <stdio.h>

void dc_gss_words(uint32_t major, uint32_t minor, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  OM_uint32 codes[2] = {major, minor};
  int types[2] = {GSS_C_GSS_CODE, GSS_C_MECH_CODE};
  for (int i = 0; i < 2 && n + 1 < size; i++) {
    OM_uint32 more = 0, min;
    do {
      gss_buffer_desc msg = GSS_C_EMPTY_BUFFER;
      if (GSS_ERROR(gss_display_status(&min, codes[i], types[i],
                                       GSS_C_NO_OID, &more, &msg)))
        break;
      if (msg.length && (i == 0 || codes[1]))
        n += (size_t)snprintf(buf + n, size - n, "%s%.*s", n ? ": " : "",
                              (int)msg.length, (const char *)msg.value);
      gss_release_buffer(&min, &msg);
    } while (more && n + 1 < size);
  }
}
