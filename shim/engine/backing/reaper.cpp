// reaper.cpp — see reaper.h.
#include "backing/reaper.h"

#include "os/background_thread.h"
#include "backing/backing.h"
#include "os/lock_unless_held.h"
#include "registry/region.h"

#include <csignal>
#include <pthread.h>
#include <sched.h>
#include <ctime>

namespace spillway {

namespace {
RetireFn g_retire = nullptr;
CloseFileFn g_close_file = nullptr;
TrimFn g_trim = nullptr;
SettleFn g_settle = nullptr;
// Plain pthread objects: statically initialised, so they work before C++
// static initialisers run and can be re-initialised in a fork child.
pthread_mutex_t g_queue_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER, g_idle = PTHREAD_COND_INITIALIZER;
Region *g_head = nullptr, *g_tail = nullptr; // FIFO through Region::queue_next
SpillFile *g_files = nullptr;                 // LIFO through SpillFile::queue_next
unsigned long g_submitted = 0, g_retired = 0;
bool g_started = false, g_failed = false;
// The recycle cache holds regions: tick while it does. g_trim_gen counts the
// wake-ups, so one that comes while a tick found the cache empty is not lost.
bool g_trim_armed = false;
unsigned long g_trim_gen = 0;
// The same for the fork snapshot's tick.
bool g_settle_armed = false;
unsigned long g_settle_gen = 0;
// Backpressure: when frees outpace the thread, the freeing caller retires
// its own region instead of queueing, so freed memory never piles up
// (measured: 8 churning threads left ~3,700 regions mapped without it).
constexpr unsigned long kMaxPending = 16;

void *reaper_main(void *) {
    // SCHED_BATCH: the same CPU share as the application, but waking this
    // thread never preempts the one that called free() (the scheduler skips
    // wake-up preemption for batch tasks), so free() returns in microseconds
    // on a busy machine instead of waiting behind the unmapping it queued.
    struct sched_param sp = {};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    pthread_mutex_lock(&g_queue_lock);
    for (;;) {
        while (!g_head && !g_files) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until); // the condition's clock
            // Idle, it still wakes once a second: it may be the only thread
            // of the process left (exit_if_only_ours_left, background_thread.h).
            until.tv_nsec += (g_trim_armed || g_settle_armed ? kTrimTickMs : 1000) * 1000000L;
            while (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&g_wake, &g_queue_lock, &until);
            if (g_head || g_files) break;
            const bool trim = g_trim_armed, settle = g_settle_armed;
            const unsigned long trim_gen = g_trim_gen, settle_gen = g_settle_gen;
            pthread_mutex_unlock(&g_queue_lock); // exit's handlers may queue; trim and settle queue
            exit_if_only_ours_left(); // at most once a second, armed or not
            bool more_trim = trim && g_trim(false);
            bool more_settle = settle && g_settle();
            pthread_mutex_lock(&g_queue_lock);
            if (trim && !more_trim && trim_gen == g_trim_gen) g_trim_armed = false;
            if (settle && !more_settle && settle_gen == g_settle_gen) g_settle_armed = false;
        }
        if (SpillFile *f = g_files) {
            g_files = f->queue_next;
            f->queue_next = nullptr;
            pthread_mutex_unlock(&g_queue_lock);
            g_close_file(f);
            pthread_mutex_lock(&g_queue_lock);
            g_retired++;
            pthread_cond_broadcast(&g_idle);
            continue;
        }
        Region *r = g_head;
        g_head = r->queue_next;
        if (!g_head) g_tail = nullptr;
        r->queue_next = nullptr;
        pthread_mutex_unlock(&g_queue_lock);
        g_retire(r);
        pthread_mutex_lock(&g_queue_lock);
        g_retired++;
        pthread_cond_broadcast(&g_idle);
    }
    return nullptr;
}

bool start_thread() { return start_background_thread(reaper_main, "spillway-reap", 256 * 1024); }
} // namespace

void reaper_init(RetireFn retire, CloseFileFn close_file) {
    g_retire = retire;
    g_close_file = close_file;
}

