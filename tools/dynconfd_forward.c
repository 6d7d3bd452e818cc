/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynconfd's forwarding plan, decided before anything opens. With the
 * Kafka store, alters reaching this server while another writes are
 * forwarded to the writer's listener of the same name as
 * --forward-listener (default: the first one the forward connection can
 * speak). --forward-config, Kafka client properties, sets that
 * connection's security: this replica's credentials for a SASL listener.
 * Over TLS the replica's own --ssl-ca, --ssl-cert and --ssl-key serve
 * where the file names none.
 */
#include "dynconfd.h"

#include "common/log.h"

#include <stdio.h>
#include <string.h>

static bool is_sasl(int proto) {
  return proto == DC_SEC_SASL_PLAINTEXT || proto == DC_SEC_SASL_SSL;
}

/* Can a forward connection set up by fc (NULL: none) speak proto? The
 * file's security.protocol if it gives one; else a file with a SASL
 * mechanism speaks SASL, and no file or one without speaks PLAINTEXT or
 * SSL. */
static bool forward_speaks(const dc_client_props_t *fc, int proto) {
  if (fc && fc->sec.protocol)
    return dc_sec_protocol_parse(fc->sec.protocol) == proto;
  return is_sasl(proto) == (fc && fc->sec.sasl_mechanism);
}

/* Why --forward-listener's listener (of protocol proto) cannot be used
 * with fc; a usage error, said. */
static void say_unspoken(const settings_t *st, int proto,
                         const dc_client_props_t *fc) {
  const char *pname = dc_sec_protocol_name((dc_sec_protocol_t)proto);
  if (fc && fc->sec.protocol)
    fprintf(stderr, "dynconfd: --forward-listener %s is a %s listener but "
            "--forward-config %s says security.protocol=%s\n",
            st->forward_listener, pname, st->forward_config,
            fc->sec.protocol);
  else if (is_sasl(proto))
    fprintf(stderr, "dynconfd: --forward-listener %s is a %s listener: "
            "forwarding over it authenticates as this replica, which needs "
            "its credentials in --forward-config FILE (sasl.mechanism and "
            "its sasl.username/sasl.password, keytab or token file)\n",
            st->forward_listener, pname);
  else
    fprintf(stderr, "dynconfd: --forward-listener %s is a %s listener but "
            "--forward-config %s has SASL credentials (set "
            "security.protocol=%s there to forward over it anyway)\n",
            st->forward_listener, pname, st->forward_config, pname);
}

/* The listener to forward over and its protocol, or -1 with *why set:
 * 'n' no listener of that name, 'p' it cannot be spoken, 0 none can. */
static int pick_forward_listener(const settings_t *st, const reload_ctx_t *rc,
                                 const dc_client_props_t *fc, int *proto,
                                 char *why) {
  for (int i = 0; i < rc->n; i++) {
    int p = listener_protocol(st->protocol_map, rc->names[i]);
    bool named = st->forward_listener &&
                 !strcmp(st->forward_listener, rc->names[i]);
    if (named && !forward_speaks(fc, p)) {
      *proto = p;
      *why = 'p';
      return -1;
    }
    if (named || (!st->forward_listener && forward_speaks(fc, p))) {
      *proto = p;
      return i;
    }
  }
  *why = st->forward_listener ? 'n' : 0;
  return -1;
}

/* The forward connection's security for a listener of protocol proto:
 * the file's, with this server's own TLS material where it names none. */
static void forward_security(const settings_t *st, const dc_client_props_t *fc,
                             int proto, dc_kclient_security_t *sec) {
  *sec = fc ? fc->sec : (dc_kclient_security_t){0};
  sec->protocol = dc_sec_protocol_name((dc_sec_protocol_t)proto);
  if (proto != DC_SEC_SSL && proto != DC_SEC_SASL_SSL)
    return;
  if (!sec->ssl_ca && !sec->ssl_ca_pem)
    sec->ssl_ca = st->ssl_ca;
  if (!sec->ssl_cert && !sec->ssl_cert_pem && !sec->ssl_keystore) {
    sec->ssl_cert = st->ssl_cert;
    sec->ssl_key = st->ssl_key;
  }
  /* Replicas reach each other at advertised addresses, often IPs. */
  if (!fc || !fc->hostname_check_given)
    sec->ssl_no_hostname_check = true;
}

