// arena.h — the one reserved virtual-address range every large region lives in.
//
// Invariants:
//  * owns(p) is a single subtraction and comparison on two globals that are
//    written once at start-up: free() pays nothing else to tell a region from
//    a mimalloc pointer, and needs no lock.
//  * Address space is handed out in granules (2 MiB), so a region's start is
//    2 MiB-aligned (good for THP and for any alignment up to 2 MiB) and the
//    granule index of any interior pointer finds its region in the slot table.
//  * Every byte of the range is always mapped: PROT_NONE/NORESERVE while free,
//    the region's own mapping while live. Nothing else in the process can be
//    given an address inside it.
//  * take/extend/give_back need the caller to hold the large-path lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spillway {

struct Region;

namespace arena {

constexpr size_t kGranule = size_t(2) << 20;

extern uintptr_t g_base;
extern uintptr_t g_size; // 0 until reserve() succeeds: owns() is then false for all

inline bool owns(const void *p) { return (uintptr_t)p - g_base < g_size; }

// Reserves the range (the largest of a few sizes that the kernel grants).
bool reserve(size_t preferred_bytes);
// For unit tests: forget the reservation (unmaps it).
void release_for_tests();

inline size_t granules(size_t bytes) { return (bytes + kGranule - 1) / kGranule; }
inline size_t offset_of(uintptr_t addr) { return addr - g_base; }

// First fit; align is a power of two >= kGranule. Returns 0 when full.
uintptr_t take(size_t bytes, size_t align);
// Grows [start, start+old) to [start, start+new) if the space after it is free.
bool extend(uintptr_t start, size_t old_bytes, size_t new_bytes);
// Returns space; the caller has already re-reserved it PROT_NONE.
void give_back(uintptr_t start, size_t bytes);
// Marks [start, start+bytes) unusable forever (someone else mapped there).
void lose(uintptr_t start, size_t bytes);
size_t free_bytes();

// Re-reserves [start, start+bytes) PROT_NONE, replacing whatever is there.
bool unmap_to_reserved(uintptr_t start, size_t bytes);

// Slot table: the region covering each granule, published with release
// order once the region is fully mapped; read lock-free.
void publish(Region *r, uintptr_t start, size_t bytes);
void unpublish(uintptr_t start, size_t bytes);
Region *region_at(const void *p);

} // namespace arena
} // namespace spillway
