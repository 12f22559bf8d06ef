// recycle.cpp — see recycle.h.
#include "large/recycle.h"

#include "os/cgroup.h"
#include "clock.h"
#include "backing/reaper.h"
#include "registry/region.h"

#include <atomic>
#include <mutex>

namespace spillway {

void large_retire(Region *r); // large.h (kept out of the include graph)

namespace {
// Oldest first. Guarded by the large lock.
struct Entry {
    Region *r;
    uint64_t kept_ns;
};
Entry g_slots[kRecycleSlots];
int g_count = 0;
size_t g_bytes = 0;
std::atomic<uint64_t> g_reuses{0};

// Bytes the cache may hold: kRecycleMaxBytes, and under a memory limit at
// most an eighth of it. Freed pages left dirty in the cache are written back
// by reclaim for nothing when the cgroup fills: in a 256 MiB container a
// 512 MiB cache would be all waste. The limit is read once (the first free
// that could be kept); a container's limit does not move under a job.
std::atomic<uint64_t> g_cap{0}; // 0: not read yet

size_t cache_cap() {
    std::atomic<uint64_t> &cap = g_cap;
    uint64_t c = cap.load(std::memory_order_relaxed);
    if (!c) {
        MemoryFigures f = read_memory_figures();
        c = f.limited && f.limit / 8 < kRecycleMaxBytes ? f.limit / 8 : kRecycleMaxBytes;
        if (!c) c = 1; // a limit under 8 bytes: nothing fits, but never read again
        cap.store(c, std::memory_order_relaxed);
    }
    return c;
}

bool eligible(const Region *r, size_t cap) {
    return r->backing == Backing::disk && r->file && !r->file->foreign && !r->file->exported[0] &&
           !r->is_private && !r->left_pool && r->map_len <= cap;
}

// Caller holds the large lock.
Region *remove_at(int i) {
    Region *r = g_slots[i].r;
    g_bytes -= r->map_len;
    for (int j = i + 1; j < g_count; j++) g_slots[j - 1] = g_slots[j];
    g_count--;
    return r;
}

void give_back(Region **out, int n) {
    for (int i = 0; i < n; i++) reaper_submit(out[i]);
}
} // namespace

void recycle_init() { reaper_set_trim(recycle_trim); }

bool recycle_keep(Region *r) {
    size_t cap = cache_cap();
    if (!eligible(r, cap)) return false;
    Region *evicted[kRecycleSlots];
    int n = 0;
    uint64_t now = monotonic_ns();
    {
        std::lock_guard<std::mutex> guard(large_lock());
        // The idle ones first (also ages the cache when no reaper thread
        // runs), then the oldest until r fits.
        while (g_count && now - g_slots[0].kept_ns > kRecycleIdleNs) evicted[n++] = remove_at(0);
        while (g_count && (g_count == kRecycleSlots || g_bytes + r->map_len > cap))
            evicted[n++] = remove_at(0);
        g_slots[g_count++] = {r, now};
        g_bytes += r->map_len;
    }
    give_back(evicted, n);
    reaper_wake_for_trim();
    return true;
}

Region *recycle_take(size_t map_len, size_t align) {
    for (int i = g_count - 1; i >= 0; i--) { // the most recently freed: its pages are warmest
        Region *r = g_slots[i].r;
        if (r->map_len == map_len && r->start % align == 0 && eligible(r, SIZE_MAX)) {
            g_reuses.fetch_add(1, std::memory_order_relaxed);
            return remove_at(i);
        }
    }
    return nullptr;
}

bool recycle_trim(bool all) {
    Region *evicted[kRecycleSlots];
    int n = 0;
    bool more;
    uint64_t now = monotonic_ns();
    {
        std::lock_guard<std::mutex> guard(large_lock());
        while (g_count && (all || now - g_slots[0].kept_ns > kRecycleIdleNs)) evicted[n++] = remove_at(0);
        more = g_count > 0;
    }
    give_back(evicted, n);
    return more;
}

size_t recycle_count() {
    std::lock_guard<std::mutex> guard(large_lock());
    return (size_t)g_count;
}

uint64_t recycle_reuses() { return g_reuses.load(std::memory_order_relaxed); }

void recycle_read_limit_again_for_tests() { g_cap.store(0); }

void recycle_after_fork_child(bool trusted) {
    Region *held[kRecycleSlots];
    int n = g_count;
    for (int i = 0; i < n; i++) held[i] = g_slots[i].r;
    g_count = 0;
    g_bytes = 0;
    g_reuses.store(0, std::memory_order_relaxed);
    if (!trusted) return;
    for (int i = 0; i < n; i++) large_retire(held[i]);
}

} // namespace spillway
