// sampler.cpp — see sampler.h. The thread and its schedule; the rules it
// applies live in access_detector.cpp.
#include "access/sampler.h"
#include "clock.h"

#include "access/access_detector.h"
#include "access/page_probes.h"
#include "registry/arena.h"
#include "os/background_thread.h"
#include "backing/backing.h"
#include "sites/callsite.h"
#include "os/cgroup.h"
#include "fd_policy.h"
#include "log.h"
#include "access/prefetch_worker.h"
#include "os/extents.h"
#include "os/readahead_window.h"
#include "registry/region.h"
#include "stats/stats_live.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <mimalloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

namespace spillway {

namespace {
constexpr uint64_t kPeriodNs = 100'000'000;      // phase change noticed within ~100 ms
constexpr uint64_t kStreamPeriodNs = 20'000'000; // while a stream moves
constexpr uint64_t kFeedPeriodNs = 10'000'000;   // while reading ahead of one
// A region whose probes demoted blocks to 4 KiB mappings (page_probes.h) is
// looked at whole this often while the process faults little: the walk
// reads each demoted block's 512 entries where a huge mapping is one
// (measured, 6.18: 6.3 ns an entry, 0.41 ms a look at 256 MiB demoted; a
// profile of the sampler in tests/bench/detector_cost.c, 512 MiB demoted
// and a look every 100 ms: 78% of its time in that walk). Probes start only
// on a region presence sees still, and a block is demoted only where it was
// mapped whole; without pressure nothing unmaps it, so a tick with few
// faults has little to find there, and finds it within a second.
constexpr uint64_t kDemotedPeriodNs = 1'000'000'000;
// A tick with at least this many faults (not on probes) looks at demoted
// regions on the usual period: the pages of one stream's tick
// (kStreamMinPages); fewer are stray faults (stacks, the small heap).
constexpr uint64_t kBusyTickFaults = 64;
constexpr uint64_t kMinAgeNs = 50'000'000;
constexpr size_t kMaxTracks = 4096;
constexpr size_t kMaxRuns = 16384;
constexpr uint64_t kPage = 4096;
// Read-ahead for a stream: 4 stream ticks' worth of its rate, at least
// 64 MiB, at most 256 MiB and a quarter of the cgroup's limit (measured: a
// 256 MiB lead in a 128 MiB cgroup evicted the pages read ahead before the
// reader got there, and the pass ran at a tenth of the disk's bandwidth; an
// 8 MiB lead kept too few requests in flight to reach half the bandwidth).
constexpr uint64_t kLeadNs = 4 * kStreamPeriodNs;
constexpr uint64_t kLeadMinPages = (64u << 20) / kPage;
constexpr uint64_t kLeadMaxPages = (256u << 20) / kPage;
// A stream reads from disk (is "fed") once its front is this far behind
// the furthest page ever written: a re-read, not a first fill.
constexpr uint64_t kFedMarginPages = (8u << 20) / kPage;
// A stream is read ahead of by the worker once it has run this far: shorter
// ones are contiguous slices read in random order (update_clustered).
constexpr uint64_t kLongStreamPages = (8u << 20) / kPage;
// Chains: a stream that begins within this many pages of its region's
// start, in the next region of the same call site after one whose re-read
// reached its end at most kChainNs before, continues a chain of buffers read in
// turn (a batch job's live buffers read back in order: 128 of 64 MiB in the
// live job, each read in about the time a stream takes to be handed to
// the worker the usual way, 8 MiB in: measured 316 MB/s against a
// 1,006 MB/s floor, issue 26).
constexpr uint64_t kChainStartPages = (16u << 20) / kPage;
constexpr uint64_t kChainEndPages = (1u << 20) / kPage;
constexpr uint64_t kChainNs = 500'000'000;
// How far the chain helpers look for a region of the same site.
constexpr size_t kChainScan = 64;

// A re-read whose front reached its region's end and did not move for this
// many looks (10-20 ms each) has left the region: it ends at once
// (page_out_left), not after the 25 idle looks of a stream that stopped.
constexpr unsigned kLeftIdleLooks = 2;

// A first look later than this after birth is no evidence (classify_first_look):
// under a memory limit, reclaim may have shredded what a pass left.
constexpr uint64_t kFirstLookMaxAgeNs = 1'000'000'000;
bool g_learn = false; // sampler_init: [profile] learn
bool g_probe = false; // sampler_init: [profile] learn and probe
// Regions probed at once, at most: each costs the thread a few hundred
// microseconds per cycle, and they share the program's probe faults.
constexpr uint32_t kMaxProbing = 32;
std::atomic<bool> g_started{false};
std::atomic<bool> g_stop{false};
// sampler_hold: the thread skips its ticks while g_hold is set; g_in_tick
// (seq_cst, with g_hold: either the thread sees the hold or the holder sees
// the tick) says a tick is under way.
std::atomic<bool> g_hold{false}, g_in_tick{false};
std::atomic<uint64_t> g_cpu_ns{0}, g_ticks{0}, g_prefetched{0};
int g_pagemap = -1;

// What the thread remembers of one disk region between ticks.
struct Track {
    uintptr_t start = 0;
    uint64_t born = 0; // with start: the identity (an address range is reused)
    uint64_t pages = 0;
    uint64_t *bits = nullptr; // presence at the last look, 1 bit per page
    CallSite *site = nullptr;
    bool advice_pinned = false; // the user's advice: never changed, only read ahead of
    int fd = -1;              // its spill file (for the device's read-ahead)
    uint64_t file_off = 0;    // the region's offset in it
    int worker_fd = -1;       // a dup of fd taken under the large lock, for the worker
    bool handed = false;      // the prefetch worker reads ahead of this stream
    bool worker_refused = false; // ...had no free slot: this thread feeds it
    bool kept_off = false;       // a move held it at the last look: the next one only takes the bits
    // Chains of buffers read in turn (chained_after): this stream began at
    // its region's start as the reader left the site's previous region at
    // its end; predicted: streamed before the reader began it, because the
    // chain's current buffer is read to its end (predict_next_in_chains).
    bool chained = false;
    bool predicted = false;
    uint64_t left_end_ns = 0; // when a re-read last left this region at its end (kLeftIdleLooks)
    Verdict verdict = Verdict::undecided;
    ScatterTally scatter;    // small islands of undecided looks (access_detector.h)
    uint64_t last_look_ns = 0;
    uint64_t last_full_look_ns = 0; // the whole region, not a stream's window
    uint64_t front = 0;          // a stream's front (page index)
    uint64_t rate = 0;           // its pages per second
    uint64_t prefetched_to = 0;  // read-ahead issued up to this page
    uint64_t dropped_to = 0;     // paged out behind the stream up to this page
    uint64_t stream_from = 0;    // where the current stream began
    bool streaming = false;
    bool feed_due = false; // this tick's look asked for read-ahead (issued after publish_all)
    // A reader moving down the region (continues_backward, access_detector.h):
    // read ahead below it with MADV_WILLNEED, apart from the forward stream's
    // state above, which such a reader never satisfies (each of its looks
    // is a new forward stream, never fed).
    uint64_t back_from = 0;     // the last look's longest new run began here (0: none long enough)
    bool backward = false;      // two looks in a row saw it move down
    uint64_t back_front = 0;    // its lowest new page; above pages: the reader is still in a region above (pass_backward_on)
    uint64_t back_read_to = 0;  // read ahead down to this page
    uint64_t back_rate = 0;     // pages per second
    uint64_t back_last_run = 0; // pages its last news mapped (stream_stopped)
    uint64_t back_news_ns = 0;  // the look that last saw it move (or predicted it)
    bool back_feed_due = false; // this look asked for read-ahead below it
    bool back_passed_on = false; // read down to page 0: the region just below was predicted
    bool left_due = false; // a re-read left the region at its end: page out its rest (after publish_all)
    unsigned idle_looks = 0;
    uint64_t last_run = 0;   // pages the stream's last news mapped (stream_stopped)
    bool fed = false;        // read ahead of: a re-read of written pages
    bool kernel_feeds = false; // ...by the kernel (MADV_SEQUENTIAL), not by WILLNEED
    bool cache_managed = false; // Region::cache_managed: never read ahead
    bool clustered = false;  // random, but in islands a window read serves (clustered_islands)
    int64_t readahead_pages = -1; // the device's window (-1: not read yet)
    uint64_t filled_to = 0;  // end of the furthest page ever seen present (or written: written_on_file)
    uint64_t file_asked_ns = 0; // the last time written_on_file asked the file
    int advice_published = -1;
    uint32_t rate_published = UINT32_MAX;
    bool shared_file = false; // mapped shared over a file of this process (probes may unmap its pages)
    bool reused = false;      // from the recycle cache: its first look is no evidence (region.h)
    bool object_blocks = false; // a block zone's chunk: chained with the other chunks (region.h)
    bool inherited = false;     // a fork child's private view of its parent's region (random_keeps_recency)
    uint64_t present_pages = 0; // at the last look over the whole region
    ProbeSet *probes = nullptr; // page_probes.h: while learning sees nothing in presence
    uint64_t last_news_ns = 0;  // the last look that saw pages of the region newly present
    uint64_t worker_news_ns = 0; // the last look at which the worker still read ahead of its stream
    // Probes demoted blocks of the region to 4 KiB mappings (page_probes.h):
    // a look walks each entry by entry, so quiet ticks skip it (kDemotedPeriodNs).
    bool demoted = false;
    uint64_t unhuge_charged = 0; // their bytes, charged to the probes' cap while the region lives
};

Track *g_tracks = nullptr, *g_next_tracks = nullptr;
size_t g_track_count = 0;
bool g_full_due[kMaxTracks]; // this tick: track i is due for a look at the whole region
PageRun *g_runs = nullptr, *g_all_runs = nullptr;
uint64_t g_last_faults = 0, g_last_probe_faults = 0;
// A region was too young to track at the last refresh: the next tick
// refreshes whether or not faults moved. Its faults may all have been
// counted already (a scatter done in 5 ms, then quiet), and its first look
// is all there is to see (classify_first_look).
bool g_young_waiting = false;
uint64_t g_chunk_pages = 0; // largest WILLNEED request the kernel honours whole

// What a tick decided for one track, applied to its live region by
// publish_all under one hold of the large lock.
struct Publication {
    uintptr_t start;
    uint64_t born;
    uint64_t now;
    uint32_t rate;
    int advice; // to set, unless pinned (then -1)
    Verdict verdict;
    bool changed;
    Track *want_fd; // a stream for the prefetch worker: dup its file's descriptor
};
Publication *g_publications = nullptr;
size_t g_publication_count = 0;

uint64_t process_faults() {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

// The prefetch worker stops reading ahead of t (its stream ended or its
// region is gone).
void unhand(Track &t) {
    if (t.handed) prefetch_end(t.start, t.born);
    t.handed = false;
    t.worker_refused = false;
    if (t.worker_fd >= 0) close(t.worker_fd);
    t.worker_fd = -1;
}

void drop_track(Track &t) {
    if (t.bits) mi_free(t.bits);
    t.bits = nullptr;
    // Its region is gone or changed (freed, moved into memory): pages left
    // unmapped there cost a minor fault when next touched, and no look
    // reads them any more.
    probes_uncharge(t.unhuge_charged + probes_free(t.probes));
    t.unhuge_charged = 0;
    t.probes = nullptr;
    unhand(t);
}

// Lists live disk regions (one hold of the large lock) and carries over what
// was known about each. Returns false when the tables cannot be had.
bool refresh_tracks(uint64_t now) {
    // Each table on its own: a fork child inherits those the parent's
    // thread had made when the fork came, maybe not all (measured: children
    // of a forkserver crashed here on a null g_next_tracks), and a failed
    // allocation is tried again at the next tick.
    if (!g_tracks) g_tracks = (Track *)mi_calloc(kMaxTracks, sizeof(Track));
    if (!g_next_tracks) g_next_tracks = (Track *)mi_calloc(kMaxTracks, sizeof(Track));
    if (!g_runs) g_runs = (PageRun *)mi_malloc(kMaxRuns * sizeof(PageRun));
    if (!g_all_runs) g_all_runs = (PageRun *)mi_malloc(kMaxRuns * sizeof(PageRun));
    if (!g_publications) g_publications = (Publication *)mi_malloc(kMaxTracks * sizeof(Publication));
    if (!g_tracks || !g_next_tracks || !g_runs || !g_all_runs || !g_publications) return false;
    size_t n = 0;
    g_young_waiting = false;
    {
        std::lock_guard<std::mutex> guard(large_lock());
        for (Region *r = registry_first(); r && n < kMaxTracks; r = r->next) {
            // A fork child's private copies too: its own reads need advice
            // as much as the parent's (the fork sequence, fork_safety.h,
            // starts this thread in such a child).
            if (r->backing != Backing::disk || r->freed.load()) continue;
            if (now - r->born_ns < kMinAgeNs) {
                g_young_waiting = true;
                continue;
            }
            Track &t = g_next_tracks[n++];
            t = Track();
            t.start = r->start;
            t.born = r->born_ns;
            t.pages = r->map_len / kPage;
            t.site = r->site;
            t.fd = r->file ? r->file->fd : -1;
            t.file_off = r->file_off;
            t.advice_pinned = r->advice_pinned;
            t.cache_managed = r->cache_managed.load(std::memory_order_acquire);
            t.shared_file = r->file && !r->file->foreign && !r->is_private;
            t.reused = r->reused;
            t.object_blocks = r->object_blocks;
            t.inherited = r->is_private && r->file && r->file->foreign;
        }
    }
    std::sort(g_next_tracks, g_next_tracks + n,
              [](const Track &a, const Track &b) { return a.start < b.start; });
    // Merge with the previous table (both sorted by start).
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        Track &t = g_next_tracks[i];
        while (j < g_track_count && g_tracks[j].start < t.start) drop_track(g_tracks[j++]);
        if (j < g_track_count && g_tracks[j].start == t.start && g_tracks[j].born == t.born &&
            g_tracks[j].pages == t.pages) {
            CallSite *site = t.site;
            uint64_t file_off = t.file_off;
            bool cache_managed = t.cache_managed, shared_file = t.shared_file;
            t = g_tracks[j];
            t.site = site;
            t.file_off = file_off;
            t.cache_managed = cache_managed;
            t.shared_file = shared_file;
            g_tracks[j].bits = nullptr;
            g_tracks[j].probes = nullptr; // moved with it
            g_tracks[j].unhuge_charged = 0; // moved with it
            g_tracks[j].handed = false; // moved with it
            g_tracks[j].worker_fd = -1;
            j++;
        }
    }
    while (j < g_track_count) drop_track(g_tracks[j++]);
    std::swap(g_tracks, g_next_tracks);
    g_track_count = n;
    return true;
}

// How far t's region was written, from its file's extents (ext4 and XFS:
// one FIEMAP walk; delayed allocation counts, fallocated blocks never
// written do not), into filled_to. Why: looks see a page written only while
// it is mapped, and a fill that ends between two looks, whose pages the
// writeback pacer or reclaim unmaps before the next, is never seen (a region
// younger than kMinAgeNs is not even tracked). On a disk that took 64 MiB in
// 40 ms, 21-53 of the live job's 128 buffers had filled_to 0 when read
// back: their re-reads were taken for first fills and never read ahead, and
// a chain never predicted them. Asked for a chain's next buffer only, at
// most once per kPeriodNs per region, and never for one from the recycle
// cache (its file holds the last owner's bytes: written, but not this
// owner's fill). Not for the region a stream is in: the file cannot tell a
// fill under way (dirty pages count as written) from a re-read, and asked
// there too (session 36, tests/bench/JOBS.md) scipy's tocsr and transpose
// fell in 3 of 10 runs into a mode that wrote 3.6-4.6 GB where they write
// 0.8-1.9 (not understood; not seen in 8 runs without it). So a chain must
// begin on a buffer the looks saw written. Asked for the region below a
// reader moving down too, test_sampler's "a reader moving down" case failed
// in 2 of 14 runs beside two busy loops (main's: 0 of 9; without it, 0 of 9).
void written_on_file(Track &t, uint64_t now) {
    if (t.filled_to >= t.pages || t.reused || t.fd < 0 || now - t.file_asked_ns < kPeriodNs) return;
    t.file_asked_ns = now;
    if (!extents_cheap_to_ask(t.fd)) return;
    std::vector<Extent> written;
    if (!written_extents(t.fd, t.file_off, t.pages * kPage, written) || written.empty()) return;
    const Extent &last = written.back();
    t.filled_to = std::max(t.filled_to, std::min(t.pages, (last.off + last.len + kPage - 1) / kPage));
}

// A stream that reads from disk: the prefetch worker reads ahead of it
// (prefetch_worker.h), unless it had no room for one more.
bool wants_worker(const Track &t) { return t.streaming && t.fed && !t.worker_refused; }

// The device's read-ahead window for t's file, read from sysfs once per track.
uint64_t readahead_pages(Track &t) {
    if (t.readahead_pages < 0) t.readahead_pages = (int64_t)(read_ahead_kb_of_fd(t.fd) * 1024 / kPage);
    return (uint64_t)t.readahead_pages;
}

// The room the page cache has under the limit, read once per tick (the
// tick's time is its key).
uint64_t page_cache_room(uint64_t now) {
    static uint64_t at = 0, room = 0;
    if (at != now) {
        room = read_memory_figures().room();
        at = now;
    }
    return room;
}

// Queues the verdict for the live region (if it is still the one tracked)
// and its advice: MADV_SEQUENTIAL while streamed, MADV_RANDOM otherwise
// (MADV_NORMAL for a fork child's inherited region that fits:
// random_keeps_recency).
void publish(Track &t, Verdict v, bool changed, uint64_t now, uint32_t rate) {
    // MADV_SEQUENTIAL for a moving stream: over never-written blocks (a
    // first fill: large zeroed folios), or over written ones the prefetch
    // worker reads ahead of (a reader that overtakes it then waits for the
    // worker's reads in flight or reads a window itself, never page by
    // page), or, without the worker, when the device reads ahead megabytes
    // (readahead_window.h). Otherwise MADV_RANDOM, so a fault outside a
    // stream never reads more than its page. A random fault under
    // MADV_SEQUENTIAL reads a whole window until the next stream tick
    // notices (10-20 ms).
    // Random access in big contiguous islands reads whole windows too
    // (clustered_islands).
    bool stream_advice = t.streaming && (!t.fed || t.kernel_feeds || wants_worker(t));
    bool cluster_advice = !t.streaming && t.clustered;
    int want = (stream_advice || cluster_advice) && t.pages * kPage >= kStreamAdviceFrom ? MADV_SEQUENTIAL
                                                                                        : MADV_RANDOM;
    if (want == MADV_RANDOM && t.inherited && random_keeps_recency(true, t.pages * kPage, page_cache_room(now)))
        want = MADV_NORMAL;
    bool want_fd = wants_worker(t) && !t.handed && t.worker_fd < 0;
    if (!changed && !want_fd && want == t.advice_published && rate == t.rate_published) return; // nothing new
    t.advice_published = want;
    t.rate_published = rate;
    if (!g_publications || g_publication_count == kMaxTracks) return;
    g_publications[g_publication_count++] = {t.start, t.born, now, rate, t.advice_pinned ? -1 : want, v,
                                             changed, want_fd ? &t : nullptr};
}

// Applies the tick's publications: one hold of the large lock for all of
// them (each region re-found O(1) with arena::region_at), so a large
// malloc or free waits for at most one short hold per tick.
void publish_all() {
    if (!g_publication_count) return;
    std::lock_guard<std::mutex> guard(large_lock());
    for (size_t i = 0; i < g_publication_count; i++) {
        const Publication &p = g_publications[i];
        Region *r = arena::region_at((const void *)p.start);
        if (!r || r->start != p.start || r->born_ns != p.born || r->freed.load()) continue;
        r->fault_rate.store(p.rate, std::memory_order_relaxed);
        if (p.changed) {
            r->phase_since_ns.store(p.now, std::memory_order_relaxed);
            r->phase.store((uint8_t)p.verdict, std::memory_order_release);
        }
        if (p.advice >= 0 && r->advice != p.advice) advise_region(r, p.advice);
        // Under the lock the region's file is open: the dup is its file for
        // as long as the worker reads, whatever happens to the region.
        if (p.want_fd && r->file && r->file->fd >= 0 && p.want_fd->worker_fd < 0)
            p.want_fd->worker_fd = move_high(fcntl(r->file->fd, F_DUPFD_CLOEXEC, 3));
    }
    g_publication_count = 0;
}

// Whether verdict v may teach this site. The user's rule is never
// overridden. An earlier run's profile is, by random evidence over its
// "sequential" alone: that run may have seen only a fill in order before a
// scatter (a table zeroed, then written at random), and a wrong
// "sequential" kept the site on disk in every later run.
bool teachable(const CallSite *site, Verdict v) {
    if (!site || !g_learn) return false;
    if (site->rule && site->rule->access != Access::unknown) return false; // the user said
    if (!site->from_profile.load()) return true;
    return v == Verdict::random && site->access.load() == (int)Access::sequential;
}

// Teaches the site v, with the evidence evidence_fmt(buffer) writes: random
// overrides sequential, nothing overrides random.
template <typename Evidence>
void teach_site(CallSite *site, Verdict v, uint64_t age_ns, Evidence evidence) {
    if (!teachable(site, v)) return;
    int expected = (int)Access::unknown;
    if (v == Verdict::random) {
        if (!site->access.compare_exchange_strong(expected, (int)Access::random)) {
            if (expected != (int)Access::sequential) return;
            site->access.store((int)Access::random); // random overrides sequential
        }
        site->from_profile.store(false); // this run's verdict now: saved at exit
        evidence(site->evidence, sizeof site->evidence);
        site->classified_after_ns.store(age_ns);
        SPW_LOG(info, "site %s classified random-access (%s); later allocations from it prefer memory",
                callsite_identity_hex(site).c_str(), site->evidence);
    } else if (v == Verdict::sequential &&
               site->access.compare_exchange_strong(expected, (int)Access::sequential)) {
        evidence(site->evidence, sizeof site->evidence);
    }
}

void learn_site(CallSite *site, Verdict v, const TickEvidence &e, uint64_t age_ns, uint64_t tallied,
                uint64_t tally_ns) {
    teach_site(site, v, age_ns, [&](char *out, size_t cap) {
        if (tallied)
            snprintf(out, cap, "%llu scattered islands over %.0f ms of looks, %.2f s after allocation",
                     (unsigned long long)tallied, tally_ns / 1e6, age_ns / 1e9);
        else if (v == Verdict::random)
            snprintf(out, cap, "%llu new islands of %llu pages in one tick, %.2f s after allocation",
                     (unsigned long long)e.new_islands, (unsigned long long)e.new_pages, age_ns / 1e9);
        else
            snprintf(out, cap, "one run of %llu new pages in one tick: accessed in order",
                     (unsigned long long)e.longest_new);
    });
}

// What the probes agreed on (page_probes.h: two cycles, or one strong one), with the last
// one's counts as evidence.
void learn_site_from_probes(CallSite *site, const ProbeResult &p, uint64_t age_ns) {
    teach_site(site, p.agreed, age_ns, [&](char *out, size_t cap) {
        snprintf(out, cap,
                 "of %u mapped pages probed, %u touched in %.0f ms and %u in the next %.0f ms, %u in both "
                 "(%.1f at random), %.2f s after allocation",
                 p.counts.probes, p.counts.first, p.first_ns / 1e6, p.counts.second, p.second_ns / 1e6,
                 p.counts.both, p.reading.expected, age_ns / 1e9);
    });
}

// The largest MADV_WILLNEED the kernel honours whole (it caps one request
// at max(read_ahead_kb, the device's max I/O size)): measured once, on the
// first stream, with mincore on what one request brought in.
uint64_t willneed_chunk_pages(uintptr_t at, uint64_t avail_pages) {
    if (g_chunk_pages) return g_chunk_pages;
    uint64_t probe = std::min<uint64_t>(avail_pages, (4u << 20) / kPage);
    if (probe < 32) return 32;
    madvise((void *)at, probe * kPage, MADV_WILLNEED);
    unsigned char vec[1024];
    uint64_t got = 0;
    if (mincore((void *)at, probe * kPage, vec) == 0)
        while (got < probe && (vec[got] & 1)) got++;
    uint64_t chunk = 32;
    while (chunk * 2 <= got) chunk *= 2;
    g_chunk_pages = chunk;
    SPW_LOG(debug, "read-ahead requests of %llu KiB", (unsigned long long)(chunk * kPage / 1024));
    return chunk;
}

uint64_t lead_max_pages() {
    static uint64_t cached = 0;
    if (!cached) {
        MemoryFigures m = read_memory_figures();
        cached = kLeadMaxPages;
        if (m.limited && m.limit / 4 / kPage < cached) cached = m.limit / 4 / kPage;
        if (cached < 256) cached = 256;
    }
    return cached;
}

// Whether the cgroup has less free room than twice the lead: what a stream
// passed is then paged out (a program reading a region twice over with
// room to spare keeps it).
bool short_of_room(const MemoryFigures &m) { return m.limited && m.limit <= m.usage + 2 * lead_max_pages() * kPage; }

// The last pages of a pass that stay cached (drop_to, page_out_left):
// pass_tail_kept (access_detector.h).
uint64_t kept_tail_pages(const Track &t, const MemoryFigures &m) {
    return m.limited ? pass_tail_kept(t.chained, t.pages * kPage, m.room()) / kPage : 0;
}

// Where to page out up to behind a moving stream: 4 MiB behind its front
// when short of room and the page cache could not keep the region anyway
// (pages_out_behind: a chain's buffer, or a region larger than the room
// page cache has), never into the tail the pass keeps (pass_tail_kept);
// 0: keep everything.
uint64_t drop_to(const Track &t) {
    constexpr uint64_t kKeep = (4u << 20) / kPage;
    if (t.front <= kKeep) return 0;
    MemoryFigures m = read_memory_figures();
    if (!short_of_room(m)) return 0;
    if (!pages_out_behind(t.chained, t.pages * kPage, m.room())) return 0;
    return std::min(t.front - kKeep, t.pages - kept_tail_pages(t, m));
}

// A re-read that left its region at the end (kLeftIdleLooks): what it
// passed is paged out when the cgroup is short of room, whatever the
// region's size (unlike drop_to), the 4 MiB drop_to keeps behind a moving
// front included; all of it but the tail a region larger than the room
// keeps (pass_tail_kept). Why whatever the size: most regions are read through
// once (a temporary, a program's input copied into its own structures),
// and a page written, then read, is on the kernel's active list, ahead of
// what is read next; a matrix read pass after pass keeps its pages where
// the detector does not see a pass end (most of scikit-learn's PCA passes:
// OpenBLAS reads in blocks, with two threads). Both ways were measured
// (tests/bench/JOBS.md, session 8). Why at all: a reader moving
// through many buffers left that much of each cached; over 128 buffers of
// 64 MiB in a 1 GiB cgroup it crowded out the last buffers written, still
// cached from the fill, and reclaim (oldest first) evicted them before the
// reader came to them. Over pages already paged out (by the worker, which
// the thread cannot ask how far it got), MADV_PAGEOUT only walks the page
// table.
void page_out_left(Track &t) {
    MemoryFigures m = read_memory_figures();
    if (t.cache_managed || !short_of_room(m)) return; // aware code drops that region's cache itself
    uint64_t from = std::min(t.stream_from, t.dropped_to), to = t.pages - kept_tail_pages(t, m);
    if (to > from) madvise((void *)(t.start + from * kPage), (to - from) * kPage, MADV_PAGEOUT);
    t.dropped_to = t.pages;
}

void feed_stream(Track &t) {
    if (t.cache_managed) { // aware code drops this region's cache itself: read nothing ahead
        unhand(t);
        return;
    }
    uint64_t cap = lead_max_pages();
    uint64_t lead = prefetch_lead_pages(t.rate, kLeadNs, std::min(kLeadMinPages, cap), cap);
    uint64_t target = std::min(t.pages, t.front + lead);
    if (t.predicted) target = std::min(target, t.filled_to); // never-written blocks would read zeros
    uint64_t drop = drop_to(t);
    if (wants_worker(t) && (t.handed || t.worker_fd >= 0)) {
        PrefetchTarget p;
        p.start = t.start;
        p.born = t.born;
        p.file_off = t.file_off;
        p.pages = t.pages;
        p.front = t.front;
        p.ahead_to = target;
        p.drop_to = drop;
        p.drop_from = t.dropped_to; // where this stream began (prefetch_worker.h)
        p.speculative = t.predicted;
        if (t.handed) {
            t.handed = prefetch_update(p);
        } else {
            t.handed = prefetch_start(p, t.worker_fd); // takes the descriptor
            t.worker_fd = -1;
            t.worker_refused = !t.handed;
        }
        if (t.handed) {
            t.prefetched_to = target;
            return;
        }
    }
    if (t.predicted) return; // a guess is read by the worker, behind begun streams, or not at all
    if (drop > t.dropped_to + 512) {
        madvise((void *)(t.start + t.dropped_to * kPage), (drop - t.dropped_to) * kPage, MADV_PAGEOUT);
        t.dropped_to = drop;
    }
    if (t.kernel_feeds) return;
    uint64_t from = std::max(t.front, t.prefetched_to);
    if (from >= target) return;
    uint64_t chunk = willneed_chunk_pages(t.start + from * kPage, target - from);
    for (uint64_t at = from; at < target; at += chunk) {
        uint64_t n = std::min(chunk, target - at);
        // On addresses, not the file: a region freed meanwhile is the
        // arena's PROT_NONE reserve, where this does nothing.
        madvise((void *)(t.start + at * kPage), n * kPage, MADV_WILLNEED);
    }
    g_prefetched.fetch_add((target - from) * kPage, std::memory_order_relaxed);
    t.prefetched_to = target;
}

// The region of the same call site just before / after t in address
// order (the table is sorted by start), or null.
// A block zone's chunks have no site; they count as one (region.h).
Track *neighbour_of_site(const Track &t, bool after) {
    if ((!t.site && !t.object_blocks) || &t < g_tracks || &t >= g_tracks + g_track_count) return nullptr;
    size_t i = (size_t)(&t - g_tracks);
    for (size_t k = 1; k <= kChainScan; k++) {
        if (after ? i + k >= g_track_count : k > i) break;
        Track &o = g_tracks[after ? i + k : i - k];
        if (o.site == t.site && o.object_blocks == t.object_blocks) return &o;
    }
    return nullptr;
}

// Whether a stream that begins in t now would continue a chain (kChainNs):
// the site's previous region was re-read to its end just now.
bool chain_may_begin(const Track &t, uint64_t now) {
    const Track *prev = neighbour_of_site(t, false);
    if (!prev) return false;
    if (prev->left_end_ns && now - prev->left_end_ns <= kChainNs) return true;
    return prev->streaming && prev->fed && prev->front + kChainEndPages >= prev->pages; // not left yet
}

// Whether a stream t begins at page `from` continues a chain.
bool chained_after(const Track &t, uint64_t from, uint64_t now) {
    return from <= kChainStartPages && chain_may_begin(t, now);
}

// Whether a look's news is the reader beginning a predicted stream
// (predict_next_in_chains) at its region's start. Why: reaches_from takes
// front 0 for no stream, so the reader's first touch there (fault-around's
// 16 pages: undecided) ended the prediction; unless the buffer before was
// still streaming to predict it again, the stream the reader then made
// was a chain only within kChainNs of leaving that buffer, and the buffer
// after it was not read ahead (docs/flakes.md, test_sampler's chain case).
bool begins_predicted(const Track &t, const TickEvidence &e) {
    return t.predicted && t.front == 0 && e.longest_start <= kChainStartPages;
}

// Random access in contiguous islands (clustered_islands) is served by
// MADV_SEQUENTIAL: the kernel reads the device's window at each island's
// first fault. Set by a tick with at least two big islands and no stream
// continuing; cleared by a random verdict (small scattered faults must
// read their page only) and by a stream that ran kLongStreamPages (after a
// long pass the region goes back to MADV_RANDOM, as it always did).
void update_clustered(Track &t, const TickEvidence &e, Verdict v, bool continuing) {
    bool big = clustered_islands(e, readahead_pages(t));
    if (v == Verdict::random && !big) t.clustered = false;
    else if (!continuing && e.new_islands >= 2 && big) t.clustered = true;
    if (t.streaming && t.front >= t.stream_from + kLongStreamPages) t.clustered = false;
}

// A reader moving down (Track::backward): the look's news against the
// last one's. Only over pages written before (a backward fill needs no
// read-ahead); never for a region whose cache aware code manages.
constexpr uint64_t kBackwardMinLeadPages = (1u << 20) / kPage; // a CPython arena
void note_backward(Track &t, const TickEvidence &e, uint64_t now, uint64_t dt, uint64_t filled_before) {
    if (!e.new_pages) {
        if (t.backward && stream_stopped(now - t.back_news_ns, t.back_last_run, t.back_rate)) t.backward = false;
        return;
    }
    if (t.back_from && continues_backward(e, t.back_from, t.backward ? t.back_read_to : UINT64_MAX)) {
        uint64_t rate = (t.back_from - e.longest_start) * 1000000000ull / (dt ? dt : 1);
        t.back_news_ns = now;
        if (!t.backward) {
            t.back_read_to = e.longest_start;
            t.back_passed_on = false;
            SPW_LOG(debug, "detector %p: a reader moving down from page %llu", (void *)t.start,
                    (unsigned long long)e.longest_end);
        }
        t.back_rate = t.backward ? (t.back_rate + rate) / 2 : rate;
        t.backward = true;
        t.back_front = e.longest_start;
        t.back_last_run = e.longest_new;
        t.back_feed_due = !t.cache_managed && e.longest_start < filled_before;
        // Not a forward stream: its looks would hand the worker reads of
        // what the reader has just passed.
        t.fed = false;
        t.predicted = false;
        unhand(t);
    } else if (t.backward && e.longest_new < kBackwardMinPages) {
        // Too little news to judge by (a reader slowed by a busy disk, or
        // fault-around elsewhere): the stream goes on until it stops.
        if (e.longest_start < t.back_from && e.longest_end + kStreamMinPages >= t.back_from)
            t.back_from = e.longest_start;
        if (stream_stopped(now - t.back_news_ns, t.back_last_run, t.back_rate)) t.backward = false;
        return;
    } else {
        t.backward = false;
    }
    t.back_from = e.longest_new >= kBackwardMinPages ? e.longest_start : 0;
}

// Reads ahead below a reader moving down: the lead a forward stream gets
// (prefetch_lead_pages), nearest pages first, each page asked once, but at
// most a quarter of the room page cache has under the limit (at least one
// CPython arena): nothing pages out what such a reader passed (a list's
// freed arenas leave by themselves), and a lead the room cannot hold would
// be evicted before the reader got there.
void feed_backward(Track &t) {
    if (!t.backward || t.cache_managed) return;
    uint64_t cap = lead_max_pages();
    MemoryFigures m = read_memory_figures();
    if (m.limited) cap = std::min(cap, std::max<uint64_t>(m.room() / kPage / 4, kBackwardMinLeadPages));
    uint64_t lead = prefetch_lead_pages(t.back_rate, kLeadNs, std::min(kLeadMinPages, cap), cap);
    uint64_t lo = t.back_front > lead ? t.back_front - lead : 0;
    uint64_t hi = std::min(t.back_read_to, t.back_front);
    if (lo >= hi) return;
    uint64_t chunk = willneed_chunk_pages(t.start + lo * kPage, hi - lo);
    for (uint64_t at = hi; at > lo;) {
        uint64_t n = std::min(chunk, at - lo);
        at -= n;
        madvise((void *)(t.start + at * kPage), n * kPage, MADV_WILLNEED); // on addresses, as feed_stream
    }
    g_prefetched.fetch_add((hi - lo) * kPage, std::memory_order_relaxed);
    t.back_read_to = lo;
}

// A reader moving down whose region is read ahead down to its first page
// goes on into the region that ends where this one starts, if there is
// one: CPython's arena chunks (large/block_zone.h) lie side by side, made
// in the order the list's items were, so freeing the list crosses one
// every 32 MiB. Without this each chunk waited two looks (up to 200 ms,
// a third of a chunk read page by page) before it was read ahead. That
// region is read ahead from its end as the reader's own; if the reader
// never comes, its stream stops as any other (stream_stopped).
//
// Its front is where the reader is, counted from its own start (above its
// pages while the reader is above it), and moves with the reader's: the
// lead below the reader is one lead over every region it spans. Why: with
// the front put at the region's top, each region below was read whole at
// once and passed on in turn, so one re-detected reader read every chunk
// of a list to the bottom within a few looks. In the epochs job at 1 GiB
// (736 MiB of chunks) the sampler read 13.9 GB that way, evicted before
// the reader came (docs/benchmarks.md).
constexpr uint64_t kBackwardEdgePages = 16; // fault-around: a fault maps its aligned 64 KiB
void pass_backward_on(uint64_t now) {
    // Highest first: a region's front is up to date before the one below
    // it takes its own from it.
    for (size_t i = g_track_count; i-- > 1;) {
        Track &a = g_tracks[i];
        Track &b = g_tracks[i - 1];
        if (!a.backward) continue;
        const bool below_a = b.start + b.pages * kPage == a.start;
        if (a.back_passed_on) {
            // The reader moved and has not reached b yet: b's lead moves on.
            if (below_a && a.back_feed_due && b.backward && b.back_front >= b.pages) {
                b.back_front = b.pages + a.back_front;
                b.back_rate = a.back_rate;
                b.back_last_run = a.back_last_run;
                b.back_news_ns = a.back_news_ns;
                b.back_feed_due = true;
            }
            continue;
        }
        // Read ahead to its start, or the reader got there first.
        if (std::min(a.back_read_to, a.back_front) > kBackwardEdgePages) continue;
        a.back_passed_on = true;
        // A forward stream there (b.fed) is another reader's.
        if (!below_a || b.backward || b.fed || b.cache_managed || b.kept_off || b.filled_to == 0) continue;
        b.backward = true;
        b.back_passed_on = false;
        b.back_from = b.back_read_to = std::min(b.pages, b.filled_to);
        b.back_front = b.pages + a.back_front;
        b.back_rate = a.back_rate;
        b.back_last_run = a.back_last_run;
        b.back_news_ns = now;
        b.back_feed_due = true;
        SPW_LOG(debug, "detector %p: read down to its start, %p below it read ahead for the same reader",
                (void *)a.start, (void *)b.start);
    }
}

// The pages [lo, hi) of a region a look covers: all of them, or for a
// stream between full looks a window around its front. Why a window: the
// pages a stream left mapped behind it are most of what a page-table walk
// visits (measured: a tenth of a core walking a 1 GiB region every 20 ms),
// and they cannot change the stream's verdict; scattered faults elsewhere
// are seen by the next full look (every kPeriodNs). lo is a multiple of 64,
// so the window's bits are whole words of the region's bitmap.
struct LookSpan {
    uint64_t lo = 0, hi = 0;
};

LookSpan whole(const Track &t) { return {0, t.pages}; }

LookSpan stream_window(const Track &t) {
    constexpr uint64_t kBehind = (4u << 20) / kPage;
    uint64_t low = t.backward ? std::min(t.front, t.back_read_to) : t.front; // a reader moving down
    uint64_t lo = low > kBehind ? (low - kBehind) & ~uint64_t(63) : 0;
    uint64_t ahead = std::max(t.prefetched_to, t.front) + kLeadMaxPages;
    return {lo, std::min(t.pages, ahead)};
}

// The present runs of span with t's probes added as present (probe_rules.h:
// the probes' own unmapping is never news here), in g_masked_runs; runs
// itself when t has none; null when they do not fit.
PageRun *g_masked_runs = nullptr;
const PageRun *with_probes(const Track &t, LookSpan span, const PageRun *runs, long *n) {
    if (!t.probes || !t.probes->n_masked) return runs;
    if (!g_masked_runs) g_masked_runs = (PageRun *)mi_malloc((kMaxRuns + kMaxProbes) * sizeof(PageRun));
    if (!g_masked_runs) return nullptr;
    long m = runs_with_probes(runs, (size_t)*n, t.probes->masked, t.probes->n_masked, span.lo, span.hi,
                              g_masked_runs, kMaxRuns + kMaxProbes);
    if (m < 0) return nullptr;
    *n = m;
    return g_masked_runs;
}

// runs: the present runs of span (relative to span.lo), or null to read
// them now. widen: the process took faults since the last tick, so a window
// without news means they fell elsewhere: look at the whole region at once
// (a stream that turned random is then noticed within one stream tick).
void look(Track &t, uint64_t now, LookSpan span, const PageRun *runs, long n, bool widen = false) {
    bool overflow = false;
    if (span.hi <= span.lo) return;
    if (!runs) {
        n = read_presence(g_pagemap, t.start + span.lo * kPage, span.hi - span.lo, g_runs, kMaxRuns, &overflow);
        runs = g_runs;
    }
    if (n < 0) return;
    runs = with_probes(t, span, runs, &n);
    if (!runs) return;
    if (!t.bits) {
        t.bits = (uint64_t *)mi_zalloc(((t.pages + 63) / 64) * 8);
        if (!t.bits) return;
    }
    bool first = t.last_look_ns == 0;
    uint64_t dt = first ? kPeriodNs : now - t.last_look_ns;
    TickEvidence e = compare_presence(t.bits + span.lo / 64, span.hi - span.lo, runs, (size_t)n, overflow);
    if (widen && e.new_pages == 0 && (span.lo != 0 || span.hi != t.pages)) {
        long all = read_presence(g_pagemap, t.start, t.pages, g_runs, kMaxRuns, &overflow);
        const PageRun *masked = all >= 0 ? with_probes(t, whole(t), g_runs, &all) : nullptr;
        if (masked) { // the window's bits are current: only news outside it counts
            span = whole(t);
            runs = masked;
            n = all;
            e = compare_presence(t.bits, t.pages, runs, (size_t)n, overflow);
        }
    }
    // Checked after the presence was read: pages a move mapped were mapped
    // after it was marked (prefetch_worker.h), so a look that saw them sees
    // the mark. The bits keep them, and the first look after the move only
    // takes the bits: what the move mapped is not news after it either.
    bool kept_off = prefetch_kept_off(t.start);
    if (kept_off || t.kept_off) {
        t.kept_off = kept_off;
        t.last_look_ns = now;
        t.streaming = false;
        t.prefetched_to = 0;
        t.fed = false;
        t.predicted = false;
        t.feed_due = t.left_due = false;
        t.backward = t.back_feed_due = false; // a move's copy is no reader moving down either
        t.back_from = 0;
        scatter_reset(t.scatter);
        unhand(t);
        return;
    }
    if (e.new_pages) { // back to page indexes of the region
        e.longest_start += span.lo;
        e.longest_end += span.lo;
        e.longest_run_start += span.lo;
        e.longest_run_end += span.lo;
        t.last_news_ns = now;
        if (t.probes) { // page_probes.h: the open cycle says nothing
            t.probes->presence_moved = true;
            t.probes->news_ns = now;
        }
    }
    uint64_t filled_before = t.filled_to;
    if (n > 0) t.filled_to = std::max(t.filled_to, span.lo + runs[n - 1].first + runs[n - 1].count);
    t.last_look_ns = now;
    if (span.lo == 0 && span.hi == t.pages) {
        t.last_full_look_ns = now;
        t.present_pages = 0;
        for (long i = 0; i < n; i++) t.present_pages += runs[i].count;
    }
    if (first) {
        // What was present before we looked is not this tick's news; but in
        // a fresh region it is all the site's doing since birth, and a
        // scatter that ended before this look leaves nothing else to see.
        if (!t.reused && span.lo == 0 && span.hi == t.pages && now - t.born <= kFirstLookMaxAgeNs &&
            classify_first_look(e) == Verdict::random)
            teach_site(t.site, Verdict::random, now - t.born, [&](char *out, size_t cap) {
                snprintf(out, cap, "%llu islands of %llu pages at the first look, %.2f s after allocation",
                         (unsigned long long)e.new_islands, (unsigned long long)e.new_pages,
                         (now - t.born) / 1e9);
            });
        return;
    }
    note_huge_folios(e, g_pagemap, t.start, span.lo);
    Verdict v = classify_tick(e);
    SPW_LOG(debug, "detector %p: %llu new pages in %llu islands (longest %llu from %llu to %llu) in %.0f ms: %d",
            (void *)t.start, (unsigned long long)e.new_pages, (unsigned long long)e.new_islands,
            (unsigned long long)e.longest_new, (unsigned long long)e.longest_start,
            (unsigned long long)e.longest_end, dt / 1e6, (int)v);
    uint32_t fault_rate = (uint32_t)std::min<uint64_t>(e.new_pages * 1000000000ull / dt, UINT32_MAX);
    if (v == Verdict::undecided && continues_run(e, t.front)) v = Verdict::sequential;
    // A fill whose newest pages the pacer unmapped since the last look
    // (fill_moved_on): the same stream, not a stop and a new one.
    if (v == Verdict::undecided && t.streaming && !t.fed && fill_moved_on(e, t.front, filled_before, kLeadMaxPages))
        v = Verdict::sequential;
    // A random reader too slow to leave kRandomMinIslands islands in one
    // look (each fault waiting on a busy disk) is judged over several.
    uint64_t tallied = 0, tally_ns = 0; // islands and span of a verdict by the tally
    if (v == Verdict::undecided && scatter_tally(t.scatter, e, now) == Verdict::random) {
        v = Verdict::random;
        tallied = t.scatter.islands;
        tally_ns = now - t.scatter.since_ns;
        SPW_LOG(debug, "detector %p: %llu scattered islands over %.0f ms of looks: random", (void *)t.start,
                (unsigned long long)tallied, tally_ns / 1e6);
    }
    if (v != Verdict::undecided) scatter_reset(t.scatter);
    bool continuing = false;
    if (v == Verdict::sequential) {
        uint64_t moved = e.longest_end > t.front ? e.longest_end - t.front : 0;
        bool same_stream = t.streaming && e.longest_end >= t.front &&
                           e.longest_end <= std::max(t.prefetched_to, t.front) + kLeadMaxPages;
        uint64_t rate = (same_stream ? moved : e.longest_new) * 1000000000ull / dt;
        t.rate = same_stream ? (t.rate + rate) / 2 : rate;
        if (!same_stream) {
            unhand(t);
            t.prefetched_to = 0;
            t.dropped_to = e.longest_start;
            t.stream_from = e.longest_start;
            t.fed = false;
            t.chained = chained_after(t, e.longest_start, now);
            if (t.chained) SPW_LOG(debug, "detector %p: a stream from page %llu continues a chain", (void *)t.start,
                                   (unsigned long long)e.longest_start);
        }
        t.predicted = false; // begun
        continuing = same_stream;
        t.streaming = true;
        t.idle_looks = 0;
        t.last_run = e.longest_new;
    } else if (v == Verdict::random) {
        t.streaming = false; // scattered faults: stop reading ahead at once
    } else if (t.streaming && e.new_pages && !reaches_from(e, t.front) && !begins_predicted(t, e)) {
        t.streaming = false; // new pages, but not where the stream was going
    } else if (t.streaming) {
        ++t.idle_looks;
        // A stream the worker still reads ahead of has not stopped: its
        // stop (kStreamStopNs) counts from when the worker has read its lead.
        // Traced on a disk busy with writes (docs/flakes.md, test_sampler's
        // chain case): one 4 MiB read took a second; a reader faulting on
        // the pages it was reading left no news, so its stream ended and
        // the rest of the buffer went unfed and was never seen left at its
        // end (no chain after it); a chain's predicted buffer ended half-read.
        // What is read ahead stays bounded by the lead, as on a fast disk,
        // which reads it all well within kStreamStopNs.
        if (t.handed && prefetch_pending(t.start, t.born)) t.worker_news_ns = now;
        if (t.fed && left_at_end(t.front, t.pages, t.idle_looks, kLeftIdleLooks)) {
            t.streaming = false; // a re-read left its region at the end (on to the next buffer)
            t.left_due = true;
            t.left_end_ns = now;
        } else if (stream_stopped(now - std::max(t.last_news_ns, t.worker_news_ns), t.last_run, t.rate)) {
            t.streaming = false; // it stopped (a slow reader in a folio it was given has not)
        }
    }
    if (e.new_pages) t.front = e.longest_end; // where a stream would continue
    note_backward(t, e, now, dt, filled_before);
    update_clustered(t, e, v, continuing);
    if (!t.streaming) {
        t.prefetched_to = 0;
        t.fed = false;
        t.predicted = false;
        unhand(t);
    }
    bool changed = v != Verdict::undecided && v != t.verdict;
    if (changed) {
        t.verdict = v;
        learn_site(t.site, v, e, now - t.born, tallied, tally_ns);
    }
    // Only a stream over pages written before reads from disk; one that
    // extends the region's written part (a first fill of reserved blocks)
    // needs no read-ahead, which would only fill the page cache with zeros
    // ahead of the writer and page out what it just wrote.
    if (t.streaming && !t.fed && !t.backward) {
        // ...and only once it has run kLongStreamPages: a reader taking
        // contiguous slices in random order starts a short "stream" at each
        // one, which the kernel's window serves (update_clustered); the
        // worker's lead of 64 MiB would read mostly what it never wants.
        // A chain's next buffer is a whole re-read from its start: fed at once.
        t.fed = t.front + kFedMarginPages < filled_before &&
                (t.chained || t.front >= t.stream_from + kLongStreamPages);
        if (t.fed) t.kernel_feeds = !t.advice_pinned && readahead_pages(t) * kPage / 1024 >= kKernelStreamMinKb;
    }
    publish(t, v, changed, now, fault_rate); // applied with the others at the end of the tick
    t.feed_due = t.streaming && t.fed;
}

// A stream the thread reads ahead of, or one under MADV_SEQUENTIAL (whose
// end must be noticed before random faults read megabytes), is looked at
// every stream tick; everything else every 100 ms.
bool needs_fast_looks(const Track &t) {
    return (t.streaming && (t.fed || t.pages * kPage >= kStreamAdviceFrom)) || t.backward;
}

bool feeds_itself(const Track &t) { return t.streaming && t.fed; }

// A chain's current buffer (a begun, chained re-read) whose read-ahead
// reaches its end: the site's next region, if written and idle, is
// streamed from its start before the reader gets there (the worker reads
// it only when no begun stream has anything to read), so the reader finds
// its first pages cached instead of faulting them page by page until the
// detector hands the new stream over. Kept while the current buffer
// streams and while the worker reads it; stream_stopped ends it
// kStreamStopNs after, if the reader went elsewhere.
void predict_next_in_chains(uint64_t now) {
    for (size_t i = 0; i < g_track_count; i++) {
        const Track &a = g_tracks[i];
        if (!a.streaming || !a.fed || !a.chained || a.predicted || a.prefetched_to < a.pages) continue;
        Track *b = neighbour_of_site(a, true);
        if (!b) continue;
        if (b->predicted) {
            b->last_news_ns = now; // still expected
            continue;
        }
        if (b->filled_to <= kFedMarginPages) written_on_file(*b, now);
        if (b->streaming || b->cache_managed || b->kept_off || b->filled_to <= kFedMarginPages) continue;
        b->streaming = b->fed = b->chained = b->predicted = true;
        b->front = b->stream_from = b->dropped_to = b->prefetched_to = 0;
        b->rate = a.rate;
        b->last_run = 0;
        b->idle_looks = 0;
        b->last_news_ns = now;
        b->kernel_feeds = !b->advice_pinned && readahead_pages(*b) * kPage / 1024 >= kKernelStreamMinKb;
        b->worker_refused = false;
        publish(*b, b->verdict, false, now, b->rate_published == UINT32_MAX ? 0 : b->rate_published);
        b->feed_due = true;
        SPW_LOG(debug, "detector %p: read to its end, next in its chain %p streamed ahead of the reader",
                (void *)a.start, (void *)b->start);
    }
}

// One tick; returns the delay until the next.
uint64_t tick(uint64_t now) {
    if (g_pagemap < 0) g_pagemap = move_high(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    if (g_pagemap < 0) return kPeriodNs;
    // Faults on probes (page_probes.h) are the probes' news, not presence's:
    // a program that only touches probes costs no look here.
    uint64_t faults = process_faults(), probe_faults = probes_touches();
    bool faults_moved = faults - g_last_faults > probe_faults - g_last_probe_faults;
    bool busy = faults_moved && faults - g_last_faults - (probe_faults - g_last_probe_faults) >= kBusyTickFaults;
    bool any_stream = false;
    for (size_t i = 0; i < g_track_count; i++) any_stream |= needs_fast_looks(g_tracks[i]);
    g_last_probe_faults = probe_faults;
    if (!faults_moved && !any_stream && !g_young_waiting) {
        g_last_faults = faults;
        return kPeriodNs; // nothing moved
    }
    g_last_faults = faults;
    if (!refresh_tracks(now)) return kPeriodNs;
    any_stream = false;
    bool any_fed = false;
    // Many regions: one page-table walk over each stretch of consecutive
    // regions due for a full look (the arena's free space is unpopulated and
    // costs the kernel nothing to skip), instead of one system call per
    // region (measured: 1,000 regions of 4 MiB cost 2% of a core that way).
    // A demoted region where a chain may begin is looked at on the usual
    // period (full_look_period); the site's neighbours are sought only
    // when that decides.
    auto full_look_due = [now, busy](const Track &t) {
        if (!t.last_full_look_ns) return true;
        uint64_t since = now - t.last_full_look_ns, slack = kStreamPeriodNs / 2;
        if (since + slack < kPeriodNs) return false;
        bool chain = t.demoted && !busy && !t.streaming && chain_may_begin(t, now);
        return since + slack >= full_look_period(kPeriodNs, kDemotedPeriodNs, t.demoted, busy, chain);
    };
    bool any_full = false;
    for (size_t i = 0; i < g_track_count; i++) any_full |= (g_full_due[i] = full_look_due(g_tracks[i]));
    long all = -1;
    bool overflow = false;
    if (g_track_count > 8 && g_all_runs && any_full) {
        all = 0;
        for (size_t i = 0; i < g_track_count && all >= 0;) {
            if (!g_full_due[i]) {
                i++;
                continue;
            }
            size_t j = i;
            while (j + 1 < g_track_count && g_full_due[j + 1]) j++;
            uintptr_t from = g_tracks[i].start;
            uint64_t span = (g_tracks[j].start + g_tracks[j].pages * kPage - from) / kPage;
            long got = read_presence(g_pagemap, from, span, g_all_runs + all, kMaxRuns - (size_t)all, &overflow);
            if (got < 0 || overflow) {
                all = -1;
                break;
            }
            uint64_t base = (from - g_tracks[0].start) / kPage; // runs relative to the first track
            for (long r = all; r < all + got; r++) g_all_runs[r].first += base;
            all += got;
            i = j + 1;
        }
    }
    size_t k = 0; // first run of g_all_runs not yet below the current track
    for (size_t i = 0; i < g_track_count; i++) {
        Track &t = g_tracks[i];
        // Between full ticks only streams are looked at (their front
        // moves), and only around their front.
        bool full = g_full_due[i];
        if (!full && !needs_fast_looks(t)) continue;
        // Blocks evicted since the probes' last cycle are news again
        // (page_probes.h, probes_unmask): before the look applies the mask.
        if (full && t.probes) probes_unmask(*t.probes, g_pagemap);
        if (!full) {
            look(t, now, stream_window(t), nullptr, 0, faults_moved);
        } else if (all < 0) {
            look(t, now, whole(t), nullptr, 0);
        } else {
            // This region's runs, clipped to it and made relative to its start.
            uint64_t lo = (t.start - g_tracks[0].start) / kPage, hi = lo + t.pages;
            while (k < (size_t)all && g_all_runs[k].first + g_all_runs[k].count <= lo) k++;
            long n = 0;
            for (size_t j = k; j < (size_t)all && g_all_runs[j].first < hi && n < (long)kMaxRuns; j++) {
                uint64_t a = std::max(g_all_runs[j].first, lo);
                uint64_t b = std::min(g_all_runs[j].first + g_all_runs[j].count, hi);
                g_runs[n++] = {a - lo, b - a};
            }
            look(t, now, whole(t), g_runs, n);
        }
        any_stream |= needs_fast_looks(t);
        any_fed |= feeds_itself(t);
    }
    predict_next_in_chains(now);
    pass_backward_on(now);
    for (size_t i = 0; i < g_track_count; i++) any_fed |= g_tracks[i].feed_due || g_tracks[i].back_feed_due;
    publish_all();
    for (size_t i = 0; i < g_track_count; i++) // no lock: on addresses, as feed_stream
        if (g_tracks[i].left_due) {
            g_tracks[i].left_due = false;
            page_out_left(g_tracks[i]);
        }
    // Read-ahead after the advice is set (no lock: on addresses, see feed_stream).
    if (any_fed)
        for (size_t i = 0; i < g_track_count; i++)
            if (g_tracks[i].feed_due) {
                g_tracks[i].feed_due = false;
                feed_stream(g_tracks[i]);
            }
    if (any_fed)
        for (size_t i = 0; i < g_track_count; i++)
            if (g_tracks[i].back_feed_due) {
                g_tracks[i].back_feed_due = false;
                feed_backward(g_tracks[i]);
            }
    return any_fed ? kFeedPeriodNs : any_stream ? kStreamPeriodNs : kPeriodNs;
}

// Whether learning probes t's region (page_probes.h): its site can still
// be taught something (not random yet), and its pages may be unmapped.
bool wants_probes(const Track &t) {
    if (!g_probe || !t.shared_file || !teachable(t.site, Verdict::random)) return false;
    if (t.site->access.load(std::memory_order_relaxed) == (int)Access::random) return false;
    return probe_count(t.pages) > 0;
}

// The probes' steps due by now, for every region probed; returns when the
// next one is due. Probes start on a region once half its pages were
// mapped at the last look (before, presence sees the region fill), and
// retire (their pages mapped back) once its site is learned random.
ProbeSet *g_due_sets[kMaxProbing]; // every set counts towards kMaxProbing, retiring ones too
Track *g_due_tracks[kMaxProbing];
uint64_t probe_tick(uint64_t now) {
    if (!g_probe || g_pagemap < 0) return UINT64_MAX;
    uint64_t cpu = program_cpu_ns();
    uint32_t probing = 0, touched = 0; // sets, and sets whose probes the last cycle saw touched
    bool published = false;
    for (size_t i = 0; i < g_track_count; i++)
        if (const ProbeSet *p = g_tracks[i].probes) {
            probing++;
            touched += p->counts.first + p->counts.second > 0;
        }
    size_t n = 0;
    for (size_t i = 0; i < g_track_count; i++) {
        Track &t = g_tracks[i];
        bool wants = wants_probes(t);
        if (t.probes && !wants && !t.probes->retiring) probes_retire(*t.probes);
        if (!t.probes && wants && probing < kMaxProbing && t.present_pages * 2 >= t.pages) {
            t.probes = probes_new(t.start, t.born, t.pages, t.start ^ now, now);
            if (t.probes) t.probes->news_ns = t.last_news_ns;
            probing += t.probes != nullptr;
        }
        // A cycle opens only while presence sees the region still (page_probes.h).
        // That takes a look after the region's last news, and a tick with no
        // fault looks at nothing: a stream gets one from its idle looks (20 ms
        // apart). Ending a fill's stream at its last news instead (10de383)
        // left the probes closed through a scatter into pages all mapped.
        if (t.probes && t.probes->step == 0 && !t.probes->retiring && t.last_news_ns &&
            t.last_news_ns == t.last_look_ns) {
            t.probes->next_ns = std::max(t.probes->next_ns, now + kStreamPeriodNs);
            continue;
        }
        if (t.probes && probes_due(*t.probes, now, cpu)) {
            g_due_sets[n] = t.probes;
            g_due_tracks[n++] = &t;
        }
    }
    for (size_t i = 0; i < n; i++) probes_read(*g_due_sets[i], g_pagemap, now);
    probes_apply(g_due_sets, n); // the calls outside the large lock, each region held (probe_hold.h)
    uint64_t after = monotonic_ns();
    cpu = program_cpu_ns();
    for (size_t i = 0; i < n; i++) {
        Track &t = *g_due_tracks[i];
        ProbeSet &p = *t.probes;
        if (p.retiring || p.gone) { // mapped back (or its region is not this one any more)
            t.unhuge_charged += probes_free(t.probes); // demoted blocks stay so: drop_track gives it back
            t.probes = nullptr;
            continue;
        }
        if (p.broken) { // the kernel refused: map back what was unmapped, probe no more
            probes_retire(p);
            t.shared_file = false;
            continue;
        }
        t.demoted |= p.unhuge;
        ProbeResult r = probes_advance(p, after, cpu, touched);
        if (!r.judged) continue;
        SPW_LOG(debug, "probes %p: %u of %u touched in %.1f ms (%.1f ms of CPU), %u in the next %.1f ms (%.1f ms), %u in both (%.1f at random): %d",
                (void *)t.start, r.counts.first, r.counts.probes, r.first_ns / 1e6, r.first_cpu_ns / 1e6,
                r.counts.second, r.second_ns / 1e6, r.second_cpu_ns / 1e6, r.counts.both, r.reading.expected,
                (int)r.reading.verdict);
        if (r.agreed != Verdict::undecided) learn_site_from_probes(t.site, r, after - t.born);
        // The region's own verdict too: it is this region's pages the probes
        // saw touched at random. Without it a table whose every page was
        // mapped before its scatter kept no phase, and tiering, which
        // promotes regions in a random phase, never promoted it: xz -9's
        // 64 MiB hash table (zeroed, then scattered into) stayed on disk,
        // with no memory limit at all.
        if (r.agreed == Verdict::random && t.verdict != Verdict::random) {
            t.verdict = Verdict::random;
            publish(t, Verdict::random, true, after, t.rate_published == UINT32_MAX ? 0 : t.rate_published);
            published = true;
        }
    }
    if (published) publish_all(); // the large lock once, as a tick's publications
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < g_track_count; i++)
        if (const ProbeSet *p = g_tracks[i].probes)
            next = std::min(next, p->retiring ? after : p->next_ns);
    return next;
}

void *sampler_main(void *) {
    struct sched_param sp = {}; // its wake-ups never preempt the application either
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    uint64_t cpu0 = thread_cpu_ns();
    uint64_t next_look = monotonic_ns() + kPeriodNs, next_probe = UINT64_MAX;
    while (!g_stop.load(std::memory_order_relaxed)) {
        uint64_t now = monotonic_ns(), wake = std::min(next_look, next_probe);
        if (wake > now) {
            uint64_t delay = wake - now;
            timespec ts = {(time_t)(delay / 1000000000ull), (long)(delay % 1000000000ull)};
            nanosleep(&ts, nullptr);
        }
        exit_if_only_ours_left();
        g_in_tick.store(true);
        if (g_hold.load()) { // no look and no probe step while held: both wait a period
            g_in_tick.store(false);
            next_look = monotonic_ns() + kPeriodNs;
            next_probe = next_look;
            continue;
        }
        now = monotonic_ns();
        if (now >= next_look) {
            next_look = now + tick(now);
            stats_live_tick(now); // `spillway top` reads it
            g_ticks.fetch_add(1, std::memory_order_relaxed);
        }
        next_probe = probe_tick(monotonic_ns());
        g_in_tick.store(false);
        g_cpu_ns.store(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
    }
    return nullptr;
}
} // namespace

void sampler_init(const Settings &s) {
    g_learn = s.learn;
    g_probe = s.learn && s.learn_probe;
}

void sampler_notice() {
    if (g_started.exchange(true)) return;
    start_background_thread(sampler_main, "spillway-learn", 256 * 1024);
    prefetch_thread_start(); // now, not when a stream first needs it (prefetch_worker.h)
}

void sampler_stop() { g_stop.store(true); }

void sampler_hold(bool hold) {
    g_hold.store(hold);
    while (hold && g_in_tick.load()) {
        timespec ts = {0, 1000000};
        nanosleep(&ts, nullptr);
    }
}

void sampler_after_fork_child() {
    g_started.store(false);
    // The inherited descriptor reads the PARENT's page tables.
    if (g_pagemap >= 0) close(g_pagemap);
    g_pagemap = -1;
    // The parent's regions are private copies here: start from nothing.
    for (size_t i = 0; i < g_track_count; i++) {
        g_tracks[i].handed = false; // the worker's slots: prefetch_after_fork_child, next
        drop_track(g_tracks[i]);
    }
    g_track_count = 0;
    // A fork in the middle of the parent's swap of the two tables leaves
    // both naming one: the next refresh would read what it writes.
    if (g_next_tracks == g_tracks) g_next_tracks = nullptr;
    g_publication_count = 0;
    g_last_faults = 0;
    g_last_probe_faults = probes_touches();
}

uint64_t sampler_cpu_ns() { return g_cpu_ns.load(); }
uint64_t sampler_ticks() { return g_ticks.load(); }
uint64_t sampler_prefetched_bytes() { return g_prefetched.load() + prefetch_read_bytes(); }

} // namespace spillway
