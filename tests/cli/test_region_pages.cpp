// test_region_pages.cpp — a region's own Rss and Anonymous when the kernel
// merged its mapping with a neighbour's (region_pages.h), on this test's
// own memory: smaps for whole VMAs, pagemap (ioctl, then the read fallback)
// for part of one, prorated and marked estimated when pagemap is unreadable.
#include "job_sample.h"
#include "proc_figures.h"
#include "region_pages.h"
#include "sample_fixture.h"
#include "temp_dir.h"
#include "top_frame.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace spillway::cli;

namespace {

constexpr uint64_t MiB = 1 << 20;

// Two adjacent 8 MiB "regions" in one anonymous mapping (one VMA, as the
// kernel makes of two neighbouring arena regions), the first written whole.
struct TwoRegions {
    char *p = nullptr;
    TwoRegions() {
        p = (char *)mmap(nullptr, 16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        madvise(p, 16 * MiB, MADV_NOHUGEPAGE); // no huge page across the boundary
        memset(p, 1, 8 * MiB);
    }
    ~TwoRegions() { munmap(p, 16 * MiB); }
    uint64_t at(uint64_t off) const { return (uint64_t)(uintptr_t)p + off; }
    // The second region as the shim's snapshot lists it.
    LiveRegionView second_view() const {
        LiveRegionView r;
        r.start = at(8 * MiB);
        r.len = 8 * MiB;
        r.backing = "anon";
        r.phase = "undecided";
        r.advice = "normal";
        return r;
    }
};

// One process's sample holding one region, as JobSampler::take makes it.
JobSample sample_of(const RegionSample &region) {
    return spillway::test::derived_sample(42, "job", {region});
}

std::string frame_of(const JobSample &js) {
    std::string frame;
    for (const std::string &l : render_frame(js, FrameStyle{})) frame += l + "\n";
    return frame;
}

} // namespace

TEST_CASE("region_pages: a region that is whole VMAs keeps smaps' figures, pagemap unopened") {
    auto vmas = parse_smaps("7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize: 4096 kB\nRss: 1024 kB\n"
                            "Anonymous: 1024 kB\n"
                            "7f0000400000-7f0000800000 rw-p 00000000 00:00 0\nSize: 4096 kB\nRss: 2048 kB\n"
                            "Anonymous: 512 kB\n");
    Pagemap none(getpid());
    none.path_for_test("/nonexistent/pagemap"); // would fail if it were opened
    RegionPages one = region_pages(vmas, 0x7f0000000000ull, 4 * MiB, &none);
    CHECK(one.method == PageMethod::smaps);
    CHECK(one.bytes.present == 1 * MiB);
    CHECK(one.bytes.anonymous == 1 * MiB);
    RegionPages two = region_pages(vmas, 0x7f0000000000ull, 8 * MiB, &none); // two VMAs, both whole
    CHECK(two.method == PageMethod::smaps);
    CHECK(two.bytes.present == 3 * MiB);
    CHECK_FALSE(two.estimated());
    CHECK(whole_vmas(vmas, 0x7f0000000000ull, 8 * MiB));
    CHECK_FALSE(whole_vmas(vmas, 0x7f0000200000ull, 4 * MiB));
}

TEST_CASE("region_pages: two regions in one VMA, one written, are counted apart in pagemap") {
    TwoRegions t;
    std::vector<Vma> vmas = read_smaps(getpid());
    REQUIRE_FALSE(whole_vmas(vmas, t.at(0), 8 * MiB));
    Pagemap pm(getpid());
    RegionPages first = region_pages(vmas, t.at(0), 8 * MiB, &pm);
    RegionPages second = region_pages(vmas, t.at(8 * MiB), 8 * MiB, &pm);
    INFO("method " << (int)first.method);
    CHECK((first.method == PageMethod::scan || first.method == PageMethod::read)); // read: a kernel before 6.7
    CHECK(first.bytes.present == 8 * MiB);
    CHECK(first.bytes.anonymous == 8 * MiB);
    CHECK(second.bytes.present == 0);
    CHECK(second.bytes.anonymous == 0);
    CHECK_FALSE(first.estimated());
    // What prorating said: half the VMA's Rss each.
    CHECK(resident_in(vmas, t.at(8 * MiB), 8 * MiB) >= 3 * MiB);
}

TEST_CASE("region_pages: without PAGEMAP_SCAN, pagemap's entries are read in chunks, the same figures") {
    TwoRegions t;
    std::vector<Vma> vmas = read_smaps(getpid());
    Pagemap pm(getpid());
    pm.without_scan();
    RegionPages first = region_pages(vmas, t.at(0), 8 * MiB, &pm);
    RegionPages second = region_pages(vmas, t.at(8 * MiB), 8 * MiB, &pm);
    CHECK(first.method == PageMethod::read);
    CHECK(first.bytes.present == 8 * MiB);
    CHECK(first.bytes.anonymous == 8 * MiB);
    CHECK(second.method == PageMethod::read);
    CHECK(second.bytes.present == 0);
    PageCounts part;
    REQUIRE(pm.count(t.at(6 * MiB), 4 * MiB, part)); // across the boundary
    CHECK(part.present == 2 * MiB);
}

TEST_CASE("region_pages: a page only read (the zero page) is not Rss, as in smaps") {
    TwoRegions t;
    volatile char sink = 0;
    for (uint64_t off = 8 * MiB; off < 9 * MiB; off += 4096) sink = sink + t.p[off];
    Pagemap pm(getpid());
    PageCounts c;
    PageMethod how;
    REQUIRE(pm.count(t.at(8 * MiB), 8 * MiB, c, &how));
    if (how == PageMethod::scan) CHECK(c.present == 0); // the read fallback cannot tell (no frame numbers)
}

TEST_CASE("region_pages: a private file mapping's copies on write are its anonymous pages") {
    TempDir dir;
    std::string path = dir.path + "/spill";
    int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 16 * MiB) == 0);
    char *p = (char *)mmap(nullptr, 16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    REQUIRE(p != MAP_FAILED);
    close(fd);
    memset(p, 1, 1 * MiB);                                         // copied on write: anonymous
    volatile char sink = 0;
    for (uint64_t off = 8 * MiB; off < 10 * MiB; off += 4096) sink = sink + p[off]; // the file's pages
    std::vector<Vma> vmas = read_smaps(getpid());
    for (bool scan : {true, false}) {
        Pagemap pm(getpid());
        if (!scan) pm.without_scan();
        RegionPages first = region_pages(vmas, (uint64_t)(uintptr_t)p, 8 * MiB, &pm);
        RegionPages second = region_pages(vmas, (uint64_t)(uintptr_t)p + 8 * MiB, 8 * MiB, &pm);
        INFO("scan " << scan);
        // The kernel maps cached file pages around a read fault (fault-around,
        // 64 KiB): present may exceed what was touched by that much.
        CHECK(first.bytes.anonymous == 1 * MiB);
        CHECK(first.bytes.present >= 1 * MiB);
        CHECK(first.bytes.present <= 1 * MiB + 64 * 1024);
        CHECK(second.bytes.anonymous == 0);
        CHECK(second.bytes.present >= 2 * MiB);
        CHECK(second.bytes.present <= 2 * MiB + 64 * 1024);
    }
    munmap(p, 16 * MiB);
}

