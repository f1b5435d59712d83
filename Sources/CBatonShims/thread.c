#include "baton_thread.h"

#include <pthread.h>

void baton_set_thread_name(const char *name) { (void)pthread_setname_np(pthread_self(), name); }
