#ifndef BATON_PROCESS_H
#define BATON_PROCESS_H

/* prctl(2) is variadic, which Swift cannot call. PR_SET_DUMPABLE: 0 keeps
 * the process out of core dumps and from ptrace by the same user (as
 * ssh-agent does). Returns 0, or -1 with errno set. */
int baton_set_dumpable(int dumpable);
/* PR_GET_DUMPABLE: 0 or 1, or -1 with errno set. */
int baton_get_dumpable(void);

#endif
