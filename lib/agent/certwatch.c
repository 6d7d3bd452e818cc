/* placeholder: being written (issue 5) */
#include "agent/agent_int.h"
