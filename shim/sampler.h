// sampler.h — learns, at a low rate, which disk-backed call sites are being
// accessed at random.
//
// Method (chosen because it is cheap and sees exactly what we need): for a
// disk region, read this process's page table for up to 256 windows of 64
// pages spread over the region
// (/proc/self/pagemap, 512 bytes a window). A sequential writer or reader
// leaves windows either fully mapped or empty, with at most the boundary
// window partial; scattered access leaves many partial windows. Shared file
// write faults map one page at a time (no fault-around), so the signal is
// sharp. Page cache residency (mincore) is blurred by 8 MiB readahead and
// is not used.
//
// Invariants: the thread starts lazily, with signals blocked; it never holds
// the large lock while it reads pagemap; a region freed under it just reads
// as unmapped. Classifying a site as random sets MADV_RANDOM on its live
// regions and makes every later allocation from it prefer memory. Each
// sampled region's own advice also follows its current phase (random:
// MADV_RANDOM; streaming again: MADV_SEQUENTIAL).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

struct WindowCounts {
    unsigned empty = 0, partial = 0, full = 0;
};

enum class Verdict { undecided, sequential, random };

// Pure classification rule (unit-tested).
Verdict classify_windows(const WindowCounts &w);

// Reads the page-table presence of [start, start+len) in windows.
WindowCounts sample_region(uintptr_t start, size_t len);

// Called by the large path after a disk region from an unclassified site
// was created: starts the thread on first use.
void sampler_notice();
void sampler_stop();
void sampler_after_fork_child();

// For benchmarks: CPU time the sampler thread has used, in nanoseconds.
uint64_t sampler_cpu_ns();
uint64_t sampler_ticks();

} // namespace spillway
