// test_move_tracked.cpp — a chunk moved the tracked way while a CPU writer
// stores everywhere in the range and a thread pread(2)s into it over and
// over: with userfaultfd for kernel faults no pread fails or comes back
// short, every store lands, and the range ends mapping the new file; each
// way (block from anonymous memory and from a memfd, pull from a file into
// a memfd, file to file), and the failures that must leave the chunk where
// it was, bytes included.
#include "shim_fixture.h"

#include "tiering/move_tracked.h"
#include "os/uffd.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fcntl.h>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <vector>

using namespace spillway;

namespace {

constexpr size_t MiB = size_t(1) << 20, kChunk = 16 * MiB, kLen = 64 * MiB;

enum class Kind { anon, memfd, file };

int new_file(Kind k, size_t n) {
    int fd = k == Kind::memfd ? memfd_create("test_move_tracked", MFD_CLOEXEC)
                              : open(test::settings().spill_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(fallocate(fd, 0, 0, (off_t)n) == 0);
    return fd;
}

uint64_t word(size_t i) { return i * 0x9E3779B97F4A7C15ull + 1; }

// The range: kLen bytes of a kind, every word set to word(i).
struct Range {
    Kind kind;
    int fd = -1;
    uint64_t *p = nullptr;
    explicit Range(Kind k) : kind(k) {
        if (k != Kind::anon) fd = new_file(k, kLen);
        void *m = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, k == Kind::anon ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED,
                       fd, 0);
        REQUIRE(m != MAP_FAILED);
        p = (uint64_t *)m;
        for (size_t i = 0; i < kLen / 8; i++) p[i] = word(i);
    }
    ~Range() {
        munmap(p, kLen);
        if (fd >= 0) close(fd);
    }
    char *bytes() const { return (char *)p; }
};

// A CPU writer over the first half (word j's last value is known from the
// count) and a thread pread(2)ing 1 MiB into the last MiB, both until stopped.
struct Users {
    uint64_t *w;
    size_t words;
    int src = -1;
    std::vector<char> pattern = std::vector<char>(MiB);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> stores{0}, calls{0}, efault{0}, shorts{0}, other{0};
    std::thread writer, reader;

    explicit Users(Range &r) : w(r.p), words(kLen / 16) {
        src = open(test::settings().spill_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        REQUIRE(src >= 0);
        for (size_t i = 0; i < MiB; i++) pattern[i] = (char)(i * 7 + 3);
        REQUIRE(pwrite(src, pattern.data(), MiB, 0) == (ssize_t)MiB);
        char *into = r.bytes() + kLen - MiB;
        writer = std::thread([this] {
            uint64_t k = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int b = 0; b < 256; b++, k++) __atomic_store_n(&w[(k * 4099) % words], ~k, __ATOMIC_RELAXED);
                stores.store(k, std::memory_order_relaxed);
            }
        });
        reader = std::thread([this, into] {
            while (!stop.load(std::memory_order_relaxed)) {
                ssize_t got = pread(src, into, MiB, 0);
                if (got < 0 && errno == EFAULT) efault++;
                else if (got < 0) other++;
                else if (got != (ssize_t)MiB) shorts++;
                calls++;
            }
            if (pread(src, into, MiB, 0) != (ssize_t)MiB) other++;
        });
        while (calls.load() < 10 || stores.load() < 100000) usleep(100);
    }
    void finish() {
        stop = true;
        writer.join();
        reader.join();
        close(src);
    }
    // Every word holds its last store, or its first value when never stored.
    bool intact() const {
        uint64_t count = stores.load();
        std::vector<uint64_t> want(kLen / 8);
        for (size_t i = 0; i < want.size(); i++) want[i] = word(i);
        for (uint64_t k = 0; k < count; k++) want[(k * 4099) % words] = ~k;
        for (size_t i = 0; i < kLen / 8 - MiB / 8; i++)
            if (w[i] != want[i]) return false;
        return memcmp((const char *)w + kLen - MiB, pattern.data(), MiB) == 0;
    }
};

// Copies the old file's chunk bytes through a buffer (the FileCopy a pull uses).
TrackedMover::FileCopy file_copy(int old_fd, uint64_t old_off, int fail_on_call = -1) {
    auto calls = std::make_shared<int>(0);
    return [=](int to_fd, uint64_t to_off, size_t rel, size_t n) -> int {
        if ((*calls)++ == fail_on_call) return -EIO;
        std::vector<char> b(n);
        if (pread(old_fd, b.data(), n, (off_t)(old_off + rel)) != (ssize_t)n) return -EIO;
        return pwrite(to_fd, b.data(), n, (off_t)(to_off + rel)) == (ssize_t)n ? 0 : -EIO;
    };
}

// The file mapped at p, or -1 (from /proc/self/maps: "(deleted)" tmpfiles
// and memfds alike are compared by inode).
ino_t mapped_inode(const void *p) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    ino_t ino = (ino_t)-1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b, inode;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &a, &b, &inode) == 3 && (uintptr_t)p >= a && (uintptr_t)p < b)
            ino = (ino_t)inode;
    }
    if (f) fclose(f);
    return ino;
}
ino_t inode_of(int fd) {
    struct stat st;
    fstat(fd, &st);
    return st.st_ino;
}

} // namespace

