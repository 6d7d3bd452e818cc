/* placeholder: being written (issue 5) */
#ifndef DC_ENTITY_H
#define DC_ENTITY_H
#endif
