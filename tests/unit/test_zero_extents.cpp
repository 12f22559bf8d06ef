// test_zero_extents.cpp — a writeback pass turns a disk region's dirty
// all-zero units into unwritten extents instead of writing them (their
// pages leave the page cache, the bytes still read as zero, the region
// still maps its file), writes the units that hold data, leaves alone a
// unit with a page not in page cache (its bytes on disk are not known), and
// counts what it zeroed in the exit stats; zeros stored over data written
// back before are written, not zeroed; the runs mapped again keep the
// region's madvise advice. Without userfaultfd for kernel
// faults, or off ext4, nothing is zeroed and every dirty page is written.
#include "shim_fixture.h"

#include "backing/backing.h"
#include "backing/reaper.h"
#include "cachestat.h"
#include "large/large.h"
#include "os/uffd.h"
#include "os/zero_range.h"
#include "registry/arena.h"
#include "registry/region.h"
#include "spillway.h"
#include "stats/stats.h"
#include "tiering/writeback.h"
#include "tiering/zero_extents.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {

constexpr size_t MiB = size_t(1) << 20, kLen = 32 * MiB;

Cachestat cache_of(const Region *r, size_t rel, size_t len) {
    Cachestat cs{};
    REQUIRE(cachestat(r->file->fd, CachestatRange{r->file_off + rel, len}, cs) == 0);
    return cs;
}

// A disk region of kLen whose call site is not learned random (a pass
// takes random regions only every interval; unit tests share call sites).
unsigned char *disk_region() {
    bool use_small = false;
    auto *p = (unsigned char *)large_alloc(kLen, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(p);
    std::lock_guard<std::mutex> guard(large_lock());
    Region *r = arena::region_at(p);
    REQUIRE(r);
    REQUIRE(r->backing == Backing::disk);
    REQUIRE(r->map_len == kLen);
    r->site = nullptr;
    return p;
}

// Stores zeros everywhere and data into [data_at, data_at+4096), until
// the kernel's flushers have left every page dirty (on a busy machine they
// may clean some first).
void fill(unsigned char *p, size_t data_at) {
    const Region *r = arena::region_at(p);
    for (int tries = 0; tries < 50; tries++) {
        memset(p, 0, kLen);
        memset(p + data_at, 1 + tries, 4096);
        // The page-table dirty bits reach the page cache when the pages are unmapped.
        REQUIRE(madvise(p, kLen, MADV_DONTNEED) == 0);
        if (cache_of(r, 0, kLen).nr_dirty * 4096 == kLen) return;
    }
    FAIL("the kernel's flushers cleaned the region's pages before every pass, 50 times");
}

// Whether every mapping of [p, p+len) carries flag in its VmFlags
// (/proc/self/smaps: "rr" is MADV_RANDOM's VM_RAND_READ).
bool all_mappings_flagged(const void *p, size_t len, const char *flag) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool in = false;
    size_t seen = 0, flagged = 0;
    uintptr_t lo = (uintptr_t)p, hi = lo + len;
    while (std::getline(smaps, line)) {
        std::string first = line.substr(0, line.find(' '));
        if (!first.empty() && first.back() != ':') {
            uintptr_t a = strtoull(first.c_str(), nullptr, 16);
            uintptr_t b = strtoull(first.c_str() + first.find('-') + 1, nullptr, 16);
            in = a < hi && lo < b;
            seen += in;
        } else if (in && first == "VmFlags:") {
            flagged += (" " + line.substr(first.size()) + " ").find(std::string(" ") + flag + " ") != std::string::npos;
        }
    }
    return seen > 0 && flagged == seen;
}

// Whether a pass may zero r's units here: userfaultfd for kernel faults,
// and a spill file on ext4 (zero_range.h).
bool can_zero(const Region *r) {
    return uffd::level() == uffd::Level::full && zero_range_keeps_reservation(r->file->fd);
}

} // namespace

