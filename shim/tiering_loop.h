// tiering_loop.h — the tiering controller: a thread that reads the cgroup's
// figures every tiering.interval_ms, asks tiering.h what to move, and moves
// regions in place (rehome.h), promotions under the cgroup's shared claims
// (claims.h): a promotion's memory is allocated whole while its claim is
// held, so when the claim is dropped the cgroup's usage already counts it.
//
// Invariants: the thread starts lazily (first large region of at least
// tiering.min_size, tiering.enabled), with signals blocked and SCHED_BATCH;
// it holds the large lock only to copy a snapshot of the live regions, and
// re-checks a region under it before moving it (rehome_region_checked);
// without a memory limit nothing is demoted and every random-phase disk
// region is promoted (one second's promote_rate per look).
#pragma once

#include <cstdint>

namespace spillway {

void tiering_notice();
void tiering_stop();
void tiering_after_fork_child();

// For benchmarks and tests: CPU time the controller has used, and its ticks.
uint64_t tiering_cpu_ns();
uint64_t tiering_ticks();

} // namespace spillway
