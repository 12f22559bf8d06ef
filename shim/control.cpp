// control.cpp — the spillway_* C API for aware code (declared in spillway.h).
//
// Semantics follow the reference module (gigl share_memory): release is
// msync → MADV_DONTNEED → FADV_DONTNEED, residency is measured, a path is
// refused while this process maps it, exported names are private and
// unguessable, and stale exports are cleared once per run.
//
// Invariant: a region's fields are read under the large lock, then the
// (possibly slow) system calls run without it.
#include "spillway.h"

#include "arena.h"
#include "backing.h"
#include "cgroup.h"
#include "large.h"
#include "log.h"
#include "policy.h"
#include "region.h"
#include "rehome.h"
#include "sampler.h"
#include "writeback.h"
#include "spilldir.h"
#include "stats.h"
#include "surface.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mimalloc.h>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SPW_API extern "C" __attribute__((visibility("default")))

using namespace spillway;

namespace {

struct View {
    uintptr_t start = 0;
    size_t size = 0; // as allocated
    size_t map_len = 0;
    Backing backing = Backing::none;
    int fd = -1;
    uint64_t file_off = 0;
    bool is_private = false;
    Region *region = nullptr;
};

// Looks up the live region holding p (any interior pointer).
bool view_of(const void *p, View &v) {
    if (!arena::owns(p)) return false;
    std::lock_guard<std::mutex> guard(large_lock());
    Region *r = arena::region_at(p);
    if (!r || r->freed.load() || (uintptr_t)p >= r->start + r->map_len) return false;
    v.start = r->start;
    v.size = r->size;
    v.map_len = r->map_len;
    v.backing = r->backing;
    v.fd = r->file ? r->file->fd : -1;
    v.file_off = r->file_off;
    v.is_private = r->is_private;
    v.region = r;
    return true;
}

size_t page_size() { return (size_t)sysconf(_SC_PAGESIZE); }

struct CachestatRange {
    uint64_t off, len;
};
struct Cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
constexpr long kSysCachestat = 451;

int remove_stale_exports() {
    int dfd = spill_dir_fd();
    if (dfd < 0) return -ENOENT;
    StaleRemoval r = remove_stale_files(dfd);
    SPW_LOG(info, "prepared %s: removed %d stale file(s), kept %zu", spill_dir_path().c_str(), r.removed,
            r.kept.size());
    return 0;
}

// Gives r a file of its own (a spill of memory/anon, or a copy out of a pool).
int give_dedicated_file(Region *r) {
    SpillFile *dest = nullptr;
    if (int err = new_dedicated_disk_file(r->map_len, &dest)) return -err;
    int rc = rehome_region(r, dest);
    if (rc != 0) close_spill_file(dest);
    else {
        sampler_notice(); // a disk region now, maybe the process's first (large.cpp does the same)
        writeback_notice();
    }
    return rc;
}

int link_into_dir(int fd, const std::string &name) {
    int dfd = spill_dir_fd();
    if (linkat(fd, "", dfd, name.c_str(), AT_EMPTY_PATH) == 0) return 0;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, dfd, name.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
    return -errno;
}

} // namespace

SPW_API int spillway_is_active(void) {
    return large_active() && g_large_threshold != SIZE_MAX ? 1 : 0;
}

SPW_API int spillway_backing(const void *p) {
    View v;
    return view_of(p, v) ? (int)v.backing : SPILLWAY_NONE;
}

SPW_API int spillway_is_disk_backed(const void *p) {
    return spillway_backing(p) == SPILLWAY_DISK ? 1 : 0;
}

SPW_API int spillway_access_phase(const void *p) {
    if (!arena::owns(p)) return 0;
    std::lock_guard<std::mutex> guard(large_lock());
    Region *r = arena::region_at(p);
    if (!r || r->freed.load() || (uintptr_t)p >= r->start + r->map_len) return 0;
    return r->phase.load(std::memory_order_acquire);
}

SPW_API int spillway_release_page_cache(const void *p) {
    View v;
    if (!view_of(p, v)) return -EINVAL;
    if (v.backing != Backing::disk) return -EINVAL; // RAM has no page cache to give back
    if (v.is_private) return -EPERM; // a fork child's private copy would be discarded
    if (msync((void *)v.start, v.map_len, MS_SYNC) != 0) return -errno;
    if (madvise((void *)v.start, v.map_len, MADV_DONTNEED) != 0) return -errno;
    int rc = posix_fadvise(v.fd, (off_t)v.file_off, (off_t)v.map_len, POSIX_FADV_DONTNEED);
    return rc ? -rc : 0;
}

