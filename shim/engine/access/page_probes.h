// page_probes.h — one region's probes: placing them, unmapping them,
// reading which were touched, mapping them back; and their cycle of two
// windows back to back, then a rest (probe_rules.h says why and what the
// counts mean). The sampler thread owns every ProbeSet and drives it.
//
// A cycle: unmap every probe still mapped (window 1 opens); after the
// window, read which were touched and unmap those again (window 2 opens);
// after it, read again and judge the two windows; rest. A window lasts a
// length of the program's CPU time (program_cpu_ns: the process's, less
// spillway's threads'), not of the clock: a program that a loaded machine runs in bursts gets
// the same work into each window, never one window of work and one of
// sleep (measured: with 14 runnable threads on 2 cores, half the
// clock-timed cycles saw 40-80 probes touched in one window and none in
// the other). A window that sees no CPU time at all closes after 1 s.
// Windows start at 2 ms, shorten while a window sees more than half the
// probes (down to 0.25 ms), lengthen while too few are touched to judge
// (up to 500 ms), each time to where 40% would be touched at random
// (probe_rules.h: enough for one cycle's strong verdict). A first window
// that saw nearly every probe still opens the second: if that one sees
// most of them again, the region is hot (probe_rules.h), and a scatter
// that short-lived may leave no later cycle to judge it. The rest keeps
// the program's probe faults under kProbeTouchesPerS on average, with a
// burst of kProbeBurstNs of them allowed, so the first cycles on a region
// that starts being used are not spaced by the faults of the ones that
// found the window length. Why
// start short: a window too long costs the program a fault per probe and
// a rest to pay for them, one too short costs almost nothing (measured:
// the scatter saw 123 of 128 probes in an 8 ms window, and with
// the 8 ms start, 200 ms rests and halving, a 0.3-0.7 s scatter after its
// table's initialisation got no cycle that could judge).
//
// Huge mappings: a region filled under MADV_SEQUENTIAL is mapped by 2 MiB
// page-table entries once the kernel reads ahead in 2 MiB folios (ext4,
// Linux 6.18: all but its first ~40 MiB), and unmapping 4 KiB of one
// unmaps all 2 MiB. Such strata used to get no probe, so a table filled
// in order then scattered into was never probed and stayed "sequential"
// (measured: 118 of 128 strata huge in about half the runs of the issue's
// pair). When a stratum is mapped huge, the region is made
// MADV_NOHUGEPAGE (probes_apply, with the region held): the probe's first
// unmapping then ends its block's 2 MiB mapping, and the block is mapped
// again by 4 KiB entries (one fault maps the whole folio; measured). That
// cycle counts blocks, not pages, and is discarded (settling); presence
// is told the whole block is present until it is mapped again (its refault
// is no news of access) or none of its pages is cached any more (a later
// read is news: a re-read in order after eviction was unseen). At most 512 MiB of probed blocks are demoted in
// live regions (kUnhugeMaxBytes, page_probes.cpp: presence walks a demoted
// block entry by entry, so a region with demoted blocks is looked at whole
// once a second while the process faults little, sampler.cpp); a set over
// the cap probes only its strata not mapped huge, as before. The price:
// the probed blocks stay mapped by 4 KiB entries for the region's life,
// the recycled mapping's too (the scatter took 0.40-0.48 s on such
// a table against 0.27-0.29 s all huge and 0.60-0.70 s all 4 KiB).
//
// A cycle runs only while presence (access_detector.h) sees the region
// still: while it fills, presence has the news, and probes behind the
// front would see nothing; a zero there says nothing about the window or
// about idleness. A cycle during which presence saw the region change
// (presence_moved) is discarded, and the next starts after kRestNs.
//
// Safety: MADV_DONTNEED discards the bytes of a private or anonymous page.
// So probes are unmapped only while their region is held (probe_hold.h):
// under the large lock, the region is re-found (arena::region_at),
// published as held, and only then checked to be still the same live
// region (start, birth), on disk, mapped shared over a file of this process
// (not a fork child's private copy, not a foreign file), not being resized
// (pins) nor moved (Region::moving, set by both kinds of move before their
// checks). The system calls then run outside the large lock (a large malloc
// or free never waits for them; before, a large malloc's p99 rose from
// about 0.5 ms to 0.8-1.4 ms), and the hold keeps the mapping as checked
// until they end: whatever would change it (a retirement's unmap and the
// reuse of its range, a realloc's mremap or growth, a move, the recycle
// cache's new owner, a free that unmaps an exported region at once) first
// makes itself visible to the check, then waits out the hold. A region
// being moved by tiering is mapped shared in every chunk (its old file or
// its new memfd), and a move starts only after the probe's calls end.
// Pages are mapped back with MADV_POPULATE_READ, only pages still in the
// page cache (never a disk read while a retirement may be waiting), under
// the same hold and checks; MADV_NOHUGEPAGE too.
//
// Invariants: a set's probes are whole pages of its region, one per
// stratum (so in address order, each alone in its 16-page block), none
// under a huge mapping when placed unless the region is MADV_NOHUGEPAGE; every placed probe of a live set is
// reported present to the presence detector (runs_with_probes), with its
// whole 2 MiB block while a huge mapping its unmapping ended is not mapped
// again, so its unmapping is never news there; a probe's page is never unmapped but by
// probes_apply. A cycle runs once kMinProbes are placed; strata whose page
// was not mapped get their probe at a later cycle's start.
#pragma once

