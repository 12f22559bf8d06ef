// test_block_zone.cpp — blocks of one size carved from disk chunk regions:
// each block inside one chunk, never two takers on one block, a new chunk
// only when every block is taken, an empty chunk freed unless it is the
// only empty one, foreign pointers and other sizes refused, a freed
// block's private copies dropped after a fork while the child keeps its
// view, a freed block's dirty pages dropped unwritten (ext4), a fork
// child's blocks in chunks of its own, a freed chunk's table slot reused
// clean, a taken block's pages cached before its first store, a double
// free fatal.
#include "backing/backing.h"
#include "fork_safety.h"
#include "large/block_zone.h"
#include "large/fork_snapshot.h"
#include "large/large.h"
#include "os/zero_range.h"
#include "registry/arena.h"
#include "registry/region.h"
#include "shim_fixture.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <fcntl.h>
#include <functional>
#include <cstring>
#include <set>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {

constexpr size_t kBlock = size_t(1) << 20; // CPython 3.11's arena
const size_t kPerChunk = block_zone_chunk_bytes(kBlock) / kBlock;

struct ZoneScope { // every test leaves the zone as it found it: no block, no chunk
    ZoneScope() {
        test::bring_up();
        block_zone_reset_for_tests();
        REQUIRE(block_zone_figures().blocks_in_use == 0);
    }
    ~ZoneScope() { block_zone_reset_for_tests(); }
};

Region *chunk_of(const void *p) { return arena::region_at(p); }

// Pages of [p, p+len) that are this process's private copies: present and
// not a file page (/proc/self/pagemap bits 63 and 61).
size_t private_pages(const void *p, size_t len) {
    int fd = open("/proc/self/pagemap", O_RDONLY);
    REQUIRE(fd >= 0);
    size_t pages = len / 4096, copies = 0;
    std::vector<uint64_t> entries(pages);
    ssize_t want = (ssize_t)(pages * sizeof(uint64_t));
    REQUIRE(pread(fd, entries.data(), want, (off_t)((uintptr_t)p / 4096 * sizeof(uint64_t))) == want);
    close(fd);
    for (uint64_t e : entries) copies += (e >> 63 & 1) && !(e >> 61 & 1);
    return copies;
}

// Pages of [p, p+len) in the page cache (mincore: a file mapping's pages
// whether mapped here or not).
size_t cached_pages(void *p, size_t len) {
    std::vector<unsigned char> vec(len / 4096);
    REQUIRE(mincore(p, len, vec.data()) == 0);
    size_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
}

// Two blocks taken and filled, with the bytes first_byte and second_byte.
void take_two_filled(unsigned char *&first, unsigned char *&second, char first_byte = 'k', char second_byte = 'g') {
    first = (unsigned char *)block_zone_take(kBlock);
    second = (unsigned char *)block_zone_take(kBlock);
    REQUIRE(first);
    REQUIRE(second);
    memset(first, first_byte, kBlock);
    memset(second, second_byte, kBlock);
}

// Forks (playing fork's handlers) a child that waits for the parent's go,
// then exits 0 when `wrong` counts no byte out of place in its view.
struct CheckingChild {
    pid_t pid = -1;
    int go[2] = {-1, -1};
    explicit CheckingChild(const std::function<size_t()> &wrong) {
        REQUIRE(pipe(go) == 0);
        fork_prepare();
        pid = _Fork();
        if (pid == 0) {
            fork_child();
            char byte;
            if (read(go[0], &byte, 1) != 1) _exit(2);
            _exit(wrong() ? 1 : 0);
        }
        fork_parent();
    }
    // Lets it look, and checks that it saw every byte in place.
    void finish() {
        REQUIRE(write(go[1], "x", 1) == 1);
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        close(go[0]);
        close(go[1]);
    }
};

} // namespace

TEST_CASE("chunk size: 32 MiB of 1 MiB arenas, 64 blocks of smaller ones") {
    CHECK(block_zone_chunk_bytes(size_t(1) << 20) == size_t(32) << 20);
    CHECK(block_zone_chunk_bytes(size_t(256) << 10) == size_t(16) << 20); // CPython before 3.10
    CHECK(block_zone_chunk_bytes(size_t(3) << 20) == size_t(30) << 20);   // whole blocks only
    CHECK(block_zone_chunk_bytes(size_t(64) << 20) == 0);
    CHECK(block_zone_chunk_bytes(0) == 0);
}

