// stats_summary.cpp — see stats_summary.h.
#include "stats_summary.h"

#include "cli.h"
#include "json.h"
#include "stats_format.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <tuple>
#include <cstdio>

namespace spillway::cli {

StatsSummary summarize_stats(const std::vector<std::string> &lines) {
    StatsSummary s;
    for (const std::string &line : lines) {
        std::optional<Json> parsed = parse_object(line);
        if (!parsed) {
            s.unreadable++;
            continue;
        }
        const Json &v = *parsed;
        s.processes++;
        uint64_t regions_here = 0;
        ProcessLine pl;
        pl.pid = count(v, stats_key::pid);
        pl.rank = text(member(v, stats_key::rank));
        pl.local_rank = text(member(v, stats_key::local_rank));
        pl.cmd = text(member(v, stats_key::cmd));
        for (int b = 0; b < 3; b++) {
            if (const Json *r = member(v, stats_key::regions)) regions_here += count(*r, StatsSummary::kBackings[b]);
            const char *name = StatsSummary::kBackings[b];
            if (const Json *r = member(v, stats_key::regions)) s.regions[b] += count(*r, name);
            if (const Json *r = member(v, stats_key::bytes)) s.bytes[b] += count(*r, name);
            if (const Json *r = member(v, stats_key::peak_bytes)) s.peak[b] = std::max(s.peak[b], count(*r, name));
            if (const Json *r = member(v, stats_key::bytes)) pl.bytes[b] = count(*r, name);
            if (const Json *r = member(v, stats_key::peak_bytes)) pl.peak[b] = count(*r, name);
        }
        if (const Json *f = member(v, stats_key::fallbacks); f && f->is_object())
            for (const auto &[reason, value] : f->items())
                if (uint64_t n = value.is_number_unsigned() ? value.get<uint64_t>() : 0) {
                    s.fallbacks[reason] += n;
                    pl.fallbacks += n;
                }
        if (const Json *t = member(v, stats_key::tiering); t && t->is_object()) {
            s.promotions += count(*t, stats_key::promotions);
            s.promoted_bytes += count(*t, stats_key::promoted_bytes);
            s.demotions += count(*t, stats_key::demotions);
            s.demoted_bytes += count(*t, stats_key::demoted_bytes);
            s.failed_promotions += count(*t, stats_key::failed_promotions);
            s.failed_demotions += count(*t, stats_key::failed_demotions);
        }
        if (const Json *w = member(v, stats_key::writeback); w && w->is_object()) {
            s.writeback_passes += count(*w, stats_key::passes);
            s.written_back_bytes += count(*w, stats_key::written_back_bytes);
            s.unmapped_bytes += count(*w, stats_key::unmapped_bytes);
            s.writeback_ms += count(*w, stats_key::pass_ms);
            s.zeroed_bytes += count(*w, stats_key::zeroed_bytes);
        }
        s.routing += regions_here > 0;
        pl.regions = regions_here;
        s.per_process.push_back(pl);
    }
    // By RANK as a number, then LOCAL_RANK alone, then neither (each then by pid).
    auto rank_key = [](const ProcessLine &p) {
        int kind = !p.rank.empty() ? 0 : !p.local_rank.empty() ? 1 : 2;
        const std::string &r = kind == 0 ? p.rank : p.local_rank;
        char *end = nullptr;
        long n = kind == 2 ? 0 : strtol(r.c_str(), &end, 10);
        if (kind != 2 && (r.empty() || *end)) n = LONG_MAX; // not a number: after the numbered ones
        return std::make_tuple(kind, n, p.pid);
    };
    std::stable_sort(s.per_process.begin(), s.per_process.end(),
                     [&](const ProcessLine &a, const ProcessLine &b) { return rank_key(a) < rank_key(b); });
    return s;
}

std::vector<std::string> render_summary(const StatsSummary &s, const std::string &where) {
    std::vector<std::string> out;
    if (s.processes == 0) {
        out.push_back("spillway: no stats were written (a process killed by a signal, ending in _exit, "
                      "or statically linked never reports); nothing to summarise");
        return out;
    }
    std::string head = "spillway: " + std::to_string(s.processes) + " process" + (s.processes == 1 ? "" : "es") +
                       " reported, " + std::to_string(s.routing) + " placed large regions";
    if (s.processes > 1) head += " (peak: the most one process held at once)";
    out.push_back(head + "; " + where);
    for (int b = 0; b < 3; b++) {
        char line[200];
        snprintf(line, sizeof line, "spillway:   %-6s %6llu region%s %10s  peak %s", StatsSummary::kBackings[b],
                 (unsigned long long)s.regions[b], s.regions[b] == 1 ? " " : "s",
                 human_size(s.bytes[b]).c_str(), human_size(s.peak[b]).c_str());
        out.push_back(line);
    }
    std::string fb = "spillway:   fallbacks: ";
    if (s.fallbacks.empty()) {
        fb += "none";
    } else {
        bool first = true;
        for (const auto &[reason, n] : s.fallbacks) {
            fb += (first ? "" : ", ") + reason + " " + std::to_string(n);
            first = false;
        }
        fb += " (see the shim's warnings above for why)";
    }
    out.push_back(fb);
    auto plural = [](uint64_t n, const char *word, const char *suffix = "s") {
        return std::to_string(n) + " " + word + (n == 1 ? "" : suffix);
    };
    if (s.promotions || s.demotions || s.failed_promotions || s.failed_demotions) {
        std::string line = "spillway:   tiering: " + plural(s.promotions, "promotion") + " to memory (" +
                           human_size(s.promoted_bytes) + "), " + plural(s.demotions, "demotion") + " to disk (" +
                           human_size(s.demoted_bytes) + "), in place; the log at info level says why";
        if (s.failed_promotions || s.failed_demotions)
            line += "; failed: " + plural(s.failed_promotions, "promotion") + ", " +
                    plural(s.failed_demotions, "demotion") + " (see the shim's warnings above for why)";
        out.push_back(line);
    }
    if (s.writeback_passes)
        out.push_back("spillway:   writeback: " + plural(s.writeback_passes, "pass", "es") +
                      " wrote back " + human_size(s.written_back_bytes) + " of dirty spill pages, unmapping " +
                      human_size(s.unmapped_bytes) + " first, in " + std::to_string(s.writeback_ms) + " ms" +
                      (s.zeroed_bytes ? "; " + human_size(s.zeroed_bytes) + " of zeros left unwritten" : ""));
    if (s.processes > 1) {
        out.push_back("spillway:   by process (bytes placed, peak held at once):");
        size_t shown = std::min(s.per_process.size(), kMaxProcessLines);
        for (size_t i = 0; i < shown; i++) {
            const ProcessLine &p = s.per_process[i];
            std::string who = "pid " + std::to_string(p.pid);
            if (!p.rank.empty()) who = "rank " + p.rank + (p.local_rank.empty() ? "" : " (local " + p.local_rank + ")") + " " + who;
            else if (!p.local_rank.empty()) who = "local rank " + p.local_rank + " " + who;
            std::string line = "spillway:     " + who + ": " + std::to_string(p.regions) + " region" + (p.regions == 1 ? "" : "s");
            for (int b = 0; b < 3; b++)
                if (p.bytes[b] || p.peak[b])
                    line += std::string(", ") + StatsSummary::kBackings[b] + " " + human_size(p.bytes[b]) + " peak " +
                            human_size(p.peak[b]);
            if (p.fallbacks) line += ", " + std::to_string(p.fallbacks) + " fallback" + (p.fallbacks == 1 ? "" : "s");
            // The program's name without its directory, so the arguments that tell ranks apart fit.
            std::string cmd = p.cmd;
            size_t space = cmd.find(' '), slash = cmd.rfind('/', space);
            if (slash != std::string::npos) cmd = cmd.substr(slash + 1);
            if (cmd.size() > 60) cmd = cmd.substr(0, 57) + "...";
            if (!cmd.empty()) line += "  [" + cmd + "]";
            out.push_back(line);
        }
        if (s.per_process.size() > shown)
            out.push_back("spillway:     ... and " + std::to_string(s.per_process.size() - shown) + " more process(es)");
    }
    if (s.unreadable)
        out.push_back("spillway:   " + std::to_string(s.unreadable) + " stats line(s) could not be read (a process killed while writing its line; the figures above leave it out)");
    return out;
}

} // namespace spillway::cli
