// test_large.cpp — the large path end to end, without preloading: regions
// are published, zeroed, resized in place or moved without losing bytes,
// retired, and refused with ENOMEM for impossible sizes; a retirement, a
// resize and an exported region's free wait out the page probes' hold; a
// retirement ends the prefetch worker's stream over the region.
#include "shim_fixture.h"

#include "large/policy.h"
#include "access/prefetch_worker.h"
#include "backing/reaper.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "spillway.h"
#include "stats/stats.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <mimalloc.h>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace spillway;

static void *alloc(size_t n, unsigned flags = 0, size_t align = 0) {
    bool use_small = false;
    void *p = large_alloc(n, align, flags, &use_small);
    REQUIRE_FALSE(use_small);
    return p;
}

TEST_CASE("a large allocation is a published, zeroed region") {
    test::bring_up();
    for (unsigned flags : {0u, (unsigned)SPILLWAY_PREFER_DISK, (unsigned)SPILLWAY_PREFER_MEMORY}) {
        unsigned char *p = (unsigned char *)alloc(3 << 20, flags);
        REQUIRE(p);
        Region *r = arena::region_at(p);
        REQUIRE(r);
        CHECK(r->start == (uintptr_t)p);
        CHECK(r->size == 3u << 20);
        CHECK(large_usable_size(p) == 3u << 20);
        CHECK(large_usable_size(p + 100) == (3u << 20) - 100);
        CHECK(r->backing == (flags == SPILLWAY_PREFER_MEMORY ? Backing::memory : Backing::disk));
        for (size_t i = 0; i < (3u << 20); i += 4096) REQUIRE(p[i] == 0);
        memset(p, 0xEE, 3 << 20);
        large_free(p);
    }
    reaper_drain();
}

TEST_CASE("alignment up to a gigabyte is honoured") {
    test::bring_up();
    for (size_t align : {size_t(4096), size_t(2) << 20, size_t(64) << 20, size_t(1) << 30}) {
        void *p = alloc(2 << 20, 0, align);
        CHECK((uintptr_t)p % align == 0);
        large_free(p);
    }
}

TEST_CASE("realloc keeps bytes in place, when moving, and when shrinking below the threshold") {
    test::bring_up();
    unsigned char *p = (unsigned char *)alloc(2 << 20);
    for (size_t i = 0; i < (2u << 20); i++) p[i] = (unsigned char)(i * 7);
    auto intact = [&](unsigned char *q, size_t n) {
        for (size_t i = 0; i < n; i += 997)
            if (q[i] != (unsigned char)(i * 7)) return false;
        return true;
    };
    uint64_t in_place = g_stats.reallocs_in_place.load(), moved = g_stats.reallocs_moved.load();
    unsigned char *blocker = (unsigned char *)alloc(2 << 20); // likely right after p
    p = (unsigned char *)large_realloc(p, 3 << 20);           // fits p's own granule? no: moves or extends
    REQUIRE(p);
    CHECK(intact(p, 2 << 20));
    p = (unsigned char *)large_realloc(p, 40 << 20);
    CHECK(intact(p, 2 << 20));
    CHECK(g_stats.reallocs_in_place.load() + g_stats.reallocs_moved.load() >= in_place + moved + 2);
    p = (unsigned char *)large_realloc(p, 10 << 20); // shrink keeps the address
    CHECK(arena::region_at(p));
    CHECK(intact(p, 2 << 20));
    unsigned char *small = (unsigned char *)large_realloc(p, 4096);
    CHECK_FALSE(arena::owns(small));
    CHECK(intact(small, 4096));
    mi_free(small);
    large_free(blocker);
    reaper_drain();
}

TEST_CASE("anonymous and dedicated regions move by mremap, without a copy") {
    test::bring_up();
    unsigned char *a = (unsigned char *)alloc(2 << 20, kFlagAlignmentOnly); // anon
    REQUIRE(arena::region_at(a)->backing == Backing::anon);
    unsigned char *wall = (unsigned char *)alloc(2 << 20);
    a[0] = 1;
    a[(2 << 20) - 1] = 2;
    a = (unsigned char *)large_realloc(a, 64 << 20);
    CHECK(a[0] == 1);
    CHECK(a[(2 << 20) - 1] == 2);
    CHECK(a[(64 << 20) - 1] == 0);
    large_free(a);
    large_free(wall);
    reaper_drain();
}

TEST_CASE("impossible sizes fail with ENOMEM") {
    test::bring_up();
    bool use_small = false;
    errno = 0;
    CHECK(large_alloc(SIZE_MAX - 100, 0, 0, &use_small) == nullptr);
    CHECK(errno == ENOMEM);
    errno = 0;
    CHECK(large_alloc(size_t(1) << 41, 0, 0, &use_small) == nullptr); // larger than the arena
    CHECK(use_small);                                                  // the caller asks mimalloc
}

