// Tells ThreadSanitizer about the contended paths of the standard library's
// `Mutex` (Synchronization), for `make sanitize` (Tests/Scripts/sanitize.sh
// preloads it into the sanitized test run and the agents it starts).
//
// `Mutex.withLock` is inlined into our code, so its fast path (a
// compare-and-swap acquiring the lock word, another releasing it) is
// instrumented and ThreadSanitizer sees it. When the lock is contended the
// inlined code calls `_MutexHandle._lockSlow`, `_tryLockSlow` and
// `_unlockSlow` in libswiftSynchronization.so, which is not instrumented:
// they spin on the word with plain atomics and then take and hand over the
// lock in the kernel (FUTEX_LOCK_PI, FUTEX_UNLOCK_PI through syscall(2)),
// none of which ThreadSanitizer sees. Without this, every access under a
// Mutex that was ever contended is reported as a data race that is not one.
//
// This file defines those three functions (the executables' calls bind to
// the first definition, which a preloaded library is), calls the library's
// own, and adds what the lock does: an acquire of the lock word once the
// lock is held, a release before it is given up. That is how the runtime
// itself treats pthread_mutex_lock and pthread_mutex_unlock. In a process
// without ThreadSanitizer (the simulated radio's python, an editor) nothing
// calls them and the weak references stay unresolved.
//
// The symbols and their calling convention (swiftcc, the handle's address in
// the context register, the caller's thread id first) are the Swift 6.3
// toolchain's; `sanitize.sh` checks that the library still exports them.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SWIFTCALL __attribute__((swiftcall))
#define CONTEXT __attribute__((swift_context))

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

typedef SWIFTCALL void (*LockSlow)(uint32_t, CONTEXT void *);
typedef SWIFTCALL bool (*TryLockSlow)(CONTEXT void *);
typedef SWIFTCALL void (*UnlockSlow)(CONTEXT void *);

// The library's function `name`; a process that cannot find it stops, as
// running on without its lock would be worse.
static void *original(const char *name) {
  void *function = dlsym(RTLD_NEXT, name);
  if (function == NULL) {
    fprintf(stderr, "tsan-swift-mutex: %s not found (%s): rebuild against this toolchain\n",
            name, dlerror());
    abort();
  }
  return function;
}

// Found once; a second thread racing here stores the same pointer.
#define ORIGINAL(type, name)                                         \
  static type cached;                                                \
  type function = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);        \
  if (function == NULL) {                                            \
    function = (type)original(name);                                 \
    __atomic_store_n(&cached, function, __ATOMIC_RELEASE);           \
  }

SWIFTCALL void lockSlow(uint32_t thread, CONTEXT void *handle) __asm__(LOCK_SLOW);
SWIFTCALL void lockSlow(uint32_t thread, CONTEXT void *handle) {
  ORIGINAL(LockSlow, LOCK_SLOW)
  function(thread, handle);
  if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCALL bool tryLockSlow(CONTEXT void *handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL bool tryLockSlow(CONTEXT void *handle) {
  ORIGINAL(TryLockSlow, TRY_LOCK_SLOW)
  bool locked = function(handle);
  if (locked && __tsan_acquire) __tsan_acquire(handle);
  return locked;
}

SWIFTCALL void unlockSlow(CONTEXT void *handle) __asm__(UNLOCK_SLOW);
SWIFTCALL void unlockSlow(CONTEXT void *handle) {
  ORIGINAL(UnlockSlow, UNLOCK_SLOW)
  if (__tsan_release) __tsan_release(handle);
  function(handle);
}
