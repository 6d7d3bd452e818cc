/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one rule every principal name a peer brings must pass (SASL user
 * names, OAUTHBEARER principal claims, GSSAPI local names, TLS subjects):
 * no blank at either end and no control character anywhere, so that
 * "User:oa-admin " or "User:oa-admin\n..." cannot read like another
 * principal in logs, ACL listings and the audit history.
 *
 * Blanks: the Unicode space separators (U+0020, U+00A0, U+1680,
 * U+2000..U+200A, U+202F, U+205F, U+3000) and the invisible U+200B and
 * U+FEFF. Control characters: U+0000..U+001F, U+007F..U+009F, U+2028 and
 * U+2029 (they break a log line). Names are UTF-8; other bytes are left
 * to the caller's own rules. Pure; any thread.
 */
#ifndef DC_PRINCIPAL_H
#define DC_PRINCIPAL_H
#include <stddef.h>

/* Why name (n bytes) may not name a principal ("begins with a blank",
 * "ends with a blank", "holds a control character"), or NULL when it
 * may. */
const char *dc_principal_name_fault(const char *name, size_t n);
#endif
