/* placeholder: being written (issue 5) */
#include "broker/broker_int.h"