void reaper_set_trim(TrimFn trim) { g_trim = trim; }
void reaper_set_settle(SettleFn settle) { g_settle = settle; }

namespace {
// With g_queue_lock held: whether the thread runs (started now if need be)
// and can take one more job.
bool can_queue() {
    if (!g_failed && !g_started) {
        // Creating a thread allocates (TLS, stack): safe here because no
        // lock of the large path is held and the small path is lock-free.
        g_started = true;
        if (!start_thread()) g_failed = true;
    }
    return !g_failed && g_submitted - g_retired < kMaxPending;
}
} // namespace

namespace {
// Arms one of the thread's ticks (the trim's or the settle's) and wakes the
// thread if that tick was not armed yet.
void arm_tick(bool &armed, unsigned long &gen) {
    pthread_mutex_lock(&g_queue_lock);
    gen++;
    bool sleeping = !armed;
    armed = true;
    if (can_queue() && sleeping) pthread_cond_signal(&g_wake);
    pthread_mutex_unlock(&g_queue_lock);
}
} // namespace

// Without a thread the cache is aged by the next free and trimmed by
// reaper_drain (recycle.cpp); nothing is leaked, only kept longer.
void reaper_wake_for_trim() { arm_tick(g_trim_armed, g_trim_gen); }

// Without a thread nothing is re-shared until a control call settles
// (large_aware.cpp): the regions stay private, which is correct.
void reaper_wake_for_settle() {
    if (g_settle) arm_tick(g_settle_armed, g_settle_gen);
}

void reaper_submit_file(SpillFile *f) {
    pthread_mutex_lock(&g_queue_lock);
    if (can_queue()) {
        f->queue_next = g_files;
        g_files = f;
        g_submitted++;
        pthread_cond_signal(&g_wake);
        pthread_mutex_unlock(&g_queue_lock);
        return;
    }
    pthread_mutex_unlock(&g_queue_lock);
    g_close_file(f);
}

void reaper_submit(Region *r) {
    pthread_mutex_lock(&g_queue_lock);
    {
        if (can_queue()) {
            r->queue_next = nullptr;
            if (g_tail) g_tail->queue_next = r;
            else g_head = r;
            g_tail = r;
            g_submitted++;
            pthread_cond_signal(&g_wake);
            pthread_mutex_unlock(&g_queue_lock);
            return;
        }
    }
    pthread_mutex_unlock(&g_queue_lock);
    g_retire(r);
}

void reaper_drain() {
    if (g_trim) g_trim(true);
    pthread_mutex_lock(&g_queue_lock);
    unsigned long target = g_submitted;
    while (g_retired < target && g_started && !g_failed) pthread_cond_wait(&g_idle, &g_queue_lock);
    pthread_mutex_unlock(&g_queue_lock);
}

bool reaper_fork_prepare() { return lock_unless_held_here(&g_queue_lock); }
void reaper_fork_parent() { pthread_mutex_unlock(&g_queue_lock); }

void reaper_after_fork_child(bool retire_pending) {
    // Untrusted (the fork interrupted a queue update on this thread): the
    // queue may be half-linked; its regions stay mapped in this child.
    Region *pending = retire_pending ? g_head : nullptr;
    SpillFile *files = retire_pending ? g_files : nullptr;
    g_head = g_tail = nullptr;
    g_files = nullptr;
    g_submitted = g_retired = 0;
    g_started = false;
    g_failed = false;
    g_trim_armed = false; // the recycle cache is emptied in the child (recycle.h)
    g_trim_gen = 0;
    g_settle_armed = false; // the parent's generations are not this child's
    g_settle_gen = 0;
    g_queue_lock = PTHREAD_MUTEX_INITIALIZER;
    g_wake = PTHREAD_COND_INITIALIZER;
    g_idle = PTHREAD_COND_INITIALIZER;
    // Closing the child's descriptor leaves the parent's file as it is.
    while (files) {
        SpillFile *next = files->queue_next;
        files->queue_next = nullptr;
        g_close_file(files);
        files = next;
    }
    while (pending) {
        Region *next = pending->queue_next;
        pending->queue_next = nullptr;
        g_retire(pending);
        pending = next;
    }
}

} // namespace spillway
