// job_sample.cpp — see job_sample.h.
#include "job_sample.h"

#include "json_quote.h"
#include "stats_format.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

namespace spillway::cli {

int backing_index(const std::string &name) {
    for (int b = 0; b < 3; b++)
        if (name == stats_key::kBackings[b]) return b;
    return -1;
}

RegionSample region_sample(const LiveRegionView &r, const std::vector<Vma> &vmas, Pagemap *pagemap) {
    RegionSample s{r};
    RegionPages pages = region_pages(vmas, r.start, r.len, pagemap);
    s.mapped = pages.bytes.present;
    s.estimated = pages.estimated();
    s.over_budget = pages.method == PageMethod::prorated_over_budget;
    if (r.is_private) {
        // A private copy's own memory is what it copied on write; the rest
        // of its Rss is the parent's pages, counted there.
        s.resident = pages.bytes.anonymous;
    } else if ((r.backing == stats_key::kBackings[0] || r.backing == stats_key::kBackings[1]) && r.cache_known) {
        s.resident = std::max(r.cached, s.mapped);
        s.cache_counted = true;
    } else {
        s.resident = s.mapped;
    }
    return s;
}

void derive(JobSample &now, const JobSample &previous) {
    double dt = previous.mono_ns && now.mono_ns > previous.mono_ns ? (now.mono_ns - previous.mono_ns) / 1e9 : 0;
    std::map<pid_t, const ProcessSample *> before;
    for (const ProcessSample &p : previous.processes) before[p.pid] = &p;
    for (ProcessSample &p : now.processes) {
        for (int b = 0; b < 3; b++) {
            p.count[b] = p.reserved[b] = p.resident[b] = 0;
            p.estimated[b] = false;
        }
        p.majflt_per_s = p.bytes_per_fault = -1; // unknown unless the previous sample gives them
        for (const RegionSample &r : p.regions) {
            // A fork child's private copy is anonymous memory of its own as
            // far as it has written it (its resident), the parent's before.
            int b = r.live.is_private ? 2 : backing_index(r.live.backing);
            if (b < 0) continue;
            p.count[b]++;
            p.reserved[b] += r.live.len;
            p.resident[b] += r.resident;
            p.estimated[b] = p.estimated[b] || r.estimated;
        }
        auto it = before.find(p.pid);
        if (dt <= 0 || it == before.end() || !p.counters_known || !it->second->counters_known) continue;
        if (it->second->counters.start_ticks != p.counters.start_ticks) continue; // the pid was reused
        const ProcCounters &a = it->second->counters, &b = p.counters;
        uint64_t faults = b.majflt >= a.majflt ? b.majflt - a.majflt : 0;
        p.majflt_per_s = faults / dt;
        if (faults && a.io_known && b.io_known && b.read_bytes >= a.read_bytes)
            p.bytes_per_fault = (double)(b.read_bytes - a.read_bytes) / (double)faults;
    }
    std::map<std::string, const CgroupSample *> cg_before;
    for (const CgroupSample &c : previous.cgroups) cg_before[cgroup_key(c.figures)] = &c;
    for (CgroupSample &c : now.cgroups) {
        auto it = cg_before.find(cgroup_key(c.figures));
        if (dt <= 0 || it == cg_before.end() || !c.figures.known || !it->second->figures.known) continue;
        const CgroupFigures &a = it->second->figures, &b = c.figures;
        c.majfault_per_s = b.majfault >= a.majfault ? (b.majfault - a.majfault) / dt : 0;
        c.refault_per_s = b.refault_file >= a.refault_file ? (b.refault_file - a.refault_file) / dt : 0;
    }
}

JobSample JobSampler::take() {
    JobSample s;
    std::map<std::string, CgroupFigures> groups; // by dir
    std::set<pid_t> tree;
    if (root_) {
        members_ = job_processes(members_);
        for (auto [pid, start] : members_) tree.insert(pid);
    }
    // The read fallback's budget (region_pages.h) is the whole sample's: a
    // job of many processes costs no more to sample than one.
    s.pagemap_read_budget = pagemap_read_budget_;
    uint64_t pagemap_read_budget = pagemap_read_budget_;
    for (pid_t pid : shim_processes(root_ ? &tree : nullptr)) {
        ProcessSample p;
        p.pid = pid;
        p.comm = read_comm(pid);
        // The cgroup before the state: an exited task's /proc/PID/cgroup names
        // the root (v1), so a group read before a live state is the job's own.
        CgroupFigures cg = locate_cgroup(pid);
        p.counters_known = read_counters(pid, p.counters);
        if (!p.counters_known || has_exited(p.counters)) continue; // it exited while we looked
        // Read once per process, again when the pid is another process's
        // or the process exec'd (a launcher's `exec python` with RANK set).
        CachedEnviron &env = environ_cache_[pid];
        if (!env.read || env.start_ticks != p.counters.start_ticks || env.comm != p.comm)
            env = CachedEnviron{true, p.counters.start_ticks, p.comm, read_environ(pid, {"RANK", "LOCAL_RANK"})};
        if (auto r = env.vars.find("RANK"); r != env.vars.end()) p.rank = r->second;
        if (auto r = env.vars.find("LOCAL_RANK"); r != env.vars.end()) p.local_rank = r->second;
        if (auto snap = find_live_snapshot(pid)) {
            p.has_snapshot = true;
            p.unlisted = snap->unlisted;
            p.fallbacks = snap->fallbacks;
            std::vector<Vma> vmas = read_smaps(pid);
            Pagemap pagemap(pid, &pagemap_read_budget); // opened only if a region shares a VMA
            // The snapshot may be up to a second old: a region freed since (its
            // range PROT_NONE) or replaced (another backing there) is left out.
            for (const LiveRegionView &r : snap->regions)
                if (is_mapped(vmas, r.start, r.len, r.backing, r.moving_to)) p.regions.push_back(region_sample(r, vmas, &pagemap));
        }
        p.cgroup = cg.name;
        if (cg.version && !groups.count(cgroup_key(cg))) groups[cgroup_key(cg)] = cg;
        s.processes.push_back(std::move(p));
    }
    for (auto &[dir, cg] : groups) {
        read_cgroup_figures(cg);
        s.cgroups.push_back(CgroupSample{cg});
    }
    s.mono_ns = monotonic_ns();
    derive(s, previous_);
    // Forget the environment of processes that are gone (pids are reused).
    std::set<pid_t> seen;
    for (const ProcessSample &p : s.processes) seen.insert(p.pid);
    for (auto it = environ_cache_.begin(); it != environ_cache_.end();)
        it = seen.count(it->first) ? std::next(it) : environ_cache_.erase(it);
    previous_ = s;
    return s;
}

static std::string rate(double v) {
    if (v < 0) return "null";
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string sample_json(const JobSample &s, uint64_t start_ns) {
    auto n = [](uint64_t v) { return std::to_string(v); };
    char t[32];
    snprintf(t, sizeof t, "%.3f", s.mono_ns > start_ns ? (s.mono_ns - start_ns) / 1e9 : 0.0);
    std::string out = std::string("{\"t\":") + t + ",\"cgroups\":[";
    for (size_t i = 0; i < s.cgroups.size(); i++) {
        const CgroupFigures &c = s.cgroups[i].figures;
        char psi[96] = "null";
        if (!c.psi_scope.empty())
            snprintf(psi, sizeof psi, "{\"scope\":\"%s\",\"some10\":%.2f,\"full10\":%.2f}", c.psi_scope.c_str(),
                     c.psi_some10, c.psi_full10);
        out += std::string(i ? "," : "") + "{\"name\":" + json_quote(c.name) + ",\"version\":" + n(c.version) +
               ",\"known\":" + (c.known ? "true" : "false") + ",\"usage\":" + n(c.usage) + ",\"limit\":" +
               n(c.limit) + ",\"anon\":" + n(c.anon) + ",\"file\":" + n(c.file) + ",\"shmem\":" + n(c.shmem) +
               ",\"dirty\":" + n(c.dirty) + ",\"writeback\":" + n(c.writeback) + ",\"majfault_s\":" +
               rate(s.cgroups[i].majfault_per_s) + ",\"refault_s\":" + rate(s.cgroups[i].refault_per_s) +
               ",\"psi\":" + psi + (c.unlocated.empty() ? "" : ",\"unlocated\":" + json_quote(c.unlocated)) + "}";
    }
    out += "],\"processes\":[";
    for (size_t i = 0; i < s.processes.size(); i++) {
        const ProcessSample &p = s.processes[i];
        out += std::string(i ? "," : "") + "{\"pid\":" + n((uint64_t)p.pid) + ",\"comm\":" + json_quote(p.comm) +
               ",\"rank\":" + (p.rank.empty() ? "null" : json_quote(p.rank)) + ",\"local_rank\":" +
               (p.local_rank.empty() ? "null" : json_quote(p.local_rank)) + ",\"cgroup\":" + json_quote(p.cgroup) +
               ",\"majflt\":" + n(p.counters.majflt) + ",\"read_bytes\":" +
               (p.counters.io_known ? n(p.counters.read_bytes) : "null") + ",\"majflt_s\":" + rate(p.majflt_per_s) +
               ",\"bytes_per_fault\":" + rate(p.bytes_per_fault) + ",\"snapshot\":" +
               (p.has_snapshot ? "true" : "false") + ",\"fallbacks\":" + n(p.fallbacks) + ",\"regions\":[";
        for (size_t j = 0; j < p.regions.size(); j++) {
            const RegionSample &r = p.regions[j];
            out += std::string(j ? "," : "") + "{\"start\":" + n(r.live.start) + ",\"len\":" + n(r.live.len) +
                   ",\"resident\":" + n(r.resident) + ",\"mapped\":" + n(r.mapped) +
                   (r.estimated ? ",\"estimated\":true" : "") +
                   (r.cache_counted ? ",\"cached\":" + n(r.live.cached) + ",\"dirty\":" + n(r.live.dirty) : "") +
                   ",\"backing\":" + json_quote(r.live.backing) +
                   (r.live.moving_to.empty() ? "" : ",\"moving_to\":" + json_quote(r.live.moving_to)) +
                   (r.live.is_private ? ",\"private\":true" : "") +
                   ",\"phase\":" + json_quote(r.live.phase) + ",\"advice\":" + json_quote(r.live.advice) +
                   ",\"fault_pages_s\":" + n(r.live.fault_pages_s) + "}";
        }
        out += "],\"unlisted\":" + n(p.unlisted) + "}";
    }
    return out + "]}";
}

} // namespace spillway::cli
