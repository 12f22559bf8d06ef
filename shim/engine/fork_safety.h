// fork_safety.h — what fork() does to the engine, in one place: the lock
// order, and the one sequence of steps prepare, parent and child take
// (fork_safety.cpp is the only caller of any subsystem's fork step).
//
// The shim's own threads (reaper, learner, writeback, tiering) make every
// process that allocates large multi-threaded, so glibc's fork runs its
// full locking path for it; and a fork may come from a signal handler that
// interrupted the shim on the forking thread. The rules:
//
// WHO CALLS. The front registers the only atfork handlers
// (front/engine_loader.cpp): its prepare blocks every signal and settles
// the engine's start-up, then calls fork_prepare below; its parent and
// child handlers call fork_parent / fork_child first and release the
// start lock after (front/engine_loader.h, FORK).
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
//   2. the call-site capture gate (sites/callsite.cpp; shared by every capture,
//      exclusive in prepare): a capture walks the stack with libunwind,
//      which holds the loader's dl_iterate_phdr lock that glibc does not
//      reset in the child.
//   3. the rehome move lock (tiering/rehome.cpp): a chunk of a region being moved
//      is read-only and its writers wait for the mover, who does not exist
//      in a child. Held for a whole move (spillway_spill/export, or the
//      tiering thread's promotions and demotions), so a fork waits for a
//      move under way; the mover takes only 5 (briefly) while holding it,
//      and blocks asynchronous signals (no handler forks mid-move).
//   4. the reaper's queue lock (backing/reaper.cpp).
//   5. the large lock (registry/region.cpp): registry, arena, slot table; the learner
//      (access/sampler.cpp) and the control API read regions under it.
//   Locks taken alone, briefly, over data that is consistent at every
//   instant are not taken; the child re-initialises them instead: the
//   call-site insert lock, the backing pool and spill-directory locks, the
//   block zone's lock (large/block_zone.h: taken only by the thread that
//   holds CPython's GIL, which a fork from Python holds too), the
//   prefetch worker's lock (awaited under 3, a move's keep-off, and under 5,
//   a retirement's end of stream; its holder takes no other lock).
//   The page probes' hold lock (registry/probe_hold.h) is taken before 5 and
//   may be awaited under 3, never under 5; prepare does not take it (a
//   probe's calls outside the lock touch only the parent's own page
//   tables), and the child re-initialises it.
//   Stats are atomics and the logger write()s: no lock.
//   Not a lock of this process but held across processes: the tiering
//   claims file's flock (tiering/claims.cpp). It is never held while waiting for
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
// chain is valid at every instant, see registry/region.cpp), but never touches the
// arena or the reaper queue again: new allocations go to mimalloc and frees
// of inherited regions leave them mapped, and no region is moved (rehome
// returns -EPERM, the tiering thread never starts). No child, trusted or
// not, lets its tiering thread move a region it inherited. POSIX promises
// such a child only async-signal-safe calls; it gets malloc and free that
// work.
//
// THE SEQUENCE (fork_safety.cpp). prepare: block every signal, then take
// locks 1-5 in order (each unless this thread holds it); when 1-4 were
// taken, the parent's snapshot (large/fork_snapshot.h): before 5, the
// regions to freeze are marked under a brief hold of the large lock and a
// probe on one of them is waited out (the probes' hold is awaited under 3
// and 4, never 5); after 5, they are mapped private. parent: release
// what prepare took, 5 down to 1, then drop the parent's copy of the
// generation's pipe and arm the reaper's tick, and restore the mask. child, one thread
// now, trusted unless prepare found a lock held by this thread or the
// parent was itself untrusted; every subsystem in this order:
//    1. call sites: the gate and insert lock anew; no capture ever again if
//       prepare could not take the gate
//    2. rehome: the move lock anew; a move this thread was making is given
//       a private copy of its bytes; untrusted: no move from now on
//    3. large: every inherited shared region remapped private, its files
//       marked foreign (needs the registry and the files as the parent left
//       them: before 4 forgets the pools)
//    4. backing: the pools forgotten (foreign), their locks anew
//    5. registry: the large lock anew, and the probes' hold released (its
//       thread is gone; 8 and 9 retire regions, which wait out a hold); the
//       fork snapshot's generations and held ranges are the parent's:
//       forgotten (after 3, which tells the regions the parent froze)
//    6. prefetch worker: its slots and lock anew, no thread (8 and 9 retire
//       regions, and a retirement ends the region's stream under that lock,
//       which the parent's reaper or worker may have held at the fork:
//       measured, fork children hung in programs/fork_safety)
//    7. large: untrusted: the threshold to SIZE_MAX (every new allocation
//       takes the small path), inherited regions never retired
//    8. reaper: what was queued retired inline (trusted) or left mapped; its
//       lock anew, no thread
//    9. recycle: the cached regions retired (trusted, through 5 and 8's
//       state) or forgotten
//   10. sampler: no thread, the parent's pagemap descriptor and tracks gone
//   11. writeback: no thread
//   12. tiering: no thread; untrusted: it never starts
//   13. claims: the inherited claims-file descriptor closed (the flock
//       stays the parent's)
//   14. stats: counts start again from what is live
//   15. sampler started again when a disk region was inherited (trusted):
//       a forked reader needs its own detector and may never allocate one
// shm and the logger keep nothing a fork breaks: no step. A new subsystem
// with a lock or a thread adds its steps here and in fork_safety.cpp, in
// their place.
#pragma once

namespace spillway {

// The three handlers, called by the front's (WHO CALLS above) through the
// engine's table.
void fork_prepare();
void fork_parent();
void fork_child();

// True in a child whose fork interrupted the shim (see above). The child
// step hands every subsystem the same answer (its `trusted` argument).
bool fork_child_untrusted();

} // namespace spillway
