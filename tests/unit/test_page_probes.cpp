// test_page_probes.cpp — one region's probing cycle (page_probes.h):
// probes_advance's windows, discards and rests, on a set whose probes are
// marked placed and touched by hand; and probes_read and probes_apply on
// live regions: the probes' pages are unmapped (their bytes kept) outside
// the large lock, mapped back at retirement, and a region that was pinned,
// marked moving, freed, reborn or made private before the check is left
// alone (the control test learning drives the whole method).
#include "access/page_probes.h"
#include "shim_fixture.h"

#include "backing/reaper.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "spillway.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 100'000 * kMs; // a monotonic clock well past boot

ProbeSet *placed_set() {
    ProbeSet *s = probes_new(0x10000000, 1, 131072, 7, kT0); // 512 MiB: 128 probes
    REQUIRE(s);
    for (uint32_t i = 0; i < s->count; i++) s->placed[i / 64] |= 1ull << (i % 64);
    return s;
}

void touch(ProbeSet &s, uint32_t from, uint32_t n, uint32_t step = 1) {
    for (auto &w : s.touched) w = 0;
    for (uint32_t i = from, k = 0; k < n; i += step, k++) s.touched[(i % 128) / 64] |= 1ull << ((i % 128) % 64);
}
} // namespace

TEST_CASE("probes: a first window that saw nearly every probe opens the second; most seen again: hot, judged random at once") {
    ProbeSet *s = placed_set();
    uint64_t now = kT0, cpu = 0;
    CHECK_FALSE(probes_advance(*s, now, cpu, 1).judged); // window 1 opens
    CHECK(s->step == 1);
    uint64_t window = s->window_ns;
    touch(*s, 0, 125);
    CHECK_FALSE(probes_advance(*s, now + window, cpu + window, 1).judged); // window 2 opens
    CHECK(s->step == 2);
    touch(*s, 3, 120); // probes 3-122: all of them seen in the first window too
    ProbeResult r = probes_advance(*s, now + 2 * window, cpu + 2 * window, 1);
    CHECK(r.judged);
    CHECK(r.counts.first == 125);
    CHECK(r.counts.second == 120);
    CHECK(r.counts.both == 120);
    CHECK(r.reading.verdict == Verdict::random);
    CHECK(r.agreed == Verdict::random); // one cycle is enough: a short scatter may leave no other
    CHECK(s->step == 0);
    CHECK(s->window_ns < window / 4); // shorter all the same: 40% of 128 at the rate of 125 in a window
    probes_free(s);
}

TEST_CASE("probes: a saturated first window then a quiet second (a pass that ended) judges nothing") {
    ProbeSet *s = placed_set();
    uint64_t now = kT0, cpu = 0;
    probes_advance(*s, now, cpu, 1);
    uint64_t window = s->window_ns;
    touch(*s, 0, 125);
    probes_advance(*s, now + window, cpu + window, 1);
    touch(*s, 0, 2);
    ProbeResult r = probes_advance(*s, now + 2 * window, cpu + 2 * window, 1);
    CHECK(r.judged);
    CHECK(r.reading.verdict == Verdict::undecided);
    CHECK(r.agreed == Verdict::undecided);
    CHECK(r.reading.change == WindowChange::shorter);
    probes_free(s);
}

TEST_CASE("probes: a cycle during which presence saw the region change is discarded") {
    ProbeSet *s = placed_set();
    uint64_t now = kT0;
    probes_advance(*s, now, 0, 1);
    probes_advance(*s, now + 2 * kMs, 2 * kMs, 1); // window 2 opens
    REQUIRE(s->step == 2);
    uint64_t window = s->window_ns;
    s->presence_moved = true; // the sampler's look saw new pages
    s->news_ns = now + 3 * kMs;
    touch(*s, 0, 0);
    ProbeResult r = probes_advance(*s, now + 4 * kMs, 4 * kMs, 1);
    CHECK_FALSE(r.judged);
    CHECK(r.agreed == Verdict::undecided);
    CHECK(s->window_ns == window);                     // no longer windows
    CHECK(s->next_ns - (now + 4 * kMs) == 100 * kMs); // kRestNs, not the idle rest
    probes_free(s);
}

TEST_CASE("probes: nothing touched just after the region filled is no reason for longer windows or an idle rest") {
    ProbeSet *s = placed_set();
    uint64_t now = kT0;
    s->news_ns = now - 50 * kMs; // presence saw the fill 50 ms before the cycle
    probes_advance(*s, now, 0, 1);
    touch(*s, 0, 0);
    probes_advance(*s, now + 2 * kMs, 2 * kMs, 1);
    uint64_t window = s->window_ns;
    ProbeResult r = probes_advance(*s, now + 4 * kMs, 4 * kMs, 1);
    CHECK(r.judged);
    CHECK(s->window_ns == window);
    CHECK(s->next_ns - (now + 4 * kMs) == 100 * kMs);
    // Long after any news, the same zero is idleness: longer windows, a longer rest.
    now += 10'000 * kMs;
    probes_advance(*s, now, 10 * kMs, 1);
    probes_advance(*s, now + window, 10 * kMs + window, 1);
    r = probes_advance(*s, now + 2 * window, 10 * kMs + 2 * window, 1);
    CHECK(r.reading.change == WindowChange::longer);
    CHECK(s->window_ns == 2 * window);
    CHECK(s->next_ns - (now + 2 * window) >= 400 * kMs);
    probes_free(s);
}

