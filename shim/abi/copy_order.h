// copy_order.h — which copies front/copy_forward.cpp does itself, front to
// back, instead of leaving their order to glibc.
//
// Why: glibc's memmove and memcpy (memmove-vec-unaligned-erms, glibc 2.36)
// copy a block below their non-temporal threshold *backwards* when
// (dst - src) mod 4096 is under eight vectors (256 bytes with AVX2, 512
// with AVX-512): a forward copy would stall on 4k aliasing. Every large
// region starts on a 2 MiB boundary, so a copy from one region into another
// always aliases so, and goes backwards: measured with perf's major-fault
// addresses, a 16 MiB copy out of an evicted spill file faulted its 4,096
// source pages from the last to the first, one 4 KiB read each, at offsets
// 0-192 and forwards from 256 on; pandas' merge took 20,486 major faults,
// 81% of them inside memmove, running backwards. Neither the kernel's
// read-ahead nor the prefetch worker follows a stream backwards, so such a
// copy ran at the disk's random-read latency instead of its bandwidth.
//
// Invariant: a pure rule on the two addresses, the length and whether one
// side lies in the arena (abi/front_state.h, arena::owns); copies whose
// ranges overlap keep memmove's own order (it is what makes them correct).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// Smaller copies are left alone: at most 64 pages backwards.
constexpr size_t kForwardCopyMin = size_t(256) << 10;
// From here on the front copies with its own forward loop of non-temporal
// stores; below, in page-sized pieces by glibc, and only when a page of
// either side is not in memory (mincore), since glibc's own routine is
// twice as fast on cached data (in RAM on the CI VM, best of 200: 1 MiB in
// 0.026 ms by glibc, 0.057 by a forward loop, 0.075 in pieces; 16 MiB in
// 1.13 ms by glibc, 0.80 streamed; 128 MiB in 13.9 and 7.4; 512 MiB, where
// glibc streams too, 30.1 and 29.2).
constexpr size_t kStreamCopyMin = size_t(16) << 20;
// glibc's window, for the widest vectors it uses (8 x 64 bytes).
constexpr uintptr_t kAliasWindow = 512;
constexpr size_t kCopyPage = 4096;

// Whether the copy of n bytes from src to dst, one side in the arena, is
// done front to back (streamed, or in page-sized pieces: kStreamCopyMin).
inline bool copy_goes_forward(uintptr_t dst, uintptr_t src, size_t n, bool touches_arena) {
    if (n < kForwardCopyMin || !touches_arena) return false;
    if (((dst - src) & (kCopyPage - 1)) >= kAliasWindow) return false; // glibc goes forwards itself
    uintptr_t apart = dst > src ? dst - src : src - dst;
    return apart >= n; // overlapping: memmove's own order
}

// The first piece's length: up to the source's next page boundary, so that
// every later piece reads one source page, in order.
inline size_t first_piece(uintptr_t src, size_t n) {
    size_t to_boundary = kCopyPage - (src & (kCopyPage - 1));
    return to_boundary < n ? to_boundary : n;
}

} // namespace spillway