TEST_CASE("a pass leaves a disk region's dirty zeros unwritten and writes its data") {
    test::bring_up();
    zero_extents_forget();
    const size_t data_unit = 10 * kZeroUnit;
    unsigned char *p = nullptr;
    const Region *r = nullptr;
    uint64_t zeroed = 0;
    unsigned char data = 0;
    // On a machine writing a lot, the kernel's flushers may write some of
    // the zeros between fill()'s check and the pass; a unit written back is
    // not zeroed (zero_extents.h), and that is theirs, not the pass's. So a
    // fresh region each try, until a pass found every zero unit dirty.
    int tries = 0;
    for (; tries < 10; tries++) {
        if (p) {
            large_free(p);
            reaper_drain();
        }
        p = disk_region();
        r = arena::region_at(p);
        {
            // Pinned, as a flag's advice is: the sampler's verdict on the
            // fill (in order) would otherwise re-advise the region between
            // the pass and the check below (failed 3 runs in a row once).
            std::lock_guard<std::mutex> guard(large_lock());
            arena::region_at(p)->advice_pinned = true;
            advise_region(arena::region_at(p), MADV_RANDOM);
        }
        fill(p, data_unit + 8192);
        data = p[data_unit + 8192];
        uint64_t z0 = g_stats.writeback_zeroed_bytes.load();
        CHECK(writeback_pass(true) >= 1);
        zeroed = g_stats.writeback_zeroed_bytes.load() - z0;
        if (!can_zero(r) || zeroed == kLen - kZeroUnit) break;
    }
    INFO("regions tried until a pass found every zero unit dirty: " << tries + 1);
    if (can_zero(r)) {
        CHECK(zeroed == kLen - kZeroUnit);
        Cachestat zeros = cache_of(r, 0, data_unit);
        CHECK(zeros.nr_cache == 0); // left the page cache unwritten
        Cachestat rest = cache_of(r, data_unit + kZeroUnit, kLen - data_unit - kZeroUnit);
        CHECK(rest.nr_cache == 0);
    } else {
        CHECK(zeroed == 0);
    }
    CHECK(cache_of(r, 0, kLen).nr_dirty == 0); // the rest was written
    // The runs mapped again keep the region's advice (a fault there reads
    // no further than its page).
    CHECK(all_mappings_flagged(p, kLen, "rr"));
    Cachestat data_cs = cache_of(r, data_unit, kZeroUnit);
    CHECK(data_cs.nr_cache * 4096 == kZeroUnit); // written, not dropped
    // The bytes: zeros where they were, data where it was, and the region
    // still maps its file (a store through it is in the file).
    CHECK(p[0] == 0);
    CHECK(p[kLen - 1] == 0);
    CHECK(p[data_unit] == 0);
    CHECK(p[data_unit + 8192] == data);
    CHECK(p[data_unit + 8192 + 4095] == data);
    p[77] = 5;
    unsigned char b = 0;
    REQUIRE(pread(r->file->fd, &b, 1, (off_t)(r->file_off + 77)) == 1);
    CHECK(b == 5);
    large_free(p);
    reaper_drain();
}

TEST_CASE("a unit with a page not in page cache is written back, not zeroed") {
    test::bring_up();
    zero_extents_forget();
    const size_t unit3 = 3 * kZeroUnit, half = kZeroUnit / 2;
    unsigned char *p = nullptr;
    const Region *r = nullptr;
    uint64_t zeroed = 0;
    // A fresh region each try, as in the case above.
    for (int tries = 0; tries < 10; tries++) {
        if (p) {
            large_free(p);
            reaper_drain();
        }
        p = disk_region();
        r = arena::region_at(p);
        if (!can_zero(r)) { // nothing is zeroed (the case above)
            large_free(p);
            return;
        }
        // All zeros; unit 3 written back and dropped from the page cache,
        // then its first half stored into again: dirty zeros beside zeros
        // on disk, which a pass cannot know without reading them.
        fill(p, 0);
        memset(p, 0, 4096);
        REQUIRE(madvise(p, kLen, MADV_DONTNEED) == 0);
        REQUIRE(sync_file_range(r->file->fd, (off_t)(r->file_off + unit3), kZeroUnit,
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) == 0);
        REQUIRE(posix_fadvise(r->file->fd, (off_t)(r->file_off + unit3), kZeroUnit, POSIX_FADV_DONTNEED) == 0);
        REQUIRE(cache_of(r, unit3, kZeroUnit).nr_cache == 0);
        // (pwrite: a store through the mapping would fault read-ahead in.)
        std::vector<char> zeros(half, 0);
        REQUIRE(pwrite(r->file->fd, zeros.data(), half, (off_t)(r->file_off + unit3)) == (ssize_t)half);
        REQUIRE(cache_of(r, unit3 + half, half).nr_cache == 0);
        uint64_t z0 = g_stats.writeback_zeroed_bytes.load();
        CHECK(writeback_pass(true) >= 1);
        zeroed = g_stats.writeback_zeroed_bytes.load() - z0;
        if (zeroed == kLen - kZeroUnit) break;
    }
    CHECK(zeroed == kLen - kZeroUnit);
    Cachestat cs = cache_of(r, unit3, kZeroUnit);
    CHECK(cs.nr_dirty == 0);
    CHECK(cs.nr_cache * 4096 == half); // written, still cached; the rest not read
    CHECK(p[unit3] == 0);
    CHECK(p[unit3 + kZeroUnit - 1] == 0);
    large_free(p);
    reaper_drain();
}

TEST_CASE("zeros over a range written back before are written again, not zeroed") {
    // ext4 drops the pages before it converts the extents: were the
    // conversion to fail, a written extent would show its old bytes
    // (zero_range.h). Data written back, then zeros stored over it.
    test::bring_up();
    zero_extents_forget();
    unsigned char *p = disk_region();
    const Region *r = arena::region_at(p);
    memset(p, 9, kLen);
    REQUIRE(madvise(p, kLen, MADV_DONTNEED) == 0);
    REQUIRE(fdatasync(r->file->fd) == 0);
    fill(p, 0);
    memset(p, 0, 4096);
    uint64_t z0 = g_stats.writeback_zeroed_bytes.load();
    CHECK(writeback_pass(true) >= 1);
    CHECK(g_stats.writeback_zeroed_bytes.load() - z0 == 0);
    CHECK(cache_of(r, 0, kLen).nr_dirty == 0);
    CHECK(p[0] == 0);
    CHECK(p[kLen / 2] == 0);
    CHECK(p[kLen - 1] == 0);
    large_free(p);
    reaper_drain();
}
