// test_sampler.cpp — the detector's thread on real disk regions: a region
// written in order is published sequential, one touched at scattered pages
// random, and the advice in force follows (MADV_RANDOM outside streams,
// MADV_SEQUENTIAL for contiguous slices read in random order). Buffers
// read in turn are chained (a call site's, or CPython's arena chunks), also
// where the detector never saw them filled. A fork child runs a detector
// of its own over the regions it inherited.
#include "shim_fixture.h"

#include "registry/arena.h"
#include "fork_safety.h"
#include "backing/reaper.h"
#include "registry/region.h"
#include "access/access_detector.h"
#include "access/prefetch_worker.h"
#include "access/sampler.h"
#include "large/block_zone.h"
#include "clock.h"
#include "os/cgroup.h"
#include "os/extents.h"
#include "spillway.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <fcntl.h>
#include <random>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {
void sleep_ms(long ms) {
    timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}

int phase_of(void *p) { return arena::region_at(p)->phase.load(); }

// A disk region of n bytes, as a large malloc's.
unsigned char *disk_region(size_t n) {
    bool use_small = false;
    unsigned char *p = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(p);
    return p;
}

// Writes [from, to) of p in order, a page at a time, slowly enough for
// several looks (~1 s per 128 MiB).
void write_slowly(unsigned char *p, size_t from, size_t to) {
    for (size_t i = from; i < to; i += 4096) {
        p[i] = 1;
        if (i % (4 << 20) == 0) sleep_ms(15);
    }
}
} // namespace

TEST_CASE("the thread publishes a stream as sequential and scattered faults as random") {
    test::bring_up();
    const size_t n = 256 << 20;
    unsigned char *p = disk_region(n);
    Region *r = arena::region_at(p);
    CHECK(r->advice == MADV_SEQUENTIAL); // born streaming: it is about to be filled
    sleep_ms(120);                       // older than the detector's minimum age
    write_slowly(p, 0, n / 2);
    CHECK(phase_of(p) == (int)Verdict::sequential);
    CHECK(r->phase_since_ns.load() > 0);
    // Scattered 8-byte writes into the untouched second half.
    std::mt19937_64 rng(7);
    int phase = 0;
    for (int round = 0; round < 40 && phase != (int)Verdict::random; round++) {
        for (int i = 0; i < 200; i++) p[n / 2 + (rng() % (n / 16)) * 8] = 1;
        sleep_ms(25);
        phase = phase_of(p);
    }
    CHECK(phase == (int)Verdict::random);
    CHECK(r->advice == MADV_RANDOM);
    CHECK(sampler_ticks() > 0);
    large_free(p);
    reaper_drain();
}

// A move's copy maps the region's pages in order, as a reader would
// (prefetch_worker.h, prefetch_keep_off): while the range is kept off the
// detector judges nothing there, and what it saw then is not news after.
TEST_CASE("the detector judges nothing in a region a move keeps off, and judges it again after") {
    test::bring_up();
    const size_t n = 256 << 20;
    unsigned char *p = disk_region(n);
    Region *r = arena::region_at(p);
    sleep_ms(120); // older than the detector's minimum age
    prefetch_keep_off((uintptr_t)p, n);
    uint64_t ticks = sampler_ticks();
    write_slowly(p, 0, n / 2); // the same pass the first case judges sequential
    CHECK(sampler_ticks() > ticks); // it looked, and judged nothing
    CHECK(phase_of(p) == (int)Verdict::undecided);
    CHECK(r->phase_since_ns.load() == 0);
    prefetch_keep_off_end();
    sleep_ms(120); // the pages mapped while kept off are the bits' now, not news
    CHECK(phase_of(p) == (int)Verdict::undecided);
    write_slowly(p, n / 2, n);
    CHECK(phase_of(p) == (int)Verdict::sequential);
    large_free(p);
    reaper_drain();
}

