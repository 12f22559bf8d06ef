// arena.cpp — see arena.h. The free list is a sorted array of granule runs
// kept in memory we map ourselves, so the large path never re-enters malloc
// while it holds the lock, and a fork child inherits a consistent copy. The
// slot table is two-level (a page of slots per kSlotPageBytes of arena,
// mapped as the range grows and never unmapped), so lock-free readers never
// see it move and it costs 4 KiB per GiB in use.
#include "registry/arena.h"

#include "log.h"
#include "log_repeats.h"

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace spillway::arena {

namespace {

struct Run {
    size_t first; // granule index
    size_t count;
};

constexpr size_t kSlotsPerPage = kSlotPageBytes / kGranule;
constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

Run *g_runs = nullptr;        // sorted by first, non-adjacent
size_t g_run_count = 0;
size_t g_run_capacity = 0;    // one run per two granules of the reservation is the worst case
std::atomic<std::atomic<Region *> *> *g_slot_pages = nullptr; // one entry per kSlotPageBytes
size_t g_slot_page_count = 0;
size_t g_max = 0;
size_t g_free_granules = 0;
bool g_growth_warned = false;

void *map_table(size_t bytes) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kReserveFlags, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
size_t size_now() { return g_size.load(std::memory_order_relaxed); }

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

// Adds [first, first+count) to the free runs, joining its neighbours.
void add_free(size_t first, size_t count) {
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

// Room in the run table for a reservation of `granule_count` granules.
bool ensure_run_capacity(size_t granule_count) {
    size_t need = granule_count / 2 + 2;
    if (need <= g_run_capacity) return true;
    size_t cap = need * 2;
    Run *runs = static_cast<Run *>(map_table(cap * sizeof(Run)));
    if (!runs) return false;
    if (g_runs) {
        memcpy(runs, g_runs, g_run_count * sizeof(Run));
        munmap(g_runs, g_run_capacity * sizeof(Run));
    }
    g_runs = runs;
    g_run_capacity = cap;
    return true;
}

// Slot pages for the first `bytes` of the arena.
bool ensure_slot_pages(size_t bytes) {
    size_t pages = round_up(bytes, kSlotPageBytes) / kSlotPageBytes;
    for (size_t i = 0; i < pages && i < g_slot_page_count; i++) {
        if (g_slot_pages[i].load(std::memory_order_relaxed)) continue;
        void *page = map_table(kSlotsPerPage * sizeof(std::atomic<Region *>));
        if (!page) return false;
        g_slot_pages[i].store(static_cast<std::atomic<Region *> *>(page), std::memory_order_release);
    }
    return true;
}

// One line: what failed, why, and what to change.
void growth_failed(size_t want, int err) {
    if (g_growth_warned) return;
    g_growth_warned = true;
    const char *what = err == EEXIST ? "another mapping sits right after it"
                       : err == ENOMEM ? "the kernel refused more address space"
                       : err == E2BIG ? "that is past its maximum"
                                      : strerror(err);
    size_t more_mib = (want - size_now() + (size_t(1) << 20) - 1) >> 20;
    struct rlimit as {};
    bool limited = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    char remedy[160];
    // Under a limit, even "another mapping sits right after it" comes from it:
    // start-up could only find a gap as large as the limit allowed.
    if (limited && err != E2BIG)
        snprintf(remedy, sizeof remedy, "raise ulimit -v (RLIMIT_AS, now %llu MiB) by at least %zu MiB",
                 (unsigned long long)(as.rlim_cur >> 20), more_mib);
    else if (err == ENOMEM)
        snprintf(remedy, sizeof remedy, "no ulimit -v is set, so raise vm.max_map_count (sysctl) or "
                                        "free memory");
    else if (err == E2BIG)
        snprintf(remedy, sizeof remedy, "free large allocations sooner (%zu MiB of them are live)",
                 used_bytes() >> 20);
    else
        snprintf(remedy, sizeof remedy, "no limit is set to raise; a larger SPILLWAY_THRESHOLD sends "
                                        "fewer allocations there");
    SPW_LOG(warn, "cannot grow the address range for large regions from %zu to %zu MiB (%s); "
                  "allocations that do not fit use ordinary memory and are NOT protected by "
                  "spillway: %s", size_now() >> 20, want >> 20, what, remedy);
}

// Grows the reservation so that it covers granules [0, end_granule).
bool grow_to(size_t end_granule) {
    size_t old = size_now();
    if (end_granule > g_max / kGranule) {
        growth_failed(end_granule * kGranule, E2BIG);
        return false;
    }
    size_t want = round_up(end_granule * kGranule, kMinStep);
    if (want < old + step_after(old)) want = old + step_after(old); // geometric: few growth calls
    if (want > g_max) want = g_max;
    if (want <= old) return true;
    if (!ensure_slot_pages(want) || !ensure_run_capacity(want / kGranule)) {
        growth_failed(want, ENOMEM);
        return false;
    }
    void *at = (void *)(g_base + old);
    void *p = mmap(at, want - old, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != at) {
        int err = p == MAP_FAILED ? errno : EEXIST;
        if (p != MAP_FAILED) munmap(p, want - old); // a kernel without NOREPLACE took it as a hint
        growth_failed(want, err);
        return false;
    }
    add_free(old / kGranule, (want - old) / kGranule);
    g_size.store(want, std::memory_order_release);
    return true;
}

// Gives back the top of the reservation when more than one step of it is free
// (growth by half and shrinking past a step of slack leave a band between
// them, so a region freed and taken again at the top does not remap).
void maybe_shrink() {
    if (!g_run_count) return;
    size_t old = size_now();
    Run &last = g_runs[g_run_count - 1];
    if (last.first + last.count != old / kGranule) return;
    size_t used_top = round_up(last.first * kGranule, kMinStep);
    size_t keep = used_top + step_after(used_top);
    if (keep < kInitialBytes) keep = kInitialBytes;
    if (keep >= old) return;
    // Smaller first, then unmap: owns() must never claim what lands there next.
    g_size.store(keep, std::memory_order_release);
    munmap((void *)(g_base + keep), old - keep);
    size_t dropped = (old - keep) / kGranule;
    last.count -= dropped;
    if (!last.count) erase_run(g_run_count - 1);
    g_free_granules -= dropped;
}

// The largest free gap of the address space, read from /proc/self/maps
// (false if it cannot be read). Read rather than probed with mmap: under an
// address-space limit (RLIMIT_AS, which the engine, started at first use,
// may meet already lowered) a probe can only be as large as the budget
// left, so its middle lies a few hundred MiB from the next mapping, and
// ordinary mappings soon fill the room the range must grow into. No
// malloc: the engine may be starting inside one.
bool largest_gap(uintptr_t *gap_start, size_t *gap_len) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    constexpr uintptr_t kUserTop = uintptr_t(1) << 47; // vsyscall and above are not ours
    char buf[4096];
    size_t have = 0;
    uintptr_t prev_end = kGranule; // the low pages are never mappable
    uintptr_t best_start = 0;
    size_t best_len = 0;
    bool any = false;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n <= 0) break;
        have += (size_t)n;
        size_t line_start = 0;
        for (size_t i = 0; i < have; i++) {
            if (buf[i] != '\n') continue;
            uintptr_t lo = 0, hi = 0;
            size_t j = line_start;
            for (; j < i && buf[j] != '-'; j++) lo = lo * 16 + (uintptr_t)(buf[j] <= '9' ? buf[j] - '0' : (buf[j] | 0x20) - 'a' + 10);
            for (j++; j < i && buf[j] != ' '; j++) hi = hi * 16 + (uintptr_t)(buf[j] <= '9' ? buf[j] - '0' : (buf[j] | 0x20) - 'a' + 10);
            line_start = i + 1;
            if (lo >= kUserTop) continue;
            any = true;
            if (lo > prev_end && lo - prev_end > best_len) {
                best_start = prev_end;
                best_len = lo - prev_end;
            }
            if (hi > prev_end) prev_end = hi;
        }
        memmove(buf, buf + line_start, have - line_start);
        have -= line_start;
        if (have == sizeof buf) have = 0; // a line longer than the buffer: skip it
    }
    close(fd);
    if (!any || !best_len) return false;
    *gap_start = best_start;
    *gap_len = best_len;
    return true;
}