TEST_CASE("stats count regions, bytes and peaks by backing") {
    test::bring_up();
    uint64_t regions = g_stats.regions[(int)Backing::memory].load();
    void *p = alloc(5 << 20, SPILLWAY_PREFER_MEMORY);
    CHECK(g_stats.regions[(int)Backing::memory].load() == regions + 1);
    CHECK(g_stats.peak_bytes[(int)Backing::memory].load() >= (5u << 20));
    large_free(p);
    reaper_drain();
    CHECK(stats_json().find("\"memory\":") != std::string::npos);
}

namespace {
// Plays the page probes' side of probe_hold.h on r: from the check under
// the large lock to the end of its calls (released by probe_hold_end).
void hold_as_probe(Region *r) {
    probe_hold_begin();
    std::lock_guard<std::mutex> guard(large_lock());
    probe_hold_publish(r);
}

void sleep_ms(long ms) {
    timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}
} // namespace

TEST_CASE("a retirement waits out a probe's hold before it unmaps the region and gives its range back") {
    test::bring_up();
    void *p = alloc(4 << 20, SPILLWAY_PREFER_DISK);
    Region *r = arena::region_at(p);
    hold_as_probe(r);
    std::atomic<bool> done{false};
    std::thread freer([&] {
        large_free(p);
        reaper_drain(); // the recycle cache too: retired
        done = true;
    });
    sleep_ms(200); // ample for the retirement, had it not waited
    CHECK_FALSE(done);
    CHECK(arena::region_at(p) == r); // still mapped and published
    probe_hold_end();
    freer.join();
    CHECK(done);
    CHECK(arena::region_at(p) != r);
}

TEST_CASE("a retirement ends the prefetch worker's stream before the pool range goes to the next region") {
    test::bring_up();
    const size_t n = 8 << 20;
    char *p = (char *)alloc(n, SPILLWAY_PREFER_DISK);
    Region *r = arena::region_at(p);
    REQUIRE(r->backing == Backing::disk);
    memset(p, 1, n);
    PrefetchTarget t;
    t.start = r->start;
    t.born = r->born_ns;
    t.file_off = r->file_off;
    t.pages = n / 4096;
    t.front = 0;
    t.ahead_to = t.pages;
    prefetch_thread_start();
    REQUIRE(prefetch_start(t, fcntl(r->file->fd, F_DUPFD_CLOEXEC, 3)));
    // The sampler would end the stream at its next tick; none runs here,
    // so only the retirement can.
    large_free(p);
    reaper_drain(); // the recycle cache too: retired
    REQUIRE(arena::region_at(p) != r);
    CHECK_FALSE(prefetch_update(t));                  // the stream is gone
    CHECK_FALSE(prefetch_forget((uintptr_t)p, n)); // nothing left to forget
}

TEST_CASE("a realloc waits out a probe's hold before it resizes the region") {
    test::bring_up();
    unsigned char *p = (unsigned char *)alloc(4 << 20, SPILLWAY_PREFER_DISK);
    memset(p, 0x3C, 4 << 20);
    Region *r = arena::region_at(p);
    hold_as_probe(r);
    std::atomic<bool> done{false};
    unsigned char *q = nullptr;
    std::thread resizer([&] {
        q = (unsigned char *)large_realloc(p, 64 << 20);
        done = true;
    });
    sleep_ms(200);
    CHECK_FALSE(done);
    CHECK(r->map_len == (4u << 20)); // not resized meanwhile
    probe_hold_end();
    resizer.join();
    REQUIRE(q);
    CHECK(q[0] == 0x3C);
    CHECK(q[(4 << 20) - 1] == 0x3C);
    large_free(q);
    reaper_drain();
}

TEST_CASE("freeing an exported region waits out a probe's hold before it unmaps it") {
    test::bring_up();
    void *p = alloc(4 << 20, SPILLWAY_PREFER_DISK);
    Region *r = arena::region_at(p);
    RegionView v;
    std::string name = test::settings().spill_dir + "/probe-hold-export";
    REQUIRE(large_export(p, [](int fd, size_t size, void *ctx, char *path, size_t cap) {
                const std::string &to = *static_cast<std::string *>(ctx);
                if (ftruncate(fd, (off_t)size) != 0) return -errno;
                char proc[64];
                snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
                if (linkat(AT_FDCWD, proc, AT_FDCWD, to.c_str(), AT_SYMLINK_FOLLOW) != 0) return -errno;
                snprintf(path, cap, "%s", to.c_str());
                return 0;
            }, &name, &v) == 0);
    REQUIRE(r->file->exported[0]);
    ((unsigned char *)p)[0] = 1; // cached: mincore says so while the file is mapped there
    hold_as_probe(r);
    std::atomic<bool> done{false};
    std::thread freer([&] {
        large_free(p);
        done = true;
    });
    sleep_ms(200);
    CHECK_FALSE(done);
    unsigned char vec = 0;
    CHECK(mincore(p, 4096, &vec) == 0);
    CHECK((vec & 1) == 1); // the file still mapped, not the reserve
    probe_hold_end();
    freer.join();
    CHECK(done);
    reaper_drain();
    unlink(name.c_str());
}
