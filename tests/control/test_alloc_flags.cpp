// test_alloc_flags.cpp — proves spillway_alloc places a buffer where each
// flag asks, checked against the kernel's own view (/proc/self/maps and the
// VmFlags of /proc/self/smaps), not only against spillway_backing: no flag
// follows the policy (auto: disk), PREFER_DISK is a reserved spill file,
// PREFER_MEMORY a memfd, RANDOM_ACCESS memory while the cgroup has headroom
// (this process's cgroup has no limit) and always with MADV_RANDOM; and that
// contradictory or unknown flags are refused with EINVAL. The no-headroom
// half of RANDOM_ACCESS is test_random_access_cgroup.cpp; the fallback of
// PREFER_DISK is test_unusable_dir.cpp. Runs with SPILLWAY_POLICY=auto.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace control_test;

static void check_usable(char *p, size_t size, uint64_t seed) {
    fill(p, 0, size, seed);
    CHECK(first_mismatch(p, 0, size, seed) == SIZE_MAX);
}

TEST_CASE("no flag follows the configured policy (auto: a spill file)") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, 0);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(maps_line_of(p).find(spill_dir()) != std::string::npos);
    CHECK_FALSE(has_random_advice(p)); // born streaming (>= 8 MiB): the detector sets MADV_RANDOM later
    check_usable(p, size, 1);
    volatile uintptr_t was = (uintptr_t)p;
    free(p);
    CHECK(spillway_backing((void *)was) == SPILLWAY_NONE);
}

TEST_CASE("PREFER_DISK is a reserved spill file, whatever the size") {
    for (size_t size : {size_t(64) * KiB /* under the threshold */, size_t(16) * MiB, size_t(300) * MiB}) {
        INFO(size << " bytes");
        char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
        REQUIRE(p != nullptr);
        CHECK(spillway_backing(p) == SPILLWAY_DISK);
        CHECK(maps_line_of(p).find(spill_dir()) != std::string::npos);
        check_usable(p, size, 2);
        free(p);
    }
}

TEST_CASE("PREFER_MEMORY is a memfd") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_MEMORY);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_MEMORY);
    CHECK(maps_line_of(p).find("/memfd:") != std::string::npos);
    check_usable(p, size, 3);
    free(p);
}

TEST_CASE("RANDOM_ACCESS is memory with MADV_RANDOM while the cgroup has headroom") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_RANDOM_ACCESS);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_MEMORY);
    CHECK(has_random_advice(p));
    check_usable(p, size, 4);
    free(p);
}

TEST_CASE("RANDOM_ACCESS combines with an explicit home and keeps its advice") {
    size_t size = 16 * MiB;
    char *d = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK | SPILLWAY_RANDOM_ACCESS);
    REQUIRE(d != nullptr);
    CHECK(spillway_backing(d) == SPILLWAY_DISK);
    CHECK(has_random_advice(d));
    check_usable(d, size, 5);
    char *m = (char *)spillway_alloc(size, SPILLWAY_PREFER_MEMORY | SPILLWAY_RANDOM_ACCESS);
    REQUIRE(m != nullptr);
    CHECK(spillway_backing(m) == SPILLWAY_MEMORY);
    CHECK(has_random_advice(m));
    free(d);
    free(m);
}

TEST_CASE("contradictory and unknown flags are refused with EINVAL") {
    for (unsigned flags : {unsigned(SPILLWAY_PREFER_DISK | SPILLWAY_PREFER_MEMORY), 8u, 1u << 31,
                           unsigned(SPILLWAY_PREFER_DISK | SPILLWAY_PREFER_MEMORY | SPILLWAY_RANDOM_ACCESS)}) {
        INFO("flags " << flags);
        errno = 0;
        CHECK(spillway_alloc(16 * MiB, flags) == nullptr);
        CHECK(errno == EINVAL);
    }
}

TEST_CASE("an impossible size is NULL with ENOMEM") {
    errno = 0;
    CHECK(spillway_alloc(size_t(1) << 62, SPILLWAY_PREFER_DISK) == nullptr);
    CHECK(errno == ENOMEM);
}
