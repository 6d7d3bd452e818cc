/* SPDX-License-Identifier: BSD-2-Clause */
/* Config entity names: the CLIENT and user entity rules and the
 * percent-encoding of type-10 names (see entity.h). */
#include "common/entity.h"
#include "common/text.h"

#include <stdio.h>
#include <string.h>

bool dc_entity_is_default(const char *name) {
  return !strcmp(name, DC_ENTITY_DEFAULT);
}

int dc_entity_client_check(const char *name, char *errstr,
                           size_t errstr_size) {
  size_t n = strlen(name);
  if (n == 0 || n > DC_ENTITY_PART_MAX) {
    dc_seterr(errstr, errstr_size,
              "client-id must be 1 to %d bytes (use %s for the default "
              "entity)",
              DC_ENTITY_PART_MAX, DC_ENTITY_DEFAULT);
    return -1;
  }
  return 0;
}

int dc_entity_user_check(const char *user, const char *client, char *errstr,
                         size_t errstr_size) {
  if (dc_entity_is_default(user)) {
    dc_seterr(errstr, errstr_size,
              "there is no default user entity; use CLIENT '%s' for "
              "defaults every client inherits",
              DC_ENTITY_DEFAULT);
    return -1;
  }
  if (client && dc_entity_is_default(client)) {
    dc_seterr(errstr, errstr_size,
              "'%.300s/%s' is not an entity: the user entity '%.300s' "
              "already applies to all of that user's client-ids",
              user, DC_ENTITY_DEFAULT, user);
    return -1;
  }
  return 0;
}

static bool must_encode(unsigned char c) {
  return c == '%' || c == '/' || c < 0x21 || c > 0x7e;
}

int dc_entity_encode_part(const char *part, char *out, size_t out_size) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(part), len = 0;
  if (out_size)
    out[0] = '\0';
  if (n == 0 || n > DC_ENTITY_PART_MAX)
    return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)part[i];
    size_t need = must_encode(c) ? 3 : 1;
    if (len + need + 1 > out_size) {
      if (out_size)
        out[0] = '\0';
      return -1;
    }
    if (need == 3) {
      out[len++] = '%';
      out[len++] = hex[c >> 4];
      out[len++] = hex[c & 15];
    } else {
      out[len++] = (char)c;
    }
  }
  out[len] = '\0';
  return (int)len;
}

int dc_entity_user_name(const char *user, const char *client, char *out,
                        size_t out_size, char *errstr, size_t errstr_size) {
  const char *parts[2] = {user ? user : "", client};
  const char *what[2] = {"user", "client-id"};
  size_t len = 0;
  for (int i = 0; i < 2; i++) {
    if (i == 1 && (!client || !*client))
      break;
    size_t n = strlen(parts[i]);
    if (n == 0 || n > DC_ENTITY_PART_MAX) {
      dc_seterr(errstr, errstr_size, "%s must be 1 to %d bytes", what[i],
               DC_ENTITY_PART_MAX);
      return -1;
    }
    if (i == 1) {
      if (len + 2 > out_size)
        goto small;
      out[len++] = '/';
    }
    int w = dc_entity_encode_part(parts[i], out + len, out_size - len);
    if (w < 0)
      goto small;
    len += (size_t)w;
  }
  return 0;
small:
  if (out_size)
    out[0] = '\0';
  dc_seterr(errstr, errstr_size, "entity name buffer too small");
  return -1;
}


/* Decodes [p, end) into out (DC_ENTITY_PART_MAX + 1 bytes). */
static int decode_part(const char *p, const char *end, char *out,
                       const char *what, char *errstr, size_t errstr_size) {
  size_t len = 0;
  if (p == end) {
    dc_seterr(errstr, errstr_size, "the %s part of the name is empty", what);
    return -1;
  }
  while (p < end) {
    unsigned char c = (unsigned char)*p++;
    if (c == '%') {
      int hi = p < end ? dc_hexval(p[0]) : -1;
      int lo = p + 1 < end ? dc_hexval(p[1]) : -1;
      if (hi < 0 || lo < 0) {
        dc_seterr(errstr, errstr_size,
                 "bad escape in the %s part: '%%' must be followed by two "
                 "hex digits (write '%%' itself as %%25)",
                 what);
        return -1;
      }
      c = (unsigned char)(hi << 4 | lo);
      if (!c) {
        dc_seterr(errstr, errstr_size, "the %s part contains %%00", what);
        return -1;
      }
      p += 2;
    }
    if (len == DC_ENTITY_PART_MAX) {
      dc_seterr(errstr, errstr_size, "the %s part is longer than %d bytes",
               what, DC_ENTITY_PART_MAX);
      return -1;
    }
    out[len++] = (char)c;
  }
  out[len] = '\0';
  return 0;
}

int dc_entity_user_parse(const char *name, dc_user_entity_t *out,
                         char *errstr, size_t errstr_size) {
  out->user[0] = out->client[0] = '\0';
  const char *slash = strchr(name, '/');
  if (slash && strchr(slash + 1, '/')) {
    dc_seterr(errstr, errstr_size,
             "a user entity name is USER or USER/CLIENT; percent-encode a "
             "'/' inside a part as %%2F");
    return -1;
  }
  const char *uend = slash ? slash : name + strlen(name);
  if (decode_part(name, uend, out->user, "user", errstr, errstr_size))
    return -1;
  if (slash && decode_part(slash + 1, slash + 1 + strlen(slash + 1),
                           out->client, "client-id", errstr, errstr_size))
    return -1;
  return 0;
}

int dc_entity_user_canonical(const char *name, char *out, size_t out_size,
                             char *errstr, size_t errstr_size) {
  dc_user_entity_t ue;
  if (dc_entity_user_parse(name, &ue, errstr, errstr_size))
    return -1;
  return dc_entity_user_name(ue.user, ue.client, out, out_size, errstr,
                             errstr_size);
}
