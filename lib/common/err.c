/* SPDX-License-Identifier: BSD-2-Clause */
/* Error names and sentences, generated from DC_ERR_MAP. */
#include "common/errors.h"

const char *dc_err_name(dc_err_t err) {
  switch (err) {
#define DC_ERR_NAME_(name, code, desc)                                         \
  case DC_ERR_##name:                                                          \
    return #name[0] == '_' ? &#name[1] : #name;
    DC_ERR_MAP(DC_ERR_NAME_)
#undef DC_ERR_NAME_
  }
  return "UNKNOWN";
}

const char *dc_err_str(dc_err_t err) {
  switch (err) {
#define DC_ERR_STR_(name, code, desc)                                          \
  case DC_ERR_##name:                                                          \
    return desc;
    DC_ERR_MAP(DC_ERR_STR_)
#undef DC_ERR_STR_
  }
  return "Unknown error";
}
