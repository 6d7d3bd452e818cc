/* placeholder: being written (issue 5) */
#ifndef DC_CREDENTIALS_H
#define DC_CREDENTIALS_H
#endif
