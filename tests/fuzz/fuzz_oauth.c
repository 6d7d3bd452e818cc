/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: dynconfd's OAUTHBEARER exchange (lib/broker/
 * sasl_oauthbearer.c and the token checks of lib/broker/auth/jwt.c), what any
 * client that reaches a SASL listener controls.
 *
 * Input: one byte of flags (bit 0: unsigned tokens allowed; bit 1: an
 * issuer and an audience are required), then the client-first message.
 * A refused message is followed by the client's %x01, as librdkafka sends
 * it. Oracles beyond the sanitizers: DONE only for a message carrying an
 * unsigned token while those are allowed (no key set is loaded, so no
 * signed token can pass), with a principal of 1..255 bytes; every
 * failure carries a sentence.
 *
 * Seed mode: with DC_FUZZ_WRITE_SEEDS=DIR set, writes a good message and a
 * few refused ones into DIR and exits.
 */
#include "broker/auth/sasl_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

_Noreturn static void oracle_fail(const char *what) {
  fprintf(stderr, "fuzz_oauth oracle: %s\n", what);
  abort();
}

/* {"alg":"none"} . {"sub":"alice","exp":4000000000,"iss":"i","aud":"a"} . */
#define TOKEN                                                                  \
  "eyJhbGciOiJub25lIn0."                                                       \
  "eyJzdWIiOiJhbGljZSIsImV4cCI6NDAwMDAwMDAwMCwiaXNzIjoiaSIsImF1ZCI6ImEifQ."

static void write_seed(const char *dir, const char *name, uint8_t flags,
                       const char *msg) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  fputc(flags, f);
  fwrite(msg, 1, strlen(msg), f);
  fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *dir = getenv("DC_FUZZ_WRITE_SEEDS");
  if (!dir)
    return 0;
  mkdir(dir, 0755);
  write_seed(dir, "good", 1, "n,,\001auth=Bearer " TOKEN "\001\001");
  write_seed(dir, "good-checked", 3,
             "n,a=alice,\001x=y\001auth=Bearer " TOKEN "\001\001");
  write_seed(dir, "unsigned-refused", 0, "n,,\001auth=Bearer " TOKEN "\001\001");
  write_seed(dir, "no-auth", 1, "n,,\001\001");
  exit(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  dc_jwt_policy_t p = {.allow_unsecured = data[0] & 1,
                       .issuer = data[0] & 2 ? "i" : NULL,
                       .audience = data[0] & 2 ? "a" : NULL,
                       .clock_skew_s = 30,
                       .now_s = 1800000000};
  dc_sasl_server_t *s = dc_sasl_server_new("OAUTHBEARER");
  if (!s)
    oracle_fail("no exchange");
  uint8_t *out = NULL;
  size_t outlen = 0;
  char err[512] = "";
  dc_sasl_server_set_oauth(s, &p);
  int rc = dc_sasl_server_step(s, NULL, data + 1, size - 1, &out, &outlen,
                               err, sizeof(err));
  free(out);
  if (rc == DC_SASL_DONE) {
    const char *user = dc_sasl_server_user(s);
    if (!p.allow_unsecured)
      oracle_fail("a token passed with no key and no unsigned tokens");
    if (!user || !*user || strlen(user) > 255)
      oracle_fail("DONE without a principal of 1..255 bytes");
  } else if (rc == DC_SASL_CONTINUE) {
    dc_sasl_server_set_oauth(s, &p);
    rc = dc_sasl_server_step(s, NULL, (const uint8_t *)"\001", 1, &out,
                             &outlen, err, sizeof(err));
    free(out);
    if (rc != DC_SASL_FAILED)
      oracle_fail("a refused token did not end in FAILED");
  }
  if (rc == DC_SASL_FAILED && !err[0])
    oracle_fail("a failure without a sentence");
  dc_sasl_server_destroy(s);
  return 0;
}
