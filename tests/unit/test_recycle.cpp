// test_recycle.cpp — a freed disk region is taken over by the next
// allocation of the same length (zeroed unless it is a plain malloc), the
// cache stays bounded, gives its regions back when idle or drained, and
// leaks no disk space however many cycles run; a fork child never takes
// over the parent's cached regions; a new owner waits out a page probe
// that found the region before it was taken over.
#include "shim_fixture.h"

#include "os/cgroup.h"
#include "fork_safety.h"
#include "large/policy.h"
#include "backing/reaper.h"
#include "large/recycle.h"
#include "registry/probe_hold.h"
#include "registry/region.h"
#include "stats/stats.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <ctime>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {
constexpr size_t kLen = size_t(4) << 20;

// What malloc and calloc hand the large path (preload.cpp).
unsigned char *plain_malloc(size_t n) { return (unsigned char *)large_allocate(n, 0, false); }
unsigned char *zeroed_alloc(size_t n) { return (unsigned char *)large_allocate(n, 0, true); }

// Blocks allocated to the spill file behind p (the disk pool: it outlives p).
long long file_blocks(const void *p) {
    RegionView v;
    REQUIRE(large_view(p, &v));
    REQUIRE(v.backing == Backing::disk);
    struct stat st;
    REQUIRE(fstat(v.fd, &st) == 0);
    return (long long)st.st_blocks;
}
} // namespace

TEST_CASE("a freed disk region is taken over by a malloc of the same length") {
    test::bring_up();
    reaper_drain();
    unsigned char *p = plain_malloc(kLen);
    REQUIRE(p);
    REQUIRE(arena::region_at(p)->backing == Backing::disk);
    memset(p, 0x5A, kLen);
    uint64_t reuses = recycle_reuses();
    large_free(p);
    CHECK(recycle_count() == 1);
    unsigned char *q = plain_malloc(kLen);
    CHECK(q == p);
    CHECK(recycle_reuses() == reuses + 1);
    CHECK(recycle_count() == 0);
    Region *r = arena::region_at(q);
    REQUIRE(r);
    CHECK_FALSE(r->freed.load());
    CHECK(r->size == kLen);
    // A second free of the same pointer is still a double free: the cached
    // region keeps freed set (large_free would abort on it).
    large_free(q);
    CHECK(arena::region_at(q)->freed.load());
    reaper_drain();
    CHECK(recycle_count() == 0);
    CHECK(arena::region_at(q) == nullptr); // retired once drained
}

TEST_CASE("calloc after a reuse reads zeros, a different length is not served from the cache") {
    test::bring_up();
    reaper_drain();
    unsigned char *p = plain_malloc(kLen);
    memset(p, 0xA5, kLen);
    large_free(p);
    unsigned char *other = plain_malloc(kLen + (64 << 10));
    CHECK(other != p);
    CHECK(recycle_count() == 1);
    for (size_t i = 0; i < kLen + (64 << 10); i += 4096) REQUIRE(other[i] == 0);
    unsigned char *z = zeroed_alloc(kLen);
    CHECK(z == p);
    bool all_zero = true;
    for (size_t i = 0; i < kLen; i++) all_zero = all_zero && z[i] == 0;
    CHECK(all_zero);
    // Aware code (spillway_alloc's flags, no kFlagMayBeDirty) gets zeros too.
    memset(z, 0x33, kLen);
    large_free(z);
    bool use_small = false;
    unsigned char *a = (unsigned char *)large_alloc(kLen, 0, 0, &use_small);
    CHECK(a == p);
    CHECK(a[0] == 0);
    CHECK(a[kLen - 1] == 0);
    large_free(a);
    large_free(other);
    reaper_drain();
}

TEST_CASE("the cache holds at most kRecycleSlots regions and never hands one out twice") {
    test::bring_up();
    reaper_drain();
    std::vector<unsigned char *> held;
    for (int i = 0; i < kRecycleSlots + 3; i++) held.push_back(plain_malloc(kLen));
    for (unsigned char *p : held) large_free(p);
    CHECK(recycle_count() == (size_t)kRecycleSlots);
    std::vector<unsigned char *> again;
    for (int i = 0; i < kRecycleSlots + 3; i++) again.push_back(plain_malloc(kLen));
    for (size_t i = 0; i < again.size(); i++)
        for (size_t j = i + 1; j < again.size(); j++) REQUIRE(again[i] != again[j]);
    for (unsigned char *p : again) {
        Region *r = arena::region_at(p);
        REQUIRE(r);
        CHECK_FALSE(r->freed.load());
    }
    CHECK(recycle_count() == 0);
    for (unsigned char *p : again) large_free(p);
    reaper_drain();
}

