#ifndef BATON_MEMORY_H
#define BATON_MEMORY_H

/* malloc_trim(3) is declared in <malloc.h>, which Swift's Glibc module does
 * not include. Returns 1 if memory was released to the kernel, else 0. */
int baton_malloc_trim(void);
/* mallopt(M_ARENA_MAX, count): at most `count` malloc arenas. Returns 1 on
 * success, 0 on error. */
int baton_malloc_arena_max(int count);

#endif
