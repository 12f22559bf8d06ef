// cgroup_location.h — where a process's memory cgroup's files are, or that
// this tool cannot tell: never another group's.
//
// /proc/PID/cgroup names the group relative to the root of the *reader's*
// cgroup namespace ("/../b" for a sibling of the reader's namespace root),
// and mountinfo gives the root of each cgroup mount in the same terms
// ("/" on the host; "/docker/abc" in a container without a cgroup
// namespace; "/../.." seen from a namespace two levels below the mount's
// root). A group's files are under a mount exactly when its name is the
// mount's root or below it; what follows the root is the path under the
// mount point. So, in order:
//  1. this tool's own mounts of the hierarchy, the first that shows it;
//  2. the process's own mounts, through /proc/PID/root (a containerised
//     process whose group this tool's mounts do not show: its mountinfo,
//     read here, is in the same terms);
//  3. otherwise unknown, with why: the figures of the mount's root (the
//     tool's own group, or the machine) would be a wrong answer about where
//     the job's memory is.
//
// Invariant: a place is found only when the name lies under a mount's
// root, and then it is that name's directory; pure string work apart from
// reading the two mountinfo files and checking a directory exists.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace spillway::cli {

struct CgroupMount {
    std::string point; // where it is mounted, in the reading process's mount namespace
    std::string root;  // the hierarchy's directory mounted there, as mountinfo shows it
};

// The mounts of the v1 memory hierarchy (version 1) or of cgroup2
// (version 2) in mountinfo text, in its order. A container's mount
// namespace may hold several: the host's, and one of its own namespace.
std::vector<CgroupMount> cgroup_mounts(std::string_view mountinfo, int version);

// The path of group `name` under a mount of `root` ("" for the root
// itself, else "/a/b"); nullopt when the group is not under it.
std::optional<std::string> path_under_root(const std::string &root, const std::string &name);

struct CgroupPlace {
    std::string dir;   // the group's files; empty when unknown
    std::string mount; // the mount point dir is under (ends the walk up the ancestors)
    std::string why_unknown; // one line, when dir is empty
};

// Where pid's group `name` (of cgroup `version`, as /proc/PID/cgroup gives
// it) is. proc: where /proc is (tests give a fake tree).
CgroupPlace place_cgroup(pid_t pid, int version, const std::string &name, const std::string &proc = "/proc");

} // namespace spillway::cli
