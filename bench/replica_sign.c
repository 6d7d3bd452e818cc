/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The cost of a forwarded alter's Ed25519 signature (lib/broker/auth/
 * replica_key.c) on one core: the follower signs what a forwarded
 * Envelope's signature covers (dc_replica_sign), the writer checks it
 * (dc_replica_verify, as lib/broker/api/forward_auth.c calls it), for a
 * client request of 200 bytes and one of 64 KiB. Prints, per size, the
 * median of 5 rounds in microseconds of CPU per signature and per check.
 *
 *   bench/replica_sign [SIGNATURES_PER_ROUND]   (default 2000)
 */
#include "broker/auth/replica_key.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5

static double cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median over ROUNDS of the CPU microseconds per signature (verify
 * false) or per check (verify true) of m. */
static double measure(const dc_replica_key_t *k, const dc_replica_msg_t *m,
                      bool verify, long n) {
  double per[ROUNDS];
  uint8_t sig[DC_REPLICA_SIG_LEN];
  if (dc_replica_sign(k, m, sig)) {
    fprintf(stderr, "signing failed\n");
    exit(1);
  }
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = cpu_us();
    for (long i = 0; i < n; i++) {
      bool ok = verify ? dc_replica_verify(dc_replica_key_public(k), m, sig)
                       : dc_replica_sign(k, m, sig) == 0;
      if (!ok) {
        fprintf(stderr, "%s failed\n", verify ? "checking" : "signing");
        exit(1);
      }
    }
    per[r] = (cpu_us() - t0) / (double)n;
  }
  qsort(per, ROUNDS, sizeof(per[0]), cmp);
  return per[ROUNDS / 2];
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000;
  char err[256] = "";
  dc_replica_key_t *k = dc_replica_key_new(err, sizeof(err));
  if (n < 1 || !k) {
    fprintf(stderr, "usage: %s [SIGNATURES_PER_ROUND]%s%s\n", argv[0],
            err[0] ? ": " : "", err);
    return 2;
  }
  static const size_t sizes[] = {200, 64 * 1024};
  static const uint8_t principal[] = "User:alice", host[] = "192.0.2.7";
  uint8_t *req = malloc(sizes[1]);
  if (!req) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < sizes[1]; i++)
    req[i] = (uint8_t)(i * 131 + 7);
  printf("Ed25519 over a forwarded alter (%ld per round, median of %d "
         "rounds, CPU):\n", n, ROUNDS);
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
    dc_replica_msg_t m = {.node = 2,
                          .time_ms = 1796119200000LL,
                          .principal = principal,
                          .principal_len = sizeof(principal) - 1,
                          .host = host,
                          .host_len = sizeof(host) - 1,
                          .request = req,
                          .request_len = sizes[s]};
    double sign = measure(k, &m, false, n), check = measure(k, &m, true, n);
    printf("  request of %6zu bytes: sign %.1f us, check %.1f us\n",
           sizes[s], sign, check);
  }
  free(req);
  dc_replica_key_free(k);
  return 0;
}
