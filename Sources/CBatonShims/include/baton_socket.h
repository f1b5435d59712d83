#ifndef BATON_SOCKET_H
#define BATON_SOCKET_H

#include <sys/types.h>

/* accept4(2) and SO_PEERCRED need _GNU_SOURCE, which Swift's Glibc module
 * does not define; these wrappers are compiled with it. */
int baton_accept4_cloexec(int fd);
/* The peer's user id on a connected UNIX socket, or -1 with errno set. */
long baton_peer_uid(int fd);

#endif
