// region_pages.h — a region's mapped bytes (Rss) and anonymous bytes, exact
// even when the kernel merged the region's mapping with its neighbours'.
//
// Why: the shim carves regions out of one reserved arena, so neighbouring
// regions of the same protection and backing kind (anonymous ones above
// all) are one VMA in /proc/PID/smaps, whose figures are per VMA. Sharing
// that VMA's Rss out by size tells a wrong story (a touched 64 MiB region
// beside an untouched one would show 32 MiB each), so such a region's pages
// are counted in /proc/PID/pagemap over its own range instead: the
// PAGEMAP_SCAN ioctl (Linux 6.7, pagemap_scan.h), or reading the 8-byte
// entries in bounded chunks where the ioctl is missing, up to a budget per
// sample (kPagemapReadBudget) past which the figure is prorated.
//
// Invariant: a region made of whole VMAs keeps smaps' figures (no pagemap
// read at all); a region that shares a VMA is counted in pagemap, or, when
// pagemap cannot be read (another user's process, no ptrace read access)
// or only past the read budget, prorated as before and marked estimated,
// never passed off as exact.
// Pagemap is opened at most once per Pagemap object: one per process per
// sample (JobSampler::take).
#pragma once

#include "proc_figures.h"

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

// Bytes of a range by page state.
struct PageCounts {
    uint64_t present = 0;   // mapped now (smaps Rss)
    uint64_t anonymous = 0; // present and not file-backed (smaps Anonymous: a private mapping's copies on write)
};

// How a count was made, for tests and for saying so. prorated: pagemap
// could not be read; prorated_over_budget: it could, but only by reading
// its entries (no PAGEMAP_SCAN) and that would pass the sample's budget.
enum class PageMethod { smaps, scan, read, prorated, prorated_over_budget };

// The most of /proc/PID/pagemap the read fallback reads in one sample, all
// processes together: 64 MiB of 8-byte entries, 32 GiB of regions that share
// a mapping. See Pagemap::count for why a byte budget and why this size.
constexpr uint64_t kPagemapReadBudget = 64ull << 20;

// The budget of one sample taken every interval_s seconds: kPagemapReadBudget
// at 1 s and more, less in proportion below (6.4 MiB at 0.1 s), so that the
// fallback's share of a core (~10% at 1 s) does not grow as samples come
// faster. Never above the 1 s figure: the same regions keep the same method.
uint64_t pagemap_read_budget(double interval_s);

// /proc/PID/pagemap of one process, opened at the first count() that needs
// it and closed with the object.
class Pagemap {
public:
    // read_budget: bytes of pagemap entries the read fallback may still read,
    // shared by every Pagemap of one sample and lowered as they read; null:
    // a budget of kPagemapReadBudget of its own.
    explicit Pagemap(pid_t pid, uint64_t *read_budget = nullptr)
        : pid_(pid), read_budget_(read_budget ? read_budget : &own_budget_) {}
    ~Pagemap();
    Pagemap(const Pagemap &) = delete;
    Pagemap &operator=(const Pagemap &) = delete;

    // The counts of [start, start+len) (page-aligned), and which way they
    // were made (scan or read); false when pagemap cannot be opened or read,
    // or (*how = prorated_over_budget) when reading its entries would pass
    // the read budget.
    bool count(uint64_t start, uint64_t len, PageCounts &out, PageMethod *how = nullptr);
    // Skip the ioctl, as on a kernel before 6.7 (tests: the fallback path).
    void without_scan() { scan_missing_ = true; }
    // Open pagemap at this path instead (tests: a file that cannot be opened).
    void path_for_test(std::string path) { path_ = std::move(path); }

private:
    bool open_once();
    int by_scan(uint64_t start, uint64_t end, PageCounts &out); // pagemap::walk_runs's result
    bool by_read(uint64_t start, uint64_t end, PageCounts &out);
    pid_t pid_;
    uint64_t own_budget_ = kPagemapReadBudget;
    uint64_t *read_budget_;
    int fd_ = -1;
    bool tried_ = false, scan_missing_ = false;
    std::string path_;
};

// A region's figures and whether they are exact.
struct RegionPages {
    PageCounts bytes;
    PageMethod method = PageMethod::smaps;
    bool estimated() const { return method == PageMethod::prorated || method == PageMethod::prorated_over_budget; }
};

// Whether every VMA overlapping [start, start+len) lies wholly inside it:
// then smaps' per-VMA figures are the region's own.
bool whole_vmas(const std::vector<Vma> &vmas, uint64_t start, uint64_t len);
// [start, start+len)'s figures: from smaps when whole_vmas, else counted in
// `pagemap` (null: not tried), else prorated from smaps (estimated).
RegionPages region_pages(const std::vector<Vma> &vmas, uint64_t start, uint64_t len, Pagemap *pagemap);

} // namespace spillway::cli
