/* placeholder: being written (issue 5) */
#ifndef DC_SCRAM_H
#define DC_SCRAM_H
#endif