TEST_CASE("blocks fill a disk chunk, then a second; none is handed out twice") {
    ZoneScope scope;
    std::vector<unsigned char *> blocks;
    for (size_t i = 0; i < kPerChunk; i++) {
        auto *b = (unsigned char *)block_zone_take(kBlock);
        REQUIRE(b);
        blocks.push_back(b);
    }
    CHECK(block_zone_figures().chunks == 1);
    Region *first = chunk_of(blocks[0]);
    REQUIRE(first);
    CHECK(first->backing == Backing::disk);
    CHECK(first->advice_pinned); // an object heap is read scattered: MADV_RANDOM, kept
    CHECK(first->site == nullptr);
    std::set<unsigned char *> distinct(blocks.begin(), blocks.end());
    CHECK(distinct.size() == kPerChunk);
    for (unsigned char *b : blocks) {
        CHECK(chunk_of(b) == first);
        CHECK(chunk_of(b + kBlock - 1) == first);
        CHECK((uintptr_t)b % kBlock == 0);
    }
    auto *next = (unsigned char *)block_zone_take(kBlock);
    REQUIRE(next);
    CHECK(block_zone_figures().chunks == 2);
    CHECK(chunk_of(next) != first);
    // Every block holds its own bytes.
    blocks.push_back(next);
    for (size_t i = 0; i < blocks.size(); i++) memset(blocks[i], (int)(i + 1), kBlock);
    for (size_t i = 0; i < blocks.size(); i++) {
        CHECK(blocks[i][0] == (unsigned char)(i + 1));
        CHECK(blocks[i][kBlock - 1] == (unsigned char)(i + 1));
    }
    BlockZoneFigures f = block_zone_figures();
    CHECK(f.blocks_in_use == kPerChunk + 1);
    CHECK(f.peak_blocks == kPerChunk + 1);
    for (unsigned char *b : blocks) CHECK(block_zone_give(b, kBlock));
    CHECK(block_zone_figures().blocks_in_use == 0);
    // One empty chunk is kept (an arena freed and taken at a boundary must
    // not make and free a region each time); the other was freed.
    CHECK(block_zone_figures().chunks == 1);
}

TEST_CASE("a freed block is taken again before a new chunk is made") {
    ZoneScope scope;
    void *a = block_zone_take(kBlock);
    void *b = block_zone_take(kBlock);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(block_zone_give(a, kBlock));
    CHECK(block_zone_take(kBlock) == a);
    CHECK(block_zone_figures().chunks == 1);
    CHECK(block_zone_give(a, kBlock));
    CHECK(block_zone_give(b, kBlock));
}

// A freed block's dirty pages are garbage: on a filesystem that keeps a
// range's blocks through FALLOC_FL_ZERO_RANGE (ext4) they leave the page
// cache unwritten, and the block, taken again, reads as zeros with no
// disk read. Elsewhere they stay (the reservation matters more).
TEST_CASE("a freed block's dirty pages are dropped unwritten where the filesystem keeps its blocks") {
    ZoneScope scope;
    unsigned char *keep, *gone;
    take_two_filled(keep, gone); // 'k', 'g'
    const Region *r = chunk_of(gone);
    REQUIRE(r);
    REQUIRE(r->file);
    const bool drops = zero_range_keeps_reservation(r->file->fd);
    INFO("the spill directory's filesystem keeps a range's blocks through zero_range: " << drops);
    CHECK(block_zone_give(gone, kBlock));
    CHECK(cached_pages(gone, kBlock) == (drops ? 0 : kBlock / 4096));
    CHECK(cached_pages(keep, kBlock) == kBlock / 4096);
    auto *again = (unsigned char *)block_zone_take(kBlock);
    CHECK(again == gone);
    if (drops) {
        size_t nonzero = 0;
        for (size_t i = 0; i < kBlock; i += 4096) nonzero += again[i] != 0;
        CHECK(nonzero == 0);
    }
    memset(again, 'a', kBlock);
    CHECK(again[kBlock - 1] == 'a');
    CHECK(keep[kBlock - 1] == 'k');
    CHECK(block_zone_give(again, kBlock));
    CHECK(block_zone_give(keep, kBlock));
}