/* --forward-config into *fc, checked as the forwarder will use it: 0, or
 * -1 after a usage error naming the option. */
static int load_forward_config(const settings_t *st, dc_client_props_t *fc) {
  char err[1600];
  if (dc_client_props_load(fc, st->forward_config, err, sizeof(err))) {
    fprintf(stderr, "dynconfd: --forward-config: %s\n", err);
    return -1;
  }
  if (fc->sec.protocol && dc_sec_protocol_parse(fc->sec.protocol) < 0) {
    fprintf(stderr, "dynconfd: --forward-config %s: unknown "
            "security.protocol '%s' (PLAINTEXT, SSL, SASL_PLAINTEXT or "
            "SASL_SSL)\n", st->forward_config, fc->sec.protocol);
    return -1;
  }
  return 0;
}

/* What the forwarder will be given, tried now so that a file it cannot
 * use (a missing CA, a mechanism without its password) is a usage error
 * naming the option. 0, or -1 said. */
static int check_forward_security(const settings_t *st,
                                  const dc_kclient_security_t *sec) {
  char err[512];
  dc_kclient_t *kc = dc_kclient_new(NULL);
  int rc = kc ? dc_kclient_set_security(kc, sec, err, sizeof(err)) : 0;
  dc_kclient_destroy(kc);
  if (rc)
    fprintf(stderr, "dynconfd: --forward-config %s: %s\n",
            st->forward_config, err);
  return rc ? -1 : 0;
}

/* No listener to forward over: a usage error when one was asked for
 * (said), else only a warning. Non-zero for the usage error. */
static int no_forward_listener(const settings_t *st,
                               const dc_client_props_t *use, int proto,
                               char why) {
  if (why == 'p')
    say_unspoken(st, proto, use);
  else if (why == 'n')
    fprintf(stderr, "dynconfd: --forward-listener %s: no listener has that "
            "name\n", st->forward_listener);
  else if (use)
    fprintf(stderr, "dynconfd: --forward-config %s: no listener has a "
            "protocol it speaks (%s)\n", st->forward_config,
            use->sec.protocol ? use->sec.protocol
            : use->sec.sasl_mechanism ? "SASL_PLAINTEXT or SASL_SSL"
                                      : "PLAINTEXT or SSL");
  else
    dc_log(DC_LOG_WARN, "no PLAINTEXT or SSL listener: alters reaching "
           "this replica while another writes are refused, not forwarded "
           "(to forward over a SASL listener, give this replica's "
           "credentials with --forward-config FILE)");
  return why || use;
}

/* Fills fp from the settings. Non-zero: a usage error, printed. */
int forwarding(const settings_t *st, const reload_ctx_t *rc,
               forward_plan_t *fp) {
  if (!st->store || strcmp(st->store, "kafka") || st->store_read_only)
    return 0;
  if (st->forward_config && load_forward_config(st, &fp->props))
    return -1;
  const dc_client_props_t *use = st->forward_config ? &fp->props : NULL;
  int proto = -1;
  char why = 0;
  int pick = pick_forward_listener(st, rc, use, &proto, &why);
  if (pick < 0)
    return no_forward_listener(st, use, proto, why);
  fp->listener = rc->names[pick];
  if (use || rc->is_tls[pick]) {
    forward_security(st, use, proto, &fp->sec);
    fp->security = &fp->sec;
  }
  return use ? check_forward_security(st, &fp->sec) : 0;
}

/* The plan into the broker's options. */
void apply_forwarding(const settings_t *st, const forward_plan_t *fp,
                      dc_broker_opts_t *bo) {
  if (!fp->listener)
    return;
  bo->forward = true;
  bo->forward_listener = fp->listener;
  bo->forward_timeout_ms = (int)(2 * st->store_timeout_ms + 2000);
  bo->forward_security = fp->security;
}

