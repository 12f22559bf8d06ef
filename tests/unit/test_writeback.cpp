// test_writeback.cpp — paced writeback: the trigger rule, and a pass that
// really cleans the dirty pages of a disk region (the file's page cache, seen
// by cachestat(2)), unmapping them first, 64 MiB at a time, the partial last
// step too, and never touches the mapping of
// an anonymous or memory region; each pass is counted in the exit stats
// with the dirty bytes it wrote, the bytes it unmapped and its time; the
// pacer's own passes leave out a region nothing touched since one of them
// wrote it, and take it back at its next store (and every 20th pass); a
// pass's debug line names the regions it found dirtiest.
#include "shim_fixture.h"
#include "log.h"

#include "registry/arena.h"
#include "large/policy.h"
#include "registry/region.h"
#include "backing/reaper.h"
#include "spillway.h"
#include "stats/stats.h"
#include "tiering/writeback.h"
#include "access/access_detector.h"
#include "access/sampler.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

using namespace spillway;

namespace {
// Dirty kB of the mapping (VMA) that contains p, from /proc/self/smaps.
long dirty_kb(const void *p) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool in = false;
    long kb = 0;
    uintptr_t at = (uintptr_t)p;
    while (std::getline(smaps, line)) {
        std::string first = line.substr(0, line.find(' '));
        if (!first.empty() && first.back() != ':') { // "start-end perms ...": the next mapping
            uintptr_t lo = strtoull(first.c_str(), nullptr, 16);
            uintptr_t hi = strtoull(first.c_str() + first.find('-') + 1, nullptr, 16);
            in = lo <= at && at < hi;
        } else if (in && (first == "Shared_Dirty:" || first == "Private_Dirty:")) {
            kb += atol(line.c_str() + first.size());
        }
    }
    return kb;
}

// Pages of [p, p+len) mapped in this process: /proc/self/pagemap bit 63
// (present) or 62 (a swap-format entry: for a file page, one the kernel is
// migrating, which is still mapped; for an anonymous one, swapped out, not
// emptied). An unmapped page reads 0. The first few that are not mapped are
// named, with their entries, for a failure's message.
size_t mapped_pages(const void *p, size_t len, std::string *unmapped = nullptr) {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    size_t n = 0;
    for (size_t off = 0; off < len; off += 4096) {
        uint64_t e = 0;
        REQUIRE(pread(fd, &e, 8, (off_t)(((uintptr_t)p + off) / 4096 * 8)) == 8);
        bool mapped = (e >> 62) != 0;
        n += mapped;
        if (!mapped && unmapped && unmapped->size() < 200) {
            char line[64];
            snprintf(line, sizeof line, " page %zu: %#llx;", off / 4096, (unsigned long long)e);
            *unmapped += line;
        }
    }
    close(fd);
    return n;
}

// Dirty pages of the region's range of its file, in the page cache
// (cachestat(2), Linux 6.5: syscall 451 on every architecture).
uint64_t file_dirty_pages(const Region *r) {
    struct { uint64_t off, len; } range = {r->file_off, r->map_len};
    struct { uint64_t cache, dirty, writeback, evicted, recently_evicted; } cs = {};
    long rc = syscall(451, r->file->fd, &range, &cs, 0);
    INFO("cachestat(2) failed (errno " << errno << "): this test needs Linux 6.5 or later");
    REQUIRE(rc == 0);
    return cs.dirty;
}
// The regions of these tests are not written at random. Unit tests share
// call sites (test_sampler scatters into a region allocated as these are,
// and teaches its site random), and a pass keeps off a region whose site is
// random (writes_random_regions): its site is dropped, under the large lock
// as every reader of it holds.
void not_at_random(const void *p) {
    std::lock_guard<std::mutex> guard(large_lock());
    Region *r = arena::region_at(p);
    REQUIRE(r);
    r->site = nullptr;
}

// A disk region of len bytes, not written at random (not_at_random).
unsigned char *disk_region(size_t len) {
    bool use_small = false;
    auto *p = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(p);
    REQUIRE(arena::region_at(p)->backing == Backing::disk);
    not_at_random(p);
    return p;
}
} // namespace