// Where the range starts: the middle of the largest free gap (up to max),
// so that ordinary mappings, placed top-down (or bottom-up on a legacy
// layout) from the gap's edges, reach the room the range grows into last.
// The first step is reserved there.
uintptr_t place(size_t max) {
    uintptr_t gap_start = 0;
    size_t gap_len = 0;
    if (largest_gap(&gap_start, &gap_len) && gap_len >= 4 * kInitialBytes) {
        (void)max; // the gap's middle, whatever its size: room on both sides
        uintptr_t mid = (gap_start + gap_len / 2 + kGranule - 1) & ~(uintptr_t)(kGranule - 1);
        void *q = mmap((void *)mid, kInitialBytes, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
        if (q == (void *)mid) return mid;
        if (q != MAP_FAILED) munmap(q, kInitialBytes);
    }
    // No /proc, or the gap was taken meanwhile: probe with mmap.
    for (size_t probe = max; probe >= 4 * kInitialBytes; probe /= 2) {
        void *p = mmap(nullptr, probe, PROT_NONE, kReserveFlags, -1, 0);
        if (p == MAP_FAILED) continue;
        munmap(p, probe);
        uintptr_t mid = ((uintptr_t)p + probe / 2 + kGranule - 1) & ~(uintptr_t)(kGranule - 1);
        void *q = mmap((void *)mid, kInitialBytes, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
        if (q == (void *)mid) return mid;
        if (q != MAP_FAILED) munmap(q, kInitialBytes);
    }
    // No large gap (an address-space limit already in force): anywhere,
    // over-reserving one granule so the base can be granule-aligned.
    void *p = mmap(nullptr, kInitialBytes + kGranule, PROT_NONE, kReserveFlags, -1, 0);
    if (p == MAP_FAILED) return 0;
    uintptr_t raw = (uintptr_t)p;
    uintptr_t base = (raw + kGranule - 1) & ~(uintptr_t)(kGranule - 1);
    if (base > raw) munmap(p, base - raw);
    uintptr_t end = base + kInitialBytes, raw_end = raw + kInitialBytes + kGranule;
    if (raw_end > end) munmap((void *)end, raw_end - end);
    return base;
}

} // namespace

bool reserve(size_t max) {
    if (size_now()) return true;
    max = max / kSlotPageBytes * kSlotPageBytes;
    if (max < kSlotPageBytes) max = kSlotPageBytes;
    size_t pages = max / kSlotPageBytes;
    auto *top = static_cast<std::atomic<std::atomic<Region *> *> *>(
        map_table(pages * sizeof(std::atomic<Region *> *)));
    if (!top) return false;
    uintptr_t base = place(max);
    if (!base) {
        munmap(top, pages * sizeof(std::atomic<Region *> *));
        return false;
    }
    g_slot_pages = top;
    g_slot_page_count = pages;
    g_max = max;
    g_base = base;
    if (!ensure_slot_pages(kInitialBytes) || !ensure_run_capacity(kInitialBytes / kGranule)) {
        release_for_tests();
        return false;
    }
    g_runs[0] = {0, kInitialBytes / kGranule};
    g_run_count = 1;
    g_free_granules = kInitialBytes / kGranule;
    g_size.store(kInitialBytes, std::memory_order_release); // last: owns() turns true only for a complete arena
    return true;
}

size_t max_bytes() { return g_max; }

void release_for_tests() {
    if (size_now()) munmap((void *)g_base, size_now());
    for (size_t i = 0; i < g_slot_page_count; i++)
        if (auto *page = g_slot_pages[i].load()) munmap(page, kSlotsPerPage * sizeof(std::atomic<Region *>));
    if (g_slot_pages) munmap(g_slot_pages, g_slot_page_count * sizeof(std::atomic<Region *> *));
    if (g_runs) munmap(g_runs, g_run_capacity * sizeof(Run));
    g_size.store(0);
    g_base = 0;
    g_slot_pages = nullptr;
    g_runs = nullptr;
    g_run_count = g_run_capacity = g_slot_page_count = g_free_granules = g_max = 0;
    g_growth_warned = false;
}

uintptr_t take(size_t bytes, size_t align) {
    size_t count = granules(bytes);
    // Address alignment == granule-index alignment only if base is aligned too.
    for (int attempt = 0; attempt < 2; attempt++) {
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
        if (attempt) break;
        // Nothing fits: grow so that it fits at the top (after the free
        // run that reaches the top, if there is one).
        size_t from = size_now() / kGranule;
        if (g_run_count && g_runs[g_run_count - 1].first + g_runs[g_run_count - 1].count == from)
            from = g_runs[g_run_count - 1].first;
        uintptr_t addr = g_base + from * kGranule;
        uintptr_t aligned = (addr + align - 1) & ~(uintptr_t)(align - 1);
        if (aligned < addr || count > (g_max / kGranule)) { // wrapped, or more than the arena
            growth_failed(g_max + kGranule, E2BIG);
            return 0;
        }
        if (!grow_to((aligned - g_base) / kGranule + count)) return 0;
    }
    return 0;
}

bool extend(uintptr_t start, size_t old_bytes, size_t new_bytes) {
    size_t old_end = (start - g_base) / kGranule + granules(old_bytes);
    size_t need = granules(new_bytes) - granules(old_bytes);
    if (need == 0) return true;
    size_t i = lower_bound(old_end);
    bool run_after = i < g_run_count && g_runs[i].first == old_end;
    if (!run_after || g_runs[i].count < need) {
        size_t top = size_now() / kGranule;
        bool at_top = run_after ? g_runs[i].first + g_runs[i].count == top : old_end == top;
        if (!at_top || need > g_max / kGranule || !grow_to(old_end + need)) return false;
        i = lower_bound(old_end);
        if (i == g_run_count || g_runs[i].first != old_end || g_runs[i].count < need) return false;
    }
    carve(i, old_end, need);
    return true;
}

void give_back(uintptr_t start, size_t bytes) {
    add_free((start - g_base) / kGranule, granules(bytes));
    maybe_shrink();
}

void lose(uintptr_t start, size_t bytes, int err) {
    if (!err) return;
    static RepeatedWarning repeats; // one line per reason, not one per region
    LogLevel at = repeats.level(err);
    SPW_LOG_AT(at, "address range %p+%zu inside the arena stays unused for the rest of the process "
                   "(%s): only address space is lost; %s%s",
               (void *)start, bytes, err == EEXIST ? "another mapping was placed over it" : strerror(err),
               err == EEXIST ? "nothing to do (something in the program maps memory with MAP_FIXED "
                               "over spillway's range: a bug there, or a debugger)"
                             : "raise vm.max_map_count (sysctl), which limits the mappings a process may have",
               RepeatedWarning::tail(at));
}

size_t free_bytes() { return g_free_granules * kGranule; }
size_t used_bytes() { return size_now() - free_bytes(); }

bool unmap_to_reserved(uintptr_t start, size_t bytes) {
    size_t len = granules(bytes) * kGranule;
    void *p = mmap((void *)start, len, PROT_NONE, kReserveFlags | MAP_FIXED, -1, 0);
    return p != MAP_FAILED;
}

static std::atomic<Region *> &slot(size_t granule) {
    return g_slot_pages[granule / kSlotsPerPage].load(std::memory_order_acquire)[granule % kSlotsPerPage];
}

void publish(Region *r, uintptr_t start, size_t bytes) {
    size_t first = (start - g_base) / kGranule, count = granules(bytes);
    for (size_t i = 0; i < count; i++) slot(first + i).store(r, std::memory_order_release);
}

void unpublish(uintptr_t start, size_t bytes) {
    size_t first = (start - g_base) / kGranule, count = granules(bytes);
    for (size_t i = 0; i < count; i++) slot(first + i).store(nullptr, std::memory_order_release);
}

Region *region_at(const void *p) {
    if (!owns(p)) return nullptr;
    return slot(((uintptr_t)p - g_base) / kGranule).load(std::memory_order_acquire);
}

} // namespace spillway::arena
