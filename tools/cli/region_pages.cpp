// region_pages.cpp — see region_pages.h.
#include "region_pages.h"

#include "pagemap_walk.h"

#include <algorithm>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace spillway::cli {

namespace {
constexpr uint64_t kPage = 4096;
} // namespace

Pagemap::~Pagemap() {
    if (fd_ >= 0) close(fd_);
}

bool Pagemap::open_once() {
    if (!tried_) {
        tried_ = true;
        std::string path = path_.empty() ? "/proc/" + std::to_string(pid_) + "/pagemap" : path_;
        fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    return fd_ >= 0;
}

// One ioctl per 64 runs of pages alike (pagemap_walk.h): the kernel walks
// only this range's page table. Runs of the zero page are left out, as
// smaps leaves them out of Rss (a region only read maps it everywhere and
// holds no memory).
int Pagemap::by_scan(uint64_t start, uint64_t end, PageCounts &out) {
    pagemap::PageRegion vec[64];
    pagemap::ScanRequest request;
    request.start = start;
    request.end = end;
    request.category_mask = pagemap::kPageIsPresent;
    request.return_mask = pagemap::kPageIsPresent | pagemap::kPageIsFile | pagemap::kPageIsPfnZero;
    return pagemap::walk_runs(fd_, request, vec, 64, [&out](const pagemap::PageRegion &run) {
        if (run.categories & pagemap::kPageIsPfnZero) return true;
        uint64_t bytes = pagemap::run_pages(run) * kPage;
        out.present += bytes;
        if (!(run.categories & pagemap::kPageIsFile)) out.anonymous += bytes;
        return true;
    });
}

// 512 entries (2 MiB of range) per read. Without CAP_SYS_ADMIN the entry
// has no frame number, so the zero page cannot be told apart: a range only
// read counts as present here (anonymous regions only).
bool Pagemap::by_read(uint64_t start, uint64_t end, PageCounts &out) {
    uint64_t entries[512];
    for (uint64_t page = start / kPage; page < end / kPage;) {
        uint64_t want = std::min<uint64_t>(end / kPage - page, 512);
        ssize_t got = pread(fd_, entries, want * 8, (off_t)(page * 8));
        if (got <= 0) return false;
        for (uint64_t i = 0; i < (uint64_t)got / 8; i++) {
            if (!(entries[i] & pagemap::kEntryPresent)) continue;
            out.present += kPage;
            if (!(entries[i] & pagemap::kEntryFile)) out.anonymous += kPage;
        }
        page += (uint64_t)got / 8;
    }
    return true;
}

bool Pagemap::count(uint64_t start, uint64_t len, PageCounts &out, PageMethod *how) {
    out = {};
    if (!open_once()) return false;
    uint64_t end = start + len;
    if (!scan_missing_) {
        int walked = by_scan(start, end, out);
        if (walked == 0) {
            if (how) *how = PageMethod::scan;
            return true;
        }
        if (!pagemap::scan_missing(walked)) return false;
        scan_missing_ = true; // a kernel before 6.7: not asked again
        out = {};
    }
    // The fallback costs 8 bytes of pagemap per page whatever the region
    // holds: 2 MiB a GiB, 128 MiB for a 64 GiB region, every sample. Past
    // the sample's budget the figure is prorated and marked "~" instead.
    // A byte budget, not a time budget: the same regions get the same
    // method every sample whatever the machine's load, so a figure does
    // not flicker between exact and "~" (and tests are deterministic).
    // 64 MiB (32 GiB of regions) took 90-120 ms a sample on a busy 2-core
    // machine, at most ~10% of a core at the default 1 s interval (shorter
    // intervals get less: pagemap_read_budget), where a
    // 64 GiB region alone took 165-200 ms (2.5 s under load) uncapped; the
    // sampler of `run --record` shares the job's cgroup, so its cost is
    // the job's. Checked before a region is read, never spent on half a
    // region thrown away; chunks larger than 512 entries measured no faster.
    uint64_t cost = (end / kPage - start / kPage) * 8;
    if (cost > *read_budget_) {
        if (how) *how = PageMethod::prorated_over_budget;
        return false;
    }
    *read_budget_ -= cost;
    if (!by_read(start, end, out)) return false;
    if (how) *how = PageMethod::read;
    return true;
}

uint64_t pagemap_read_budget(double interval_s) {
    if (!(interval_s < 1.0)) return kPagemapReadBudget;
    if (!(interval_s > 0)) return 0;
    return (uint64_t)(interval_s * (double)(kPagemapReadBudget / 8)) * 8; // whole entries
}

bool whole_vmas(const std::vector<Vma> &vmas, uint64_t start, uint64_t len) {
    uint64_t end = start + len;
    for (const Vma &v : vmas)
        if (v.start < end && v.end > start && (v.start < start || v.end > end)) return false;
    return true;
}

RegionPages region_pages(const std::vector<Vma> &vmas, uint64_t start, uint64_t len, Pagemap *pagemap) {
    RegionPages r;
    PageMethod how = PageMethod::prorated;
    if (!whole_vmas(vmas, start, len) && pagemap) {
        if (pagemap->count(start, len, r.bytes, &how)) {
            r.method = how;
            return r;
        }
        if (how != PageMethod::prorated_over_budget) how = PageMethod::prorated;
    }
    r.method = whole_vmas(vmas, start, len) ? PageMethod::smaps : how;
    r.bytes.present = resident_in(vmas, start, len);
    r.bytes.anonymous = anonymous_in(vmas, start, len);
    return r;
}

} // namespace spillway::cli
