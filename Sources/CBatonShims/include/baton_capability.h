#ifndef BATON_CAPABILITY_H
#define BATON_CAPABILITY_H

/* The calling thread's capability `cap` (CAP_NET_ADMIN is 12), through
 * capget(2)/capset(2) with the version 3 header, which glibc does not wrap
 * (libcap would, but one bit is all baton needs). Capabilities belong to a
 * thread: a thread starts with its creator's sets. */

/* Whether `cap` is in the effective (1) and permitted (2) sets: a bit mask,
 * or -1 with errno set. */
int baton_capability_get(int cap);
/* Raises (on != 0) or lowers `cap` in the effective set only; raising needs
 * it in the permitted set. Returns 0, or -1 with errno set. */
int baton_capability_set_effective(int cap, int on);

#endif
