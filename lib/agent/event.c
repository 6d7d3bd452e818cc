/* SPDX-License-Identifier: BSD-2-Clause */
/* Change-event accessors and the names of the agent's enums. */
#include "agent/agent_int.h"

const char *dynconf_source_name(dynconf_source_t s) {
  switch (s) {
  case DYNCONF_SOURCE_APP: return "application";
  case DYNCONF_SOURCE_CLIENT: return "client-override";
  case DYNCONF_SOURCE_DEFAULT: return "default-entity";
  case DYNCONF_SOURCE_USER: return "user-override";
  case DYNCONF_SOURCE_USER_CLIENT: return "user-client-override";
  case DYNCONF_SOURCE_FILE: return "file";
  }
  return "unknown";
}

const char *dynconf_outcome_name(dynconf_outcome_t o) {
  switch (o) {
  case DYNCONF_OUTCOME_APPLIED: return "applied";
  case DYNCONF_OUTCOME_REJECTED: return "rejected";
  case DYNCONF_OUTCOME_PINNED: return "pinned";
  case DYNCONF_OUTCOME_IGNORED: return "ignored";
  }
  return "unknown";
}

const char *dynconf_state_name(dynconf_state_t s) {
  switch (s) {
  case DYNCONF_STATE_INIT: return "init";
  case DYNCONF_STATE_UP: return "up";
  case DYNCONF_STATE_DEGRADED: return "degraded";
  case DYNCONF_STATE_UNSUPPORTED: return "unsupported";
  }
  return "unknown";
}

dynconf_event_type_t dynconf_event_type(const dynconf_event_t *ev) {
  return ev->type;
}
dynconf_err_t dynconf_event_error(const dynconf_event_t *ev) { return ev->err; }
const char *dynconf_event_error_string(const dynconf_event_t *ev) {
  return ev->errstr ? ev->errstr : "";
}
int dynconf_event_accepted(const dynconf_event_t *ev) { return ev->accepted; }
int64_t dynconf_event_generation(const dynconf_event_t *ev) {
  return ev->generation;
}
size_t dynconf_event_entry_count(const dynconf_event_t *ev) { return ev->n; }

/* Out-of-range indexes get NULL/defaults rather than a crash. */
static const dc_event_entry_t *entry(const dynconf_event_t *ev, size_t i) {
  return i < ev->n ? &ev->entries[i] : NULL;
}

const char *dynconf_event_key(const dynconf_event_t *ev, size_t i) {
  const dc_event_entry_t *e = entry(ev, i);
  return e ? e->key : NULL;
}
const char *dynconf_event_old_value(const dynconf_event_t *ev, size_t i) {
  const dc_event_entry_t *e = entry(ev, i);
  return e ? e->old_value : NULL;
}
const char *dynconf_event_new_value(const dynconf_event_t *ev, size_t i) {
  const dc_event_entry_t *e = entry(ev, i);
  return e ? e->new_value : NULL;
}
dynconf_source_t dynconf_event_source(const dynconf_event_t *ev, size_t i) {
  const dc_event_entry_t *e = entry(ev, i);
  return e ? e->source : DYNCONF_SOURCE_APP;
}
dynconf_outcome_t dynconf_event_outcome(const dynconf_event_t *ev, size_t i) {
  const dc_event_entry_t *e = entry(ev, i);
  return e ? e->outcome : DYNCONF_OUTCOME_IGNORED;
}
const char *dynconf_event_reason(const dynconf_event_t *ev, size_t i) {
  const dc_event_entry_t *e = entry(ev, i);
  return e ? e->reason : NULL;
}
