// probe_rules.h — the rules of the probe method: where a region's probes
// go, how they stay hidden from the presence detector, and what two
// windows of touches say about how the region is accessed. Pure functions;
// page_probes.h carries the method out, the sampler schedules it.
//
// Why probes: without a memory limit nothing is evicted, so once every
// page of a region is mapped, page-table presence (access_detector.h)
// never changes again and a scatter site is never seen. The sampler then
// unmaps a sample of the region's pages from this process's page table
// (MADV_DONTNEED on a MAP_SHARED file mapping: the page stays in the page
// cache, dirty or clean, and no byte is lost); the next access to one, a
// read or a write, by the program or by the kernel on its behalf, maps it
// back with a minor fault, which pagemap shows.
//
// Why not soft-dirty bits or PAGEMAP_SCAN's written bits (kernel 6.18
// has both): clearing soft-dirty (/proc/self/clear_refs "4") write-protects
// every page of the process, so after each clear the first store to every
// page the program uses (mimalloc's heap, stacks: the small-allocation
// path) takes a fault, while a probe costs a fault on its own page only;
// both bits see stores only, so a dataset read back in order says nothing;
// and PAGE_IS_WRITTEN means something only in a range registered for
// userfaultfd write protection, which a file on disk does not support
// (anonymous memory, shmem and hugetlbfs only; without it every present
// page reads as written). Unmapping sees reads and writes, on exactly the
// pages sampled, and what other code reads is unchanged: residency is
// asked of the page cache (mincore, cachestat: tiering, spillway_residency),
// where an unmapped probe stays; pagemap is read for anonymous regions
// (rehome.cpp) and for regions being moved (move_tracked.h, which probes
// keep off: Region::moving), and the presence detector is told the probes
// are present (runs_with_probes).
//
// A scatter that ended before the sampler first looked needs no probe:
// the first look at a fresh region sees its islands (classify_first_look,
// access_detector.h).
//
// How touches tell access apart, with no timing assumption: two windows
// back to back, and which probes were touched in each. A pass in order
// touches a page once per pass, so a probe touched in the first window is
// not touched again in the second: the front has moved on, however many
// fronts (threads filling slices) there are. Random access touches each
// probe independently of the last window: a probe touched in the first is
// touched in the second as often as any other, T1*T2/K of them expected.
// That holds while neither window saw half the probes (more, and one pass
// could have wrapped round into the other window: windows are shortened)
// and while enough were touched to count (fewer: windows are lengthened).
//
// Invariants: nothing here allocates, locks or calls the kernel.
#pragma once

#include "access/access_detector.h" // PageRun, Verdict

#include <cstddef>
#include <cstdint>