SPW_API long spillway_residency(const void *p, size_t len) {
    if (!p || len == 0) return -EINVAL;
    size_t page = page_size();
    uintptr_t first = (uintptr_t)p & ~(page - 1);
    uintptr_t end = ((uintptr_t)p + len + page - 1) & ~(page - 1);
    View v;
    if (view_of(p, v) && v.backing == Backing::disk && end <= v.start + v.map_len && !v.is_private) {
        // cachestat answers from the page cache's own counters: far faster
        // than mincore's per-page vector on a large file.
        CachestatRange range{v.file_off + (first - v.start), end - first};
        Cachestat cs{};
        if (syscall(kSysCachestat, v.fd, &range, &cs, 0) == 0) return (long)(cs.nr_cache * page);
    }
    size_t pages = (end - first) / page;
    constexpr size_t kChunk = 1 << 16;
    unsigned char vec[kChunk];
    long resident = 0;
    for (size_t done = 0; done < pages; done += kChunk) {
        size_t n = pages - done < kChunk ? pages - done : kChunk;
        if (mincore((void *)(first + done * page), n * page, vec) != 0) return -errno;
        for (size_t i = 0; i < n; i++) resident += vec[i] & 1;
    }
    return resident * (long)page;
}

SPW_API int spillway_has_live_mapping(const char *path) {
    if (!path) return -EINVAL;
    // Compared by device and inode, not by name: a file mapped through the
    // unnamed descriptor it was created with (an export) is listed as
    // "<dir>/#<inode> (deleted)", and one path has many spellings.
    struct stat want;
    if (stat(path, &want) != 0) return errno == ENOENT ? 0 : -errno; // no file: nothing maps it by name
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) return -errno;
    char line[PATH_MAX + 256];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        unsigned dev_major = 0, dev_minor = 0;
        unsigned long long inode = 0;
        if (sscanf(line, "%*s %*s %*s %x:%x %llu", &dev_major, &dev_minor, &inode) != 3 || !inode) continue;
        found = inode == (unsigned long long)want.st_ino && dev_major == major(want.st_dev) &&
                dev_minor == minor(want.st_dev);
    }
    fclose(maps);
    return found;
}

SPW_API int spillway_release_page_cache_by_path(const char *path) {
    int live = spillway_has_live_mapping(path);
    if (live < 0) return live;
    if (live) return -EBUSY;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    fdatasync(fd); // dirty pages cannot be dropped
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return rc ? -rc : 0;
}

SPW_API void *spillway_alloc(size_t size, unsigned flags) {
    constexpr unsigned kKnown = SPILLWAY_PREFER_DISK | SPILLWAY_PREFER_MEMORY | SPILLWAY_RANDOM_ACCESS;
    if ((flags & ~kKnown) || ((flags & SPILLWAY_PREFER_DISK) && (flags & SPILLWAY_PREFER_MEMORY))) {
        errno = EINVAL;
        return nullptr;
    }
    if (!spillway_is_active()) return malloc(size);
    bool use_small = false;
    void *p = large_alloc(size, 0, flags, &use_small);
    if (!p && use_small) return mi_malloc(aligned_request(size));
    return p;
}

SPW_API void *spillway_alloc_disk(size_t size, unsigned flags) {
    if (flags & ~unsigned(SPILLWAY_RANDOM_ACCESS)) {
        errno = EINVAL;
        return nullptr;
    }
    if (!spillway_is_active()) {
        errno = ENOSYS;
        return nullptr;
    }
    if (!disk_usable()) {
        errno = ENOENT;
        return nullptr;
    }
    bool use_small = false;
    void *p = large_alloc(size, 0, flags | kFlagRequireDisk, &use_small);
    if (!p && use_small) errno = ENOMEM; // the arena is full: no region, so no file
    return p;
}

SPW_API size_t spillway_threshold(void) { return spillway_is_active() ? g_large_threshold : SIZE_MAX; }

SPW_API int spillway_can_spill(void) { return spillway_is_active() && disk_usable() ? 1 : 0; }

