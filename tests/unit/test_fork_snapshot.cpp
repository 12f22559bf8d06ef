// test_fork_snapshot.cpp — a fork makes the parent's shared regions private
// until no child is left: the child keeps its snapshot while the parent
// writes and frees; a freed region's file range is held, then released; the
// region is shared again with every byte the parent wrote, and the control
// API takes it again, and while a thread reads into it no read fails where
// the re-share is blocked (a memfd region); a region pinned at the fork stays
// shared; a pin waits while prepare privatises; only a fork that left a
// region shared keeps the tiering loop off older regions; under memory
// pressure a snapshot moves to a file of its own while a thread writes into
// it, the child keeping the old file (and a pool range held for it), and a
// move that fails half-way is undone.
#include "backing/backing.h"
#include "fork_safety.h"
#include "large/fork_snapshot.h"
#include "large/large.h"
#include "os/uffd.h"
#include "registry/arena.h"
#include "registry/region.h"
#include "stats/stats.h"
#include "tiering/rehome.h"
#include "shim_fixture.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <spillway.h>
#include <vector>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace spillway;

namespace {

// The unit-test binary registers no atfork handlers: the test plays them.
pid_t bare_fork() { return _Fork(); }

// Settles until nothing is left to wait for (the child has ended), at most 5 s.
bool settled() {
    for (int i = 0; i < 500; i++) {
        if (!snapshot_settle()) return true;
        usleep(10 * 1000);
    }
    return false;
}

// Forks (playing prepare, parent and child) a child that waits for the
// parent's go, then exits 0 when it sees all len bytes of p still 'A'.
// Returns its pid; *go_w: the parent's end of the go pipe.
pid_t fork_checking_child(const unsigned char *p, size_t len, int *go_w) {
    int go[2];
    if (pipe(go) != 0) return -1;
    fork_prepare();
    pid_t pid = bare_fork();
    if (pid == 0) {
        fork_child();
        close(go[1]);
        char byte;
        if (read(go[0], &byte, 1) != 1) _exit(2);
        size_t changed = 0;
        for (size_t i = 0; i < len; i++) changed += p[i] != 'A';
        _exit(changed ? 1 : 0);
    }
    fork_parent();
    close(go[0]);
    *go_w = go[1];
    return pid;
}

// Forks (playing the handlers) a child that runs in_child, then exits 0;
// returns its exit status once it has ended (-1: it did not exit).
int forked(const std::function<void()> &in_child) {
    fork_prepare();
    pid_t pid = bare_fork();
    if (pid == 0) {
        fork_child();
        in_child();
        _exit(0);
    }
    fork_parent();
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

// A region of len bytes, each `byte` (flags: spillway_alloc's, to ask for
// a memory region).
unsigned char *filled_region(size_t len, unsigned char byte, unsigned flags = 0) {
    bool use_small = false;
    auto *p = (unsigned char *)large_alloc(len, 0, flags, &use_small);
    if (p) memset(p, byte, len);
    return p;
}

// The region p starts (REQUIREd: p and its region exist).
Region *live_region(const unsigned char *p) {
    REQUIRE(p);
    Region *r = arena::region_at(p);
    REQUIRE(r);
    return r;
}

// Gives the child its go and returns its exit status (-1: it did not exit).
int child_status(pid_t pid, int go_w) {
    int status = 0;
    bool sent = write(go_w, "g", 1) == 1;
    close(go_w);
    if (!sent || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

bool file_holds(const Region *r, size_t off, size_t n, unsigned char byte) {
    std::string buf(n, '\0');
    if (pread(r->file->fd, buf.data(), n, (off_t)(r->file_off + off)) != (ssize_t)n) return false;
    return buf.find_first_not_of((char)byte) == std::string::npos;
}

constexpr size_t kPoolLen = 2 << 20; // a pool region

// A pool region of 'A's, forked over by a child that checks it at its go.
struct ForkedPoolRegion {
    unsigned char *p = nullptr;
    Region *r = nullptr;
    SpillFile *pool = nullptr;
    uint64_t off = 0;
    uintptr_t start = 0;
    pid_t pid = -1;
    int go_w = -1;
};

ForkedPoolRegion fork_over_pool_region() {
    ForkedPoolRegion f;
    f.p = filled_region(kPoolLen, 'A');
    REQUIRE(f.p);
    f.r = arena::region_at(f.p);
    REQUIRE(f.r);
    REQUIRE(f.r->file);
    REQUIRE(f.r->file->pool);
    f.pool = f.r->file;
    f.off = f.r->file_off;
    f.start = f.r->start;
    f.pid = fork_checking_child(f.p, kPoolLen, &f.go_w);
    REQUIRE(f.pid > 0);
    return f;
}

bool pool_range_holds(const ForkedPoolRegion &f, char byte) {
    std::string buf(kPoolLen, '\0');
    return pread(f.pool->fd, buf.data(), kPoolLen, (off_t)f.off) == (ssize_t)kPoolLen &&
           buf.find_first_not_of(byte) == std::string::npos;
}

// Retires the region (as the reaper would, after free()) while its child
// lives: the pool range stays the child's, neither punched nor handed out
// again at its addresses, until the child ends; then it is a hole again.
void retire_held_until_child_ends(ForkedPoolRegion &f) {
    large_retire(f.r);
    CHECK(pool_range_holds(f, 'A'));
    auto *q = filled_region(kPoolLen, 0);
    REQUIRE(q);
    CHECK((uintptr_t)q != f.start); // its addresses name the range
    CHECK(child_status(f.pid, f.go_w) == 0);
    CHECK(settled());
    CHECK(pool_range_holds(f, '\0'));
    large_free(q);
}

} // namespace

TEST_CASE("a fork child keeps its snapshot while the parent writes; then the region is shared with the parent's bytes") {
    test::bring_up();
    constexpr size_t kLen = 4 << 20;
    auto *p = filled_region(kLen, 'A');
    REQUIRE(p);
    Region *r = arena::region_at(p);
    REQUIRE(r);
    REQUIRE(r->file);
    int go_w = -1;
    pid_t pid = fork_checking_child(p, kLen, &go_w);
    REQUIRE(pid > 0);
    CHECK(r->is_private);
    CHECK(r->snapshot_gen != 0);
    CHECK(snapshot_regions_live());
    memset(p, 'P', kLen / 2);             // copies of the parent's own
    CHECK(file_holds(r, 0, kLen, 'A'));   // the file is the child's snapshot
    CHECK(snapshot_settle());             // the child is alive: still waiting
    CHECK(r->is_private);
    CHECK(child_status(pid, go_w) == 0);
    CHECK(settled());
    CHECK_FALSE(r->is_private);
    CHECK(r->snapshot_gen == 0);
    CHECK_FALSE(snapshot_regions_live());
    CHECK(file_holds(r, 0, kLen / 2, 'P')); // the parent's copies were written back
    CHECK(file_holds(r, kLen / 2, kLen / 2, 'A'));
    p[1] = 'S'; // shared again: a store reaches the file
    CHECK(file_holds(r, 1, 1, 'S'));
    CHECK_FALSE(r->fork_written); // 2 MiB of copies: under kForkWrittenMin
    large_free(p);
}

TEST_CASE("the tiering loop watches a snapshot while its copies could outgrow the room, and stops when its child ends") {
    test::bring_up();
    constexpr size_t kLen = 8 << 20;
    auto *p = filled_region(kLen, 'A');
    REQUIRE(p);
    CHECK_FALSE(snapshot_could_outgrow(0)); // no child, no snapshot: nothing to watch
    int go_w = -1;
    pid_t pid = fork_checking_child(p, kLen, &go_w);
    REQUIRE(pid > 0);
    // Every page the parent writes may become a copy: 8 MiB could.
    CHECK(snapshot_could_outgrow(kLen - 1));
    CHECK_FALSE(snapshot_could_outgrow(kLen));
    CHECK(child_status(pid, go_w) == 0);
    CHECK(settled());
    CHECK_FALSE(snapshot_could_outgrow(0)); // shared again: its pages are page cache
    large_free(p);
}

TEST_CASE("a region the parent wrote 16 MiB of while a child kept its snapshot is marked for promotions") {
    test::bring_up();
    constexpr size_t kLen = 20 << 20;
    auto *p = filled_region(kLen, 'A');
    REQUIRE(p);
    Region *r = arena::region_at(p);
    REQUIRE(r);
    int go_w = -1;
    pid_t pid = fork_checking_child(p, kLen, &go_w);
    REQUIRE(pid > 0);
    memset(p, 'P', kForkWrittenMin); // the parent's copies, as an embedding table's update
    CHECK(child_status(pid, go_w) == 0);
    CHECK(settled());
    CHECK_FALSE(r->is_private);
    CHECK(r->fork_written);            // a promotion needs room for twice its size (tiering.h)
    CHECK_FALSE(r->snapshot_spilled); // no pressure: it never moved
    CHECK(file_holds(r, 0, kForkWrittenMin, 'P'));
    large_free(p);
}

TEST_CASE("a region freed while a child maps it keeps its file range until the child ends") {
    test::bring_up();
    ForkedPoolRegion f = fork_over_pool_region();
    retire_held_until_child_ends(f);
}

TEST_CASE("a child that execs lets go at once: the control API takes the region at its next call") {
    test::bring_up();
    constexpr size_t kLen = 4 << 20;
    auto *p = filled_region(kLen, 'A');
    REQUIRE(p);
    CHECK(forked([] {
              execl("/bin/true", "true", (char *)nullptr);
              _exit(2);
          }) == 0);
    RegionView v;
    REQUIRE(large_view(p, &v)); // settles first
    CHECK_FALSE(v.is_private);
    large_free(p);
}

TEST_CASE("a region pinned at the fork stays shared; a pin waits while prepare privatises") {
    test::bring_up();
    constexpr size_t kLen = 4 << 20;
    auto *p = filled_region(kLen, 1);
    REQUIRE(p);
    Region *r = arena::region_at(p);
    REQUIRE(r);
    {
        RegionPin pin(r); // a resize under way
        CHECK(forked([] {}) == 0);
        CHECK_FALSE(r->is_private);
        CHECK(r->snapshot_gen == 0);
    }
    g_fork_privatising.store(true);
    std::atomic<bool> pinned{false};
    std::thread resizer([&] {
        RegionPin pin(r);
        pinned = true;
    });
    usleep(50 * 1000);
    CHECK_FALSE(pinned.load());
    CHECK(r->pins.load() == 0);
    g_fork_privatising.store(false);
    resizer.join();
    CHECK(pinned.load());
    CHECK(settled());
    large_free(p);
}

TEST_CASE("only a fork that left a region shared keeps the tiering loop off the regions born before it") {
    test::bring_up();
    constexpr size_t kLen = 4 << 20;
    auto *p = filled_region(kLen, 1);
    REQUIRE(p);
    const uint64_t before = last_shared_fork_ns();
    CHECK(forked([] {}) == 0); // frozen: the region is private while the child lives
    CHECK(last_shared_fork_ns() == before);
    CHECK(settled());
    large_lock().lock(); // untrusted: the fork interrupted the large lock's holder, nothing is frozen
    int status = forked([] {});
    large_lock().unlock();
    CHECK(status == 0);
    CHECK(last_shared_fork_ns() > before);
    CHECK_FALSE(arena::region_at(p)->is_private);
    large_free(p);
}

TEST_CASE("a region shared again while a thread reads into it: no read fails where the re-share is blocked") {
    test::bring_up();
    const bool blocked = uffd::level() == uffd::Level::full;
    if (!blocked)
        WARN("no userfaultfd for kernel faults here (" << uffd::level_name(uffd::level())
                                                       << "): reads may fail; only the bytes are checked");
    constexpr size_t kLen = 20 << 20; // a chunk and a part
    constexpr size_t kPage = 4096, kPages = kLen / kPage;
    char source_path[] = "/tmp/spillway-reshare-XXXXXX";
    const int source = mkstemp(source_path);
    REQUIRE(source >= 0);
    unlink(source_path);
    std::string page(kPage, 'R');
    REQUIRE(pwrite(source, page.data(), kPage, 0) == (ssize_t)kPage);
    for (unsigned flags : {(unsigned)SPILLWAY_PREFER_MEMORY, 0u}) {
        auto *p = filled_region(kLen, 'A', flags);
        Region *r = live_region(p);
        const bool memory = r->backing == Backing::memory;
        CHECK(memory == (flags != 0));
        int go_w = -1;
        pid_t pid = fork_checking_child(p, kLen, &go_w);
        REQUIRE(pid > 0);
        memset(p, 'P', kLen); // every page a copy: the re-share's longest
        CHECK(child_status(pid, go_w) == 0);
        std::atomic<bool> stop{false};
        std::atomic<long> reads{0}, failed{0};
        std::vector<unsigned char> read_into(kPages, 0);
        std::thread reader([&] {
            for (size_t i = 0; !stop.load(); i = (i + 7919) % kPages) {
                ssize_t got = pread(source, p + i * kPage, kPage, 0);
                reads++;
                if (got == (ssize_t)kPage) read_into[i] = 1;
                else failed++;
            }
        });
        usleep(2000);
        CHECK(settled());
        stop = true;
        reader.join();
        CHECK_FALSE(r->is_private);
        INFO((memory ? "memory" : "disk") << " region: " << failed.load() << " of " << reads.load()
                                          << " reads failed");
        if (memory && blocked) CHECK(failed.load() == 0);
        size_t wrong = 0, wrong_in_file = 0;
        for (size_t i = 0; i < kPages; i++) {
            const unsigned char want = read_into[i] ? 'R' : 'P';
            for (size_t b = 0; b < kPage; b++)
                if (p[i * kPage + b] != want) {
                    wrong++;
                    break;
                }
            wrong_in_file += !file_holds(r, i * kPage, kPage, want);
        }
        CHECK(wrong == 0);
        CHECK(wrong_in_file == 0);
        large_free(p);
    }
    close(source);
}

TEST_CASE("under memory pressure a snapshot moves to a file of its own while a thread writes; the child keeps its view") {
    test::bring_up();
    constexpr size_t kLen = 20 << 20, kPage = 4096, kPages = kLen / kPage;
    constexpr size_t kCopied = 18 << 20; // above the spill's 16 MiB minimum
    for (unsigned flags : {(unsigned)SPILLWAY_PREFER_MEMORY, 0u}) {
        auto *p = filled_region(kLen, 'A', flags);
        Region *r = live_region(p);
        INFO((flags ? "memory" : "disk") << " region");
        const SpillFile *old_file = r->file;
        auto *few = filled_region(kLen, 'A'); // a snapshot with few copies: left alone
        REQUIRE(few);
        Region *few_r = arena::region_at(few);
        int go_w = -1;
        pid_t pid = fork_checking_child(p, kLen, &go_w);
        REQUIRE(pid > 0);
        REQUIRE(r->is_private);
        REQUIRE(few_r->is_private);
        memset(p, 'P', kCopied);
        few[0] = 'P';
        // A writer stamps one word into each page once, in a scattered
        // order, a few microseconds apart, while the region moves: a store
        // the move loses is never written again.
        std::atomic<bool> stop{false};
        std::vector<uint64_t> last(kPages, 0);
        std::thread writer([&] {
            for (uint64_t v = 1; v <= kPages && !stop.load(std::memory_order_relaxed); v++) {
                size_t i = (size_t)(v * 7919) % kPages;
                __atomic_store_n((uint64_t *)(p + i * kPage + 8), v, __ATOMIC_RELAXED);
                last[i] = v;
                timespec t0, t;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                do clock_gettime(CLOCK_MONOTONIC, &t);
                while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 4000);
            }
        });
        const uint64_t spills = g_stats.snapshot_spills.load(), copies = g_stats.snapshot_spill_copies_bytes.load();
        const uint64_t moved = snapshot_spill(1, 0); // pressure: 1 byte needed
        stop = true;
        writer.join();
        CHECK(g_stats.snapshot_spills.load() == spills + 1); // the stats line's fork.snapshot_spills
        CHECK(g_stats.snapshot_spill_copies_bytes.load() >= copies + kCopied);
        size_t stamped = 0;
        for (uint64_t v : last) stamped += v != 0;
        INFO(stamped << " pages stamped during the move");
        CHECK(moved >= kCopied);
        CHECK_FALSE(r->is_private);
        CHECK(r->snapshot_gen == 0);
        CHECK(r->file != old_file);
        CHECK(r->backing == Backing::disk);
        CHECK(few_r->is_private); // 4 KiB of copies: not worth a file
        size_t wrong = 0, wrong_in_file = 0;
        std::string page(kPage, '\0');
        for (size_t i = 0; i < kPages; i++) {
            std::string want(kPage, i * kPage < kCopied ? 'P' : 'A');
            if (last[i]) memcpy(want.data() + 8, &last[i], 8);
            wrong += memcmp(p + i * kPage, want.data(), kPage) != 0;
            REQUIRE(pread(r->file->fd, page.data(), kPage, (off_t)(r->file_off + i * kPage)) == (ssize_t)kPage);
            wrong_in_file += page != want;
        }
        CHECK(wrong == 0);
        CHECK(wrong_in_file == 0);
        CHECK(child_status(pid, go_w) == 0); // its view: every byte 'A'
        CHECK(settled());
        CHECK_FALSE(few_r->is_private);
        p[1] = 'S'; // shared over its new file
        CHECK(file_holds(r, 1, 1, 'S'));
        // Its copies pressed once: at the next fork it moves at once, with
        // no pressure asked (the tiering loop's look), before they grow;
        // unless the cgroup has room for all of them.
        memset(p, 'A', kLen);
        const SpillFile *second = r->file;
        pid = fork_checking_child(p, kLen, &go_w);
        REQUIRE(pid > 0);
        REQUIRE(r->is_private);
        CHECK(snapshot_spill(0, kLen) == 0);
        CHECK(r->is_private);
        CHECK(snapshot_spill(0, kLen - 1) > 0);
        CHECK_FALSE(r->is_private);
        CHECK(r->file != second);
        memset(p, 'Q', kLen);
        CHECK(file_holds(r, 0, kLen, 'Q'));
        CHECK(child_status(pid, go_w) == 0); // every byte 'A' still
        CHECK(settled());
        large_free(few);
        large_free(p);
    }
}

TEST_CASE("a pool region moved to a file of its own keeps its pool range for the child, even once freed") {
    test::bring_up();
    ForkedPoolRegion f = fork_over_pool_region();
    const uint64_t gen = f.r->snapshot_gen;
    REQUIRE(gen != 0);
    memset(f.p, 'P', kPoolLen);
    SpillFile *dest = nullptr;
    REQUIRE(new_dedicated_disk_file(kPoolLen, &dest) == 0);
    MoveResult res;
    REQUIRE(rehome_spill_snapshot(f.r, f.start, dest, &res) == 0);
    CHECK(f.r->file == dest);
    CHECK(f.r->left_pool == f.pool);
    CHECK(f.r->left_pool_off == f.off);
    CHECK(f.r->left_gen == gen);
    CHECK(file_holds(f.r, 0, kPoolLen, 'P'));
    CHECK(pool_range_holds(f, 'A')); // the child's
    retire_held_until_child_ends(f);
}

TEST_CASE("a move to a file of its own that fails half-way is undone: private over the old file, every byte kept") {
    test::bring_up();
    constexpr size_t kLen = 40 << 20; // chunks of 16, 16 and 8 MiB
    for (unsigned flags : {(unsigned)SPILLWAY_PREFER_MEMORY, 0u}) {
        auto *p = filled_region(kLen, 'A', flags);
        Region *r = live_region(p);
        INFO((flags ? "memory" : "disk") << " region");
        SpillFile *old_file = r->file;
        const uint64_t old_off = r->file_off;
        int go_w = -1;
        pid_t pid = fork_checking_child(p, kLen, &go_w);
        REQUIRE(pid > 0);
        memset(p, 'P', kLen / 2); // copies in the first chunk and a part of the second
        SpillFile *dest = nullptr;
        REQUIRE(new_dedicated_disk_file(kLen, &dest) == 0);
        rehome_fail_spill_at_chunk_for_tests(1); // the first chunk moves, the second fails
        MoveResult res;
        CHECK(rehome_spill_snapshot(r, r->start, dest, &res) == -EIO);
        rehome_fail_spill_at_chunk_for_tests(-1);
        close_spill_file(dest);
        CHECK(r->is_private);
        CHECK(r->file == old_file);
        CHECK(r->snapshot_gen != 0);
        size_t wrong = 0;
        for (size_t i = 0; i < kLen; i++) wrong += p[i] != (i < kLen / 2 ? 'P' : 'A');
        CHECK(wrong == 0);
        p[0] = 'Z'; // private again: the old file is the child's
        std::string first(1, '\0');
        REQUIRE(pread(old_file->fd, first.data(), 1, (off_t)old_off) == 1);
        CHECK(first[0] == 'A');
        CHECK(child_status(pid, go_w) == 0); // every byte 'A'
        CHECK(settled());
        CHECK_FALSE(r->is_private);
        CHECK(file_holds(r, 1, kLen / 2 - 1, 'P')); // the parent's bytes, written back
        CHECK(file_holds(r, 0, 1, 'Z'));
        large_free(p);
    }
}
