// record_summary.h — what `spillway report` says about a recording
// (recorder.h): per cgroup its peak usage and when, the peaks of each kind
// of memory and of pressure; per detected phase the major faults and bytes
// read; per process its peaks and totals.
//
// Attribution: a process's major faults and bytes read between two samples
// are split among the phases of its regions in proportion to the pages
// each region faulted in (the detector's per-region rate); when none of its
// regions faulted, they go to "outside regions" (code, small allocations,
// files the program maps itself). Region-seconds count how long regions
// spent in each phase.
//
// Invariant: lines that do not parse are counted and reported, never
// silently skipped; a record without its end line says it was cut short.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spillway::cli {

struct CgroupPeaks {
    int version = 0;
    uint64_t peak_usage = 0, limit = 0;
    double peak_at = 0;
    uint64_t anon = 0, file = 0, shmem = 0, dirty = 0, writeback = 0; // each its own peak
    std::string psi_scope;
    double psi_some = 0, psi_full = 0, majfault_s = 0, refault_s = 0; // maxima
};

struct PhaseTotals {
    double major_faults = 0, bytes_read = 0, region_seconds = 0, pages_faulted = 0;
};

struct ProcessPeaks {
    std::string comm, rank, local_rank;
    double first_t = 0, last_t = 0;
    uint64_t peak_resident = 0, peak_reserved = 0;
    // Whether the sample that set peak_resident held a region's figure
    // marked "estimated" (shared out by size, region_pages.h): the peak is
    // then shown "~", as top shows it.
    bool peak_resident_estimated = false;
    int estimated_samples = 0; // samples with at least one estimated region
    double peak_majflt_s = 0;
    uint64_t first_majflt = 0, last_majflt = 0, first_read = 0, last_read = 0;
    bool read_known = true;
};

struct RecordSummary {
    std::string command;
    std::string started;
    double interval_s = 0, last_t = 0;
    int samples = 0, unreadable = 0, stats_lines = 0;
    bool has_exit = false;
    int exit_status = 0, exit_signal = 0;
    double exit_t = 0;
    std::map<std::string, CgroupPeaks> cgroups;
    std::map<std::string, PhaseTotals> phases; // "random", "sequential", "undecided", "outside regions"
    std::map<long, ProcessPeaks> processes;    // by pid
};

RecordSummary summarize_record(const std::vector<std::string> &lines);
std::vector<std::string> render_record_summary(const RecordSummary &s);

} // namespace spillway::cli