namespace spillway {

// At most this many probes per region: enough for T1*T2/K to reach
// kMinExpected when a fifth of the probes are touched per window, few
// enough that a window costs the program at most 128 minor faults.
constexpr uint32_t kMaxProbes = 128;
// One probe per aligned 16-page block at most: a read fault maps the
// other absent pages of its 64 KiB block (fault-around), never a probe of
// another block. With fewer than kMinProbes probes the counts cannot
// reach kMinExpected (T1*T2/K is at most K/4): the region is not probed.
constexpr uint64_t kProbeBlockPages = 16;
constexpr uint32_t kMinProbes = 32;
// Touches expected in both windows at random before any verdict.
constexpr double kMinExpected = 8;
// Runs of touched probes (both windows together) before a random verdict
// from windows that saw more than half the probes (each front of a pass
// in order leaves one run per window; a single pass also repeats nothing).
constexpr uint32_t kMinSpreadRuns = 8;

// How many probes a region of `pages` pages gets (0: too small), and the
// stride of their strata: probe i lies in [i*stride, (i+1)*stride), a
// whole number of 16-page blocks.
uint32_t probe_count(uint64_t pages);
uint64_t probe_stride(uint64_t pages);

// The page of probe i, from a random number: anywhere in its stratum, so
// that no regular stride of the program lines up with the probes.
uint64_t probe_page(uint64_t pages, uint32_t i, uint64_t random);

// Adds the parts of masks (page ranges of the region, sorted by first page,
// possibly overlapping: each probe's page, or the 2 MiB block its first
// unmapping unmapped, page_probes.h) that fall in [lo, hi) to runs (sorted,
// disjoint, relative to lo) as present, merging, into out[cap]; returns
// the count, or -1 when out is too small. The presence detector reads the
// result: a probe's own unmapping and re-mapping is never news to it.
long runs_with_probes(const PageRun *runs, size_t n, const PageRun *masks, size_t k, uint64_t lo,
                      uint64_t hi, PageRun *out, size_t cap);

// What one probing cycle counted: of `probes` unmapped, `first` touched in
// the first window, `second` in the second (all probes unmapped again at
// its start), `both` in both; `*_runs`: runs of consecutive probes touched
// in each window (probe order is address order).
struct ProbeCounts {
    uint32_t probes = 0;
    uint32_t first = 0, second = 0, both = 0;
    uint32_t first_runs = 0, second_runs = 0;
};

enum class WindowChange : uint8_t { keep, shorter, longer };

struct ProbeReading {
    Verdict verdict = Verdict::undecided;
    WindowChange change = WindowChange::keep;
    double expected = 0; // touched in both, expected at random
    // A random verdict from kStrongExpected or more expected repeats: one
    // cycle is enough (a pass in order repeats none, so it would need
    // twice the expected repeats by chance, never seen). Else two cycles
    // in a row must agree: a scatter of 20M writes into 512 MiB lasts
    // about 1 s, and one cycle's probe faults cost a rest of up to 0.5 s
    // (measured: two cycles in a row judged random in 2 of 3 runs).
    bool strong = false;
};
constexpr double kStrongExpected = 2 * kMinExpected;

// The verdict: random when the windows' touches are as independent as
// random access makes them (both >= expected / 2) and spread (many short
// runs, not one busy spot beside a stream); sequential when almost none
// repeats (both <= expected / 10); undecided otherwise, or when expected
// is below kMinExpected (longer windows, if a window saw few). A window
// that saw more than half the probes asks for shorter windows, and can
// only be random (a pass in order may have wrapped round: repeats prove
// nothing, runs still do); one that saw nine tenths says nothing by
// itself. But when both windows saw more than half, and a quarter of the
// probes were touched in both, the region is hot: a pass in order covers
// each page once, so two windows each covering most of it, back to back,
// mean its pages were touched again within milliseconds, all over it,
// whether at random or by passes lapping it. That is a strong random
// verdict (memory serves both; on disk either rereads it). Why: a dense
// scatter (20M writes into 512 MiB in 0.2 s on an idle machine) touches
// every page each millisecond, and a window cannot be shorter than the
// 2-4 ms its own unmapping and pagemap reads take, so every window of such
// a scatter saw nine tenths and the site was never judged (control
// learning failed 1 run in 4 there).
ProbeReading read_probes(const ProbeCounts &c);

// By how much to multiply the windows' length after a reading that asked
// for a change: to where kWindowTarget of the probes would be touched if
// access is random (a probe is touched in a window of length w with
// probability 1 - e^(-rate*w), the rate estimated from the busier window),
// shorter by 2 to 16 times, longer by 2 to 8 times (2 when nothing was
// touched: no rate to estimate). Why 40%: a cycle whose windows each see
// 40% expects 0.16 K = 20 repeats of 128 at random, above kStrongExpected,
// so one cycle can decide; a third (the old target) expected 14, and a
// second cycle had to agree. Why estimate rather than halve or double:
// every cycle spent finding the length costs the program a rest's worth
// of probe faults (measured: the scatter saw 123 of 128 probes in
// an 8 ms window; halving took four cycles, 2 s of rests).
constexpr double kWindowTarget = 0.4;
double window_scale(const ProbeCounts &c, WindowChange change);

// Runs of consecutive set bits among the first k bits of bits.
uint32_t touched_runs(const uint64_t *bits, uint32_t k);

} // namespace spillway
