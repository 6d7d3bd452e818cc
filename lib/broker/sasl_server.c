/* placeholder: being written (issue 5) */
#include "broker/sasl_server.h"
