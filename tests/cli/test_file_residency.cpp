// test_file_residency.cpp — file_residency.cpp: cachestat and the mincore
// fallback measure the same thing, and see a release.
#include "file_residency.h"
#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <vector>

using namespace spillway::cli;

TEST_CASE("written pages are resident; after write-back and DONTNEED they are not") {
    TempDir dir;
    std::string path = dir.path + "/f";
    int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    const size_t size = 4 << 20;
    std::vector<char> data(size, 'x');
    REQUIRE(write(fd, data.data(), size) == (ssize_t)size);

    Residency best = measure_residency(fd, size);
    Residency mincore = measure_residency(fd, size, ResidencyMethod::mincore_only);
    REQUIRE(best.known);
    REQUIRE(mincore.known);
    CHECK(std::string(mincore.method) == "mincore");
    CHECK(best.resident == size);
    CHECK(mincore.resident == size);
    if (best.dirty_known) CHECK(best.dirty > 0); // not yet written back

    REQUIRE(fdatasync(fd) == 0);
    REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    CHECK(measure_residency(fd, size).resident == 0);
    CHECK(measure_residency(fd, size, ResidencyMethod::mincore_only).resident == 0);
    close(fd);
}

TEST_CASE("an empty file has nothing resident") {
    TempDir dir;
    std::string path = dir.path + "/empty";
    int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    Residency r = measure_residency(fd, 0, ResidencyMethod::mincore_only);
    CHECK(r.known);
    CHECK(r.resident == 0);
    close(fd);
}
