// test_large.cpp — the large path end to end, without preloading: regions
// are published, zeroed, resized in place or moved without losing bytes,
// retired, and refused with ENOMEM for impossible sizes.
#include "shim_fixture.h"

#include "large/policy.h"
#include "backing/reaper.h"
#include "registry/region.h"
#include "spillway.h"
#include "stats/stats.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <mimalloc.h>

using namespace spillway;

static void *alloc(size_t n, unsigned flags = 0, size_t align = 0) {
    bool use_small = false;
    void *p = large_alloc(n, align, flags, &use_small);
    REQUIRE_FALSE(use_small);
    return p;
}

TEST_CASE("a large allocation is a published, zeroed region") {
    test::bring_up();
    for (unsigned flags : {0u, (unsigned)SPILLWAY_PREFER_DISK, (unsigned)SPILLWAY_PREFER_MEMORY}) {
        unsigned char *p = (unsigned char *)alloc(3 << 20, flags);
        REQUIRE(p);
        Region *r = arena::region_at(p);
        REQUIRE(r);
        CHECK(r->start == (uintptr_t)p);
        CHECK(r->size == 3u << 20);
        CHECK(large_usable_size(p) == 3u << 20);
        CHECK(large_usable_size(p + 100) == (3u << 20) - 100);
        CHECK(r->backing == (flags == SPILLWAY_PREFER_MEMORY ? Backing::memory : Backing::disk));
        for (size_t i = 0; i < (3u << 20); i += 4096) REQUIRE(p[i] == 0);
        memset(p, 0xEE, 3 << 20);
        large_free(p);
    }
    reaper_drain();
}

TEST_CASE("alignment up to a gigabyte is honoured") {
    test::bring_up();
    for (size_t align : {size_t(4096), size_t(2) << 20, size_t(64) << 20, size_t(1) << 30}) {
        void *p = alloc(2 << 20, 0, align);
        CHECK((uintptr_t)p % align == 0);
        large_free(p);
    }
}

TEST_CASE("realloc keeps bytes in place, when moving, and when shrinking below the threshold") {
    test::bring_up();
    unsigned char *p = (unsigned char *)alloc(2 << 20);
    for (size_t i = 0; i < (2u << 20); i++) p[i] = (unsigned char)(i * 7);
    auto intact = [&](unsigned char *q, size_t n) {
        for (size_t i = 0; i < n; i += 997)
            if (q[i] != (unsigned char)(i * 7)) return false;
        return true;
    };
    uint64_t in_place = g_stats.reallocs_in_place.load(), moved = g_stats.reallocs_moved.load();
    unsigned char *blocker = (unsigned char *)alloc(2 << 20); // likely right after p
    p = (unsigned char *)large_realloc(p, 3 << 20);           // fits p's own granule? no: moves or extends
    REQUIRE(p);
    CHECK(intact(p, 2 << 20));
    p = (unsigned char *)large_realloc(p, 40 << 20);
    CHECK(intact(p, 2 << 20));
    CHECK(g_stats.reallocs_in_place.load() + g_stats.reallocs_moved.load() >= in_place + moved + 2);
    p = (unsigned char *)large_realloc(p, 10 << 20); // shrink keeps the address
    CHECK(arena::region_at(p));
    CHECK(intact(p, 2 << 20));
    unsigned char *small = (unsigned char *)large_realloc(p, 4096);
    CHECK_FALSE(arena::owns(small));
    CHECK(intact(small, 4096));
    mi_free(small);
    large_free(blocker);
    reaper_drain();
}

TEST_CASE("anonymous and dedicated regions move by mremap, without a copy") {
    test::bring_up();
    unsigned char *a = (unsigned char *)alloc(2 << 20, kFlagAlignmentOnly); // anon
    REQUIRE(arena::region_at(a)->backing == Backing::anon);
    unsigned char *wall = (unsigned char *)alloc(2 << 20);
    a[0] = 1;
    a[(2 << 20) - 1] = 2;
    a = (unsigned char *)large_realloc(a, 64 << 20);
    CHECK(a[0] == 1);
    CHECK(a[(2 << 20) - 1] == 2);
    CHECK(a[(64 << 20) - 1] == 0);
    large_free(a);
    large_free(wall);
    reaper_drain();
}

TEST_CASE("impossible sizes fail with ENOMEM") {
    test::bring_up();
    bool use_small = false;
    errno = 0;
    CHECK(large_alloc(SIZE_MAX - 100, 0, 0, &use_small) == nullptr);
    CHECK(errno == ENOMEM);
    errno = 0;
    CHECK(large_alloc(size_t(1) << 41, 0, 0, &use_small) == nullptr); // larger than the arena
    CHECK(use_small);                                                  // the caller asks mimalloc
}

TEST_CASE("stats count regions, bytes and peaks by backing") {
    test::bring_up();
    uint64_t regions = g_stats.regions[(int)Backing::memory].load();
    void *p = alloc(5 << 20, SPILLWAY_PREFER_MEMORY);
    CHECK(g_stats.regions[(int)Backing::memory].load() == regions + 1);
    CHECK(g_stats.peak_bytes[(int)Backing::memory].load() >= (5u << 20));
    large_free(p);
    reaper_drain();
    CHECK(stats_json().find("\"memory\":") != std::string::npos);
}
