// large.cpp — see large.h. Data path: size check (preload.cpp) → call site
// (callsite.cpp) → policy (policy.cpp) → backing (backing.cpp) → registry
// (region.cpp, arena.cpp).
#include "large/large.h"
#include "clock.h"

#include "registry/arena.h"
#include "backing/backing.h"
#include "sites/callsite.h"
#include "os/cgroup.h"
#include "log.h"
#include "log_repeats.h"
#include "large/fork_snapshot.h"
#include "large/policy.h"
#include "backing/reaper.h"
#include "large/recycle.h"
#include "tiering/rehome.h"
#include "tiering/tiering_loop.h"
#include "access/access_detector.h" // random_keeps_recency
#include "access/prefetch_worker.h"
#include "access/sampler.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "small_alloc.h"
#include "stats/stats.h"
#include "tiering/writeback.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mimalloc.h>
#include <sys/mman.h>
#include <ctime>
#include <unistd.h>

namespace spillway {

static const Settings *g_settings = nullptr;
static size_t g_page = 4096;
// Untrusted fork child (fork_safety.h): the arena and the reaper queue may
// be half-updated by the frame a signal handler interrupted. Never touched.
static bool g_untrusted = false;

void large_init(const Settings &s) {
    g_settings = &s;
    g_page = (size_t)sysconf(_SC_PAGESIZE);
    reaper_init(large_retire, close_spill_file);
    reaper_set_settle(snapshot_settle);
    tiering_set_snapshot_hooks(snapshot_spill, snapshot_could_outgrow);
    recycle_init();
}

const Settings &large_settings() { return *g_settings; }
bool large_active() { return g_settings && arena::g_size && !g_untrusted; }

static size_t page_round(size_t n) { return (n + g_page - 1) & ~(g_page - 1); }
static size_t va_round(size_t n) { return arena::granules(n) * arena::kGranule; }

Region *region_record(uintptr_t start, size_t size, size_t map_len) {
    Region *r = region_new();
    if (!r) return nullptr;
    r->start = start;
    r->size = size;
    r->map_len = map_len;
    r->va_len = va_round(map_len);
    r->born_ns = monotonic_ns();
    return r;
}

void register_region(Region *r) {
    std::lock_guard<std::mutex> guard(large_lock());
    registry_link(r);
    arena::publish(r, r->start, r->va_len);
}

[[noreturn]] static void invalid_pointer(const char *fn, const void *p) {
    SPW_LOG(error, "%s(): %p is not the start of a live spillway region (double free or "
                   "corrupted pointer); aborting like glibc would: find the bug by running the "
                   "program without spillway under AddressSanitizer or valgrind", fn, p);
    abort();
}

// Runs one backing over r's range and stores the placement it returns.
static int back(Region *r, int (*backing)(uintptr_t, size_t, Placement *)) {
    Placement p;
    int err = backing(r->start, r->map_len, &p);
    if (err == 0) set_placement(r, p);
    return err;
}

// Carries out the decision, falling back to anonymous memory with one
// warning line that names the reason. Returns 0 or errno (nothing mapped).
static int place(Region *r, const Decision &d) {
    int err = 0;
    if (d.backing == Backing::none) return ENOENT; // a file was required and none can be had
    if (d.backing == Backing::disk) {
        if (!(err = back(r, d.own_file ? back_disk_own_file : back_disk))) return 0;
        if (d.fallback == Backing::none) return err; // the caller required a file: it falls back itself
        Fallback why = disk_usable() ? fallback_from_errno(err) : Fallback::no_spill_dir;
        stats_on_fallback(why);
        if (r->site) r->site->fallbacks.fetch_add(1, std::memory_order_relaxed);
        // Every allocation on a full disk would say the same: once per
        // reason (the stats count each fallback by reason).
        static RepeatedWarning repeats;
        LogLevel at = repeats.level((int)why);
        SPW_LOG_AT(at, "could not reserve %zu bytes in %s (%s: %s); this allocation uses %s "
                       "memory and is NOT protected from the memory limit: %s%s",
                   r->map_len, spill_dir_path().c_str(), fallback_name(why),
                   disk_usable() ? strerror(err) : disk_unusable_reason().c_str(),
                   d.fallback == Backing::memory ? "memfd" : "anonymous", fallback_remedy(why),
                   RepeatedWarning::tail(at));
        if (d.fallback == Backing::memory && back(r, back_memory) == 0) return 0;
    } else if (d.backing == Backing::memory) {
        if (!(err = back(r, back_memory))) return 0;
        stats_on_fallback(Fallback::memfd_failed);
        Fallback cause = fallback_from_errno(err);
        static RepeatedWarning repeats;
        LogLevel at = repeats.level(err);
        SPW_LOG_AT(at, "memfd region of %zu bytes failed (%s); it uses anonymous memory instead, "
                       "which aware code cannot share with another process without a copy: %s%s",
                   r->map_len, strerror(err),
                   fallback_remedy(cause == Fallback::other ? Fallback::memfd_failed : cause),
                   RepeatedWarning::tail(at));
    }
    return back(r, back_anon);
}

// A large allocation of site's the program freed after life_ns.
static void note_lifetime(CallSite *site, uint64_t life_ns) {
    site->freed.fetch_add(1, std::memory_order_relaxed);
    uint64_t longest = site->longest_life_ns.load(std::memory_order_relaxed);
    while (life_ns > longest &&
           !site->longest_life_ns.compare_exchange_weak(longest, life_ns, std::memory_order_relaxed)) {
    }
}

// The bookkeeping of a new allocation in region r (fresh or recycled),
// after its bytes are mapped and registered.
static void note_allocation(Region *r) {
    stats_on_alloc(r->backing, r->map_len);
    if (CallSite *site = r->site) {
        site->allocs.fetch_add(1, std::memory_order_relaxed);
        site->bytes.fetch_add(r->map_len, std::memory_order_relaxed);
        site->by_backing[(int)r->backing].fetch_add(1, std::memory_order_relaxed);
    }
    if (r->backing == Backing::disk) {
        sampler_notice();   // the access detector: verdicts, read-ahead of streams, site learning
        writeback_notice(); // keeps its dirty pages few (writeback.h)
    }
    // Regions the tiering controller may move (tiering_loop.h): any backing.
    if (r->map_len >= g_settings->tiering.min_size) tiering_notice();
}

// A freed disk region of the same length, taken over (recycle.h) when the
// decision is a disk region like it: no new mapping, no page faulted in
// again. Zeroed unless the request was a plain malloc. nullptr if none.
static Region *recycled(const Request &req, const Decision &d, size_t map_len, size_t align) {
    if (d.backing != Backing::disk || d.own_file) return nullptr;
    Region *r;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        r = recycle_take(map_len, align);
        if (!r) return nullptr;
        r->size = req.size;
        r->site = const_cast<CallSite *>(req.site);
        r->born_ns = monotonic_ns(); // the detector and the sampler see a new region
        r->reused = true;
        r->phase.store(0, std::memory_order_relaxed);
        r->phase_since_ns.store(0, std::memory_order_relaxed);
        r->fault_rate.store(0, std::memory_order_relaxed);
        r->advice_pinned = d.advice_pinned;
        r->object_blocks = (req.flags & kFlagObjectBlocks) != 0;
        r->freed.store(false, std::memory_order_release);
    }
    // A probe that found the last owner's region before the new birth above
    // may still be unmapping its pages: the new owner starts after it.
    wait_out_probes(r);
    advise_region(r, initial_advice(map_len, d.random_advice));
    if (!(req.flags & kFlagMayBeDirty)) memset((void *)r->start, 0, map_len);
    stats_on_free(r->backing, map_len); // the last owner's free, counted when its region leaves
    return r;
}

