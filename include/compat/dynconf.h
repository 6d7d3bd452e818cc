/* SPDX-License-Identifier: BSD-2-Clause */
/* Installed as <dynconf.h> for programs written before the header moved
 * to <dynconf/dynconf.h>; new code includes that instead. */
#include <dynconf/dynconf.h>
