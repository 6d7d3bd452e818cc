/* SPDX-License-Identifier: BSD-2-Clause */
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

/* Longest config key dynconfd stores. */
#define DC_CONFIG_NAME_MAX 255
/* Longest value of a key outside the schema (relayed with
 * --allow-unknown-keys), and the ceiling of every per-type bound below.
 * All of them stay far below 32,767, the longest string a non-flexible
 * (int16-length) field can carry, so no stored value ever needs truncating
 * on the wire. */
#define DC_CONFIG_VALUE_MAX 4096
/* Per-type bounds on a value's text, checked before anything else. */
#define DC_INT_VALUE_MAX 20     /* "-9223372036854775808" */
#define DC_DOUBLE_VALUE_MAX 32  /* decimal text, no exponent */
#define DC_BOOL_VALUE_MAX 5     /* "false" */
#define DC_STRING_VALUE_MAX 1024 /* STRING without allowed values */
#define DC_LIST_ITEMS_MAX 64    /* items in a LIST */
#define DC_LIST_ITEM_MAX 64     /* bytes in one LIST item */

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

/* Longest value text e accepts, in bytes: DC_INT_VALUE_MAX (INT, LONG),
 * DC_DOUBLE_VALUE_MAX, DC_BOOL_VALUE_MAX, the longest allowed value (STRING
 * with allowed values) or DC_STRING_VALUE_MAX, and for a LIST
 * DC_LIST_ITEMS_MAX items of its longest allowed item (or DC_LIST_ITEM_MAX)
 * with commas, capped at DC_CONFIG_VALUE_MAX. e == NULL (a key outside the
 * schema) gives DC_CONFIG_VALUE_MAX. */
size_t dc_schema_value_max(const dc_schema_entry_t *e);

/* Checks one value against its entry: length first (dc_schema_value_max),
 * then the canonical text of its type, range and allowed values:
 *  INT, LONG: as dc_parse_int64();
 *  DOUBLE: [-](0|[1-9][0-9]*)(.[0-9]+)?, no exponent, inf, nan or hex,
 *          and no negative zero;
 *  BOOLEAN: "true" or "false";
 *  STRING: one of the allowed values, if any;
 *  LIST: comma-separated, no empty item, at most DC_LIST_ITEMS_MAX items of
 *        at most DC_LIST_ITEM_MAX bytes, each allowed (if a list is given).
 * e == NULL (a key outside the schema) checks only DC_CONFIG_VALUE_MAX.
 * Returns true when valid; otherwise false with a sentence in errstr. */
bool dc_schema_validate(const dc_schema_entry_t *e, const char *value,
                        char *errstr, size_t errstr_size);

/* True when s is a canonical decimal integer that fits int64 (stored in
 * *out; *out is untouched on false): an optional '-', then "0" or a
 * nonzero digit followed by digits. Refused: '+', leading zeros ("007"),
 * "-0" (zero has one spelling), whitespace, exponents, hex, overflow. */
bool dc_parse_int64(const char *s, int64_t *out);
#endif