void *large_alloc(size_t size, size_t align, unsigned flags, bool *use_small) {
    *use_small = g_untrusted;
    if (g_untrusted) return nullptr;
    if (size > (size_t)PTRDIFF_MAX - 2 * arena::kGranule || align > (size_t(1) << 40)) {
        errno = ENOMEM;
        return nullptr;
    }
    size_t map_len = page_round(size ? size : 1);
    if (align < arena::kGranule) align = arena::kGranule;

    Request req;
    req.size = size;
    req.flags = flags;
    req.site = g_settings->callsites && !(flags & kFlagObjectBlocks) ? callsite_capture() : nullptr;
    PolicyInputs in;
    in.settings = g_settings;
    in.disk_usable = disk_usable();
    if (request_access(req) == Access::random || (req.site && req.site->short_lived_in_profile))
        in.headroom = memory_headroom();
    Decision d = decide(req, in);

    if (Region *r = recycled(req, d, map_len, align)) {
        note_allocation(r);
        SPW_LOG(debug, "%zu bytes at %p -> recycled %s region", size, (void *)r->start, backing_name(r->backing));
        return (void *)r->start;
    }

    uintptr_t start;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        start = arena::take(map_len, align);
    }
    if (!start) {
        stats_on_fallback(Fallback::arena_full);
        *use_small = true;
        return nullptr;
    }
    Region *r = region_record(start, size, map_len);
    if (!r) {
        std::lock_guard<std::mutex> guard(large_lock());
        arena::give_back(start, map_len);
        errno = ENOMEM;
        return nullptr;
    }
    r->site = const_cast<CallSite *>(req.site);
    if (int err = place(r, d)) {
        arena::unmap_to_reserved(start, r->va_len);
        {
            std::lock_guard<std::mutex> guard(large_lock());
            arena::give_back(start, r->va_len);
        }
        region_delete(r);
        if (d.fallback == Backing::none) { // spillway_alloc_disk: the caller has its own fallback
            SPW_LOG(debug, "no spill file for a %zu-byte allocation that requires one (%s)", size,
                    strerror(err));
            errno = err;
            return nullptr;
        }
        SPW_LOG(warn, "no memory for a %zu-byte allocation (%s): malloc returns NULL, as it would "
                      "without spillway; raise the memory limit, ulimit -v or vm.max_map_count, "
                      "or allocate less", size, strerror(err));
        errno = ENOMEM;
        return nullptr;
    }
    // Advice is part of placement (backing.h initial_advice); from here on
    // the access detector keeps it following the region's phase, unless
    // the caller or a rule named the access (then it only reads ahead of a
    // stream: the kernel's read-around stays off, as asked).
    r->advice_pinned = d.advice_pinned;
    r->object_blocks = (req.flags & kFlagObjectBlocks) != 0;
    advise_region(r, initial_advice(map_len, d.random_advice));
    // Anonymous regions start on 2 MiB granules: 2 MiB pages instead of 512
    // faults of 4 KiB (what numpy asks for its own arrays); unmapping is
    // also 512x fewer pages for the reaper.
    if (r->backing == Backing::anon) madvise((void *)start, map_len, MADV_HUGEPAGE);
    if (d.loud && r->backing == Backing::disk) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            SPW_LOG(warn, "a random-access allocation of %zu bytes went to disk because the cgroup "
                          "has no headroom for it in memory (%s); expect scattered writes to run "
                          "orders of magnitude slower than in RAM: raise the memory limit, lower "
                          "memory.reserve (now %llu MiB) or make the buffer smaller",
                    size, callsite_describe(r->site, 3).c_str(),
                    (unsigned long long)(g_settings->memory_reserve >> 20));
    }
    register_region(r);
    note_allocation(r);
    SPW_LOG(debug, "%zu bytes at %p -> %s (%s)", size, (void *)start, backing_name(r->backing), d.why);
    return (void *)start;
}

