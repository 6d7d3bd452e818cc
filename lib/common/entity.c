/* placeholder: being written (issue 5) */
#include "common/entity.h"