namespace {
// Pages of [p, p+len) in page cache (the region maps its file shared, so
// mincore tells cached pages whether or not they are mapped).
size_t cached_pages(const void *p, size_t len) {
    std::vector<unsigned char> vec(len / 4096);
    REQUIRE(mincore(const_cast<void *>(p), len, vec.data()) == 0);
    size_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
}

// Reads [p, p+len) in order, a page at a time, slowly enough for several
// looks (as the first case's pass).
// Until the sampler has looked once more (at most 2 s).
void wait_for_a_look() {
    const uint64_t ticks = sampler_ticks();
    for (int i = 0; i < 2000 && sampler_ticks() == ticks; i++) sleep_ms(1);
}

// A reader the detector sees move: each 4 MiB waits for a look. Paced by
// the sampler's looks, not the clock: its thread is SCHED_BATCH, so on a
// loaded machine (two busy loops beside it) a reader paced at 15 ms a
// 4 MiB read a whole buffer between two looks, the chain was never seen,
// and nothing was read ahead (4 of 12 runs failed so).
unsigned read_slowly(const unsigned char *p, size_t len) {
    unsigned sum = 0;
    for (size_t i = 0; i < len; i += 4096) {
        sum += ((const volatile unsigned char *)p)[i];
        if (i % (4 << 20) == 0) wait_for_a_look();
    }
    return sum;
}

// Writes [p, p+n) back and drops it from memory, as a limit would.
void drop_from_memory(unsigned char *p, size_t n) {
    Region *r = arena::region_at(p);
    REQUIRE(msync(p, n, MS_SYNC) == 0);
    REQUIRE(madvise(p, n, MADV_DONTNEED) == 0);
    REQUIRE(posix_fadvise(r->file->fd, (off_t)r->file_off, (off_t)n, POSIX_FADV_DONTNEED) == 0);
    REQUIRE(cached_pages(p, n) < n / 4096 / 8);
}

// Reads bufs[0] and bufs[1] (each n bytes of 7s) in turn, then expects more
// than half of bufs[2] read ahead before the reader comes (the worker
// competes for the CPU like any thread: up to 10 s), and reads it.
void chain_reads_ahead(const std::vector<unsigned char *> &bufs, size_t n) {
    unsigned sum = read_slowly(bufs[0], n);
    sum += read_slowly(bufs[1], n);
    size_t ahead = 0;
    for (int i = 0; i < 1000 && (ahead = cached_pages(bufs[2], n)) < n / 4096 / 2; i++) sleep_ms(10);
    INFO("the third: " << ahead << " of " << n / 4096 << " pages cached before the reader came");
    CHECK(ahead >= n / 4096 / 2);
    sum += read_slowly(bufs[2], n);
    CHECK(sum == 7u * (unsigned)(3 * n / 4096));
}

// Waits for a look at every region: at least a full look's period
// (100 ms) and a tick. Why not any tick: between full looks the sampler
// looks only at streams, every 10-20 ms while one runs; a reader moving
// down paced by those read 16 MiB before the region it moved in was looked
// at twice, so its stream never began and nothing was read ahead (CI runs
// 107 and 109, docs/flakes.md).
void wait_for_a_full_look() {
    const uint64_t from = spillway::monotonic_ns();
    do wait_for_a_look();
    while (spillway::monotonic_ns() - from < 100'000'000);
}

// Reads [p+from, p+to) from its last page down to its first, a page at a
// time, with a full look every 4 MiB (CPython freeing a list's objects).
unsigned read_down_slowly(const unsigned char *p, size_t from, size_t to) {
    unsigned sum = 0;
    for (size_t i = to; i > from;) {
        i -= 4096;
        sum += ((const volatile unsigned char *)p)[i];
        if (i % (4 << 20) == 0) wait_for_a_full_look();
    }
    return sum;
}

// Up to 10 s for at least `want` pages of [p, p+len) to be cached.
size_t wait_cached(const void *p, size_t len, size_t want) {
    size_t got = 0;
    for (int i = 0; i < 1000 && (got = cached_pages(p, len)) < want; i++) sleep_ms(10);
    return got;
}

// Written, then out of memory (as under a limit).
void write_then_evict(unsigned char *p, size_t n) {
    memset(p, 7, n);
    sleep_ms(250); // looked at while written: the detector knows it is filled
    Region *r = arena::region_at(p);
    REQUIRE(msync(p, n, MS_SYNC) == 0);
    REQUIRE(madvise(p, n, MADV_DONTNEED) == 0);
    REQUIRE(posix_fadvise(r->file->fd, (off_t)r->file_off, (off_t)n, POSIX_FADV_DONTNEED) == 0);
    REQUIRE(cached_pages(p, n) < n / 4096 / 8);
}
} // namespace

