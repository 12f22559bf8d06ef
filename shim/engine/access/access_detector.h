// access_detector.h — decides, per region and per tick, whether the pages
// newly faulted in since the last tick came as one stream or as scattered
// islands, and where a stream's reader is. Pure functions over page-table
// presence samples; the sampler thread (sampler.cpp) feeds them and acts.
//
// Why page-table presence, compared tick to tick: a fault maps the faulted
// page plus at most fault-around (64 KiB) of pages already cached, and under
// MADV_RANDOM (the advice every disk region keeps, see backing.h) no
// read-around creates large folios that a fault would map whole. So each
// random fault leaves one small new island, and a reader going in order
// leaves one long new run at a moving front: a faithful signal whatever
// read_ahead_kb is. Presence *windows* (the old method) are blurred as soon
// as anything maps more than one page per fault.
//
// Invariants: nothing here allocates, locks or makes a system call except
// read_presence (one ioctl or pread loop on /proc/self/pagemap) and
// page_mapping (one ioctl or pread).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// The detector's verdict on a region; Region::phase holds it as a uint8_t.
enum class Verdict : uint8_t { undecided = 0, sequential = 1, random = 2 };

// A run of present pages [first, first+count), in pages from the region start.
struct PageRun {
    uint64_t first = 0, count = 0;
};

// What one tick saw, relative to the previous tick's presence bitmap.
struct TickEvidence {
    uint64_t new_pages = 0;    // present now, absent at the last tick
    uint64_t new_islands = 0;  // present runs holding new pages (old present pages bridge)
    uint64_t longest_new = 0;  // new pages in the island with the most
    uint64_t longest_start = 0; // its first new page
    uint64_t longest_end = 0;  // page after its last new page (a stream's front)
    uint64_t longest_run_start = 0; // first page of the present run holding it (pages
                                    // between there and longest_start were present before)
    uint64_t longest_run_end = 0;   // page after the last of that run (a reader moving
                                    // down left what lies between longest_end and it)
    bool overflow = false;     // too many runs to list: only a prefix was compared
    // The first kListedIslands islands, in page order: [start, end) of each
    // one's new pages (scatter_tally tells them from a slow stream's steps).
    static constexpr size_t kListedIslands = 8;
    uint64_t island_start[kListedIslands] = {}, island_end[kListedIslands] = {};
    // Set by note_huge_folios: the listed islands that are one aligned 2 MiB
    // block mapped by a huge entry (one fault on a cached 2 MiB folio), and
    // whether the longest island is one.
    uint64_t huge_folio_islands = 0;
    bool longest_huge_folio = false;
};

// Thresholds, in 4 KiB pages. A stream leaves one run of at least
// kStreamMinPages per tick (a reader faulting 4 KiB at a time at the disk's
// random-read latency still covers ~400 pages in 100 ms); a random fault
// leaves at most fault-around (16 pages) plus whatever large folio is
// already cached there.
constexpr uint64_t kStreamMinPages = 64;
constexpr uint64_t kRandomMinIslands = 4;
constexpr uint64_t kIslandMaxPages = 32; // mean new-island size of scattered access
constexpr uint64_t kFolioBlockPages = 512; // a 2 MiB folio, mapped whole by one fault

// Compares this tick's runs (sorted, disjoint) with the bitmap of pages
// present at the last tick (bit i = page i, `pages` bits), then rewrites the
// bitmap to this tick's presence. `bits` may be null (first tick: nothing
// counted as new except what is present now).
TickEvidence compare_presence(uint64_t *bits, uint64_t pages, const PageRun *runs, size_t n_runs,
                              bool overflow);

// The tick's verdict: sequential when one long new run dominates, random
// when many short new islands appeared, undecided on too little evidence
// (the caller then keeps the verdict it had).
Verdict classify_tick(const TickEvidence &e);

// Whether a random tick's islands are big enough that a fault should read
// more than its page (MADV_SEQUENTIAL) rather than exactly its page
// (MADV_RANDOM): a reader taking whole contiguous slices in random order, a
// DataLoader worker's shuffled batches of rows, for one. Under MADV_RANDOM
// such an island costs one disk round trip per 4 KiB; under MADV_SEQUENTIAL
// one read of the device's window, which is cheaper once the island holds
// a sixteenth of the window (measured, scenario 8: 1 MiB islands at an
// 8 MiB window took 20-24 s under MADV_RANDOM and 7.4-8.2 s under
// MADV_SEQUENTIAL, the unconstrained time). A random fault maps at most
// fault-around (16 pages), so small scattered faults never look clustered
// whatever advice is in force. True when the tick's new pages came in
// islands of max(kClusterMinPages, readahead_pages / 16) pages on average;
// readahead_pages: the device's window (0: unknown).
constexpr uint64_t kClusterMinPages = 64;
bool clustered_islands(const TickEvidence &e, uint64_t readahead_pages);

