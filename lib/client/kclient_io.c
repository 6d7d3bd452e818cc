/* SPDX-License-Identifier: BSD-2-Clause */
/* Requests and responses on a client connection, its waits and its close,
 * and ApiVersions. */
#include "config.h"
#include "common/clock.h"
#include "common/text.h"
#include "client/kclient_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

void dc_kclient_close(dc_kclient_t *kc) {
  kc->n_inflight = 0; /* their answers went with the connection */
  kc->have_versions = false; /* the next server may speak others */
  kc->session_end_ms = 0;
  dc_tls_conn_destroy(kc->tls);
  kc->tls = NULL;
  if (kc->fd >= 0)
    close(kc->fd);
  kc->fd = -1; /* peer stays: messages about the failure name it */
}

int dc_kclient_wait_fd(const dc_kclient_t *kc, int fd, short events,
                       int64_t deadline) {
  struct pollfd pfd[2] = {{.fd = fd, .events = events},
                          {.fd = kc->cancel_fd, .events = POLLIN}};
  for (;;) {
    int r = poll(pfd, kc->cancel_fd >= 0 ? 2 : 1,
                 dc_kclient_remaining_ms(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r > 0 && kc->cancel_fd >= 0 && pfd[1].revents)
      return -2;
    return r < 0 ? -1 : r;
  }
}

/* One non-blocking attempt to move bytes over the connection, TLS or
 * plaintext: send p[0..n) when writing, else receive into it. Returns the
 * bytes moved (> 0); 0 when the peer closed (receiving); -1 when it would
 * block, with *wait the poll() events to wait for; -2 on a TLS error with
 * errstr set; -3 on a socket error with errno set. */
static ssize_t transport_io(dc_kclient_t *kc, bool writing, uint8_t *p,
                            size_t n, short *wait, char *errstr,
                            size_t errstr_size) {
  if (kc->tls)
    return writing ? dc_tls_write(kc->tls, p, n, wait, errstr, errstr_size)
                   : dc_tls_read(kc->tls, p, n, wait, errstr, errstr_size);
  for (;;) {
    ssize_t k = writing ? send(kc->fd, p, n, MSG_NOSIGNAL)
                        : recv(kc->fd, p, n, 0);
    if (k > 0 || (k == 0 && !writing))
      return k;
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      *wait = writing ? POLLOUT : POLLIN;
      return -1;
    }
    return -3;
  }
}

/* Sends all of p[0..n) (writing) or receives exactly n bytes into p, each
 * wait bounded by deadline. 0, or a dynconf error with errstr set; the
 * caller closes the connection on error. */
static dc_err_t transfer_all(dc_kclient_t *kc, bool writing, uint8_t *p,
                                  size_t n, int64_t deadline, int timeout_ms,
                                  char *errstr, size_t errstr_size) {
  while (n) {
    short ev = 0;
    ssize_t k = transport_io(kc, writing, p, n, &ev, errstr, errstr_size);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k == 0) {
      dc_seterr(errstr, errstr_size, "connection closed by %s", kc->peer);
      return DC_ERR__TRANSPORT;
    }
    if (k == -2)
      return DC_ERR__TRANSPORT;
    int r = k == -1 ? dc_kclient_wait_fd(kc, kc->fd, ev, deadline) : -1;
    if (r > 0)
      continue;
    if (r == -2) {
      dc_seterr(errstr, errstr_size, "request to %s cancelled", kc->peer);
      return DC_ERR__TRANSPORT;
    }
    if (r == 0) {
      dc_seterr(errstr, errstr_size,
                writing ? "cannot send to %s within %d ms"
                        : "no response from %s within %d ms",
                kc->peer, timeout_ms);
      return DC_ERR__TIMED_OUT;
    }
    dc_seterr(errstr, errstr_size,
              writing ? "cannot send to %s: %s" : "cannot read from %s: %s",
              kc->peer, strerror(errno));
    return DC_ERR__TRANSPORT;
  }
  return DC_ERR_NO_ERROR;
}

