// test_access_detector.cpp — the detector's pure rules: presence compared
// tick to tick, the verdict (a cached 2 MiB folio mapped whole is one fault,
// not a run or a cluster), stream continuation, the read-ahead lead, when
// a re-read has left its region, what a pass keeps cached, and reading
// presence from this process's own page table.
#include "access/access_detector.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {
std::vector<uint64_t> bitmap(uint64_t pages) { return std::vector<uint64_t>((pages + 63) / 64, 0); }

// What a look at `after` finds new in a region of `pages` whose last look saw `before`.
template <size_t B, size_t A>
TickEvidence news(uint64_t pages, const PageRun (&before)[B], const PageRun (&after)[A]) {
    auto bits = bitmap(pages);
    compare_presence(bits.data(), pages, before, B, false);
    return compare_presence(bits.data(), pages, after, A, false);
}
} // namespace

TEST_CASE("one growing run is one new island at the front") {
    auto bits = bitmap(4096);
    PageRun first[] = {{0, 100}};
    compare_presence(bits.data(), 4096, first, 1, false);
    PageRun grown[] = {{0, 400}};
    TickEvidence e = compare_presence(bits.data(), 4096, grown, 1, false);
    CHECK(e.new_pages == 300);
    CHECK(e.new_islands == 1);
    CHECK(e.longest_new == 300);
    CHECK(e.longest_start == 100);
    CHECK(e.longest_end == 400);
    CHECK(classify_tick(e) == Verdict::sequential);
    CHECK(continues_run(e, 100));
    CHECK_FALSE(continues_run(e, 2000));
}

TEST_CASE("scattered faults are many short islands: random") {
    auto bits = bitmap(1 << 16);
    std::vector<PageRun> runs;
    for (uint64_t i = 0; i < 40; i++) runs.push_back({i * 1000 + 7, 1 + i % 16}); // fault-around <= 16
    TickEvidence e = compare_presence(bits.data(), 1 << 16, runs.data(), runs.size(), false);
    CHECK(e.new_islands == 40);
    CHECK(classify_tick(e) == Verdict::random);
    // The same presence again: nothing new, no verdict.
    TickEvidence again = compare_presence(bits.data(), 1 << 16, runs.data(), runs.size(), false);
    CHECK(again.new_pages == 0);
    CHECK(classify_tick(again) == Verdict::undecided);
}

TEST_CASE("islands mapped whole as large folios are still random when none dominates") {
    auto bits = bitmap(1 << 18);
    std::vector<PageRun> runs;
    for (uint64_t i = 0; i < 12; i++) runs.push_back({i * 20000, 512}); // 2 MiB folios
    TickEvidence e = compare_presence(bits.data(), 1 << 18, runs.data(), runs.size(), false);
    CHECK(classify_tick(e) == Verdict::random);
}

TEST_CASE("one cached 2 MiB folio mapped whole by a fault is no stream and no cluster; read page by page it is a run") {
    // A random gather's look: three faults, one of them on a cached 2 MiB
    // folio (an aligned block of 512 pages, mapped by one huge entry).
    auto bits = bitmap(1 << 18);
    PageRun gather[] = {{1000, 1}, {512 * 40, 512}, {200000, 13}};
    TickEvidence e = compare_presence(bits.data(), 1 << 18, gather, 3, false);
    REQUIRE(e.longest_new == 512);
    TickEvidence huge = e;
    huge.longest_huge_folio = true; // as note_huge_folios finds it
    huge.huge_folio_islands = 1;
    CHECK(classify_tick(huge) == Verdict::undecided);
    // The same block mapped page by page is a reader's own run (a 2 MiB
    // sample read whole).
    CHECK(classify_tick(e) == Verdict::sequential);
    // Islands of whole cached folios are no cluster; the same islands read
    // page by page are (an 8 MiB window: 128 pages an island suffice).
    auto bits2 = bitmap(1 << 18);
    PageRun folios[] = {{512 * 10, 512}, {512 * 90, 512}, {512 * 300, 512}};
    TickEvidence c = compare_presence(bits2.data(), 1 << 18, folios, 3, false);
    CHECK(clustered_islands(c, 2048));
    c.huge_folio_islands = 3;
    CHECK_FALSE(clustered_islands(c, 2048));
    c.huge_folio_islands = 2; // one read page by page still makes a cluster
    CHECK(clustered_islands(c, 2048));
}

