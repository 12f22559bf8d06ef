// test_zero_range.cpp — cached_zero says yes only for a range wholly in page
// cache and all zero, and reads no page that was not cached; zero_range turns a
// range of dirty zeros into unwritten extents (blocks still reserved, pages
// gone from the page cache, nothing written) and is trusted with that on
// ext4 alone, and a filesystem without the call (tmpfs) answers -EOPNOTSUPP
// with the file unchanged.
#include "shim_fixture.h"
#include "test_tmp.h"

#include "cachestat.h"
#include "os/zero_range.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {

constexpr size_t MiB = size_t(1) << 20, kLen = 8 * MiB;

int disk_file(size_t n) {
    int fd = open(test::tmp_base().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(fallocate(fd, 0, 0, (off_t)n) == 0);
    return fd;
}

Cachestat cache_of(int fd, uint64_t off, size_t len) {
    Cachestat cs{};
    REQUIRE(cachestat(fd, CachestatRange{off, len}, cs) == 0);
    return cs;
}

// Every extent of [off, off+len) is allocated and unwritten (FIEMAP).
bool all_unwritten(int fd, uint64_t off, size_t len) {
    constexpr unsigned kMax = 64;
    std::vector<char> buf(sizeof(fiemap) + kMax * sizeof(fiemap_extent));
    auto *fm = (fiemap *)buf.data();
    fm->fm_start = off;
    fm->fm_length = len;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kMax;
    REQUIRE(ioctl(fd, FS_IOC_FIEMAP, fm) == 0);
    uint64_t covered = 0;
    for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
        const fiemap_extent &e = fm->fm_extents[i];
        if (!(e.fe_flags & FIEMAP_EXTENT_UNWRITTEN)) return false;
        uint64_t lo = e.fe_logical > off ? e.fe_logical : off;
        uint64_t hi = e.fe_logical + e.fe_length < off + len ? e.fe_logical + e.fe_length : off + len;
        covered += hi > lo ? hi - lo : 0;
    }
    return covered == len;
}

uint64_t blocks_of(int fd) {
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    return (uint64_t)st.st_blocks;
}

} // namespace

TEST_CASE("cached_zero: yes only for a range wholly in page cache and all zero, without reading the disk") {
    int fd = disk_file(kLen);
    static unsigned char scratch[kZeroScratch];
    // Unwritten and never read: nothing cached, so no.
    CHECK(cached_zero(fd, 0, kLen, scratch) == 0);
    CHECK(cache_of(fd, 0, kLen).nr_cache == 0); // and asking read nothing into the cache
    std::vector<char> zeros(kLen, 0);
    REQUIRE(pwrite(fd, zeros.data(), kLen, 0) == (ssize_t)kLen);
    CHECK(cached_zero(fd, 0, kLen, scratch) == 1);
    CHECK(cached_zero(fd, MiB, 3 * MiB, scratch) == 1); // a part of it
    // One byte that is not zero, in the last page of the range asked.
    REQUIRE(pwrite(fd, "x", 1, (off_t)(kLen - 1)) == 1);
    CHECK(cached_zero(fd, 0, kLen, scratch) == 0);
    CHECK(cached_zero(fd, 0, kLen - 4096, scratch) == 1);
    // A part written back and dropped from the page cache (whole 2 MiB: the
    // page cache may hold the file in large folios): its bytes are on disk
    // only now, and cached_zero does not read them.
    REQUIRE(fdatasync(fd) == 0);
    REQUIRE(posix_fadvise(fd, 2 * MiB, 2 * MiB, POSIX_FADV_DONTNEED) == 0);
    REQUIRE(cache_of(fd, 2 * MiB, 2 * MiB).nr_cache == 0);
    CHECK(cached_zero(fd, 0, 4 * MiB, scratch) == 0);
    CHECK(cache_of(fd, 2 * MiB, 2 * MiB).nr_cache == 0);
    CHECK(cached_zero(fd, 0, 2 * MiB, scratch) == 1);
    close(fd);
}

TEST_CASE("zero_range: dirty zeros become unwritten extents, blocks kept, pages dropped, bytes zero") {
    int fd = disk_file(kLen);
    uint64_t reserved = blocks_of(fd);
    struct statfs fs;
    REQUIRE(fstatfs(fd, &fs) == 0);
    CHECK(zero_range_keeps_reservation(fd) == (fs.f_type == 0xEF53)); // ext4 only
    char *m = (char *)mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(m != MAP_FAILED);
    memset(m, 0, kLen);             // dirty zeros, as a value-initialising resize leaves them
    memset(m + 6 * MiB, 7, MiB);    // and data beside them
    REQUIRE(cache_of(fd, 0, kLen).nr_dirty > 0);
    REQUIRE(zero_range(fd, 0, 4 * MiB) == 0);
    Cachestat cs = cache_of(fd, 0, 4 * MiB);
    CHECK(cs.nr_cache == 0); // dropped, not written: nothing dirty or under writeback is left
    CHECK(cs.nr_dirty == 0);
    CHECK(all_unwritten(fd, 0, 4 * MiB));
    CHECK(blocks_of(fd) == reserved); // still reserved: a full disk cannot raise SIGBUS here
    // The mapping reads zeros there, and a store maps a page again.
    CHECK(m[0] == 0);
    CHECK(m[4 * MiB - 1] == 0);
    m[12345] = 9;
    CHECK(m[12345] == 9);
    // The data beside it is untouched.
    CHECK(m[6 * MiB] == 7);
    CHECK(m[7 * MiB - 1] == 7);
    munmap(m, kLen);
    char b = 0;
    REQUIRE(pread(fd, &b, 1, 12345) == 1);
    CHECK(b == 9);
    close(fd);
}

TEST_CASE("zero_range: tmpfs has no such call, and cached_zero cannot ask it; the file is unchanged") {
    int fd = memfd_create("test_zero_range", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, (off_t)kLen) == 0);
    REQUIRE(pwrite(fd, "abc", 3, 100) == 3);
    static unsigned char scratch[kZeroScratch];
    CHECK(cached_zero(fd, 0, 4096, scratch) == -EOPNOTSUPP);
    CHECK(zero_range(fd, 0, kLen) == -EOPNOTSUPP);
    CHECK_FALSE(zero_range_keeps_reservation(fd));
    char b[3] = {};
    REQUIRE(pread(fd, b, 3, 100) == 3);
    CHECK(memcmp(b, "abc", 3) == 0);
    close(fd);
}
