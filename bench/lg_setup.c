/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/loadgen's connection set-up exchanges (see lg_setup.h).
 */
#include "lg_setup.h"
#include "lg_tls.h"

#include "codec/proto.h"
#include "client/gssapi_client.h"
#include "client/scram_client.h"

#include <openssl/crypto.h>

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define SETUP_MAX_FRAME (1u << 20) /* set-up answers are small */
#define SASL_HS_VERSION 1          /* tokens then travel in SaslAuthenticate */
#define SASL_AUTH_VERSION 1        /* what librdkafka 2.x sends */
#define APIVERSIONS_VERSION 3

/* One connection being set up: its socket, TLS session and scratch. */
typedef struct io {
  int fd;
  SSL *ssl;         /* NULL on plaintext */
  int32_t corr;     /* next correlation id */
  dc_buf_t out, in; /* owned by the caller of io_init, freed by io_free */
  dc_arena_t arena; /* response decoding */
  uint64_t deadline_ns;
  int16_t server_error; /* the error code the server answered, or 0 */
} io_t;

static void io_init(io_t *io, int fd, SSL *ssl, uint64_t deadline_ns) {
  memset(io, 0, sizeof(*io));
  io->fd = fd;
  io->ssl = ssl;
  io->corr = 1;
  io->deadline_ns = deadline_ns;
  dc_buf_init(&io->out);
  dc_buf_init(&io->in);
  dc_arena_init(&io->arena);
}

