// test_direct_write.cpp — a demotion's writer: aligned ranges go to the
// disk past the page cache, anything else through it, every byte lands;
// queued writes have landed when their batch's finish returns, and none is
// in flight after drain.
#include "os/direct_write.h"
#include "page_cache.h"
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
    CHECK(test::cached_pages(fd, 0, len) == 0); // nothing was copied into page cache
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

TEST_CASE("queued writes land past the page cache by their batch's finish; a misaligned one is written at once") {
    const size_t len = 9 << 20, half = 4 << 20;
    int fd = spill_like_file(len);
    char *src = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(src != MAP_FAILED);
    for (size_t i = 0; i < len; i++) src[i] = (char)(i * 193 + 11);
    {
        DirectWriter w(fd);
        REQUIRE(w.direct());
        REQUIRE(w.queues()); // Linux AIO: no seccomp filter here, and fs.aio-max-nr has room
        REQUIRE(w.queue(src, half, 0, 1) == 0);
        REQUIRE(w.queue(src + half, half, (off_t)half, 2) == 0);
        // Neither aligned nor whole blocks, past the two: written now, through the page cache.
        REQUIRE(w.queue(src + 2 * half + 1, 1000, (off_t)(2 * half + 4097), 2) == 0);
        CHECK(w.buffered_bytes() == 1000);
        // Each batch, once finished, is in the file (read back past the writer).
        REQUIRE(w.finish(2) == 0);
        CHECK(test::cached_pages(fd, 0, 2 * half) == 0); // queued writes copy nothing into page cache
        std::vector<char> back(half);
        REQUIRE(pread(fd, back.data(), half, (off_t)half) == (ssize_t)half);
        CHECK(memcmp(back.data(), src + half, half) == 0);
        REQUIRE(w.finish(1) == 0);
        REQUIRE(pread(fd, back.data(), half, 0) == (ssize_t)half);
        CHECK(memcmp(back.data(), src, half) == 0);
        CHECK(w.finish(1) == 0); // nothing left in it: at once
        CHECK(w.queued_bytes() == 2 * half);
        CHECK(w.direct_bytes() == 2 * half);
    }
    char tail[1000];
    REQUIRE(pread(fd, tail, sizeof tail, (off_t)(2 * half + 4097)) == (ssize_t)sizeof tail);
    CHECK(memcmp(tail, src + 2 * half + 1, sizeof tail) == 0);
    munmap(src, len);
    close(fd);
}

TEST_CASE("drain waits for every queued write: nothing lands after it") {
    const size_t len = 8 << 20, piece = 1 << 20;
    int fd = spill_like_file(len);
    char *src = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(src != MAP_FAILED);
    memset(src, 'a', len);
    DirectWriter w(fd);
    REQUIRE(w.queues());
    for (size_t off = 0; off < len; off += piece) REQUIRE(w.queue(src + off, piece, (off_t)off, off / piece) == 0);
    w.drain();
    // Had a queued write still been in flight, it could land over this one.
    std::vector<char> b(len, 'b');
    REQUIRE(pwrite(fd, b.data(), len, 0) == (ssize_t)len);
    REQUIRE(fsync(fd) == 0);
    usleep(100 * 1000);
    std::vector<char> back(len);
    REQUIRE(pread(fd, back.data(), len, 0) == (ssize_t)len);
    CHECK(memcmp(back.data(), b.data(), len) == 0);
    for (size_t k = 0; k < len / piece; k++) CHECK(w.finish(k) == 0); // forgotten: nothing to wait for
    munmap(src, len);
    close(fd);
}
