// test_spill_dir.cpp — spill_dir_prepare.cpp and spill_dir_checks.cpp:
// only spillway's own stale files go; judging a directory creates nothing;
// what is fatal matches the shim's start-up.
#include "spill_dir_checks.h"
#include "spill_dir_prepare.h"
#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace spillway;
using namespace spillway::cli;

namespace {

void touch(const std::string &path) { close(open(path.c_str(), O_WRONLY | O_CREAT, 0600)); }
bool exists(const std::string &path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

} // namespace

TEST_CASE("prepare creates the directory 0700 and removes only spillway's stale files") {
    TempDir root;
    Settings s;
    s.spill_dir = root.path + "/a/b/spill";
    PreparedDir first = prepare_spill_dir(s);
    REQUIRE(first.dir.usable);
    struct stat st;
    REQUIRE(stat(s.spill_dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    const std::string d = s.spill_dir + "/";
    for (const char *name : {"spillway-export-999999999-ab", "spillway-shm-x", ".spillway-tmp-y"}) touch(d + name);
    touch(d + "keep.txt");
    touch(d + "not-spillway-export-1");
    REQUIRE(symlink((d + "keep.txt").c_str(), (d + "spillway-export-link").c_str()) == 0);
    REQUIRE(mkdir((d + "spillway-export-dir").c_str(), 0700) == 0);
    touch(d + "spillway-export-someone-else");
    bool can_chown = chown((d + "spillway-export-someone-else").c_str(), 65534, 65534) == 0;
    touch(d + "spillway-export-1-cd"); // pid 1 is alive: another job may still hand it out

    PreparedDir second = prepare_spill_dir(s);
    CHECK(second.removed == (can_chown ? 3 : 4));
    CHECK_FALSE(exists(d + "spillway-export-999999999-ab"));
    CHECK_FALSE(exists(d + "spillway-shm-x"));
    CHECK_FALSE(exists(d + ".spillway-tmp-y"));
    CHECK(exists(d + "keep.txt"));
    CHECK(exists(d + "not-spillway-export-1"));
    CHECK(exists(d + "spillway-export-link"));
    CHECK(exists(d + "spillway-export-dir"));
    if (can_chown) CHECK(exists(d + "spillway-export-someone-else"));
    CHECK(exists(d + "spillway-export-1-cd"));
    CHECK(second.kept.size() >= 1);
}

TEST_CASE("inspect judges a missing directory by its ancestor and creates nothing") {
    TempDir root;
    Settings s;
    s.spill_dir = root.path + "/later/spill";
    std::string note;
    SpillDir d = inspect_spill_dir(s, note);
    CHECK(d.usable);
    CHECK(note.find("does not exist yet") != std::string::npos);
    CHECK_FALSE(exists(root.path + "/later"));

    touch(root.path + "/file");
    s.spill_dir = root.path + "/file/spill";
    s.spill_dir_given = true; // named by the user: theirs to fix
    d = inspect_spill_dir(s, note);
    CHECK_FALSE(d.usable);
    CHECK(d.why_unusable.find("cannot create") != std::string::npos);
    CHECK(spill_dir_is_fatal(s, d));
    s.policy = Policy::memory; // never uses disk: the shim starts anyway
    CHECK_FALSE(spill_dir_is_fatal(s, d));
    s.policy = Policy::anon;
    CHECK_FALSE(spill_dir_is_fatal(s, d));
}

TEST_CASE("a world-writable directory without the sticky bit is refused, as in the shim") {
    TempDir root;
    Settings s;
    s.spill_dir = root.path + "/open";
    s.spill_dir_given = true;
    REQUIRE(mkdir(s.spill_dir.c_str(), 0777) == 0);
    REQUIRE(chmod(s.spill_dir.c_str(), 0777) == 0);
    std::string note;
    SpillDir d = inspect_spill_dir(s, note);
    CHECK_FALSE(d.usable);
    CHECK(d.why_unusable.find("writable by others") != std::string::npos);
    CHECK(spill_dir_is_fatal(s, d));
    // The same directory as the default (nobody named it): the shim spills
    // to a private directory instead, so `run` and `check` must not stop.
    s.spill_dir_given = false;
    CHECK_FALSE(spill_dir_is_fatal(s, d));
}

TEST_CASE("another user's directory is not fatal, named or not (a child after a uid change)") {
    TempDir root;
    Settings s;
    s.spill_dir = root.path + "/theirs";
    s.spill_dir_given = true;
    REQUIRE(mkdir(s.spill_dir.c_str(), 0700) == 0);
    if (chown(s.spill_dir.c_str(), 65534, 65534) != 0) {
        WARN("cannot chown here (not root); skipped");
        return;
    }
    std::string note;
    SpillDir d = inspect_spill_dir(s, note);
    CHECK_FALSE(d.usable);
    CHECK(d.foreign);
    CHECK_FALSE(spill_dir_is_fatal(s, d));
}

TEST_CASE("tmpfs is refused but not fatal (the shim warns and falls back)") {
    struct stat st;
    if (stat("/dev/shm", &st) != 0 || filesystem_name("/dev/shm") != "tmpfs") {
        WARN("no tmpfs at /dev/shm here; skipped");
        return;
    }
    Settings s;
    s.spill_dir = "/dev/shm/spillway-cli-unit-" + std::to_string(getpid());
    std::string note;
    SpillDir d = inspect_spill_dir(s, note);
    CHECK_FALSE(d.usable);
    CHECK(d.on_tmpfs);
    CHECK_FALSE(spill_dir_is_fatal(s, d));
    CHECK_FALSE(exists(s.spill_dir));
    s.allow_tmpfs = true;
    CHECK(inspect_spill_dir(s, note).usable);
}
