// test_extents.cpp — written_extents lists what holds data on disk: not a
// fallocated range never written back (even with dirty pages over it: no
// FIEMAP_FLAG_SYNC, nothing is written to answer; btrfs alone reports such
// pages as delayed allocation, data to come, and the list then has them),
// not a hole, but a range written back, clipped to the range asked and
// relative to it.
#include "shim_fixture.h"
#include "test_tmp.h"

#include "cachestat.h"
#include "os/extents.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {
constexpr size_t MiB = size_t(1) << 20;
constexpr long kBtrfsMagic = 0x9123683E; // BTRFS_SUPER_MAGIC

int tmp_file() {
    int fd = open(test::tmp_base().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    return fd;
}
} // namespace

TEST_CASE("written_extents: fallocated and dirty is not on disk; written back is, clipped to the range asked") {
    int fd = tmp_file();
    REQUIRE(fallocate(fd, 0, 0, 8 * MiB) == 0);
    std::vector<Extent> on_disk;
    REQUIRE(written_extents(fd, 0, 8 * MiB, on_disk));
    CHECK(on_disk.empty());
    // Dirty pages over the unwritten extents: still nothing on disk (on
    // btrfs: those pages, as delayed allocation), and asking wrote nothing
    // back.
    std::vector<char> data(MiB, 3);
    REQUIRE(pwrite(fd, data.data(), MiB, 2 * MiB) == (ssize_t)MiB);
    REQUIRE(written_extents(fd, 0, 8 * MiB, on_disk));
    struct statfs fs;
    REQUIRE(fstatfs(fd, &fs) == 0);
    if (fs.f_type == kBtrfsMagic) {
        REQUIRE(on_disk.size() == 1);
        CHECK(on_disk[0].off == 2 * MiB);
        CHECK(on_disk[0].len == MiB);
    } else {
        CHECK(on_disk.empty());
    }
    Cachestat cs{};
    REQUIRE(cachestat(fd, CachestatRange{2 * MiB, MiB}, cs) == 0);
    CHECK(cs.nr_dirty * 4096 == MiB);
    // Written back: [2 MiB, 3 MiB) holds data.
    REQUIRE(fdatasync(fd) == 0);
    REQUIRE(written_extents(fd, 0, 8 * MiB, on_disk));
    REQUIRE(on_disk.size() == 1);
    CHECK(on_disk[0].off == 2 * MiB);
    CHECK(on_disk[0].len == MiB);
    // Asked from inside it: clipped, relative to the range asked.
    REQUIRE(written_extents(fd, 2 * MiB + 4096, 4 * MiB, on_disk));
    REQUIRE(on_disk.size() == 1);
    CHECK(on_disk[0].off == 0);
    CHECK(on_disk[0].len == MiB - 4096);
    REQUIRE(written_extents(fd, 4 * MiB, 4 * MiB, on_disk));
    CHECK(on_disk.empty());
    close(fd);
}

TEST_CASE("written_extents: a hole holds nothing on disk") {
    int fd = tmp_file();
    REQUIRE(ftruncate(fd, 4 * MiB) == 0);
    std::vector<Extent> on_disk;
    REQUIRE(written_extents(fd, 0, 4 * MiB, on_disk));
    CHECK(on_disk.empty());
    close(fd);
}