TEST_CASE("region_pages: pagemap unreadable: prorated as before, and said to be estimated") {
    TwoRegions t;
    std::vector<Vma> vmas = read_smaps(getpid());
    Pagemap denied(getpid());
    denied.path_for_test("/nonexistent/pagemap"); // as another user's process
    RegionPages second = region_pages(vmas, t.at(8 * MiB), 8 * MiB, &denied);
    CHECK(second.method == PageMethod::prorated);
    CHECK(second.estimated());
    CHECK(second.bytes.present == resident_in(vmas, t.at(8 * MiB), 8 * MiB));

    // The sample carries it; top marks the figure and says why; the record's JSON says so.
    LiveRegionView r = t.second_view();
    RegionSample s = region_sample(r, vmas, &denied);
    CHECK(s.estimated);
    Pagemap pm(getpid());
    CHECK_FALSE(region_sample(r, vmas, &pm).estimated);
    CHECK(region_sample(r, vmas, &pm).resident == 0);
    JobSample js = sample_of(s);
    CHECK(sample_json(js, 0).find("\"estimated\":true") != std::string::npos);
    std::string frame = frame_of(js);
    CHECK(frame.find("res/reserved ~") != std::string::npos);
    CHECK(frame.find("~ estimated") != std::string::npos);
}

