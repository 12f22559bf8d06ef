// fork_snapshot.cpp — see fork_snapshot.h.
//
// Invariant: a generation is open from the prepare that made it until its
// read end reports end of file (then closed and removed, under the large
// lock), or for good when no pipe could be made for it; a region or a
// held range with snapshot_gen g waits while any generation >= g is open.
#include "large/fork_snapshot.h"

#include "backing/backing.h"
#include "backing/reaper.h"
#include "fd_policy.h"
#include "config.h"
#include "large/large.h"
#include "log.h"
#include "os/lock_unless_held.h"
#include "registry/arena.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "stats/stats.h"
#include "access/sampler.h"
#include "tiering/rehome.h"
#include "tiering/tiering_loop.h"
#include "tiering/writeback.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace spillway {

namespace {
// A spill writes the whole region: not worth it for fewer copies.
constexpr size_t kSpillMinCopies = size_t(16) << 20;
// Open generations (under the large lock). A process with more children
// alive at once than this keeps the regions of the extra forks private for
// good (warned once): a descriptor per generation is the price of knowing.
// 256: a Pool of one worker per core on a big node (CPython's own
// test_multiprocessing_forkserver keeps 100 alive at once), inside the 510
// high descriptors a default limit of 1024 leaves (fd_policy.h).
constexpr size_t kMaxGenerations = 256;
struct Generation {
    uint64_t id;
    int read_fd;
};
Generation g_open[kMaxGenerations];
size_t g_open_count = 0;
uint64_t g_next_gen = 1;
uint64_t g_forever_newest = 0; // the newest generation that could not be watched (open for good)
Region *g_held = nullptr;     // retired regions a child may still map (through queue_next)
std::atomic<size_t> g_live{0}; // live regions with snapshot_gen set

// Between prepare and the parent's or child's handler, on the forking thread.
#define SPW_TLS thread_local __attribute__((tls_model("initial-exec")))
SPW_TLS uint64_t t_gen = 0; // the generation this fork opened, or 0
SPW_TLS int t_write_fd = -1;
SPW_TLS bool t_left_shared = false; // a region a child maps was not frozen

uint64_t newest_open() {
    uint64_t newest = g_forever_newest;
    for (size_t i = 0; i < g_open_count; i++) newest = std::max(newest, g_open[i].id);
    return newest;
}

// A shared mapping over a file this process made and did not name: the
// parent's stores and frees would reach a child's view of it.
bool may_freeze(const Region *r) {
    return r->file && !r->is_private && !r->freed.load() && !r->file->foreign && !r->file->exported[0];
}

void end_generations();

// Opens this fork's generation (t_gen): a pipe, or open for good. Large
// lock held. A full table is first rid of the generations already ended:
// the tick that ends them comes every 250 ms, and a forkserver can fork
// more children than the table holds, each gone at once, in less.
void open_generation() {
    const uint64_t id = t_gen = g_next_gen++;
    if (g_open_count == kMaxGenerations) end_generations();
    int fds[2];
    if (g_open_count < kMaxGenerations && syscall(SYS_pipe2, fds, O_CLOEXEC) == 0) {
        g_open[g_open_count++] = {id, move_high(fds[0])};
        t_write_fd = move_high(fds[1]);
        return;
    }
    static bool warned = false;
    if (!warned) {
        warned = true;
        SPW_LOG(warn, "fork: cannot watch this fork's children (%s); the large buffers alive now stay "
                      "copy-on-write, and keep their spill space, until the process exits: "
                      "keep fewer than %zu forked children alive at once, or raise ulimit -n",
                g_open_count < kMaxGenerations ? strerror(errno) : "too many at once", kMaxGenerations);
    }
    g_forever_newest = id;
}

// Maps r private over its own bytes. A MAP_FIXED mapping of the same file
// is lossless either way (a shared mapping's bytes are the file's), so a
// failure maps it shared again.
void privatise(Region *r) {
    void *q = mmap((void *)r->start, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, r->file->fd,
                   (off_t)r->file_off);
    if (q != MAP_FAILED) {
        if (int advice = r->advice.load()) madvise(q, r->map_len, advice);
        return;
    }
    int err = errno;
    q = mmap((void *)r->start, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, r->file->fd,
             (off_t)r->file_off);
    if (q == MAP_FAILED) {
        SPW_LOG(error, "fork: region %p could not be mapped again (%s), exiting with status 127: raise "
                       "vm.max_map_count (sysctl)",
                (void *)r->start, strerror(errno));
        _exit(127);
    }
    SPW_LOG(warn, "fork: region %p stays shared with the child (%s): the child sees the parent's later "
                  "writes to it; raise vm.max_map_count (sysctl)",
            (void *)r->start, strerror(err));
    t_left_shared = true;
    r->is_private = false;
    r->snapshot_gen = 0;
    g_live.fetch_sub(1);
}

// Closes the generations whose children have all let go. Large lock held.
void end_generations() {
    if (!g_open_count) return;
    pollfd fds[kMaxGenerations];
    for (size_t i = 0; i < g_open_count; i++) fds[i] = {g_open[i].read_fd, 0, 0};
    if (poll(fds, g_open_count, 0) <= 0) return;
    size_t kept = 0;
    for (size_t i = 0; i < g_open_count; i++) {
        // POLLHUP: every write end is closed. POLLNVAL: the program closed
        // our read end (a descriptor clean-up); its children cannot be
        // known any more, so it stays open for good.
        if (fds[i].revents & POLLNVAL) g_forever_newest = std::max(g_forever_newest, g_open[i].id);
        else if (fds[i].revents & (POLLHUP | POLLERR)) close(g_open[i].read_fd);
        else g_open[kept++] = g_open[i];
    }
    g_open_count = kept;
}

bool due(const Region *r) { return r->snapshot_gen && r->snapshot_gen > newest_open(); }
} // namespace

