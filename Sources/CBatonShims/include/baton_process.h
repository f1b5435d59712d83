#ifndef BATON_PROCESS_H
#define BATON_PROCESS_H

#include <sys/types.h>

/* prctl(2) is variadic, which Swift cannot call. PR_SET_DUMPABLE: 0 keeps
 * the process out of core dumps and from ptrace by the same user (as
 * ssh-agent does). Returns 0, or -1 with errno set. */
int baton_set_dumpable(int dumpable);
/* PR_GET_DUMPABLE: 0 or 1, or -1 with errno set. */
int baton_get_dumpable(void);

/* posix_spawnp(3) of `file` with `argv` and `envp`, as a child command
 * should start from a daemon whose threads block every signal: an empty
 * signal mask, default dispositions, its own process group (so that a
 * timeout can end what it started too), standard input from /dev/null.
 * Stores the child's id in *pid. Returns 0 or an errno value. */
int baton_spawn(const char *file, char *const argv[], char *const envp[], pid_t *pid);
/* pidfd_open(2): a descriptor that polls readable when `pid` exits (glibc
 * 2.36 declares it only in <sys/pidfd.h>). Returns it, or -1 with errno set. */
int baton_pidfd_open(pid_t pid);

#endif
