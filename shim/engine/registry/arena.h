// arena.h — the one reserved virtual-address range every large region lives in.
//
// Invariants:
//  * owns(p) (abi/front_state.h: the front reads it on every free) is a
//    single subtraction and comparison on two globals: free() pays nothing
//    else to tell a region from a mimalloc pointer, and needs no lock.
//    g_base is written once at start-up; g_size grows (and shrinks) in
//    steps, under the large-path lock, only at the top of the range.
//  * The range is reserved in proportion to what the job uses: it starts at
//    kInitialBytes and grows with MAP_FIXED_NOREPLACE at its own end, by at
//    least half of what it holds (step_after: from kMinStep up to kMaxStep,
//    so a growing job makes O(log n) growth calls), into a gap chosen at
//    start-up so that ordinary mappings approach it last; it shrinks back
//    when the top empties, keeping one step of slack above what is used.
//    The first step is small because address space is a limit too: a
//    process that sets RLIMIT_AS to 200 MB right after start (glibc's
//    tst-malloc-thread-fail) must still have room for its thread stacks. A process that lowers RLIMIT_AS after start-up keeps its
//    room for threads and mappings. When the next address is taken or the
//    limit forbids growth, take() returns 0 and the caller falls back to the
//    small path (as when full), with one warning per process. (A table of
//    extra ranges would cost every small free() a second test; growing one
//    range keeps owns() to one comparison.)
//  * Address space is handed out in granules (2 MiB), so a region's start is
//    2 MiB-aligned (good for THP and for any alignment up to 2 MiB) and the
//    granule index of any interior pointer finds its region in the slot table.
//  * Every byte of the range is always mapped: PROT_NONE/NORESERVE while free,
//    the region's own mapping while live. Nothing else in the process can be
//    given an address inside it.
//  * take/extend/give_back need the caller to hold the large-path lock.
#pragma once

#include "front_state.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

struct Region;

namespace arena {

constexpr size_t kGranule = size_t(2) << 20;
constexpr size_t kMinStep = size_t(32) << 20;     // smallest growth step and slack
constexpr size_t kMaxStep = size_t(1) << 30;      // largest growth step and slack
constexpr size_t kInitialBytes = kMinStep;        // reserved at start-up
// Growth step (and slack kept) for a range whose used top is `bytes`: half of
// it, rounded to kMinStep, within [kMinStep, kMaxStep].
constexpr size_t step_after(size_t bytes) {
    size_t half = (bytes / 2 + kMinStep - 1) / kMinStep * kMinStep;
    return half < kMinStep ? kMinStep : half > kMaxStep ? kMaxStep : half;
}
constexpr size_t kSlotPageBytes = size_t(1) << 30; // arena bytes per slot-table page

// g_base, g_size and owns(): abi/front_state.h (the front defines them).
// g_size is 0 until reserve() succeeds: owns() is then false for all.

// Chooses where the range lives and reserves its first kInitialBytes; it may
// later grow up to max_bytes.
bool reserve(size_t max_bytes);
size_t max_bytes();
// For unit tests: forget the reservation (unmaps it).
void release_for_tests();

inline size_t granules(size_t bytes) { return (bytes + kGranule - 1) / kGranule; }
inline size_t offset_of(uintptr_t addr) { return addr - g_base; }

// First fit; align is a power of two >= kGranule. Grows the range when
// nothing fits; returns 0 when it cannot (the caller falls back).
uintptr_t take(size_t bytes, size_t align);
// Grows [start, start+old) to [start, start+new) if the space after it is
// free (growing the range when the region ends at its top).
bool extend(uintptr_t start, size_t old_bytes, size_t new_bytes);
// Returns space; the caller has already re-reserved it PROT_NONE. Shrinks
// the range when its top has more than one step free.
void give_back(uintptr_t start, size_t bytes);
// Leaves [start, start+bytes) unusable forever: err is why it could not
// be reserved again (EEXIST: another mapping sits there), logged once per
// reason; 0 when the caller has said why (a pool range not punched).
void lose(uintptr_t start, size_t bytes, int err);
size_t free_bytes(); // free inside the current reservation
size_t used_bytes(); // held by regions (or lost)

// Re-reserves [start, start+bytes) PROT_NONE, replacing whatever is there.
bool unmap_to_reserved(uintptr_t start, size_t bytes);

// Slot table: the region covering each granule, published with release
// order once the region is fully mapped; read lock-free.
void publish(Region *r, uintptr_t start, size_t bytes);
void unpublish(uintptr_t start, size_t bytes);
Region *region_at(const void *p);

} // namespace arena
} // namespace spillway
