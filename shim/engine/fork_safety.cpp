// fork_safety.cpp — the fork sequence fork_safety.h lays out (the lock
// order, and each subsystem's step in the child): the only place that calls
// a subsystem's fork step, so the order lives here alone.
//
// Invariant: between fork_prepare and fork_parent/fork_child the forking
// thread has every signal blocked and holds exactly the locks recorded in
// its t_taken (so no nested fork can begin on it there).
#include "fork_safety.h"

#include "access/prefetch_worker.h"
#include "access/sampler.h"
#include "backing/backing.h"
#include "backing/reaper.h"
#include "large/block_zone.h"
#include "large/fork_snapshot.h"
#include "large/large.h"
#include "large/recycle.h"
#include "os/lock_unless_held.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "sites/callsite.h"
#include "stats/stats.h"
#include "tiering/claims.h"
#include "tiering/rehome.h"
#include "tiering/tiering_loop.h"
#include "tiering/writeback.h"

#include <cerrno>
#include <csignal>
#include <sys/single_threaded.h>

// Exported by glibc (libio): the lock of the list of all FILEs, recursive.
extern "C" void _IO_list_lock(void);
extern "C" void _IO_list_unlock(void);

namespace spillway {

namespace {
enum : unsigned { kStdioList = 1, kCaptureGate = 2, kMove = 4, kQueue = 8, kLarge = 16 };
// Per forking thread: glibc runs the handlers of concurrent forks
// concurrently (it drops its atfork lock around each handler); the locks
// below serialise them.
#define SPW_TLS thread_local __attribute__((tls_model("initial-exec")))
SPW_TLS unsigned t_taken = 0;
SPW_TLS bool t_interrupted = false; // a lock was held by the forking thread itself
SPW_TLS bool t_snapshot = false;    // the parent's snapshot was made (large/fork_snapshot.h)
SPW_TLS sigset_t t_saved_mask;
bool g_untrusted_child = false;
} // namespace

void fork_prepare() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &t_saved_mask);
    t_taken = 0;
    t_interrupted = false;
    if (!__libc_single_threaded) { // 1
        _IO_list_lock();
        t_taken |= kStdioList;
    }
    if (callsite_fork_prepare()) t_taken |= kCaptureGate; // 2
    else t_interrupted = true;
    if (rehome_fork_prepare()) t_taken |= kMove; // 3
    else t_interrupted = true;
    if (reaper_fork_prepare()) t_taken |= kQueue; // 4
    else t_interrupted = true;
    // The parent's snapshot (large/fork_snapshot.h), only when every lock
    // so far was taken: an interrupted frame of this thread may be in the
    // middle of a region's update.
    t_snapshot = !t_interrupted && snapshot_fork_mark();
    if (lock_unless_held_here(large_lock().native_handle())) t_taken |= kLarge; // 5
    else t_interrupted = true;
    if (t_snapshot && (t_taken & kLarge)) snapshot_fork_privatise();
    g_fork_privatising.store(false); // the pins it kept waiting may go on
}

void fork_parent() {
    int saved_errno = errno; // fork's own errno when it failed
    if (t_taken & kLarge) large_lock().unlock();
    if (t_taken & kQueue) reaper_fork_parent();
    if (t_taken & kMove) rehome_fork_parent();
    if (t_taken & kCaptureGate) callsite_fork_parent();
    if (t_taken & kStdioList) _IO_list_unlock();
    t_taken = 0;
    snapshot_fork_parent(t_snapshot); // after the locks: it may start the reaper's thread
    t_snapshot = false;
    pthread_sigmask(SIG_SETMASK, &t_saved_mask, nullptr);
    errno = saved_errno;
}

void fork_child() {
    // One thread now: every lock is re-initialised whoever held it. glibc
    // has already reset the stdio list lock (it took it too, see the header).
    // A child of an untrusted child inherits the untrusted arena.
    g_untrusted_child = g_untrusted_child || t_interrupted;
    const bool trusted = !g_untrusted_child;
    callsite_after_fork_child();                                   //  1
    rehome_after_fork_child(trusted);                              //  2
    const bool inherited_disk = large_privatise_inherited(trusted); // 3
    backing_after_fork_child();                                    //  4
    registry_after_fork_child();                                   //  5
    probe_hold_after_fork_child();                                 //  5
    snapshot_fork_child(trusted);                                  //  5
    prefetch_after_fork_child();                                   //  6
    large_after_fork_child(trusted);                               //  7
    reaper_after_fork_child(trusted);                              //  8
    recycle_after_fork_child(trusted);                             //  9
    block_zone_after_fork_child();                                 //  9
    sampler_after_fork_child();                                    // 10
    writeback_after_fork_child();                                  // 11
    tiering_after_fork_child(trusted);                             // 12
    claims_after_fork_child();                                     // 13
    stats_after_fork_child();                                      // 14
    // 15. A forked worker reads the parent's data in its own pattern (a
    // DataLoader's shuffled batches): it needs its own detector. Started
    // here because a worker that only reads makes no region that would
    // start it; glibc has reset its thread bookkeeping before fork
    // handlers run.
    if (trusted && inherited_disk) sampler_notice();
    t_taken = 0;
    pthread_sigmask(SIG_SETMASK, &t_saved_mask, nullptr);
}

bool fork_child_untrusted() { return g_untrusted_child; }

} // namespace spillway
