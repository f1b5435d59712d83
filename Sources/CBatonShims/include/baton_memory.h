#ifndef BATON_MEMORY_H
#define BATON_MEMORY_H

/* malloc_trim(3) is declared in <malloc.h>, which Swift's Glibc module does
 * not include. Returns 1 if memory was released to the kernel, else 0. */
int baton_malloc_trim(void);

#endif
