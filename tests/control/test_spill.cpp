// test_spill.cpp — proves spillway_spill moves a region's bytes to a
// reserved spill file in place: same address, same bytes (including the
// zeros of pages never touched), now page cache that can be released, with
// its access advice kept; from anonymous memory and from a memfd; that a
// region already on disk is left alone; and that it refuses (-EINVAL)
// anything but the start of a live region, and (-EPERM) a fork child's
// inherited private copy. Concurrent access during a spill is
// test_spill_concurrent.cpp. Runs with SPILLWAY_POLICY=anon.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace control_test;

TEST_CASE("an anonymous region moves to a spill file in place, bytes intact") {
    size_t size = 64 * MiB;
    char *p = (char *)malloc(size);
    REQUIRE(spillway_backing(p) == SPILLWAY_ANON);
    fill(p, 0, size, 1);
    REQUIRE(spillway_spill(p) == 0);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(spillway_is_disk_backed(p + size - 1) == 1);
    CHECK(maps_line_of(p).find(spill_dir()) != std::string::npos); // the kernel agrees
    CHECK(first_mismatch(p, 0, size, 1) == SIZE_MAX);
    // It is page cache now: it can be given back, and refaults intact.
    CHECK(spillway_release_page_cache(p) == 0);
    CHECK(spillway_residency(p, size) < (long)(size / 20));
    CHECK(first_mismatch(p, 0, size, 1) == SIZE_MAX);
    fill(p, 0, size, 2); // and is writable
    CHECK(first_mismatch(p, 0, size, 2) == SIZE_MAX);
    free(p);
}

TEST_CASE("pages never touched still read as zero after a spill") {
    size_t size = 64 * MiB, stride = 16 * page_size();
    char *p = (char *)malloc(size);
    for (size_t off = 0; off < size; off += stride) fill(p, off, page_size(), 3);
    REQUIRE(spillway_spill(p) == 0);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    for (size_t off = 0; off < size; off += stride) {
        REQUIRE(first_mismatch(p, off, page_size(), 3) == SIZE_MAX);
        REQUIRE(first_nonzero(p, off + page_size(), stride - page_size()) == SIZE_MAX);
    }
    free(p);
}

TEST_CASE("a memfd region moves to a spill file in place, bytes intact") {
    size_t size = 32 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_MEMORY);
    REQUIRE(spillway_backing(p) == SPILLWAY_MEMORY);
    fill(p, 0, size / 2, 4); // half: the other half is a hole in the memfd
    REQUIRE(spillway_spill(p) == 0);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(first_mismatch(p, 0, size / 2, 4) == SIZE_MAX);
    CHECK(first_nonzero(p, size / 2, size / 2) == SIZE_MAX);
    free(p);
}

TEST_CASE("a random-access region keeps MADV_RANDOM after its spill") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_RANDOM_ACCESS);
    REQUIRE(spillway_backing(p) == SPILLWAY_MEMORY);
    REQUIRE(has_random_advice(p));
    fill(p, 0, size, 5);
    REQUIRE(spillway_spill(p) == 0);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(has_random_advice(p));
    CHECK(first_mismatch(p, 0, size, 5) == SIZE_MAX);
    free(p);
}

TEST_CASE("a region already on disk is left where it is") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    fill(p, 0, size, 6);
    std::string before = maps_line_of(p);
    CHECK(spillway_spill(p) == 0);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(maps_line_of(p) == before);
    CHECK(first_mismatch(p, 0, size, 6) == SIZE_MAX);
    free(p);
}

TEST_CASE("spill refuses anything but the start of a live region, changing nothing") {
    size_t size = 8 * MiB;
    char *p = (char *)malloc(size);
    fill(p, 0, size, 7);
    char *small = (char *)malloc(100);
    int on_stack = 0;
    CHECK(spillway_spill(p + 4096) == -EINVAL);
    CHECK(spillway_spill(p + size - 1) == -EINVAL);
    CHECK(spillway_spill(nullptr) == -EINVAL);
    CHECK(spillway_spill(small) == -EINVAL);
    CHECK(spillway_spill(&on_stack) == -EINVAL);
    CHECK(spillway_backing(p) == SPILLWAY_ANON);
    CHECK(first_mismatch(p, 0, size, 7) == SIZE_MAX);
    volatile uintptr_t was = (uintptr_t)p; // only its value is used after the free
    free(p);
    CHECK(spillway_spill((void *)was) == -EINVAL); // freed
    free(small);
}

TEST_CASE("a fork child cannot spill the private copy of a region it inherited") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_MEMORY);
    fill(p, 0, size, 8);
    int status = in_fork_child([&] {
        if (spillway_spill(p) != -EPERM) return 1;
        if (spillway_backing(p) != SPILLWAY_MEMORY) return 2;
        return first_mismatch(p, 0, size, 8) == SIZE_MAX ? 0 : 3;
    });
    CHECK(status == 0);
    CHECK(spillway_backing(p) == SPILLWAY_MEMORY);
    free(p);
}
