// sampler.h — the detector's thread: every tick it asks access_detector
// which disk regions are being streamed and which gathered at random, keeps
// each region's verdict (Region::phase, phase_since_ns, fault_rate) current,
// reads ahead of a stream, and teaches call sites their access.
//
// Advice: a disk region is MADV_RANDOM unless it is being streamed (then
// MADV_SEQUENTIAL): a random fault reads 4 KiB whatever read_ahead_kb is.
// A stream that re-reads written data is handed to the prefetch worker
// (prefetch_worker.h), which reads its file a bounded lead ahead of the
// front this thread reports every 10 ms, and pages out what the reader
// passed when the cgroup is short of room; so the reader's faults find the
// pages cached and compute overlaps I/O at any read_ahead_kb. Scattered
// faults end the stream at the next look (<= 20 ms while streaming, 100 ms
// otherwise), and the worker stops with it.
//
// Invariants: the thread starts lazily, with signals blocked; it takes the
// large lock at most twice per tick, whatever the number of regions: once
// to list them, once to publish what the tick decided (each region re-found
// O(1) with arena::region_at), plus, for each region whose probes are
// unmapped or mapped back, one short hold to check it (page_probes.h); it
// never holds it while it reads pagemap, issues reads or unmaps pages; a
// region freed under it just reads as
// unmapped (every operation is on addresses of the reserved arena, never on
// a descriptor that may have been closed). A tick with no page fault in the
// process since the last one, and no stream to feed, costs one getrusage.
#pragma once

#include "config.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

// At start-up: whether the thread teaches call sites their access
// ([callsites] learn).
void sampler_init(const Settings &s);
// Called by the large path after a disk region was created: starts the
// thread on first use.
void sampler_notice();
void sampler_stop();
void sampler_after_fork_child();

// For benchmarks: CPU time the sampler thread has used, in nanoseconds.
uint64_t sampler_cpu_ns();
uint64_t sampler_ticks();
// For tests: while held, the thread skips its ticks (and so never writes the
// live snapshot, stats_live.h, whose tick is the thread's alone); holding
// returns once a tick under way has ended.
void sampler_hold(bool hold);
// For tests: bytes of read-ahead the thread has requested for streams.
uint64_t sampler_prefetched_bytes();

} // namespace spillway
