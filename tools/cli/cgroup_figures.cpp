// cgroup_figures.cpp — see cgroup_figures.h.
#include "cgroup_figures.h"

#include "cgroup_location.h"
#include "proc_figures.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace spillway::cli {

namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        out.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

uint64_t number_in(const std::string &path, bool &ok) {
    std::string t = read_text(path, &ok);
    if (!ok) return 0;
    if (t.rfind("max", 0) == 0) return 0; // v2: no limit
    return strtoull(t.c_str(), nullptr, 10);
}

} // namespace

std::string cgroup_key(const CgroupFigures &c) { return c.dir.empty() ? "?" + c.name : c.dir; }

bool parse_cgroup_membership(std::string_view text, int &version, std::string &name) {
    bool found_v2 = false;
    std::string v2_name;
    for (std::string_view line : lines_of(text)) {
        size_t c1 = line.find(':');
        size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
        if (c2 == std::string_view::npos) continue;
        std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
        std::string_view path = line.substr(c2 + 1);
        std::string list = "," + std::string(controllers) + ",";
        if (list.find(",memory,") != std::string::npos) {
            version = 1;
            name = path;
            return true;
        }
        if (line.substr(0, c1) == "0" && controllers.empty()) {
            found_v2 = true;
            v2_name = path;
        }
    }
    if (!found_v2) return false;
    version = 2;
    name = v2_name;
    return true;
}

void parse_memory_stat(std::string_view text, int version, CgroupFigures &c) {
    std::map<std::string, uint64_t> kv;
    for (std::string_view line : lines_of(text)) {
        size_t sp = line.find(' ');
        if (sp == std::string_view::npos) continue;
        kv[std::string(line.substr(0, sp))] = strtoull(std::string(line.substr(sp + 1)).c_str(), nullptr, 10);
    }
    auto get = [&](const char *a, const char *b = nullptr) -> uint64_t {
        if (auto it = kv.find(a); it != kv.end()) return it->second;
        if (b)
            if (auto it = kv.find(b); it != kv.end()) return it->second;
        return 0;
    };
    if (version == 1) { // the hierarchical total_* figures include child groups, as usage does
        // The kernel's lowest limit of the group and its ancestors.
        uint64_t hierarchical = get("hierarchical_memory_limit");
        if (hierarchical && hierarchical < (1ull << 62) && (!c.limit || hierarchical < c.limit)) c.limit = hierarchical;
        c.anon = get("total_rss", "rss");
        c.file = get("total_cache", "cache");
        c.shmem = get("total_shmem", "shmem");
        c.dirty = get("total_dirty", "dirty");
        c.writeback = get("total_writeback", "writeback");
        c.majfault = get("total_pgmajfault", "pgmajfault");
        c.refault_file = get("total_workingset_refault_file", "workingset_refault_file");
    } else {
        c.anon = get("anon");
        c.file = get("file");
        c.shmem = get("shmem");
        c.dirty = get("file_dirty");
        c.writeback = get("file_writeback");
        c.majfault = get("pgmajfault");
        c.refault_file = get("workingset_refault_file", "workingset_refault");
    }
}

bool parse_psi(std::string_view text, double &some10, double &full10) {
    bool any = false;
    for (std::string_view line : lines_of(text)) {
        size_t at = line.find("avg10=");
        if (at == std::string_view::npos) continue;
        double v = strtod(std::string(line.substr(at + 6)).c_str(), nullptr);
        if (line.rfind("some", 0) == 0) some10 = v, any = true;
        if (line.rfind("full", 0) == 0) full10 = v, any = true;
    }
    return any;
}

CgroupFigures locate_cgroup(pid_t pid) {
    CgroupFigures c;
    if (!parse_cgroup_membership(read_text("/proc/" + std::to_string(pid) + "/cgroup"), c.version, c.name)) {
        c.version = 0;
        return c;
    }
    CgroupPlace place = place_cgroup(pid, c.version, c.name);
    c.dir = place.dir;
    c.mount = place.mount;
    c.unlocated = place.why_unknown;
    return c;
}

uint64_t lowest_limit_up_to(const std::string &mount, const std::string &dir, uint64_t own_limit,
                            uint64_t (*limit_of)(const std::string &dir)) {
    uint64_t lowest = own_limit;
    std::string d = dir;
    while (d.size() > mount.size() && d.rfind(mount + "/", 0) == 0) {
        d = d.substr(0, d.rfind('/'));
        if (d.size() <= mount.size()) break; // the hierarchy's root: no limit file (v2) or the machine (v1)
        uint64_t l = limit_of(d);
        if (l && (!lowest || l < lowest)) lowest = l;
    }
    return lowest;
}

static uint64_t v2_limit_of(const std::string &dir) {
    bool ok = false;
    return number_in(dir + "/memory.max", ok);
}

void read_cgroup_figures(CgroupFigures &c) {
    c.known = false;
    if (c.version == 0 || c.dir.empty()) return; // unlocated: no figures rather than another group's
    bool ok = false;
    if (c.version == 1) {
        c.usage = number_in(c.dir + "/memory.usage_in_bytes", ok);
        c.known = ok;
        bool limit_ok = false;
        c.limit = number_in(c.dir + "/memory.limit_in_bytes", limit_ok);
        if (c.limit >= (1ull << 62)) c.limit = 0; // v1 writes "no limit" as a huge number
    } else {
        c.usage = number_in(c.dir + "/memory.current", ok);
        c.known = ok;
        bool limit_ok = false;
        c.limit = number_in(c.dir + "/memory.max", limit_ok); // the v2 root has neither file
        c.limit = lowest_limit_up_to(c.mount, c.dir, c.limit, v2_limit_of);
    }
    parse_memory_stat(read_text(c.dir + "/memory.stat"), c.version, c);
    c.psi_scope.clear();
    bool psi_ok = false;
    std::string psi;
    if (c.version == 2) {
        psi = read_text(c.dir + "/memory.pressure", &psi_ok);
        if (psi_ok && parse_psi(psi, c.psi_some10, c.psi_full10)) c.psi_scope = "cgroup";
    }
    if (c.psi_scope.empty()) {
        psi = read_text("/proc/pressure/memory", &psi_ok);
        if (psi_ok && parse_psi(psi, c.psi_some10, c.psi_full10)) c.psi_scope = "system";
    }
}

} // namespace spillway::cli
