/* libsystemd, opened the first time baton talks to D-Bus.
 *
 * baton reaches D-Bus (BlueZ) through libsystemd's sd-bus. Linked the usual
 * way, libsystemd and the six libraries it needs (libgcrypt, libgpg-error,
 * liblzma, libzstd, liblz4, libcap) would be mapped into every agent, about
 * 1 MB resident, also into the agents that never use D-Bus (one on its own
 * controller). So baton is not linked against libsystemd. Each sd-bus
 * function baton calls is defined here, hidden from other objects, and
 * calls libsystemd's own, which the first call opens with dlopen(3): the
 * way systemd itself opens its optional libraries. The declarations, and so
 * the types Swift sees, are libsystemd's headers (module CSystemd).
 *
 * When libsystemd.so.0 cannot be opened, a call returns -ELIBACC (or NULL
 * where the function returns a pointer) and baton_systemd_open_error() says
 * why. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include <systemd/sd-bus.h>

#include "baton_systemd.h"

#define LIBSYSTEMD "libsystemd.so.0"

static void *library;
static char open_error[512];
static pthread_once_t open_once = PTHREAD_ONCE_INIT;

static void open_library(void) {
  library = dlopen(LIBSYSTEMD, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char *reason = dlerror();
    snprintf(open_error, sizeof open_error, "%s", reason ? reason : LIBSYSTEMD ": cannot open");
  }
}

static void *systemd_symbol(const char *name) {
  pthread_once(&open_once, open_library);
  return library ? dlsym(library, name) : NULL;
}

const char *baton_systemd_open_error(void) {
  pthread_once(&open_once, open_library);
  return library ? NULL : open_error;
}

/* SD_BUS_VTABLE_START points a vtable at this variable, which libsystemd
 * (since version 242) defines with the value 242: a vtable that points at it
 * is in the format with parameter names. libsystemd only checks that the
 * pointer is set, so baton's own copy serves. */
__attribute__((visibility("hidden"))) const unsigned sd_bus_object_vtable_format = 242;

/* Defines `name` (declared by sd-bus.h) to call libsystemd's `name`, found
 * once and kept; `failure` is what it returns when libsystemd is missing. */
