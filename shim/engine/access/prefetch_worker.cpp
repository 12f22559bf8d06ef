// prefetch_worker.cpp — see prefetch_worker.h.
#include "access/prefetch_worker.h"

#include "os/background_thread.h"
#include "stats/stats.h"

#include <atomic>
#include <cerrno>
#include <ctime>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace spillway {

ReadStep next_read(uint64_t done, uint64_t front, uint64_t ahead_to, uint64_t chunk) {
    uint64_t from = done > front ? done : front;
    if (from >= ahead_to || chunk == 0) return {from, 0};
    uint64_t n = ahead_to - from;
    return {from, n < chunk ? n : chunk};
}

ReadStep next_drop(uint64_t dropped, uint64_t drop_to, uint64_t align, uint64_t pages) {
    uint64_t to = align && drop_to < pages ? drop_to / align * align : drop_to;
    if (to <= dropped) return {dropped, 0};
    return {dropped, to - dropped};
}

namespace {
constexpr uint64_t kPage = 4096;
// One pread: large enough that the kernel reads ahead in requests of the
// device's maximum I/O size, small enough that a moved target is seen soon.
constexpr uint64_t kChunkPages = (4u << 20) / kPage;
// Page out in whole 2 MiB steps (one madvise per step the reader passes).
constexpr uint64_t kDropAlignPages = (2u << 20) / kPage;
constexpr size_t kSlots = 4;

struct Slot {
    bool used = false;
    int fd = -1;
    PrefetchTarget target;
    uint64_t done = 0;    // read up to this page
    uint64_t dropped = 0; // paged out up to this page
};

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER; // broadcast when a piece of work ends
uintptr_t g_busy_start = 0; // the region start of the stream being worked on, 0: none
Slot g_slots[kSlots];
bool g_started = false;
// The range a move holds (prefetch_keep_off); length 0: none.
std::atomic<uintptr_t> g_off_start{0};
std::atomic<size_t> g_off_len{0};
void *g_buf = nullptr;

Slot *find(uintptr_t start, uint64_t born) {
    for (Slot &s : g_slots)
        if (s.used && s.target.start == start && s.target.born == born) return &s;
    return nullptr;
}

// One piece of work under the lock: which slot, what to read or drop.
struct Work {
    size_t slot = kSlots;
    int fd = -1;
    uintptr_t start = 0;
    uint64_t born = 0, file_off = 0;
    ReadStep read, drop;
};

// Begun streams first, then speculative ones (PrefetchTarget::speculative).
bool pick(Work &w) {
    for (size_t k = 0; k < 2 * kSlots; k++) {
        size_t i = k % kSlots;
        Slot &s = g_slots[i];
        if (!s.used || s.target.speculative != (k >= kSlots)) continue;
        w = {};
        w.drop = next_drop(s.dropped, s.target.drop_to, kDropAlignPages, s.target.pages);
        w.read = next_read(s.done, s.target.front, s.target.ahead_to, kChunkPages);
        if (!w.drop.count && !w.read.count) continue;
        w.slot = i;
        w.fd = s.fd;
        w.start = s.target.start;
        w.born = s.target.born;
        w.file_off = s.target.file_off;
        // Claimed now, so a target posted meanwhile is measured from here.
        if (w.drop.count) s.dropped = w.drop.from + w.drop.count;
        if (w.read.count) s.done = w.read.from + w.read.count;
        return true;
    }
    return false;
}

void *worker_main(void *) {
    pthread_mutex_lock(&g_lock);
    for (;;) {
        // Streams ended since the last look: their descriptors are ours to
        // close (never while a read of ours uses one).
        for (Slot &s : g_slots)
            if (!s.used && s.fd >= 0) {
                close(s.fd);
                s.fd = -1;
            }
        Work w;
        if (!pick(w)) {
            pthread_cond_wait(&g_wake, &g_lock);
            continue;
        }
        // The descriptor stays open while we use it: only this thread
        // closes a slot's descriptor (prefetch_end only marks it).
        g_busy_start = w.start;
        pthread_mutex_unlock(&g_lock);
        if (!g_buf && w.read.count) { // on first use: an idle process keeps its 4 MiB
            void *b = mmap(nullptr, kChunkPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            g_buf = b == MAP_FAILED ? nullptr : b; // none: nothing read (RLIMIT_AS), drops still done
        }
        if (w.drop.count) {
            madvise((void *)(w.start + w.drop.from * kPage), w.drop.count * kPage, MADV_PAGEOUT);
            stats_on_prefetch(0, w.drop.count * kPage);
        }
        if (w.read.count && g_buf) {
            ssize_t got = pread(w.fd, g_buf, w.read.count * kPage, (off_t)(w.file_off + w.read.from * kPage));
            if (got > 0) stats_on_prefetch((uint64_t)got, 0);
        }
        pthread_mutex_lock(&g_lock);
        g_busy_start = 0;
        pthread_cond_broadcast(&g_idle);
    }
    return nullptr;
}
} // namespace

bool prefetch_start(const PrefetchTarget &t, int fd) {
    if (fd < 0) return false;
    pthread_mutex_lock(&g_lock);
    if (prefetch_kept_off(t.start)) { // read under the lock: keep_off's end of streams comes after
        pthread_mutex_unlock(&g_lock);
        close(fd);
        return false;
    }
    Slot *free_slot = nullptr;
    for (Slot &s : g_slots)
        if (!s.used && s.fd < 0) {
            free_slot = &s;
            break;
        }
    if (!free_slot || !g_started) {
        pthread_mutex_unlock(&g_lock);
        close(fd);
        return false;
    }
    free_slot->used = true;
    free_slot->fd = fd;
    free_slot->target = t;
    free_slot->done = t.front;
    // What the reader passed before this stream began is not ours to judge.
    free_slot->dropped = t.drop_from < t.front ? t.drop_from : t.front;
    pthread_cond_signal(&g_wake);
    pthread_mutex_unlock(&g_lock);
    return true;
}

void prefetch_thread_start() {
    pthread_mutex_lock(&g_lock);
    if (!g_started) g_started = start_background_thread(worker_main, "spillway-ahead", 256 * 1024);
    pthread_mutex_unlock(&g_lock);
}

bool prefetch_update(const PrefetchTarget &t) {
    pthread_mutex_lock(&g_lock);
    Slot *s = find(t.start, t.born);
    if (s && prefetch_kept_off(t.start)) s->used = false, s = nullptr; // the worker closes its descriptor
    if (s) {
        s->target = t;
        pthread_cond_signal(&g_wake);
    }
    pthread_mutex_unlock(&g_lock);
    return s != nullptr;
}

bool prefetch_pending(uintptr_t start, uint64_t born) {
    pthread_mutex_lock(&g_lock);
    const Slot *s = find(start, born);
    bool pending = s && (next_read(s->done, s->target.front, s->target.ahead_to, kChunkPages).count ||
                         g_busy_start == start);
    pthread_mutex_unlock(&g_lock);
    return pending;
}

void prefetch_end(uintptr_t start, uint64_t born) {
    pthread_mutex_lock(&g_lock);
    if (Slot *s = find(start, born)) {
        s->used = false; // the worker closes its descriptor when not using it
        pthread_cond_signal(&g_wake);
    }
    pthread_mutex_unlock(&g_lock);
}

bool prefetch_forget(uintptr_t start, size_t len) {
    auto inside = [&](uintptr_t a) { return a >= start && a - start < len; };
    bool had = false;
    pthread_mutex_lock(&g_lock);
    for (Slot &s : g_slots)
        if (s.used && inside(s.target.start)) s.used = false, had = true;
    pthread_cond_signal(&g_wake);
    while (g_started && g_busy_start && inside(g_busy_start)) {
        had = true;
        pthread_cond_wait(&g_idle, &g_lock);
    }
    pthread_mutex_unlock(&g_lock);
    return had;
}

void prefetch_keep_off(uintptr_t start, size_t len) {
    pthread_mutex_lock(&g_lock);
    g_off_start.store(start);
    g_off_len.store(len); // seq_cst: a detector's look that saw the move's pages sees this (sampler.cpp)
    pthread_mutex_unlock(&g_lock);
    prefetch_forget(start, len);
}

void prefetch_keep_off_end() { g_off_len.store(0); }

bool prefetch_kept_off(uintptr_t start) {
    size_t len = g_off_len.load();
    uintptr_t off = g_off_start.load();
    return len && start >= off && start - off < len;
}

void prefetch_after_fork_child() {
    g_off_len.store(0); // a move this child inherited mid-way is made private (fork_safety.h)
    // The worker did not survive the fork; its lock may have been held.
    g_lock = PTHREAD_MUTEX_INITIALIZER;
    g_wake = PTHREAD_COND_INITIALIZER;
    g_idle = PTHREAD_COND_INITIALIZER;
    g_busy_start = 0;
    for (Slot &s : g_slots) {
        if (s.fd >= 0) close(s.fd);
        s = Slot();
    }
    g_started = false;
}

uint64_t prefetch_read_bytes() { return g_stats.prefetch_read_bytes.load(); }
uint64_t prefetch_dropped_bytes() { return g_stats.prefetch_dropped_bytes.load(); }

} // namespace spillway
