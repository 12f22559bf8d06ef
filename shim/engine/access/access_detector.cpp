// access_detector.cpp — see access_detector.h.
#include "access/access_detector.h"

#include "pagemap_walk.h"

#include <algorithm>
#include <unistd.h>

namespace spillway {

namespace {
inline bool bit(const uint64_t *bits, uint64_t i) { return (bits[i >> 6] >> (i & 63)) & 1; }

// PAGEMAP_SCAN (Linux 6.7): the kernel walks the page table and returns runs
// of present pages, ~100x cheaper than reading 8 bytes per page. Its ABI:
// pagemap_scan.h; the walk over its answer: pagemap_walk.h.
bool g_scan_unsupported = false;

// -errno when the ioctl fails (pagemap::scan_missing: a kernel before 6.7).
long presence_by_scan(int fd, uintptr_t start, uint64_t pages, PageRun *runs, size_t cap,
                      bool *overflow) {
    pagemap::PageRegion vec[64];
    pagemap::ScanRequest request;
    request.start = start;
    request.end = start + pages * 4096;
    request.category_mask = pagemap::kPageIsPresent;
    request.return_mask = pagemap::kPageIsPresent;
    size_t n = 0;
    int walked = pagemap::walk_runs(fd, request, vec, 64, [&](const pagemap::PageRegion &run) {
        uint64_t first = (run.start - start) / 4096, count = pagemap::run_pages(run);
        if (n && runs[n - 1].first + runs[n - 1].count == first) { // split at a VMA edge
            runs[n - 1].count += count;
            return true;
        }
        if (n == cap) {
            *overflow = true;
            return false;
        }
        runs[n++] = {first, count};
        return true;
    });
    return walked < 0 ? walked : (long)n;
}

long presence_by_read(int fd, uintptr_t start, uint64_t pages, PageRun *runs, size_t cap,
                      bool *overflow) {
    uint64_t entries[512];
    size_t n = 0;
    bool open_run = false;
    for (uint64_t done = 0; done < pages;) {
        uint64_t want = pages - done < 512 ? pages - done : 512;
        ssize_t got = pread(fd, entries, want * 8, (off_t)((start / 4096 + done) * 8));
        if (got <= 0) return -1;
        uint64_t k = (uint64_t)got / 8;
        for (uint64_t i = 0; i < k; i++) {
            bool present = (entries[i] >> 63) & 1;
            if (present && open_run) runs[n - 1].count++;
            else if (present) {
                if (n == cap) {
                    *overflow = true;
                    return (long)n;
                }
                runs[n++] = {done + i, 1};
            }
            open_run = present;
        }
        done += k;
    }
    return (long)n;
}
} // namespace

TickEvidence compare_presence(uint64_t *bits, uint64_t pages, const PageRun *runs, size_t n_runs,
                              bool overflow) {
    TickEvidence e;
    e.overflow = overflow;
    // Within one present run, new pages separated only by pages that were
    // already present are one island: a stream passing over pages left
    // mapped by an earlier phase is still one stream.
    for (size_t r = 0; r < n_runs; r++) {
        uint64_t first = runs[r].first, end = first + runs[r].count;
        if (end > pages) end = pages;
        uint64_t fresh = 0, lo = 0, hi = 0;
        for (uint64_t i = first; i < end; i++) {
            if (bits && (i & 63) == 0 && i + 64 <= end && bits[i >> 6] == ~0ull) {
                i += 63; // 64 pages known present: the common case, one compare
                continue;
            }
            if (bits && bit(bits, i)) continue;
            if (!fresh) lo = i;
            hi = i + 1;
            fresh++;
        }
        if (!fresh) continue;
        if (e.new_islands < TickEvidence::kListedIslands) {
            e.island_start[e.new_islands] = lo;
            e.island_end[e.new_islands] = hi;
        }
        e.new_pages += fresh;
        e.new_islands++;
        if (fresh > e.longest_new) {
            e.longest_new = fresh;
            e.longest_start = lo;
            e.longest_end = hi;
            e.longest_run_start = first;
            e.longest_run_end = end;
        }
    }
    if (bits) {
        // With an overflowing list, only the listed prefix is known: the
        // rest of the bitmap keeps the last tick's knowledge.
        uint64_t known = overflow && n_runs ? runs[n_runs - 1].first + runs[n_runs - 1].count : pages;
        if (known > pages) known = pages;
        for (uint64_t i = 0; i < known;) {
            if ((i & 63) == 0 && i + 64 <= known) {
                bits[i >> 6] = 0;
                i += 64;
            } else {
                bits[i >> 6] &= ~(1ull << (i & 63));
                i++;
            }
        }
        for (size_t r = 0; r < n_runs; r++) {
            uint64_t first = runs[r].first, end = first + runs[r].count;
            if (end > pages) end = pages;
            for (uint64_t i = first; i < end;) {
                if ((i & 63) == 0 && i + 64 <= end) {
                    bits[i >> 6] = ~0ull;
                    i += 64;
                } else {
                    bits[i >> 6] |= 1ull << (i & 63);
                    i++;
                }
            }
        }
    }
    return e;
}

Verdict classify_tick(const TickEvidence &e) {
    if (e.new_pages == 0) return Verdict::undecided;
    bool many_short = e.new_islands >= kRandomMinIslands && e.new_pages <= e.new_islands * kIslandMaxPages;
    // A stream's run dominates what appeared; a few stray faults beside it
    // (another thread, a header page) do not make it random. But a run that
    // is exactly one aligned 2 MiB block is what one fault maps of a cached
    // 2 MiB folio (a huge page-table entry): no run at all. A random gather
    // right after a 4 GiB fill at read_ahead_kb 8192 met a few such blocks
    // in one look, was called a stream, and its faults read 12 MiB windows
    // under MADV_SEQUENTIAL (measured, tests/bench/phases.sh). A real stream
    // through such folios continues its run at the next look (continues_run).
    // (An aligned block of 4 KiB mappings is a reader's own run: a
    // DataLoader's 2 MiB sample read page by page.)
    if (!e.longest_huge_folio && e.longest_new >= kStreamMinPages && e.longest_new * 2 >= e.new_pages)
        return Verdict::sequential;
    if (many_short) return Verdict::random;
    // Islands a fault maps whole (large folios read ahead under other
    // advice) are bigger, but still many with none dominating.
    if (e.new_islands >= 2 * kRandomMinIslands && e.longest_new * 4 < e.new_pages) return Verdict::random;
    return Verdict::undecided;
}

void scatter_reset(ScatterTally &s) { s = ScatterTally(); }

Verdict scatter_tally(ScatterTally &s, const TickEvidence &e, uint64_t now_ns) {
    if (e.new_pages == 0) return Verdict::undecided; // nothing seen: the tally waits
    constexpr uint64_t kSlack = 16, kGapMax = kStreamMinPages; // as reaches_from
    // Only short islands are a slow scatter's: anything else (islands
    // beyond the listed ones, bigger than a fault maps) starts over.
    if (e.overflow || e.new_islands > TickEvidence::kListedIslands ||
        e.new_pages > e.new_islands * kIslandMaxPages) {
        scatter_reset(s);
        return Verdict::undecided;
    }
    if (s.islands && now_ns - s.since_ns > kScatterSpanNs) s.islands = 0; // too old (the ends still tell steps)
    for (uint64_t i = 0; i < e.new_islands; i++) {
        uint64_t lo = e.island_start[i], hi = e.island_end[i];
        // The next step of a slow stream: lo just after an island's end,
        // or, for a reader moving down (continues_backward), hi just
        // before an island's start. Counted as a scatter, a list freed
        // last to first taught its call site "random" (the epochs job:
        // the sampler's list of indices, promoted to a 183 MiB memfd in
        // every later epoch).
        bool step = false;
        for (size_t k = 0; k < s.n_ends && !step; k++)
            step = (lo + kSlack >= s.ends[k] && lo <= s.ends[k] + kGapMax) ||
                   (hi <= s.starts[k] + kSlack && hi + kGapMax >= s.starts[k]);
        if (!step) {
            if (!s.islands) s.since_ns = now_ns;
            s.islands++;
        }
        s.ends[s.next_end] = hi;
        s.starts[s.next_end] = lo;
        s.next_end = (s.next_end + 1) % TickEvidence::kListedIslands;
        if (s.n_ends < TickEvidence::kListedIslands) s.n_ends++;
    }
    return s.islands >= kRandomMinIslands ? Verdict::random : Verdict::undecided;
}

Verdict classify_first_look(const TickEvidence &e) {
    if (e.new_islands < kFirstLookMinIslands) return Verdict::undecided;
    if (e.new_pages > e.new_islands * kIslandMaxPages) return Verdict::undecided;
    return e.longest_new * 4 < e.new_pages ? Verdict::random : Verdict::undecided;
}

bool clustered_islands(const TickEvidence &e, uint64_t readahead_pages) {
    // A cached 2 MiB folio mapped whole by one fault says nothing of how
    // much the reader reads (classify_tick): such islands are left out.
    // Counted in, a gather right after a fill at read_ahead_kb 8192 looked
    // clustered, went to MADV_SEQUENTIAL, and read 307 MiB for 15,246
    // faults (tests/bench/phases.sh).
    uint64_t huge = std::min(e.huge_folio_islands, e.new_islands);
    uint64_t islands = e.new_islands - huge;
    uint64_t pages = e.new_pages > huge * kFolioBlockPages ? e.new_pages - huge * kFolioBlockPages : 0;
    if (!islands) return false;
    uint64_t need = std::max<uint64_t>(kClusterMinPages, readahead_pages / 16);
    return pages / islands >= need;
}

bool reaches_from(const TickEvidence &e, uint64_t last_front) {
    constexpr uint64_t kSlack = 16;       // fault-around: a fault maps its aligned 64 KiB
    constexpr uint64_t kGapMax = kStreamMinPages; // pages passed and since unmapped by reclaim
    // At most a PMD folio's worth of present pages bridged: a slow random
    // reader in a region left mostly mapped must not pass for a stream.
    constexpr uint64_t kBridgeMax = 512;
    if (!e.new_pages || last_front == 0 || e.longest_start + kSlack < last_front) return false;
    if (e.longest_start <= last_front + kGapMax) return true;
    return e.longest_run_start <= last_front && e.longest_start <= last_front + kBridgeMax;
}

bool continues_run(const TickEvidence &e, uint64_t last_front) {
    if (e.longest_new < 2 || e.longest_new * 2 < e.new_pages) return false;
    return reaches_from(e, last_front);
}

bool continues_backward(const TickEvidence &e, uint64_t last_start, uint64_t read_down_to) {
    constexpr uint64_t kSlack = 16; // fault-around: a fault maps its aligned 64 KiB
    constexpr uint64_t kBridgeMax = 512; // as reaches_from: at most a PMD folio of present pages
    if (e.longest_new < kBackwardMinPages || e.longest_new * 2 < e.new_pages || last_start == 0) return false;
    if (e.longest_huge_folio) return false; // one fault on a cached 2 MiB folio: no run
    if (e.longest_start >= last_start || e.longest_end > last_start + kSlack) return false;
    if (e.longest_end + kStreamMinPages >= last_start) return true;
    if (read_down_to != UINT64_MAX && e.longest_end + kSlack >= read_down_to) return true;
    // Pages between its end and last_start present already (a pool's
    // header page, touched first, or what fault-around mapped): one run.
    return e.longest_run_end >= last_start && e.longest_end + kBridgeMax >= last_start;
}

bool fill_moved_on(const TickEvidence &e, uint64_t front, uint64_t seen_to, uint64_t max_jump) {
    if (!e.new_pages || e.new_islands != 1 || front == 0 || front + kFillEdgePages < seen_to) return false;
    return e.longest_start >= seen_to && e.longest_start - seen_to <= max_jump;
}

bool stream_stopped(uint64_t idle_ns, uint64_t last_run, uint64_t pages_per_s) {
    if (idle_ns < kStreamStopNs) return false;
    if (!pages_per_s) return true;
    // Capped at 10 s: a stream that slow is better read a page at a time.
    double needed_ns = std::min(2.0 * (double)last_run * 1e9 / (double)pages_per_s, 10e9);
    return (double)idle_ns >= needed_ns;
}

uint64_t prefetch_lead_pages(uint64_t pages_per_s, uint64_t lead_ns, uint64_t min_pages,
                             uint64_t max_pages) {
    uint64_t lead = (uint64_t)((double)pages_per_s * (double)lead_ns / 1e9);
    if (lead < min_pages) lead = min_pages;
    if (lead > max_pages) lead = max_pages;
    return lead;
}

bool left_at_end(uint64_t front, uint64_t pages, unsigned idle_looks, unsigned needed) {
    return pages > 0 && front >= pages && idle_looks >= needed;
}

uint64_t full_look_period(uint64_t period, uint64_t demoted_period, bool demoted, bool busy,
                          bool chain_may_begin) {
    return demoted && !busy && !chain_may_begin ? demoted_period : period;
}

bool pages_out_behind(bool chained, uint64_t region_bytes, uint64_t page_cache_room) {
    return chained || region_bytes > page_cache_room;
}

uint64_t pass_tail_kept(bool chained, uint64_t region_bytes, uint64_t page_cache_room) {
    return chained || region_bytes <= page_cache_room ? 0 : page_cache_room;
}

bool random_keeps_recency(bool inherited, uint64_t region_bytes, uint64_t page_cache_room) {
    return inherited && region_bytes <= page_cache_room / 2;
}

long read_presence(int pagemap_fd, uintptr_t start, uint64_t pages, PageRun *runs, size_t cap,
                   bool *overflow) {
    *overflow = false;
    if (pagemap_fd < 0) return -1;
    if (!g_scan_unsupported) {
        long n = presence_by_scan(pagemap_fd, start, pages, runs, cap, overflow);
        if (n >= 0) return n;
        if (!pagemap::scan_missing((int)n)) return -1;
        g_scan_unsupported = true;
        *overflow = false;
    }
    return presence_by_read(pagemap_fd, start, pages, runs, cap, overflow);
}

int page_mapping(int pagemap_fd, uintptr_t addr) {
    if (pagemap_fd < 0) return -1;
    addr &= ~uintptr_t(4095);
    if (!g_scan_unsupported) {
        pagemap::PageRegion vec[1];
        pagemap::ScanRequest request;
        request.start = addr;
        request.end = addr + 4096;
        request.category_mask = pagemap::kPageIsPresent;
        request.return_mask = pagemap::kPageIsPresent | pagemap::kPageIsHuge;
        int mapping = 0; // no run: the page is not present
        int walked = pagemap::walk_runs(pagemap_fd, request, vec, 1, [&](const pagemap::PageRegion &run) {
            mapping = kPageMapped | ((run.categories & pagemap::kPageIsHuge) ? kPageHuge : 0);
            return false;
        });
        if (walked == 0) return mapping;
        if (!pagemap::scan_missing(walked)) return -1;
        g_scan_unsupported = true;
    }
    uint64_t entry = 0;
    if (pread(pagemap_fd, &entry, 8, (off_t)(addr / 4096 * 8)) != 8) return -1;
    return (entry >> 63) & 1 ? kPageMapped : 0;
}

namespace {
bool aligned_block(uint64_t lo, uint64_t hi) { return lo % kFolioBlockPages == 0 && hi - lo == kFolioBlockPages; }

bool mapped_huge(int pagemap_fd, uintptr_t region_start, uint64_t page) {
    int m = page_mapping(pagemap_fd, region_start + page * 4096);
    return m > 0 && (m & kPageHuge);
}
} // namespace

void note_huge_folios(TickEvidence &e, int pagemap_fd, uintptr_t region_start, uint64_t span_lo) {
    e.huge_folio_islands = 0;
    e.longest_huge_folio = false;
    if (!e.new_pages) return;
    size_t listed = (size_t)std::min<uint64_t>(e.new_islands, TickEvidence::kListedIslands);
    for (size_t i = 0; i < listed; i++) {
        uint64_t lo = e.island_start[i] + span_lo, hi = e.island_end[i] + span_lo;
        if (aligned_block(lo, hi) && mapped_huge(pagemap_fd, region_start, lo)) e.huge_folio_islands++;
    }
    // longest_* are the region's page indexes already (the caller added span_lo).
    e.longest_huge_folio = e.longest_new == kFolioBlockPages && aligned_block(e.longest_start, e.longest_end) &&
                           mapped_huge(pagemap_fd, region_start, e.longest_start);
}

} // namespace spillway
