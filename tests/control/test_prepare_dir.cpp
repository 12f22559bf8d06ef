// test_prepare_dir.cpp — proves spillway_prepare_dir clears stale exports
// once per run and touches nothing else: it removes only regular files of
// ours named spillway-export-* (not other names, not directories, not
// symlinks, not other users' files), sets the SPILLWAY_PREPARED marker so
// that later calls and every descendant leave the directory alone, and,
// when no ancestor prepared, the first export of a process does it. Never
// by age: a file's age plays no part anywhere here. Each scenario that
// depends on the marker runs in a separate process (control_helper) with the
// environment it needs. Runs with SPILLWAY_POLICY=disk.
#include "spillway.h"
#include "support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace control_test;

namespace {

const char *kMarker = "SPILLWAY_PREPARED";

void plant(const std::string &name) {
    std::string path = spill_dir() + "/" + name;
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "stale", 5) == 5);
    close(fd);
}

bool present(const std::string &name) { return file_exists(spill_dir() + "/" + name); }

// Names that must survive any prepare, and the stale exports that must not
// (2147483647 is above any pid_max: that exporter cannot be running).
void plant_everything() {
    empty_spill_dir();
    plant("spillway-export-2147483647-0123456789abcdef0123456789abcdef");
    plant("spillway-export-stale");
    plant("spillway-export-" + std::to_string(getpid()) + "-live"); // its exporter (us) runs
    plant("keep.txt");
    plant("my-spillway-export-1");
    plant("spillway-exported.dat");
    REQUIRE(mkdir((spill_dir() + "/spillway-export-dir").c_str(), 0700) == 0);
    REQUIRE(symlink((spill_dir() + "/keep.txt").c_str(), (spill_dir() + "/spillway-export-link").c_str()) == 0);
    if (geteuid() == 0) { // only root can give a file away
        plant("spillway-export-other-owner");
        REQUIRE(chown((spill_dir() + "/spillway-export-other-owner").c_str(), 65534, 65534) == 0);
    }
}

void check_untouched_survive() {
    CHECK(present("spillway-export-" + std::to_string(getpid()) + "-live"));
    CHECK(present("keep.txt"));
    CHECK(present("my-spillway-export-1"));
    CHECK(present("spillway-exported.dat"));
    CHECK(present("spillway-export-dir"));
    CHECK(present("spillway-export-link"));
    if (geteuid() == 0) CHECK(present("spillway-export-other-owner"));
}

std::string field(const std::string &out, const std::string &key) {
    size_t at = out.find(key + "=");
    if (at == std::string::npos) return "";
    at += key.size() + 1;
    return out.substr(at, out.find_first_of(" \n", at) - at);
}

} // namespace

TEST_CASE("without an ancestor's marker, prepare removes exactly our stale exported files") {
    plant_everything();
    int status = -1;
    SpawnOptions fresh;
    fresh.unset_env = {kMarker};
    std::string out = run_helper({"prepare"}, &status, fresh);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(field(out, "rc") == "0");
    CHECK(field(out, "marker") == field(out, "pid")); // it marked the run as prepared
    CHECK_FALSE(present("spillway-export-2147483647-0123456789abcdef0123456789abcdef"));
    CHECK_FALSE(present("spillway-export-stale"));
    check_untouched_survive();
    empty_spill_dir();
}

TEST_CASE("with an ancestor's marker, prepare removes nothing") {
    plant_everything();
    int status = -1;
    SpawnOptions prepared;
    prepared.set_env = {std::string(kMarker) + "=1"};
    std::string out = run_helper({"prepare"}, &status, prepared);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(field(out, "rc") == "0");
    CHECK(present("spillway-export-stale"));
    check_untouched_survive();
    empty_spill_dir();
}

TEST_CASE("prepare runs once: a second call and the preparer's children leave new files alone") {
    empty_spill_dir();
    unsetenv(kMarker);
    plant("spillway-export-before");
    REQUIRE(spillway_prepare_dir() == 0);
    CHECK_FALSE(present("spillway-export-before"));
    const char *marker = getenv(kMarker);
    REQUIRE(marker != nullptr);
    CHECK(std::string(marker) == std::to_string(getpid()));

    plant("spillway-export-after"); // a sibling's live export, as far as we can tell
    CHECK(spillway_prepare_dir() == 0);
    CHECK(present("spillway-export-after"));

    int status = -1;
    std::string out = run_helper({"prepare"}, &status); // inherits our environment
    INFO(out);
    CHECK(field(out, "marker") == std::to_string(getpid()));
    CHECK(present("spillway-export-after"));
    empty_spill_dir();
    unsetenv(kMarker);
}

TEST_CASE("the first export of a process prepares when no ancestor did") {
    plant_everything();
    int status = -1;
    SpawnOptions fresh;
    fresh.unset_env = {kMarker};
    std::string out = run_helper({"export-new", std::to_string(4 * MiB)}, &status, fresh);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(field(out, "rc") == "0");
    CHECK(field(out, "marker") == field(out, "pid"));
    CHECK_FALSE(present("spillway-export-stale"));
    check_untouched_survive();
    std::string path = field(out, "path");
    CHECK(file_exists(path)); // its own export, made after the cleanup
    empty_spill_dir();
}

TEST_CASE("an export under an ancestor's marker leaves other exports alone") {
    plant_everything();
    int status = -1;
    SpawnOptions prepared;
    prepared.set_env = {std::string(kMarker) + "=1"};
    std::string out = run_helper({"export-new", std::to_string(4 * MiB)}, &status, prepared);
    INFO(out);
    REQUIRE(status == 0);
    CHECK(field(out, "rc") == "0");
    CHECK(present("spillway-export-stale"));
    CHECK(present("spillway-export-2147483647-0123456789abcdef0123456789abcdef"));
    CHECK(file_exists(field(out, "path")));
    empty_spill_dir();
}
