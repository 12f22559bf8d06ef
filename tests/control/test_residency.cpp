// test_residency.cpp — proves spillway_residency measures (never assumes)
// the bytes of [p, p+len) that are in RAM or page cache: for disk regions
// (the cachestat path, pool and dedicated files), for memory and anonymous
// regions and foreign memory (the mincore path), for views and partial
// ranges, and that both paths agree; and that it refuses NULL, an empty
// range and an unmapped address. Runs with SPILLWAY_POLICY=disk.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

using namespace control_test;

TEST_CASE("a written disk region is resident; an unwritten one is not") {
    for (size_t size : {size_t(16) * MiB /* pool file */, size_t(300) * MiB /* dedicated */}) {
        INFO("region of " << size / MiB << " MiB");
        char *p = (char *)malloc(size);
        REQUIRE(spillway_backing(p) == SPILLWAY_DISK);
        CHECK(spillway_residency(p, size) == 0);
        fill(p, 0, size, 1);
        long r = spillway_residency(p, size);
        CHECK(r >= (long)(size * 9 / 10));
        CHECK(r <= (long)size);
        free(p);
    }
}

static char *exact_disk_region(size_t size) {
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK | SPILLWAY_RANDOM_ACCESS);
    REQUIRE(spillway_backing(p) == SPILLWAY_DISK);
    REQUIRE(has_random_advice(p));
    return p;
}

TEST_CASE("a view's range counts only its own pages") {
    size_t size = 32 * MiB;
    char *p = exact_disk_region(size);
    fill(p, 0, size / 2, 2); // the first half only
    CHECK(spillway_residency(p, size / 2) == (long)(size / 2));
    CHECK(spillway_residency(p + size / 2, size / 2) == 0);
    // An unaligned interior view covering one written and one unwritten page.
    long r = spillway_residency(p + size / 2 - 100, 200);
    CHECK(r == (long)page_size());
    free(p);
}

TEST_CASE("the cachestat and mincore paths agree on a disk region") {
    // A range reaching past the region's end is not one region: it is
    // measured with mincore, the reserved arena space counting as absent.
    // 15 MiB: the region's own last 2 MiB granule keeps 1 MiB reserved
    // past its end (beyond that may lie a freed region the recycle cache
    // keeps mapped, whose pages are resident).
    size_t size = 15 * MiB;
    char *p = exact_disk_region(size);
    fill(p, 0, 6 * MiB, 3);
    long fast = spillway_residency(p, size);
    long slow = spillway_residency(p, size + 1 * MiB);
    CHECK(fast == (long)(6 * MiB));
    CHECK(slow == fast);
    free(p);
}

TEST_CASE("memory, anonymous and foreign memory are measured with mincore") {
    char *m = (char *)spillway_alloc(8 * MiB, SPILLWAY_PREFER_MEMORY);
    REQUIRE(spillway_backing(m) == SPILLWAY_MEMORY);
    CHECK(spillway_residency(m, 8 * MiB) == 0);
    fill(m, 0, 4 * MiB, 4);
    CHECK(spillway_residency(m, 8 * MiB) == (long)(4 * MiB));

    // A below-threshold request with an alignment mimalloc refuses becomes
    // an anonymous region.
    void *a = nullptr;
    REQUIRE(posix_memalign(&a, 4 * MiB, 1 * MiB - 4096) == 0);
    REQUIRE(spillway_backing(a) == SPILLWAY_ANON);
    fill(a, 0, 512 * KiB, 5);
    CHECK(spillway_residency(a, 512 * KiB) == (long)(512 * KiB));
    CHECK(spillway_residency((char *)a + 512 * KiB, 512 * KiB - 4096) == 0);

    char *small = (char *)malloc(64);
    memset(small, 1, 64);
    CHECK(spillway_residency(small, 64) == (long)page_size());
    free(m);
    free(a);
    free(small);
}

TEST_CASE("residency refuses NULL, an empty range and unmapped memory") {
    char *p = (char *)malloc(4 * MiB);
    CHECK(spillway_residency(nullptr, 4096) == -EINVAL);
    CHECK(spillway_residency(p, 0) == -EINVAL);
    void *gone = mmap(nullptr, 1 * MiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(gone != MAP_FAILED);
    munmap(gone, 1 * MiB);
    CHECK(spillway_residency(gone, 1 * MiB) == -ENOMEM);
    free(p);
}
