/* Error names and strings, generated from DYNCONF_ERR_MAP. */
#include "dynconf.h"

const char *dynconf_err_name(dynconf_err_t err) {
  switch (err) {
#define DYNCONF_ERR_NAME_(name, code, desc)                                    \
  case DYNCONF_ERR_##name:                                                     \
    return #name[0] == '_' ? &#name[1] : #name;
    DYNCONF_ERR_MAP(DYNCONF_ERR_NAME_)
#undef DYNCONF_ERR_NAME_
  }
  return "UNKNOWN";
}

const char *dynconf_err_str(dynconf_err_t err) {
  switch (err) {
#define DYNCONF_ERR_STR_(name, code, desc)                                     \
  case DYNCONF_ERR_##name:                                                     \
    return desc;
    DYNCONF_ERR_MAP(DYNCONF_ERR_STR_)
#undef DYNCONF_ERR_STR_
  }
  return "Unknown error";
}

int dynconf_version(void) { return DYNCONF_VERSION; }
const char *dynconf_version_str(void) { return DYNCONF_VERSION_STR; }
