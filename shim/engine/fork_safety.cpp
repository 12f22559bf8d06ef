// fork_safety.cpp — see fork_safety.h (the lock order and why).
//
// Invariant: between fork_prepare and fork_parent/fork_child the forking
// thread has every signal blocked and holds exactly the locks recorded in
// its t_taken (so no nested fork can begin on it there).
#include "fork_safety.h"
#include "os/lock_unless_held.h"
#include "clock.h"

#include "sites/callsite.h"
#include "large/large.h"
#include "backing/reaper.h"
#include "registry/region.h"
#include "tiering/rehome.h"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <sched.h>
#include <sys/single_threaded.h>
#include <unistd.h>

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
SPW_TLS sigset_t t_saved_mask;
bool g_untrusted_child = false;
} // namespace

void fork_prepare() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &t_saved_mask);
    t_taken = 0;
    t_interrupted = false;
    if (!__libc_single_threaded) {
        _IO_list_lock();
        t_taken |= kStdioList;
    }
    if (callsite_fork_prepare()) t_taken |= kCaptureGate;
    else t_interrupted = true;
    if (rehome_fork_prepare()) t_taken |= kMove;
    else t_interrupted = true;
    if (reaper_fork_prepare()) t_taken |= kQueue;
    else t_interrupted = true;
    if (lock_unless_held_here(large_lock().native_handle())) t_taken |= kLarge;
    else t_interrupted = true;
}

void fork_parent() {
    int saved_errno = errno; // fork's own errno when it failed
    if (t_taken & kLarge) large_lock().unlock();
    if (t_taken & kQueue) reaper_fork_parent();
    if (t_taken & kMove) rehome_fork_parent();
    if (t_taken & kCaptureGate) callsite_fork_parent();
    if (t_taken & kStdioList) _IO_list_unlock();
    t_taken = 0;
    pthread_sigmask(SIG_SETMASK, &t_saved_mask, nullptr);
    errno = saved_errno;
}

void fork_child() {
    // One thread now: every lock is re-initialised whoever held it. glibc
    // has already reset the stdio list lock (it took it too, see the header).
    // A child of an untrusted child inherits the untrusted arena.
    g_untrusted_child = g_untrusted_child || t_interrupted;
    callsite_after_fork_child();
    rehome_after_fork_child(!g_untrusted_child);
    large_fork_child(!g_untrusted_child); // also the reaper, backing, learner, stats
    t_taken = 0;
    pthread_sigmask(SIG_SETMASK, &t_saved_mask, nullptr);
}

bool fork_child_untrusted() { return g_untrusted_child; }

} // namespace spillway