TEST_CASE("note_huge_folios tells a block mapped by one huge entry from one mapped page by page") {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const uint64_t pages = 2048, window = 1536; // 8 MiB, to find a 2 MiB-aligned start of 6 MiB in it
    char *raw = (char *)mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(raw != MAP_FAILED);
    char *p = (char *)(((uintptr_t)raw + (2u << 20) - 1) & ~uintptr_t((2u << 20) - 1));
    REQUIRE(madvise(p, 4u << 20, MADV_NOHUGEPAGE) == 0); // blocks 0 and 1
    auto bits = bitmap(window);
    // A look: what became present since the last one, as the sampler sees it.
    auto look = [&] {
        PageRun runs[8];
        bool overflow = false;
        long n = read_presence(fd, (uintptr_t)p, window, runs, 8, &overflow);
        REQUIRE(n >= 0);
        TickEvidence e = compare_presence(bits.data(), window, runs, (size_t)n, overflow);
        note_huge_folios(e, fd, (uintptr_t)p, 0);
        return e;
    };
    look(); // what is there is old news
    for (uint64_t i = 512; i < 1024; i++) p[i * 4096] = 1; // block 1, page by page
    TickEvidence e = look();
    REQUIRE(e.new_pages == 512);
    REQUIRE(e.longest_start == 512);
    REQUIRE(e.longest_end == 1024);
    CHECK(e.huge_folio_islands == 0);
    CHECK_FALSE(e.longest_huge_folio);
    CHECK(classify_tick(e) == Verdict::sequential);
    // Block 2 as one huge page (anonymous THP here, as a cached file folio
    // maps): one store maps all 512 pages.
    char *q = p + (4u << 20);
    REQUIRE(madvise(q, 2u << 20, MADV_HUGEPAGE) == 0);
    q[100] = 1;
    if (page_mapping(fd, (uintptr_t)q) == (kPageMapped | kPageHuge)) {
        TickEvidence h = look(); // block 1 is old news
        REQUIRE(h.new_pages == 512);
        REQUIRE(h.longest_start == 1024);
        CHECK(h.huge_folio_islands == 1);
        CHECK(h.longest_huge_folio);
        CHECK(classify_tick(h) == Verdict::undecided);
    } else {
        WARN("no huge mapping here (THP off, or no PAGEMAP_SCAN before Linux 6.7): the huge case is not checked");
    }
    munmap(raw, pages * 4096);
    close(fd);
}

TEST_CASE("a stream with a few stray faults beside it stays sequential") {
    auto bits = bitmap(1 << 16);
    PageRun runs[] = {{10, 3}, {500, 2000}, {9000, 1}};
    TickEvidence e = compare_presence(bits.data(), 1 << 16, runs, 3, false);
    CHECK(e.new_islands == 3);
    CHECK(classify_tick(e) == Verdict::sequential);
}

TEST_CASE("too little evidence is undecided") {
    auto bits = bitmap(4096);
    PageRun runs[] = {{10, 3}, {90, 5}};
    CHECK(classify_tick(compare_presence(bits.data(), 4096, runs, 2, false)) == Verdict::undecided);
}

TEST_CASE("scattered faults too slow for one look are judged over several") {
    // Three one-page islands a look (a random reader whose faults each wait
    // ~30 ms on a busy disk, looked at every 100 ms): classify_tick never
    // judges one look; the tally does by the second.
    const uint64_t pages = 1 << 17;
    auto bits = bitmap(pages);
    ScatterTally tally;
    std::vector<PageRun> runs;
    uint64_t now = 1'000'000'000;
    for (int look = 0; look < 2; look++) {
        for (uint64_t i = 0; i < 3; i++) runs.push_back({(look * 3 + i) * 9973 + 17, 1});
        std::sort(runs.begin(), runs.end(), [](PageRun a, PageRun b) { return a.first < b.first; });
        TickEvidence e = compare_presence(bits.data(), pages, runs.data(), runs.size(), false);
        CHECK(e.new_islands == 3);
        CHECK(classify_tick(e) == Verdict::undecided);
        CHECK(scatter_tally(tally, e, now) == (look == 0 ? Verdict::undecided : Verdict::random));
        now += 100'000'000;
    }
    CHECK(tally.islands == 6);
    // Looks with nothing new keep the tally; a look with a big island (a
    // stream's run, a folio mapped whole) starts it over.
    scatter_reset(tally);
    TickEvidence one;
    one.new_pages = one.new_islands = 1;
    one.island_start[0] = 500;
    one.island_end[0] = 501;
    CHECK(scatter_tally(tally, one, now) == Verdict::undecided);
    CHECK(scatter_tally(tally, TickEvidence(), now) == Verdict::undecided);
    CHECK(tally.islands == 1);
    TickEvidence big;
    big.new_pages = 512;
    big.new_islands = 1;
    big.island_start[0] = 4096;
    big.island_end[0] = 4608;
    CHECK(scatter_tally(tally, big, now) == Verdict::undecided);
    CHECK(tally.islands == 0);
}