TEST_CASE("writeback is due only under a limit, above 1/16 of it (at least 16 MiB), with reclaim near") {
    DirtyFigures f;
    f.dirty = 10ull << 30;
    CHECK_FALSE(writeback_due(f)); // no limit: the kernel's flushers suffice
    f.limited = true;
    f.limit = 1ull << 30;
    f.usage = f.limit; // at the limit: reclaim is running
    f.dirty = 64ull << 20;
    CHECK_FALSE(writeback_due(f));
    f.dirty = (64ull << 20) + 4096;
    CHECK(writeback_due(f));
    CHECK(writeback_trigger_bytes(1ull << 30) == 64ull << 20);
    CHECK(writeback_trigger_bytes(64ull << 20) == 16ull << 20);
    // Far from the limit: a temporary being rewritten is left alone.
    f.dirty = 128ull << 20;
    f.usage = 400ull << 20; // 624 MiB of room: more than twice the dirty bytes and 1/8 of the limit
    CHECK_FALSE(writeback_due(f));
    f.usage = (1ull << 30) - (255ull << 20); // room below twice the dirty bytes
    CHECK(writeback_due(f));
    f.usage = 2ull << 30; // charged above the limit (v1 can): no room at all
    CHECK(writeback_due(f));
    f.limit = 64ull << 20;
    f.dirty = 8ull << 20;
    CHECK_FALSE(writeback_due(f));
}

TEST_CASE("a pass writes back the dirty pages of disk regions, pool and dedicated") {
    test::bring_up();
    const size_t small = 8 << 20, big = 256 << 20; // a pool region, and a dedicated file
    unsigned char *a = disk_region(small), *b = disk_region(big);
    // The kernel's flushers may clean the pages first when the machine is
    // busy writing: dirty them again until they are seen dirty, then pass.
    int tries = 0;
    bool seen_dirty = false;
    for (; tries < 50 && !seen_dirty; tries++) {
        memset(a, 1 + tries % 100, small);
        memset(b, 2 + tries % 100, 32 << 20);
        seen_dirty = dirty_kb(a) >= (long)(small >> 10) / 2 && dirty_kb(b) >= (32 << 10) / 2;
    }
    INFO("attempts until both regions were seen dirty: " << tries);
    REQUIRE(seen_dirty);
    CHECK(file_dirty_pages(arena::region_at(b)) > 0);
    CHECK(writeback_pass(true) >= 2);
    CHECK(dirty_kb(a) == 0);
    CHECK(dirty_kb(b) == 0);
    CHECK(file_dirty_pages(arena::region_at(a)) == 0); // written to the file, not only unmapped
    CHECK(file_dirty_pages(arena::region_at(b)) == 0);
    CHECK(a[small - 1] == 1 + (tries - 1) % 100); // the bytes are untouched
    CHECK(b[(32 << 20) - 1] == 2 + (tries - 1) % 100);
    large_free(a);
    large_free(b);
    reaper_drain();
}

TEST_CASE("a pass unmaps disk regions before writing them, and leaves anonymous and memory regions mapped") {
    test::bring_up();
    // The detector's probes unmap sampled pages of a disk region by design
    // (page_probes.h); what this case counts is the pass's unmapping alone.
    sampler_hold(true);
    struct Release {
        ~Release() { sampler_hold(false); }
    } release;
    bool use_small = false;
    const size_t len = 16 << 20;
    unsigned char *disk = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    unsigned char *memory = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_MEMORY, &use_small);
    unsigned char *anon = (unsigned char *)large_alloc(len, 0, kFlagAlignmentOnly, &use_small);
    REQUIRE(disk);
    REQUIRE(memory);
    REQUIRE(anon);
    REQUIRE(arena::region_at(disk)->backing == Backing::disk);
    REQUIRE(arena::region_at(memory)->backing == Backing::memory);
    REQUIRE(arena::region_at(anon)->backing == Backing::anon);
    not_at_random(disk);
    for (size_t i = 0; i < len; i += 4096) disk[i] = memory[i] = anon[i] = (unsigned char)(i >> 12 | 1);
    std::string unmapped;
    size_t mapped = mapped_pages(disk, len, &unmapped);
    INFO("not mapped after the fill:" << unmapped);
    REQUIRE(mapped == len / 4096);
    CHECK(writeback_pass(true) >= 1);
    // Unmapped, so writeback had no page to write-protect (writeback.cpp),
    // and written: the file holds no dirty page of the region.
    CHECK(mapped_pages(disk, len) == 0);
    CHECK(file_dirty_pages(arena::region_at(disk)) == 0);
    // MADV_DONTNEED would have emptied these two: they keep every page.
    CHECK(mapped_pages(memory, len) == len / 4096);
    CHECK(mapped_pages(anon, len) == len / 4096);
    bool intact = true;
    for (size_t i = 0; i < len; i += 4096)
        intact &= disk[i] == (unsigned char)(i >> 12 | 1) && memory[i] == disk[i] && anon[i] == disk[i];
    CHECK(intact); // the disk region's bytes came back from its page cache
    large_free(disk);
    large_free(memory);
    large_free(anon);
    reaper_drain();
}