dc_err_t dc_kclient_send(dc_kclient_t *kc, int16_t api_key,
                         int16_t api_version, dc_kclient_encode_fn *enc,
                         const void *req, int timeout_ms, int32_t *corrp,
                         char *errstr, size_t errstr_size) {
  if (kc->fd < 0) {
    dc_seterr(errstr, errstr_size, "not connected");
    return DC_ERR__TRANSPORT;
  }
  if (kc->n_inflight == DC_KCLIENT_MAX_INFLIGHT) {
    dc_seterr(errstr, errstr_size, "%d requests to %s await their answers "
              "already", DC_KCLIENT_MAX_INFLIGHT, kc->peer);
    return DC_ERR__INVALID_ARG;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int32_t corr = kc->next_corr++;
  if (kc->next_corr < 0) /* wrapped: keep ids positive */
    kc->next_corr = 1;

  dc_buf_clear(&kc->out);
  size_t off = dc_wr_frame_begin(&kc->out);
  dc_req_header_t h = {.api_key = api_key,
                       .api_version = api_version,
                       .correlation_id = corr,
                       .client_id = kc->client_id};
  int e = dc_req_header_encode(&kc->out, &h);
  if (!e)
    e = enc(&kc->out, api_version, req);
  if (!e)
    e = kc->out.err;
  if (e) {
    const dc_api_info_t *ai = dc_api_info(api_key);
    dc_seterr(errstr, errstr_size, "cannot encode %s v%d request: %s",
           ai ? ai->name : "unknown", api_version,
           dc_err_str((dc_err_t)e));
    return (dc_err_t)e;
  }
  dc_wr_frame_end(&kc->out, off);
  dc_err_t err = transfer_all(kc, true, kc->out.data, kc->out.len,
                                   deadline, timeout_ms, errstr, errstr_size);
  if (err) {
    dc_kclient_close(kc);
    return err;
  }
  kc->inflight[kc->n_inflight++] =
      (dc_kclient_inflight_t){corr, api_key, api_version};
  if (corrp)
    *corrp = corr;
  return DC_ERR_NO_ERROR;
}

/* Reads the 4-byte size of the next frame and checks it. */
static dc_err_t receive_size(dc_kclient_t *kc, int64_t deadline,
                             int timeout_ms, int32_t *sizep, char *errstr,
                             size_t errstr_size) {
  uint8_t szb[4];
  dc_err_t err = transfer_all(kc, false, szb, 4, deadline, timeout_ms,
                              errstr, errstr_size);
  if (err)
    return err;
  int32_t size = (int32_t)(((uint32_t)szb[0] << 24) | ((uint32_t)szb[1] << 16) |
                           ((uint32_t)szb[2] << 8) | szb[3]);
  if (!kc->tls && szb[0] == 0x15 && szb[1] == 0x03) {
    /* A TLS alert record: we spoke plaintext to a TLS listener. */
    dc_seterr(errstr, errstr_size,
           "%s answered with a TLS alert: it is a TLS listener (use security "
           "protocol SSL or SASL_SSL)", kc->peer);
    return DC_ERR__BAD_RESPONSE;
  }
  if (size < 4) {
    dc_seterr(errstr, errstr_size,
              "bad response from %s: frame size %d is below 4", kc->peer,
              (int)size);
    return DC_ERR__BAD_RESPONSE;
  }
  if (size > kc->max_frame) {
    dc_seterr(errstr, errstr_size,
              "bad response from %s: a %d-byte frame is over the receive "
              "limit of %d bytes", kc->peer, (int)size, (int)kc->max_frame);
    return DC_ERR__BAD_RESPONSE;
  }
  *sizep = size;
  return DC_ERR_NO_ERROR;
}

/* The next frame into kc->in, then its response header for the oldest
 * request in flight (a Kafka server answers a connection in order). */
static dc_err_t receive_frame(dc_kclient_t *kc, int timeout_ms, dc_rd_t *rd,
                              dc_arena_t *arena, char *errstr,
                              size_t errstr_size) {
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int32_t size = 0;
  dc_err_t err =
      receive_size(kc, deadline, timeout_ms, &size, errstr, errstr_size);
  if (err)
    return err;
  if ((size_t)size > kc->in_cap) {
    uint8_t *p = realloc(kc->in, (size_t)size);
    if (!p) {
      dc_seterr(errstr, errstr_size, "out of memory for a %d-byte response",
             (int)size);
      return DC_ERR__NOMEM;
    }
    kc->in = p;
    kc->in_cap = (size_t)size;
  }
  err = transfer_all(kc, false, kc->in, (size_t)size, deadline, timeout_ms,
                     errstr, errstr_size);
  if (err)
    return err;
  const dc_kclient_inflight_t *want = &kc->inflight[0];
  dc_rd_init(rd, kc->in, (size_t)size, arena);
  int32_t got = 0;
  if (dc_resp_header_decode(rd, want->api_key, want->api_version, &got)) {
    dc_seterr(errstr, errstr_size, "bad response header from %s: %s", kc->peer,
           dc_err_str((dc_err_t)rd->err));
    return DC_ERR__BAD_RESPONSE;
  }
  if (got != want->corr) {
    dc_seterr(errstr, errstr_size,
           "bad response from %s: correlation id %d, expected %d", kc->peer,
           (int)got, (int)want->corr);
    return DC_ERR__BAD_RESPONSE;
  }
  return DC_ERR_NO_ERROR;
}

dc_err_t dc_kclient_receive(dc_kclient_t *kc, int timeout_ms, int32_t *corrp,
                            dc_rd_t *rd, dc_arena_t *arena, char *errstr,
                            size_t errstr_size) {
  if (kc->fd < 0 || kc->n_inflight == 0) {
    dc_seterr(errstr, errstr_size,
              kc->fd < 0 ? "not connected" : "no request awaits an answer");
    return kc->fd < 0 ? DC_ERR__TRANSPORT : DC_ERR__INVALID_ARG;
  }
  dc_err_t err =
      receive_frame(kc, timeout_ms, rd, arena, errstr, errstr_size);
  if (err) {
    dc_kclient_close(kc); /* the stream position is unknown now */
    return err;
  }
  if (corrp)
    *corrp = kc->inflight[0].corr;
  kc->n_inflight--;
  memmove(kc->inflight, kc->inflight + 1,
          kc->n_inflight * sizeof(kc->inflight[0]));
  return DC_ERR_NO_ERROR;
}

size_t dc_kclient_in_flight(const dc_kclient_t *kc) { return kc->n_inflight; }

static bool awaits(const dc_kclient_t *kc) {
  return kc && kc->fd >= 0 && kc->n_inflight;
}

int dc_kclient_wait_any(dc_kclient_t *const *kcs, int n, int timeout_ms) {
  for (int i = 0; i < n; i++)
    if (awaits(kcs[i]) && kcs[i]->tls && dc_tls_pending(kcs[i]->tls))
      return i;
  struct pollfd *pfd = calloc(n > 0 ? (size_t)n : 1, sizeof(*pfd));
  if (!pfd)
    return -1;
  int waiting = 0;
  for (int i = 0; i < n; i++) {
    pfd[i].fd = awaits(kcs[i]) ? kcs[i]->fd : -1; /* -1: poll skips it */
    pfd[i].events = POLLIN;
    waiting += pfd[i].fd >= 0;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  int found = -1;
  while (waiting && found < 0) {
    int r = poll(pfd, (nfds_t)n, dc_kclient_remaining_ms(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    for (int i = 0; i < n && found < 0; i++)
      if (pfd[i].revents)
        found = i;
  }
  free(pfd);
  return found;
}

dc_err_t dc_kclient_request(dc_kclient_t *kc, int16_t api_key,
                                 int16_t api_version, dc_kclient_encode_fn *enc,
                                 const void *req, int timeout_ms,
                                 dc_rd_t *rd, dc_arena_t *arena, char *errstr,
                                 size_t errstr_size) {
  if (kc->n_inflight) {
    dc_seterr(errstr, errstr_size, "%zu earlier requests to %s await their "
              "answers (dc_kclient_receive)", kc->n_inflight, kc->peer);
    return DC_ERR__INVALID_ARG;
  }
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  dc_err_t err = dc_kclient_send(kc, api_key, api_version, enc, req,
                                 timeout_ms, NULL, errstr, errstr_size);
  if (err)
    return err;
  return dc_kclient_receive(kc, dc_kclient_remaining_ms(deadline), NULL, rd,
                            arena, errstr, errstr_size);
}

/* ---- ApiVersions ------------------------------------------------------ */

static int enc_apiversions(dc_buf_t *b, int16_t v, const void *req) {
  return dc_apiversions_req_encode(b, v, req);
}

dc_err_t dc_kclient_api_versions(dc_kclient_t *kc, int timeout_ms,
                                      char *errstr, size_t errstr_size) {
  int64_t deadline = dc_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  dc_apiversions_req_t req = {.client_software_name = kc->sw_name,
                              .client_software_version = kc->sw_version};
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_err_t err = DC_ERR_NO_ERROR;
  dc_apiversions_resp_t resp;
  int16_t v = 3;
  for (;;) {
    dc_rd_t rd;
    err = dc_kclient_request(kc, DC_API_API_VERSIONS, v, enc_apiversions, &req,
                             dc_kclient_remaining_ms(deadline), &rd, &arena,
                             errstr, errstr_size);
    if (err)
      goto out;
    /* The error code leads every version's body, and an
     * UNSUPPORTED_VERSION answer comes in the v0 layout: look first. */
    if (v > 0 && dc_rd_remaining(&rd) >= 2 &&
        ((rd.p[rd.pos] << 8) | rd.p[rd.pos + 1]) == DC_ERR_UNSUPPORTED_VERSION) {
      v = 0;
      continue;
    }
    if (dc_apiversions_resp_decode(&rd, v, &resp)) {
      dc_seterr(errstr, errstr_size, "malformed ApiVersions v%d response from %s: %s",
             v, kc->peer, dc_err_str((dc_err_t)rd.err));
      err = DC_ERR__BAD_RESPONSE;
      goto out;
    }
    break;
  }
  if (resp.error_code) {
    err = (dc_err_t)resp.error_code;
    dc_seterr(errstr, errstr_size, "%s refused ApiVersions v%d: %s", kc->peer, v,
           dc_err_name(err));
    goto out;
  }
  dc_api_range_t *r = NULL;
  if (resp.n_api_keys > 0) {
    r = malloc((size_t)resp.n_api_keys * sizeof(*r));
    if (!r) {
      err = DC_ERR__NOMEM;
      dc_seterr(errstr, errstr_size, "out of memory");
      goto out;
    }
    memcpy(r, resp.api_keys, (size_t)resp.n_api_keys * sizeof(*r));
  }
  free(kc->ranges);
  kc->ranges = r;
  kc->n_ranges = (size_t)resp.n_api_keys;
  kc->have_versions = true;
out:
  dc_arena_free(&arena);
  return err;
}

bool dc_kclient_api_range(const dc_kclient_t *kc, int16_t api_key,
                          int16_t *minp, int16_t *maxp) {
  if (!kc->have_versions)
    return false;
  for (size_t i = 0; i < kc->n_ranges; i++)
    if (kc->ranges[i].api_key == api_key) {
      *minp = kc->ranges[i].min_version;
      *maxp = kc->ranges[i].max_version;
      return true;
    }
  return false;
}

int16_t dc_kclient_pick_version(const dc_kclient_t *kc, int16_t api_key) {
  const dc_api_info_t *ai = dc_api_info(api_key);
  int16_t smin, smax;
  if (!ai || !dc_kclient_api_range(kc, api_key, &smin, &smax))
    return -1;
  int16_t hi = smax < ai->max_version ? smax : ai->max_version;
  int16_t lo = smin > ai->min_version ? smin : ai->min_version;
  return hi >= lo ? hi : -1;
}
