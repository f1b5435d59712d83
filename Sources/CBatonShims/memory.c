#include <malloc.h>

#include "baton_memory.h"

int baton_malloc_trim(void) { return malloc_trim(0); }
