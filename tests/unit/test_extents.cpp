// test_extents.cpp — written_extents lists what holds data on disk: not a
// fallocated range never written back (even with dirty pages over it: no
// FIEMAP_FLAG_SYNC, nothing is written to answer; btrfs alone reports such
// pages as delayed allocation, data to come, and the list then has them),
// not a hole, but a range written back, clipped to the range asked and
// relative to it. A walk over more extents than one answer holds goes on
// where the last answer ended, and one whose answer does not move past
// where it asked stops and says it cannot tell (as btrfs answered, with
// writeback under way: a promotion asked the same again for 30 s).
#include "shim_fixture.h"
#include "test_tmp.h"

#include "cachestat.h"
#include "os/extents.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <vector>

using namespace spillway;

namespace {
constexpr size_t MiB = size_t(1) << 20;
constexpr long kBtrfsMagic = 0x9123683E; // BTRFS_SUPER_MAGIC

int tmp_file() {
    int fd = open(test::tmp_base().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    return fd;
}
} // namespace

TEST_CASE("written_extents: fallocated and dirty is not on disk; written back is, clipped to the range asked") {
    int fd = tmp_file();
    REQUIRE(fallocate(fd, 0, 0, 8 * MiB) == 0);
    std::vector<Extent> on_disk;
    REQUIRE(written_extents(fd, 0, 8 * MiB, on_disk));
    CHECK(on_disk.empty());
    // Dirty pages over the unwritten extents: still nothing on disk (on
    // btrfs: those pages, as delayed allocation), and asking wrote nothing
    // back.
    std::vector<char> data(MiB, 3);
    REQUIRE(pwrite(fd, data.data(), MiB, 2 * MiB) == (ssize_t)MiB);
    REQUIRE(written_extents(fd, 0, 8 * MiB, on_disk));
    struct statfs fs;
    REQUIRE(fstatfs(fd, &fs) == 0);
    if (fs.f_type == kBtrfsMagic) {
        REQUIRE(on_disk.size() == 1);
        CHECK(on_disk[0].off == 2 * MiB);
        CHECK(on_disk[0].len == MiB);
    } else {
        CHECK(on_disk.empty());
    }
    Cachestat cs{};
    REQUIRE(cachestat(fd, CachestatRange{2 * MiB, MiB}, cs) == 0);
    CHECK(cs.nr_dirty * 4096 == MiB);
    // Written back: [2 MiB, 3 MiB) holds data.
    REQUIRE(fdatasync(fd) == 0);
    REQUIRE(written_extents(fd, 0, 8 * MiB, on_disk));
    REQUIRE(on_disk.size() == 1);
    CHECK(on_disk[0].off == 2 * MiB);
    CHECK(on_disk[0].len == MiB);
    // Asked from inside it: clipped, relative to the range asked.
    REQUIRE(written_extents(fd, 2 * MiB + 4096, 4 * MiB, on_disk));
    REQUIRE(on_disk.size() == 1);
    CHECK(on_disk[0].off == 0);
    CHECK(on_disk[0].len == MiB - 4096);
    REQUIRE(written_extents(fd, 4 * MiB, 4 * MiB, on_disk));
    CHECK(on_disk.empty());
    close(fd);
}

TEST_CASE("written_extents: a hole holds nothing on disk") {
    int fd = tmp_file();
    REQUIRE(ftruncate(fd, 4 * MiB) == 0);
    std::vector<Extent> on_disk;
    REQUIRE(written_extents(fd, 0, 4 * MiB, on_disk));
    CHECK(on_disk.empty());
    close(fd);
}

namespace {
constexpr uint64_t kPage = 4096;

// A file of 300 one-page extents, page p written when p is even, unwritten
// (fallocated) when odd; the last one flagged last. Answers as ext4 does:
// the extents from the one holding fm_start on, at most fm_extent_count.
int g_asked = 0;
int answer_one_page_extents(int, struct fiemap *fm) {
    g_asked++;
    constexpr uint64_t kPages = 300;
    uint64_t first = fm->fm_start / kPage, stop = (fm->fm_start + fm->fm_length + kPage - 1) / kPage;
    unsigned n = 0;
    for (uint64_t p = first; p < kPages && p < stop && n < fm->fm_extent_count; p++, n++) {
        struct fiemap_extent &e = fm->fm_extents[n];
        e.fe_logical = e.fe_physical = p * kPage;
        e.fe_length = kPage;
        e.fe_flags = (p % 2 ? FIEMAP_EXTENT_UNWRITTEN : 0) | (p == kPages - 1 ? FIEMAP_EXTENT_LAST : 0);
    }
    fm->fm_mapped_extents = n;
    return 0;
}

// btrfs's answer with writeback under way over a fallocated file dirtied at
// random: asked from page 128 or later, the 128 one-page extents that end
// where it was asked from. The first answer (from page 0) moves forward.
// After 1000 questions, an error: a walk that does not stop ends there.
int answer_ending_where_asked(int, struct fiemap *fm) {
    if (++g_asked > 1000) {
        errno = EIO;
        return -1;
    }
    uint64_t from = fm->fm_start / kPage, first = from < 128 ? 0 : from - 128;
    for (unsigned i = 0; i < 128; i++) {
        struct fiemap_extent &e = fm->fm_extents[i];
        e.fe_logical = e.fe_physical = (first + i) * kPage;
        e.fe_length = kPage;
        e.fe_flags = FIEMAP_EXTENT_DELALLOC;
    }
    fm->fm_mapped_extents = 128;
    return 0;
}

struct AnswerWith {
    explicit AnswerWith(FiemapAnswer answer) {
        g_asked = 0;
        extents_answer_with_for_tests(answer);
    }
    ~AnswerWith() { extents_answer_with_for_tests(nullptr); }
};
} // namespace

TEST_CASE("written_extents: more extents than one answer holds are walked to the end of the range") {
    AnswerWith fake(answer_one_page_extents);
    std::vector<Extent> on_disk;
    // Pages 5 to 289: 285 extents, three answers of at most 128.
    REQUIRE(written_extents(-1, 5 * kPage, 285 * kPage, on_disk));
    CHECK(g_asked == 3);
    std::vector<Extent> expected;
    for (uint64_t p = 6; p < 290; p += 2) expected.push_back({(p - 5) * kPage, kPage});
    REQUIRE(on_disk.size() == expected.size());
    for (size_t i = 0; i < expected.size(); i++) {
        INFO("extent " << i);
        CHECK(on_disk[i].off == expected[i].off);
        CHECK(on_disk[i].len == expected[i].len);
    }
}

TEST_CASE("written_extents: an answer that ends where it was asked from stops the walk: cannot tell") {
    AnswerWith fake(answer_ending_where_asked);
    std::vector<Extent> on_disk;
    CHECK_FALSE(written_extents(-1, 0, 16384 * kPage, on_disk));
    CHECK(g_asked == 2); // the first answer moved to page 128; the second did not move
}
