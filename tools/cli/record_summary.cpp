// record_summary.cpp — see record_summary.h.
#include "record_summary.h"

#include "cli.h"
#include "json.h"

#include <algorithm>
#include <cstdio>

namespace spillway::cli {

namespace {


struct LastSeen {
    double t = 0;
    uint64_t majflt = 0, read = 0;
    bool read_known = false;
};

void add_sample(RecordSummary &s, const Json &v, std::map<long, LastSeen> &last) {
    double t = number(member(v, "t"));
    s.samples++;
    s.last_t = std::max(s.last_t, t);
    if (const Json *cgs = member(v, "cgroups"))
        for (const Json &c : items(cgs)) {
            if (member(c, "known") && !boolean(member(c, "known"))) continue;
            CgroupPeaks &p = s.cgroups[text(member(c, "name"))];
            p.version = (int)count(c, "version");
            if (count(c, "usage") > p.peak_usage) {
                p.peak_usage = count(c, "usage");
                p.peak_at = t;
            }
            if (count(c, "limit")) p.limit = count(c, "limit");
            p.anon = std::max(p.anon, count(c, "anon"));
            p.file = std::max(p.file, count(c, "file"));
            p.shmem = std::max(p.shmem, count(c, "shmem"));
            p.dirty = std::max(p.dirty, count(c, "dirty"));
            p.writeback = std::max(p.writeback, count(c, "writeback"));
            p.majfault_s = std::max(p.majfault_s, number(member(c, "majfault_s")));
            p.refault_s = std::max(p.refault_s, number(member(c, "refault_s")));
            if (const Json *psi = member(c, "psi"); psi && psi->is_object()) {
                p.psi_scope = text(member(*psi, "scope"));
                p.psi_some = std::max(p.psi_some, number(member(*psi, "some10")));
                p.psi_full = std::max(p.psi_full, number(member(*psi, "full10")));
            }
        }
    const Json *procs = member(v, "processes");
    if (!procs) return;
    for (const Json &p : items(procs)) {
        long pid = (long)count(p, "pid");
        ProcessPeaks &pk = s.processes[pid];
        bool first = pk.comm.empty();
        pk.comm = text(member(p, "comm"));
        pk.rank = text(member(p, "rank"));
        pk.local_rank = text(member(p, "local_rank"));
        uint64_t majflt = count(p, "majflt");
        const Json *rb = member(p, "read_bytes");
        bool read_known = rb && rb->is_number_unsigned();
        uint64_t read = read_known ? rb->get<uint64_t>() : 0;
        if (first) {
            pk.first_t = t;
            pk.first_majflt = majflt;
            pk.first_read = read;
        }
        pk.read_known = pk.read_known && read_known;
        pk.last_t = t;
        pk.last_majflt = majflt;
        pk.last_read = read;
        pk.peak_majflt_s = std::max(pk.peak_majflt_s, number(member(p, "majflt_s")));
        uint64_t resident = 0, reserved = 0;
        bool estimated = false; // any region's resident shared out by size ("estimated":true)
        std::map<std::string, double> weight;
        double weight_sum = 0;
        const Json *regions = member(p, "regions");
        auto it = last.find(pid);
        double dt = it != last.end() && t > it->second.t ? t - it->second.t : 0;
        if (regions)
            for (const Json &r : items(regions)) {
                resident += count(r, "resident");
                reserved += count(r, "len");
                if (const Json *flag = member(r, "estimated"); flag && boolean(flag)) estimated = true;
                std::string phase = text(member(r, "phase"));
                double rate = (double)count(r, "fault_pages_s");
                weight[phase] += rate;
                weight_sum += rate;
                s.phases[phase].region_seconds += dt;
                s.phases[phase].pages_faulted += rate * dt;
            }
        if (resident > pk.peak_resident || first) {
            pk.peak_resident = resident;
            pk.peak_resident_estimated = estimated;
        } else if (resident == pk.peak_resident && !estimated) {
            pk.peak_resident_estimated = false; // an exact sample reached it too
        }
        pk.estimated_samples += estimated;
        pk.peak_reserved = std::max(pk.peak_reserved, reserved);
        if (it != last.end() && dt > 0) {
            double faults = majflt >= it->second.majflt ? (double)(majflt - it->second.majflt) : 0;
            double bytes = read_known && it->second.read_known && read >= it->second.read
                               ? (double)(read - it->second.read) : 0;
            if (weight_sum > 0) {
                for (const auto &[phase, w] : weight) {
                    s.phases[phase].major_faults += faults * w / weight_sum;
                    s.phases[phase].bytes_read += bytes * w / weight_sum;
                }
            } else if (faults > 0 || bytes > 0) {
                s.phases["outside regions"].major_faults += faults;
                s.phases["outside regions"].bytes_read += bytes;
            }
        }
        last[pid] = LastSeen{t, majflt, read, read_known};
    }
}

std::string fixed(double v, const char *format = "%.0f") {
    char buf[32];
    snprintf(buf, sizeof buf, format, v);
    return buf;
}

} // namespace

RecordSummary summarize_record(const std::vector<std::string> &lines) {
    RecordSummary s;
    std::map<long, LastSeen> last;
    for (const std::string &line : lines) {
        if (line.empty()) continue;
        std::optional<Json> parsed = parse_object(line);
        if (!parsed) {
            s.unreadable++;
            continue;
        }
        const Json &v = *parsed;
        if (member(v, "spillway_record")) {
            s.interval_s = number(member(v, "interval_s"));
            s.started = text(member(v, "started"));
            if (const Json *c = member(v, "command"))
                for (const Json &a : items(c)) s.command += (s.command.empty() ? "" : " ") + text(&a);
        } else if (const Json *e = member(v, "exit")) {
            s.has_exit = true;
            s.exit_t = number(member(*e, "t"));
            s.exit_status = (int)count(*e, "status");
            s.exit_signal = (int)count(*e, "signal");
        } else if (member(v, "stats")) {
            s.stats_lines++;
        } else if (member(v, "t")) {
            add_sample(s, v, last);
        } else {
            s.unreadable++;
        }
    }
    return s;
}

std::vector<std::string> render_record_summary(const RecordSummary &s) {
    std::vector<std::string> out;
    std::string head = "spillway report: " + (s.command.empty() ? std::string("(no head line)") : s.command);
    head += "; " + std::to_string(s.samples) + " sample" + (s.samples == 1 ? "" : "s");
    if (s.interval_s > 0) head += " every " + fixed(s.interval_s, "%.2f") + " s";
    if (!s.started.empty()) head += " from " + s.started;
    out.push_back(head);
    if (s.has_exit) {
        std::string end = "  ended after " + fixed(s.exit_t, "%.1f") + " s with status " + std::to_string(s.exit_status);
        if (s.exit_signal) end += " (killed by signal " + std::to_string(s.exit_signal) + ")";
        out.push_back(end);
    } else {
        out.push_back("  no end line: the recording was cut short after " + fixed(s.last_t, "%.1f") + " s");
    }
    for (const auto &[name, c] : s.cgroups) {
        std::string line = "cgroup " + name + " (v" + std::to_string(c.version) + "): peak " + human_size(c.peak_usage);
        if (c.limit) line += " of " + human_size(c.limit) + " (" + fixed(100.0 * (double)c.peak_usage / (double)c.limit) + "%)";
        else line += " (no limit)";
        line += " at " + fixed(c.peak_at, "%.1f") + " s";
        out.push_back(line);
        out.push_back("  peaks: anon " + human_size(c.anon) + ", file " + human_size(c.file) + ", shmem " +
                      human_size(c.shmem) + ", dirty " + human_size(c.dirty) + ", writeback " + human_size(c.writeback) +
                      "; major faults/s " + fixed(c.majfault_s) + ", file refaults/s " + fixed(c.refault_s) +
                      (c.psi_scope.empty() ? std::string("; no PSI")
                                           : "; PSI (" + c.psi_scope + ") some " + fixed(c.psi_some, "%.2f") +
                                                 "% full " + fixed(c.psi_full, "%.2f") + "% (max avg10)"));
    }
    if (!s.phases.empty()) {
        char line[256];
        snprintf(line, sizeof line, "%-17s %13s %11s %15s %17s", "by phase", "major faults", "bytes read",
                 "region-seconds", "pages faulted in");
        out.push_back(line);
        for (const auto &[phase, p] : s.phases) {
            snprintf(line, sizeof line, "  %-15s %13.0f %11s %15.1f %17.0f", phase.c_str(), p.major_faults,
                     human_size((unsigned long long)p.bytes_read).c_str(), p.region_seconds, p.pages_faulted);
            out.push_back(line);
        }
    }
    if (!s.processes.empty()) {
        char line[256];
        snprintf(line, sizeof line, "%-9s %-5s %-15s %13s %13s %12s %10s %13s", "by process", "RANK", "COMMAND",
                 "PEAK RESIDENT", "PEAK RESERVED", "MAJOR FAULTS", "READ", "PEAK MAJFLT/S");
        out.push_back(line);
        for (const auto &[pid, p] : s.processes) {
            std::string rank = p.rank.empty() ? (p.local_rank.empty() ? "-" : "l" + p.local_rank) : p.rank;
            std::string read = p.read_known ? human_size(p.last_read - std::min(p.first_read, p.last_read)) : "?";
            std::string peak = p.peak_resident_estimated ? "~" : ""; // "~" as top marks an estimate
            peak += human_size(p.peak_resident);
            snprintf(line, sizeof line, "  %-7ld %-5s %-15.15s %13s %13s %12llu %10s %13.0f", pid, rank.c_str(),
                     p.comm.c_str(), peak.c_str(), human_size(p.peak_reserved).c_str(),
                     (unsigned long long)(p.last_majflt - std::min(p.first_majflt, p.last_majflt)), read.c_str(),
                     p.peak_majflt_s);
            out.push_back(line);
        }
        int estimated = 0;
        for (const auto &[pid, p] : s.processes) estimated += p.estimated_samples;
        if (estimated)
            out.push_back("~ estimated: in " + std::to_string(estimated) + " process sample(s) a region shared a mapping "
                          "with its neighbours and its pages were not counted in /proc/PID/pagemap, so its resident "
                          "bytes are the mapping's shared out by size; record as the job's user on Linux 6.7+ to count "
                          "them exactly");
    } else {
        out.push_back("no process under the shim was seen (did the command start one?)");
    }
    if (s.stats_lines) out.push_back(std::to_string(s.stats_lines) + " process(es) wrote exit stats into the record");
    if (s.unreadable) out.push_back(std::to_string(s.unreadable) + " line(s) could not be read (cut short when spillway run was killed; the figures above leave them out)");
    return out;
}

} // namespace spillway::cli
