#include <sys/prctl.h>

#include "baton_process.h"

int baton_set_dumpable(int dumpable) {
  return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

int baton_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL); }