TEST_CASE("region_pages: without PAGEMAP_SCAN, pagemap is read up to the sample's budget, then prorated and said so") {
    TwoRegions t;
    std::vector<Vma> vmas = read_smaps(getpid());
    // An 8 MiB region is 2048 entries, 16 KiB of pagemap: a 24 KiB budget
    // reads the first region and leaves too little for the second.
    uint64_t budget = 24 << 10;
    Pagemap pm(getpid(), &budget);
    pm.without_scan(); // as on a kernel before 6.7, whatever this one is
    RegionPages first = region_pages(vmas, t.at(0), 8 * MiB, &pm);
    CHECK(first.method == PageMethod::read);
    CHECK(first.bytes.present == 8 * MiB);
    CHECK(budget == 8 << 10);
    RegionPages second = region_pages(vmas, t.at(8 * MiB), 8 * MiB, &pm);
    CHECK(second.method == PageMethod::prorated_over_budget);
    CHECK(second.estimated());
    CHECK(second.bytes.present == resident_in(vmas, t.at(8 * MiB), 8 * MiB));
    CHECK(budget == 8 << 10); // nothing read for a region it could not finish
    // A smaller region still fits what is left: the budget is not all or nothing.
    RegionPages small = region_pages(vmas, t.at(6 * MiB), 4 * MiB, &pm);
    CHECK(small.method == PageMethod::read);
    CHECK(small.bytes.present == 2 * MiB);
    CHECK(budget == 0);

    // A second Pagemap of the same sample (another process) shares the spent budget.
    Pagemap other(getpid(), &budget);
    other.without_scan();
    CHECK(region_pages(vmas, t.at(0), 8 * MiB, &other).method == PageMethod::prorated_over_budget);

    // With the ioctl (a kernel of 6.7+) the budget is not spent: it reads no entries.
    uint64_t untouched = 24 << 10;
    Pagemap scan(getpid(), &untouched);
    RegionPages scanned = region_pages(vmas, t.at(0), 8 * MiB, &scan);
    if (scanned.method == PageMethod::scan) CHECK(untouched == 24 << 10);
    else CHECK(untouched == 8 << 10); // no PAGEMAP_SCAN here: the fallback, budgeted

    // top and the record say which figure is estimated and why.
    RegionSample s = region_sample(t.second_view(), vmas, &other);
    CHECK(s.estimated);
    CHECK(s.over_budget);
    JobSample js = sample_of(s);
    CHECK(sample_json(js, 0).find("\"estimated\":true") != std::string::npos);
    std::string frame = frame_of(js);
    INFO(frame);
    CHECK(frame.find("res/reserved ~") != std::string::npos);
    CHECK(frame.find("would read more than 64.0MiB of /proc/PID/pagemap this sample") != std::string::npos);
    CHECK(frame.find("is not readable here") == std::string::npos);
}

TEST_CASE("pagemap_read_budget: the fallback's budget shrinks with the sampling interval, never grows past 1 s's") {
    CHECK(pagemap_read_budget(1.0) == kPagemapReadBudget);
    CHECK(pagemap_read_budget(60.0) == kPagemapReadBudget); // a figure keeps its method at any long interval
    CHECK(pagemap_read_budget(0.5) == kPagemapReadBudget / 2);
    uint64_t tenth = pagemap_read_budget(0.1);
    CHECK(tenth % 8 == 0); // whole entries
    CHECK(tenth <= kPagemapReadBudget / 10);
    CHECK(tenth > kPagemapReadBudget / 10 - 8);
    CHECK(pagemap_read_budget(0) == 0);

    // A sampler taking a sample every 0.1 s hands that budget on, and the
    // frame's note names the budget the sample had, not the 1 s one.
    JobSample fast = JobSampler(getpid(), 0.1).take();
    CHECK(fast.pagemap_read_budget == tenth);
    CHECK(JobSampler(getpid()).take().pagemap_read_budget == kPagemapReadBudget);
    TwoRegions t;
    std::vector<Vma> vmas = read_smaps(getpid());
    uint64_t spent = 0;
    Pagemap none(getpid(), &spent);
    none.without_scan();
    RegionSample s = region_sample(t.second_view(), vmas, &none);
    REQUIRE(s.over_budget);
    JobSample js = sample_of(s);
    js.pagemap_read_budget = tenth;
    std::string frame = frame_of(js);
    INFO(frame);
    CHECK(frame.find("would read more than 6.40MiB of /proc/PID/pagemap this sample") != std::string::npos);
}
