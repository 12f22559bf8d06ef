// test_cgroup_location.cpp — cgroup_location.cpp: a group's files are found
// under this tool's mount, else under the process's own through
// /proc/PID/root, else the group is unknown; never the mount's root in
// its place. Fake /proc trees stand for the namespaces.
#include "cgroup_location.h"

#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <sys/stat.h>

using namespace spillway::cli;

namespace {

// One line of mountinfo for a cgroup mount of `root` at `point`.
std::string v1_line(const std::string &root, const std::string &point) {
    return "35 31 0:32 " + root + " " + point + " rw,relatime - cgroup cgroup rw,memory\n";
}
std::string v2_line(const std::string &root, const std::string &point) {
    return "41 31 0:38 " + root + " " + point + " rw,relatime - cgroup2 cgroup2 rw\n";
}
const char kOther[] = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n";

void write(const std::string &path, const std::string &text) {
    std::system(("mkdir -p '" + path.substr(0, path.rfind('/')) + "'").c_str());
    std::ofstream(path) << text;
}

void make_dir(const std::string &path) { std::system(("mkdir -p '" + path + "'").c_str()); }

} // namespace

TEST_CASE("cgroup location: the mounts of v1 memory and of cgroup2 in mountinfo") {
    std::string text = std::string(kOther) + v1_line("/docker/abc", "/sys/fs/cgroup/memory") +
                       v2_line("/", "/sys/fs/cgroup/unified");
    auto v1 = cgroup_mounts(text, 1);
    REQUIRE(v1.size() == 1);
    CHECK(v1[0].point == "/sys/fs/cgroup/memory");
    CHECK(v1[0].root == "/docker/abc");
    auto v2 = cgroup_mounts(text, 2);
    REQUIRE(v2.size() == 1);
    CHECK(v2[0].point == "/sys/fs/cgroup/unified");
    CHECK(v2[0].root == "/");
    CHECK(cgroup_mounts(kOther, 1).empty());
    CHECK(cgroup_mounts("", 2).empty());
    // Co-mounted controllers: memory among them.
    REQUIRE(cgroup_mounts("5 1 0:3 / /cg rw - cgroup cgroup rw,cpu,memory\n", 1).size() == 1);
    // A container's own mount after the host's: both, in order.
    auto two = cgroup_mounts(v1_line("/../..", "/sys/fs/cgroup/memory") + v1_line("/../b", "/tmp/cg"), 1);
    REQUIRE(two.size() == 2);
    CHECK(two[1].point == "/tmp/cg");
}

TEST_CASE("cgroup location: a name is under a mount's root, or it is not") {
    CHECK(path_under_root("/", "/job/a") == "/job/a");
    CHECK(path_under_root("/", "/") == "");
    // Docker, cgroup v1, no namespace: its own group is the mount's root.
    CHECK(path_under_root("/docker/abc", "/docker/abc") == "");
    CHECK(path_under_root("/docker/abc", "/docker/abc/sub") == "/sub");
    // Before: the mount's root (the tool's own group) was shown for these.
    CHECK_FALSE(path_under_root("/docker/abc", "/elsewhere"));
    CHECK_FALSE(path_under_root("/docker/abc", "/docker/abcd"));
    // Names relative to a cgroup namespace's root: a sibling of it ("/../b")
    // is above a mount rooted at the namespace.
    CHECK_FALSE(path_under_root("/", "/../b"));
    CHECK_FALSE(path_under_root("/", "/.."));
    // A mount whose root is above the namespace's, as seen from inside it.
    CHECK(path_under_root("/..", "/../b") == "/b");
    CHECK(path_under_root("/../..", "/../../x/b") == "/x/b");
    CHECK_FALSE(path_under_root("/../..", "/../b")); // which group of the level between, the name does not say
    CHECK_FALSE(path_under_root("/../..", "/"));     // nor where the namespace's own root is
    CHECK_FALSE(path_under_root("/", ""));
    CHECK_FALSE(path_under_root("/", "relative"));
}

TEST_CASE("cgroup location: found under this tool's own mount (v1 and v2)") {
    TempDir t;
    std::string proc = t.path + "/proc";
    write(proc + "/self/mountinfo", std::string(kOther) + v1_line("/", "/sys/fs/cgroup/memory") +
                                        v2_line("/", "/sys/fs/cgroup/unified"));
    CgroupPlace p = place_cgroup(42, 1, "/job/a", proc);
    CHECK(p.dir == "/sys/fs/cgroup/memory/job/a");
    CHECK(p.mount == "/sys/fs/cgroup/memory");
    CHECK(p.why_unknown.empty());
    p = place_cgroup(42, 2, "/", proc);
    CHECK(p.dir == "/sys/fs/cgroup/unified");
}

