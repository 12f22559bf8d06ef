// test_prefetch_worker.cpp — the read-ahead worker: which piece it reads
// next and what it pages out (pure), and on a real file under /var/tmp (a
// block device, so the page cache can be emptied): it reads the target's
// range of the region's file at the region's offset and nothing before it,
// pages out the part behind the reader, refuses a stream when its slots are
// full (closing the descriptor it was given), and closes a stream's
// descriptor when the stream ends.
#include "test_tmp.h"
#include "access/prefetch_worker.h"
#include "cachestat.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

TEST_CASE("next_read starts at the front or where reading stopped, in chunks", "[prefetch_worker]") {
    ReadStep s = next_read(0, 100, 1000, 256);
    CHECK(s.from == 100);
    CHECK(s.count == 256);
    s = next_read(500, 100, 1000, 256); // already read up to 500
    CHECK(s.from == 500);
    CHECK(s.count == 256);
    s = next_read(900, 100, 1000, 256); // the last piece is short
    CHECK(s.count == 100);
    CHECK(next_read(1000, 100, 1000, 256).count == 0); // target reached
    s = next_read(200, 700, 1000, 256);                 // the reader overtook what was read
    CHECK(s.from == 700);
    CHECK(s.count == 256);
    CHECK(next_read(0, 1000, 900, 256).count == 0); // target behind the front
    CHECK(next_read(0, 0, 1000, 0).count == 0);
}

TEST_CASE("next_drop pages out whole steps up to the target only", "[prefetch_worker]") {
    ReadStep d = next_drop(0, 1300, 512);
    CHECK(d.from == 0);
    CHECK(d.count == 1024);
    CHECK(next_drop(1024, 1300, 512).count == 0); // less than a step more
    d = next_drop(1024, 1536, 512);
    CHECK(d.from == 1024);
    CHECK(d.count == 512);
    CHECK(next_drop(2048, 0, 512).count == 0); // 0: keep everything
    CHECK(next_drop(0, 700, 0).count == 700);
    // At the region's end (the stream left it) the last partial step goes too.
    d = next_drop(1024, 1300, 512, 1300);
    CHECK(d.from == 1024);
    CHECK(d.count == 276);
    CHECK(next_drop(1024, 1300, 512, 1301).count == 0); // not the end: whole steps only
}

