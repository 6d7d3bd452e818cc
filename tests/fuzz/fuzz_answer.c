/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the agent's reading of a DescribeConfigs answer
 * (lib/agent/answer.c), what a hostile or broken config server controls.
 *
 * Input: one byte choosing the answer, then the response body as it
 * follows the response header: below 0x80 a DescribeConfigs answer of
 * version 1 + byte % 4; from 0x80 a Watch v0 answer to a watch on known
 * version byte - 0x81 (-1 for 0x80). Oracles beyond the sanitizers: an
 * accepted answer is a set the resolver may trust (at most
 * DC_AGENT_MAX_ENTRIES entries, sorted by key, each key once, every key
 * and value present, every source one the agent applies); a refused one
 * carries a sentence. A Watch answer taken as "changed" never carries the
 * version watched, nor "unchanged" another one.
 *
 * Seed mode: with DC_FUZZ_WRITE_SEEDS=DIR set, writes valid answers of
 * every version (and a few hostile shapes) into DIR and exits.
 */
#include "agent/agent_int.h"
#include "codec/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CLIENT "fuzz-client"

_Noreturn static void oracle_fail(const char *what) {
  fprintf(stderr, "fuzz_answer oracle: %s\n", what);
  abort();
}

static void check_set(const dc_fetched_set_t *s) {
  if (s->n > DC_AGENT_MAX_ENTRIES)
    oracle_fail("more entries than DC_AGENT_MAX_ENTRIES accepted");
  for (size_t i = 0; i < s->n; i++) {
    dynconf_source_t src = s->v[i].source;
    if (!s->v[i].key || !s->v[i].value)
      oracle_fail("an accepted entry without key or value");
    if (src != DYNCONF_SOURCE_CLIENT && src != DYNCONF_SOURCE_DEFAULT &&
        src != DYNCONF_SOURCE_USER && src != DYNCONF_SOURCE_USER_CLIENT)
      oracle_fail("an accepted entry with a source the agent does not apply");
    if (i && strcmp(s->v[i - 1].key, s->v[i].key) >= 0)
      oracle_fail("accepted entries not sorted and unique");
  }
}

static void one_watch_answer(const uint8_t *data, size_t size) {
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_rd_init(&rd, data + 1, size - 1, &arena);
  /* The first byte: the version asked with (low bit), the version known. */
  int64_t known = (int64_t)(data[0] >> 1) - 0x41;
  dc_watch_ask_t ask = {.v = data[0] & 1, .known = known,
                        .min_position = 5, .version = -2};
  dc_fetched_set_t set;
  dynconf_err_t err = DYNCONF_ERR_NO_ERROR;
  bool undecodable;
  char errstr[512] = "";
  dc_watch_res_t r = dc_agent_watch_answer_read(
      &rd, "fuzz:9092", &ask, &set, &err, &undecodable, errstr, sizeof(errstr));
  int64_t version = ask.version;
  if ((r == WATCH_CHANGED || r == WATCH_UNCHANGED) && ask.position >= 0 &&
      ask.position < ask.min_position)
    oracle_fail("a Watch answer from a store position older than one seen");
  if (r == WATCH_CHANGED) {
    check_set(&set);
    if (version == known)
      oracle_fail("a Watch answer \"changed\" to the version watched");
  } else if (r == WATCH_UNCHANGED) {
    if (version != known || set.n)
      oracle_fail("a Watch answer \"unchanged\" with another version or "
                  "entries");
  } else if (!errstr[0] || err == DYNCONF_ERR_NO_ERROR) {
    oracle_fail("a refused Watch answer without an error and a sentence");
  }
  dc_fetched_set_free(&set);
  dc_arena_free(&arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (data[0] >= 0x80) {
    one_watch_answer(data, size);
    return 0;
  }
  dc_arena_t arena;
  dc_arena_init(&arena);
  dc_rd_t rd;
  dc_rd_init(&rd, data + 1, size - 1, &arena);
  dc_agent_answer_t want = {.version = (int16_t)(1 + data[0] % 4),
                            .resource_type = 9,
                            .resource_name = CLIENT,
                            .peer = "fuzz:9092"};
  dc_fetched_set_t set;
  dynconf_err_t err = DYNCONF_ERR_NO_ERROR;
  bool undecodable;
  char errstr[512] = "";
  dc_fetch_res_t r = dc_agent_answer_read(&rd, &want, &set, &err,
                                          &undecodable, errstr,
                                          sizeof(errstr));
  if (r == FETCH_OK)
    check_set(&set);
  else if (!errstr[0] || err == DYNCONF_ERR_NO_ERROR)
    oracle_fail("a refused answer without an error and a sentence");
  dc_fetched_set_free(&set);
  dc_arena_free(&arena);
  return 0;
}

/* ---- seeds ----------------------------------------------------------------- */

static void write_seed(const char *dir, const char *tag, int16_t v,
                       const dc_buf_t *b) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s-v%d", dir, tag, v);
  FILE *f = fopen(path, "wb");
  if (!f)
    return;
  uint8_t vb = (uint8_t)(v - 1);
  fwrite(&vb, 1, 1, f);
  fwrite(b->data, 1, b->len, f);
  fclose(f);
}