bool snapshot_fork_mark() {
    t_gen = 0;
    t_write_fd = -1;
    t_left_shared = false;
    if (!large_settings().fork_snapshot) { // [fork] snapshot = false
        t_left_shared = true;
        return false;
    }
    g_fork_privatising.store(true); // seq_cst, before any pin is read (region.h)
    if (!lock_unless_held_here(large_lock().native_handle())) {
        t_left_shared = true;
        return false;
    }
    bool needed = false;
    for (Region *r = registry_first(); r && !needed; r = r->next) needed = may_freeze(r) || r->snapshot_gen;
    const Region *probed = probe_held(); // a probe publishes under the large lock (probe_hold.h)
    bool wait_probe = false;
    if (needed) open_generation();
    for (Region *r = registry_first(); r && needed; r = r->next) {
        if (!may_freeze(r)) continue;
        if (r->pins.load() || r->moving.load()) { // being resized: the child privatises its own view (the old way)
            SPW_LOG(debug, "fork: region %p is being resized: the child maps it privately itself", (void *)r->start);
            t_left_shared = true;
            continue;
        }
        r->is_private = true; // from here every probe's check keeps off it
        r->snapshot_gen = t_gen;
        g_live.fetch_add(1);
        wait_probe = wait_probe || r == probed;
    }
    large_lock().unlock();
    // A probe that checked r before it was marked may still be unmapping
    // its pages: on a private mapping that would drop the parent's copies.
    // When the prober is this very thread, its calls come after the fork:
    // that region stays shared, and the child privatises its own view.
    if (wait_probe && !wait_out_probes_unless_mine(probed)) {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r; r = r->next) {
            if (r != probed || r->snapshot_gen != t_gen) continue;
            r->is_private = false;
            r->snapshot_gen = 0;
            g_live.fetch_sub(1);
            t_left_shared = true;
        }
    }
    return true;
}

void snapshot_fork_privatise() {
    const Region *probed = probe_held();
    for (Region *r = registry_first(); r; r = r->next) {
        if (r->snapshot_gen && r->snapshot_gen == t_gen && r->is_private) {
            privatise(r);
        } else if (may_freeze(r)) { // born since the mark
            if (r->pins.load() || r->moving.load() || r == probed) {
                t_left_shared = true;
                continue;
            }
            if (!t_gen) open_generation();
            r->is_private = true;
            r->snapshot_gen = t_gen;
            g_live.fetch_add(1);
            privatise(r);
        }
    }
}

void snapshot_fork_parent(bool attempted) {
    if (t_write_fd >= 0) close(t_write_fd); // the children hold it now
    t_write_fd = -1;
    if (t_gen) {
        reaper_wake_for_settle();
        tiering_look_soon(); // before the parent's next stores make copies
    }
    // A child maps, from this process's files, a region that was not
    // frozen: such regions must never move (rehome.h).
    if (t_left_shared || !attempted) note_fork_left_shared();
    t_gen = 0;
    t_left_shared = false;
}

