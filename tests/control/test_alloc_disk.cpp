// test_alloc_disk.cpp — proves the calls the Python reference API
// (tools/python/spillway/sharing.py) is built on: spillway_alloc_disk
// is a reserved spill file (checked in /proc/self/maps) or NULL with the
// reason in errno — here a reservation refused by RLIMIT_FSIZE (EFBIG), never
// the fallback spillway_alloc(PREFER_DISK) takes — and takes no flag but
// RANDOM_ACCESS (EINVAL); spillway_threshold is the configured 1 MiB; spillway_can_spill
// is 1 with a usable directory; spillway_memory_fits is 1 in a cgroup
// without a limit; spillway_region gives any interior pointer's region
// start and allocated size, and -EINVAL for memory the shim does not own;
// spillway_file_path gives the name of an exported or mapped file without
// ever making one (a file of its own even below dedicated_min: nothing moves).
// The unusable-directory half of spillway_alloc_disk is test_unusable_dir.cpp.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <sstream>
#include <string>
#include <cstdint>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>

using namespace control_test;

TEST_CASE("spillway_alloc_disk is a reserved spill file") {
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc_disk(size, 0);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(maps_line_of(p).find(spill_dir()) != std::string::npos);
    CHECK(first_nonzero(p, 0, size) == SIZE_MAX);
    fill(p, 0, size, 1);
    CHECK(first_mismatch(p, 0, size, 1) == SIZE_MAX);
    free(p);
}

TEST_CASE("spillway_alloc_disk is NULL with the reason when the file cannot be reserved") {
    // A file-size limit makes fallocate fail (EFBIG) exactly like a full
    // filesystem would; SIGXFSZ is ignored so the failure is a return value.
    struct rlimit was;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &was) == 0);
    auto old_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = was;
    small.rlim_cur = 4 * MiB;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
    errno = 0;
    void *required = spillway_alloc_disk(64 * MiB, 0);
    int required_errno = errno;
    void *preferred = spillway_alloc(64 * MiB, SPILLWAY_PREFER_DISK);
    REQUIRE(setrlimit(RLIMIT_FSIZE, &was) == 0);
    signal(SIGXFSZ, old_handler);
    CHECK(required == nullptr);
    CHECK(required_errno == EFBIG);
    REQUIRE(preferred != nullptr); // PREFER_DISK still falls back (memfd is file-size
    CHECK(spillway_backing(preferred) != SPILLWAY_DISK); // limited too: anon here)
    free(preferred);
    void *after = spillway_alloc_disk(64 * MiB, 0); // the limit gone: a file again
    REQUIRE(after != nullptr);
    CHECK(spillway_backing(after) == SPILLWAY_DISK);
    free(after);
}

TEST_CASE("spillway_alloc_disk refuses every flag but RANDOM_ACCESS") {
    for (unsigned flags : {unsigned(SPILLWAY_PREFER_MEMORY), unsigned(SPILLWAY_PREFER_DISK), 8u}) {
        INFO("flags " << flags);
        errno = 0;
        CHECK(spillway_alloc_disk(16 * MiB, flags) == nullptr);
        CHECK(errno == EINVAL);
    }
}

TEST_CASE("spillway_alloc_disk keeps random-access advice") {
    char *p = (char *)spillway_alloc_disk(16 * MiB, SPILLWAY_RANDOM_ACCESS);
    REQUIRE(p != nullptr);
    CHECK(spillway_backing(p) == SPILLWAY_DISK);
    CHECK(has_random_advice(p));
    free(p);
}

TEST_CASE("threshold, spilling and memory headroom are reported") {
    CHECK(spillway_threshold() == 1 * MiB);
    CHECK(spillway_can_spill() == 1);
    CHECK(spillway_memory_fits(16 * MiB) == 1); // this test's cgroup has no limit
}

TEST_CASE("spillway_region gives the region of any interior pointer") {
    size_t size = 3 * MiB + 123;
    char *p = (char *)malloc(size);
    REQUIRE(spillway_backing(p) == SPILLWAY_DISK);
    void *start = nullptr;
    size_t got = 0;
    CHECK(spillway_region(p + 2 * MiB + 7, &start, &got) == 0);
    CHECK(start == (void *)p);
    CHECK(got == size);
    CHECK(spillway_region(p, nullptr, nullptr) == 0);
    free(p);
    int local = 0;
    CHECK(spillway_region(&local, &start, &got) == -EINVAL);
    char *small = (char *)malloc(1000);
    CHECK(spillway_region(small, &start, &got) == -EINVAL);
    free(small);
}

TEST_CASE("spillway_file_path names an exported or mapped file, and never names one itself") {
    empty_spill_dir();
    size_t size = 8 * MiB; // below dedicated_min: still a file of its own
    char *p = (char *)spillway_alloc_disk(size, 0);
    REQUIRE(p != nullptr);
    auto inode_of = [](const void *q) {
        std::istringstream line(maps_line_of(q));
        std::string range, perms, off, dev, inode;
        line >> range >> perms >> off >> dev >> inode;
        return inode;
    };
    std::string inode = inode_of(p);
    fill(p, 0, size, 7);
    char path[4096], again[4096], tiny[4];
    CHECK(spillway_file_path(p + 100, path, sizeof path) == -ENOENT);
    CHECK(list_dir(spill_dir()).empty()); // no name was made
    REQUIRE(spillway_export(p, path, sizeof path) == 0);
    CHECK(inode_of(p) == inode); // named where it was: not copied out of a pool
    CHECK(spillway_file_path(p + 100, again, sizeof again) == 0);
    CHECK(std::string(again) == path);
    CHECK(spillway_file_path(p, tiny, sizeof tiny) == -ERANGE);
    CHECK(first_mismatch(p, 0, size, 7) == SIZE_MAX);
    char *m = (char *)spillway_map(path, size);
    REQUIRE(m != nullptr);
    CHECK(spillway_file_path(m, again, sizeof again) == 0);
    CHECK(std::string(again) == path);
    CHECK(first_mismatch(m, 0, size, 7) == SIZE_MAX); // the exporter's bytes: one file
    free(m);
    free(p);
    unlink(path);
    char *anon = (char *)malloc(4 * MiB); // policy disk, but a pool file has no name
    CHECK(spillway_file_path(anon, path, sizeof path) == -ENOENT);
    free(anon);
    int local = 0;
    CHECK(spillway_file_path(&local, path, sizeof path) == -EINVAL);
}
