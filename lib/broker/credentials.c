/* placeholder: being written (issue 5) */
#include "broker/credentials.h"