TEST_CASE("the tally forgets islands older than its span") {
    ScatterTally tally;
    auto at = [](uint64_t page) {
        TickEvidence e;
        e.new_pages = 2;
        e.new_islands = 2;
        e.island_start[0] = page, e.island_end[0] = page + 1;
        e.island_start[1] = page + 30000, e.island_end[1] = page + 30001;
        return e;
    };
    CHECK(scatter_tally(tally, at(1000), 0) == Verdict::undecided);
    CHECK(scatter_tally(tally, at(5000), kScatterSpanNs + 1) == Verdict::undecided); // two, not four
    CHECK(scatter_tally(tally, at(9000), kScatterSpanNs + 2) == Verdict::random);
}

TEST_CASE("slow streams side by side are never a scatter") {
    // Three readers in order, each 1-2 pages further every look (4 KiB
    // faults on a busy disk): every island starts where one ended.
    const uint64_t pages = 1 << 17;
    auto bits = bitmap(pages);
    ScatterTally tally;
    uint64_t front[3] = {1000, 40000, 90000};
    PageRun runs[3];
    for (int i = 0; i < 3; i++) runs[i] = {front[i], 1};
    TickEvidence first = compare_presence(bits.data(), pages, runs, 3, false);
    scatter_tally(tally, first, 0); // the first look: three islands nobody continued
    for (int look = 1; look < 40; look++) {
        for (int i = 0; i < 3; i++) runs[i].count += 1 + (look + i) % 2;
        TickEvidence e = compare_presence(bits.data(), pages, runs, 3, false);
        CHECK(e.new_islands == 3);
        CHECK(scatter_tally(tally, e, look * 100'000'000ull) == Verdict::undecided);
    }
    CHECK(tally.islands <= 3);
}

TEST_CASE("slow readers moving down are never a scatter either") {
    // Two readers moving down 16 pages a look (CPython freeing two lists
    // last to first on a busy disk): every island ends where one began.
    // Before the tally knew them, four such looks made a call site random.
    const uint64_t pages = 1 << 17;
    auto bits = bitmap(pages);
    ScatterTally tally;
    uint64_t top[2] = {60000, 120000};
    PageRun runs[2];
    for (int i = 0; i < 2; i++) runs[i] = {top[i] - 16, 16};
    scatter_tally(tally, compare_presence(bits.data(), pages, runs, 2, false), 0);
    for (int look = 1; look < 40; look++) {
        for (int i = 0; i < 2; i++) runs[i] = {runs[i].first - 16, runs[i].count + 16};
        TickEvidence e = compare_presence(bits.data(), pages, runs, 2, false);
        CHECK(e.new_islands == 2);
        CHECK(scatter_tally(tally, e, look * 20'000'000ull) == Verdict::undecided);
    }
    CHECK(tally.islands <= 2);
    // The same islands in no order are a scatter.
    ScatterTally other;
    auto fresh = bitmap(pages);
    Verdict v = Verdict::undecided;
    for (int look = 0; look < 8 && v == Verdict::undecided; look++) {
        PageRun one[] = {{(uint64_t)(look * 7919 % 100) * 1000 + 5, 16}};
        v = scatter_tally(other, compare_presence(fresh.data(), pages, one, 1, false), look * 20'000'000ull);
    }
    CHECK(v == Verdict::random);
}

TEST_CASE("a slow stream continues its run from the last front") {
    auto bits = bitmap(4096);
    PageRun before[] = {{0, 200}};
    compare_presence(bits.data(), 4096, before, 1, false);
    PageRun after[] = {{0, 210}}; // 10 pages in a tick: below the first-sight threshold
    TickEvidence e = compare_presence(bits.data(), 4096, after, 1, false);
    CHECK(classify_tick(e) == Verdict::undecided);
    CHECK(continues_run(e, 200));
}