// Buffers of one call site written, then read back in turn (the live job):
// once the reader has gone from one buffer to the next at its start, the
// buffer after the one being read is streamed before the reader gets
// there, and only that one.
TEST_CASE("a chain of buffers read in turn: the next buffer is read ahead before the reader gets there") {
    test::bring_up();
    const size_t n = 32 << 20, count = 5;
    std::vector<unsigned char *> bufs;
    for (size_t i = 0; i < count; i++) bufs.push_back(disk_region(n)); // one call site
    std::sort(bufs.begin(), bufs.end()); // the chain runs in address order
    for (unsigned char *p : bufs) {
        Region *r = arena::region_at(p);
        REQUIRE(r->backing == Backing::disk);
        REQUIRE(r->site);
        REQUIRE(r->site == arena::region_at(bufs[0])->site);
        // No MADV_NOHUGEPAGE: on a disk read ahead in 2 MiB folios the
        // learning's probes end huge mappings here and mask their blocks
        // (page_probes.h); a block emptied by eviction must be unmasked, or
        // this re-read is no news to the detector (failed 3 of 3 so on
        // read_ahead_kb 8192 before unmask_refaulted looked at the cache).
        memset(p, 7, n);
    }
    sleep_ms(250); // looked at while written: the detector knows they are filled
    for (unsigned char *p : bufs) { // then out of memory, as under a limit
        Region *r = arena::region_at(p);
        REQUIRE(msync(p, n, MS_SYNC) == 0);
        REQUIRE(madvise(p, n, MADV_DONTNEED) == 0);
        REQUIRE(posix_fadvise(r->file->fd, (off_t)r->file_off, (off_t)n, POSIX_FADV_DONTNEED) == 0);
        REQUIRE(cached_pages(p, n) < n / 4096 / 8);
    }
    sleep_ms(250);
    unsigned sum = read_slowly(bufs[0], n);
    sum += read_slowly(bufs[1], n); // began at its start as the reader left bufs[0]: a chain
    // The worker has read bufs[1] to its end: bufs[2] is next, before any touch.
    size_t ahead = 0;
    // Its worker competes for the CPU like any thread: up to 10 s.
    for (int i = 0; i < 1000 && (ahead = cached_pages(bufs[2], n)) < n / 4096 / 2; i++) sleep_ms(10);
    INFO("bufs[2]: " << ahead << " of " << n / 4096 << " pages cached before the reader came");
    CHECK(ahead >= n / 4096 / 2);
    // One buffer ahead, no more (the worker's last read of bufs[2] may make
    // the kernel read on into bufs[3] when they share a pool file).
    CHECK(cached_pages(bufs[3], n) < n / 4096 / 2);
    sum += read_slowly(bufs[2], n);
    for (int i = 0; i < 1000 && (ahead = cached_pages(bufs[3], n)) < n / 4096 / 2; i++) sleep_ms(10);
    INFO("bufs[3]: " << ahead << " pages cached before the reader came");
    CHECK(ahead >= n / 4096 / 2);
    CHECK(sum == 7u * (unsigned)(3 * n / 4096));
    for (unsigned char *p : bufs) large_free(p);
    reaper_drain();
}

