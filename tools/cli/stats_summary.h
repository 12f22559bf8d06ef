// stats_summary.h — the few lines `spillway run` prints at the end, from
// the shim's per-process stats lines.
//
// Invariant: counts are sums over processes (the total), and each process
// also has its own line, named by its rank when it had RANK/LOCAL_RANK; a peak is the largest one
// process reached (peaks of different processes need not coincide in time,
// so their sum would overstate). Lines that do not parse are counted and
// mentioned, never silently dropped.
#pragma once

#include "stats_format.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spillway::cli {

// One process's line (shown when more than one process reported).
struct ProcessLine {
    uint64_t pid = 0;
    std::string rank, local_rank; // "" when not set in that process's environment
    std::string cmd;
    uint64_t regions = 0;
    uint64_t bytes[3] = {}, peak[3] = {};
    uint64_t fallbacks = 0;
};

struct StatsSummary {
    static constexpr auto &kBackings = stats_key::kBackings; // disk, memory, anon
    int processes = 0;
    int routing = 0; // processes that placed at least one large region
    int unreadable = 0;
    uint64_t regions[3] = {};
    uint64_t bytes[3] = {};
    uint64_t peak[3] = {}; // largest per-process peak
    std::map<std::string, uint64_t> fallbacks; // reason -> count, only non-zero
    std::vector<ProcessLine> per_process;      // by rank (numeric), then pid
    // Tiering: regions moved in place (summed over processes).
    uint64_t promotions = 0, promoted_bytes = 0, demotions = 0, demoted_bytes = 0;
    uint64_t failed_promotions = 0, failed_demotions = 0; // the shim warned why
    // The writeback pacer (summed): passes, the dirty bytes they asked the
    // kernel to write, the mappings they unmapped first, their time.
    uint64_t writeback_passes = 0, written_back_bytes = 0, unmapped_bytes = 0, writeback_ms = 0, zeroed_bytes = 0;
};

StatsSummary summarize_stats(const std::vector<std::string> &lines);

// Lines without a trailing newline, each starting with "spillway: ". With
// more than one process, the totals are followed by one line per process
// (at most kMaxProcessLines, then a count of the rest).
constexpr size_t kMaxProcessLines = 64;
std::vector<std::string> render_summary(const StatsSummary &s, const std::string &where);

} // namespace spillway::cli
