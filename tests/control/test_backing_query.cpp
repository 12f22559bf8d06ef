// test_backing_query.cpp — proves spillway_is_active, spillway_backing and
// spillway_is_disk_backed report where a region's bytes live, for the start
// of a region and for any interior pointer (a view), and answer NONE / 0 for
// every pointer the shim does not own (small, stack, static, NULL, freed,
// past the region's end). Runs with SPILLWAY_POLICY=disk, threshold 1 MiB.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

using namespace control_test;

static int static_word = 1;

TEST_CASE("the shim is active when linked and configured") {
    REQUIRE(spillway_is_active() == 1);
}

TEST_CASE("a large malloc is disk-backed at its start and at every interior pointer") {
    size_t size = 8 * MiB;
    char *p = (char *)malloc(size);
    REQUIRE(p != nullptr);
    for (size_t off : {size_t(0), size_t(1), size / 2 + 13, size - 1}) {
        INFO("offset " << off);
        CHECK(spillway_backing(p + off) == SPILLWAY_DISK);
        CHECK(spillway_is_disk_backed(p + off) == 1);
    }
    free(p);
}

TEST_CASE("a region with a dedicated file (above spill.dedicated_min) is disk-backed") {
    size_t size = 300 * MiB;
    char *p = (char *)malloc(size);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(spillway_is_disk_backed(p + size - 1) == 1);
    free(p);
}

TEST_CASE("memory and anonymous regions are reported as such, and not as disk") {
    char *m = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_MEMORY);
    REQUIRE(m != nullptr);
    CHECK(spillway_backing(m) == SPILLWAY_MEMORY);
    CHECK(spillway_backing(m + 3 * MiB) == SPILLWAY_MEMORY);
    CHECK(spillway_is_disk_backed(m) == 0);

    // An alignment above mimalloc's limit makes a small request a region,
    // always anonymous.
    void *a = nullptr;
    REQUIRE(posix_memalign(&a, 4 * MiB, 4096) == 0);
    CHECK(spillway_backing(a) == SPILLWAY_ANON);
    CHECK(spillway_is_disk_backed(a) == 0);
    free(m);
    free(a);
}

TEST_CASE("pointers the shim does not own are NONE") {
    char *small = (char *)malloc(100);
    char *below = (char *)malloc(512 * KiB); // under the 1 MiB threshold
    int on_stack = 0;
    CHECK(spillway_backing(small) == SPILLWAY_NONE);
    CHECK(spillway_backing(below) == SPILLWAY_NONE);
    CHECK(spillway_backing(&on_stack) == SPILLWAY_NONE);
    CHECK(spillway_backing(&static_word) == SPILLWAY_NONE);
    CHECK(spillway_backing(nullptr) == SPILLWAY_NONE);
    CHECK(spillway_is_disk_backed(small) == 0);
    CHECK(spillway_is_disk_backed(nullptr) == 0);
    free(small);
    free(below);
}

TEST_CASE("a pointer past the region's last page is NONE, though inside its address range") {
    // 3 MiB of mapping in a 4 MiB (two-granule) slot of the arena.
    char *p = (char *)malloc(3 * MiB);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p + 3 * MiB - 1) == SPILLWAY_DISK);
    CHECK(spillway_backing(p + 3 * MiB) == SPILLWAY_NONE);
    free(p);
}

TEST_CASE("a freed region is NONE at once") {
    char *p = (char *)malloc(8 * MiB);
    REQUIRE(spillway_backing(p) == SPILLWAY_DISK);
    volatile uintptr_t was = (uintptr_t)p; // only its value is used after the free
    free(p);
    CHECK(spillway_backing((void *)was) == SPILLWAY_NONE);
    CHECK(spillway_is_disk_backed((void *)was) == 0);
}