void snapshot_fork_child(bool trusted) {
    // t_write_fd stays open (close-on-exec): it is what tells the parent
    // this child still maps its files.
    t_write_fd = -1;
    t_gen = 0;
    for (size_t i = 0; i < g_open_count; i++) close(g_open[i].read_fd);
    g_open_count = 0;
    g_forever_newest = 0;
    for (Region *r = registry_first(); r; r = r->next) r->snapshot_gen = r->left_gen = 0;
    while (Region *r = g_held) {
        g_held = r->queue_next;
        if (r->file && !r->file->pool) close_spill_file(r->file); // this child's descriptor only
        if (trusted) arena::give_back(r->start, r->va_len);       // the parent's range: this child never maps it
        region_delete(r);
    }
    g_live.store(0);
}

bool snapshot_hold_retired(Region *r) {
    if (r->snapshot_gen) g_live.fetch_sub(1);
    // The oldest generation that may map one of its ranges: its own file's
    // (a snapshot) or the pool range a spill left (Region::left_gen).
    uint64_t gen = r->snapshot_gen;
    if (r->left_gen && (!gen || r->left_gen < gen)) gen = r->left_gen;
    if (!gen || gen > newest_open()) return false;
    r->snapshot_gen = gen; // what snapshot_settle compares
    r->queue_next = g_held;
    g_held = r;
    return true;
}

bool snapshot_settle() {
    Region *release = nullptr;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        end_generations();
        const uint64_t newest = newest_open();
        for (Region **p = &g_held; *p;) {
            Region *r = *p;
            if (r->snapshot_gen > newest) {
                *p = r->queue_next;
                r->queue_next = release;
                release = r;
            } else {
                p = &r->queue_next;
            }
        }
    }
    while (Region *r = release) {
        release = r->queue_next;
        r->queue_next = nullptr;
        large_release_retired(r);
    }
    bool retry = false;
    for (int round = 0; !retry; round++) {
        if (round == 64) { // the rest at the next tick
            retry = true;
            break;
        }
        constexpr size_t kBatch = 32;
        Region *batch[kBatch];
        uintptr_t starts[kBatch];
        size_t n = 0;
        {
            std::lock_guard<std::mutex> guard(large_lock());
            for (Region *r = registry_first(); r && n < kBatch; r = r->next) {
                if (!due(r) || r->freed.load()) continue; // a freed one is the retirement's
                if (r->pins.load()) {
                    retry = true;
                    continue;
                }
                batch[n] = r;
                starts[n++] = r->start;
            }
        }
        if (!n) break;
        for (size_t i = 0; i < n; i++) {
            int rc = rehome_reshare(batch[i], starts[i], due);
            if (rc == 0) {
                g_live.fetch_sub(1);
            } else if (rc != -ESTALE) {
                if (rc != -EBUSY) {
                    static bool warned = false;
                    if (!warned) {
                        warned = true;
                        SPW_LOG(warn, "fork: a region could not be shared again after its children ended (%s); "
                                      "it stays copy-on-write and is tried again",
                                strerror(-rc));
                    }
                }
                retry = true;
            }
        }
    }
    std::lock_guard<std::mutex> guard(large_lock());
    return g_open_count > 0 || retry;
}

bool snapshot_regions_live() { return g_live.load(std::memory_order_relaxed) != 0; }

bool snapshot_frozen(const void *p) {
    if (!snapshot_regions_live() || !arena::owns(p)) return false;
    std::lock_guard<std::mutex> guard(large_lock());
    const Region *r = arena::region_at(p);
    return r && !r->freed.load() && r->snapshot_gen != 0;
}

void snapshot_count_out_retired(Region *r) {
    if (r->snapshot_gen) g_live.fetch_sub(1);
    r->snapshot_gen = 0;
}

namespace {
// The parent's copies in [start, start+len): pages present and anonymous
// in its private file mapping (/proc/self/pagemap). 0 when unreadable.
size_t count_copies(int pagemap_fd, uintptr_t start, size_t len) {
    constexpr size_t kPage = 4096, kBatch = 512;
    constexpr uint64_t kPresent = 1ull << 63, kFileOrShared = 1ull << 61;
    uint64_t entries[kBatch];
    size_t copies = 0;
    for (size_t i = 0, pages = len / kPage; i < pages; i += kBatch) {
        size_t k = std::min(kBatch, pages - i);
        ssize_t got = pread(pagemap_fd, entries, k * 8, (off_t)((start / kPage + i) * 8));
        if (got != (ssize_t)(k * 8)) return copies * kPage;
        for (size_t j = 0; j < k; j++) copies += (entries[j] & kPresent) && !(entries[j] & kFileOrShared);
    }
    return copies * kPage;
}
} // namespace