#include "access/probe_rules.h"

#include <cstddef>
#include <cstdint>

namespace spillway {

// The program's faults on probes, per second, over every region probed
// and touched: at 5-15 us each (measured here, under load), 0.25-0.75%
// of its time at most. The sampler thread's own cost (measured with
// tests/bench/detector_cost.c, 16 regions of 256 MiB, 5,000 random page
// reads a second for 10 s, load 5-9): 30 ms of CPU against 0 ms with
// profile.probe off (0.30% of a core; /proc's clock ticks are 10 ms); while
// the regions fill, 130-160 ms against 60-80 ms (about 1% of a core more).
// Re-measured with the 2 ms first windows and 100 ms minimum rest, main's
// build beside it in pairs (load 4-8): 10-40 ms with huge-mapped regions
// left unprobed as before, 20-40 ms for main; 80-140 ms with probed
// blocks demoted to 4 KiB mappings (capped at 512 MiB, see below). Again
// on 2026-12-02 (load 5-15, interleaved with the build before this
// paragraph's): 30-70 ms (0.3-0.7% of a core) against 50-90 ms, and
// 0-10 ms with profile.probe off (docs/benchmarks.md, "Learning without a
// memory limit").
constexpr uint64_t kProbeTouchesPerS = 512;
// The burst: this long's worth of kProbeTouchesPerS may be spent at once
// (0.5% of one second of the program's time at most, once per idle second).
constexpr uint64_t kProbeBurstNs = 1'000'000'000;

struct ProbeSet {
    uintptr_t start = 0; // the region: start, birth, length in pages
    uint64_t born = 0;
    uint64_t pages = 0;
    uint32_t count = 0;             // strata: probe_count(pages), one probe each once placed
    uint64_t page[kMaxProbes] = {}; // probe i's page index, in stratum i
    // Bit i per probe: placed (at a page mapped then, not under a huge
    // mapping); unmapped by us and not seen mapped since; touched (found
    // mapped while armed) at the last read; touched in window 1; left out
    // (found under a huge mapping later: never unmapped, never counted).
    uint64_t placed[kMaxProbes / 64] = {};
    uint64_t armed[kMaxProbes / 64] = {};
    uint64_t touched[kMaxProbes / 64] = {};
    uint64_t first[kMaxProbes / 64] = {};
    uint64_t excluded[kMaxProbes / 64] = {};
    // Probes placed under a huge mapping whose 2 MiB block has not been
    // mapped again since their first unmapping ended it.
    uint64_t zapped[kMaxProbes / 64] = {};
    // What the presence detector is told is present (runs_with_probes),
    // sorted by first page: each placed probe's page, or its whole block
    // while zapped (the block's other pages come back at the program's
    // first touch there, one fault per folio: no news of access either).
    PageRun masked[kMaxProbes] = {};
    uint32_t n_masked = 0;
    uint32_t queued[kMaxProbes] = {}; // probes to unmap (or map back) in probes_apply
    uint32_t n_queued = 0;
    uint8_t step = 0; // 0 resting, 1 window 1 open, 2 window 2 open
    bool retiring = false; // probes_retire: map the probes back, then free
    bool busy = false;     // the region was being resized: the step is tried again
    bool gone = false;     // the region is not the one probed any more
    bool broken = false;   // the kernel refused to unmap: probed no more
    bool wants_unhuge = false; // a stratum's page is mapped huge: the region should be MADV_NOHUGEPAGE
    bool unhuge = false;       // it is: a probe's unmapping then ends its 2 MiB mapping for good
    bool placed_unhuge = false; // probes were placed once since (a retry at once, not after a rest)
    bool settling = false;      // this cycle unmaps huge mappings: its first window counts blocks
    uint64_t window_ns = 0;           // of the program's CPU time
    uint64_t opened_ns = 0, opened_cpu_ns = 0; // when the open window opened (clock, program's CPU)
    uint64_t first_ns = 0, first_cpu_ns = 0, next_ns = 0, idle_rest_ns = 0;
    uint64_t paid_to_ns = 0;   // the touch budget (kProbeTouchesPerS) is spent up to this time
    bool presence_moved = false; // presence saw the region change while this cycle was open
    uint64_t news_ns = 0;  // when presence last saw pages of the region newly mapped
    uint64_t cycle_ns = 0; // when the current (or last) cycle opened
    ProbeCounts counts;    // of the last cycle
    Verdict vote = Verdict::undecided;
    uint8_t votes = 0;
    uint64_t random = 0;
};

// What a cycle ended with: its reading, and a verdict once two cycles in a
// row agreed, or one strong random reading (probe_rules.h), to be learned;
// undecided otherwise.
struct ProbeResult {
    bool judged = false; // a second window closed
    ProbeReading reading;
    ProbeCounts counts;
    uint64_t first_ns = 0, second_ns = 0;         // the windows, by the clock
    uint64_t first_cpu_ns = 0, second_cpu_ns = 0; // ...and in the program's CPU time
    Verdict agreed = Verdict::undecided;
};

// A set for the region [start, start + pages*4096) born at `born`, its
// first step due now; nullptr if out of memory.
ProbeSet *probes_new(uintptr_t start, uint64_t born, uint64_t pages, uint64_t seed, uint64_t now);
// Frees s. Blocks its probes demoted stay mapped by 4 KiB entries while
// the region lives, so their bytes stay charged to the 512 MiB cap:
// returns them, for probes_uncharge once the region is gone (0: none).
uint64_t probes_free(ProbeSet *s);
void probes_uncharge(uint64_t bytes);

// Unmasks s's zapped blocks the program mapped again or that reclaim
// emptied (every placed probe's mask then is its page alone). A cycle's
// start does it too, but a set rests up to 4 s between cycles: a block
// evicted during a rest and re-read before the next cycle (a chain's next
// buffer, read ahead by the worker, then by its reader) stayed masked, and
// the re-read was no news to presence: no stream, no chain (docs/flakes.md).
// So the sampler calls this before each full look of the region.
void probes_unmask(ProbeSet &s, int pagemap_fd);

// Whether a step is due: by the clock, and for a window closing, by the
// program's CPU time too (cpu_ns: program_cpu_ns); if not, next_ns moves
// to when it may be.
bool probes_due(ProbeSet &s, uint64_t now, uint64_t cpu_ns);

// The step's reads (no lock): places the probes if none are, reads which
// are mapped, queues what probes_apply must unmap (or, retiring, map back).
void probes_read(ProbeSet &s, int pagemap_fd, uint64_t now);
// Each set's queue, if its region passes the checks above (one short hold
// of the large lock per set, for the checks; the calls run outside it,
// with the region held); else the set is marked gone (or busy, while its
// region is being resized).
void probes_apply(ProbeSet *const *sets, size_t n);
// Ends the step: opens the next window, or judges the cycle and rests.
// probing: how many regions' probes are being touched (they share
// kProbeTouchesPerS).
ProbeResult probes_advance(ProbeSet &s, uint64_t now, uint64_t cpu_ns, uint32_t probing);
// Starts mapping the probes back: probes_read then probes_apply do it;
// then the set can be freed.
void probes_retire(ProbeSet &s);

// Probe pages the program touched, since start (the sampler discounts
// them from the process's fault count), and cycles judged.
uint64_t probes_touches();
uint64_t probes_cycles();

} // namespace spillway
