/* SPDX-License-Identifier: BSD-2-Clause */
/* The public error table and version, over the internal ones. */
#include "common/errors.h"
#include "dynconf.h"

#define SAME_AS_INTERNAL_(name, code, desc)                                    \
  _Static_assert(DYNCONF_ERR_##name == (int)DC_ERR_##name,                     \
                 "dynconf.h and errors.h disagree on " #name);
#define SAME_AS_PUBLIC_(name, code, desc)                                      \
  _Static_assert(DC_ERR_##name == (int)DYNCONF_ERR_##name,                     \
                 "errors.h has a code dynconf.h lacks: " #name);

/* The one place a public code becomes an internal one. Every public code
 * is an internal one with the same value and the other way round (checked
 * here, at compile time), so codes pass between the layers unchanged. */
static dc_err_t internal_err(dynconf_err_t err) {
  DYNCONF_ERR_MAP(SAME_AS_INTERNAL_)
  DC_ERR_MAP(SAME_AS_PUBLIC_)
  return (dc_err_t)err;
}
#undef SAME_AS_INTERNAL_
#undef SAME_AS_PUBLIC_

const char *dynconf_err_name(dynconf_err_t err) {
  return dc_err_name(internal_err(err));
}

const char *dynconf_err_str(dynconf_err_t err) {
  return dc_err_str(internal_err(err));
}

int dynconf_version(void) { return DYNCONF_VERSION; }
const char *dynconf_version_str(void) { return DYNCONF_VERSION_STR; }