TEST_CASE("a pass unmaps and writes a region of several 64 MiB steps whole, its last step partial") {
    test::bring_up();
    sampler_hold(true); // the detector's probes unmap pages too: count the pass's alone
    struct Release {
        ~Release() { sampler_hold(false); }
    } release;
    bool use_small = false;
    const size_t step = 64 << 20, len = 2 * step + (8 << 20) + 3 * 4096;
    unsigned char *disk = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(disk);
    Region *r = arena::region_at(disk);
    REQUIRE(r->backing == Backing::disk);
    not_at_random(disk);
    REQUIRE(writeback_pass(true) >= 1); // earlier tests' regions clean: the figures below are this one's
    // Dirty every page; the kernel's flushers may clean some first on a
    // machine busy writing: dirty them again until most are seen dirty.
    uint64_t dirty_before = 0;
    int tries = 0;
    for (; tries < 20 && dirty_before < len / 2; tries++) {
        for (size_t i = 0; i < len; i += 4096) disk[i] = (unsigned char)(i / step + 1 + tries);
        disk[len - 1] = (unsigned char)(0x80 + tries);
        REQUIRE(mapped_pages(disk, len) == (len + 4095) / 4096);
        dirty_before = file_dirty_pages(r) * 4096;
    }
    INFO("attempts until most pages were seen dirty: " << tries << "; dirty bytes before the pass "
         << dirty_before);
    REQUIRE(dirty_before >= len / 2);
    uint64_t b0 = g_stats.writeback_bytes.load(), u0 = g_stats.writeback_unmapped_bytes.load();
    REQUIRE(writeback_pass(true) >= 1);
    std::string unmapped;
    CHECK(mapped_pages(disk, len, &unmapped) == 0); // every step, the partial last one too
    CHECK(file_dirty_pages(r) == 0);               // and every step written, none past its end left
    CHECK(g_stats.writeback_unmapped_bytes.load() - u0 >= r->map_len);
    uint64_t written = g_stats.writeback_bytes.load() - b0;
    CHECK(written >= dirty_before / 2); // what the steps found dirty, summed
    CHECK(written <= r->map_len);
    const int last = tries - 1;
    CHECK(disk[step - 4096] == (unsigned char)(1 + last)); // the bytes either side of each step's edge
    CHECK(disk[step] == (unsigned char)(2 + last));
    CHECK(disk[2 * step] == (unsigned char)(3 + last));
    CHECK(disk[len - 1] == (unsigned char)(0x80 + last));
    large_free(disk);
    reaper_drain();
}

TEST_CASE("a pass is counted in the stats: the dirty bytes it wrote back, the bytes it unmapped, its time") {
    test::bring_up();
    bool use_small = false;
    const size_t len = 16 << 20, dirtied = 8 << 20;
    unsigned char *disk = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(disk);
    Region *r = arena::region_at(disk);
    REQUIRE(r->backing == Backing::disk);
    not_at_random(disk);
    REQUIRE(writeback_pass(true) >= 1); // every disk region of earlier tests clean: this one's bytes only
    // Dirty half of it and pass. The kernel's flushers may clean pages first
    // on a machine busy writing (as in "a pass writes back the dirty pages"
    // above): dirty them again until a pass found them dirty.
    uint64_t passes = 0, written = 0, unmapped = 0, ns = 0, dirty_before = 0;
    int tries = 0;
    for (; tries < 20 && written == 0; tries++) {
        memset(disk, 1 + tries, dirtied);
        dirty_before = file_dirty_pages(r) * 4096;
        uint64_t p0 = g_stats.writeback_passes.load(), b0 = g_stats.writeback_bytes.load(),
                 u0 = g_stats.writeback_unmapped_bytes.load(), n0 = g_stats.writeback_ns.load();
        REQUIRE(writeback_pass(true) >= 1);
        passes = g_stats.writeback_passes.load() - p0;
        written = g_stats.writeback_bytes.load() - b0;
        unmapped = g_stats.writeback_unmapped_bytes.load() - u0;
        ns = g_stats.writeback_ns.load() - n0;
        CHECK(file_dirty_pages(r) == 0);
    }
    INFO("passes until one found the pages dirty: " << tries << "; the file's dirty bytes just before it "
         << dirty_before << ", counted as written back " << written);
    CHECK(passes == 1);
    CHECK(written > 0);
    CHECK(written <= dirtied); // never more than was written since the last pass
    CHECK(unmapped >= len);    // the region's whole mapping (and any other disk region's)
    CHECK(ns > 0);
    // A pass with nothing to write is not counted.
    large_free(disk);
    reaper_drain();
    passes = g_stats.writeback_passes.load();
    if (writeback_pass(true) == 0) CHECK(g_stats.writeback_passes.load() == passes);
}

