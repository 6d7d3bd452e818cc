/* placeholder: being written (issue 5) */
#include "broker/broker_int.h"

void dc_conn_auth_clear(dc_conn_auth_t *a) { (void)a; }

int dc_broker_reload_security(dc_broker_t *b, char *errstr,
                              size_t errstr_size) {
  (void)b;
  if (errstr_size)
    errstr[0] = '\0';
  return 0;
}