// The one fallback to the small path: the arena could not take the region.
static void *region_or_small(size_t size, size_t align, unsigned flags, bool zero) {
    bool use_small = false;
    void *p = large_alloc(size, align, flags, &use_small);
    if (p || !use_small) return p; // a region is born zeroed
    return small_alloc(size, align, zero);
}

void *large_allocate(size_t size, size_t align, bool zero) {
    // Below the threshold only mimalloc's alignment limit brings a request
    // here: anonymous memory, never a file (policy.h kFlagAlignmentOnly).
    unsigned flags = size < g_large_threshold ? kFlagAlignmentOnly : 0;
    if (!zero) flags |= kFlagMayBeDirty;
    return region_or_small(size, align, flags, zero);
}

void *large_allocate_flagged(size_t size, unsigned flags) { return region_or_small(size, 0, flags, false); }

// Frees a region: the program's free (died), or realloc's after it copied
// the bytes elsewhere (they live on: no lifetime is learned from it).
static void free_region(void *p, bool died) {
    Region *r = arena::region_at(p);
    if (!r || r->start != (uintptr_t)p) invalid_pointer("free", p);
    if (r->freed.exchange(true)) invalid_pointer("free", p); // seq_cst: against the probes' hold
    if (died && r->site) note_lifetime(r->site, monotonic_ns() - r->born_ns);
    if (g_untrusted) return; // stays mapped: retiring would touch the arena
    // A region over a named file (exported, or mapped with spillway_map) is
    // unmapped before free() returns: "free, then release the file by path"
    // must find no mapping left. The rest of its retirement goes to the
    // reaper like any other's: the close frees the file's blocks when its
    // name was removed first, and the pool range an exported region left
    // is punched; on a discard mount either can take seconds (reaper.h).
    // Unnamed files stay mapped for a same-sized allocation to take over
    // (recycle.h), or go to the reaper.
    if (r->file && r->file->exported[0]) {
        wait_out_probes(r); // a probe that checked r before it was freed ends first
        arena::unmap_to_reserved(r->start, r->va_len); // large_retire's unmap finds it done
        reaper_submit(r);
    } else if (!recycle_keep(r)) {
        reaper_submit(r);
    }
}