TEST_CASE("regions in a random phase join a pass every interval; it doubles while each write is undone") {
    const uint64_t S = 1'000'000'000ull, MiB = 1 << 20;
    CHECK(writes_random_regions(5 * S, 0, S)); // none yet
    CHECK_FALSE(writes_random_regions(5 * S, 5 * S - S / 2, S));
    CHECK(writes_random_regions(5 * S, 4 * S, S));
    CHECK_FALSE(writes_random_regions(5 * S, 4 * S, 2 * S));
    CHECK(next_random_interval(S, 0, 100 * MiB) == S);            // nothing written before: no evidence
    CHECK(next_random_interval(S, 229 * MiB, 229 * MiB) == 2 * S); // all dirty again: the write was undone
    CHECK(next_random_interval(4 * S, 229 * MiB, 115 * MiB) == 8 * S);
    CHECK(next_random_interval(8 * S, 229 * MiB, 100 * MiB) == S); // mostly still clean: a slow scatter
    CHECK(next_random_interval(16 * S, 229 * MiB, 229 * MiB) == kRandomRegionsMaxNs);
    CHECK(next_random_interval(kRandomRegionsMaxNs, 229 * MiB, 229 * MiB) == kRandomRegionsMaxNs);
}

TEST_CASE("a pass leaves a region being scattered into mapped and dirty until its interval has passed, and writes the others") {
    test::bring_up();
    sampler_hold(true); // the phases below are this test's, not the detector's
    bool use_small = false;
    const size_t len = 8 << 20;
    unsigned char *scattered = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    unsigned char *filled = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(scattered);
    REQUIRE(filled);
    REQUIRE(arena::region_at(scattered)->backing == Backing::disk);
    REQUIRE(arena::region_at(filled)->backing == Backing::disk);
    not_at_random(scattered); // its phase alone says it is
    not_at_random(filled);
    arena::region_at(scattered)->phase.store((uint8_t)Verdict::random);
    arena::region_at(filled)->phase.store((uint8_t)Verdict::sequential);
    auto dirty_both = [&](int v) {
        for (size_t i = 0; i < len; i += 4096) scattered[i] = filled[i] = (unsigned char)v;
    };
    // More than a second after any earlier pass: this one writes both.
    usleep(1'100'000);
    dirty_both(1);
    REQUIRE(writeback_pass(true) >= 2);
    CHECK(mapped_pages(scattered, len) == 0);
    CHECK(file_dirty_pages(arena::region_at(scattered)) == 0);
    // Within the second: the scattered one keeps its mappings (a pass that
    // took it would have unmapped them all; the kernel's flushers never
    // unmap) and is not written; the other one is.
    dirty_both(2);
    REQUIRE(mapped_pages(scattered, len) == len / 4096);
    REQUIRE(writeback_pass(true) >= 1);
    CHECK(mapped_pages(scattered, len) == len / 4096);
    CHECK(mapped_pages(filled, len) == 0);
    CHECK(file_dirty_pages(arena::region_at(filled)) == 0);
    // A second later it is written again; it was all dirty again, so the
    // next time it waits twice as long.
    usleep(1'100'000);
    uint64_t dirty_again = file_dirty_pages(arena::region_at(scattered)) * 4096;
    REQUIRE(writeback_pass(true) >= 2);
    CHECK(mapped_pages(scattered, len) == 0);
    CHECK(file_dirty_pages(arena::region_at(scattered)) == 0);
    INFO("dirty bytes of the scattered region before the third pass: " << dirty_again);
    if (dirty_again >= len / 2) CHECK(writeback_random_interval_ns() == 2 * kRandomRegionsEveryNs);
    CHECK(scattered[len - 4096] == 2); // the bytes are untouched
    CHECK(filled[len - 4096] == 2);
    sampler_hold(false);
    large_free(scattered);
    large_free(filled);
    reaper_drain();
}

