#ifndef BATON_GETOPT_H
#define BATON_GETOPT_H

#include <getopt.h>

/* glibc's getopt_long keeps its state in C globals (optarg, optind, opterr),
 * which Swift 6 refuses to touch; these accessors are the only way in. */
const char *baton_optarg(void);
int baton_optind(void);
int baton_optopt(void);
/* Reset getopt_long for a new argument vector (optind = 0 forces a full
 * re-initialisation in glibc) and silence its own error messages. */
void baton_getopt_reset(void);

#endif
