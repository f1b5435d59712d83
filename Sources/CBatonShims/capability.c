#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "baton_capability.h"

/* Reads the calling thread's sets into `data`, and where `cap` lies in
 * them (`*word`, `*bit`). Returns 0, or -1 with errno set. */
static int read_sets(int cap, struct __user_cap_header_struct *header,
                     struct __user_cap_data_struct data[2], int *word, unsigned *bit) {
  if (cap < 0 || cap >= 64) {
    errno = EINVAL;
    return -1;
  }
  header->version = _LINUX_CAPABILITY_VERSION_3;
  header->pid = 0;
  *word = cap / 32;
  *bit = 1u << (cap % 32);
  return (int)syscall(SYS_capget, header, data);
}

int baton_capability_get(int cap) {
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
  int word;
  unsigned bit;
  if (read_sets(cap, &header, data, &word, &bit) != 0) return -1;
  return ((data[word].effective & bit) ? 1 : 0) | ((data[word].permitted & bit) ? 2 : 0);
}

int baton_capability_set_effective(int cap, int on) {
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
  int word;
  unsigned bit;
  if (read_sets(cap, &header, data, &word, &bit) != 0) return -1;
  if (on)
    data[word].effective |= bit;
  else
    data[word].effective &= ~bit;
  return (int)syscall(SYS_capset, &header, data);
}
