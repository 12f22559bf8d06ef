// large_aware.cpp — the large path's answers to aware code (large.h, the
// section control.cpp forwards to): views of a region, moving one to a file
// of its own, naming that file (pinned against tiering moves), and adopting
// a file mapped by path.
//
// Invariant: a region's fields are read and written only under the large
// lock; the system calls that follow (rehome, mmap, open) run without it.
// A region moved here is the caller's own allocation (the region's user,
// rehome.h), so it cannot be freed under the move.
#include "large/fork_snapshot.h"
#include "large/large.h"

#include "registry/arena.h"
#include "backing/backing.h"
#include "fd_policy.h"
#include "access/prefetch_worker.h"
#include "registry/region.h"
#include "tiering/rehome.h"
#include "access/sampler.h"
#include "stats/stats.h"
#include "tiering/writeback.h"

#include <cerrno>
#include <cstdio>
#include <mimalloc.h>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spillway {

namespace {

// The live region holding p, or nullptr. Caller holds the large lock.
Region *live_region_holding(const void *p) {
    if (!arena::owns(p)) return nullptr;
    Region *r = arena::region_at(p);
    if (!r || r->freed.load() || (uintptr_t)p >= r->start + r->map_len) return nullptr;
    return r;
}

void fill_view(const Region *r, RegionView *v) {
    v->start = r->start;
    v->size = r->size;
    v->map_len = r->map_len;
    v->backing = r->backing;
    v->fd = r->file ? r->file->fd : -1;
    v->file_off = r->file_off;
    v->is_private = r->is_private;
    v->own_file = r->file && !r->file->pool && !r->file->foreign;
    v->foreign_file = r->file && !r->file->pool && r->file->foreign;
    v->phase = r->phase.load(std::memory_order_acquire);
    snprintf(v->exported, sizeof v->exported, "%s", r->file ? r->file->exported : "");
}

// A region the parent made private at a fork is refused (EPERM) while a
// child may map it (fork_snapshot.h). A child that has exec'd or exited has
// let go already: settle now rather than at the reaper's next tick, so a
// call made just after a fork-and-exec finds its region shared again.
void settle_fork_snapshots() {
    if (snapshot_regions_live()) snapshot_settle();
}

// Gives r a disk file of its own (a spill of memory/anon, or a copy out of
// a pool). 0 or -errno.
int give_own_disk_file(Region *r) {
    SpillFile *dest = nullptr;
    if (int err = new_dedicated_disk_file(r->map_len, &dest)) return -err;
    int rc = rehome_region(r, dest);
    if (rc != 0) {
        // Its blocks are reserved (maybe written): the last close frees
        // them, which a discard mount makes slow; the caller (an export,
        // a spill) must not wait for that.
        release_left_file(dest);
        return rc;
    }
    sampler_notice(); // a disk region now, maybe the process's first (as large_alloc does)
    writeback_notice();
    return 0;
}

} // namespace

bool large_view(const void *p, RegionView *out) {
    if (!arena::owns(p)) return false;
    settle_fork_snapshots();
    // A region being moved (rehome.h) lives partly in its old home and
    // partly in its new one, and its backing changes only once the last
    // chunk has moved: a view taken then would name a home that no longer
    // holds all of its bytes (integration scenario 9 read "memory" over a
    // spill file, issue 25). So a move under way is waited out first. The
    // view is copied under the large lock, under which the tiering mover
    // checks a region before moving it: none starts meanwhile.
    for (;;) {
        Region *r;
        {
            std::lock_guard<std::mutex> guard(large_lock());
            r = live_region_holding(p);
            if (!r) return false;
            if (!region_moving(r)) {
                fill_view(r, out);
                return true;
            }
        }
        wait_out_move(r);
    }
}

bool large_stop_read_ahead(const void *p) {
    uintptr_t start = 0;
    size_t len = 0;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        Region *r = live_region_holding(p);
        if (!r) return false;
        r->cache_managed.store(true, std::memory_order_release); // the sampler's next tick sees it
        start = r->start;
        len = r->map_len;
    }
    return prefetch_forget(start, len);
}

