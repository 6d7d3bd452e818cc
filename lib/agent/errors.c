/* SPDX-License-Identifier: BSD-2-Clause */
/* The public error table and version, over the internal ones. */
#include "common/errors.h"
#include "dynconf.h"

/* Every public code is an internal one with the same value and the other
 * way round, so codes pass between the layers unchanged. */
#define SAME_AS_INTERNAL_(name, code, desc)                                    \
  _Static_assert(DYNCONF_ERR_##name == (int)DC_ERR_##name,                     \
                 "dynconf.h and errors.h disagree on " #name);
DYNCONF_ERR_MAP(SAME_AS_INTERNAL_)
#undef SAME_AS_INTERNAL_
#define SAME_AS_PUBLIC_(name, code, desc)                                      \
  _Static_assert(DC_ERR_##name == (int)DYNCONF_ERR_##name,                     \
                 "errors.h has a code dynconf.h lacks: " #name);
DC_ERR_MAP(SAME_AS_PUBLIC_)
#undef SAME_AS_PUBLIC_

const char *dynconf_err_name(dynconf_err_t err) {
  return dc_err_name((dc_err_t)err);
}

const char *dynconf_err_str(dynconf_err_t err) {
  return dc_err_str((dc_err_t)err);
}

int dynconf_version(void) { return DYNCONF_VERSION; }
const char *dynconf_version_str(void) { return DYNCONF_VERSION_STR; }
