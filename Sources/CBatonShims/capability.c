#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "baton_capability.h"

static int read_sets(struct __user_cap_header_struct *header,
                     struct __user_cap_data_struct data[2]) {
  header->version = _LINUX_CAPABILITY_VERSION_3;
  header->pid = 0;
  return (int)syscall(SYS_capget, header, data);
}

int baton_capability_get(int cap) {
  if (cap < 0 || cap >= 64) {
    errno = EINVAL;
    return -1;
  }
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
  if (read_sets(&header, data) != 0) return -1;
  unsigned bit = 1u << (cap % 32);
  int word = cap / 32;
  return ((data[word].effective & bit) ? 1 : 0) | ((data[word].permitted & bit) ? 2 : 0);
}

int baton_capability_set_effective(int cap, int on) {
  if (cap < 0 || cap >= 64) {
    errno = EINVAL;
    return -1;
  }
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
  if (read_sets(&header, data) != 0) return -1;
  unsigned bit = 1u << (cap % 32);
  int word = cap / 32;
  if (on)
    data[word].effective |= bit;
  else
    data[word].effective &= ~bit;
  return (int)syscall(SYS_capset, &header, data);
}