TEST_CASE("tracked moves: no pread into the range fails or comes back short, and no store is lost") {
    test::bring_up();
    TrackedMover mover;
    uffd::Level level = mover.begin();
    if (level != uffd::Level::full) {
        // Without userfaultfd for kernel faults the tracked ways are refused:
        // the caller moves the read-only way (test_rehome.cpp).
        Range r(Kind::anon);
        int dest = new_file(Kind::file, kLen);
        CHECK(mover.block((uintptr_t)r.p, kChunk, false, dest, 0, {}, nullptr) == -ENOTSUP);
        close(dest);
        return;
    }
    struct Way {
        const char *name;
        Kind from, to;
    } ways[] = {{"block, anonymous to file", Kind::anon, Kind::file},
                {"block, memfd to file", Kind::memfd, Kind::file},
                {"pull, file to memfd", Kind::file, Kind::memfd},
                {"pull then block, file to file", Kind::file, Kind::file}};
    for (const Way &way : ways) {
        INFO(way.name);
        Range r(way.from);
        int dest = new_file(way.to, kLen);
        Users users(r);
        TrackedPause pause;
        for (size_t off = 0; off < kLen; off += kChunk) {
            uintptr_t at = (uintptr_t)r.p + off;
            int rc;
            if (way.from != Kind::file) rc = mover.block(at, kChunk, way.from == Kind::memfd, dest, off, {}, &pause);
            else if (way.to == Kind::memfd) rc = mover.pull(at, kChunk, r.fd, off, dest, off, file_copy(r.fd, off), &pause);
            else rc = mover.pull_then_block(at, kChunk, r.fd, off, dest, off, file_copy(r.fd, off), &pause);
            REQUIRE(rc == 0);
        }
        uint64_t during = users.calls.load();
        users.finish();
        INFO(users.calls.load() << " preads, " << during << " before the move ended; longest wait "
                                << pause.longest_ns / 1e6 << " ms");
        CHECK(users.efault.load() == 0);
        CHECK(users.shorts.load() == 0);
        CHECK(users.other.load() == 0);
        CHECK(users.intact());
        CHECK(mapped_inode(r.p) == inode_of(dest));
        CHECK(mapped_inode(r.bytes() + kLen - 1) == inode_of(dest));
        // The range is dest: a store through it is in the file.
        r.p[5] = 12345;
        uint64_t v = 0;
        CHECK(pread(dest, &v, 8, 40) == 8);
        CHECK(v == 12345);
        close(dest);
    }
}

TEST_CASE("a tracked move that fails leaves the chunk where it was, with every store made meanwhile") {
    test::bring_up();
    TrackedMover mover;
    if (mover.begin() != uffd::Level::full) {
        CHECK(uffd::level() != uffd::Level::full);
        return;
    }
    SECTION("block: dest cannot be mapped (opened write-only), after the old pages left the range") {
        for (Kind from : {Kind::anon, Kind::memfd}) {
            Range r(from);
            int dest = new_file(Kind::file, kLen);
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", dest);
            int write_only = open(path, O_WRONLY | O_CLOEXEC);
            REQUIRE(write_only >= 0);
            Users users(r);
            for (size_t off = 0; off < kLen; off += kChunk)
                CHECK(mover.block((uintptr_t)r.p + off, kChunk, from == Kind::memfd, write_only, off, {}, nullptr) ==
                      -EACCES);
            users.finish();
            CHECK(users.efault.load() == 0);
            CHECK(users.shorts.load() == 0);
            CHECK(users.intact());
            if (from == Kind::memfd) CHECK(mapped_inode(r.p) == inode_of(r.fd));
            close(write_only);
            close(dest);
        }
    }
    SECTION("pull: the old file cannot be read half way") {
        Range r(Kind::file);
        int dest = new_file(Kind::memfd, kLen);
        Users users(r);
        for (size_t off = 0; off < kLen; off += kChunk)
            CHECK(mover.pull((uintptr_t)r.p + off, kChunk, r.fd, off, dest, off, file_copy(r.fd, off, 20), nullptr) ==
                  -EIO);
        users.finish();
        CHECK(users.efault.load() == 0);
        CHECK(users.shorts.load() == 0);
        CHECK(users.intact());
        CHECK(mapped_inode(r.p) == inode_of(r.fd));
        close(dest);
    }
}

TEST_CASE("tracked copies without waiting, then a read-only step copies only what was written since") {
    test::bring_up();
    TrackedMover mover;
    if (mover.begin() == uffd::Level::none) {
        CHECK(uffd::level() == uffd::Level::none);
        return;
    }
    Range r(Kind::memfd);
    int dest = new_file(Kind::file, kLen);
    std::atomic<bool> stop{false};
    std::thread writer([&] {
        for (uint64_t k = 0; !stop.load(); k++) r.p[(k * 4099) % (kLen / 8)] = ~k;
    });
    TrackedPause pause;
    REQUIRE(mover.track_and_copy((uintptr_t)r.p, kLen, dest, 0, {}, &pause) == 0);
    stop = true;
    writer.join();
    // The writer stopped: what the passes left is what the last copy finds.
    r.p[7] = 77;
    REQUIRE(mprotect(r.p, kLen, PROT_READ) == 0);
    TrackedPause last;
    REQUIRE(mover.copy_written((uintptr_t)r.p, kLen, dest, 0, &last) == 0);
    CHECK(last.recopied >= 4096);
    REQUIRE(mmap(r.p, kLen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, dest, 0) == r.p);
    std::vector<char> copy(kLen);
    REQUIRE(pread(r.fd, copy.data(), kLen, 0) == (ssize_t)kLen);
    CHECK(memcmp(copy.data(), r.p, kLen) == 0);
    CHECK(r.p[7] == 77);
    close(dest);
}