TEST_CASE("a reader moving down continues backward from the last run's start; others do not") {
    // Last look: [3000, 4000) new over nothing; now [2000, 3000) new below it
    // (CPython freeing a list's items last to first).
    const PageRun before[] = {{3000, 1000}};
    const PageRun after[] = {{2000, 2000}};
    TickEvidence e = news(8192, before, after);
    REQUIRE(e.new_islands == 1);
    CHECK(e.longest_start == 2000);
    CHECK(e.longest_end == 3000);
    CHECK(continues_backward(e, 3000));
    CHECK_FALSE(continues_backward(e, 0));        // no run at the last look
    CHECK_FALSE(continues_backward(e, 5000));     // the last run began far above
    CHECK_FALSE(continues_backward(e, 2000));     // not below where it began
    // The new run may end up to fault-around's 16 pages above the last
    // run's start, and up to kStreamMinPages below it (pages passed and
    // unmapped since).
    CHECK(continues_backward(e, 3000 - 16));
    CHECK_FALSE(continues_backward(e, 3000 - 17));
    CHECK(continues_backward(e, 3000 + kStreamMinPages));
    // Further below, only over pages present since the last look (one
    // present run up to it), at most a 2 MiB folio's 512 pages.
    CHECK(continues_backward(e, 3000 + 512));
    CHECK_FALSE(continues_backward(e, 3000 + 513));
    // Absent pages between: no run, unless the stream was read ahead down
    // past the new pages (a freed arena's pages dropped behind the reader).
    const PageRun gap_after[] = {{2000, 900}, {3100, 900}};
    TickEvidence g = news(8192, before, gap_after);
    REQUIRE(g.longest_start == 2000);
    REQUIRE(g.longest_end == 2900);
    CHECK_FALSE(continues_backward(g, 3000));
    CHECK(continues_backward(g, 3000, 2000));
    CHECK(continues_backward(g, 3000, 2900 + 16));
    CHECK_FALSE(continues_backward(g, 3000, 2900 + 17)); // the reader is below what was read
    // A forward stream's next run is no backward one.
    const PageRun fwd_after[] = {{3000, 2000}};
    TickEvidence f = news(8192, before, fwd_after);
    CHECK(f.longest_start == 4000);
    CHECK_FALSE(continues_backward(f, 3000));
    // Too short a run, or one beside much scattered news: no stream.
    const PageRun short_after[] = {{2980, 1020}};
    CHECK_FALSE(continues_backward(news(8192, before, short_after), 3000));
    const PageRun noisy_after[] = {{100, 40}, {300, 40}, {500, 40}, {2960, 1040}};
    CHECK_FALSE(continues_backward(news(8192, before, noisy_after), 3000));
}

TEST_CASE("a fill whose newest pages were unmapped since the last look moved on; other news past a gap did not") {
    const PageRun before[] = {{0, 10000}};
    // The pacer unmapped [4096, 20000) (the fill's pages since the last look
    // among them); the fill has mapped [20000, 20512) since.
    const PageRun after[] = {{0, 4096}, {20000, 512}};
    TickEvidence e = news(65536, before, after);
    REQUIRE(e.new_islands == 1);
    CHECK(e.longest_start == 20000);
    CHECK_FALSE(continues_run(e, 10000)); // a gap of 10,000 pages: not a run from the front
    CHECK(fill_moved_on(e, 10000, 10000, 16384));
    CHECK_FALSE(fill_moved_on(e, 10000, 10000, 8192));  // further than the jump allowed
    CHECK_FALSE(fill_moved_on(e, 1000, 10000, 16384));  // the stream is a re-read far behind the written edge
    CHECK_FALSE(fill_moved_on(e, 10000, 30000, 16384)); // the news lies inside what was seen before
    // Two islands past the edge: a scatter, not a fill.
    const PageRun scattered[] = {{0, 10000}, {20000, 8}, {30000, 8}};
    CHECK_FALSE(fill_moved_on(news(65536, before, scattered), 10000, 10000, 65536));
}

