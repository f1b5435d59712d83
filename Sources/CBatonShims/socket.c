#include "baton_socket.h"

#include <stddef.h>
#include <sys/socket.h>

int baton_accept4_cloexec(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

long baton_peer_uid(int fd) {
  struct ucred credentials;
  socklen_t size = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return -1;
  return (long)credentials.uid;
}
