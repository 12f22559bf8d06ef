// writeback.h — paced writeback of dirty spill pages, so that reclaim in a
// memory-limited cgroup finds clean pages to drop instead of waiting.
//
// Why: a spill region's page cache is charged to the job's cgroup. The
// kernel's flusher threads start at the machine-wide dirty thresholds (a
// fraction of all RAM, far above a 1 GiB limit), and cgroup v1 has no
// per-cgroup dirty throttling, so a job writing more than its limit fills
// the cgroup with dirty pages. Reclaim then cannot drop them (direct reclaim
// never writes file pages), wakes the flushers and waits for the writeback,
// page after page: the job stalls. cgroup v2 balances dirty pages per cgroup
// (memory.max and memory.high), but a limit small against the disk's speed
// still stalls the writer in balance_dirty_pages.
//
// Method: a background thread polls the binding cgroup's dirty bytes (v1
// memory.stat total_dirty, v2 file_dirty) every kPeriodMs; when they exceed
// writeback_trigger_bytes(limit) and reclaim is near (writeback_due), it
// drops the page-table entries of the live disk regions (MADV_DONTNEED on
// their shared mappings: the bytes stay in the page cache; see
// unmap_before_writing for why) and asks the kernel to start writing every
// disk-backed spill file range (sync_file_range SYNC_FILE_RANGE_WRITE: only
// dirty-tagged pages are visited, so clean ranges cost a tree walk, not I/O,
// and the call does not wait for the writes to finish). Before writing, a
// pass makes the regions' dirty pages of zeros unwritten extents instead
// (zero_extents.h).
//
// Invariants: the thread starts lazily (the first disk region created while
// a memory limit binds: a process without one never gets it), with every
// signal blocked; it never holds the large lock during I/O (it copies the
// ranges under the lock, each with a dup of the file's descriptor, so a
// concurrent free can neither close the descriptor under it nor let it
// write to a recycled one); it never writes a file a fork child inherited
// (the parent's) or a region remapped private; a fork child starts its own
// thread lazily. If the limit goes away it polls once a second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spillway {

struct DirtyFigures {
    bool limited = false;
    uint64_t limit = 0;     // bytes (memory.max / memory.limit_in_bytes)
    uint64_t usage = 0;     // bytes charged to it, page cache included
    uint64_t dirty = 0;     // dirty file pages charged to that cgroup
    uint64_t writeback = 0; // file pages under writeback
};

// Reads the figures of the cgroup whose limit binds (see cgroup.h).
DirtyFigures read_dirty_figures();

// Dirty bytes above which a pass is due: 1/16 of the limit, at least 16 MiB.
uint64_t writeback_trigger_bytes(uint64_t limit);

// Pure rule (unit-tested): limited, dirty bytes above the trigger, and
// reclaim near: the room left under the limit is less than twice the dirty
// bytes (the dirty bytes alone could fill it). Far from the limit nothing needs
// clean pages yet, and a pass would write back (and unmap) a temporary the
// job is still rewriting: a 128 MiB allocate-fill-free loop in a 1 GiB
// cgroup took 147 ms a cycle in one round and 4 ms in the next.
bool writeback_due(const DirtyFigures &f);

// A disk region in a random phase (Region::phase, the access detector's
// verdict), or from a call site learned random, is being written at random: a page written back is dirtied again
// soon, so writing it cleans nothing reclaim could use, and unmapping it
// first adds a fault to the next write of each page. Measured: the scipy
// job's transpose (tests/bench/jobs), a 114 MiB array scattered into on disk
// in a 768 MiB cgroup (no room to promote it), took 530 passes in 36 s
// that wrote 31.3 GB; the same phase ran in 6 s where the array was
// promoted. So such regions join a pass only every interval: it starts at
// kRandomRegionsEveryNs and doubles, up to kRandomRegionsMaxNs, each time
// they are found dirty again by at least half of what the last pass that
// took them wrote (writing them cleaned nothing lasting; measured with
// every pass a second, a 229 MiB scatter was rewritten whole at each one:
// 9.2 GB in a 34 s phase); it goes back to the start when they stayed
// clean (a slow scatter, whose clean pages reclaim can use).
constexpr uint64_t kRandomRegionsEveryNs = 1'000'000'000;
constexpr uint64_t kRandomRegionsMaxNs = 32'000'000'000;
// Whether a pass at now_ns may take them, the last pass that did being at
// last_ns (0: none yet).
bool writes_random_regions(uint64_t now_ns, uint64_t last_ns, uint64_t interval_ns);
// The next interval, from the current one, the dirty bytes of random-phase
// regions the last pass that took them wrote, and their dirty bytes now.
uint64_t next_random_interval(uint64_t interval_ns, uint64_t written_last, uint64_t dirty_now);
// For tests: the current interval.
uint64_t writeback_random_interval_ns();

// One pass over every disk-backed spill file range of this process (those of
// regions in a random phase as writes_random_regions allows): starts
// writeback of their dirty pages (and, with wait, waits for it: for tests).
// With leave_quiet (the pacer thread's passes), a region that the last such
// pass unmapped and asked to write, or left out, and that has no page mapped
// since, is left out: nothing in this process can have dirtied it (a store
// needs a mapped page, and the pass unmapped them all), and its dirty pages
// were all handed to writeback then. Why: a pass walks every page of what it
// is given (cachestat, the dirty tags, the page tables); with 8 GiB of 64 MiB
// regions written in order in a 1 GiB cgroup, the pacer's passes every
// 50 ms took 25% of the process's CPU samples, a fill that touched one
// region at a time. Every kFullPassEvery-th pass leaves nothing out (a page
// the kernel's writeback skipped, or one another process wrote through an
// export, is asked again within a second).
// Returns the number of file ranges (one per region) it asked the kernel to
// write. A pass that asked is counted in the exit stats
// (stats_on_writeback_pass): the dirty bytes of those ranges when asked
// (cachestat(2); before Linux 6.5, the drop of the cgroup's dirty bytes over
// the pass, 0 without a limit), the bytes of mappings it unmapped first, and
// its wall time.
unsigned writeback_pass(bool wait = false, bool leave_quiet = false);

// Called by the large path after a disk region was created: starts the
// thread on first use under a memory limit.
void writeback_notice();
void writeback_after_fork_child();

// For benchmarks and tests: passes that issued writeback, and polls.
uint64_t writeback_passes();
uint64_t writeback_polls();

} // namespace spillway
