// lock_unless_held.h — taking a lock in a fork's prepare handler, where the
// forking thread may itself hold it: a signal handler that forks can
// interrupt the shim on that thread between lock and unlock, and waiting
// for the lock there would wait forever (engine/fork_safety.h).
//
// Invariant: it never waits for the calling thread itself; it waits for any
// other holder (by the lock order, that holder never waits for what the
// forking thread holds, so it will release).
#pragma once

#include <pthread.h>

namespace spillway {

// Takes m unless this thread already holds it. Returns true if taken; false
// if this thread holds it (or it stays locked with no owner recorded, which
// is what the interrupted thread's own window between acquiring and
// recording itself looks like). Waits for any other holder.
bool lock_unless_held_here(pthread_mutex_t *m);

} // namespace spillway