TEST_CASE("cgroup location: a group our mount does not show is found through /proc/PID/root") {
    TempDir t;
    std::string proc = t.path + "/proc";
    // The tool: in a container without a cgroup namespace (its group is the mount's root).
    write(proc + "/self/mountinfo", v1_line("/docker/abc", "/sys/fs/cgroup/memory"));
    // The job: another container's, its mount rooted at its own group.
    write(proc + "/42/mountinfo", std::string(kOther) + v1_line("/docker/def", "/sys/fs/cgroup/memory"));
    make_dir(proc + "/42/root/sys/fs/cgroup/memory/step");
    CgroupPlace p = place_cgroup(42, 1, "/docker/def/step", proc);
    CHECK(p.dir == proc + "/42/root/sys/fs/cgroup/memory/step");
    CHECK(p.mount == proc + "/42/root/sys/fs/cgroup/memory");

    // v2, the tool in a cgroup namespace of its own: a job outside it is
    // "/../other", and its mount's root, seen from here, "/..".
    write(proc + "/self/mountinfo", v2_line("/", "/sys/fs/cgroup"));
    write(proc + "/43/mountinfo", v2_line("/..", "/sys/fs/cgroup"));
    make_dir(proc + "/43/root/sys/fs/cgroup/other");
    p = place_cgroup(43, 2, "/../other", proc);
    CHECK(p.dir == proc + "/43/root/sys/fs/cgroup/other");
    CHECK(p.mount == proc + "/43/root/sys/fs/cgroup");

    // v1, both in cgroup namespaces below the mount's root (seen here as
    // "/../.."); the job has a mount of its own namespace's root too, after
    // the host's: that one shows it (as `unshare --cgroup --mount` makes).
    write(proc + "/self/mountinfo", v1_line("/../..", "/sys/fs/cgroup/memory"));
    write(proc + "/47/mountinfo", v1_line("/../..", "/sys/fs/cgroup/memory") + v1_line("/../b", "/tmp/cg"));
    make_dir(proc + "/47/root/tmp/cg");
    p = place_cgroup(47, 1, "/../b", proc);
    CHECK(p.dir == proc + "/47/root/tmp/cg");
    CHECK(p.mount == proc + "/47/root/tmp/cg");
}

TEST_CASE("cgroup location: otherwise unknown, with why, never the mount's root") {
    TempDir t;
    std::string proc = t.path + "/proc";
    write(proc + "/self/mountinfo", v1_line("/docker/abc", "/sys/fs/cgroup/memory"));
    // No /proc/42 readable (another user's process, or gone).
    CgroupPlace p = place_cgroup(42, 1, "/elsewhere", proc);
    CHECK(p.dir.empty());
    CHECK(p.mount.empty());
    CHECK(p.why_unknown.find("outside what this tool sees of the v1 memory hierarchy (/sys/fs/cgroup/memory, its root "
                             "/docker/abc)") == 0);
    CHECK(p.why_unknown.find("; run spillway as root") != std::string::npos);
    CHECK(p.why_unknown.find('\n') == std::string::npos);

    // Its mount shows the group, but the directory is not there (not
    // readable through its root): unknown, not guessed.
    write(proc + "/44/mountinfo", v1_line("/", "/sys/fs/cgroup/memory"));
    CHECK(place_cgroup(44, 1, "/elsewhere", proc).dir.empty());

    // A namespace below the mount's root: the mount shows "/../..", the
    // job's group "/../b" (a sibling of the namespace's root), and so does
    // the job's own mountinfo as read from here.
    write(proc + "/self/mountinfo", v1_line("/../..", "/sys/fs/cgroup/memory"));
    write(proc + "/45/mountinfo", v1_line("/../..", "/sys/fs/cgroup/memory"));
    make_dir(proc + "/45/root/sys/fs/cgroup/memory/b");
    CHECK(place_cgroup(45, 1, "/../b", proc).dir.empty());
    CHECK(place_cgroup(45, 1, "/", proc).dir.empty()); // the tool's own group: not the machine's root either

    // No mount of the hierarchy at all.
    write(proc + "/self/mountinfo", kOther);
    p = place_cgroup(46, 2, "/job", proc);
    CHECK(p.dir.empty());
    CHECK(p.why_unknown.find("no mount of the cgroup2 hierarchy") != std::string::npos);
}
