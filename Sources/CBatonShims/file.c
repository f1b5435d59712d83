#include "baton_file.h"

#include <unistd.h>

int baton_syncfs(int fd) { return syncfs(fd); }
