/* spillway.h — control API of the spillway allocator shim.
 *
 * Aware code finds these functions with dlsym(RTLD_DEFAULT, "spillway_...")
 * so that the same binary runs unchanged when libspillway.so is not
 * preloaded (the symbols are then absent and the caller skips the call).
 * Code that links against libspillway directly may call them as usual.
 *
 * Every function is thread-safe. Functions that take a pointer accept any
 * pointer inside a region the shim owns (views, interior pointers), except
 * spillway_spill, which wants the region's start.
 */
#ifndef SPILLWAY_H
#define SPILLWAY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a region's bytes live. */
enum spillway_backing {
    SPILLWAY_NONE = 0,   /* not a region of the shim (small or foreign pointer) */
    SPILLWAY_DISK = 1,   /* reserved spill file: reclaimable page cache */
    SPILLWAY_MEMORY = 2, /* memfd: RAM, shareable, NOT reclaimable without swap */
    SPILLWAY_ANON = 3    /* plain anonymous memory */
};

/* Flags for spillway_alloc. */
enum {
    SPILLWAY_PREFER_DISK = 1,   /* a reserved spill file; memory if none can be had */
    SPILLWAY_PREFER_MEMORY = 2, /* a memfd region; anonymous memory if none */
    SPILLWAY_RANDOM_ACCESS = 4  /* scattered writes: memory while the cgroup has
                                   headroom, disk only as a logged fallback */
};

/* 1 when the shim is preloaded, configured and routing large allocations. */
int spillway_is_active(void);

/* Backing of the region holding p (any interior pointer), SPILLWAY_NONE otherwise.
 * Every byte of the region lives there: a region being moved (spill, export,
 * adaptive tiering) is answered once the move is over (milliseconds to a
 * second). Every call below that looks at a region does the same. */
int spillway_backing(const void *p);

/* 1 when p lies in a disk-backed region, 0 otherwise. */
int spillway_is_disk_backed(const void *p);

/* What the shim's access detector currently sees in the region holding p:
 * 0 undecided (or not a disk region of the shim), 1 sequential (a stream:
 * the shim reads ahead of it), 2 random (faults read only what they touch). */
int spillway_access_phase(const void *p);

/* Write back, unmap this process's pages, then drop the file's page cache:
 * 0 when every step completed (not proof of eviction: measure with
 * spillway_residency), else -errno. The mapping stays valid and refaults. */
int spillway_release_page_cache(const void *p);

/* Bytes of [p, p+len) resident in RAM or page cache, measured; or -errno. */
long spillway_residency(const void *p, size_t len);

/* Whether THIS process maps path (read from /proc/self/maps): 1 / 0, or -errno. */
int spillway_has_live_mapping(const char *path);

/* Ask the kernel to drop path's page cache. 0 when requested; -EBUSY while
 * this process still maps it (the advice would skip mapped pages); -errno. */
int spillway_release_page_cache_by_path(const char *path);

/* Explicit placement of size bytes (uninitialised); freed with free().
 * NULL with errno set when no placement is possible. */
void *spillway_alloc(size_t size, unsigned flags);

/* Move the region starting at p to a reserved spill file in place: same
 * address, same bytes. 0, or -errno (-EINVAL: not the start of a region).
 * Other threads may read and write the region meanwhile: their stores wait
 * for the move and are kept. A system call that writes INTO the region
 * (read(2), recv(2)...) completes in full where the process may use
 * userfaultfd for kernel faults; elsewhere it can fail with EFAULT or come
 * back short while a 16 MiB chunk is copied (docs/moves.md). */
int spillway_spill(void *p);

/* Give the region's file a name in the spill directory (mode 0600,
 * unguessable) and write the path into path[cap]. 0, or -errno. */
int spillway_export(const void *p, char *path, size_t cap);

/* The path of the named file holding p's region (exported, or mapped with
 * spillway_map) into path[cap], WITHOUT naming one: 0; -ENOENT when the
 * region's file has no name (or it has no file); -EPERM for a fork child's
 * private copy; -ERANGE when cap is too small; -EINVAL not a region. */
int spillway_file_path(const void *p, char *path, size_t cap);

/* Map an exported file; its size must equal expected_size (EINVAL) and it
 * must exist (ENOENT). Never creates or extends. Freed with free(). */
void *spillway_map(const char *path, size_t expected_size);

/* A reserved spill file of size bytes (uninitialised; reads as zeros) or
 * NULL, never a memory fallback: for callers with a fallback of their own.
 * flags: 0 or SPILLWAY_RANDOM_ACCESS (MADV_RANDOM). errno: ENOENT (no usable
 * spill directory), ENOSYS (shim not active), EINVAL (other flags), or why
 * the file could not be reserved (ENOSPC, EFBIG, EOPNOTSUPP...). free(). */
void *spillway_alloc_disk(size_t size, unsigned flags);

/* The size at and above which an allocation is large (a region the shim
 * places); SIZE_MAX when the shim is not active. */
size_t spillway_threshold(void);

/* 1 when the shim is active and has a usable spill directory (a real,
 * reservable filesystem): buffers can be spilled to disk. 0 otherwise. */
int spillway_can_spill(void);

/* 1 when this process's cgroup can take size more bytes of unreclaimable
 * memory and keep the configured memory_reserve free (always, without a
 * limit); 0 when it cannot; -ENOSYS when the shim is not active. */
int spillway_memory_fits(size_t size);

/* The region holding p (any interior pointer): its start and its size as
 * allocated (an exported file is exactly that long). 0, or -EINVAL. */
int spillway_region(const void *p, void **start, size_t *size);

/* Remove files spillway exported in earlier runs, once per run (an
 * environment marker tells children an ancestor did it). 0, or -errno. */
int spillway_prepare_dir(void);

#ifdef __cplusplus
}
#endif

#endif /* SPILLWAY_H */
