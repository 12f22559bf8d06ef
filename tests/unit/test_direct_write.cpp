// test_direct_write.cpp — a demotion's writer: aligned ranges go to the
// disk past the page cache, anything else through it, every byte lands.
#include "os/direct_write.h"
#include "test_tmp.h"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <vector>

using namespace spillway;

namespace {
// An unnamed file on the spill disk (O_TMPFILE, as spill files are made),
// reserved like one.
int spill_like_file(size_t len) {
    int fd = open(test::tmp_base().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(fallocate(fd, 0, 0, (off_t)len) == 0);
    return fd;
}

// Pages of fd's [0, len) in page cache (mincore through a mapping).
size_t cached_pages(int fd, size_t len) {
    void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    REQUIRE(m != MAP_FAILED);
    std::vector<unsigned char> vec(len / 4096);
    REQUIRE(mincore(m, len, vec.data()) == 0);
    munmap(m, len);
    size_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
}
} // namespace

TEST_CASE("an aligned range is written past the page cache and reads back") {
    const size_t len = 4 << 20;
    int fd = spill_like_file(len);
    char *src = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(src != MAP_FAILED);
    for (size_t i = 0; i < len; i++) src[i] = (char)(i * 131 + 7);
    {
        DirectWriter w(fd);
        REQUIRE(w.direct()); // ext4, XFS and btrfs take O_DIRECT; the spill disk here is ext4
        REQUIRE(w.write(src, len, 0) == 0);
        CHECK(w.direct_bytes() == len);
        CHECK(w.buffered_bytes() == 0);
    }
    CHECK(cached_pages(fd, len) == 0); // nothing was copied into page cache
    std::vector<char> back(len);
    REQUIRE(pread(fd, back.data(), len, 0) == (ssize_t)len);
    CHECK(memcmp(back.data(), src, len) == 0);
    munmap(src, len);
    close(fd);
}

TEST_CASE("a misaligned range goes through the page cache, and its bytes land too") {
    const size_t len = 1 << 20;
    int fd = spill_like_file(len);
    std::vector<char> src(len);
    for (size_t i = 0; i < len; i++) src[i] = (char)(i * 31 + 3);
    DirectWriter w(fd);
    // 1000 bytes at 4097, from an odd address: neither aligned nor whole blocks.
    REQUIRE(w.write(src.data() + 1, 1000, 4097) == 0);
    CHECK(w.buffered_bytes() == 1000);
    CHECK(w.direct_bytes() == 0);
    char back[1000];
    REQUIRE(pread(fd, back, sizeof back, 4097) == (ssize_t)sizeof back);
    CHECK(memcmp(back, src.data() + 1, sizeof back) == 0);
    close(fd);
}

TEST_CASE("the writer leaves the file's size and descriptor as they were") {
    const size_t len = 1 << 20;
    int fd = spill_like_file(len);
    int flags = fcntl(fd, F_GETFL);
    std::vector<char> page(4096, 'x');
    {
        DirectWriter w(fd);
        REQUIRE(w.write(page.data(), page.size(), 0) == 0);
    }
    CHECK(fcntl(fd, F_GETFL) == flags);
    CHECK(lseek(fd, 0, SEEK_END) == (off_t)len);
    close(fd);
}
