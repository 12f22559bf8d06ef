// test_release.cpp — proves spillway_release_page_cache gives a disk
// region's page cache back (residency over 90% after writing, under 5% after
// release), that the mapping stays valid and the data is intact after it
// refaults, that a view releases its whole region and nothing else, and that
// it refuses everything that has no page cache to give back: pointers the
// shim does not own, memory and anonymous regions, freed regions (-EINVAL),
// and a fork child's private copy (-EPERM). Runs with SPILLWAY_POLICY=disk.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace control_test;

static void write_release_refault(size_t size, uint64_t seed) {
    char *p = (char *)malloc(size);
    REQUIRE(spillway_backing(p) == SPILLWAY_DISK);
    fill(p, 0, size, seed);
    CHECK(spillway_residency(p, size) > (long)(size * 9 / 10));

    CHECK(spillway_release_page_cache(p) == 0);
    CHECK(spillway_residency(p, size) < (long)(size / 20));

    // Reading refaults every page from the file: same bytes, resident again.
    CHECK(first_mismatch(p, 0, size, seed) == SIZE_MAX);
    CHECK(spillway_residency(p, size) > (long)(size * 9 / 10));
    // Still writable, and still releasable.
    fill(p, 0, size, seed + 1);
    CHECK(spillway_release_page_cache(p) == 0);
    CHECK(first_mismatch(p, 0, size, seed + 1) == SIZE_MAX);
    free(p);
}

TEST_CASE("release drops a written pool-file region's cache; it refaults intact") {
    write_release_refault(64 * MiB, 10);
}

TEST_CASE("release drops a written dedicated-file region's cache; it refaults intact") {
    write_release_refault(512 * MiB, 20);
}

TEST_CASE("release through a view releases the whole region and no other") {
    size_t size = 32 * MiB;
    char *a = (char *)malloc(size);
    char *b = (char *)malloc(size); // its neighbour in the same pool file
    fill(a, 0, size, 30);
    fill(b, 0, size, 31);
    CHECK(spillway_release_page_cache(a + size / 2 + 7) == 0);
    CHECK(spillway_residency(a, size) < (long)(size / 20));
    CHECK(spillway_residency(b, size) > (long)(size * 9 / 10));
    CHECK(first_mismatch(a, 0, size, 30) == SIZE_MAX);
    CHECK(first_mismatch(b, 0, size, 31) == SIZE_MAX);
    free(a);
    free(b);
}

TEST_CASE("release refuses pointers the shim does not own") {
    char *small = (char *)malloc(100);
    int on_stack = 0;
    CHECK(spillway_release_page_cache(nullptr) == -EINVAL);
    CHECK(spillway_release_page_cache(small) == -EINVAL);
    CHECK(spillway_release_page_cache(&on_stack) == -EINVAL);
    char *p = (char *)malloc(3 * MiB);
    CHECK(spillway_release_page_cache(p + 3 * MiB) == -EINVAL); // past its last page
    volatile uintptr_t was = (uintptr_t)p; // only its value is used after the free
    free(p);
    CHECK(spillway_release_page_cache((void *)was) == -EINVAL); // freed
    free(small);
}

TEST_CASE("release refuses memory and anonymous regions: RAM has no page cache to give back") {
    char *m = (char *)spillway_alloc(8 * MiB, SPILLWAY_PREFER_MEMORY);
    REQUIRE(spillway_backing(m) == SPILLWAY_MEMORY);
    fill(m, 0, 8 * MiB, 40);
    CHECK(spillway_release_page_cache(m) == -EINVAL);
    CHECK(spillway_residency(m, 8 * MiB) == (long)(8 * MiB));

    void *a = nullptr;
    REQUIRE(posix_memalign(&a, 4 * MiB, 4096) == 0);
    REQUIRE(spillway_backing(a) == SPILLWAY_ANON);
    CHECK(spillway_release_page_cache(a) == -EINVAL);
    free(m);
    free(a);
}

TEST_CASE("a fork child cannot release: its private copy would be discarded") {
    size_t size = 16 * MiB;
    char *p = (char *)malloc(size);
    fill(p, 0, size, 50);
    int status = in_fork_child([&] {
        fill(p, 0, MiB, 51); // the child's private change
        if (spillway_release_page_cache(p) != -EPERM) return 1;
        if (first_mismatch(p, 0, MiB, 51) != SIZE_MAX) return 2; // the change survived
        return 0;
    });
    CHECK(status == 0);
    CHECK(first_mismatch(p, 0, size, 50) == SIZE_MAX); // the parent never saw the child's writes
    free(p);
}