// The child's verdicts, as its exit status: 0 when both phases were seen.
// Outside a stream an inherited region that could stay cached whole is
// advised MADV_NORMAL, one that could not MADV_RANDOM (random_keeps_recency).
static int child_reads_slices_then_scatters(unsigned char *p, size_t n) {
    Region *r = arena::region_at(p);
    const int scattered = random_keeps_recency(true, n, read_memory_figures().room()) ? MADV_NORMAL : MADV_RANDOM;
    if (!r || r->advice != scattered) return 10; // the parent's phase is not inherited
    std::vector<size_t> slices(n >> 20);
    for (size_t i = 0; i < slices.size(); i++) slices[i] = i;
    std::shuffle(slices.begin(), slices.end(), std::mt19937_64(3));
    volatile unsigned sum = 0;
    size_t used = 0;
    // Shuffled 1 MiB slices, read whole (a DataLoader worker's batches).
    for (; used < slices.size() / 2 && r->advice != MADV_SEQUENTIAL; used++) {
        for (size_t b = 0; b < (1u << 20); b += 4096) sum = sum + p[(slices[used] << 20) + b];
        sleep_ms(8);
    }
    if (r->advice != MADV_SEQUENTIAL) return 11;
    if (sampler_ticks() == 0) return 12;
    // Then single pages scattered over the slices not read yet.
    std::mt19937_64 rng(11);
    for (int round = 0; round < 80 && r->advice != scattered; round++) {
        for (int i = 0; i < 64; i++) {
            size_t slice = slices[used + rng() % (slices.size() - used)];
            sum = sum + p[(slice << 20) + (rng() % 256) * 4096];
        }
        sleep_ms(25);
    }
    return r->advice == scattered ? 0 : 13;
}

TEST_CASE("a fork child's own detector advises the regions it inherited by its own reads") {
    test::bring_up();
    const size_t n = 256 << 20;
    bool use_small = false;
    unsigned char *p = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(p);
    memset(p, 7, n); // filled in order: the parent's region is in a sequential phase
    sleep_ms(150);
    fork_prepare();
    pid_t pid = _Fork(); // without glibc's handlers: the test plays them (test_fork_safety.cpp)
    if (pid == 0) {
        fork_child();
        _exit(child_reads_slices_then_scatters(p, n));
    }
    fork_parent();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    INFO("10: inherited advice kept; 11: slices not given MADV_SEQUENTIAL; 12: no detector in the child; "
         "13: scattered pages not given MADV_NORMAL (or MADV_RANDOM where the region could not stay cached)");
    CHECK(WEXITSTATUS(status) == 0);
    large_free(p);
    reaper_drain();
}

// A reader moving down (continues_backward, access_detector.h) is read
// ahead below it, and on into the region that ends where its region
// starts (CPython's arena chunks lie so); a reader moving up is not read
// ahead below it.
TEST_CASE("a reader moving down is read ahead below it and into the region just below") {
    test::bring_up();
    const size_t n = 32 << 20, pages = n / 4096;
    std::vector<unsigned char *> bufs;
    for (int i = 0; i < 4; i++) bufs.push_back(disk_region(n));
    std::sort(bufs.begin(), bufs.end());
    unsigned char *below = nullptr, *above = nullptr;
    for (size_t i = 0; i + 1 < bufs.size() && !below; i++)
        if (bufs[i] + n == bufs[i + 1]) below = bufs[i], above = bufs[i + 1];
    REQUIRE(below); // the arena places regions made in turn side by side
    unsigned char *up = bufs[0] == below ? bufs[3] : bufs[0];
    for (unsigned char *p : {below, above, up}) write_then_evict(p, n);
    sleep_ms(250);

    // Up through the top half of `up`: its bottom half stays on disk.
    // (First: `up` may be the region just below `below`.)
    unsigned sum = read_slowly(up + n / 2, n / 2);
    sleep_ms(300);
    CHECK(cached_pages(up, n / 2) < pages / 2 / 8);
    CHECK(sum == 7u * (unsigned)(pages / 2));

    const uint64_t prefetched = sampler_prefetched_bytes();

    // Down from the top of `above`, 4 MiB a look: two looks that see it
    // move down start the stream (a look may come late and see two steps
    // at once: up to four steps), then what lies below the reader is read
    // ahead, all of it within the lead.
    size_t top = 0;
    sum = 0;
    do {
        sum += read_down_slowly(above, n - top - (4 << 20), n - top);
        top += 4 << 20;
    } while (top < (16u << 20) && cached_pages(above, n - top) < (n - top) / 4096 * 9 / 10);
    const size_t rest = pages - top / 4096;
    INFO("read " << (top >> 20) << " MiB down before the rest was cached");
    size_t ahead = wait_cached(above, n - top, rest * 9 / 10);
    INFO("above: " << ahead << " of " << rest << " pages below the reader cached before it came");
    CHECK(ahead >= rest * 9 / 10);
    // Read ahead to its first page: the region below is the reader's next.
    ahead = wait_cached(below, n, pages * 9 / 10);
    INFO("below: " << ahead << " of " << pages << " pages cached before the reader came");
    CHECK(ahead >= pages * 9 / 10);
    CHECK(sampler_prefetched_bytes() - prefetched >= (pages + rest * 9 / 10) * 4096);
    sum += read_down_slowly(above, 0, n - top) + read_down_slowly(below, 0, n);
    CHECK(sum == 7u * (unsigned)(2 * pages));

    for (unsigned char *p : bufs) large_free(p);
    reaper_drain();
}

