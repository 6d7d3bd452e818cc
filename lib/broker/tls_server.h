/* placeholder: being written (issue 5) */
#ifndef DC_TLS_SERVER_H
#define DC_TLS_SERVER_H
#endif
