/* placeholder: being written (issue 5) */
#ifndef DC_TLS_CLIENT_H
#define DC_TLS_CLIENT_H
#endif
