// stats_live.h — a snapshot of this process's live regions, rewritten about
// once a second into a memfd named "spillway-live", so `spillway top` and
// `spillway run --record` can watch a running job (the stats line of
// stats.h is written only at exit).
//
// What it carries is what only the shim knows: each region's address range,
// backing (and, while a move is under way, where it is going), the
// detector's phase and the advice in force, the pages it faulted in per
// second, and for a disk or memory region its file range's pages (bytes
// cached and dirty, cachestat(2)): the pages the shim unmapped and the
// read-ahead stay cached and are charged to the cgroup, so the mapped
// pages a reader finds in /proc (Rss) say less than the region holds, and
// only the shim knows which file range is the region's. Mappings, faults
// and I/O the readers take from /proc, which is authoritative. The cache
// figures are measured only while someone reads the snapshot (a read since
// the last write): they cost the sampler a walk of every region's range.
//
// Why a memfd and not a file in the spill directory: it dies with the
// process, however it ends (kill -9, _exit, exec), so the spill directory
// keeps holding nothing a crash could leave behind. Readers find it as the
// descriptor whose link reads "/memfd:spillway-live (deleted)" and open it
// through /proc/PID/fd/N.
//
// Invariants: only the sampler thread writes (one writer); the writer never
// allocates (fixed static buffers), holds the large lock only to copy the
// region fields and dup each spill file's descriptor (so a free meanwhile
// can neither close it nor have its number reused under us), never during
// I/O or cachestat; before each write it checks that its descriptor still
// is its memfd (same inode), so a program that closed it and reused the
// number never gets our text; a fork child writes to a memfd of its own,
// never the parent's. Where cachestat is missing (ENOSYS, before Linux
// 6.5) the cache fields are left out, never estimated. A reader can meet a
// half-rewritten snapshot: the text opens with the length and hash of the
// rest (common/text_sum.h), and a reader accepts only a text whose head
// holds and that names its pid.
#pragma once

#include "registry/placement.h"
#include "stats_format.h"

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace spillway {

constexpr uint64_t kLivePeriodNs = 1'000'000'000;

// The fields of one region the snapshot lists.
struct LiveRegion {
    uint64_t start = 0, len = 0; // mapped range
    uint64_t phase_since_ns = 0;
    uint32_t fault_rate = 0; // pages per second
    int advice = 0;
    uint8_t backing = 0, phase = 0;
    uint8_t moving_to = 0; // a move under way takes it there (Backing; 0: none)
    bool is_private = false; // a fork child's copy-on-write view of an inherited region
    // Its file range's pages in memory, when measured (a disk or memfd region, not
    // private, cachestat answered): written as "cached" and "dirty".
    bool cache_known = false;
    uint64_t cached = 0, dirty = 0; // bytes
};

// At start-up: where a move under way is taking region r, or Backing::none
// (tiering/rehome.h moving_to). The mover is a layer above this one, so it
// is handed in; unset, no region shows a move.
struct Region;
using MovingToFn = Backing (*)(const Region *r);
void stats_live_init(MovingToFn moving_to);
// Called by the sampler thread every tick: rewrites the file when
// kLivePeriodNs have passed since the last write.
void stats_live_tick(uint64_t now_ns);
// The memfd's name, as memfd_create takes it.
using stats_key::kLiveMemfdName; // stats_format.h: the tool looks for it by name
// This process's memfd, or -1 before the first write (tests).
int stats_live_fd();

// The snapshot as one JSON line into buf[cap], opened by its text_sum head;
// lists as many of the n regions as fit and says how many of the process's
// `total` live regions were left out ("unlisted"). Returns the length, or 0
// when not even the head fits.
size_t stats_live_format(char *buf, size_t cap, pid_t pid, uint64_t now_ns, const LiveRegion *regions,
                         size_t n, size_t total);

} // namespace spillway
