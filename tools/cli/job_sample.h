// job_sample.h — one look at every process running under the shim (or at
// one process tree): per process its regions (backing, reserved, resident,
// phase, advice, fault rate), its major faults per second and bytes read
// per fault, and per memory cgroup its figures. `spillway top` draws it;
// `spillway run --record` writes it as a JSON line.
//
// A disk or memory region's resident bytes are its pages in its file (page
// cache, or the memfd) as the shim measured them (cachestat, Linux 6.5+),
// not only what is mapped: region_sample().
//
// Rates come from the previous sample of the same sampler (first sample:
// unknown, shown as "-"); bytes read per major fault is the process's
// /proc/PID/io read_bytes over its majflt in the interval, the kernel's own
// attribution of block reads to the task.
//
// Invariant: every figure comes from the kernel (/proc, the cgroup files)
// or the shim's live snapshot, and one that could not be read is marked
// unknown (negative rate, has_snapshot = false, known = false), never 0.
#pragma once

#include "clock.h" // monotonic_ns(), the clock of the samples
#include "cgroup_figures.h"
#include "live_snapshot.h"
#include "proc_figures.h"
#include "region_pages.h"

#include <cstdint>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

struct RegionSample {
    LiveRegionView live;
    uint64_t resident = 0; // what the region holds in memory: region_resident()
    uint64_t mapped = 0;   // its range's mapped bytes now: smaps Rss, or its pages in pagemap (region_pages.h)
    // Whether mapped (and a private copy's resident) is an estimate: the
    // region shares a VMA with a neighbour and pagemap could not be read,
    // so the VMA's figure was shared out by size. Shown as such, "~".
    bool estimated = false;
    // Why, when estimated: pagemap was readable but only entry by entry (no
    // PAGEMAP_SCAN) and the sample's read budget was spent; else unreadable.
    bool over_budget = false;
    // Whether resident counts the region's pages in its file (the shim
    // measured them); false for a disk or memory region means mapped pages
    // only (a kernel before 6.5, a shim older than the figure), which can
    // be less than it holds.
    bool cache_counted = false;
};

// A region's sample from its snapshot entry and the process's mappings now.
// A disk or memory region (shared): the larger of its pages in its file as the shim measured
// it (up to a second old) and its Rss now. Every mapped page of a shared
// file mapping is in the cache, so Rss is a floor of the cache now; the
// cache also holds the pages the shim unmapped (writeback pacer, probes)
// and the read-ahead. Without the shim's figure: Rss alone. A fork child's
// private copy: what it copied on write (smaps Anonymous) and never the
// cache figure, which is the parent's file's pages, the parent's to count
// (the shim leaves it out for a private copy; it is ignored here if an
// entry carried it anyway). Memory and anon regions: Rss.
// Rss and Anonymous are the region's own (region_pages): smaps' when the
// region is whole VMAs, else counted in `pagemap` (the process's, opened
// once per sample; null: not read, the figure prorated and estimated).
RegionSample region_sample(const LiveRegionView &r, const std::vector<Vma> &vmas, Pagemap *pagemap = nullptr);

struct ProcessSample {
    pid_t pid = 0;
    std::string comm, rank, local_rank; // rank fields: "" when the variable is not set
    std::string cgroup;                 // CgroupFigures::name
    ProcCounters counters;
    bool counters_known = false;
    double majflt_per_s = -1;    // unknown on the first sample
    double bytes_per_fault = -1; // unknown without faults in the interval, or without /proc/PID/io
    bool has_snapshot = false;
    uint64_t unlisted = 0, fallbacks = 0;
    std::vector<RegionSample> regions;
    // By backing (0 disk, 1 memory, 2 anon), from the listed regions.
    uint64_t count[3] = {}, reserved[3] = {}, resident[3] = {};
    // Whether resident[b] holds an estimated region's figure: a sum is no
    // more exact than its least exact part, so it is marked "~" as that
    // region is.
    bool estimated[3] = {};
};

struct CgroupSample {
    CgroupFigures figures;
    double majfault_per_s = -1, refault_per_s = -1; // pages per second
};

struct JobSample {
    uint64_t mono_ns = 0;
    std::vector<ProcessSample> processes; // ascending pid
    std::vector<CgroupSample> cgroups;    // each cgroup of a process above, once
    uint64_t pagemap_read_budget = kPagemapReadBudget; // the read fallback's budget this sample (region_pages.h)
};

int backing_index(const std::string &name); // disk 0, memory 1, anon 2, else -1

class JobSampler {
  public:
    // root 0: every process under the shim; else only root and its descendants.
    // interval_s: the time between samples, which sizes the pagemap read budget.
    explicit JobSampler(pid_t root = 0, double interval_s = 1.0)
        : root_(root), pagemap_read_budget_(pagemap_read_budget(interval_s)) {
        if (root) members_[root] = 0; // its start time is read at the first sample
    }
    JobSample take();

  private:
    pid_t root_;
    uint64_t pagemap_read_budget_;
    std::map<pid_t, uint64_t> members_; // the job's processes so far, with their start times (job_processes)
    JobSample previous_;
    struct CachedEnviron {
        bool read = false;
        uint64_t start_ticks = 0;
        std::string comm;
        std::map<std::string, std::string> vars;
    };
    std::map<pid_t, CachedEnviron> environ_cache_;
};

// Fills the per-backing sums and rates of `now` from the raw figures and the
// previous sample (exposed for tests).
void derive(JobSample &now, const JobSample &previous);

// The sample as one JSON line (no newline); start_ns is the recording's start.
std::string sample_json(const JobSample &s, uint64_t start_ns);


} // namespace spillway::cli
