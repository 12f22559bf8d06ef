// lock_unless_held.cpp — see lock_unless_held.h.
#include "os/lock_unless_held.h"
#include "clock.h"

#include <sched.h>
#include <unistd.h>

namespace spillway {

namespace {
// How long a lock may stay held with no owner recorded before prepare
// concludes the forking thread itself was interrupted right after taking it
// (another thread takes a few instructions; a preempted one, milliseconds).
constexpr uint64_t kOwnerlessWaitNs = 50'000'000;
} // namespace

bool lock_unless_held_here(pthread_mutex_t *m) {
    const int self = gettid();
    uint64_t first_ownerless = 0; // monotonic ns; 0: not seen ownerless yet
    for (;;) {
        if (pthread_mutex_trylock(m) == 0) return true;
        // glibc records the holder's thread id after acquiring and clears
        // it before releasing.
        int owner = __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
        if (owner == self) return false;
        if (owner != 0) {
            // Another thread: by the lock order it never waits for what this
            // thread holds, so it will release.
            pthread_mutex_lock(m);
            return true;
        }
        if (first_ownerless == 0)
            first_ownerless = monotonic_ns();
        else if (monotonic_ns() - first_ownerless > kOwnerlessWaitNs)
            return false;
        sched_yield();
    }
}

} // namespace spillway
