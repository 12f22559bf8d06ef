// control.cpp — the spillway_* C API for aware code (declared in spillway.h).
//
// Semantics follow the reference module (gigl share_memory): release is
// msync → MADV_DONTNEED → FADV_DONTNEED, residency is measured, a path is
// refused while this process maps it, exported names are private and
// unguessable, and stale exports are cleared once per run.
//
// Invariant: this file never touches a Region: what it knows of one is a
// RegionView the large path copied under its lock (large.h), and every
// region it makes, moves or names is made, moved or named by the large
// path. What is left here: argument checks, page-cache and path calls on
// the file a view names, and export names.
#include "spillway.h"

#include "backing/backing.h"
#include "cachestat.h"
#include "os/cgroup.h"
#include "large/large.h"
#include "log.h"
#include "large/policy.h"
#include "maps_device.h"
#include "spilldir.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SPW_API extern "C" __attribute__((visibility("default")))

using namespace spillway;

namespace {

using View = RegionView;

bool view_of(const void *p, View &v) { return large_view(p, &v); }

size_t page_size() { return (size_t)sysconf(_SC_PAGESIZE); }

int remove_stale_exports() {
    int dfd = spill_dir_fd();
    if (dfd < 0) return -ENOENT;
    StaleRemoval r = remove_stale_files(dfd);
    SPW_LOG(info, "prepared %s: removed %d stale file(s), kept %zu", spill_dir_path().c_str(), r.removed,
            r.kept.size());
    return 0;
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
    View v;
    return view_of(p, v) ? v.phase : 0;
}

SPW_API int spillway_release_page_cache(const void *p) {
    View v;
    if (!view_of(p, v)) return -EINVAL;
    if (v.backing != Backing::disk) return -EINVAL; // RAM has no page cache to give back
    if (v.is_private) return -EPERM; // a fork child's private copy would be discarded
    bool was_read_ahead = large_stop_read_ahead(p); // the shim reads none of it ahead any more
    if (msync((void *)v.start, v.map_len, MS_SYNC) != 0) return -errno;
    if (madvise((void *)v.start, v.map_len, MADV_DONTNEED) != 0) return -errno;
    int rc = posix_fadvise(v.fd, (off_t)v.file_off, (off_t)v.map_len, POSIX_FADV_DONTNEED);
    // Pages the kernel was still reading for the worker are locked, so the
    // drop skips them and they land after it: drop again once they have
    // (a few milliseconds; bounded, as another process's mapping may keep
    // pages that no drop can take).
    CachestatRange range{v.file_off, v.map_len};
    Cachestat cs{};
    for (int i = 0; was_read_ahead && rc == 0 && i < 20; i++) {
        if (cachestat(v.fd, range, cs) != 0 || cs.nr_cache == 0) break;
        usleep(2000);
        rc = posix_fadvise(v.fd, (off_t)v.file_off, (off_t)v.map_len, POSIX_FADV_DONTNEED);
    }
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
        if (cachestat(v.fd, range, cs) == 0) return (long)(cs.nr_cache * page);
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
    dev_t shown = maps_device(AT_FDCWD, path, 0, want.st_dev); // btrfs: the superblock's, not stat's
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) return -errno;
    char line[PATH_MAX + 256];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        unsigned dev_major = 0, dev_minor = 0;
        unsigned long long inode = 0;
        if (sscanf(line, "%*s %*s %*s %x:%x %llu", &dev_major, &dev_minor, &inode) != 3 || !inode) continue;
        found = inode == (unsigned long long)want.st_ino && dev_major == major(shown) && dev_minor == minor(shown);
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
    return large_allocate_flagged(size, flags);
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

SPW_API int spillway_spill(void *p) { return large_move_to_disk(p); }

namespace {
// Links a region's file into the spill directory under a fresh name that
// cannot be guessed (large_export calls it with the region pinned).
int link_export_name(int fd, size_t size, void *, char *path, size_t cap) {
    if (!getenv(kPreparedMarker)) spillway_prepare_dir(); // first exporter cleans up
    char pid[16];
    snprintf(pid, sizeof pid, "%d-", (int)getpid());
    std::string suffix = random_hex(32);
    if (suffix.empty()) return -EIO; // no entropy: an export name must not be guessable
    std::string name = std::string(kExportPrefix) + pid + suffix;
    // The file is exactly as long as the allocation, so that a reader
    // checking the size against its shape (spillway_map, load) agrees.
    if (ftruncate(fd, (off_t)size) != 0) return -errno;
    if (int rc = link_into_dir(fd, name)) return rc;
    std::string full = spill_dir_path() + "/" + name;
    if (full.size() + 1 > cap) return -ENAMETOOLONG;
    memcpy(path, full.c_str(), full.size() + 1);
    return 0;
}
} // namespace

SPW_API int spillway_export(const void *p, char *path, size_t cap) {
    if (!path || cap == 0) return -EINVAL;
    View v;
    if (int rc = large_export(p, link_export_name, nullptr, &v)) return rc;
    if (strlen(v.exported) + 1 > cap) return -ERANGE;
    memcpy(path, v.exported, strlen(v.exported) + 1);
    return 0;
}

SPW_API int spillway_file_path(const void *p, char *path, size_t cap) {
    if (!path || cap == 0) return -EINVAL;
    View v;
    if (!view_of(p, v)) return -EINVAL;
    if (v.is_private) return -EPERM; // the name is the parent's file, not this copy
    if (!v.exported[0]) return -ENOENT;
    size_t n = strlen(v.exported) + 1;
    if (n > cap) return -ERANGE;
    memcpy(path, v.exported, n);
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
    return large_adopt_file(path, expected_size);
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