// Scattered faults too slow for one look: a random reader whose faults each
// wait tens of milliseconds for the disk leaves fewer than
// kRandomMinIslands islands between two looks (100 ms apart), so
// classify_tick never judges it. Measured (access_phases with its loop
// device's reads throttled to 25-30 a second, as a disk saturated by
// other jobs' spill traffic serves them): 3 one-page islands in nearly
// every look, the verdict left at the pass before ("sequential") until a
// fault-around happened to add a fourth island, 2.7 s into a 55 s phase,
// 15-55 s into 82 s ones; the first random phase read 536-590 KiB per
// fault where the test allows 256 (54-213 with the tally). The tally adds up the small islands of consecutive undecided looks, over
// at most kScatterSpanNs: random once it holds kRandomMinIslands islands,
// none of them a step of a slow stream (starting within reaches_from's
// slack of where an island it remembers ended: two or three slow streams
// side by side are not a scatter). A look with a big island, or one judged
// by classify_tick, starts it over (scatter_reset).
constexpr uint64_t kScatterSpanNs = 1'000'000'000;
struct ScatterTally {
    uint64_t islands = 0;  // scattered islands counted
    uint64_t since_ns = 0; // the look that counted the first
    uint64_t ends[TickEvidence::kListedIslands] = {}; // where recent islands ended (a ring)
    uint64_t starts[TickEvidence::kListedIslands] = {}; // ...and began (a slow reader moving down)
    size_t n_ends = 0, next_end = 0;
};
void scatter_reset(ScatterTally &s);
// An undecided look's evidence (classify_tick and continues_run said
// nothing) added to the tally at now_ns; returns random when it is enough
// (the caller reads the tally for its evidence, then resets it).
Verdict scatter_tally(ScatterTally &s, const TickEvidence &e, uint64_t now_ns);

// The verdict of a fresh region's first look, where every page present
// was touched since its birth but not when: random when the present pages
// lie in at least kFirstLookMinIslands short islands (a pass in order, or
// a few threads' passes, leave one run each, however far they got; a
// whole region present says nothing, since a scatter covering it leaves
// the same); undecided otherwise. Catches a scatter that ended before the
// sampler's first tick (python_sites: 20000 writes in 128 MiB take 5 ms).
constexpr uint64_t kFirstLookMinIslands = 64;
Verdict classify_first_look(const TickEvidence &e);

// Whether this tick's longest new run starts where the last tick's ended:
// within fault-around (16 pages) behind it, up to kStreamMinPages past it
// (pages the reader passed and reclaim unmapped since), or up to 512
// pages (a 2 MiB folio mapped whole) past it over pages present already
// (one present run joins the last front to it).
bool reaches_from(const TickEvidence &e, uint64_t last_front);

// Whether this tick's longest new run reaches_from the last front and
// dominates what appeared: a stream too slow to leave kStreamMinPages in
// one tick (4 KiB faults at a loaded disk's latency) is still one run
// growing from its front. Why the gaps: a slow reader under memory
// pressure leaves holes just behind its front (reclaim) and crosses pages
// mapped ahead of it (the kernel's window, an earlier pass), so its next
// new pages lie 17-64 pages past the front (measured, a coo_tocsr-like
// pass of three streams at 16-48 new pages a tick); with a 16-page slack
// each such tick ended the stream and the next began a new one, so none
// ran the 8 MiB after which the prefetch worker serves it (kLongStreamPages,
// sampler.cpp), and it was read a page per fault.
bool continues_run(const TickEvidence &e, uint64_t last_front);