// The lead below a reader moving down is one lead over every region it
// spans, and moves with the reader: a region the lead has not reached is
// not read, however many regions below were read to their start. (It once
// took each region's top for the reader's place, and read every region
// below whole, one after the other: 13.9 GB read in the epochs job at
// 1 GiB, evicted before the reader came.)
TEST_CASE("the read-ahead below a reader moving down reaches one lead below it, across regions") {
    test::bring_up();
    const size_t n = 32 << 20, pages = n / 4096, mib = 256; // pages per MiB
    std::vector<unsigned char *> bufs;
    for (int i = 0; i < 6; i++) bufs.push_back(disk_region(n));
    std::sort(bufs.begin(), bufs.end());
    size_t first = bufs.size();
    for (size_t i = 0; i + 3 < bufs.size() && first == bufs.size(); i++)
        if (bufs[i] + n == bufs[i + 1] && bufs[i + 1] + n == bufs[i + 2] && bufs[i + 2] + n == bufs[i + 3]) first = i;
    REQUIRE(first < bufs.size()); // the arena places regions made in turn side by side
    unsigned char *r0 = bufs[first], *r1 = bufs[first + 1], *r2 = bufs[first + 2], *r3 = bufs[first + 3];
    for (unsigned char *p : {r0, r1, r2, r3}) write_then_evict(p, n);
    sleep_ms(250);

    // Down from the top of r3 until what is below it there is cached (the
    // stream has begun), at most 16 MiB. The lead (64 MiB without a memory
    // limit) then covers the rest of r3, all of r2 and the top of r1, and
    // never r0: the reader is more than 64 MiB above it.
    size_t top = 0;
    unsigned sum = 0;
    do {
        sum += read_down_slowly(r3, n - top - (4 << 20), n - top);
        top += 4 << 20;
    } while (top < (16u << 20) && cached_pages(r3, n - top) < (n - top) / 4096 * 9 / 10);
    INFO("read " << (top >> 20) << " MiB of r3 down before its rest was cached");
    size_t got = wait_cached(r2, n, pages * 9 / 10);
    INFO("r2: " << got << " of " << pages << " pages cached");
    CHECK(got >= pages * 9 / 10);
    sleep_ms(500); // the reader stands: every read-ahead asked for has been made
    INFO("r0: " << cached_pages(r0, n) << " pages cached while the reader is " << (n - top + 2 * n) / mib / 4096
                << " MiB above it");
    CHECK(cached_pages(r0, n) < pages / 8);

    // Down the rest of r3 and the top half of r2: the lead now reaches the
    // top half of r0, and only that.
    sum += read_down_slowly(r3, 0, n - top) + read_down_slowly(r2, n / 2, n);
    got = wait_cached(r0 + 20 * mib * 4096, 12 * mib * 4096, 12 * mib * 9 / 10);
    INFO("r0's top 12 MiB: " << got << " of " << 12 * mib << " pages cached");
    CHECK(got >= 12 * mib * 9 / 10);
    sleep_ms(500);
    INFO("r0's bottom 12 MiB: " << cached_pages(r0, 12 * mib * 4096) << " pages cached");
    CHECK(cached_pages(r0, 12 * mib * 4096) < 12 * mib / 8);
    CHECK(sum == 7u * (unsigned)(pages + pages / 2));

    for (unsigned char *p : bufs) large_free(p);
    reaper_drain();
}

