// fork_safety.h — what fork() does to the shim's locks, in one place.
//
// The shim's own threads (reaper, learner, writeback, tiering) make every
// process that allocates large multi-threaded, so glibc's fork runs its
// full locking path for it; and a fork may come from a signal handler that interrupted
// the shim on the forking thread. The rules:
//
// LOCK ORDER. Every thread takes the shim's locks in this order (a lock
// later in the list is never held while one earlier is awaited). The
// prepare handler takes 1-5; glibc then takes its own malloc locks last.
//   1. stdio's list lock (_IO_list_lock, recursive), only when glibc's fork
//      will take it too (the process has had a thread). glibc takes it after
//      all prepare handlers and before its malloc locks because getdelim
//      allocates while holding a FILE lock and fflush(NULL) holds the list
//      lock while waiting for FILE locks: taking ours first would close the
//      cycle fork -> list lock -> FILE lock -> realloc -> large lock -> fork.
//   2. the call-site capture gate (callsite.cpp; shared by every capture,
//      exclusive in prepare): a capture walks the stack with libunwind,
//      which holds the loader's dl_iterate_phdr lock that glibc does not
//      reset in the child.
//   3. the rehome move lock (rehome.cpp): a chunk of a region being moved
//      is read-only and its writers wait for the mover, who does not exist
//      in a child. Held for a whole move (spillway_spill/export, or the
//      tiering thread's promotions and demotions), so a fork waits for a
//      move under way; the mover takes only 5 (briefly) while holding it,
//      and blocks asynchronous signals (no handler forks mid-move).
//   4. the reaper's queue lock (reaper.cpp).
//   5. the large lock (region.cpp): registry, arena, slot table; the learner
//      (sampler.cpp) and the control API read regions under it.
//   Locks taken alone, briefly, over data that is consistent at every
//   instant are not taken; the child re-initialises them instead: the
//   call-site insert lock, the backing pool and spill-directory locks.
//   Stats are atomics and the logger write()s: no lock.
//   Not a lock of this process but held across processes: the tiering
//   claims file's flock (claims.cpp). It is never held while waiting for
//   1-5; it is dropped with LOCK_UN, and the child closes its inherited
//   descriptor, so a fork in the middle of a claim leaks nothing.
//   A new lock must be added here, in its place.
//
// SIGNALS. prepare blocks every signal on the forking thread and the
// parent/child handler restores the mask: between our prepare and our
// parent/child handler no signal handler can start a nested fork (the
// signal is delivered once our locks are released).
//
// A FORK FROM A SIGNAL HANDLER that interrupted the shim on this thread:
// the interrupted frame may hold lock 2 to 5 and never runs again in the
// child. prepare does not wait for a lock this thread holds (it checks the
// owner), and the child is then "untrusted": it re-initialises every lock,
// still makes every inherited shared region private (the registry's forward
// chain is valid at every instant, see region.cpp), but never touches the
// arena or the reaper queue again: new allocations go to mimalloc and frees
// of inherited regions leave them mapped, and no region is moved (rehome
// returns -EPERM, the tiering thread never starts). No child, trusted or
// not, lets its tiering thread move a region it inherited. POSIX promises such a child only
// async-signal-safe calls; it gets malloc and free that work.
#pragma once

#include <pthread.h>

namespace spillway {

// The handlers startup.cpp registers with pthread_atfork.
void fork_prepare();
void fork_parent();
void fork_child();

// True in a child whose fork interrupted the shim (see above). The child
// step hands every subsystem the same answer (its `trusted` argument).
bool fork_child_untrusted();

} // namespace spillway
