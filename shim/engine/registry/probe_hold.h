// probe_hold.h — the page probes' hold on one region's mapping, so that
// their system calls (MADV_DONTNEED on probe pages, MADV_POPULATE_READ to
// map them back, MADV_NOHUGEPAGE) run outside the large lock and a large
// malloc or free never waits for them (measured before: a large malloc's
// p99 rose from about 0.5 ms to 0.8-1.4 ms while probes unmapped pages
// under the lock).
//
// The protocol. The probe (one thread: the sampler) takes the hold lock,
// then the large lock; there it finds the region, publishes it here
// (probe_hold_publish, seq_cst) and only then checks that the region is
// still the one probed and may be probed (not freed or reborn, not pinned,
// not moving, shared over a file of this process). It drops the large lock
// and makes its system calls, then clears the hold and drops the hold lock
// (probe_hold_end). Whoever changes what a region's addresses map (a
// retirement's unmap and the reuse of its range, a realloc's mremap or
// growth, a tiering or aware move, the recycle cache's new owner) first
// makes that visible to the probe's check (a pin, Region::moving, a new
// birth: a seq_cst store, or a store under the large lock), then calls
// wait_out_probes(r) before it touches the mapping, never while holding the
// large lock. Either the probe's check sees the change and keeps off, or
// the changer sees the hold and waits (at most one region's probe calls:
// 128 madvise calls, a fraction of a millisecond) for it to end.
//
// Lock order (engine/fork_safety.h): the hold lock is taken before the
// large lock (5), and may be awaited while the move lock (3) is held; it
// is never awaited while the large lock is held. Not taken by fork's
// prepare: a fork child re-initialises it (probe_hold_after_fork_child),
// since the sampler thread that may have held it does not exist there.
//
// Invariant: at most one region is held at a time; a region is held only
// between probe_hold_begin and probe_hold_end on the same thread.
#pragma once

namespace spillway {

struct Region;

// The probe's side: begin (before the large lock), publish (under it,
// before reading the region's state; nullptr: none after all), end.
void probe_hold_begin();
void probe_hold_publish(const Region *r);
void probe_hold_end();

// The changer's side: returns once no probe holds r (at once if none does).
// Only compares r; never dereferences it.
void wait_out_probes(const Region *r);

// The same in fork's prepare, where the forking thread may be the prober
// itself (a signal handler, or a test): false, at once, when it is.
bool wait_out_probes_unless_mine(const Region *r);

// The region held now, or nullptr (for tests).
const Region *probe_held();

// Fork child (fork_safety.cpp, with the registry's step): nothing is held.
void probe_hold_after_fork_child();

} // namespace spillway
