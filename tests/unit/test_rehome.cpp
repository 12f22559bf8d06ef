// test_rehome.cpp — moving a live region to a new file in place: same
// address, same bytes, and writers running during the move lose nothing.
#include "shim_fixture.h"

#include "policy.h"
#include "reaper.h"
#include "region.h"
#include "rehome.h"
#include "spillway.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

using namespace spillway;

TEST_CASE("anon, memory and pool-disk regions move to a dedicated file in place") {
    test::bring_up();
    for (unsigned flags : {(unsigned)kFlagAlignmentOnly, (unsigned)SPILLWAY_PREFER_MEMORY,
                           (unsigned)SPILLWAY_PREFER_DISK}) {
        bool use_small = false;
        const size_t n = 64 << 20;
        uint64_t *p = (uint64_t *)large_alloc(n, 0, flags, &use_small);
        REQUIRE(p);
        for (size_t i = 0; i < n / 8; i += 512) p[i] = i; // sparse: untouched pages stay zero
        Region *r = arena::region_at(p);
        SpillFile *dest = nullptr;
        REQUIRE(new_dedicated_disk_file(r->map_len, &dest) == 0);
        REQUIRE(rehome_region(r, dest) == 0);
        CHECK(arena::region_at(p) == r);
        CHECK(r->backing == Backing::disk);
        CHECK(r->file == dest);
        for (size_t i = 0; i < n / 8; i += 512) REQUIRE(p[i] == i);
        CHECK(p[1] == 0);
        large_free(p);
    }
    reaper_drain();
}

TEST_CASE("writers during the move wait and their writes land") {
    test::bring_up();
    bool use_small = false;
    const size_t n = 128 << 20, words = n / 8;
    uint64_t *p = (uint64_t *)large_alloc(n, 0, kFlagAlignmentOnly, &use_small);
    REQUIRE(p);
    std::atomic<bool> go{true};
    std::atomic<size_t> written[2] = {0, 0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 2; t++)
        writers.emplace_back([&, t] {
            size_t i = (size_t)t;
            for (; go.load(std::memory_order_relaxed) && i < words; i += 2 * 97) p[i] = i + 1;
            written[t] = i;
        });
    Region *r = arena::region_at(p);
    SpillFile *dest = nullptr;
    REQUIRE(new_dedicated_disk_file(r->map_len, &dest) == 0);
    REQUIRE(rehome_region(r, dest) == 0);
    go = false;
    for (auto &w : writers) w.join();
    for (int t = 0; t < 2; t++)
        for (size_t i = (size_t)t; i < written[t]; i += 2 * 97) REQUIRE(p[i] == i + 1);
    large_free(p);
    reaper_drain();
}
