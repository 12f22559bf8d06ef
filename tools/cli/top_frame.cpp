// top_frame.cpp — see top_frame.h.
#include "top_frame.h"

#include "cli.h"

#include <algorithm>
#include <cstdio>

namespace spillway::cli {

namespace {

const char *kBold = "\033[1m", *kRed = "\033[31m", *kYellow = "\033[33m", *kGreen = "\033[32m",
           *kReset = "\033[0m";

std::string paint(const FrameStyle &st, const char *code, const std::string &text) {
    return st.color ? code + text + kReset : text;
}

std::string rate_text(double v) {
    if (v < 0) return "-";
    char buf[32];
    snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
    return buf;
}

// "~" before the resident figure when it is an estimate (region_pages.h),
// on a region's line and on a total that holds such a region alike.
std::string pair_text(uint64_t resident, uint64_t reserved, bool estimated = false) {
    std::string text = estimated ? "~" : ""; // appended to, not prefixed: GCC 12's -Wrestrict misfires on the latter
    text += human_size(resident);
    text += "/";
    text += human_size(reserved);
    return text;
}

void cgroup_lines(const CgroupSample &cs, const FrameStyle &st, std::vector<std::string> &out) {
    const CgroupFigures &c = cs.figures;
    std::string head = "cgroup " + c.name + " (v" + std::to_string(c.version) + "): ";
    if (!c.unlocated.empty()) { // never another group's figures in its place
        out.push_back(head + "? (" + c.unlocated + ")");
        return;
    }
    if (!c.known) {
        out.push_back(head + "usage unreadable (" + c.dir + "): run as root, or check the job still runs");
        return;
    }
    std::string usage = human_size(c.usage) + " used";
    if (c.limit) {
        double pct = 100.0 * (double)c.usage / (double)c.limit;
        char buf[32];
        snprintf(buf, sizeof buf, " (%.0f%%)", pct);
        usage = human_size(c.usage) + " of " + human_size(c.limit) + buf;
        usage = pct >= 90 ? paint(st, kRed, usage) : pct >= 75 ? paint(st, kYellow, usage) : usage;
    } else {
        usage += ", no limit";
    }
    out.push_back(head + usage + "  anon " + human_size(c.anon) + "  file " + human_size(c.file) + "  shmem " +
                  human_size(c.shmem) + "  dirty " + human_size(c.dirty) + "  writeback " + human_size(c.writeback));
    std::string second = "  major faults/s " + rate_text(cs.majfault_per_s) + "  file refaults/s " +
                         rate_text(cs.refault_per_s) + "  PSI ";
    if (c.psi_scope.empty()) {
        second += "unavailable";
    } else {
        char buf[96];
        snprintf(buf, sizeof buf, "(%s) some %.2f%% full %.2f%% (avg10)", c.psi_scope.c_str(), c.psi_some10,
                 c.psi_full10);
        second += buf;
    }
    out.push_back(second);
}

} // namespace

std::vector<std::string> render_frame(const JobSample &s, const FrameStyle &st) {
    std::vector<std::string> out;
    size_t n = s.processes.size();
    std::string head = "spillway top: " + std::to_string(n) + " process" + (n == 1 ? "" : "es") + " under the shim";
    if (!st.clock.empty()) head += "  " + st.clock;
    out.push_back(paint(st, kBold, head));
    for (const CgroupSample &c : s.cgroups) cgroup_lines(c, st, out);
    if (n == 0) {
        out.push_back("no process maps libspillway.so (start one with: spillway run -- COMMAND)");
        return out;
    }
    char line[512];
    // 20 wide: "~16.0MiB/64.0MiB (1)", an estimated total, keeps its column.
    snprintf(line, sizeof line, "%-8s %-6s %-15s %9s %11s  %-20s %-20s %-20s", "PID", "RANK", "COMMAND",
             "MAJFLT/S", "READ/FAULT", "DISK res/reserved", "MEMORY res/resv", "ANON res/resv");
    out.push_back(paint(st, kBold, line));
    for (const ProcessSample &p : s.processes) {
        std::string rank = p.rank.empty() ? (p.local_rank.empty() ? "-" : "l" + p.local_rank) : p.rank;
        std::string per_fault = p.bytes_per_fault < 0 ? "-" : human_size((unsigned long long)p.bytes_per_fault);
        std::string by[3];
        for (int b = 0; b < 3; b++)
            by[b] = p.has_snapshot ? pair_text(p.resident[b], p.reserved[b], p.estimated[b]) + " (" +
                                         std::to_string(p.count[b]) + ")"
                                   : "?";
        snprintf(line, sizeof line, "%-8d %-6s %-15.15s %9s %11s  %-20s %-20s %-20s", (int)p.pid, rank.c_str(),
                 p.comm.c_str(), rate_text(p.majflt_per_s).c_str(), per_fault.c_str(), by[0].c_str(), by[1].c_str(),
                 by[2].c_str());
        out.push_back(line);
        if (!p.has_snapshot) {
            out.push_back("    no live snapshot: none before its first disk region (and none from a shim older than top)");
            continue;
        }
        std::vector<const RegionSample *> regions;
        for (const RegionSample &r : p.regions) regions.push_back(&r);
        std::stable_sort(regions.begin(), regions.end(),
                         [](const RegionSample *a, const RegionSample *b) { return a->live.len > b->live.len; });
        size_t shown = std::min(regions.size(), st.regions_per_process);
        for (size_t i = 0; i < shown; i++) {
            const RegionSample &r = *regions[i];
            std::string phase = r.live.phase;
            if (r.live.phase != "undecided") {
                char held[32];
                snprintf(held, sizeof held, " %.1fs", r.live.phase_ms / 1000.0);
                phase += held;
            }
            phase = r.live.phase == "random" ? paint(st, kYellow, phase)
                    : r.live.phase == "sequential" ? paint(st, kGreen, phase) : phase;
            // A region being moved lives in two homes until the move ends: both are named.
            // A fork child's private copy: "+cow", its resident the pages it copied.
            std::string backing = r.live.backing + (r.live.moving_to.empty() ? "" : ">" + r.live.moving_to) +
                                  (r.live.is_private ? "+cow" : "");
            // "~": an estimate (region_pages.h), the note below says why.
            std::string res = pair_text(r.resident, r.live.len, r.estimated);
            snprintf(line, sizeof line, "    region %#14llx %-6s res/reserved %-19s", (unsigned long long)r.live.start,
                     backing.c_str(), res.c_str());
            // A disk region's page cache: how much of it is not written back yet.
            std::string dirty = r.cache_counted ? " dirty " + human_size(r.live.dirty) + " " : "";
            out.push_back(std::string(line) + dirty + " phase " + phase + "  advice " + r.live.advice + "  faulted " +
                          std::to_string(r.live.fault_pages_s) + " pages/s");
        }
        bool mapped_only = std::any_of(p.regions.begin(), p.regions.end(), [](const RegionSample &r) {
            return r.live.backing == "disk" && !r.live.is_private && !r.cache_counted;
        });
        if (mapped_only)
            out.push_back("    disk resident counts mapped pages only, less than the page cache they hold: no cache "
                          "figure in the snapshot (Linux before 6.5, or a shim older than top)");
        if (std::any_of(p.regions.begin(), p.regions.end(),
                        [](const RegionSample &r) { return r.estimated && !r.over_budget; }))
            out.push_back("    ~ estimated: the region shares a mapping with its neighbours and /proc/PID/pagemap "
                          "is not readable here, so the mapping's Rss is shared out by size (run top as the job's "
                          "user or root to count it)");
        if (std::any_of(p.regions.begin(), p.regions.end(), [](const RegionSample &r) { return r.over_budget; }))
            out.push_back("    ~ estimated: the region shares a mapping with its neighbours and counting its pages "
                          "without PAGEMAP_SCAN would read more than " + human_size(s.pagemap_read_budget) +
                          " of /proc/PID/pagemap this sample, so the mapping's Rss is shared out by size (Linux 6.7+ "
                          "counts it cheaply)");
        size_t more = regions.size() - shown + p.unlisted;
        if (more) out.push_back("    ... " + std::to_string(more) + " more region" + (more == 1 ? "" : "s"));
        if (p.fallbacks) out.push_back("    fallbacks so far: " + std::to_string(p.fallbacks));
    }
    return out;
}

} // namespace spillway::cli
