#ifndef BATON_FILE_H
#define BATON_FILE_H

/* syncfs(2) needs _GNU_SOURCE, which Swift's Glibc module does not define;
 * this wrapper is compiled with it. Returns 0, or -1 with errno set. */
int baton_syncfs(int fd);

#endif