namespace {
constexpr size_t kPage = 4096;

void sleep_ms(long ms) {
    timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}

// mincore's bytes for [first, first+count) of a mapping (bit 0: resident).
std::vector<unsigned char> residency(void *map, size_t first, size_t count) {
    std::vector<unsigned char> vec(count);
    REQUIRE(mincore((char *)map + first * kPage, count * kPage, vec.data()) == 0);
    return vec;
}

// Resident pages of [first, first+count) of a mapping.
size_t resident(void *map, size_t first, size_t count) {
    size_t n = 0;
    for (unsigned char v : residency(map, first, count)) n += v & 1;
    return n;
}

// The first page of [first, first + count) not resident, or first + count:
// a failure then names the page (one page short was seen once, load 7).
size_t first_absent(void *map, size_t first, size_t count) {
    std::vector<unsigned char> vec = residency(map, first, count);
    for (size_t i = 0; i < count; i++)
        if (!(vec[i] & 1)) return first + i;
    return first + count;
}

size_t open_fds() {
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    REQUIRE(d);
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

// A written file under /var/tmp, mapped shared from `offset` like a spill
// region. Written with O_DIRECT, so it starts with no page cache and no
// shadow entries of evicted pages (read_in below counts those as read).
struct SpillLike {
    int fd = -1;
    void *map = nullptr;
    size_t offset, len;
    SpillLike(size_t file_bytes, size_t offset_, size_t len_) : offset(offset_), len(len_) {
        std::string path = test::tmp_template("spillway-unit-prefetch");
        fd = mkstemp(path.data());
        REQUIRE(fd >= 0);
        int direct = open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
        REQUIRE(direct >= 0);
        unlink(path.c_str());
        void *block = nullptr;
        REQUIRE(posix_memalign(&block, 4096, 1 << 20) == 0);
        memset(block, 'x', 1 << 20);
        for (size_t off = 0; off < file_bytes; off += 1 << 20)
            REQUIRE(pwrite(direct, block, 1 << 20, (off_t)off) == (ssize_t)(1 << 20));
        free(block);
        REQUIRE(fsync(direct) == 0);
        close(direct);
        // btrfs once left 4 pages of it cached all the same (CI run 93, the
        // UBSan build): clean after the fsync, so dropped here; an
        // invalidation leaves no shadow entries (checked below).
        REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
        map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
        REQUIRE(map != MAP_FAILED);
        REQUIRE(madvise(map, len, MADV_RANDOM) == 0); // no read-around of our own reads
        REQUIRE(resident(map, 0, len / kPage) == 0);
        Cachestat cs{};
        if (cachestat(fd, {0, 0}, cs) == 0) REQUIRE(cs.nr_cache + cs.nr_evicted == 0);
    }
    ~SpillLike() {
        munmap(map, len);
        close(fd);
    }
    PrefetchTarget target(uint64_t front, uint64_t ahead_to, uint64_t drop_to) const {
        PrefetchTarget t;
        t.start = (uintptr_t)map;
        t.born = 1;
        t.file_off = offset;
        t.pages = len / kPage;
        t.front = front;
        t.ahead_to = ahead_to;
        t.drop_to = drop_to;
        return t;
    }
};
// Pages of the region's [first, first + count) that reached the page cache:
// resident now, or evicted since by reclaim, which leaves a shadow entry
// (cachestat's nr_evicted; the file starts with none: SpillLike). Why
// not residency alone: this VM kind runs DAMON's proactive reclaim
// (kdamond: pages out unmapped file pages of physical regions cold for a
// minute, 128 MiB a second), and a page the worker read lands in such a
// region. Traced with the mm_filemap_delete_from_page_cache event: under
// two busy loops and a dd writing to the same disk, kdamond evicted 25-83
// of the pages the worker had read before the test looked (5 failures in
// 87 runs). Without cachestat (before Linux 6.5): residency alone.
size_t read_in(const SpillLike &s, size_t first, size_t count) {
    Cachestat cs{};
    if (cachestat(s.fd, {s.offset + first * kPage, count * kPage}, cs) != 0) return resident(s.map, first, count);
    return (size_t)(cs.nr_cache + cs.nr_evicted);
}
} // namespace

TEST_CASE("the worker reads ahead of the front at the region's file offset, and pages out behind it",
          "[prefetch_worker]") {
    // The region is the file's [8 MiB, 24 MiB); the reader is at 2 MiB of it.
    SpillLike s(24u << 20, 8u << 20, 16u << 20);
    prefetch_thread_start(); // as the detector does when the first disk region is made
    size_t fds = open_fds();
    uint64_t read0 = prefetch_read_bytes();
    REQUIRE(prefetch_start(s.target(512, 2048, 0), fcntl(s.fd, F_DUPFD_CLOEXEC, 3)));
    // The worker counts a read after its pread returns, when the pages are
    // already resident: wait for both (under two busy loops the count lagged
    // the pages: 4 of 6 MiB counted, 1 failure in 2 runs of the unit suite).
    size_t got = 0;
    auto read_counted = [&] { return prefetch_read_bytes() - read0 >= 1536 * kPage; };
    int waited = 0;
    for (; waited < 500 && (got < 1536 || !read_counted()); waited++, sleep_ms(10)) got = read_in(s, 512, 1536);
    INFO("after " << waited * 10 << " ms: " << (prefetch_read_bytes() - read0) / kPage << " pages counted read, "
                  << resident(s.map, 512, 1536) << " resident, first page not resident "
                  << first_absent(s.map, 512, 1536));
    CHECK(got == 1536);
    CHECK(resident(s.map, 0, 512) == 0); // nothing before the front (the offset was honoured)
    CHECK(prefetch_read_bytes() - read0 >= 1536 * kPage);

    // The reader maps [0, 1536); once the cgroup is short of room the
    // detector asks for what lies behind 1536 to be paged out: from the
    // front the stream was handed over at (512), in whole 2 MiB steps.
    volatile char sink = 0;
    for (size_t p = 0; p < 1536; p++) sink = sink + ((char *)s.map)[p * kPage];
    REQUIRE(resident(s.map, 0, 1536) == 1536);
    REQUIRE(prefetch_update(s.target(1536, 2048, 1536)));
    // MADV_PAGEOUT drains only its own CPU's batch of pages waiting to join
    // the LRU; a page still in another CPU's batch (up to 31 per CPU) cannot
    // be isolated and stays. Seen in the clean-clone CI run of e247231: 1
    // page of 1024 left after 5 s. Without any page-out all 1024 would stay.
    constexpr size_t kOtherCpuBatch = 31;
    size_t left = 1024;
    // Counted after madvise returns, as the reads are: wait for the count too.
    auto drop_counted = [] { return prefetch_dropped_bytes() >= 1024 * kPage; };
    for (int i = 0; i < 500 && (left > 0 || !drop_counted()); i++, sleep_ms(10)) left = resident(s.map, 512, 1024);
    CHECK(left <= kOtherCpuBatch);
    CHECK(resident(s.map, 0, 512) == 512); // before the hand-over: not ours to judge
    CHECK(prefetch_dropped_bytes() >= 1024 * kPage);

    // The stream ends: the worker closes its descriptor.
    prefetch_end(s.target(0, 0, 0).start, 1);
    CHECK_FALSE(prefetch_update(s.target(1536, 4096, 0)));
    size_t now = fds + 1;
    for (int i = 0; i < 500 && now != fds; i++, sleep_ms(10)) now = open_fds();
    CHECK(now == fds);
}

TEST_CASE("the worker pages out from where the stream began when told, and a left region whole",
          "[prefetch_worker]") {
    // 9 MiB: 2304 pages, not a whole number of 2 MiB steps. The reader has
    // mapped it all; the detector handed the stream over at page 1024, but
    // the stream began at page 0 (drop_from).
    SpillLike s(9u << 20, 0, 9u << 20);
    prefetch_thread_start();
    const size_t pages = (9u << 20) / kPage;
    volatile char sink = 0;
    for (size_t p = 0; p < pages; p++) sink = sink + ((char *)s.map)[p * kPage];
    REQUIRE(resident(s.map, 0, pages) == pages);
    PrefetchTarget t = s.target(1024, 1024, 0); // nothing to read ahead
    t.drop_from = 0;
    REQUIRE(prefetch_start(t, fcntl(s.fd, F_DUPFD_CLOEXEC, 3)));
    t.front = 2048;
    t.drop_to = 1536; // the reader moved on: [0, 1536) goes, in whole steps
    REQUIRE(prefetch_update(t));
    constexpr size_t kOtherCpuBatch = 31; // see the test above
    size_t left = 1536;
    for (int i = 0; i < 500 && left > kOtherCpuBatch; i++, sleep_ms(10)) left = resident(s.map, 0, 1536);
    CHECK(left <= kOtherCpuBatch); // before the hand-over too
    CHECK(resident(s.map, 1536, pages - 1536) == pages - 1536);
    t.front = pages;
    t.drop_to = pages; // the stream left the region at its end: all of it
    REQUIRE(prefetch_update(t));
    left = resident(s.map, 1536, pages - 1536);
    for (int i = 0; i < 500 && left > kOtherCpuBatch; i++, sleep_ms(10)) left = resident(s.map, 1536, pages - 1536);
    CHECK(left <= kOtherCpuBatch); // the last 256 pages, less than a step, included
    prefetch_end(t.start, t.born);
}

TEST_CASE("a stream beyond the worker's slots is refused and its descriptor closed", "[prefetch_worker]") {
    SpillLike s(4u << 20, 0, 4u << 20);
    prefetch_thread_start();
    std::vector<uintptr_t> taken;
    for (uintptr_t k = 1; k <= 16; k++) {
        PrefetchTarget t = s.target(0, 0, 0); // nothing to read: the slot just stays taken
        t.start = k * kPage;
        int fd = fcntl(s.fd, F_DUPFD_CLOEXEC, 3);
        REQUIRE(fd >= 0);
        if (!prefetch_start(t, fd)) {
            errno = 0;
            CHECK(fcntl(fd, F_GETFD) == -1); // closed by the refusal
            CHECK(errno == EBADF);
            break;
        }
        taken.push_back(t.start);
    }
    CHECK(!taken.empty());
    CHECK(taken.size() < 16);
    for (uintptr_t start : taken) prefetch_end(start, 1);
}

// The detector keeps a chain's predicted buffer while this says the worker
// still reads it (sampler.cpp): it must not say "done" before the target
// is read, and must say so once it is.
TEST_CASE("a stream is pending until the worker has read it to its target", "[prefetch_worker]") {
    SpillLike s(64u << 20, 0, 64u << 20);
    prefetch_thread_start();
    const uintptr_t start = (uintptr_t)s.map;
    CHECK_FALSE(prefetch_pending(start, 1)); // not the worker's
    PrefetchTarget t = s.target(0, 8192, 0);
    t.speculative = true; // as a predicted buffer is handed over
    REQUIRE(prefetch_start(t, fcntl(s.fd, F_DUPFD_CLOEXEC, 3)));
    // 32 MiB from an emptied cache is not read in the moment after the
    // hand-over; whenever it says not pending, the target is read.
    CHECK((prefetch_pending(start, 1) || read_in(s, 0, 8192) == 8192));
    bool pending = true;
    for (int i = 0; i < 1000 && pending; i++, sleep_ms(10)) pending = prefetch_pending(start, 1);
    CHECK_FALSE(pending);
    CHECK(read_in(s, 0, 8192) == 8192);
    CHECK(resident(s.map, 12288, 4096) == 0); // short of the new target below
    // A target moved further is pending again until read.
    t.ahead_to = 16384;
    REQUIRE(prefetch_update(t));
    CHECK((prefetch_pending(start, 1) || read_in(s, 0, 16384) == 16384));
    pending = true;
    for (int i = 0; i < 1000 && pending; i++, sleep_ms(10)) pending = prefetch_pending(start, 1);
    CHECK_FALSE(pending);
    CHECK(read_in(s, 0, 16384) == 16384);
    prefetch_end(start, 1);
    CHECK_FALSE(prefetch_pending(start, 1));
}

TEST_CASE("forgetting a region ends its stream and waits out a read in flight", "[prefetch_worker]") {
    SpillLike s(64u << 20, 0, 64u << 20);
    prefetch_thread_start();
    REQUIRE(prefetch_start(s.target(0, 16384, 0), fcntl(s.fd, F_DUPFD_CLOEXEC, 3))); // the whole 64 MiB
    for (int i = 0; i < 500 && prefetch_read_bytes() == 0; i++) sleep_ms(1);
    CHECK(prefetch_forget((uintptr_t)s.map, 64u << 20)); // it was reading there
    CHECK_FALSE(prefetch_update(s.target(0, 16384, 0))); // the stream is gone
    uint64_t read_after = prefetch_read_bytes();
    // The kernel's read-ahead started by the last pread may still be
    // landing (spillway_release_page_cache drops again for that); once it
    // has, a drop is final: the worker reads nothing more.
    sleep_ms(100);
    REQUIRE(posix_fadvise(s.fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    sleep_ms(200);
    CHECK(prefetch_read_bytes() == read_after);
    CHECK(resident(s.map, 0, 16384) == 0);
    CHECK_FALSE(prefetch_forget((uintptr_t)s.map, 64u << 20)); // nothing left there
}

TEST_CASE("a range a move keeps off: its stream ends, none starts there until the move ends", "[prefetch_worker]") {
    SpillLike s(64u << 20, 0, 64u << 20);
    prefetch_thread_start();
    uintptr_t start = (uintptr_t)s.map;
    REQUIRE(prefetch_start(s.target(0, 0, 0), fcntl(s.fd, F_DUPFD_CLOEXEC, 3)));
    CHECK_FALSE(prefetch_kept_off(start));
    prefetch_keep_off(start, 64u << 20);
    CHECK(prefetch_kept_off(start));
    CHECK(prefetch_kept_off(start + (32u << 20)));
    CHECK_FALSE(prefetch_kept_off(start + (64u << 20))); // the next region's
    CHECK_FALSE(prefetch_update(s.target(0, 16384, 0))); // ended by the keep-off
    int fd = fcntl(s.fd, F_DUPFD_CLOEXEC, 3);
    REQUIRE(fd >= 0);
    CHECK_FALSE(prefetch_start(s.target(0, 16384, 0), fd));
    errno = 0;
    CHECK(fcntl(fd, F_GETFD) == -1); // closed by the refusal
    CHECK(errno == EBADF);
    sleep_ms(100);
    CHECK(resident(s.map, 0, 16384) == 0); // nothing was read there
    prefetch_keep_off_end();
    CHECK_FALSE(prefetch_kept_off(start));
    REQUIRE(prefetch_start(s.target(0, 0, 0), fcntl(s.fd, F_DUPFD_CLOEXEC, 3)));
    prefetch_end(start, 1);
}