static void io_free(io_t *io) {
  if (io->out.data) /* may hold a PLAIN password */
    OPENSSL_cleanse(io->out.data, io->out.cap);
  dc_buf_free(&io->out);
  dc_buf_free(&io->in);
  dc_arena_free(&io->arena);
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits for the direction want ('r' or 'w'); 0 ready, -1 otherwise. */
static int io_wait(io_t *io, char want, char *errstr, size_t errstr_size) {
  struct pollfd p = {.fd = io->fd, .events = want == 'r' ? POLLIN : POLLOUT};
  for (;;) {
    uint64_t now = mono_ns();
    if (now >= io->deadline_ns) {
      snprintf(errstr, errstr_size, "timed out waiting for the server");
      return -1;
    }
    uint64_t ms = (io->deadline_ns - now) / 1000000 + 1;
    int r = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
    if (r > 0)
      return 0;
    if (r < 0 && errno != EINTR) {
      snprintf(errstr, errstr_size, "poll: %s", strerror(errno));
      return -1;
    }
  }
}

static const char *io_error(int err) {
  return err == EPROTO ? lg_tls_last_error() : strerror(err);
}

static int io_write_all(io_t *io, char *errstr, size_t errstr_size) {
  size_t off = 0;
  while (off < io->out.len) {
    char want = 'w';
    ssize_t n =
        io->ssl
            ? lg_tls_send(io->ssl, io->out.data + off, io->out.len - off, &want)
            : send(io->fd, io->out.data + off, io->out.len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += (size_t)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (io_wait(io, want, errstr, errstr_size))
        return -1;
    } else {
      snprintf(errstr, errstr_size, "send failed: %s",
               n == 0 ? "connection closed" : io_error(errno));
      return -1;
    }
  }
  return 0;
}

/* Reads exactly n bytes into io->in (appended). */
static int io_read_exact(io_t *io, size_t n, char *errstr, size_t errstr_size) {
  if (dc_buf_reserve(&io->in, n)) {
    snprintf(errstr, errstr_size, "out of memory");
    return -1;
  }
  size_t want_len = io->in.len + n;
  while (io->in.len < want_len) {
    char want = 'r';
    uint8_t *p = io->in.data + io->in.len;
    size_t left = want_len - io->in.len;
    ssize_t got = io->ssl ? lg_tls_recv(io->ssl, p, left, &want)
                          : recv(io->fd, p, left, 0);
    if (got > 0) {
      io->in.len += (size_t)got;
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (io_wait(io, want, errstr, errstr_size))
        return -1;
    } else {
      snprintf(errstr, errstr_size, "%s",
               got == 0 ? "connection closed by the server" : io_error(errno));
      return -1;
    }
  }
  return 0;
}

typedef int (*encode_fn)(dc_buf_t *b, int16_t v, const void *req);

/* One request/response round trip; on success *rd reads the response body
 * (after its header), valid until the next call. */
static int io_rpc(io_t *io, int16_t key, int16_t v, encode_fn enc,
                  const void *req, dc_rd_t *rd, char *errstr,
                  size_t errstr_size) {
  const dc_api_info_t *info = dc_api_info(key);
  const char *name = info ? info->name : "request";
  dc_req_header_t h = {.api_key = key,
                       .api_version = v,
                       .correlation_id = io->corr++,
                       .client_id = (char *)"dynconf-loadgen"};
  dc_buf_clear(&io->out);
  size_t off = dc_wr_frame_begin(&io->out);
  int err = dc_req_header_encode(&io->out, &h);
  if (!err)
    err = enc(&io->out, v, req);
  dc_wr_frame_end(&io->out, off);
  if (err || io->out.err) {
    snprintf(errstr, errstr_size, "cannot encode %s v%d: %s", name, v,
             dc_err_str(err ? err : io->out.err));
    return -1;
  }
  char why[256] = "";
  if (io_write_all(io, why, sizeof(why))) {
    snprintf(errstr, errstr_size, "%s v%d: %s", name, v, why);
    return -1;
  }
  dc_buf_clear(&io->in);
  dc_arena_reset(&io->arena);
  int32_t corr = -1;
  uint32_t size = 0;
  if (io_read_exact(io, 4, why, sizeof(why)) == 0) {
    const uint8_t *p = io->in.data;
    size = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
    if (size < 4 || size > SETUP_MAX_FRAME)
      snprintf(why, sizeof(why), "bad response frame (size %u)", size);
    else if (io_read_exact(io, size, why, sizeof(why)) == 0)
      why[0] = '\0';
  }
  if (why[0]) {
    snprintf(errstr, errstr_size, "%s v%d: %s", name, v, why);
    return -1;
  }
  dc_rd_init(rd, io->in.data + 4, (size_t)size, &io->arena);
  dc_resp_header_decode(rd, key, v, &corr);
  if (rd->err || corr != h.correlation_id) {
    snprintf(errstr, errstr_size, "%s v%d: bad response header", name, v);
    return -1;
  }
  return 0;
}

/* ---- SASL --------------------------------------------------------------- */
static int enc_handshake(dc_buf_t *b, int16_t v, const void *req) {
  return dc_sasl_handshake_req_encode(b, v, req);
}
static int enc_authenticate(dc_buf_t *b, int16_t v, const void *req) {
  return dc_sasl_authenticate_req_encode(b, v, req);
}
static int enc_apiversions(dc_buf_t *b, int16_t v, const void *req) {
  return dc_apiversions_req_encode(b, v, req);
}

int lg_sasl_conf_check(const lg_sasl_conf_t *c, char *errstr,
                       size_t errstr_size) {
  dc_scram_hash_t h;
  if (c->mechanism && !strcmp(c->mechanism, "GSSAPI"))
    return 0;
  if (!c->mechanism || (strcmp(c->mechanism, "PLAIN") &&
                        !dc_scram_hash_from_name(c->mechanism, &h))) {
    snprintf(errstr, errstr_size,
             "SASL mechanism '%s' is not one of PLAIN, "
             "SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI",
             c->mechanism ? c->mechanism : "");
    return -1;
  }
  if (!c->user || !*c->user || !c->password) {
    snprintf(errstr, errstr_size, "SASL needs --sasl-user and --sasl-password");
    return -1;
  }
  return 0;
}

/* One SaslAuthenticate round trip: sends tok; *tok_out and *tok_len get the
 * server's token (in io's arena: valid until the next round trip). */
static int sasl_round(io_t *io, const void *tok, size_t n,
                      const uint8_t **tok_out, size_t *tok_len, char *errstr,
                      size_t errstr_size) {
  dc_sasl_authenticate_req_t req = {.auth_bytes = tok,
                                    .n_auth_bytes = (int32_t)n};
  dc_rd_t rd;
  if (io_rpc(io, DC_API_SASL_AUTHENTICATE, SASL_AUTH_VERSION, enc_authenticate,
             &req, &rd, errstr, errstr_size))
    return -1;
  dc_sasl_authenticate_resp_t resp;
  if (dc_sasl_authenticate_resp_decode(&rd, SASL_AUTH_VERSION, &resp)) {
    snprintf(errstr, errstr_size, "malformed SaslAuthenticate response");
    return -1;
  }
  if (resp.error_code) {
    io->server_error = resp.error_code;
    snprintf(errstr, errstr_size, "SASL authentication failed: %s (%s)",
             resp.error_message ? resp.error_message : "no message",
             dc_err_name((dc_err_t)resp.error_code));
    return -1;
  }
  *tok_out = resp.auth_bytes;
  *tok_len = resp.n_auth_bytes > 0 ? (size_t)resp.n_auth_bytes : 0;
  return 0;
}

static int sasl_plain(io_t *io, const lg_sasl_conf_t *c, char *errstr,
                      size_t errstr_size) {
  /* authzid (empty) NUL user NUL password */
  size_t ul = strlen(c->user), pl = strlen(c->password);
  uint8_t *tok = malloc(ul + pl + 2); /* owned here; wiped */
  if (!tok) {
    snprintf(errstr, errstr_size, "out of memory");
    return -1;
  }
  tok[0] = 0;
  memcpy(tok + 1, c->user, ul);
  tok[1 + ul] = 0;
  memcpy(tok + 2 + ul, c->password, pl);
  const uint8_t *in;
  size_t inl;
  int rc = sasl_round(io, tok, ul + pl + 2, &in, &inl, errstr, errstr_size);
  OPENSSL_cleanse(tok, ul + pl + 2);
  free(tok);
  return rc;
}

/* client-final "c=biws,r=NONCE,p=PROOF" answering server-first with a
 * proof of zeros; malloc'd (caller frees), NULL with why. */
static char *forged_final(dc_scram_hash_t h, const uint8_t *server_first,
                          size_t n, size_t *len, char *why, size_t why_size) {
  size_t nl = 0;
  const char *nonce = dc_scram_attr((const char *)server_first, n, 'r', &nl);
  uint8_t proof[DC_SCRAM_MAX_DIGEST] = {0};
  char *p64 = nonce ? dc_b64_encode(proof, dc_scram_digest_len(h)) : NULL;
  size_t size = nl + (p64 ? strlen(p64) : 0) + 16;
  char *msg = p64 ? malloc(size) : NULL;
  if (msg) {
    int w = snprintf(msg, size, "c=biws,r=%.*s,p=%s", (int)nl, nonce, p64);
    *len = w > 0 ? (size_t)w : 0;
  } else {
    snprintf(why, why_size, "%s", nonce ? "out of memory"
                                        : "server-first has no nonce");
  }
  free(p64);
  return msg;
}

static int sasl_scram(io_t *io, dc_scram_hash_t h, const lg_sasl_conf_t *c,
                      char *errstr, size_t errstr_size) {
  dc_scram_client_t *sc = dc_scram_client_new(h, c->user, c->password, NULL);
  char *msg = NULL; /* owned: the message being sent */
  size_t ml = 0;
  const uint8_t *in;
  size_t inl;
  char why[256];
  int rc = -1;
  if (!sc) {
    snprintf(errstr, errstr_size, "out of memory");
    return -1;
  }
  if (dc_scram_client_first(sc, &msg, &ml, why, sizeof(why)))
    goto client_error;
  if (sasl_round(io, msg, ml, &in, &inl, errstr, errstr_size))
    goto out;
  free(msg);
  msg = NULL;
  if (c->scram_forged_proof) {
    if (!(msg = forged_final(h, in, inl, &ml, why, sizeof(why))))
      goto client_error;
  } else if (dc_scram_client_final(sc, in, inl, &msg, &ml, why,
                                   sizeof(why))) {
    goto client_error;
  }
  if (sasl_round(io, msg, ml, &in, &inl, errstr, errstr_size))
    goto out;
  if (dc_scram_client_verify(sc, in, inl, why, sizeof(why)))
    goto client_error;
  rc = 0;
  goto out;
client_error:
  snprintf(errstr, errstr_size, "SASL %s failed: %s", c->mechanism, why);
out:
  if (msg) {
    OPENSSL_cleanse(msg, ml);
    free(msg);
  }
  dc_scram_client_destroy(sc);
  return rc;
}

int lg_sasl_gssapi_creds(lg_sasl_conf_t *c, char *errstr, size_t errstr_size) {
  c->krb_creds = dc_gssapi_creds_new(c->user, c->password, errstr,
                                     errstr_size);
  return c->krb_creds ? 0 : -1;
}

/* GSSAPI: Cyrus SASL's tokens until it has sent its last one. */
static int sasl_gssapi(io_t *io, const lg_sasl_conf_t *c, char *errstr,
                       size_t errstr_size) {
  char why[600];
  dc_gssapi_client_t *g = dc_gssapi_client_new(
      c->krb_creds, c->krb_service, c->krb_host, why, sizeof(why));
  if (!g) {
    snprintf(errstr, errstr_size, "SASL GSSAPI failed: %s", why);
    return -1;
  }
  const uint8_t *in = NULL;
  size_t inl = 0;
  int rc = -1;
  for (int round = 0; round < 8; round++) {
    const uint8_t *o;
    size_t ol;
    int st = dc_gssapi_client_step(g, in, inl, &o, &ol, why, sizeof(why));
    if (st == DC_GSSAPI_FAILED) {
      snprintf(errstr, errstr_size, "SASL GSSAPI failed: %s", why);
      break;
    }
    if (sasl_round(io, o, ol, &in, &inl, errstr, errstr_size))
      break;
    if (st == DC_GSSAPI_DONE) {
      rc = 0;
      break;
    }
  }
  dc_gssapi_client_destroy(g);
  return rc;
}

int lg_sasl_authenticate(int fd, SSL *ssl, const lg_sasl_conf_t *c,
                         uint64_t deadline_ns, int16_t *server_error,
                         char *errstr, size_t errstr_size) {
  io_t io;
  io_init(&io, fd, ssl, deadline_ns);
  int rc = -1;
  dc_sasl_handshake_req_t req = {.mechanism = (char *)c->mechanism};
  dc_sasl_handshake_resp_t resp;
  dc_rd_t rd;
  if (io_rpc(&io, DC_API_SASL_HANDSHAKE, SASL_HS_VERSION, enc_handshake, &req,
             &rd, errstr, errstr_size))
    goto out;
  if (dc_sasl_handshake_resp_decode(&rd, SASL_HS_VERSION, &resp)) {
    snprintf(errstr, errstr_size, "malformed SaslHandshake response");
    goto out;
  }
  if (resp.error_code) {
    io.server_error = resp.error_code;
    snprintf(errstr, errstr_size, "SaslHandshake for %s failed: %s%s",
             c->mechanism, dc_err_name((dc_err_t)resp.error_code),
             resp.error_code == DC_ERR_ILLEGAL_SASL_STATE
                 ? " (is it a SASL listener?)"
                 : "");
    goto out;
  }
  dc_scram_hash_t h;
  if (dc_scram_hash_from_name(c->mechanism, &h))
    rc = sasl_scram(&io, h, c, errstr, errstr_size);
  else if (!strcmp(c->mechanism, "GSSAPI"))
    rc = sasl_gssapi(&io, c, errstr, errstr_size);
  else
    rc = sasl_plain(&io, c, errstr, errstr_size);
out:
  if (server_error)
    *server_error = io.server_error;
  io_free(&io);
  return rc;
}

int lg_apiversions(int fd, SSL *ssl, uint64_t deadline_ns, char *errstr,
                   size_t errstr_size) {
  io_t io;
  io_init(&io, fd, ssl, deadline_ns);
  int rc = -1;
  dc_apiversions_req_t req = {.client_software_name = (char *)"dynconf-loadgen",
                              .client_software_version = (char *)"1"};
  dc_apiversions_resp_t resp;
  dc_rd_t rd;
  if (io_rpc(&io, DC_API_API_VERSIONS, APIVERSIONS_VERSION, enc_apiversions,
             &req, &rd, errstr, errstr_size))
    goto out;
  if (dc_apiversions_resp_decode(&rd, APIVERSIONS_VERSION, &resp) ||
      resp.error_code) {
    snprintf(errstr, errstr_size, "ApiVersions v%d failed: %s",
             APIVERSIONS_VERSION,
             resp.error_code ? dc_err_name((dc_err_t)resp.error_code)
                             : "malformed response");
    goto out;
  }
  for (int32_t i = 0; i < resp.n_api_keys; i++)
    if (resp.api_keys[i].api_key == DC_API_DESCRIBE_CONFIGS)
      rc = 0;
  if (rc)
    snprintf(errstr, errstr_size, "ApiVersions does not list DescribeConfigs");
out:
  io_free(&io);
  return rc;
}