bool snapshot_could_outgrow(uint64_t room) {
    if (!snapshot_regions_live()) return false;
    uint64_t frozen = 0;
    std::lock_guard<std::mutex> guard(large_lock());
    for (Region *r = registry_first(); r; r = r->next)
        if (r->snapshot_gen && r->is_private && !r->freed.load()) frozen += r->map_len;
    return frozen > room;
}

uint64_t snapshot_spill(uint64_t need, uint64_t room) {
    if (!snapshot_regions_live()) return 0;
    struct Candidate {
        Region *r;
        uintptr_t start;
        size_t len, copies;
        Backing from;
        bool early; // spilled at an earlier fork: goes at once, before its copies press
    };
    std::vector<Candidate> cands;
    bool any_early = false;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r; r = r->next)
            if (r->snapshot_gen && r->is_private && !r->freed.load() && !r->pins.load() && r->file) {
                // Early only where its copies could outgrow the room.
                const bool early = r->snapshot_spilled && r->map_len > room;
                cands.push_back({r, r->start, r->map_len, 0, r->backing, early});
                any_early = any_early || early;
            }
    }
    if (!need && !any_early) return 0;
    {
        int pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (pagemap_fd < 0) return 0;
        // A region gone meanwhile reads as no copies (nothing mapped there)
        // or is refused by the spill's own check under the lock (-ESTALE).
        for (Candidate &c : cands)
            if (need || c.early) c.copies = count_copies(pagemap_fd, c.start, c.len);
        close(pagemap_fd);
    }
    std::sort(cands.begin(), cands.end(), [](const Candidate &a, const Candidate &b) {
        return a.early != b.early ? a.early : a.copies > b.copies;
    });
    uint64_t freed = 0;
    for (const Candidate &c : cands) {
        if (!c.early && (freed >= need || c.copies < kSpillMinCopies)) break;
        SpillFile *dest = nullptr;
        if (int err = new_dedicated_disk_file(c.len, &dest)) {
            static bool warned = false;
            if (!warned) {
                warned = true;
                SPW_LOG(warn, "fork: memory is nearly exhausted and a large buffer's copies since the fork "
                              "cannot move to disk (%s in %s), so the OOM killer may end the job: free space there",
                        strerror(err), spill_dir_path().c_str());
            }
            break;
        }
        MoveResult res;
        int rc = rehome_spill_snapshot(c.r, c.start, dest, &res);
        if (rc != 0) {
            close_spill_file(dest);
            static bool warned = false; // each look tries again: said once, then at debug level
            if (rc != -EBUSY && rc != -ESTALE)
                SPW_LOG_AT(warned ? LogLevel::debug : LogLevel::warn,
                           "fork: moving the copies of %zu MiB at %p to disk failed (%s) and was undone; "
                              "they stay in memory and the OOM killer may end the job: if it repeats, report it with "
                              "this log (or set [fork] snapshot = false if no child reads this buffer)",
                        c.len >> 20, (void *)c.start, strerror(-rc));
            warned = warned || (rc != -EBUSY && rc != -ESTALE);
            continue;
        }
        g_live.fetch_sub(1);
        freed += std::max<size_t>(c.copies, 1); // moved, even if early enough to find no copy
        stats_on_rehome(c.from, Backing::disk, c.len);
        stats_on_snapshot_spill(c.copies);
        SPW_LOG(info, "fork: %s: %zu MiB at %p, %zu MiB of it the parent's copies since the fork (anonymous "
                      "memory), moved to a file of its own in %.0f ms (%s, accesses paused at most %.1f ms); the "
                      "children keep the old one",
                c.early ? "a buffer whose copies pressed at an earlier fork, early"
                        : "memory is short while forked children keep a snapshot",
                c.len >> 20, (void *)c.start, c.copies >> 20, res.total_ns / 1e6, rehome_scheme_name(res.scheme),
                res.longest_chunk_ns / 1e6);
    }
    if (freed) {
        sampler_notice(); // a disk region now: advice, read-ahead
        writeback_notice(); // and paced writeback of its dirty pages
    }
    return freed;
}

} // namespace spillway