// Whether this tick's longest new run ends where the last tick's longest
// began (last_start), below it: a reader moving down the region, page by
// page. Why: CPython frees a list's items last to first (list_dealloc), and
// items made in order lie in address order in their arenas, so dropping a
// big list reads its objects back from the highest page down; the kernel
// reads nothing ahead of such a reader (MADV_SEQUENTIAL and the prefetch
// worker read forward). Measured in the epochs job: 182k major faults of
// 4 KiB in 15 s freeing 24M ints, at 1.5 GiB. Kernel swap reads around the
// fault in the direction the faults move (mm/swap_state.c). The run must
// hold kBackwardMinPages and dominate what appeared; its end may lie up to
// kStreamMinPages below last_start (pages passed and since unmapped) or
// fault-around's 16 pages above it, or up to 512 pages below it when the
// pages between are present (one present run from the new pages up). Once
// the stream is read ahead down to read_down_to, news anywhere above that
// page continues it: the reader goes through what was read ahead faster
// than looks come, and what it passed may be gone by the next look (a
// freed arena's pages are dropped: block_zone.h), so a look sees the
// 1 MiB arena it is in, up to thousands of pages below the last one.
// A cached 2 MiB folio mapped whole by one fault is never such a run.
constexpr uint64_t kBackwardMinPages = 32;
bool continues_backward(const TickEvidence &e, uint64_t last_start, uint64_t read_down_to = UINT64_MAX);

// Whether this tick's news is a first fill that moved on: one island, all
// of it past every page ever seen present (seen_to), at most max_jump pages
// past it, with the stream's front at that edge (front within
// kFillEdgePages of seen_to). Why: the writeback pacer unmaps a filling
// region 64 MiB at a time, the fill's own newest pages included, so a look
// can find only the last pages the fill mapped since, past a gap. Taken
// for a stop, the stream ended and its advice went to MADV_RANDOM until the
// next look saw it again; back under MADV_SEQUENTIAL, the kernel's window
// had lost its read-ahead mark, and a mapping's sequential fault then reads
// each window as 4 KiB folios with no mark for the next (mm/readahead.c: a
// fault's request is the whole window, so the pages behind it never count
// for more). Measured at read_ahead_kb 8192, 4 GiB in 1 GiB
// (tests/bench/phases.sh): 16 of 28 fills took 11,000-40,400 major faults
// (against 1-3) and 3.5-8.6 s (against 3.0-4.4 s).
constexpr uint64_t kFillEdgePages = 2048; // 8 MiB
bool fill_moved_on(const TickEvidence &e, uint64_t front, uint64_t seen_to, uint64_t max_jump);

// Whether a stream that left no news for idle_ns has stopped: after
// kStreamStopNs, or twice the time its last news (last_run pages) takes
// at its rate (pages per second), whichever is longer. Why the rate: the
// prefetch worker's reads come back as large folios, and a fault maps a
// whole one (up to 512 pages), so a slow reader (coo_tocsr's inputs, 16
// pages per 10 ms) is silent while it reads through it: a fixed 25 looks
// (0.25 s at the 10 ms feed period) ended such a stream inside every 2 MiB
// folio, the worker let it go, and the reader went back to a page per
// fault until the stream had run 8 MiB again (measured, scipy job, tocsr
// phase: 26,710 major faults, 19.3 s against 6.0 s unconstrained).
constexpr uint64_t kStreamStopNs = 500'000'000;
bool stream_stopped(uint64_t idle_ns, uint64_t last_run, uint64_t pages_per_s);

// How far ahead of a stream's front to have read, in pages: enough for
// `lead_ns` at the observed rate (pages per second), within [min, max].
uint64_t prefetch_lead_pages(uint64_t pages_per_s, uint64_t lead_ns, uint64_t min_pages,
                             uint64_t max_pages);

// Whether a re-read has left its region at the end: its front reached the
// region's last page and did not move for `needed` looks (sampler.cpp,
// page_out_left).
bool left_at_end(uint64_t front, uint64_t pages, unsigned idle_looks, unsigned needed);

// How long a region's full looks may lie apart (sampler.cpp): `period`, or
// the longer `demoted_period` for a region its probes demoted to 4 KiB
// mappings while the process takes few faults a tick (not busy), unless a
// chain may begin there: the region is the next of its site after one
// re-read to its end, left within the chain's window or about to be. Why:
// a stream continues a chain only if it is first seen within that window
// (0.5 s) of the leaving, and a reader faulting page by page on a disk busy
// with writes takes fewer faults a tick than "busy" asks, so its stream
// was first seen at the demoted period's look, up to 1 s late: no chain,
// and the buffer after it was not read ahead (traced: seen 608-1,119 ms
// after the leaving; docs/flakes.md, test_sampler's chain case).
uint64_t full_look_period(uint64_t period, uint64_t demoted_period, bool demoted, bool busy,
                          bool chain_may_begin);

