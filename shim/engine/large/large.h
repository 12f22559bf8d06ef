// large.h — the large path: allocations at or above the threshold become
// regions of the arena, placed by policy, retired by the reaper.
//
// Invariants:
//  * g_large_threshold is SIZE_MAX until start-up has finished (or the
//    default threshold while the engine waits for its first use; the front
//    then reaches these functions only once the engine has started, see
//    engine_loader.h), so every allocation before that (and during it, from
//    the config parser, the logger or the dynamic loader) takes the small
//    path: start-up cannot recurse into itself.
//  * Every region a caller holds is fully mapped and published; every byte a
//    fresh region exposes reads as zero (so calloc touches nothing). A
//    recycled one (recycle.h) is zeroed when taken, except for a plain
//    malloc (kFlagMayBeDirty), which may see its last owner's bytes.
//  * No function here holds the large lock while it calls into the reaper,
//    the call-site capture or a filesystem operation on a region's bytes.
#pragma once

#include "backing/backing.h"
#include "config.h"
#include "front_state.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

// g_large_threshold, the size check every entry point makes: abi/front_state.h.

void large_init(const Settings &s);
const Settings &large_settings();
bool large_active();

// What the interposed surface calls for a request mimalloc does not serve
// (size at or above the threshold, or an alignment above kSmallAlignMax):
// a region, or a mimalloc block when the arena cannot take one. The large
// path owns that fallback, and the rule that a request below the threshold
// is here only for its alignment (an anonymous region, policy.h).
// nullptr with errno set when neither can be had.
void *large_allocate(size_t size, size_t align, bool zero);
// The same for aware code (spillway_alloc): the caller's SPILLWAY_* flags.
void *large_allocate_flagged(size_t size, unsigned flags);

// The region alone: its start, or nullptr with errno set. *use_small is set
// when the arena cannot take it (large_allocate then asks mimalloc;
// spillway_alloc_disk fails instead).
void *large_alloc(size_t size, size_t align, unsigned flags, bool *use_small);
void large_free(void *p);
void *large_realloc(void *p, size_t size);
size_t large_usable_size(const void *p);

// Retires a freed region (the reaper calls this).
void large_retire(struct Region *r);
// The end of a retirement, r unmapped and unlinked: its file range is
// punched (or its file closed) and its arena space given back. Called by
// large_retire, or later by the fork snapshot's tick for a range a child
// mapped (fork_snapshot.h).
void large_release_retired(struct Region *r);

// --- What aware code asks of regions (control.cpp forwards spillway.h's
// calls here; large_aware.cpp). Fields are copied under the large lock; the
// system calls on them run after it is released. ---

// A copy of what the large path knows of one live region.
struct RegionView {
    uintptr_t start = 0;
    size_t size = 0; // as allocated
    size_t map_len = 0;
    Backing backing = Backing::none;
    int fd = -1; // its file (disk and memory backings), else -1
    uint64_t file_off = 0;
    bool is_private = false;   // a fork child's private copy
    bool own_file = false;     // a file of its own this process created (nameable)
    bool foreign_file = false; // a file of its own mapped by path (spillway_map) or inherited
    uint8_t phase = 0;         // the detector's verdict (Verdict, access/access_detector.h)
    char exported[256] = {0};  // the file's name once exported or mapped by path
};

// The live region holding p (any interior pointer); false if there is none.
bool large_view(const void *p, RegionView *out);
// Aware code is about to drop the page cache of the region holding p
// (spillway_release_page_cache): from now on the shim reads nothing of it
// ahead (its streams end, a read of the prefetch worker in flight is waited
// out). Returns whether such read-ahead was running (its pages may still be
// landing: the caller drops again).
bool large_stop_read_ahead(const void *p);
// Moves the region starting at p to a disk file of its own unless it is on
// disk already (spillway_spill). 0 or -errno.
int large_move_to_disk(void *p);
// Names the file of the region holding p (spillway_export): gives it a disk
// file of its own if need be (moving its bytes), then, unless it has a name
// already, calls name_file(fd, size, ctx, path, cap), which links the file
// into the spill directory and writes the name, and records that name. The
// region is pinned from the file's check to the recorded name, so a tiering
// move cannot swap the file (and close the descriptor name_file links) in
// between. out gets the view, name included. -EPERM for a file mapped by
// path or a fork child's copy. 0 or -errno.
using NameFileFn = int (*)(int fd, size_t size, void *ctx, char *path, size_t cap);
int large_export(const void *p, NameFileFn name_file, void *ctx, RegionView *out);
// Maps the existing regular file at path, exactly expected_size bytes long,
// as a disk region (spillway_map); the file is never extended, punched or
// truncated. nullptr with errno set (ENOENT missing, EINVAL wrong size).
void *large_adopt_file(const char *path, size_t expected_size);

// Internal to the large path (large.cpp, large_aware.cpp): the one way a
// region is recorded, and made findable once its range is mapped.
struct Region *region_record(uintptr_t start, size_t size, size_t map_len);
void register_region(struct Region *r);

// Fork child (steps of fork_safety.cpp's sequence, which gives the order).
// Makes every inherited shared region private (MAP_PRIVATE over the same
// bytes; a trusted child's under MADV_RANDOM) and marks the files of
// inherited regions foreign; returns whether one of them was on disk.
// Needs the registry as the parent left it and the files open.
bool large_privatise_inherited(bool trusted);
// Untrusted (!trusted): from now on every new allocation takes the small
// path and inherited regions are never retired.
void large_after_fork_child(bool trusted);

} // namespace spillway
