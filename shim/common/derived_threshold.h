// derived_threshold.h — the threshold a job gets when it names none: a
// fraction of its memory cgroup's limit, clamped between a floor and the
// 64 MiB default (threshold.h), so a job without a limit, or with one of
// 512 MiB or more, keeps exactly the default.
//
// Why: below the threshold an allocation stays anonymous memory, which
// cannot leave RAM without swap. Under a small limit a few buffers just
// below 64 MiB fill it (tests/bench/JOBS.md, XGBoost `hist` at 384 MiB: two
// 61 MiB vectors and ~74 MiB of 1-32 MiB buffers, OOM-killed 4 of 4 with
// 64 MiB, 6 of 6 by now; survived 2 of 2 with 32 MiB and 2 of 2 with 48 MiB,
// this rule's figure there).
//
//  * kDerivedThresholdDivisor = 8: one allocation of an eighth of the limit
//    is large for that job. A sixth of 384 MiB is 64 MiB (no change, killed);
//    an eighth, 48 MiB, survived. Past 512 MiB an eighth is over the
//    default, so the jobs measured at 512 MiB to 1 GiB (pandas, sklearn,
//    scipy, torchvision, graph, live) keep it, as does every job without a
//    limit.
//  * kDerivedThresholdFloor = 16 MiB (limits of 128 MiB and less): a bound
//    on how many allocations a small container sends to the large path
//    (each a region, a mapping, a call-site capture), and the size at which
//    the front first reads the limit. Measured at the floor: 200 x
//    (malloc 16 MiB, touch every page, free) cost 0.69x the CPU on the large
//    path of what it cost in mimalloc (regions are recycled), so the floor
//    is not there for a measured cost; a lower one was not measured.
//
// Where it is applied: the front, at the first allocation of at least the
// floor while the engine has not started (front/engine_loader.h), and the
// engine at its start-up (engine/startup.cpp); both read the same files with
// this code, so both derive the same threshold.
//
// Invariant: libc only, no allocation, no exception (the front runs it, on
// whichever thread allocates first; its buffers are on that thread's stack).
#pragma once

#include "threshold.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

constexpr uint64_t kDerivedThresholdDivisor = 8;
constexpr uint64_t kDerivedThresholdFloor = 16ull << 20;

// The threshold for a memory limit in bytes (0: no limit): limit / 8,
// rounded down to a whole MiB, clamped to [16 MiB, 64 MiB].
constexpr uint64_t threshold_for_limit(uint64_t limit) {
    if (limit == 0) return kDefaultThreshold;
    uint64_t t = (limit / kDerivedThresholdDivisor) & ~((1ull << 20) - 1);
    if (t < kDerivedThresholdFloor) return kDerivedThresholdFloor;
    return t < kDefaultThreshold ? t : kDefaultThreshold;
}

// The threshold in force: the one the user gave, else the one derived.
constexpr uint64_t effective_threshold(ThresholdOrigin origin, uint64_t given, uint64_t limit) {
    return origin == ThresholdOrigin::not_given ? threshold_for_limit(limit) : given;
}

// Where the threshold in force came from, in words, for the "active:" log
// line: "SPILLWAY_THRESHOLD", "the config file", "the default, no memory
// limit", "the default, 1/8 of the 2GiB memory limit is above it", "1/8 of
// the 384MiB memory limit", "the 16MiB floor, 1/8 of the 96MiB memory limit
// is below it". Returns snprintf's count.
int describe_threshold_origin(char *out, size_t cap, ThresholdOrigin origin, uint64_t limit);

// The tightest memory limit over this process's memory cgroup and every
// ancestor visible to it, in bytes; 0 when there is none (or it cannot be
// read). cgroup v1 (memory.limit_in_bytes under the `memory` controller's
// path) or v2 (memory.max under the unified path); a v1 limit of 2^60 or
// more is v1's "unlimited". `root` prefixes every path ("" in the shim; a
// fake /proc and /sys in the tests). A few small file reads.
uint64_t read_memory_limit(const char *root);

} // namespace spillway