TEST_CASE("a block is in the page cache when taken, so its first stores read nothing") {
    ZoneScope scope;
    // Major faults of this thread while every page of [p, p+len) is stored into.
    auto store_faults = [](unsigned char *p, size_t len, unsigned char byte) {
        rusage before{}, after{};
        getrusage(RUSAGE_THREAD, &before);
        for (size_t i = 0; i < len; i += 4096) p[i] = byte;
        getrusage(RUSAGE_THREAD, &after);
        return after.ru_majflt - before.ru_majflt;
    };
    auto *fresh = (unsigned char *)block_zone_take(kBlock); // a new chunk's first block
    REQUIRE(fresh);
    REQUIRE(chunk_of(fresh));
    REQUIRE(chunk_of(fresh)->backing == Backing::disk);
    CHECK(cached_pages(fresh, kBlock) == kBlock / 4096);
    CHECK(store_faults(fresh, kBlock, 'f') == 0);
    // Taken again after a free: cached again, and its old bytes gone.
    CHECK(block_zone_give(fresh, kBlock));
    auto *again = (unsigned char *)block_zone_take(kBlock);
    REQUIRE(again == fresh);
    CHECK(cached_pages(again, kBlock) == kBlock / 4096);
    size_t old_bytes = 0;
    for (size_t i = 0; i < kBlock; i += 4096) old_bytes += again[i] == 'f';
    CHECK(old_bytes == 0);
    CHECK(store_faults(again, kBlock, 'a') == 0);
    CHECK(block_zone_give(again, kBlock));
}

TEST_CASE("another size and foreign pointers are refused") {
    ZoneScope scope;
    void *a = block_zone_take(kBlock);
    REQUIRE(a);
    CHECK(block_zone_take(kBlock / 2) == nullptr); // the zone serves one size
    CHECK(block_zone_take(kBlock + 100) == nullptr); // not whole pages
    int on_stack = 0;
    CHECK_FALSE(block_zone_give(&on_stack, kBlock));
    void *elsewhere = malloc(64);
    CHECK_FALSE(block_zone_give(elsewhere, kBlock));
    free(elsewhere);
    CHECK_FALSE(block_zone_give(a, kBlock / 2));
    CHECK(block_zone_give(a, kBlock));
}

TEST_CASE("after a fork a freed block's copies go, and the child keeps its view") {
    ZoneScope scope;
    unsigned char *keep, *gone;
    take_two_filled(keep, gone); // 'k', 'g'
    CheckingChild child([&] {
        size_t wrong = 0;
        for (size_t i = 0; i < kBlock; i++) wrong += (keep[i] != 'k') + (gone[i] != 'g');
        return wrong;
    });
    // The parent writes both blocks: private copies, while the child lives.
    memset(keep, 'K', kBlock);
    memset(gone, 'G', kBlock);
    CHECK(private_pages(gone, kBlock) == kBlock / 4096);
    CHECK(block_zone_give(gone, kBlock));
    CHECK(private_pages(gone, kBlock) == 0);
    CHECK(private_pages(keep, kBlock) == kBlock / 4096);
    CHECK(keep[0] == 'K');
    CHECK(keep[kBlock - 1] == 'K');
    child.finish();
    CHECK(block_zone_give(keep, kBlock));
    for (int i = 0; i < 500 && snapshot_settle(); i++) usleep(10 * 1000);
}

// Blocks taken while a fork's children live go to a chunk no snapshot
// holds: in the frozen one, every page the parent wrote would be a copy
// (anonymous memory). Once the children are gone, its free blocks are
// taken again first.
TEST_CASE("while a fork's children live, blocks come from a chunk the fork did not freeze") {
    ZoneScope scope;
    unsigned char *old_block, *freed;
    take_two_filled(old_block, freed, 'o', 'f');
    CHECK(block_zone_give(freed, kBlock)); // free at the fork: the frozen chunk has room
    const uintptr_t frozen = arena::region_at(old_block)->start;
    CheckingChild child([&] {
        size_t wrong = 0;
        for (size_t i = 0; i < kBlock; i++) wrong += old_block[i] != 'o';
        return wrong;
    });
    REQUIRE(snapshot_frozen(old_block));
    std::vector<unsigned char *> taken;
    for (int i = 0; i < 3; i++) {
        auto *b = (unsigned char *)block_zone_take(kBlock);
        REQUIRE(b);
        memset(b, 'n', kBlock);
        CHECK(arena::region_at(b)->start != frozen);
        CHECK_FALSE(snapshot_frozen(b));
        CHECK(private_pages(b, kBlock) == 0); // page cache, not copies
        taken.push_back(b);
    }
    CHECK(arena::region_at(taken[0])->start == arena::region_at(taken[2])->start); // one new chunk
    CHECK(block_zone_figures().chunks == 2);
    child.finish();
    for (int i = 0; i < 500 && snapshot_settle(); i++) usleep(10 * 1000);
    REQUIRE_FALSE(snapshot_frozen(old_block));
    auto *again = (unsigned char *)block_zone_take(kBlock);
    CHECK(arena::region_at(again)->start == frozen); // the oldest chunk fills first again
    CHECK(block_zone_give(again, kBlock));
    for (unsigned char *b : taken) CHECK(block_zone_give(b, kBlock));
    CHECK(block_zone_give(old_block, kBlock));
}

