// test_writeback.cpp — paced writeback: the trigger rule, and a pass that
// really cleans the dirty pages of a disk region (seen in /proc/self/smaps).
#include "shim_fixture.h"

#include "arena.h"
#include "region.h"
#include "reaper.h"
#include "spillway.h"
#include "writeback.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

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
} // namespace

TEST_CASE("writeback is due only under a limit, above 1/16 of it (at least 16 MiB)") {
    DirtyFigures f;
    f.dirty = 10ull << 30;
    CHECK_FALSE(writeback_due(f)); // no limit: the kernel's flushers suffice
    f.limited = true;
    f.limit = 1ull << 30;
    f.dirty = 64ull << 20;
    CHECK_FALSE(writeback_due(f));
    f.dirty = (64ull << 20) + 4096;
    CHECK(writeback_due(f));
    CHECK(writeback_trigger_bytes(1ull << 30) == 64ull << 20);
    CHECK(writeback_trigger_bytes(64ull << 20) == 16ull << 20);
    f.limit = 64ull << 20;
    f.dirty = 8ull << 20;
    CHECK_FALSE(writeback_due(f));
}

TEST_CASE("a pass writes back the dirty pages of disk regions, pool and dedicated") {
    test::bring_up();
    bool use_small = false;
    const size_t small = 8 << 20, big = 256 << 20; // a pool region, and a dedicated file
    unsigned char *a = (unsigned char *)large_alloc(small, 0, SPILLWAY_PREFER_DISK, &use_small);
    unsigned char *b = (unsigned char *)large_alloc(big, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(arena::region_at(a)->backing == Backing::disk);
    REQUIRE(arena::region_at(b)->backing == Backing::disk);
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
    CHECK(writeback_pass(true) >= 2);
    CHECK(dirty_kb(a) == 0);
    CHECK(dirty_kb(b) == 0);
    CHECK(a[small - 1] == 1 + (tries - 1) % 100); // the bytes are untouched
    CHECK(b[(32 << 20) - 1] == 2 + (tries - 1) % 100);
    large_free(a);
    large_free(b);
    reaper_drain();
}
