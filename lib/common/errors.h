/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Error codes used inside dynconf: positive and -1 are Kafka protocol
 * error codes exactly as on the wire; values <= -100 are local (codec,
 * I/O, usage). One table makes the enum, the names and the sentences.
 *
 * The public include/dynconf.h repeats these codes for library users as
 * dynconf_err_t; lib/agent checks at compile time that both tables agree.
 * Nothing below lib/agent includes the public header.
 */
#ifndef DC_ERRORS_H
#define DC_ERRORS_H

#define DC_ERR_MAP(X)                                                     \
  X(NO_ERROR, 0, "Success")                                                    \
  X(UNKNOWN_SERVER_ERROR, -1, "Unknown server error")                          \
  X(REQUEST_TIMED_OUT, 7, "Timed out: the outcome is not known")             \
  X(REPLICA_NOT_AVAILABLE, 9, "Not caught up with what the client has seen") \
  X(CLUSTER_AUTHORIZATION_FAILED, 31, "Cluster authorization failed")          \
  X(UNSUPPORTED_SASL_MECHANISM, 33, "Unsupported SASL mechanism")              \
  X(ILLEGAL_SASL_STATE, 34, "Illegal SASL state")                              \
  X(UNSUPPORTED_VERSION, 35, "Unsupported API version")                        \
  X(INVALID_CONFIG, 40, "Invalid configuration")                               \
  X(NOT_CONTROLLER, 41, "This server does not take writes")                    \
  X(INVALID_REQUEST, 42, "Invalid request")                                    \
  X(POLICY_VIOLATION, 44, "Policy violation")                                  \
  X(SASL_AUTHENTICATION_FAILED, 58, "SASL authentication failed")              \
  X(RESOURCE_NOT_FOUND, 91, "Resource not found")                              \
  X(_TRUNCATED, -100, "Input ends before the message does")                    \
  X(_BAD_LENGTH, -101, "Negative or impossible length field")                  \
  X(_BAD_VARINT, -102, "Variable-length integer is over-long")                 \
  X(_BAD_BOOL, -103, "Boolean field is neither 0 nor 1")                       \
  X(_BAD_STRING, -104, "String contains a NUL byte")                           \
  X(_FRAME_TOO_LARGE, -105, "Frame exceeds the maximum request size")          \
  X(_UNSUPPORTED_API, -106, "Unknown API key or version")                      \
  X(_NOMEM, -107, "Out of memory")                                             \
  X(_TRANSPORT, -108, "Connection failed or was closed")                       \
  X(_TIMED_OUT, -109, "Operation timed out")                                   \
  X(_INVALID_ARG, -110, "Invalid argument")                                    \
  X(_IO, -111, "Storage I/O error")                                            \
  X(_BAD_RESPONSE, -112, "Response does not match the request")                \
  X(_TOO_LONG, -113, "String or frame too long for its length field")

typedef enum dc_err {
#define DC_ERR_ENUM_(name, code, desc) DC_ERR_##name = code,
  DC_ERR_MAP(DC_ERR_ENUM_)
#undef DC_ERR_ENUM_
} dc_err_t;

/* "INVALID_CONFIG", "TRUNCATED" (no leading underscore); "UNKNOWN" for a
 * code not in the table. Static storage. */
const char *dc_err_name(dc_err_t err);
/* The table's sentence; "Unknown error" for a code not in it. */
const char *dc_err_str(dc_err_t err);
#endif
