// large.h — the large path: allocations at or above the threshold become
// regions of the arena, placed by policy, retired by the reaper.
//
// Invariants:
//  * g_large_threshold is SIZE_MAX until start-up has finished (or the
//    default threshold while the engine waits for its first use; the front
//    then reaches these functions only once the engine has started, see
//    engine_start.h), so every allocation before that (and during it, from
//    the config parser, the logger or the dynamic loader) takes the small
//    path: start-up cannot recurse into itself.
//  * Every region a caller holds is fully mapped and published; every byte a
//    fresh region exposes reads as zero (so calloc touches nothing).
//  * No function here holds the large lock while it calls into the reaper,
//    the call-site capture or a filesystem operation on a region's bytes.
#pragma once

#include "config.h"
#include "shared_symbol.h"

#include <cstddef>

namespace spillway {

// Defined in front_state.cpp (libspillway.so), used by both libraries.
extern SPW_SHARED size_t g_large_threshold;

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

// Fork child (fork_safety.h holds the locks and the order): makes inherited
// shared regions private and resets the large path. Untrusted (!trusted):
// new allocations take the small path and inherited regions are never
// retired.
void large_fork_child(bool trusted);

} // namespace spillway
