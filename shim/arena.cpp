// arena.cpp — see arena.h. The free list is a sorted array of granule runs
// kept in memory we map ourselves, so the large path never re-enters malloc
// while it holds the lock, and a fork child inherits a consistent copy.
#include "arena.h"

#include "log.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace spillway::arena {

uintptr_t g_base = 0;
uintptr_t g_size = 0;

namespace {

struct Run {
    size_t first; // granule index
    size_t count;
};

Run *g_runs = nullptr;        // sorted by first, non-adjacent
size_t g_run_count = 0;
size_t g_run_capacity = 0;    // fixed at reserve(): one run per two granules is the worst case
std::atomic<Region *> *g_slots = nullptr;
size_t g_slot_count = 0;
size_t g_free_granules = 0;

void *map_table(size_t bytes) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

void insert_run(size_t at, Run r) {
    memmove(&g_runs[at + 1], &g_runs[at], (g_run_count - at) * sizeof(Run));
    g_runs[at] = r;
    g_run_count++;
}

void erase_run(size_t at) {
    memmove(&g_runs[at], &g_runs[at + 1], (g_run_count - at - 1) * sizeof(Run));
    g_run_count--;
}

// Index of the first run whose start is >= granule.
size_t lower_bound(size_t granule) {
    size_t lo = 0, hi = g_run_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g_runs[mid].first < granule) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Removes [first, first+count) from the free runs; it must lie in one run.
void carve(size_t run_index, size_t first, size_t count) {
    Run r = g_runs[run_index];
    size_t head = first - r.first;
    size_t tail = r.first + r.count - (first + count);
    if (head == 0 && tail == 0) erase_run(run_index);
    else if (head == 0) g_runs[run_index] = {first + count, tail};
    else if (tail == 0) g_runs[run_index].count = head;
    else {
        g_runs[run_index].count = head;
        insert_run(run_index + 1, {first + count, tail});
    }
    g_free_granules -= count;
}

} // namespace

bool reserve(size_t preferred) {
    // Try the preferred size, then smaller ones: a ulimit -v or a small
    // vm.mmap_min/overcommit setting must degrade routing, not start-up.
    for (size_t bytes = preferred; bytes >= (size_t(64) << 30); bytes /= 2) {
        size_t n = bytes / kGranule;
        size_t run_cap = n / 2 + 2;
        void *table = map_table(n * sizeof(std::atomic<Region *>));
        void *runs = map_table(run_cap * sizeof(Run));
        // Over-reserve one granule so the base can be granule-aligned.
        void *p = mmap(nullptr, bytes + kGranule, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (!table || !runs || p == MAP_FAILED) {
            if (table) munmap(table, n * sizeof(std::atomic<Region *>));
            if (runs) munmap(runs, run_cap * sizeof(Run));
            if (p != MAP_FAILED) munmap(p, bytes + kGranule);
            continue;
        }
        uintptr_t raw = (uintptr_t)p;
        uintptr_t base = (raw + kGranule - 1) & ~(uintptr_t)(kGranule - 1);
        if (base > raw) munmap(p, base - raw);
        uintptr_t end = base + bytes, raw_end = raw + bytes + kGranule;
        if (raw_end > end) munmap((void *)end, raw_end - end);
        g_slots = static_cast<std::atomic<Region *> *>(table);
        g_slot_count = n;
        g_runs = static_cast<Run *>(runs);
        g_run_capacity = run_cap;
        g_runs[0] = {0, n};
        g_run_count = 1;
        g_free_granules = n;
        g_base = base;
        std::atomic_thread_fence(std::memory_order_release);
        g_size = bytes; // last: owns() turns true only for a complete arena
        return true;
    }
    return false;
}

void release_for_tests() {
    if (!g_size) return;
    munmap((void *)g_base, g_size);
    munmap(g_slots, g_slot_count * sizeof(std::atomic<Region *>));
    munmap(g_runs, g_run_capacity * sizeof(Run));
    g_size = 0;
    g_base = 0;
    g_slots = nullptr;
    g_runs = nullptr;
    g_run_count = g_slot_count = g_free_granules = 0;
}

uintptr_t take(size_t bytes, size_t align) {
    size_t count = granules(bytes);
    size_t align_g = align / kGranule;
    if (align_g == 0) align_g = 1;
    // Address alignment == granule-index alignment only if base is aligned too.
    for (size_t i = 0; i < g_run_count; i++) {
        Run r = g_runs[i];
        uintptr_t addr = g_base + r.first * kGranule;
        uintptr_t aligned = (addr + align - 1) & ~(uintptr_t)(align - 1);
        size_t first = (aligned - g_base) / kGranule;
        if (first + count <= r.first + r.count) {
            carve(i, first, count);
            return g_base + first * kGranule;
        }
    }
    return 0;
}

bool extend(uintptr_t start, size_t old_bytes, size_t new_bytes) {
    size_t old_end = (start - g_base) / kGranule + granules(old_bytes);
    size_t need = granules(new_bytes) - granules(old_bytes);
    if (need == 0) return true;
    size_t i = lower_bound(old_end);
    if (i == g_run_count || g_runs[i].first != old_end || g_runs[i].count < need) return false;
    carve(i, old_end, need);
    return true;
}

void give_back(uintptr_t start, size_t bytes) {
    size_t first = (start - g_base) / kGranule, count = granules(bytes);
    size_t i = lower_bound(first);
    bool join_prev = i > 0 && g_runs[i - 1].first + g_runs[i - 1].count == first;
    bool join_next = i < g_run_count && g_runs[i].first == first + count;
    if (join_prev && join_next) {
        g_runs[i - 1].count += count + g_runs[i].count;
        erase_run(i);
    } else if (join_prev) {
        g_runs[i - 1].count += count;
    } else if (join_next) {
        g_runs[i].first = first;
        g_runs[i].count += count;
    } else if (g_run_count < g_run_capacity) {
        insert_run(i, {first, count});
    } else {
        return; // cannot happen: runs never exceed half the granules
    }
    g_free_granules += count;
}

void lose(uintptr_t start, size_t bytes) {
    SPW_LOG(warn, "address range %p+%zu inside the arena was taken by another mapping; "
                  "leaving it unused", (void *)start, bytes);
}

size_t free_bytes() { return g_free_granules * kGranule; }

bool unmap_to_reserved(uintptr_t start, size_t bytes) {
    size_t len = granules(bytes) * kGranule;
    void *p = mmap((void *)start, len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    return p != MAP_FAILED;
}

void publish(Region *r, uintptr_t start, size_t bytes) {
    size_t first = (start - g_base) / kGranule, count = granules(bytes);
    for (size_t i = 0; i < count; i++) g_slots[first + i].store(r, std::memory_order_release);
}

void unpublish(uintptr_t start, size_t bytes) {
    size_t first = (start - g_base) / kGranule, count = granules(bytes);
    for (size_t i = 0; i < count; i++) g_slots[first + i].store(nullptr, std::memory_order_release);
}

Region *region_at(const void *p) {
    if (!owns(p)) return nullptr;
    return g_slots[((uintptr_t)p - g_base) / kGranule].load(std::memory_order_acquire);
}

} // namespace spillway::arena
