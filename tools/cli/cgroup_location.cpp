// cgroup_location.cpp — see cgroup_location.h.
#include "cgroup_location.h"

#include "proc_figures.h"

#include <sstream>
#include <sys/stat.h>

namespace spillway::cli {

std::vector<CgroupMount> cgroup_mounts(std::string_view mountinfo, int version) {
    std::vector<CgroupMount> out;
    size_t at = 0;
    while (at < mountinfo.size()) {
        size_t end = mountinfo.find('\n', at);
        if (end == std::string_view::npos) end = mountinfo.size();
        std::string_view line = mountinfo.substr(at, end - at);
        at = end + 1;
        size_t dash = line.find(" - ");
        if (dash == std::string_view::npos) continue;
        std::istringstream pre{std::string(line.substr(0, dash))}, post{std::string(line.substr(dash + 3))};
        std::string id, parent, devno, root, point, fstype, source, options;
        pre >> id >> parent >> devno >> root >> point;
        post >> fstype >> source >> options;
        if (version == 2 && fstype == "cgroup2") out.push_back(CgroupMount{point, root});
        if (version == 1 && fstype == "cgroup") {
            std::istringstream opts(options);
            std::string o;
            while (std::getline(opts, o, ','))
                if (o == "memory") out.push_back(CgroupMount{point, root});
        }
    }
    return out;
}

// Whether path holds a ".." component: above the namespace's root, so
// not a place under any mount whose root is "/".
static bool climbs(const std::string &path) {
    return path == "/.." || path.rfind("/../", 0) == 0 || path.find("/../") != std::string::npos ||
           (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0);
}

std::optional<std::string> path_under_root(const std::string &root, const std::string &name) {
    if (name.empty() || name[0] != '/' || root.empty()) return std::nullopt;
    if (name == root) return std::string();
    std::string rest;
    if (root == "/") rest = name;
    else if (name.rfind(root + "/", 0) == 0) rest = name.substr(root.size());
    else return std::nullopt;
    // "/../b" under a root "/": b is a sibling of this namespace's root,
    // somewhere above the mount; where, the name does not say.
    if (climbs(rest)) return std::nullopt;
    return rest;
}

static bool is_directory(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

CgroupPlace place_cgroup(pid_t pid, int version, const std::string &name, const std::string &proc) {
    CgroupPlace out;
    std::vector<CgroupMount> own = cgroup_mounts(read_text(proc + "/self/mountinfo"), version);
    for (const CgroupMount &m : own)
        if (auto rest = path_under_root(m.root, name)) {
            out.dir = m.point + *rest;
            out.mount = m.point;
            return out;
        }
    // Its own mounts, seen through its root directory: a process in a
    // container whose group our mounts do not show.
    std::string pid_dir = proc + "/" + std::to_string(pid);
    for (const CgroupMount &m : cgroup_mounts(read_text(pid_dir + "/mountinfo"), version))
        if (auto rest = path_under_root(m.root, name)) {
            std::string mount = pid_dir + "/root" + (m.point == "/" ? "" : m.point);
            if (is_directory(mount + *rest)) {
                out.dir = mount + *rest;
                out.mount = mount;
                return out;
            }
        }
    std::string hierarchy = version == 1 ? "the v1 memory hierarchy" : "the cgroup2 hierarchy";
    if (own.empty())
        out.why_unknown = "this tool's mount namespace has no mount of " + hierarchy +
                          "; run spillway where the job's cgroups are mounted";
    else
        out.why_unknown = "outside what this tool sees of " + hierarchy + " (" + own[0].point + ", its root " +
                          own[0].root + ") and not readable through " + pid_dir +
                          "/root; run spillway as root in the job's container or cgroup namespace, or on the host";
    return out;
}

} // namespace spillway::cli
