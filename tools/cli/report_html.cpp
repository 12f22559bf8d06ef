// report_html.cpp — see report_html.h.
#include "report_html.h"

#include "cli.h"
#include "json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace spillway::cli {

namespace {

// ---- The recording as time series -------------------------------------

struct Point {
    double t, v;
};

struct Series {
    std::string label;
    std::vector<Point> points;
};

struct CgroupTimeline {
    int version = 0;
    uint64_t limit = 0; // the last known, 0 = none
    std::map<std::string, Series> kinds;
};

struct RegionTimeline {
    uint64_t start = 0, len = 0;
    std::string backing; // the last seen
    Series resident, fault_rate;
    uint64_t peak_resident = 0;
    int estimated_samples = 0; // samples whose resident was "estimated" (shared out by size)
};

struct ProcessTimeline {
    std::string comm, rank;
    Series majflt_rate;
    std::map<uint64_t, RegionTimeline> regions; // by start
    uint64_t fallbacks = 0;
    bool seen = false;
};

struct Marker {
    double t;
    std::string kind; // "fallback" or "move"
    std::string text;
};

struct Timeline {
    std::string command, started;
    double interval_s = 0, last_t = 0;
    int samples = 0, unreadable = 0;
    bool has_exit = false;
    double exit_t = 0;
    int exit_status = 0, exit_signal = 0;
    std::map<std::string, CgroupTimeline> cgroups;
    std::map<long, ProcessTimeline> processes;
    std::vector<Marker> markers;
};

const char *const kMemoryKinds[] = {"usage", "anon", "file", "shmem", "dirty", "writeback"};

bool known_number(const Json *v) { return v && v->is_number() && v->get<double>() >= 0; }

std::string hex(uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    return buf;
}

void add_sample(Timeline &tl, const Json &v) {
    double t = number(member(v, "t"));
    tl.samples++;
    tl.last_t = std::max(tl.last_t, t);
    if (const Json *cgs = member(v, "cgroups"))
        for (const Json &c : items(cgs)) {
            if (member(c, "known") && !boolean(member(c, "known"))) continue;
            CgroupTimeline &cg = tl.cgroups[text(member(c, "name"))];
            cg.version = (int)count(c, "version");
            if (count(c, "limit")) cg.limit = count(c, "limit");
            for (const char *kind : kMemoryKinds)
                if (member(c, kind)) cg.kinds[kind].points.push_back({t, (double)count(c, kind)});
        }
    const Json *procs = member(v, "processes");
    if (!procs) return;
    for (const Json &p : items(procs)) {
        long pid = (long)count(p, "pid");
        ProcessTimeline &pt = tl.processes[pid];
        pt.comm = text(member(p, "comm"));
        pt.rank = text(member(p, "rank"));
        if (known_number(member(p, "majflt_s"))) pt.majflt_rate.points.push_back({t, number(member(p, "majflt_s"))});
        uint64_t fallbacks = count(p, "fallbacks");
        if (pt.seen && fallbacks > pt.fallbacks)
            tl.markers.push_back({t, "fallback", "pid " + std::to_string(pid) + ": " +
                                                      std::to_string(fallbacks - pt.fallbacks) + " fallback(s)"});
        pt.fallbacks = fallbacks;
        pt.seen = true;
        if (const Json *regions = member(p, "regions"))
            for (const Json &r : items(regions)) {
                uint64_t start = count(r, "start");
                RegionTimeline &rt = pt.regions[start];
                std::string backing = text(member(r, "backing"));
                if (member(r, "private") && boolean(member(r, "private"))) backing += "+cow"; // a fork child's copy
                if (!rt.backing.empty() && backing != rt.backing)
                    tl.markers.push_back({t, "move", "pid " + std::to_string(pid) + " region " + hex(start) + ": " +
                                                         rt.backing + " to " + backing});
                rt.start = start;
                rt.len = count(r, "len");
                rt.backing = backing;
                rt.resident.points.push_back({t, (double)count(r, "resident")});
                rt.fault_rate.points.push_back({t, (double)count(r, "fault_pages_s")});
                rt.peak_resident = std::max(rt.peak_resident, count(r, "resident"));
                if (boolean(member(r, "estimated"))) rt.estimated_samples++;
            }
    }
}

Timeline read_timeline(const std::vector<std::string> &lines) {
    Timeline tl;
    for (const std::string &line : lines) {
        if (line.empty()) continue;
        std::optional<Json> parsed = parse_object(line);
        if (!parsed) {
            tl.unreadable++;
            continue;
        }
        const Json &v = *parsed;
        if (member(v, "spillway_record")) {
            tl.interval_s = number(member(v, "interval_s"));
            tl.started = text(member(v, "started"));
            if (const Json *c = member(v, "command"))
                for (const Json &a : items(c)) tl.command += (tl.command.empty() ? "" : " ") + text(&a);
        } else if (const Json *e = member(v, "exit")) {
            tl.has_exit = true;
            tl.exit_t = number(member(*e, "t"));
            tl.exit_status = (int)count(*e, "status");
            tl.exit_signal = (int)count(*e, "signal");
        } else if (member(v, "stats")) {
        } else if (member(v, "t")) {
            add_sample(tl, v);
        } else {
            tl.unreadable++;
        }
    }
    return tl;
}

// ---- Drawing -----------------------------------------------------------

std::string escape(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string fmt(const char *format, double v) {
    char buf[128];
    snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string tick_label(double v, double step) { return fmt(step < 1 ? (step < 0.1 ? "%.2f" : "%.1f") : "%.0f", v); }

const char *const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Line {
    Series series;
    bool dashed = false;
    std::string color;
};

struct Chart {
    std::string title, y_label;
    double scale = 1; // values are divided by it (bytes to MiB, ...)
    std::vector<Line> lines;
    std::vector<std::pair<std::string, double>> horizontals; // label, value (already scaled below)
};

// Bytes are drawn in MiB, or in GiB from 2 GiB up.
void pick_byte_unit(double peak, Chart &c, const std::string &what) {
    bool gib = peak >= 2.0 * (1ull << 30);
    c.scale = gib ? (double)(1ull << 30) : (double)(1ull << 20);
    c.y_label = what + (gib ? " (GiB)" : " (MiB)");
}

std::string draw_chart(const Chart &c, const Timeline &tl, double t_max, double t_step) {
    const double L = ChartFrame::left, T = ChartFrame::top, W = ChartFrame::width, H = ChartFrame::height;
    double peak = 0;
    for (const Line &l : c.lines)
        for (const Point &p : l.series.points) peak = std::max(peak, p.v / c.scale);
    for (const auto &h : c.horizontals) peak = std::max(peak, h.second / c.scale);
    double y_step = 1;
    double y_max = nice_axis_max(peak, y_step);
    std::string out = "<title>" + escape(c.title) + "</title>\n";
    out += "<text x=\"410\" y=\"18\" text-anchor=\"middle\" class=\"title\">" + escape(c.title) + "</text>\n";
    // Grid and axes.
    for (int i = 0; i * y_step <= y_max + y_step / 2; i++) { // counted, so 0.2 steps do not drift
        double y = i * y_step;
        double py = chart_y(y, y_max);
        out += "<line x1=\"" + fmt("%.1f", L) + "\" y1=\"" + fmt("%.1f", py) + "\" x2=\"" + fmt("%.1f", L + W) +
               "\" y2=\"" + fmt("%.1f", py) + "\" class=\"grid\"/>\n";
        out += "<text x=\"" + fmt("%.1f", L - 6) + "\" y=\"" + fmt("%.1f", py + 4) + "\" text-anchor=\"end\">" +
               tick_label(y, y_step) + "</text>\n";
    }
    for (int i = 0; i * t_step <= t_max + t_step / 2; i++) {
        double t = i * t_step;
        double px = chart_x(t, t_max);
        out += "<line x1=\"" + fmt("%.1f", px) + "\" y1=\"" + fmt("%.1f", T + H) + "\" x2=\"" + fmt("%.1f", px) +
               "\" y2=\"" + fmt("%.1f", T + H + 4) + "\" class=\"axis\"/>\n";
        out += "<text x=\"" + fmt("%.1f", px) + "\" y=\"" + fmt("%.1f", T + H + 16) + "\" text-anchor=\"middle\">" +
               tick_label(t, t_step) + "</text>\n";
    }
    out += "<rect x=\"" + fmt("%.1f", L) + "\" y=\"" + fmt("%.1f", T) + "\" width=\"" + fmt("%.1f", W) +
           "\" height=\"" + fmt("%.1f", H) + "\" class=\"frame\"/>\n";
    out += "<text x=\"" + fmt("%.1f", L + W / 2) + "\" y=\"" + fmt("%.1f", T + H + 32) +
           "\" text-anchor=\"middle\">time since start (s)</text>\n";
    out += "<text transform=\"translate(16," + fmt("%.1f", T + H / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
           escape(c.y_label) + "</text>\n";
    // Limit and other horizontal lines.
    std::vector<std::pair<std::string, std::string>> legend; // label, style snippet
    for (const auto &[label, value] : c.horizontals) {
        double py = chart_y(value / c.scale, y_max);
        out += "<line x1=\"" + fmt("%.1f", L) + "\" y1=\"" + fmt("%.1f", py) + "\" x2=\"" + fmt("%.1f", L + W) +
               "\" y2=\"" + fmt("%.1f", py) + "\" class=\"limit\" data-value=\"" + fmt("%.0f", value) + "\"><title>" +
               escape(label) + "</title></line>\n";
        legend.push_back({label, "class=\"limit\""});
    }
    // Series.
    for (const Line &l : c.lines) {
        std::string points;
        for (const Point &p : l.series.points) {
            if (!points.empty()) points += ' ';
            points += fmt("%.1f", chart_x(p.t, t_max));
            points += ',';
            points += fmt("%.1f", chart_y(p.v / c.scale, y_max));
        }
        std::string style = "stroke=\"" + l.color + "\"" + (l.dashed ? " stroke-dasharray=\"6 4\"" : "");
        out += "<polyline class=\"series\" data-series=\"" + escape(l.series.label) + "\" " + style + " points=\"" +
               points + "\"><title>" + escape(l.series.label) + "</title></polyline>\n";
        legend.push_back({l.series.label, "class=\"series\" " + style});
    }
    // Markers: fallbacks and moves, then the exit.
    for (const Marker &m : tl.markers) {
        double px = chart_x(m.t, t_max);
        out += "<line x1=\"" + fmt("%.1f", px) + "\" y1=\"" + fmt("%.1f", T) + "\" x2=\"" + fmt("%.1f", px) +
               "\" y2=\"" + fmt("%.1f", T + H) + "\" class=\"" + m.kind + "\"><title>" + fmt("%.2f s: ", m.t) +
               escape(m.text) + "</title></line>\n";
    }
    double end_t = tl.has_exit ? tl.exit_t : tl.last_t;
    double px = chart_x(end_t, t_max);
    std::string end_text = tl.has_exit ? (tl.exit_signal ? "killed by signal " + std::to_string(tl.exit_signal)
                                                         : "exit status " + std::to_string(tl.exit_status))
                                       : std::string("recording cut short");
    out += "<line x1=\"" + fmt("%.1f", px) + "\" y1=\"" + fmt("%.1f", T) + "\" x2=\"" + fmt("%.1f", px) + "\" y2=\"" +
           fmt("%.1f", T + H) + "\" class=\"exit\"><title>" + fmt("%.2f s: ", end_t) + escape(end_text) +
           "</title></line>\n";
    out += "<text x=\"" + fmt("%.1f", px - 4) + "\" y=\"" + fmt("%.1f", T + 12) + "\" text-anchor=\"end\" class=\"exit-label\">" +
           escape(end_text) + fmt(" at %.1f s", end_t) + "</text>\n";
    bool any_fallback = false, any_move = false;
    for (const Marker &m : tl.markers) (m.kind == "fallback" ? any_fallback : any_move) = true;
    if (any_fallback) legend.push_back({"fallback", "class=\"fallback\""});
    if (any_move) legend.push_back({"move (backing changed)", "class=\"move\""});
    legend.push_back({"exit", "class=\"exit\""});
    // Legend: as many columns (up to 3) as its longest label lets fit (about 7 px a character).
    size_t longest = 0;
    for (const auto &entry : legend) longest = std::max(longest, entry.first.size());
    size_t columns = std::clamp<size_t>((size_t)(W / (7.0 * (double)longest + 40)), 1, 3);
    double column_w = W / (double)columns;
    for (size_t i = 0; i < legend.size(); i++) {
        double lx = L + (double)(i % columns) * column_w, ly = T + H + 50 + 18 * (double)(i / columns);
        out += "<line x1=\"" + fmt("%.1f", lx) + "\" y1=\"" + fmt("%.1f", ly - 4) + "\" x2=\"" + fmt("%.1f", lx + 24) +
               "\" y2=\"" + fmt("%.1f", ly - 4) + "\" " + legend[i].second + "/>\n";
        out += "<text x=\"" + fmt("%.1f", lx + 30) + "\" y=\"" + fmt("%.1f", ly) + "\">" + escape(legend[i].first) +
               "</text>\n";
    }
    double rows = (double)((legend.size() + columns - 1) / columns);
    std::string svg_h = fmt("%.0f", T + H + 40 + 18 * (rows + 1));
    return "<figure>\n<svg width=\"820\" height=\"" + svg_h + "\" viewBox=\"0 0 820 " + svg_h + "\" role=\"img\">\n" +
           out + "</svg>\n</figure>\n";
}

const size_t kMaxRegionsPerProcess = 8;

const char kStyle[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222}"
    "h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}"
    "svg text{font-size:12px;font-family:sans-serif}svg text.title{font-size:14px;font-weight:bold}"
    ".grid{stroke:#ddd;stroke-width:1}.axis{stroke:#444}.frame{fill:none;stroke:#444}"
    ".series{fill:none;stroke-width:1.8}.limit{stroke:#d00;stroke-width:1.5;stroke-dasharray:8 4}"
    ".fallback{stroke:#f90;stroke-width:1.5}.move{stroke:#90c;stroke-width:1.5;stroke-dasharray:3 3}"
    ".exit{stroke:#000;stroke-width:1.5;stroke-dasharray:2 2}.exit-label{font-weight:bold}"
    "figure{margin:0 0 1em 0}p.note{color:#555}";

} // namespace

double chart_x(double t, double t_max) {
    return ChartFrame::left + (t_max > 0 ? t / t_max : 0) * ChartFrame::width;
}

double chart_y(double v, double v_max) {
    return ChartFrame::top + ChartFrame::height - (v_max > 0 ? v / v_max : 0) * ChartFrame::height;
}

double nice_axis_max(double peak, double &step) {
    if (!(peak > 0)) {
        step = 0.2;
        return 1;
    }
    double raw = peak / 5;
    double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * power >= raw) {
            step = m * power;
            break;
        }
    return std::ceil(peak / step - 1e-9) * step;
}

bool render_report_html(const std::vector<std::string> &lines, std::string &html, std::string &error) {
    Timeline tl = read_timeline(lines);
    if (tl.samples == 0) {
        error = "the recording holds no sample (record a job that runs at least one --record-interval)";
        return false;
    }
    double end_t = std::max(tl.last_t, tl.has_exit ? tl.exit_t : 0);
    double t_step = 1;
    double t_max = nice_axis_max(end_t, t_step);

    std::string title = "spillway report: " + (tl.command.empty() ? std::string("(no head line)") : tl.command);
    html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" + escape(title) +
           "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + escape(title) + "</h1>\n<p>";
    html += std::to_string(tl.samples) + " sample" + (tl.samples == 1 ? "" : "s");
    if (tl.interval_s > 0) html += fmt(" every %.2f s", tl.interval_s);
    if (!tl.started.empty()) html += " from " + escape(tl.started);
    if (tl.has_exit)
        html += fmt("; the job ended after %.1f s ", tl.exit_t) +
                (tl.exit_signal ? "killed by signal " + std::to_string(tl.exit_signal)
                                : "with status " + std::to_string(tl.exit_status));
    else
        html += fmt("; no end line: the recording was cut short after %.1f s", tl.last_t);
    html += ".";
    if (tl.unreadable) html += " " + std::to_string(tl.unreadable) + " line(s) could not be read.";
    size_t fallbacks = 0, moves = 0;
    for (const Marker &m : tl.markers) (m.kind == "fallback" ? fallbacks : moves)++;
    html += " Markers: " + std::to_string(fallbacks) + " fallback(s), " + std::to_string(moves) + " move(s).</p>\n";

    html += "<h2>Memory cgroups</h2>\n";
    if (tl.cgroups.empty()) html += "<p class=\"note\">No cgroup figures were recorded.</p>\n";
    for (const auto &[name, cg] : tl.cgroups) {
        Chart c;
        c.title = "cgroup " + name + " (v" + std::to_string(cg.version) + "): memory by kind";
        double peak = (double)cg.limit;
        size_t color = 0;
        for (const char *kind : kMemoryKinds) {
            auto it = cg.kinds.find(kind);
            if (it == cg.kinds.end()) continue;
            Line l{it->second, false, kPalette[color++ % 10]};
            l.series.label = kind;
            for (const Point &p : l.series.points) peak = std::max(peak, p.v);
            c.lines.push_back(l);
        }
        if (cg.limit) c.horizontals.push_back({"limit " + human_size(cg.limit), (double)cg.limit});
        pick_byte_unit(peak, c, "memory");
        html += draw_chart(c, tl, t_max, t_step);
        if (!cg.limit) html += "<p class=\"note\">This cgroup has no memory limit.</p>\n";
    }

    html += "<h2>Regions by process</h2>\n";
    if (tl.processes.empty()) html += "<p class=\"note\">No process under the shim was seen.</p>\n";
    for (const auto &[pid, pt] : tl.processes) {
        std::string who = "pid " + std::to_string(pid) + " " + pt.comm + (pt.rank.empty() ? "" : " rank " + pt.rank);
        std::vector<const RegionTimeline *> regions;
        for (const auto &[start, r] : pt.regions) regions.push_back(&r);
        std::stable_sort(regions.begin(), regions.end(),
                         [](const RegionTimeline *a, const RegionTimeline *b) { return a->peak_resident > b->peak_resident; });
        size_t omitted = regions.size() > kMaxRegionsPerProcess ? regions.size() - kMaxRegionsPerProcess : 0;
        regions.resize(regions.size() - omitted);
        Chart residency, faults;
        residency.title = who + ": resident bytes per region";
        faults.title = who + ": fault rate";
        faults.y_label = "pages per second";
        double peak = 0;
        size_t color = 0, estimated = 0;
        for (const RegionTimeline *r : regions) {
            std::string name = hex(r->start) + " " + r->backing + " " + human_size(r->len);
            const char *col = kPalette[color++ % 10];
            Line res{r->resident, false, col};
            // "~" as top marks it: some of this line's points are estimates.
            res.series.label = name + " resident" + (r->estimated_samples ? " ~" : "");
            estimated += r->estimated_samples ? 1 : 0;
            residency.lines.push_back(res);
            Series reserved{name + " reserved", {}};
            for (const Point &p : r->resident.points) reserved.points.push_back({p.t, (double)r->len});
            residency.lines.push_back({reserved, true, col});
            Line f{r->fault_rate, false, col};
            f.series.label = name + " pages faulted in/s";
            faults.lines.push_back(f);
            peak = std::max(peak, (double)r->len);
        }
        if (!pt.majflt_rate.points.empty()) {
            Line m{pt.majflt_rate, true, "#000"};
            m.series.label = "process major faults/s";
            faults.lines.push_back(m);
        }
        html += "<h3>" + escape(who) + "</h3>\n";
        if (regions.empty()) {
            html += "<p class=\"note\">No region of this process was listed (no live snapshot, or no allocation "
                    "above the threshold).</p>\n";
        } else {
            pick_byte_unit(peak, residency, "bytes");
            html += draw_chart(residency, tl, t_max, t_step);
            if (estimated)
                html += "<p class=\"note\">~ estimated: " + std::to_string(estimated) +
                        " region(s) marked ~ shared a mapping with their neighbours and their pages were not counted "
                        "in /proc/PID/pagemap in some samples, so those points are the mapping's resident bytes shared "
                        "out by size; record as the job's user on Linux 6.7+ to count them exactly.</p>\n";
        }
        if (!faults.lines.empty()) html += draw_chart(faults, tl, t_max, t_step);
        if (omitted)
            html += "<p class=\"note\">" + std::to_string(omitted) + " smaller region(s) of this process are not drawn (the " +
                    std::to_string(kMaxRegionsPerProcess) + " with the highest peak residency are).</p>\n";
    }
    html += "<p class=\"note\">Not in the recording, so not drawn: the bytes each region read from disk (only the "
            "process's total), promotions and demotions the shim made inside a region, and the times of fallbacks "
            "between two samples (a marker sits at the sample that first shows them).</p>\n";
    html += "</body>\n</html>\n";
    return true;
}

} // namespace spillway::cli
