/* placeholder: being written (issue 5) */
#include "broker/tls_server.h"
