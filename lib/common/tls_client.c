/* placeholder: being written (issue 5) */
#include "common/tls_client.h"