TEST_CASE("the pacer's passes leave out a region nothing touched since one of them wrote it, but every 20th") {
    test::bring_up();
    bool use_small = false;
    const size_t len = 16 << 20;
    unsigned char *disk = (unsigned char *)large_alloc(len, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(disk);
    Region *r = arena::region_at(disk);
    REQUIRE(r->backing == Backing::disk);
    not_at_random(disk); // a pass takes a random region only once a second
    memset(disk, 7, len);
    REQUIRE(writeback_pass(true, true) >= 1); // writes it (and any other disk region) and unmaps it
    CHECK(mapped_pages(disk, len) == 0);
    CHECK(file_dirty_pages(r) == 0);
    // Nothing touched since: of 20 passes, 19 leave every region out (no
    // range asked, nothing unmapped), one (kFullPassEvery) takes them all.
    int left_out = 0, full = 0;
    for (int i = 0; i < 20; i++) {
        uint64_t u0 = g_stats.writeback_unmapped_bytes.load();
        unsigned n = writeback_pass(true, true);
        uint64_t unmapped = g_stats.writeback_unmapped_bytes.load() - u0;
        left_out += n == 0 && unmapped == 0;
        full += n >= 1 && unmapped >= len;
    }
    CHECK(left_out == 19);
    CHECK(full == 1);
    // A store maps a page again: the next pass takes the region back.
    disk[len / 2] = 9;
    CHECK(file_dirty_pages(r) + dirty_kb(disk) > 0);
    uint64_t u0 = g_stats.writeback_unmapped_bytes.load();
    CHECK(writeback_pass(true, true) >= 1);
    CHECK(g_stats.writeback_unmapped_bytes.load() - u0 >= len);
    CHECK(mapped_pages(disk, len) == 0);
    CHECK(file_dirty_pages(r) == 0); // written, not left dirty
    CHECK(disk[len / 2] == 9);
    CHECK(disk[len / 2 + 1] == 7);
    large_free(disk);
    reaper_drain();
}

TEST_CASE("a pass's debug line names the regions it found dirtiest, the dirtiest first") {
    test::bring_up();
    const size_t len = 16 << 20;
    unsigned char *most = disk_region(len), *less = disk_region(len);
    REQUIRE(writeback_pass(true) >= 1); // every disk region clean: these two are the dirty ones
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK) == 0);
    char most_named[64], less_named[64];
    snprintf(most_named, sizeof most_named, "dirtiest: %p ", (void *)most);
    snprintf(less_named, sizeof less_named, ", %p ", (void *)less);
    // The kernel's flushers may clean pages before the pass on a busy
    // machine: dirty them again until a pass's line names both in order.
    std::string line;
    for (int tries = 0; tries < 20; tries++) {
        memset(most, 1 + tries, 12 << 20);
        memset(less, 1 + tries, 4 << 20);
        log_configure(LogLevel::debug, fds[1]);
        REQUIRE(writeback_pass(true) >= 1);
        log_configure(LogLevel::error, 2);
        char buf[16384];
        std::string all;
        for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) all.append(buf, (size_t)n);
        size_t at = all.find("writeback: pass over ");
        line = at == std::string::npos ? "" : all.substr(at, all.find('\n', at) - at);
        size_t first = line.find(most_named), second = line.find(less_named);
        if (first != std::string::npos && second != std::string::npos && first < second) break;
    }
    INFO("the pass's line: " << line);
    CHECK(line.find(most_named) != std::string::npos);
    CHECK(line.find(most_named) < line.find(less_named));
    CHECK(line.find(" MiB of regions written at random") != std::string::npos);
    close(fds[0]);
    close(fds[1]);
    large_free(most);
    large_free(less);
    reaper_drain();
}