TEST_CASE("probes: the touch budget allows a burst of cycles, then spaces them") {
    ProbeSet *s = placed_set();
    uint64_t now = kT0, cpu = 0;
    std::vector<uint64_t> rests;
    for (int cycle = 0; cycle < 20; cycle++) {
        now = std::max(now, s->next_ns);
        probes_advance(*s, now, cpu, 1);
        touch(*s, 0, 50, 2); // 50 of 128, every other probe
        now += 2 * kMs, cpu += 2 * kMs;
        probes_advance(*s, now, cpu, 1);
        touch(*s, 1, 50, 2); // another 50, none in both: no verdict that ends the test
        now += 2 * kMs, cpu += 2 * kMs;
        probes_advance(*s, now, cpu, 1);
        rests.push_back(s->next_ns - now);
    }
    // 100 touches a cycle (195 ms of the budget) against 512 a second, with
    // a second's worth to spend at once: the first nine or so rest the minimum
    // (each 104 ms long spends 91 ms of the burst), later ones pay 195 ms each.
    CHECK(rests[0] == 100 * kMs);
    CHECK(rests[8] == 100 * kMs);
    CHECK(rests[19] > 150 * kMs);
    CHECK(rests[19] < 200 * kMs);
    probes_free(s);
}

TEST_CASE("probes: the cycle that ends huge mappings is discarded, the next one soon") {
    ProbeSet *s = placed_set();
    uint64_t now = kT0;
    s->unhuge = true;
    s->settling = true; // probes_read placed a probe under a 2 MiB mapping
    probes_advance(*s, now, 0, 1);
    touch(*s, 0, 60);
    ProbeResult r = probes_advance(*s, now + 2 * kMs, 2 * kMs, 1);
    CHECK_FALSE(r.judged);
    CHECK(s->step == 0);
    CHECK_FALSE(s->settling);
    CHECK(s->next_ns - (now + 2 * kMs) == 10 * kMs);
    probes_free(s);
}

namespace {
// A disk region of 64 MiB mapped by 4 KiB entries, every page written
// (byte i of page k is k), and a probe set over it whose first read placed
// its probes and queued every one to be unmapped.
struct ProbedRegion {
    unsigned char *p = nullptr;
    Region *r = nullptr;
    ProbeSet *s = nullptr;
    int pagemap = -1;
    static constexpr size_t kLen = size_t(64) << 20;

    ProbedRegion() {
        test::bring_up();
        sampler_hold(true); // the shim's own sampler probes nothing meanwhile
        bool small = false;
        p = (unsigned char *)large_alloc(kLen, 0, SPILLWAY_PREFER_DISK, &small);
        REQUIRE(p);
        r = arena::region_at(p);
        REQUIRE(r->backing == Backing::disk);
        REQUIRE(madvise(p, kLen, MADV_NOHUGEPAGE) == 0); // probes on every stratum
        for (size_t k = 0; k < kLen / 4096; k++) p[k * 4096] = (unsigned char)k;
        pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        REQUIRE(pagemap >= 0);
        s = probes_new(r->start, r->born_ns, kLen / 4096, 12345, kT0);
        REQUIRE(s);
        probes_read(*s, pagemap, kT0);
        REQUIRE(s->n_queued == s->count); // every stratum placed, every probe to unmap
    }
    ~ProbedRegion() {
        if (s) probes_free(s);
        if (pagemap >= 0) close(pagemap);
        if (p) large_free(p);
        reaper_drain();
        sampler_hold(false);
    }
    uint32_t mapped_probes() const {
        uint32_t n = 0;
        for (uint32_t i = 0; i < s->count; i++)
            n += page_mapping(pagemap, r->start + s->page[i] * 4096) == kPageMapped;
        return n;
    }
    bool intact() const {
        for (size_t k = 0; k < kLen / 4096; k++)
            if (p[k * 4096] != (unsigned char)k) return false;
        return true;
    }
};
} // namespace

