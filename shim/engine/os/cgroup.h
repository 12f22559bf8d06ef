// cgroup.h — how much unreclaimable memory this process's cgroup can still take.
//
// Invariant: headroom is computed from the kernel's own figures (cgroup v2
// memory.max/current/stat, or v1 limit_in_bytes/usage_in_bytes/stat),
// walking every ancestor visible to us and taking the tightest. Reclaimable
// page cache (file minus shmem) does not count as used: it is exactly what
// spilling turns memory into. No limit anywhere means "unlimited".
#pragma once

#include <cstdint>
#include <string>

namespace spillway {

struct MemoryFigures {
    bool limited = false;
    uint64_t limit = 0;          // bytes
    uint64_t usage = 0;          // bytes charged, page cache included
    uint64_t reclaimable = 0;    // file pages that are not shmem
    std::string where;           // the cgroup directory that binds

    // What reclaim cannot free: usage less the page cache (never below 0).
    uint64_t unreclaimable() const { return usage > reclaimable ? usage - reclaimable : 0; }
    // What the cgroup can still take that reclaim need not make room for:
    // limit - unreclaimable (0 when over), UINT64_MAX without a limit.
    uint64_t room() const {
        if (!limited) return UINT64_MAX;
        return limit > unreclaimable() ? limit - unreclaimable() : 0;
    }
};

// Reads the figures now (a few small file reads; tens of microseconds).
MemoryFigures read_memory_figures();

// limit - (usage - reclaimable), or UINT64_MAX without a limit. Cached for
// a few milliseconds so a burst of allocations does not re-read the files.
uint64_t memory_headroom();

// Pressure as cgroup v2 reports it for the binding cgroup `where` (from
// MemoryFigures): memory.events counters and memory.pressure PSI. On v1
// these files do not exist: readable stays false and only usage against
// the limit (and its growth rate) can be used.
struct PressureSignals {
    bool readable = false;
    uint64_t high = 0, max = 0, oom = 0, oom_kill = 0; // memory.events counters
    double some_avg10 = 0, full_avg10 = 0;            // memory.pressure, percent
};
PressureSignals read_pressure_signals(const std::string &where);

// This process's anonymous memory in RAM (private copies included, page
// cache and memfd pages not): resident less shared pages of
// /proc/self/statm, the kernel's counters, no walk of the mappings (a few
// microseconds, so the tiering loop can look every few milliseconds while
// a fork snapshot's copies could outgrow the room). 0 when unreadable.
uint64_t process_anon_bytes();

// For tests: resolve against another root than / (a fake /proc and /sys).
void cgroup_set_root_for_tests(const char *root);

} // namespace spillway
