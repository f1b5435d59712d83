#ifndef BATON_SYSTEMD_H
#define BATON_SYSTEMD_H

/* baton calls libsystemd's sd-bus through definitions in systemd.c, which
 * open libsystemd.so.0 with dlopen(3) at the first call (see there). */

/* Why libsystemd.so.0 could not be opened (dlerror(3)'s text), or NULL when
 * it is open. Tries to open it if no call has yet. */
const char *baton_systemd_open_error(void);

#endif