// A fork child's view of its parent's chunks is private: a block taken
// there would be written as copies (anonymous memory), each page read
// from the file first. The child takes its blocks in chunks of its own,
// gives the parent's back, and an inherited chunk left empty goes when
// the child next makes a chunk.
TEST_CASE("a fork child takes blocks in a chunk of its own, never in one it inherited") {
    ZoneScope scope;
    unsigned char *parents, *spare;
    take_two_filled(parents, spare, 'p', 's');
    CHECK(block_zone_give(spare, kBlock)); // the inherited chunk has room at the fork
    const uintptr_t inherited = chunk_of(parents)->start;
    CheckingChild child([&] {
        size_t wrong = 0;
        auto *mine = (unsigned char *)block_zone_take(kBlock);
        if (!mine) return size_t(1);
        memset(mine, 'c', kBlock);
        wrong += chunk_of(mine)->start == inherited;
        wrong += private_pages(mine, kBlock) != 0; // page cache, not copies
        wrong += block_zone_figures().chunks != 2;
        for (size_t i = 0; i < kBlock; i++) wrong += parents[i] != 'p';
        wrong += !block_zone_give(parents, kBlock);
        // Its own chunk fills; the next block is in a new chunk, and the
        // inherited one, empty, goes then.
        std::vector<unsigned char *> more;
        for (size_t i = 0; i < kPerChunk; i++) {
            auto *b = (unsigned char *)block_zone_take(kBlock);
            if (!b) return wrong + 1;
            wrong += chunk_of(b)->start == inherited;
            more.push_back(b);
        }
        wrong += chunk_of(more.back()) == chunk_of(mine);
        wrong += block_zone_figures().chunks != 2;
        wrong += !block_zone_give(mine, kBlock);
        for (unsigned char *b : more) wrong += !block_zone_give(b, kBlock);
        return wrong;
    });
    child.finish();
    CHECK(parents[0] == 'p');
    CHECK(parents[kBlock - 1] == 'p');
    CHECK(block_zone_figures().chunks == 1);
    CHECK(block_zone_give(parents, kBlock));
    for (int i = 0; i < 500 && snapshot_settle(); i++) usleep(10 * 1000);
}

// A chunk's slot in the table is reused once the chunk is freed: a chunk
// made there later starts with every block free, not with the bits of
// the chunk that was moved out of it (once it did: in a slot a full chunk
// had left, block_zone_take failed, the interpreter put that arena in
// anonymous memory, and the new chunk was never used or freed).
TEST_CASE("a chunk made after one was freed starts with every block free") {
    ZoneScope scope;
    std::vector<unsigned char *> full[3];
    for (auto &blocks : full)
        for (size_t i = 0; i < kPerChunk; i++) {
            auto *b = (unsigned char *)block_zone_take(kBlock);
            REQUIRE(b);
            blocks.push_back(b);
        }
    REQUIRE(block_zone_figures().chunks == 3);
    // The second chunk empties (kept: the only empty one), then the first
    // (freed: the table's last chunk moves into its slot).
    for (unsigned char *b : full[1]) CHECK(block_zone_give(b, kBlock));
    for (unsigned char *b : full[0]) CHECK(block_zone_give(b, kBlock));
    CHECK(block_zone_figures().chunks == 2);
    // The empty chunk fills again, then a new one is made.
    std::vector<unsigned char *> more;
    for (size_t i = 0; i < 2 * kPerChunk; i++) {
        auto *b = (unsigned char *)block_zone_take(kBlock);
        REQUIRE(b);
        more.push_back(b);
    }
    CHECK(block_zone_figures().chunks == 3);
    CHECK(block_zone_figures().blocks_in_use == 3 * kPerChunk);
    std::set<unsigned char *> distinct(more.begin(), more.end());
    distinct.insert(full[2].begin(), full[2].end());
    CHECK(distinct.size() == 3 * kPerChunk);
    for (unsigned char *b : more) CHECK(block_zone_give(b, kBlock));
    for (unsigned char *b : full[2]) CHECK(block_zone_give(b, kBlock));
    CHECK(block_zone_figures().blocks_in_use == 0);
}

TEST_CASE("a block freed twice stops the process") {
    ZoneScope scope;
    void *a = block_zone_take(kBlock);
    REQUIRE(a);
    fork_prepare();
    pid_t pid = _Fork();
    if (pid == 0) {
        fork_child();
        signal(SIGABRT, SIG_DFL); // not Catch's handler: the parent reads the signal
        block_zone_give(a, kBlock);
        block_zone_give(a, kBlock); // aborts
        _exit(0);
    }
    fork_parent();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK(block_zone_give(a, kBlock));
    for (int i = 0; i < 500 && snapshot_settle(); i++) usleep(10 * 1000);
}