void large_free(void *p) { free_region(p, true); }

void large_retire(Region *r) {
    pin_region_for_good(r); // a tiering move under way finishes first; none starts after
    // Threads that found r in the registry under the large lock before it was
    // freed or pinned (the tiering snapshot, the writeback pass) may still be
    // reading r->file: wait them out before the file is released. Later
    // ones see freed or the pin and skip r. It leaves the registry now, not
    // after its file is closed: a fork meanwhile (which holds the large
    // lock) must not find it there with a closed descriptor to remap.
    {
        std::lock_guard<std::mutex> readers_done(large_lock());
        registry_unlink(r);
    }
    stats_on_free(r->backing, r->map_len);
    // A stream's reads ahead end before the range is punched: the worker
    // hears of the free only at the sampler's next tick, and a pool range
    // goes to the next region at this address, whose page cache the old
    // stream's reads would fill (pages it never wrote, or read back from
    // disk: seen in test_rehome's promotion-copy case).
    if (r->backing == Backing::disk) prefetch_forget(r->start, r->map_len);
    bool unmapped = arena::unmap_to_reserved(r->start, r->va_len);
    if (!unmapped) {
        int unmap_err = errno;
        // A range a fork child may map (Region::left_gen) is lost instead.
        if (SpillFile *left = r->left_pool; left && !r->left_gen)
            release_backing({left->kind, left, r->left_pool_off}, r->left_pool_len);
        r->left_pool = nullptr;
        std::lock_guard<std::mutex> guard(large_lock());
        snapshot_count_out_retired(r); // its file range is lost with its addresses
        arena::unpublish(r->start, r->va_len);
        arena::lose(r->start, r->va_len, unmap_err);
        region_delete(r);
        return;
    }
    {
        std::lock_guard<std::mutex> guard(large_lock());
        arena::unpublish(r->start, r->va_len);
        // A fork child may still map its file range: kept, with the
        // addresses that name it, until no child is left (fork_snapshot.h).
        if (snapshot_hold_retired(r)) return;
    }
    large_release_retired(r);
}