TEST_CASE("an overflowing run list keeps what it did not see") {
    auto bits = bitmap(1024);
    PageRun all[] = {{0, 10}, {900, 10}};
    compare_presence(bits.data(), 1024, all, 2, false);
    PageRun prefix[] = {{0, 10}};
    TickEvidence e = compare_presence(bits.data(), 1024, prefix, 1, true);
    CHECK(e.new_pages == 0);
    PageRun again[] = {{0, 10}, {900, 10}};
    CHECK(compare_presence(bits.data(), 1024, again, 2, false).new_pages == 0); // 900.. still known
}

TEST_CASE("contiguous slices read in random order are clustered; scattered faults never are") {
    auto bits = bitmap(1 << 18);
    std::vector<PageRun> slices; // a DataLoader worker's shuffled 1 MiB batches
    for (uint64_t i = 0; i < 5; i++) slices.push_back({i * 40000 + 1000, 256});
    TickEvidence e = compare_presence(bits.data(), 1 << 18, slices.data(), slices.size(), false);
    CHECK(clustered_islands(e, 2048)); // an 8 MiB window: islands of 128 pages or more
    CHECK(clustered_islands(e, 0));    // window unknown: kClusterMinPages
    CHECK_FALSE(clustered_islands(e, 8192)); // a 32 MiB window: 1 MiB is too little of it
    auto bits2 = bitmap(1 << 18);
    std::vector<PageRun> faults; // random faults map at most fault-around, 16 pages
    for (uint64_t i = 0; i < 40; i++) faults.push_back({i * 5000 + 3, 16});
    TickEvidence f = compare_presence(bits2.data(), 1 << 18, faults.data(), faults.size(), false);
    CHECK_FALSE(clustered_islands(f, 0));
    CHECK_FALSE(clustered_islands(f, 32));
    TickEvidence none;
    CHECK_FALSE(clustered_islands(none, 0));
}

TEST_CASE("the read-ahead lead follows the rate within its bounds") {
    CHECK(prefetch_lead_pages(0, 80'000'000, 2048, 65536) == 2048);
    CHECK(prefetch_lead_pages(100000, 80'000'000, 2048, 65536) == 8000);
    CHECK(prefetch_lead_pages(10'000'000, 80'000'000, 2048, 65536) == 65536);
}

TEST_CASE("presence is read from this process's page table") {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const uint64_t pages = 256;
    char *p = (char *)mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE((void *)p != MAP_FAILED); // (void *): Catch2 would print a char * as a string
    madvise(p, pages * 4096, MADV_NOHUGEPAGE);
    for (uint64_t i = 10; i < 20; i++) p[i * 4096] = 1;
    p[100 * 4096] = 1;
    PageRun runs[8];
    bool overflow = true;
    long n = read_presence(fd, (uintptr_t)p, pages, runs, 8, &overflow);
    REQUIRE(n == 2);
    CHECK_FALSE(overflow);
    CHECK(runs[0].first == 10);
    CHECK(runs[0].count == 10);
    CHECK(runs[1].first == 100);
    CHECK(runs[1].count == 1);
    n = read_presence(fd, (uintptr_t)p, pages, runs, 1, &overflow);
    CHECK(n == 1);
    CHECK(overflow);
    munmap(p, pages * 4096);
    close(fd);
}

TEST_CASE("a stream over pages left present by an earlier phase is one island") {
    auto bits = bitmap(4096);
    PageRun old[] = {{120, 2}, {300, 5}, {333, 1}};
    compare_presence(bits.data(), 4096, old, 3, false);
    PageRun now[] = {{100, 400}};
    TickEvidence e = compare_presence(bits.data(), 4096, now, 1, false);
    CHECK(e.new_islands == 1);
    CHECK(e.new_pages == 400 - 8);
    CHECK(e.longest_start == 100);
    CHECK(e.longest_end == 500);
    CHECK(classify_tick(e) == Verdict::sequential);
}

