// test_unusable_dir.cpp — proves what the API does when the spill directory
// cannot be used (here: it is on tmpfs, which the shim refuses; the policy is
// memory so start-up goes on): PREFER_DISK falls back to memory as
// spillway.h promises ("a reserved spill file; memory if none can be had"),
// and spill and export, which need a file, refuse with -ENOENT and leave the
// region where and as it was.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>

using namespace control_test;

TEST_CASE("the shim is active although its spill directory is refused") {
    REQUIRE(spillway_is_active() == 1);
}

TEST_CASE("PREFER_DISK falls back to memory when no spill file can be had") {
    // Regression test for control-shim-bugs.md#4 (fixed in c534073): the
    // fallback was anonymous memory, not the memfd spillway.h and issue 3
    // promise (shareable without a copy).
    char *p = (char *)spillway_alloc(16 * MiB, SPILLWAY_PREFER_DISK);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_MEMORY);
    fill(p, 0, 16 * MiB, 1);
    CHECK(first_mismatch(p, 0, 16 * MiB, 1) == SIZE_MAX);
    free(p);
}

TEST_CASE("spill and export refuse with -ENOENT and leave the region unchanged") {
    char *p = (char *)malloc(16 * MiB); // policy memory
    REQUIRE(spillway_backing(p) == SPILLWAY_MEMORY);
    fill(p, 0, 16 * MiB, 2);
    char path[4096];
    CHECK(spillway_spill(p) == -ENOENT);
    CHECK(spillway_export(p, path, sizeof path) == -ENOENT);
    CHECK(spillway_backing(p) == SPILLWAY_MEMORY);
    CHECK(first_mismatch(p, 0, 16 * MiB, 2) == SIZE_MAX);
    free(p);
}

TEST_CASE("spillway_alloc_disk gets no buffer, and spilling is reported off, without a usable directory") {
    errno = 0;
    CHECK(spillway_alloc_disk(16 * MiB, 0) == nullptr);
    CHECK(errno == ENOENT);
    CHECK(spillway_can_spill() == 0);
    CHECK(spillway_threshold() == 1 * MiB); // still routing large allocations
}
