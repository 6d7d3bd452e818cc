/*
 * The client config schema: one table, used by dynconfd to validate what
 * operators set and by the agent to validate what it applies (SPEC §3).
 */
#ifndef DC_SCHEMA_H
#define DC_SCHEMA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Wire config_type values (DescribeConfigs v3+). */
typedef enum {
  DC_TYPE_BOOLEAN = 1,
  DC_TYPE_STRING = 2,
  DC_TYPE_INT = 3,
  DC_TYPE_LONG = 5,
  DC_TYPE_DOUBLE = 6,
  DC_TYPE_LIST = 7,
} dc_config_type_t;

/* Which client kind a key concerns. */
enum { DC_APPLIES_PRODUCER = 1, DC_APPLIES_CONSUMER = 2 };

typedef struct dc_schema_entry {
  const char *name;
  dc_config_type_t type;
  int64_t min, max;               /* INT/LONG/DOUBLE bounds, inclusive */
  const char *const *allowed;     /* enum values (STRING) or list items
                                     (LIST); NULL-terminated; NULL = any */
  int applies;                    /* DC_APPLIES_* bits */
  bool default_allowed;           /* in the agent's default allow list */
  const char *doc;
} dc_schema_entry_t;

/* NULL when the key is not in the schema. */
const dc_schema_entry_t *dc_schema_find(const char *name);
/* The whole table; *np gets the count. */
const dc_schema_entry_t *dc_schema_all(size_t *np);

/* Checks one value against its entry: type, range, allowed values.
 * Returns true when valid; otherwise false with a sentence in errstr. */
bool dc_schema_validate(const dc_schema_entry_t *e, const char *value,
                        char *errstr, size_t errstr_size);

/* Parses a decimal integer in [min,max]; false if not a whole number. */
bool dc_parse_int64(const char *s, int64_t *out);
#endif
