/* placeholder: being written (issue 5) */
#ifndef DC_SASL_SERVER_H
#define DC_SASL_SERVER_H
#endif