void large_release_retired(Region *r) {
    bool clean = release_backing(placement_of(r), r->map_len);
    r->file = nullptr;
    if (SpillFile *left = r->left_pool) // the pool range a move left (region.h)
        clean = release_backing({left->kind, left, r->left_pool_off}, r->left_pool_len) && clean;
    r->left_pool = nullptr;
    std::lock_guard<std::mutex> guard(large_lock());
    if (clean) arena::give_back(r->start, r->va_len);
    else arena::lose(r->start, r->va_len, 0); // release_backing said why
    region_delete(r);
}

size_t large_usable_size(const void *p) {
    Region *r = arena::region_at(p);
    if (!r) return 0;
    return r->map_len - ((uintptr_t)p - r->start);
}

// Moves an anonymous or dedicated-file region to a larger arena range
// without copying its bytes (mremap). Returns the new start or 0.
// Not a region a move left a pool range behind (Region::left_pool): its
// addresses name that range until it is punched at retirement, and given
// back here they were reused at once, over the old bytes, which the punch
// then took from the new region (test_backing_truth.cpp).
static uintptr_t move_by_mremap(Region *r, size_t new_map_len) {
    if (r->left_pool) return 0;
    if (r->backing == Backing::disk) {
        SpillFile *f = r->file;
        if (!f || f->pool || f->foreign || r->is_private) return 0;
        if (fallocate(f->fd, 0, (off_t)r->map_len, (off_t)(new_map_len - r->map_len)) != 0)
            return 0;
    } else if (r->backing != Backing::anon) {
        return 0;
    }
    uintptr_t target;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        target = arena::take(new_map_len, arena::kGranule);
    }
    if (!target) return 0;
    void *q = mremap((void *)r->start, r->map_len, new_map_len, MREMAP_MAYMOVE | MREMAP_FIXED,
                     (void *)target);
    if (q == MAP_FAILED) {
        std::lock_guard<std::mutex> guard(large_lock());
        arena::give_back(target, new_map_len);
        return 0;
    }
    // The old range is now a hole in the arena: reserve it again at once,
    // without clobbering anything another thread might have mapped there.
    // Only the moved bytes left a hole: the rest of the old granules is
    // still the PROT_NONE reserve.
    uintptr_t old = r->start;
    size_t old_va = r->va_len, old_len = r->map_len;
    void *back = mmap((void *)old, old_len, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    bool reclaimed = back == (void *)old;
    int lost_err = back == MAP_FAILED ? errno : EEXIST;
    if (back != MAP_FAILED && !reclaimed) munmap(back, old_len); // kernel without NOREPLACE
    std::lock_guard<std::mutex> guard(large_lock());
    arena::unpublish(old, old_va);
    if (reclaimed) arena::give_back(old, old_va);
    else arena::lose(old, old_va, lost_err);
    r->start = target;
    r->va_len = va_round(new_map_len);
    r->map_len = new_map_len;
    arena::publish(r, target, r->va_len);
    return target;
}