SPW_API int spillway_memory_fits(size_t size) {
    if (!spillway_is_active()) return -ENOSYS;
    uint64_t headroom = memory_headroom();
    uint64_t reserve = large_settings().memory_reserve;
    return headroom == UINT64_MAX || (headroom >= reserve && headroom - reserve >= size) ? 1 : 0;
}

SPW_API int spillway_region(const void *p, void **start, size_t *size) {
    View v;
    if (!view_of(p, v)) return -EINVAL;
    if (start) *start = (void *)v.start;
    if (size) *size = v.size;
    return 0;
}

SPW_API int spillway_spill(void *p) {
    if (!arena::owns(p)) return -EINVAL;
    Region *r;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        r = arena::region_at(p);
        if (!r || r->start != (uintptr_t)p || r->freed.load()) return -EINVAL;
        if (r->backing == Backing::disk) return 0;
        if (r->is_private) return -EPERM;
    }
    if (!disk_usable()) return -ENOENT;
    return give_dedicated_file(r);
}

SPW_API int spillway_export(const void *p, char *path, size_t cap) {
    if (!path || cap == 0) return -EINVAL;
    View v;
    if (!view_of(p, v)) return -EINVAL;
    if (v.is_private) return -EPERM;
    if (!disk_usable()) return -ENOENT;
    Region *r = v.region;
    if (r->backing != Backing::disk || !r->file || r->file->pool || r->file->foreign) {
        if (r->file && r->file->foreign && !r->file->pool) return -EPERM; // mapped, not ours
        if (int rc = give_dedicated_file(r)) return rc;
    }
    SpillFile *f = r->file;
    if (!f->exported[0]) {
        if (!getenv(kPreparedMarker)) spillway_prepare_dir(); // first exporter cleans up
        char pid[16];
        snprintf(pid, sizeof pid, "%d-", (int)getpid());
        std::string suffix = random_hex(32);
        if (suffix.empty()) return -EIO; // no entropy: an export name must not be guessable
        std::string name = std::string(kExportPrefix) + pid + suffix;
        // The file is exactly as long as the allocation, so that a reader
        // checking the size against its shape (spillway_map, load) agrees.
        if (ftruncate(f->fd, (off_t)r->size) != 0) return -errno;
        if (int rc = link_into_dir(f->fd, name)) return rc;
        std::string full = spill_dir_path() + "/" + name;
        snprintf(f->exported, sizeof f->exported, "%s", full.c_str());
    }
    if (strlen(f->exported) + 1 > cap) return -ERANGE;
    memcpy(path, f->exported, strlen(f->exported) + 1);
    return 0;
}

SPW_API int spillway_file_path(const void *p, char *path, size_t cap) {
    if (!path || cap == 0) return -EINVAL;
    View v;
    if (!view_of(p, v)) return -EINVAL;
    if (v.is_private) return -EPERM; // the name is the parent's file, not this copy
    const SpillFile *f = v.region->file;
    if (!f || !f->exported[0]) return -ENOENT;
    size_t n = strlen(f->exported) + 1;
    if (n > cap) return -ERANGE;
    memcpy(path, f->exported, n);
    return 0;
}

SPW_API void *spillway_map(const char *path, size_t expected_size) {
    if (!path || expected_size == 0) {
        errno = EINVAL;
        return nullptr;
    }
    if (!spillway_is_active()) {
        errno = ENOSYS;
        return nullptr;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return nullptr; // errno: ENOENT when missing
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != expected_size) {
        close(fd);
        errno = EINVAL; // a wrong size would be read as silently wrong data
        return nullptr;
    }
    size_t page = page_size();
    size_t map_len = (expected_size + page - 1) & ~(page - 1);
    uintptr_t start;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        start = arena::take(map_len, arena::kGranule);
    }
    Region *r = start ? region_new() : nullptr;
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
    r->start = start;
    r->size = expected_size;
    r->map_len = map_len;
    r->va_len = arena::granules(map_len) * arena::kGranule;
    r->backing = Backing::disk;
    r->file = f;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        registry_link(r);
        arena::publish(r, start, r->va_len);
    }
    stats_on_alloc(Backing::disk, map_len);
    return (void *)start;
}

SPW_API int spillway_prepare_dir(void) {
    if (getenv(kPreparedMarker)) return 0; // an ancestor (or we) already did it this run
    int rc = remove_stale_exports();
    if (rc == 0) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        setenv(kPreparedMarker, pid, 1);
    }
    return rc;
}
