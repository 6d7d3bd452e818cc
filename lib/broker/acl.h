/* placeholder: being written (issue 5) */
#ifndef DC_ACL_H
#define DC_ACL_H
#endif
