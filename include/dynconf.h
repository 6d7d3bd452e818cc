/*
 * dynconf - live, central configuration of running librdkafka clients
 * (Apache Kafka KIP-649, client side).
 *
 * Public API. All symbols carry the dynconf_ / DYNCONF_ prefix.
 * Thread safety is stated per function.
 */
#ifndef DYNCONF_H
#define DYNCONF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version as 0xMMmmpp (major, minor, patch). */
#define DYNCONF_VERSION 0x000100
#define DYNCONF_VERSION_STR "0.1.0"

/** Runtime version of the linked library, same encoding as DYNCONF_VERSION.
 *  Any thread. */
int dynconf_version(void);
/** Runtime version string; static storage, never free. Any thread. */
const char *dynconf_version_str(void);

/*
 * Error codes. Positive and -1 are Kafka protocol error codes, exactly as on
 * the wire; values <= -100 are local to this library (codec, I/O, usage).
 * One table generates the enum, the names and the descriptions.
 */
#define DYNCONF_ERR_MAP(X)                                                     \
  X(NO_ERROR, 0, "Success")                                                    \
  X(UNKNOWN_SERVER_ERROR, -1, "Unknown server error")                          \
  X(CLUSTER_AUTHORIZATION_FAILED, 31, "Cluster authorization failed")          \
  X(UNSUPPORTED_SASL_MECHANISM, 33, "Unsupported SASL mechanism")              \
  X(ILLEGAL_SASL_STATE, 34, "Illegal SASL state")                              \
  X(UNSUPPORTED_VERSION, 35, "Unsupported API version")                        \
  X(INVALID_CONFIG, 40, "Invalid configuration")                               \
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
  X(_BAD_RESPONSE, -112, "Response does not match the request")

typedef enum dynconf_err {
#define DYNCONF_ERR_ENUM_(name, code, desc) DYNCONF_ERR_##name = code,
  DYNCONF_ERR_MAP(DYNCONF_ERR_ENUM_)
#undef DYNCONF_ERR_ENUM_
} dynconf_err_t;

/** Symbolic name of an error ("INVALID_CONFIG"); "UNKNOWN" for codes not in
 *  the table. Static storage. Any thread. */
const char *dynconf_err_name(dynconf_err_t err);
/** Human description of an error. Static storage. Any thread. */
const char *dynconf_err_str(dynconf_err_t err);

#ifdef __cplusplus
}
#endif
#endif /* DYNCONF_H */
