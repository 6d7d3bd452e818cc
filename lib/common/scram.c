/* placeholder: being written (issue 5) */
#include "common/scram.h"
