#include <systemd/sd-daemon.h>
#include <systemd/sd-bus.h>

/* sd-bus vtables are built with C macros (designated initialisers over a
 * union with bit-fields) that Swift cannot import; these inline helpers build
 * one entry each. The strings must outlive the vtable (the caller keeps them). */
static inline sd_bus_vtable baton_vtable_start(void) {
  sd_bus_vtable entry = SD_BUS_VTABLE_START(0);
  return entry;
}

static inline sd_bus_vtable baton_vtable_end(void) {
  sd_bus_vtable entry = SD_BUS_VTABLE_END;
  return entry;
}

/* A read-only property; `emits_change` makes PropertiesChanged carry its value. */
static inline sd_bus_vtable baton_vtable_property(const char *member, const char *signature,
                                                  sd_bus_property_get_t getter, int emits_change) {
  sd_bus_vtable entry = SD_BUS_PROPERTY(member, signature, getter, 0,
                                        emits_change ? SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE : 0);
  return entry;
}

static inline sd_bus_vtable baton_vtable_method(const char *member, const char *signature,
                                                const char *result,
                                                sd_bus_message_handler_t handler) {
  sd_bus_vtable entry = SD_BUS_METHOD(member, signature, result, handler, SD_BUS_VTABLE_UNPRIVILEGED);
  return entry;
}
