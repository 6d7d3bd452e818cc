/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's listeners as the settings give them: NAME://HOST:PORT and
 * HOST:PORT specs, each listener's security protocol, their names checked
 * before anything opens, and the addresses a replicated store is told.
 */
#include "dynconfd.h"

#include "broker/store/store.h"
#include "common/schema.h"
#include "common/text.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Splits "host:port" or "[v6]:port". */
bool listen_addr_split(const char *s, char *host, size_t hsz, int *port) {
  const char *colon = strrchr(s, ':');
  if (!colon)
    return false;
  const char *h = s;
  size_t hl = (size_t)(colon - s);
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl >= hsz)
    return false;
  memcpy(host, h, hl);
  host[hl] = '\0';
  int64_t p;
  if (!dc_parse_int64(colon + 1, &p) || p < 0 || p > 65535)
    return false;
  *port = (int)p;
  return true;
}

/* "NAME://HOST:PORT" -> name and the address; a bare "HOST:PORT" is a
 * PLAINTEXT listener. */
const char *split_listener(const char *spec, char *name, size_t nsz) {
  const char *sep = strstr(spec, "://");
  if (!sep) {
    snprintf(name, nsz, "PLAINTEXT");
    return spec;
  }
  size_t n = (size_t)(sep - spec);
  if (n == 0 || n >= nsz)
    return NULL;
  memcpy(name, spec, n);
  name[n] = '\0';
  return sep + 3;
}

/* The protocol of listener NAME: from the map, else NAME itself. */
int listener_protocol(const char *map, const char *name) {
  if (map) {
    size_t nl = strlen(name);
    for (const char *p = map; *p;) {
      size_t len = strcspn(p, ",");
      const char *colon = memchr(p, ':', len);
      if (colon && (size_t)(colon - p) == nl && !strncasecmp(p, name, nl)) {
        char proto[32];
        size_t pl = len - nl - 1;
        if (pl >= sizeof(proto))
          return -1;
        memcpy(proto, colon + 1, pl);
        proto[pl] = '\0';
        return dc_sec_protocol_parse(proto);
      }
      p += len;
      p += *p == ',';
    }
  }
  return dc_sec_protocol_parse(name);
}

/* Each listener's name and whether it uses TLS or SASL, before anything
 * opens: a typo is a usage error. */
bool name_listeners(const settings_t *st, reload_ctx_t *rc,
                    bool *any_tls, bool *any_sasl) {
  for (int i = 0; i < st->n_listen; i++) {
    char name[64];
    if (!split_listener(st->listen[i], name, sizeof(name))) {
      fprintf(stderr, "dynconfd: bad listener '%s' (want NAME://HOST:PORT)\n",
              st->listen[i]);
      return false;
    }
    int proto = listener_protocol(st->protocol_map, name);
    if (proto < 0) {
      fprintf(stderr, "dynconfd: listener %s has no security protocol: name it "
                      "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, or map it "
                      "with --listener-security-protocol-map\n", name);
      return false;
    }
    snprintf(rc->names[i], sizeof(rc->names[i]), "%s", name);
    rc->is_tls[i] = proto == DC_SEC_SSL || proto == DC_SEC_SASL_SSL;
    *any_tls |= rc->is_tls[i];
    *any_sasl |= proto == DC_SEC_SASL_PLAINTEXT || proto == DC_SEC_SASL_SSL;
  }
  rc->n = st->n_listen;
  return true;
}

/* Tells a replicated store how clients reach this server: each
 * listener's advertised address, else the address it bound. */
int advertise_to_store(dc_store_t *store, const settings_t *st,
                       char names[][64], char bound[][300],
                       char *errstr, size_t errstr_size) {
  dc_store_listener_t l[MAX_LISTEN];
  char host[MAX_LISTEN][256], name[64];
  for (int i = 0; i < st->n_listen; i++) {
    int port = 0;
    const char *addr = i < st->n_advertise
                           ? split_listener(st->advertise[i], name,
                                            sizeof(name))
                           : bound[i];
    if (!addr || !listen_addr_split(addr, host[i], sizeof(host[i]), &port)) {
      dc_seterr(errstr, errstr_size, "cannot tell the store listener %s's "
               "address", names[i]);
      return -1;
    }
    l[i] = (dc_store_listener_t){names[i], host[i], port};
  }
  return dc_store_advertise(store, l, (size_t)st->n_listen, errstr,
                            errstr_size);
}