int large_move_to_disk(void *p) {
    if (!arena::owns(p)) return -EINVAL;
    settle_fork_snapshots();
    Region *r;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        r = arena::region_at(p);
        if (!r || r->start != (uintptr_t)p || r->freed.load()) return -EINVAL;
        if (r->backing == Backing::disk) return 0;
        if (r->is_private) return -EPERM;
    }
    if (!disk_usable()) return -ENOENT;
    return give_own_disk_file(r);
}

namespace {
// Gives the region holding p a disk file of its own, as large_export says.
int own_file(const void *p, RegionView *out) {
    if (!arena::owns(p)) return -EINVAL;
    settle_fork_snapshots();
    Region *r;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        r = live_region_holding(p);
        if (!r) return -EINVAL;
        fill_view(r, out);
    }
    if (out->is_private) return -EPERM;
    if (!disk_usable()) return -ENOENT;
    if (out->backing == Backing::disk && out->own_file) return 0;
    if (out->foreign_file) return -EPERM; // mapped, not ours
    if (int rc = give_own_disk_file(r)) return rc;
    return large_view(p, out) ? 0 : -EINVAL;
}
} // namespace

int large_export(const void *p, NameFileFn name_file, void *ctx, RegionView *out) {
    // The move to a file of its own cannot run pinned (a pinned region is not
    // moved), so: move, pin, and check the region still has that file; a
    // promotion in between sends it round again.
    for (int attempt = 0; attempt < 4; attempt++) {
        if (int rc = own_file(p, out)) return rc;
        if (out->exported[0]) return 0;
        Region *r;
        {
            std::lock_guard<std::mutex> guard(large_lock());
            r = live_region_holding(p);
            if (!r) return -EINVAL;
        }
        RegionPin pin(r); // waits out a move under way; none starts while held
        if (!large_view(p, out)) return -EINVAL;
        if (out->exported[0]) return 0; // named meanwhile
        if (out->backing != Backing::disk || !out->own_file) continue; // moved meanwhile
        char path[sizeof out->exported];
        if (int rc = name_file(out->fd, out->size, ctx, path, sizeof path)) return rc;
        std::lock_guard<std::mutex> guard(large_lock());
        if (!r->file || r->file->fd != out->fd) return -EINVAL; // cannot happen while pinned
        if (r->file->exported[0]) unlink(path); // another thread named it first: one name
        else snprintf(r->file->exported, sizeof r->file->exported, "%s", path);
        snprintf(out->exported, sizeof out->exported, "%s", r->file->exported);
        return 0;
    }
    return -EBUSY; // moved away every time: try again later
}

void *large_adopt_file(const char *path, size_t expected_size) {
    int fd = move_high(open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (fd < 0) return nullptr; // errno: ENOENT when missing
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != expected_size) {
        close(fd);
        errno = EINVAL; // a wrong size would be read as silently wrong data
        return nullptr;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t map_len = (expected_size + page - 1) & ~(page - 1);
    uintptr_t start;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        start = arena::take(map_len, arena::kGranule);
    }
    Region *r = start ? region_record(start, expected_size, map_len) : nullptr;
    void *m = r ? mmap((void *)start, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0)
                : MAP_FAILED;
    SpillFile *f = nullptr;
    if (m != MAP_FAILED) {
        void *mem = mi_zalloc(sizeof(SpillFile));
        if (mem) f = new (mem) SpillFile();
    }
    if (!f) {
        int err = m == MAP_FAILED && start && r ? errno : ENOMEM;
        if (start) {
            arena::unmap_to_reserved(start, map_len);
            std::lock_guard<std::mutex> guard(large_lock());
            arena::give_back(start, map_len);
        }
        if (r) region_delete(r);
        close(fd);
        errno = err;
        return nullptr;
    }
    f->fd = fd;
    f->kind = Backing::disk;
    f->foreign = true; // never extended, punched or truncated by us
    snprintf(f->exported, sizeof f->exported, "%s", path);
    r->backing = Backing::disk;
    r->file = f;
    register_region(r);
    stats_on_alloc(Backing::disk, map_len);
    return (void *)start;
}

} // namespace spillway