TEST_CASE("probes: the queued pages are unmapped with their bytes kept, and mapped back at retirement") {
    ProbedRegion live;
    probes_apply(&live.s, 1);
    CHECK_FALSE(live.s->gone);
    CHECK_FALSE(live.s->busy);
    CHECK(live.mapped_probes() == 0);
    CHECK(probe_held() == nullptr); // the hold ended with the calls
    probes_retire(*live.s);
    probes_read(*live.s, live.pagemap, kT0);
    CHECK(live.s->n_queued == live.s->count); // all unmapped and still cached
    probes_apply(&live.s, 1);
    CHECK(live.mapped_probes() == live.s->count);
    CHECK(live.intact());
}

// probes_unmask, which the sampler calls before each full look: a zapped
// block is unmasked once mapped again, or once none of it is cached (a
// block evicted while the set rests is news to presence when re-read;
// docs/flakes.md, the chain case), and kept masked while merely unmapped.
TEST_CASE("probes: a zapped block stays masked while unmapped but cached, and is unmasked once mapped again or evicted") {
    ProbedRegion live;
    ProbeSet &s = *live.s;
    for (uint32_t i = 0; i < s.count; i++) s.zapped[i / 64] |= 1ull << (i % 64); // as if each ended a 2 MiB mapping
    auto zapped = [&](bool in_block0) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < s.count; i++)
            n += (s.page[i] < 512) == in_block0 && (s.zapped[i / 64] >> (i % 64) & 1);
        return n;
    };
    const uint32_t in_block0 = [&] {
        uint32_t n = 0;
        for (uint32_t i = 0; i < s.count; i++) n += s.page[i] < 512;
        return n;
    }();
    REQUIRE(in_block0 > 0);
    // Block 0 written back and unmapped: its pages stay cached.
    REQUIRE(msync(live.p, 2 << 20, MS_SYNC) == 0);
    REQUIRE(madvise(live.p, 2 << 20, MADV_DONTNEED) == 0);
    probes_unmask(s, live.pagemap);
    CHECK(zapped(false) == 0);        // the other blocks are mapped: unmasked
    CHECK(zapped(true) == in_block0); // unmapped but cached: a refault is no news
    CHECK(std::any_of(s.masked, s.masked + s.n_masked, [](const PageRun &m) { return m.count == 512; }));
    // Evicted: a later read of it comes from disk, and is news.
    REQUIRE(posix_fadvise(live.r->file->fd, (off_t)live.r->file_off, 2 << 20, POSIX_FADV_DONTNEED) == 0);
    probes_unmask(s, live.pagemap);
    CHECK(zapped(true) == 0);
    CHECK(std::all_of(s.masked, s.masked + s.n_masked, [](const PageRun &m) { return m.count == 1; }));
    CHECK(live.intact());
}

TEST_CASE("probes: a region pinned, marked moving, reborn, freed or made private before the check is left alone") {
    SECTION("pinned (a realloc under way): busy, tried again later") {
        ProbedRegion live;
        live.r->pins.fetch_add(1);
        probes_apply(&live.s, 1);
        live.r->pins.fetch_sub(1);
        CHECK(live.s->busy);
        CHECK_FALSE(live.s->gone);
    }
    SECTION("moving") {
        ProbedRegion live;
        live.r->moving.store(true);
        probes_apply(&live.s, 1);
        live.r->moving.store(false);
        CHECK(live.s->gone);
    }
    SECTION("reborn (the recycle cache's new owner)") {
        ProbedRegion live;
        live.r->born_ns += 1;
        probes_apply(&live.s, 1);
        live.r->born_ns -= 1;
        CHECK(live.s->gone);
    }
    SECTION("freed") {
        ProbedRegion live;
        live.r->freed.store(true);
        probes_apply(&live.s, 1);
        live.r->freed.store(false);
        CHECK(live.s->gone);
    }
    SECTION("private (a fork child's copy)") {
        ProbedRegion live;
        live.r->is_private = true;
        probes_apply(&live.s, 1);
        live.r->is_private = false;
        CHECK(live.s->gone);
    }
}

TEST_CASE("probes: the large lock is free while a probe's pages are unmapped") {
    // While the hold is published the probe is outside the lock: another
    // thread takes it at once (it would wait for the probe's calls before).
    ProbedRegion live;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> held_seen{0}, locked_while_held{0};
    std::thread watcher([&] {
        while (!stop.load()) {
            if (probe_held() != live.r) continue;
            held_seen++;
            if (large_lock().try_lock()) {
                locked_while_held++;
                large_lock().unlock();
            }
        }
    });
    for (int round = 0; round < 200 && held_seen.load() == 0; round++) {
        for (uint32_t i = 0; i < live.s->count; i++) (void)*(volatile unsigned char *)(live.p + live.s->page[i] * 4096); // map back
        probes_read(*live.s, live.pagemap, kT0);
        probes_apply(&live.s, 1);
    }
    stop = true;
    watcher.join();
    REQUIRE(held_seen.load() > 0);
    CHECK(locked_while_held.load() > 0);
    CHECK(live.intact());
}