// Last in the file: the cases below leave a block zone and regions the
// detector tracked; the older cases above ran without them before.
TEST_CASE("a chain of buffers filled unseen by the detector: their files say they were written, and they are read ahead") {
    // On a fast disk a buffer is filled, written back and unmapped between
    // two looks (sampler.cpp, written_on_file): the detector never sees its
    // pages present. The first two are filled while the detector looks (a
    // chain begins on a buffer seen written), the others while it is held,
    // and all are out of memory before it looks again.
    test::bring_up();
    const size_t n = 32 << 20, count = 5;
    std::vector<unsigned char *> bufs;
    for (size_t i = 0; i < count; i++) bufs.push_back(disk_region(n));
    std::sort(bufs.begin(), bufs.end());
    if (!extents_cheap_to_ask(arena::region_at(bufs[0])->file->fd)) {
        // btrfs: written_extents cannot tell cheaply (extents.h); the
        // detector knows only what its looks saw, and this case is not read ahead.
        WARN("the spill directory's filesystem does not answer FIEMAP cheaply: case not run here");
        for (unsigned char *p : bufs) large_free(p);
        reaper_drain();
        return;
    }
    memset(bufs[0], 7, n);
    memset(bufs[1], 7, n);
    sleep_ms(250); // looked at while written
    sampler_hold(true);
    for (size_t i = 2; i < count; i++) memset(bufs[i], 7, n);
    for (unsigned char *p : bufs) drop_from_memory(p, n);
    sampler_hold(false);
    sleep_ms(250); // looked at, nothing present
    chain_reads_ahead(bufs, n);
    for (unsigned char *p : bufs) large_free(p);
    reaper_drain();
}

TEST_CASE("a block zone's chunks read in turn are a chain: the next chunk is read ahead before the reader gets there") {
    // CPython's object arenas (block_zone.h): chunks of 32 MiB with no call
    // site, a pass over a list's objects crossing one every 32 MiB
    // (tests/bench/jobs pylist's scan: each chunk began with a 100 ms look
    // the reader spent faulting page by page, until they chained).
    test::bring_up();
    block_zone_reset_for_tests();
    const size_t block = size_t(1) << 20, chunk = block_zone_chunk_bytes(block), count = 5;
    std::vector<void *> blocks;
    std::vector<unsigned char *> chunks;
    for (size_t i = 0; i < count * (chunk / block); i++) {
        void *b = block_zone_take(block);
        REQUIRE(b);
        blocks.push_back(b);
        unsigned char *c = (unsigned char *)arena::region_at(b)->start;
        if (std::find(chunks.begin(), chunks.end(), c) == chunks.end()) chunks.push_back(c);
    }
    REQUIRE(chunks.size() == count);
    std::sort(chunks.begin(), chunks.end());
    for (unsigned char *c : chunks) {
        Region *r = arena::region_at(c);
        REQUIRE(r->backing == Backing::disk);
        REQUIRE(r->object_blocks);
        REQUIRE(r->site == nullptr);
        memset(c, 7, chunk);
    }
    sleep_ms(250);
    for (unsigned char *c : chunks) drop_from_memory(c, chunk);
    sleep_ms(250);
    chain_reads_ahead(chunks, chunk);
    for (void *b : blocks) CHECK(block_zone_give(b, block));
    block_zone_reset_for_tests();
    reaper_drain();
}
