#ifndef BATON_THREAD_H
#define BATON_THREAD_H

/* Names the calling thread (at most 15 bytes are kept), so that ps, top and
 * /proc/PID/task/TID/comm show it. pthread_setname_np needs _GNU_SOURCE. */
void baton_set_thread_name(const char *name);

#endif
