// page_probes.cpp — see page_probes.h.
#include "access/page_probes.h"

#include "registry/arena.h"
#include "registry/probe_hold.h"
#include "registry/region.h"

#include <algorithm>
#include <atomic>
#include <mimalloc.h>
#include <mutex>
#include <new>
#include <sys/mman.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace spillway {

namespace {
constexpr uint64_t kPage = 4096;
constexpr size_t kWords = kMaxProbes / 64;
constexpr uint64_t kFirstWindowNs = 2'000'000;
constexpr uint64_t kMinWindowNs = 250'000; // the timer's slack is 50 us
constexpr uint64_t kMaxWindowNs = 500'000'000;
constexpr uint64_t kRestNs = 100'000'000;          // between cycles, at least
constexpr uint64_t kIdleRestNs = 400'000'000;      // after a cycle that saw nothing, doubling...
constexpr uint64_t kIdleRestMaxNs = 4'000'000'000; // ...up to this
constexpr uint64_t kBusyRetryNs = 10'000'000;
// A region whose presence changed less than this before a cycle opened may
// still be filling: the detector looks at every region at least every 100 ms.
constexpr uint64_t kStillNs = 100'000'000;
constexpr uint64_t kWindowClockMaxNs = 1'000'000'000; // a window with no CPU time closes after this

std::atomic<uint64_t> g_touches{0}, g_cycles{0};
// Bytes the probes of live regions may demote from 2 MiB to 4 KiB mappings
// (unhuge_charge each, until the region is gone: probes_free, probes_uncharge;
// the sampler thread's alone), at most
// kUnhugeMaxBytes: every demoted block is walked entry by entry at each of
// presence's looks, where a huge mapping is one entry (measured,
// tests/bench/detector_cost.c, 16 regions of 256 MiB read at random, load
// 4-8: the sampler used 2.5-2.8% of a core with all 4 GiB demoted,
// 1.0-1.3% with 1 GiB, 0.1-0.4% with none, when every look walked them;
// quiet ticks now skip demoted regions, sampler.cpp kDemotedPeriodNs).
// 512 MiB: the pair (two 512 MiB regions, 256 MiB of probed blocks
// each) fits. The charge stays while the region lives (its blocks stay
// demoted after its probes retire), so the cap bounds what presence walks.
uint64_t g_unhuge_bytes = 0;
constexpr uint64_t kUnhugeMaxBytes = uint64_t(512) << 20;
uint64_t unhuge_charge(const ProbeSet &s) { return std::min<uint64_t>(s.pages, uint64_t(s.count) * 512) * 4096; }

inline bool bit(const uint64_t *b, uint32_t i) { return (b[i >> 6] >> (i & 63)) & 1; }
inline void set_bit(uint64_t *b, uint32_t i) { b[i >> 6] |= 1ull << (i & 63); }
inline void clear_bit(uint64_t *b, uint32_t i) { b[i >> 6] &= ~(1ull << (i & 63)); }

uint64_t next_random(uint64_t &x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

uint32_t popcount(const uint64_t *b) {
    uint32_t n = 0;
    for (size_t i = 0; i < kWords; i++) n += (uint32_t)__builtin_popcountll(b[i]);
    return n;
}

// Bit i: probe i is placed and counted (not left out).
void usable(const ProbeSet &s, uint64_t *out) {
    for (size_t w = 0; w < kWords; w++) out[w] = s.placed[w] & ~s.excluded[w];
}

// Runs of touched probes among the usable ones, in address order (a
// stratum without a usable probe neither breaks nor makes a run).
uint32_t runs_among(const ProbeSet &s, const uint64_t *bits) {
    uint64_t use[kWords], packed[kWords] = {};
    usable(s, use);
    uint32_t k = 0;
    for (uint32_t i = 0; i < s.count; i++)
        if (bit(use, i)) {
            if (bit(bits, i)) set_bit(packed, k);
            k++;
        }
    return touched_runs(packed, k);
}

constexpr uint64_t kHugePages = 512;

// The presence mask (ProbeSet::masked) from the placed probes.
void build_mask(ProbeSet &s) {
    s.n_masked = 0;
    for (uint32_t i = 0; i < s.count; i++) {
        if (!bit(s.placed, i)) continue;
        uint64_t block = s.page[i] / kHugePages * kHugePages;
        s.masked[s.n_masked++] = bit(s.zapped, i) ? PageRun{block, std::min(kHugePages, s.pages - block)}
                                                  : PageRun{s.page[i], 1};
    }
    std::sort(s.masked, s.masked + s.n_masked, [](const PageRun &a, const PageRun &b) { return a.first < b.first; });
}

// Whether none of the block's pages but `except` is in the page cache.
bool block_evicted(uintptr_t start, uint64_t pages, uint64_t except) {
    unsigned char vec[kHugePages];
    if (pages > kHugePages || mincore((void *)start, pages * kPage, vec) != 0) return false;
    for (uint64_t p = 0; p < pages; p++)
        if (p != except && (vec[p] & 1)) return false;
    return true;
}

// Unmasks the blocks of zapped probes the program mapped again (all their
// pages but the probe's), or that reclaim has emptied since (none of their
// pages cached): from then on presence sees them as any page. Why the
// second: a block whose pages left memory before the program came back
// is read again from disk, page by page or in a stream, and a re-read in
// order under the mask was no news to presence (the chain case of
// test_sampler, on a disk read ahead in 2 MiB folios): no stream, no
// read-ahead.
void unmask_refaulted(ProbeSet &s, int pagemap_fd) {
    bool changed = false;
    // Probes are in address order, several to a block in regions under
    // 1 GiB: each block is read once (this runs before every full look).
    uint64_t last_block = UINT64_MAX;
    bool last_unmask = false;
    for (uint32_t i = 0; i < s.count; i++) {
        if (!bit(s.zapped, i)) continue;
        uint64_t block = s.page[i] / kHugePages * kHugePages, n = std::min(kHugePages, s.pages - block);
        if (block != last_block) {
            last_block = block;
            PageRun runs[3];
            bool overflow = false;
            long got = read_presence(pagemap_fd, s.start + block * kPage, n, runs, 3, &overflow);
            uint64_t present = 0;
            for (long r = 0; r < got; r++) present += runs[r].count;
            last_unmask = got >= 0 && !overflow &&
                          (present + 1 >= n || block_evicted(s.start + block * kPage, n, s.page[i] - block));
        }
        if (!last_unmask) continue;
        clear_bit(s.zapped, i);
        changed = true;
    }
    if (changed) build_mask(s);
}

// Places a probe in each stratum that has none, at a random page mapped
// now and not under a huge mapping; a stratum not mapped yet waits for a
// later cycle (the region may still be filling).
void place(ProbeSet &s, int pagemap_fd) {
    bool added = false;
    for (uint32_t i = 0; i < s.count; i++) {
        if (bit(s.placed, i)) continue;
        uint64_t p = probe_page(s.pages, i, next_random(s.random));
        int mm = page_mapping(pagemap_fd, s.start + p * kPage);
        if (mm == (kPageMapped | kPageHuge) && !s.unhuge) s.wants_unhuge = true;
        if (mm != kPageMapped && !(s.unhuge && mm == (kPageMapped | kPageHuge))) continue;
        if (mm & kPageHuge) { // its unmapping ends a 2 MiB mapping: probes_advance, build_mask
            s.settling = true;
            set_bit(s.zapped, i);
        }
        s.page[i] = p;
        set_bit(s.placed, i);
        added = true;
    }
    if (added) build_mask(s);
}

// Under the large lock, with r published as held (probe_hold.h): whether
// the pages of s may be unmapped (page_probes.h). r: the region at s.start.
bool still_ours(const ProbeSet &s, const Region *r) {
    return r && r->start == s.start && r->born_ns == s.born && !r->freed.load() &&
           r->backing == Backing::disk && !r->is_private && r->file && !r->file->foreign &&
           r->pins.load() == 0 && !r->moving.load() && r->map_len >= s.pages * kPage;
}

// Ends a cycle that saw `touches` of the probes: the next starts after
// kRestNs, or later once the touch budget is spent (kProbeTouchesPerS
// shared by the `probing` regions being touched, kProbeBurstNs of it
// allowed at once); after a cycle that saw nothing at all, after a rest
// doubling from kIdleRestNs (an idle region costs the thread nothing).
void rest(ProbeSet &s, uint64_t now, uint64_t touches, uint32_t probing) {
    uint64_t cost_ns = touches * std::max<uint32_t>(probing, 1) * 1'000'000'000ull / kProbeTouchesPerS;
    s.paid_to_ns = std::max(s.paid_to_ns, now > kProbeBurstNs ? now - kProbeBurstNs : 0) + cost_ns;
    uint64_t next = std::max(now + kRestNs, s.paid_to_ns);
    if (touches == 0 && !s.presence_moved && now >= s.news_ns + kIdleRestNs) { // idle: not filling either
        next = std::max(next, now + s.idle_rest_ns);
        s.idle_rest_ns = std::min(kIdleRestMaxNs, s.idle_rest_ns * 2);
    } else {
        s.idle_rest_ns = kIdleRestNs;
    }
    s.step = 0;
    s.next_ns = next;
    g_cycles.fetch_add(1, std::memory_order_relaxed);
}

// Whether the page is in the page cache (mincore on a file mapping says so
// whether or not this process maps it).
bool cached(uintptr_t addr) {
    unsigned char v = 0;
    return mincore((void *)addr, kPage, &v) == 0 && (v & 1);
}
// Whether s's region should be made MADV_NOHUGEPAGE now (within the cap).
bool unhuge_due(const ProbeSet &s) {
    return s.wants_unhuge && !s.unhuge && !s.retiring && g_unhuge_bytes + unhuge_charge(s) <= kUnhugeMaxBytes;
}

// s's system calls, made while its region is held (probe_hold.h), outside
// the large lock.
void apply_held(ProbeSet &s, bool unhuge) {
    if (unhuge) {
        s.wants_unhuge = false;
        s.unhuge = madvise((void *)s.start, s.pages * kPage, MADV_NOHUGEPAGE) == 0;
        if (s.unhuge) g_unhuge_bytes += unhuge_charge(s);
    }
    for (uint32_t q = 0; q < s.n_queued; q++) {
        uint32_t p = s.queued[q];
        void *at = (void *)(s.start + s.page[p] * kPage);
        if (s.retiring) {
            madvise(at, kPage, MADV_POPULATE_READ);
        } else if (madvise(at, kPage, MADV_DONTNEED) == 0) {
            set_bit(s.armed, p);
        } else { // EINVAL: locked memory. The retirement maps back what was unmapped.
            s.broken = true;
            break;
        }
    }
}
} // namespace

ProbeSet *probes_new(uintptr_t start, uint64_t born, uint64_t pages, uint64_t seed, uint64_t now) {
    void *mem = mi_zalloc(sizeof(ProbeSet));
    if (!mem) return nullptr;
    ProbeSet *s = new (mem) ProbeSet();
    s->start = start;
    s->born = born;
    s->pages = pages;
    s->count = probe_count(pages);
    s->random = seed | 1;
    s->window_ns = kFirstWindowNs;
    s->idle_rest_ns = kIdleRestNs;
    s->next_ns = now;
    s->paid_to_ns = now > kProbeBurstNs ? now - kProbeBurstNs : 0; // the burst is available
    return s;
}

uint64_t probes_free(ProbeSet *s) {
    if (!s) return 0;
    uint64_t charged = s->unhuge ? unhuge_charge(*s) : 0;
    mi_free(s); // trivially destructible
    return charged;
}

void probes_uncharge(uint64_t bytes) { g_unhuge_bytes -= std::min(bytes, g_unhuge_bytes); }

void probes_unmask(ProbeSet &s, int pagemap_fd) {
    if (s.gone || s.retiring) return;
    unmask_refaulted(s, pagemap_fd);
}

bool probes_due(ProbeSet &s, uint64_t now, uint64_t cpu_ns) {
    if (s.gone || (s.broken && !s.retiring)) return false;
    if (s.retiring) return true;
    if (s.next_ns > now) return false;
    if (s.step == 0) return true;
    uint64_t ran = cpu_ns - s.opened_cpu_ns;
    if (ran >= s.window_ns || now - s.opened_ns >= kWindowClockMaxNs) return true;
    s.next_ns = now + std::max(kMinWindowNs, s.window_ns - ran); // the program was off the CPU
    return false;
}

void probes_read(ProbeSet &s, int pagemap_fd, uint64_t now) {
    (void)now;
    s.n_queued = 0;
    s.busy = false;
    if (s.gone || (s.broken && !s.retiring)) return;
    if (s.step == 0 && !s.retiring) {
        unmask_refaulted(s, pagemap_fd);
        place(s, pagemap_fd);
    }
    std::fill(std::begin(s.touched), std::end(s.touched), 0);
    for (uint32_t i = 0; i < s.count; i++) {
        if (!bit(s.placed, i)) continue;
        uintptr_t at = s.start + s.page[i] * kPage;
        int m = page_mapping(pagemap_fd, at);
        if (m < 0) { // the pagemap cannot be read: nothing can be judged
            s.gone = true;
            return;
        }
        bool mapped = m & kPageMapped;
        if (mapped && bit(s.armed, i)) set_bit(s.touched, i);
        if (mapped) clear_bit(s.armed, i);
        else if (s.step == 0 && !s.retiring) set_bit(s.armed, i); // unmapped (evicted): armed as well
        if ((m & kPageHuge) && !s.unhuge) set_bit(s.excluded, i); // unmapping it would unmap 2 MiB
        if (bit(s.excluded, i)) continue;
        // Retiring: map back what is unmapped and still cached (never a
        // disk read under the lock). Opening a window: unmap what is
        // mapped (the rest is unmapped still). Closing window 2: nothing
        // (the next cycle's first read finds what the rest touched).
        bool queue = s.retiring ? !mapped && cached(at) : mapped && s.step < 2;
        if (queue) s.queued[s.n_queued++] = i;
    }
    for (size_t w = 0; w < kWords; w++) s.touched[w] &= ~s.excluded[w];
    g_touches.fetch_add(popcount(s.touched), std::memory_order_relaxed);
    // A first window that ends the cycle (probes_advance) opens no second.
    if (s.step == 1 && !s.retiring && (s.presence_moved || s.settling)) s.n_queued = 0;
}

void probes_apply(ProbeSet *const *sets, size_t n) {
    for (size_t i = 0; i < n; i++) {
        ProbeSet &s = *sets[i];
        bool unhuge = unhuge_due(s);
        if (!s.n_queued && !unhuge) continue;
        probe_hold_begin(); // before the large lock (probe_hold.h)
        bool ours;
        {
            std::lock_guard<std::mutex> guard(large_lock());
            Region *r = arena::region_at((const void *)s.start);
            bool same = r && r->start == s.start && r->born_ns == s.born;
            probe_hold_publish(same ? r : nullptr); // before reading its state
            ours = same && still_ours(s, r);
            if (!ours) probe_hold_publish(nullptr);
            if (!ours && same && r->pins.load() != 0 && s.n_queued) {
                s.busy = true; // being resized (realloc): the step is tried again shortly
                s.n_queued = 0;
            }
        }
        if (ours) apply_held(s, unhuge);
        probe_hold_end(); // a retirement, resize or move of the region may go ahead
        if (!ours && s.n_queued) {
            s.gone = true;
            s.n_queued = 0;
        }
    }
}

ProbeResult probes_advance(ProbeSet &s, uint64_t now, uint64_t cpu_ns, uint32_t probing) {
    ProbeResult out;
    if (s.gone || s.broken || s.retiring) return out;
    if (s.busy) { // the cycle starts again (a window's touches may have been read already)
        s.step = 0;
        s.next_ns = now + kBusyRetryNs;
        return out;
    }
    uint64_t use[kWords];
    usable(s, use);
    uint32_t k = popcount(use);
    if (s.step == 0 && k < kMinProbes && s.unhuge && !s.placed_unhuge) { // huge strata can take probes now
        s.placed_unhuge = true;
        s.next_ns = now + kBusyRetryNs;
        return out;
    }
    if (s.step == 0 && k < kMinProbes) { // too few pages mapped to place probes: try again later
        s.next_ns = now + s.idle_rest_ns;
        s.idle_rest_ns = std::min(kIdleRestMaxNs, s.idle_rest_ns * 2);
        return out;
    }
    if (s.step == 1) {
        std::copy(std::begin(s.touched), std::end(s.touched), std::begin(s.first));
        s.first_ns = now - s.opened_ns;
        s.first_cpu_ns = cpu_ns - s.opened_cpu_ns;
        for (size_t w = 0; w < kWords; w++) s.first[w] &= use[w];
    }
    if (s.step == 1 && s.presence_moved) { // the region changed under the window: no evidence
        rest(s, now, popcount(s.first), probing);
        return out;
    }
    if (s.step == 1 && s.settling) {
        // The window that ended huge mappings counted 2 MiB blocks, not
        // pages: the first touch anywhere in an unmapped large folio maps
        // all of it again, the probe's page too (measured on ext4, 6.18).
        // From now on every probe is a single page: the next cycle soon.
        s.settling = false;
        rest(s, now, popcount(s.first), probing);
        s.next_ns = std::max(now + kBusyRetryNs, s.paid_to_ns);
        return out;
    }
    if (s.step < 2) { // a window opens now
        if (s.step == 0) {
            s.presence_moved = false;
            s.cycle_ns = now;
        }
        s.step++;
        s.opened_ns = now;
        s.opened_cpu_ns = cpu_ns;
        s.next_ns = now + s.window_ns;
        return out;
    }
    // Window 2 closes. Probes placed or left out during the cycle count
    // only where both windows saw them usable.
    uint64_t both[kWords];
    for (size_t w = 0; w < kWords; w++) {
        s.first[w] &= use[w];
        s.touched[w] &= use[w];
        both[w] = s.first[w] & s.touched[w];
    }
    ProbeCounts c;
    c.probes = k;
    c.first = popcount(s.first);
    c.second = popcount(s.touched);
    c.both = popcount(both);
    c.first_runs = runs_among(s, s.first);
    c.second_runs = runs_among(s, s.touched);
    if (s.presence_moved) { // the region changed under the cycle: its counts say nothing
        rest(s, now, c.first + c.second, probing);
        return out;
    }
    out.judged = true;
    out.counts = c;
    out.first_ns = s.first_ns;
    out.second_ns = now - s.opened_ns;
    out.first_cpu_ns = s.first_cpu_ns;
    out.second_cpu_ns = cpu_ns - s.opened_cpu_ns;
    s.counts = c;
    out.reading = read_probes(c);
    // Too few touches while presence changed shortly before: the region
    // was being filled (probes behind the front see nothing), not touched
    // too slowly for the window.
    if (out.reading.change == WindowChange::longer && s.news_ns + kStillNs > s.cycle_ns)
        out.reading.change = WindowChange::keep;
    s.window_ns = std::clamp((uint64_t)((double)s.window_ns * window_scale(c, out.reading.change)), kMinWindowNs,
                             kMaxWindowNs);
    Verdict v = out.reading.verdict;
    if (v != Verdict::undecided) {
        s.votes = v == s.vote ? (uint8_t)std::min(s.votes + 1, 2) : 1;
        s.vote = v;
        if (s.votes >= 2 || out.reading.strong) out.agreed = v;
    }
    rest(s, now, c.first + c.second, probing);
    return out;
}

void probes_retire(ProbeSet &s) {
    s.retiring = true;
    s.next_ns = 0;
}

uint64_t probes_touches() { return g_touches.load(std::memory_order_relaxed); }
uint64_t probes_cycles() { return g_cycles.load(std::memory_order_relaxed); }

} // namespace spillway