#define FORWARD(type, failure, name, parameters, arguments)                   \
  __attribute__((visibility("hidden"))) type name parameters {              \
    static type(*function) parameters;                                      \
    type(*found) parameters = __atomic_load_n(&function, __ATOMIC_ACQUIRE); \
    if (found == NULL) {                                                    \
      found = (type(*) parameters)systemd_symbol(#name);                    \
      if (found == NULL) return failure;                                    \
      __atomic_store_n(&function, found, __ATOMIC_RELEASE);                 \
    }                                                                       \
    return found arguments;                                                 \
  }

/* The bus. */
FORWARD(int, -ELIBACC, sd_bus_new, (sd_bus **ret), (ret))
FORWARD(int, -ELIBACC, sd_bus_open_system, (sd_bus **ret), (ret))
FORWARD(int, -ELIBACC, sd_bus_open_user, (sd_bus **ret), (ret))
FORWARD(int, -ELIBACC, sd_bus_set_address, (sd_bus *bus, const char *address), (bus, address))
FORWARD(int, -ELIBACC, sd_bus_set_bus_client, (sd_bus *bus, int b), (bus, b))
FORWARD(int, -ELIBACC, sd_bus_start, (sd_bus *bus), (bus))
FORWARD(sd_bus *, NULL, sd_bus_unref, (sd_bus *bus), (bus))
FORWARD(sd_bus *, NULL, sd_bus_flush_close_unref, (sd_bus *bus), (bus))
FORWARD(int, -ELIBACC, sd_bus_get_fd, (sd_bus *bus), (bus))
FORWARD(int, -ELIBACC, sd_bus_get_events, (sd_bus *bus), (bus))
FORWARD(int, -ELIBACC, sd_bus_get_timeout, (sd_bus *bus, uint64_t *timeout_usec),
        (bus, timeout_usec))
FORWARD(int, -ELIBACC, sd_bus_get_unique_name, (sd_bus *bus, const char **unique),
        (bus, unique))
FORWARD(int, -ELIBACC, sd_bus_process, (sd_bus *bus, sd_bus_message **r), (bus, r))
FORWARD(int, -ELIBACC, sd_bus_send, (sd_bus *bus, sd_bus_message *m, uint64_t *cookie),
        (bus, m, cookie))
FORWARD(int, -ELIBACC, sd_bus_call_async,
        (sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback,
         void *userdata, uint64_t usec),
        (bus, slot, m, callback, userdata, usec))
FORWARD(int, -ELIBACC, sd_bus_add_match,
        (sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback,
         void *userdata),
        (bus, slot, match, callback, userdata))
FORWARD(sd_bus_slot *, NULL, sd_bus_slot_unref, (sd_bus_slot *slot), (slot))

/* Objects baton exports (its LE advertisement, org.bluez.LEAdvertisement1). */
FORWARD(int, -ELIBACC, sd_bus_add_object_manager,
        (sd_bus *bus, sd_bus_slot **slot, const char *path), (bus, slot, path))
FORWARD(int, -ELIBACC, sd_bus_add_object_vtable,
        (sd_bus *bus, sd_bus_slot **slot, const char *path, const char *interface,
         const sd_bus_vtable *vtable, void *userdata),
        (bus, slot, path, interface, vtable, userdata))
FORWARD(int, -ELIBACC, sd_bus_emit_interfaces_added_strv,
        (sd_bus *bus, const char *path, char **interfaces), (bus, path, interfaces))
FORWARD(int, -ELIBACC, sd_bus_emit_interfaces_removed_strv,
        (sd_bus *bus, const char *path, char **interfaces), (bus, path, interfaces))
FORWARD(int, -ELIBACC, sd_bus_emit_properties_changed_strv,
        (sd_bus *bus, const char *path, const char *interface, char **names),
        (bus, path, interface, names))
FORWARD(int, -ELIBACC, sd_bus_error_set,
        (sd_bus_error *e, const char *name, const char *message), (e, name, message))

/* Messages. */
FORWARD(int, -ELIBACC, sd_bus_message_new_method_call,
        (sd_bus *bus, sd_bus_message **m, const char *destination, const char *path,
         const char *interface, const char *member),
        (bus, m, destination, path, interface, member))
FORWARD(int, -ELIBACC, sd_bus_message_new_signal,
        (sd_bus *bus, sd_bus_message **m, const char *path, const char *interface,
         const char *member),
        (bus, m, path, interface, member))
FORWARD(int, -ELIBACC, sd_bus_message_new_method_return,
        (sd_bus_message *call, sd_bus_message **m), (call, m))
FORWARD(sd_bus_message *, NULL, sd_bus_message_unref, (sd_bus_message *m), (m))
FORWARD(sd_bus *, NULL, sd_bus_message_get_bus, (sd_bus_message *m), (m))
FORWARD(const sd_bus_error *, NULL, sd_bus_message_get_error, (sd_bus_message *m), (m))
FORWARD(const char *, NULL, sd_bus_message_get_interface, (sd_bus_message *m), (m))
FORWARD(const char *, NULL, sd_bus_message_get_member, (sd_bus_message *m), (m))
FORWARD(const char *, NULL, sd_bus_message_get_path, (sd_bus_message *m), (m))
FORWARD(const char *, NULL, sd_bus_message_get_sender, (sd_bus_message *m), (m))
FORWARD(int, -ELIBACC, sd_bus_message_get_expect_reply, (sd_bus_message *m), (m))
FORWARD(int, -ELIBACC, sd_bus_message_is_method_error, (sd_bus_message *m, const char *name),
        (m, name))
FORWARD(int, -ELIBACC, sd_bus_message_append_basic,
        (sd_bus_message *m, char type, const void *p), (m, type, p))
FORWARD(int, -ELIBACC, sd_bus_message_read_basic, (sd_bus_message *m, char type, void *p),
        (m, type, p))
FORWARD(int, -ELIBACC, sd_bus_message_open_container,
        (sd_bus_message *m, char type, const char *contents), (m, type, contents))
FORWARD(int, -ELIBACC, sd_bus_message_close_container, (sd_bus_message *m), (m))
FORWARD(int, -ELIBACC, sd_bus_message_enter_container,
        (sd_bus_message *m, char type, const char *contents), (m, type, contents))
FORWARD(int, -ELIBACC, sd_bus_message_exit_container, (sd_bus_message *m), (m))
FORWARD(int, -ELIBACC, sd_bus_message_peek_type,
        (sd_bus_message *m, char *type, const char **contents), (m, type, contents))