TEST_CASE("a fresh region's first look: many short islands are random, one run or a full region says nothing") {
    auto bits = bitmap(32768);
    std::vector<PageRun> runs; // python_sites: 20000 random writes into 128 MiB, seen all at once
    for (uint64_t i = 0; i < 3000; i++) runs.push_back({i * 10 + i % 3, 1 + i % 4});
    TickEvidence scatter = compare_presence(bits.data(), 32768, runs.data(), runs.size(), false);
    CHECK(classify_first_look(scatter) == Verdict::random);
    auto fill = bitmap(32768);
    PageRun prefix[] = {{0, 12000}}; // a pass in order, part way
    CHECK(classify_first_look(compare_presence(fill.data(), 32768, prefix, 1, false)) == Verdict::undecided);
    auto whole = bitmap(32768);
    PageRun all[] = {{0, 32768}}; // in order or a scatter that covered it: the same
    CHECK(classify_first_look(compare_presence(whole.data(), 32768, all, 1, false)) == Verdict::undecided);
    auto threads = bitmap(32768);
    std::vector<PageRun> fronts; // eight threads filling their slices
    for (uint64_t i = 0; i < 8; i++) fronts.push_back({i * 4096, 1500});
    CHECK(classify_first_look(compare_presence(threads.data(), 32768, fronts.data(), 8, false)) ==
          Verdict::undecided);
    auto few = bitmap(32768);
    std::vector<PageRun> stray; // a few stray pages: too little to say
    for (uint64_t i = 0; i < 40; i++) stray.push_back({i * 700, 1});
    CHECK(classify_first_look(compare_presence(few.data(), 32768, stray.data(), stray.size(), false)) ==
          Verdict::undecided);
}

TEST_CASE("a re-read has left its region once its front reached the end and stayed there for the looks asked") {
    CHECK(left_at_end(16384, 16384, 2, 2));
    CHECK(left_at_end(16384, 16384, 5, 2));
    CHECK_FALSE(left_at_end(16384, 16384, 1, 2)); // one quiet look: it may still be reading its last pages
    CHECK_FALSE(left_at_end(16383, 16384, 9, 2)); // stopped short of the end: not on to the next buffer
    CHECK_FALSE(left_at_end(0, 0, 9, 2));
}

TEST_CASE("a demoted region is looked at on the usual period while busy or where a chain may begin") {
    const uint64_t period = 100, demoted = 1000;
    CHECK(full_look_period(period, demoted, false, false, false) == period);
    CHECK(full_look_period(period, demoted, true, false, false) == demoted); // quiet: its walk is costly
    CHECK(full_look_period(period, demoted, true, true, false) == period);
    // A reader faulting page by page on a busy disk is not "busy": its
    // stream must still be seen within the chain's window of the leaving.
    CHECK(full_look_period(period, demoted, true, false, true) == period);
    CHECK(full_look_period(period, demoted, false, false, true) == period);
}

TEST_CASE("a slow stream that crossed pages already mapped still continues its run") {
    // coo_tocsr's inputs under a loaded disk: 16-48 new pages a tick, the
    // new ones starting past the last front where the reader crossed pages
    // mapped before (the kernel's window, an earlier pass).
    auto bits = bitmap(4096);
    PageRun before[] = {{0, 1328}}; // the last tick's news ended at 1264; 64 pages beyond were mapped
    compare_presence(bits.data(), 4096, before, 1, false);
    PageRun after[] = {{0, 1344}}; // the reader crossed them and faulted 16 more
    TickEvidence e = compare_presence(bits.data(), 4096, after, 1, false);
    CHECK(e.new_islands == 1);
    CHECK(e.new_pages == 16);
    CHECK(e.longest_start == 1328);
    CHECK(e.longest_run_start == 0);
    CHECK(classify_tick(e) == Verdict::undecided);
    CHECK(continues_run(e, 1264)); // the old rule: a new stream at 1328, its start reset
    // Holes just behind the front (reclaim unmapped what the reader passed):
    // 16 new pages 21 past the front, over pages not mapped, still continue.
    auto holed = bitmap(4096);
    PageRun h_before[] = {{0, 3915}};
    compare_presence(holed.data(), 4096, h_before, 1, false);
    PageRun h_after[] = {{0, 3900}, {3936, 11}};
    TickEvidence h = compare_presence(holed.data(), 4096, h_after, 2, false);
    CHECK(h.longest_start == 3936);
    CHECK(continues_run(h, 3915)); // the old rule: 16 pages of slack, a new stream
    // The same 16 pages 136 past the front over pages not mapped: not the stream.
    auto other = bitmap(4096);
    PageRun o_before[] = {{0, 1264}};
    compare_presence(other.data(), 4096, o_before, 1, false);
    PageRun o_after[] = {{0, 1264}, {1400, 16}};
    CHECK_FALSE(continues_run(compare_presence(other.data(), 4096, o_after, 2, false), 1264));
}