// Whether what a moving stream passed is paged out behind it when the
// cgroup is short of room (sampler.cpp, drop_to): only where the page cache
// could not keep it anyway.
//  * A chain's buffer (buffers read in turn): the buffers still to be read
//    were written long ago, so reclaim, oldest first, would take them
//    before what the reader just passed (the live job, 8 GiB in 1 GiB).
//  * A region larger than the room page cache has (the limit less what
//    cannot be reclaimed): a pass over it must evict its own pages, and
//    paging out those it passed spares the ones about to be read.
// A region that fits is left to the kernel's LRU, which keeps what is read
// twice. Paging it out made every pass over a matrix read it again:
// scikit-learn's standardising, PCA and k-means over a 292 MiB matrix in
// 512 MiB read 8.7-10.0 GB in a run with it, 4.2-4.8 GB without; pandas'
// merge, groupby and sort 4.2-5.3 GB against 2.5-3.4 (tests/bench/JOBS.md,
// session 8). (A region a re-read has left at its end is still paged out
// whole: sampler.cpp, page_out_left.)
bool pages_out_behind(bool chained, uint64_t region_bytes, uint64_t page_cache_room);

// How many bytes at the end of a pass over a region stay cached when what
// the pass passed is paged out (sampler.cpp: drop_to behind the moving
// stream, page_out_left when the pass leaves the region at its end): the
// room the page cache has, in a region larger than that which is no
// chain's buffer; nothing otherwise (a chain's buffer, and a region that
// fits, are paged out whole as before). Why: the kernel's LRU alone keeps
// a pass's last pages, as many as fit, and a gather that follows finds
// them. Paging out the whole pass left 330-640 MiB of a 1 GiB cgroup used,
// and the gather after a pass over 4 GiB took 17,300-19,600 faults for
// 20,000 rows against the kernel's 14,980 (tests/bench/phases.sh).
uint64_t pass_tail_kept(bool chained, uint64_t region_bytes, uint64_t page_cache_room);

// Whether a fork child's inherited region in a random phase is advised
// MADV_NORMAL instead of MADV_RANDOM: when the region could stay cached
// whole (at most half the room the page cache has). Why: since Linux 6.3
// reclaim ignores the accessed bits of pages mapped only through
// MADV_RANDOM or MADV_SEQUENTIAL mappings (vma_has_recency), so their pages
// are evicted oldest first however often they are read. A DataLoader
// worker reading its parent's dataset at random (every page some 35 times
// an epoch in the epochs job) lost it that way: 640k major faults an epoch
// for two workers, 96k under MADV_NORMAL (tests/bench/JOBS.md, session 37).
// A fork child cannot promote an inherited region (fork_snapshot.h), so
// recency is the only way its hot pages stay. A region larger than that
// keeps MADV_RANDOM: the kernel's read-around (read_ahead_kb around each
// fault) would read pages evicted before their turn.
bool random_keeps_recency(bool inherited, uint64_t region_bytes, uint64_t page_cache_room);

// Reads which pages of [start, start + pages*4096) this process maps,
// as sorted runs into runs[cap]. Returns the number of runs; sets *overflow
// when there were more than cap (the listed ones are then a prefix).
// pagemap_fd is an open /proc/self/pagemap; -1 on error.
long read_presence(int pagemap_fd, uintptr_t start, uint64_t pages, PageRun *runs, size_t cap,
                   bool *overflow);

// How this process maps the page at addr: kPageMapped if at all, plus
// kPageHuge if by a huge page-table entry (unmapping 4 KiB of a file's
// huge mapping unmaps all 2 MiB of it: the probes avoid such pages; only
// PAGEMAP_SCAN says, so without it no page is reported huge); -1 on error.
constexpr int kPageMapped = 1, kPageHuge = 2;
int page_mapping(int pagemap_fd, uintptr_t addr);

// Fills e's huge_folio_islands and longest_huge_folio: which of its listed
// islands and its longest (page indexes from span_lo of the region at
// region_start, which starts on a 2 MiB boundary) are exactly one aligned
// block of kFolioBlockPages mapped huge. Only such islands are asked
// (page_mapping: one PAGEMAP_SCAN each); without PAGEMAP_SCAN none is huge.
void note_huge_folios(TickEvidence &e, int pagemap_fd, uintptr_t region_start, uint64_t span_lo);

} // namespace spillway
