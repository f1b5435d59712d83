#include <malloc.h>

#include "baton_memory.h"

int baton_malloc_trim(void) { return malloc_trim(0); }

int baton_malloc_arena_max(int count) { return mallopt(M_ARENA_MAX, count); }
