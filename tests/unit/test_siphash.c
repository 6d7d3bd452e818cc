/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lib/common/siphash.c:
 *   - SipHash-2-4 gives the reference implementation's 64 test vectors
 *     (key 00..0f, messages 00, 00 01, ... of 0 to 63 bytes);
 *   - dc_hash_str is SipHash-2-4 of the tag byte and the string under the
 *     process key, which is not all zero and the same on every call;
 *   - the process key is random: each process makes its own.
 */
#include "common/siphash.h"
#include "../tap.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const uint64_t vectors[64] = {
    0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull,
    0x85676696d7fb7e2dull, 0xcf2794e0277187b7ull, 0x18765564cd99a68dull,
    0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull, 0x93f5f5799a932462ull,
    0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
    0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull,
    0xa129ca6149be45e5ull, 0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull,
    0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull, 0xbed65cf21aa2ee98ull,
    0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
    0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull,
    0x2f2e6163076bcfadull, 0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull,
    0xad87a3535c49ef28ull, 0x32d892fad841c342ull, 0x7127512f72f27cceull,
    0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
    0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull,
    0x9abfd8766a33735cull, 0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull,
    0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull, 0xf935451de4f21df2ull,
    0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
    0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull,
    0xa192d576b245165aull, 0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full,
    0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull, 0xb78dbfaf3a8d83bdull,
    0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
    0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull,
    0x958a324ceb064572ull};

static void test_vectors(void) {
  uint8_t key[16], msg[64];
  for (int i = 0; i < 16; i++)
    key[i] = (uint8_t)i;
  for (int i = 0; i < 64; i++)
    msg[i] = (uint8_t)i;
  int bad = 0;
  for (size_t n = 0; n < 64; n++) {
    uint64_t h = dc_siphash24(key, msg, n);
    if (h != vectors[n] && bad++ < 3)
      diag("  %zu bytes: %016llx, want %016llx", n, (unsigned long long)h,
           (unsigned long long)vectors[n]);
  }
  is_int(bad, 0, "SipHash-2-4: the 64 reference vectors");
}

static void test_keyed_str(void) {
  const uint8_t *k = dc_hash_key();
  static const uint8_t zero[16];
  ok(memcmp(k, zero, 16) != 0, "the process key is set (not all zero)");
  ok(dc_hash_key() == k, "  and made once");
  uint8_t msg[32] = {9};
  memcpy(msg + 1, "client-7", 8);
  ok(dc_hash_str(9, "client-7") == dc_siphash24(k, msg, 9),
     "dc_hash_str: the tag byte, then the string, under the process key");
  /* Every length from 0 to 40, so each position of the string's end in a
   * word is met after the tag byte. */
  char str[41];
  uint8_t tagged[42];
  int bad = 0;
  for (int n = 0; n <= 40; n++) {
    for (int i = 0; i < n; i++)
      str[i] = (char)('a' + (i * 7 + n) % 26);
    str[n] = '\0';
    tagged[0] = 3;
    memcpy(tagged + 1, str, (size_t)n);
    bad += dc_hash_str(3, str) != dc_siphash24(k, tagged, (size_t)n + 1);
  }
  is_int(bad, 0, "  strings of 0 to 40 bytes after the tag");
  ok(dc_hash_str(9, "client-7") != dc_hash_str(10, "client-7"),
     "  another tag, another hash");
}

/* The key another run of this program prints, into hex[33]. */
static bool key_of_new_process(char *hex) {
  char self[4096], cmd[4200];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return false;
  self[n] = '\0';
  snprintf(cmd, sizeof(cmd), "'%s' --print-key", self);
  FILE *f = popen(cmd, "r");
  bool got = f && fgets(hex, 33, f) && strlen(hex) == 32;
  if (f)
    pclose(f);
  return got;
}

static void test_random_key(void) {
  char a[40] = "", b[40] = "", ours[40];
  for (int i = 0; i < 16; i++)
    snprintf(ours + 2 * i, 3, "%02x", dc_hash_key()[i]);
  fflush(stdout);
  bool got = key_of_new_process(a) && key_of_new_process(b);
  ok(got && strcmp(a, b) && strcmp(a, ours) && strcmp(b, ours),
     "three processes, three keys (%s, %s)", a, b);
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--print-key")) {
    const uint8_t *k = dc_hash_key();
    for (int i = 0; i < 16; i++)
      printf("%02x", k[i]);
    printf("\n");
    return 0;
  }
  test_vectors();
  test_keyed_str();
  test_random_key();
  return done_testing();
}