TEST_CASE("a fault in a region left mostly mapped continues a stream only within a folio of its front") {
    auto bits = bitmap(8192);
    PageRun before[] = {{0, 5000}, {5002, 3190}}; // all mapped but two pages
    compare_presence(bits.data(), 8192, before, 2, false);
    PageRun after[] = {{0, 8192}}; // the hole faulted in, past the last front
    TickEvidence e = compare_presence(bits.data(), 8192, after, 1, false);
    CHECK(e.longest_start == 5000);
    CHECK(continues_run(e, 4800));       // 200 mapped pages crossed: the stream's
    CHECK_FALSE(continues_run(e, 1000)); // 4000: a random fault, not a stream
}

TEST_CASE("a slow stream reading through a folio it was given has not stopped") {
    // 512 pages mapped at once (a 2 MiB folio the prefetch worker read),
    // consumed at 1,600 pages a second: 0.32 s of silence is the reader
    // at work (the old rule: 25 idle looks, 0.25 s at the feed period).
    CHECK_FALSE(stream_stopped(320'000'000, 512, 1600));
    CHECK_FALSE(stream_stopped(600'000'000, 512, 1600));
    CHECK(stream_stopped(700'000'000, 512, 1600));
    // A fast stream that stopped is noticed after kStreamStopNs.
    CHECK_FALSE(stream_stopped(400'000'000, 512, 100'000));
    CHECK(stream_stopped(kStreamStopNs, 512, 100'000));
    // No rate known, or a crawl: never waits past 10 s.
    CHECK(stream_stopped(kStreamStopNs, 16, 0));
    CHECK(stream_stopped(10'000'000'000, 512, 1));
}

TEST_CASE("what a stream passed is paged out only where the page cache could not keep it") {
    constexpr uint64_t MiB = 1 << 20;
    // A region that fits is left to the kernel's LRU (a matrix read pass after pass).
    CHECK_FALSE(pages_out_behind(false, 292 * MiB, 400 * MiB));
    CHECK_FALSE(pages_out_behind(false, 400 * MiB, 400 * MiB));
    // A chain's buffer: the buffers still to be read are the oldest pages.
    CHECK(pages_out_behind(true, 64 * MiB, 900 * MiB));
    // A region larger than the page cache's room evicts itself anyway.
    CHECK(pages_out_behind(false, 2048 * MiB, 400 * MiB));
    CHECK(pages_out_behind(false, 401 * MiB, 400 * MiB));
    CHECK(pages_out_behind(false, 1, 0)); // no room at all
}

TEST_CASE("a fork child's inherited region read at random keeps its pages' recency only where it could stay cached") {
    constexpr uint64_t MiB = 1 << 20;
    // The epochs job's dataset in 640 MiB: 183 and 92 MiB, room about 425 MiB.
    CHECK(random_keeps_recency(true, 183 * MiB, 425 * MiB));
    CHECK(random_keeps_recency(true, 92 * MiB, 425 * MiB));
    CHECK(random_keeps_recency(true, 200 * MiB, 400 * MiB)); // half the room: the edge
    // Its 768 MiB table would be read around each fault and evicted unused.
    CHECK_FALSE(random_keeps_recency(true, 768 * MiB, 425 * MiB));
    CHECK_FALSE(random_keeps_recency(true, 201 * MiB, 400 * MiB));
    CHECK_FALSE(random_keeps_recency(true, 1, 0)); // no room at all
    // The process's own regions keep MADV_RANDOM (tiering promotes what fits).
    CHECK_FALSE(random_keeps_recency(false, 92 * MiB, 425 * MiB));
    // No limit: the room is unbounded.
    CHECK(random_keeps_recency(true, 4096 * MiB, UINT64_MAX));
}

TEST_CASE("a pass over a region larger than the page cache's room keeps as much of its end cached as fits") {
    constexpr uint64_t MiB = 1 << 20;
    CHECK(pass_tail_kept(false, 4096 * MiB, 1000 * MiB) == 1000 * MiB);
    CHECK(pass_tail_kept(false, 401 * MiB, 400 * MiB) == 400 * MiB);
    // A chain's buffer and a region that fits are paged out whole.
    CHECK(pass_tail_kept(true, 4096 * MiB, 1000 * MiB) == 0);
    CHECK(pass_tail_kept(false, 400 * MiB, 400 * MiB) == 0);
    CHECK(pass_tail_kept(false, 292 * MiB, 400 * MiB) == 0);
    CHECK(pass_tail_kept(false, 1, 0) == 0); // no room at all
}
