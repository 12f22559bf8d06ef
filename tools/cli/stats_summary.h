// stats_summary.h — the few lines `spillway run` prints at the end, from
// the shim's per-process stats lines.
//
// Invariant: counts are sums over processes; a peak is the largest one
// process reached (peaks of different processes need not coincide in time,
// so their sum would overstate). Lines that do not parse are counted and
// mentioned, never silently dropped.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spillway::cli {

struct StatsSummary {
    static constexpr const char *kBackings[3] = {"disk", "memory", "anon"};
    int processes = 0;
    int routing = 0; // processes that placed at least one large region
    int unreadable = 0;
    uint64_t regions[3] = {};
    uint64_t bytes[3] = {};
    uint64_t peak[3] = {}; // largest per-process peak
    std::map<std::string, uint64_t> fallbacks; // reason -> count, only non-zero
    // Tiering: regions moved in place (summed over processes).
    uint64_t promotions = 0, promoted_bytes = 0, demotions = 0, demoted_bytes = 0;
};

StatsSummary summarize_stats(const std::vector<std::string> &lines);

// Lines without a trailing newline, each starting with "spillway: ".
std::vector<std::string> render_summary(const StatsSummary &s, const std::string &where);

} // namespace spillway::cli
