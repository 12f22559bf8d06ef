// tiering_loop.h — the tiering controller: a thread that reads the cgroup's
// figures every tiering.interval_ms (sooner after a fork, and while a fork
// snapshot's copies could outgrow the room: below), asks tiering.h what to move, and moves
// regions in place (rehome.h), promotions under the cgroup's shared claims
// (claims.h): a promotion's memory is allocated whole while its claim is
// held, so when the claim is dropped the cgroup's usage already counts it.
//
// Invariants: the thread starts lazily (first large region of at least
// tiering.min_size, tiering.enabled), detached, with signals blocked and
// SCHED_BATCH, like the sampler and writeback threads; a fork child starts
// its own the same way (tiering_after_fork_child, a step of fork_safety.cpp's
// sequence), never in an untrusted child, and never moves a region it inherited
// (fork_safety.h). Its locks follow fork_safety.h's order: the large lock
// alone to copy a snapshot of the live regions, the move lock then the
// large lock while moving, the claims file's flock with neither held. It
// re-checks a region under the large lock before moving it
// (rehome_region_checked). The random phase it promotes is the access
// detector's verdict (Region::phase, fault_rate; access/sampler.h), nothing of its
// own. Without a memory limit nothing is demoted and every random-phase
// disk region is promoted (one second's promote_rate per look).
#pragma once

#include "config.h"

#include <cstdint>

namespace spillway {

// At start-up: the settings the controller follows ([tiering], the memory
// reserve); they outlive the process's threads.
void tiering_init(const Settings &s);
void tiering_notice();
void tiering_stop();
void tiering_after_fork_child(bool trusted); // untrusted: never starts, moves nothing

// Under memory pressure, before any demotion: a hook from the layer above
// (large/fork_snapshot.h snapshot_spill) that turns up to need bytes of
// anonymous memory the fork snapshots hold into page cache, and returns
// how many; room: what the cgroup has left (0 under pressure). Set once at
// start-up.
using SnapshotSpillFn = uint64_t (*)(uint64_t need, uint64_t room);
// And whether the snapshots' copies could outgrow room: while they could,
// the loop checks this process's anonymous memory every kSnapshotWatchMs
// and looks at once when it has grown by 16 MiB (a parent's rewrite makes
// copies at memory speed), else it looks every tiering.interval_ms.
using SnapshotWatchFn = bool (*)(uint64_t room);
void tiering_set_snapshot_hooks(SnapshotSpillFn spill, SnapshotWatchFn watch);
inline constexpr unsigned kSnapshotWatchMs = 10;
// A fork has just frozen regions: the loop looks now, not at the end of
// its sleep (what the parent writes next may be copies).
void tiering_look_soon();

// For benchmarks and tests: CPU time the controller has used, and its ticks.
uint64_t tiering_cpu_ns();
uint64_t tiering_ticks();

} // namespace spillway