void *large_realloc(void *p, size_t size) {
    Region *r = arena::region_at(p);
    if (!r || r->start != (uintptr_t)p || r->freed.load()) invalid_pointer("realloc", p);
    RegionPin pin(r); // the tiering mover keeps off while it is resized
    if (size < g_large_threshold) {
        void *q = mi_malloc(aligned_request(size));
        if (!q) {
            errno = ENOMEM;
            return nullptr;
        }
        memcpy(q, p, size < r->map_len ? size : r->map_len); // an alignment-only region can be smaller
        pin.release(); // before the free: the region may be gone when it returns
        free_region(p, false);
        return q;
    }
    if (size > (size_t)PTRDIFF_MAX - 2 * arena::kGranule) {
        errno = ENOMEM;
        return nullptr;
    }
    size_t new_map_len = page_round(size);
    if (new_map_len <= r->map_len) {
        std::lock_guard<std::mutex> guard(large_lock());
        r->size = size; // shrinking in place keeps the mapping (a later grow is free)
        return p;
    }
    bool room;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        room = new_map_len <= r->va_len || arena::extend(r->start, r->va_len, new_map_len);
        if (room && va_round(new_map_len) > r->va_len) {
            r->va_len = va_round(new_map_len);
            arena::publish(r, r->start, r->va_len);
        }
    }
    if (room && grow_backing(placement_of(r), r->start, r->map_len, new_map_len, r->advice.load(), r->is_private) == 0) {
        stats_on_grow(r->backing, new_map_len - r->map_len);
        std::lock_guard<std::mutex> guard(large_lock()); // the learner reads map_len under it
        r->map_len = new_map_len;
        r->size = size;
        g_stats.reallocs_in_place.fetch_add(1, std::memory_order_relaxed);
        return p;
    }
    size_t old_len = r->map_len;
    if (uintptr_t moved = move_by_mremap(r, new_map_len)) {
        stats_on_grow(r->backing, new_map_len - old_len);
        std::lock_guard<std::mutex> guard(large_lock());
        r->size = size;
        g_stats.reallocs_moved.fetch_add(1, std::memory_order_relaxed);
        return (void *)moved;
    }
    // Pool-backed (or mremap refused): a fresh region and a copy.
    void *q = large_allocate(size, 0, false);
    if (!q) {
        errno = ENOMEM;
        return nullptr;
    }
    memcpy(q, p, old_len);
    pin.release(); // before the free: the region may be gone when it returns
    free_region(p, false);
    g_stats.reallocs_moved.fetch_add(1, std::memory_order_relaxed);
    return q;
}

bool large_privatise_inherited(bool trusted) {
    // Shared mappings would let this child's writes reach the parent: give
    // the child a private copy-on-write view of the same bytes instead.
    // Every inherited file is the parent's: never extended, punched,
    // truncated or closed by this process (backing.h).
    bool inherited_disk = false;
    uint64_t room = 0; // read once, at the first region that needs it
    for (Region *r = registry_first(); r; r = r->next) {
        if (r->left_pool) r->left_pool->foreign = true;
        if (!r->file) continue;
        r->file->foreign = true;
        // The parent made it private in prepare (fork_snapshot.h): the
        // kernel's copy-on-write gives this child its snapshot already.
        const bool parent_snapshot = r->snapshot_gen != 0;
        if (r->is_private && !parent_snapshot) continue;
        void *q = parent_snapshot ? (void *)r->start
                                  : mmap((void *)r->start, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                                         r->file->fd, (off_t)r->file_off);
        if (q == MAP_FAILED) {
            SPW_LOG(error, "fork child: could not remap region %p privately (%s); its writes "
                           "would reach the parent, exiting with status 127: raise vm.max_map_count "
                           "(sysctl) and ulimit -v, or fork before allocating large buffers",
                    (void *)r->start, strerror(errno));
            _exit(127);
        }
        // The parent's advice fit the parent's phase, not what this child
        // will do: a trusted child starts under MADV_RANDOM, as every
        // filled region does, and its own detector (started below) moves
        // it. (Measured, scenario 8: DataLoader workers that inherited
        // MADV_RANDOM and had no detector read 1 MiB batches 4 KiB per
        // fault: 20-24 s against 7.4 s.)
        // One that could stay cached whole starts under MADV_NORMAL, so
        // reclaim sees its pages' use (access_detector.h,
        // random_keeps_recency).
        int advice = r->advice.load();
        if (trusted && !r->advice_pinned) {
            if (room == 0) room = read_memory_figures().room();
            advice = random_keeps_recency(true, r->map_len, room) ? MADV_NORMAL : MADV_RANDOM;
        }
        const int mapped_with = parent_snapshot ? r->advice.load() : MADV_NORMAL; // a new mapping's is none
        if (advice != mapped_with) madvise(q, r->map_len, advice);
        r->advice.store(advice);
        r->is_private = true;
        inherited_disk |= r->backing == Backing::disk;
    }
    return inherited_disk;
}

void large_after_fork_child(bool trusted) {
    if (!trusted) {
        g_untrusted = true;
        g_large_threshold = SIZE_MAX; // every new allocation takes the small path
    }
}

} // namespace spillway
