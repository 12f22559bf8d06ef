// test_pagemap_walk.cpp — the one walk over PAGEMAP_SCAN's answer
// (common/pagemap_walk.h), on this test's own memory: 128 pages with every
// other one written are 64 runs of one page, counted by category, the same
// with a buffer of 5 runs (resuming at walk_end 13 times) as with one of 64;
// on_run can end the walk. On a kernel without the ioctl (before 6.7) the
// walk must say so (ENOTTY/EINVAL, what makes every caller fall back), and
// the fallback's source, pagemap's 8-byte entries, is checked on the same
// mapping instead: the test never passes by skipping.
#include "pagemap_walk.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace spillway::pagemap;

namespace {

constexpr uint64_t kPages = 128;

// 128 private anonymous pages, the even ones written (present, anonymous),
// the odd ones never touched (absent).
struct EveryOtherPage {
    char *p = nullptr;
    int fd = -1;
    EveryOtherPage() {
        p = (char *)mmap(nullptr, kPages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE((void *)p != MAP_FAILED); // (void *): Catch2 would print a char * as a string
        madvise(p, kPages * 4096, MADV_NOHUGEPAGE); // a huge page would fill the gaps
        for (uint64_t i = 0; i < kPages; i += 2) p[i * 4096] = 1;
        fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
    }
    ~EveryOtherPage() {
        close(fd);
        munmap(p, kPages * 4096);
    }
    ScanRequest present_pages() const {
        ScanRequest r;
        r.start = (uint64_t)(uintptr_t)p;
        r.end = r.start + kPages * 4096;
        r.category_mask = kPageIsPresent;
        r.return_mask = kPageIsPresent | kPageIsFile | kPageIsPfnZero;
        return r;
    }
};

struct Tally {
    uint64_t runs = 0, pages = 0, file_pages = 0, zero_pages = 0;
    uint64_t last_end = 0;
    bool in_order = true;
    bool operator()(const PageRegion &run) {
        in_order = in_order && run.start >= last_end && run.end > run.start;
        last_end = run.end;
        runs++;
        pages += run_pages(run);
        if (run.categories & kPageIsFile) file_pages += run_pages(run);
        if (run.categories & kPageIsPfnZero) zero_pages += run_pages(run);
        return true;
    }
};

// Whether this kernel answers PAGEMAP_SCAN at all (Linux 6.7+).
bool kernel_has_scan(int fd) {
    PageRegion one[1];
    ScanRequest r;
    r.start = 0;
    r.end = 4096;
    r.category_mask = kPageIsPresent;
    return walk_runs(fd, r, one, 1, [](const PageRegion &) { return true; }) == 0;
}

} // namespace

TEST_CASE("pagemap walk: every other page written is 64 one-page runs, with any buffer size") {
    EveryOtherPage m;
    if (!kernel_has_scan(m.fd)) {
        // The fallback every caller takes: the walk says the ioctl is
        // missing, and pagemap's entries hold the same pages.
        PageRegion buffer[64];
        Tally tally;
        int walked = walk_runs(m.fd, m.present_pages(), buffer, 64, tally);
        CHECK(scan_missing(walked));
        CHECK(tally.runs == 0);
        uint64_t entries[kPages];
        REQUIRE(pread(m.fd, entries, sizeof entries, (off_t)((uintptr_t)m.p / 4096 * 8)) == (ssize_t)sizeof entries);
        uint64_t present = 0, anonymous = 0;
        for (uint64_t i = 0; i < kPages; i++) {
            bool here = entries[i] & kEntryPresent;
            CHECK(here == (i % 2 == 0));
            present += here;
            anonymous += here && !(entries[i] & kEntryFile);
        }
        CHECK(present == 64);
        CHECK(anonymous == 64);
        WARN("no PAGEMAP_SCAN on this kernel (before 6.7): checked the read fallback's entries instead");
        return;
    }
    for (uint64_t capacity : {64ull, 5ull, 1ull}) {
        INFO("buffer of " << capacity << " runs");
        PageRegion buffer[64];
        Tally tally;
        REQUIRE(walk_runs(m.fd, m.present_pages(), buffer, capacity, tally) == 0);
        CHECK(tally.runs == 64); // fewer with a small buffer: the walk did not resume at walk_end
        CHECK(tally.pages == 64);
        CHECK(tally.file_pages == 0);
        CHECK(tally.zero_pages == 0);
        CHECK(tally.in_order);
        CHECK(tally.last_end == (uint64_t)(uintptr_t)m.p + 127 * 4096);
    }
}

TEST_CASE("pagemap walk: on_run ends the walk when its list is full") {
    EveryOtherPage m;
    PageRegion buffer[5];
    uint64_t seen = 0;
    int walked = walk_runs(m.fd, m.present_pages(), buffer, 5, [&seen](const PageRegion &) { return ++seen < 12; });
    if (scan_missing(walked)) {
        CHECK(seen == 0); // checked through the entries by the test above
        return;
    }
    CHECK(walked == 0);
    CHECK(seen == 12); // stopped in the third buffer, not at its end
}

TEST_CASE("pagemap walk: a bad descriptor is an error, not an empty range") {
    PageRegion buffer[4];
    ScanRequest r;
    r.start = 0;
    r.end = 4096;
    r.category_mask = kPageIsPresent;
    int walked = walk_runs(-1, r, buffer, 4, [](const PageRegion &) { return true; });
    CHECK(walked == -EBADF);
    CHECK_FALSE(scan_missing(walked));
}