TEST_CASE("many allocate/fill/free cycles leave no disk space behind once the cache is drained") {
    test::bring_up();
    reaper_drain();
    unsigned char *probe = plain_malloc(kLen);
    large_free(probe); // the pool exists; its blocks now are the baseline
    reaper_drain();
    unsigned char *keep = plain_malloc(kLen);
    long long baseline = file_blocks(keep);
    for (int i = 0; i < 40; i++) {
        size_t n = kLen + size_t(i % 3) * (1 << 20); // three lengths in turn
        unsigned char *p = plain_malloc(n);
        memset(p, i, n);
        large_free(p);
    }
    CHECK(recycle_count() > 0);
    reaper_drain();
    CHECK(recycle_count() == 0);
    CHECK(file_blocks(keep) == baseline);
    large_free(keep);
    reaper_drain();
}

TEST_CASE("a region idle in the cache is given back by the reaper thread") {
    test::bring_up();
    reaper_drain();
    unsigned char *p = plain_malloc(kLen);
    memset(p, 1, kLen);
    large_free(p);
    CHECK(recycle_count() == 1);
    // Idle for kRecycleIdleNs, then at most a few ticks: polled, bounded.
    for (int i = 0; i < 100 && recycle_count() > 0; i++) usleep(50 * 1000);
    CHECK(recycle_count() == 0);
    reaper_drain();
    CHECK(arena::region_at(p) == nullptr);
}

TEST_CASE("a fork child empties its copy of the cache and never writes the parent's cached range") {
    test::bring_up();
    reaper_drain();
    unsigned char *p = plain_malloc(kLen);
    memset(p, 0x11, kLen);
    large_free(p);
    REQUIRE(recycle_count() == 1);
    fork_prepare();
    pid_t pid = _Fork(); // without glibc's handlers: the test plays them (test_fork_safety.cpp)
    if (pid == 0) {
        fork_child();
        bool ok = recycle_count() == 0;
        unsigned char *q = plain_malloc(kLen); // the child's own pool, wherever it lands
        ok = ok && q != nullptr;
        if (q) {
            memset(q, 0x22, kLen);
            large_free(q);
        }
        _exit(ok ? 0 : 1);
    }
    fork_parent();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(recycle_count() == 1);
    unsigned char *again = plain_malloc(kLen);
    CHECK(again == p);
    CHECK(again[0] == 0x11); // a plain malloc keeps the bytes: none came from the child
    CHECK(again[kLen - 1] == 0x11);
    large_free(again);
    reaper_drain();
}

TEST_CASE("under a memory limit the cache holds at most an eighth of it") {
    test::bring_up();
    reaper_drain();
    // A fake cgroup v2 tree with a 64 MiB limit: the cache may hold 8 MiB.
    char tmpl[] = "/tmp/spillway-recycle-cg.XXXXXX";
    std::string root = mkdtemp(tmpl);
    REQUIRE(std::system(("mkdir -p " + root + "/proc/self " + root + "/sys/fs/cgroup/job").c_str()) == 0);
    std::ofstream(root + "/proc/self/cgroup") << "0::/job\n";
    std::ofstream(root + "/sys/fs/cgroup/job/memory.max") << (64 << 20) << "\n";
    std::ofstream(root + "/sys/fs/cgroup/job/memory.current") << 0 << "\n";
    cgroup_set_root_for_tests(root.c_str());
    recycle_read_limit_again_for_tests();
    unsigned char *big = plain_malloc(size_t(16) << 20), *small = plain_malloc(kLen);
    REQUIRE(big);
    REQUIRE(small);
    large_free(big); // over an eighth of the limit: retired as before
    CHECK(recycle_count() == 0);
    large_free(small); // 4 MiB fits in 8
    CHECK(recycle_count() == 1);
    cgroup_set_root_for_tests(nullptr);
    recycle_read_limit_again_for_tests();
    reaper_drain();
    CHECK(recycle_count() == 0);
    std::system(("rm -rf " + root).c_str());
}

TEST_CASE("a new owner of a cached region waits out a probe that checked it before the takeover") {
    test::bring_up();
    reaper_drain();
    unsigned char *p = plain_malloc(kLen);
    REQUIRE(p);
    memset(p, 0x6B, kLen);
    large_free(p);
    REQUIRE(recycle_count() == 1);
    Region *r = arena::region_at(p);
    // The probe's side of probe_hold.h: published under the large lock, its
    // calls under way.
    probe_hold_begin();
    {
        std::lock_guard<std::mutex> guard(large_lock());
        probe_hold_publish(r);
    }
    std::atomic<bool> done{false};
    unsigned char *q = nullptr;
    std::thread owner([&] {
        q = plain_malloc(kLen);
        done = true;
    });
    timespec ts = {0, 200000000};
    nanosleep(&ts, nullptr); // ample for the takeover, had it not waited
    CHECK_FALSE(done);
    probe_hold_end();
    owner.join();
    CHECK(q == p); // taken over, after the probe
    CHECK(q[kLen - 1] == 0x6B);
    large_free(q);
    reaper_drain();
}