/* Watch v0 answers: changed (to a watch on -1), unchanged (on version 5),
 * refused. The first byte is the watch's known version + 0x81. */
static void write_watch_seeds(const char *dir) {
  static dc_watch_entry_t cfg[] = {{"acks", "1", 7},
                                   {"session.timeout.ms", "30000", 8}};
  static const struct {
    const char *tag;
    uint8_t known;
    dc_watch_resp_t resp;
  } seeds[] = {
      {"watch-changed", 0x80, {.changed = true, .version = 5, .n_configs = 2,
                               .configs = cfg}},
      {"watch-unchanged", 0x86, {.version = 5}},
      {"watch-refused", 0x80, {.error_code = 29, .error_message = "denied"}}};
  for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
    dc_buf_t b;
    dc_buf_init(&b);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].tag);
    FILE *f = NULL;
    if (!dc_watch_resp_encode(&b, 0, &seeds[i].resp) &&
        (f = fopen(path, "wb"))) {
      fwrite(&seeds[i].known, 1, 1, f);
      fwrite(b.data, 1, b.len, f);
      fclose(f);
    }
    dc_buf_free(&b);
  }
}

static void write_seeds(const char *dir) {
  mkdir(dir, 0700);
  static dc_describe_configs_entry_t good[] = {
      {.name = "acks", .value = "1", .config_source = 7},
      {.name = "session.timeout.ms", .value = "30000", .config_source = 8},
      {.name = "linger.ms", .value = "5", .config_source = 9},
      {.name = "heartbeat.interval.ms", .value = "3000", .config_source = 10},
      {.name = "listeners", .value = "PLAINTEXT://x:1", .config_source = 4}};
  static dc_describe_configs_entry_t dup[] = {
      {.name = "acks", .value = "1", .config_source = 7},
      {.name = "acks", .value = "0", .config_source = 8}};
  dc_describe_configs_result_t res = {.resource_type = 9,
                                      .resource_name = CLIENT,
                                      .n_configs = 5, .configs = good};
  dc_describe_configs_resp_t resp = {.n_results = 1, .results = &res};
  for (int16_t v = 1; v <= 4; v++) {
    dc_buf_t b;
    dc_buf_init(&b);
    res.configs = good, res.n_configs = 5, res.error_code = 0;
    if (!dc_describe_configs_resp_encode(&b, v, &resp))
      write_seed(dir, "good", v, &b);
    dc_buf_clear(&b);
    res.configs = dup, res.n_configs = 2;
    if (!dc_describe_configs_resp_encode(&b, v, &resp))
      write_seed(dir, "dup", v, &b);
    dc_buf_clear(&b);
    res.n_configs = 0, res.error_code = 42;
    res.error_message = "unknown resource type";
    if (!dc_describe_configs_resp_encode(&b, v, &resp))
      write_seed(dir, "invalid-request", v, &b);
    res.error_message = NULL;
    dc_buf_free(&b);
  }
  write_watch_seeds(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *dir = getenv("DC_FUZZ_WRITE_SEEDS");
  if (dir) {
    write_seeds(dir);
    exit(0);
  }
  return 0;
}
