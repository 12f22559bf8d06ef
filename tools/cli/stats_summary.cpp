// stats_summary.cpp — see stats_summary.h.
#include "stats_summary.h"

#include "cli.h"
#include "json.h"

#include <algorithm>
#include <cstdio>

namespace spillway::cli {

StatsSummary summarize_stats(const std::vector<std::string> &lines) {
    StatsSummary s;
    for (const std::string &line : lines) {
        JsonValue v;
        std::string error;
        if (!parse_json(line, v, error) || v.kind != JsonValue::Kind::object) {
            s.unreadable++;
            continue;
        }
        s.processes++;
        uint64_t regions_here = 0;
        for (int b = 0; b < 3; b++) {
            if (const JsonValue *r = v.get("regions")) regions_here += r->count(StatsSummary::kBackings[b]);
            const char *name = StatsSummary::kBackings[b];
            if (const JsonValue *r = v.get("regions")) s.regions[b] += r->count(name);
            if (const JsonValue *r = v.get("bytes")) s.bytes[b] += r->count(name);
            if (const JsonValue *r = v.get("peak_bytes")) s.peak[b] = std::max(s.peak[b], r->count(name));
        }
        if (const JsonValue *f = v.get("fallbacks"); f && f->kind == JsonValue::Kind::object)
            for (const auto &[reason, n] : f->members)
                if (n.is_integer && n.integer) s.fallbacks[reason] += n.integer;
        if (const JsonValue *t = v.get("tiering"); t && t->kind == JsonValue::Kind::object) {
            s.promotions += t->count("promotions");
            s.promoted_bytes += t->count("promoted_bytes");
            s.demotions += t->count("demotions");
            s.demoted_bytes += t->count("demoted_bytes");
        }
        s.routing += regions_here > 0;
    }
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
    if (s.promotions || s.demotions)
        out.push_back("spillway:   tiering: " + std::to_string(s.promotions) + " promotion" +
                      (s.promotions == 1 ? "" : "s") + " to memory (" + human_size(s.promoted_bytes) + "), " +
                      std::to_string(s.demotions) + " demotion" + (s.demotions == 1 ? "" : "s") + " to disk (" +
                      human_size(s.demoted_bytes) + "), in place; the log at info level says why");
    if (s.unreadable)
        out.push_back("spillway:   " + std::to_string(s.unreadable) + " stats line(s) could not be read");
    return out;
}

} // namespace spillway::cli
