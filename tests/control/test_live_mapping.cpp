// test_live_mapping.cpp — proves spillway_has_live_mapping sees every
// mapping this process holds over a file (one made by spillway_map, and the
// exporter's own mapping of a file it exported), by any spelling of the
// path, and no others; and that spillway_release_page_cache_by_path drops an
// unmapped file's page cache, refuses (-EBUSY) while this process maps it
// (the advice would skip mapped pages and report success having freed
// nothing), succeeds once the mapping was freed, and refuses a missing file
// (-ENOENT) and NULL (-EINVAL). Runs with SPILLWAY_POLICY=disk.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace control_test;

// A file written with write(2): cached, and mapped by nobody.
static std::string write_plain_file(const std::string &name, size_t size, uint64_t seed) {
    std::string path = spill_dir() + "/" + name;
    std::string bytes(size, '\0');
    fill(bytes.data(), 0, size, seed);
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bytes.data(), size) == (ssize_t)size);
    close(fd);
    return path;
}

TEST_CASE("has_live_mapping: a file mapped with spillway_map, by any spelling of its path") {
    empty_spill_dir();
    std::string path = write_plain_file("plain-mapped", 4 * MiB, 1);
    CHECK(spillway_has_live_mapping(path.c_str()) == 0);
    void *m = spillway_map(path.c_str(), 4 * MiB);
    REQUIRE(m != nullptr);
    CHECK(spillway_has_live_mapping(path.c_str()) == 1);
    std::string other_spelling = spill_dir() + "/./plain-mapped";
    CHECK(spillway_has_live_mapping(other_spelling.c_str()) == 1);
    free(m);
    CHECK(eventually([&] { return spillway_has_live_mapping(path.c_str()) == 0; }));
    unlink(path.c_str());
}

TEST_CASE("has_live_mapping: the exporter's own mapping of the file it exported") {
    // Regression test for control-shim-bugs.md#1 (fixed in c534073): the
    // exporter maps the file through the descriptor it created unnamed,
    // which /proc/self/maps lists as "<dir>/#<inode> (deleted)"; comparing
    // path strings missed it.
    empty_spill_dir();
    char *p = (char *)spillway_alloc(8 * MiB, SPILLWAY_PREFER_DISK);
    fill(p, 0, 8 * MiB, 2);
    char path[4096];
    REQUIRE(spillway_export(p, path, sizeof path) == 0);
    CHECK(spillway_has_live_mapping(path) == 1);
    free(p);
    unlink(path);
}

TEST_CASE("has_live_mapping: unrelated, missing and NULL paths") {
    empty_spill_dir();
    std::string path = write_plain_file("plain-unmapped", 1 * MiB, 3);
    CHECK(spillway_has_live_mapping(path.c_str()) == 0);
    CHECK(spillway_has_live_mapping((spill_dir() + "/no-such-file").c_str()) == 0);
    CHECK(spillway_has_live_mapping(nullptr) == -EINVAL);
    unlink(path.c_str());
}

TEST_CASE("release_page_cache_by_path drops an unmapped file's page cache") {
    empty_spill_dir();
    size_t size = 64 * MiB;
    std::string path = write_plain_file("plain-cached", size, 4);
    CHECK(file_cached_bytes(path) > (long)(size * 9 / 10));
    CHECK(spillway_release_page_cache_by_path(path.c_str()) == 0);
    CHECK(file_cached_bytes(path) < (long)(size / 20));
    unlink(path.c_str());
}

TEST_CASE("release_page_cache_by_path refuses while this process maps the file") {
    empty_spill_dir();
    size_t size = 16 * MiB;
    std::string path = write_plain_file("plain-busy", size, 5);
    char *m = (char *)spillway_map(path.c_str(), size);
    REQUIRE(m != nullptr);
    REQUIRE(first_mismatch(m, 0, size, 5) == SIZE_MAX);
    long before = file_cached_bytes(path);
    CHECK(spillway_release_page_cache_by_path(path.c_str()) == -EBUSY);
    CHECK(file_cached_bytes(path) == before);
    free(m);
    unlink(path.c_str());
}

TEST_CASE("release_page_cache_by_path refuses while the exporter still maps its file") {
    // Regression test for control-shim-bugs.md#1 (fixed in c534073): the
    // exporter's mapping was not seen, so the call reported success and
    // freed nothing.
    empty_spill_dir();
    size_t size = 16 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    fill(p, 0, size, 6);
    char path[4096];
    REQUIRE(spillway_export(p, path, sizeof path) == 0);
    CHECK(spillway_release_page_cache_by_path(path) == -EBUSY);
    free(p);
    unlink(path);
}

TEST_CASE("release_page_cache_by_path succeeds right after the mapping is freed") {
    // Regression test for control-shim-bugs.md#3 (fixed in c534073):
    // free() only queues the region for the reaper thread, so the file was
    // still mapped when free() returned and the documented sequence "free,
    // then release by path" was refused.
    empty_spill_dir();
    size_t size = 16 * MiB;
    std::string path = write_plain_file("plain-freed", size, 7);
    char *m = (char *)spillway_map(path.c_str(), size);
    REQUIRE(m != nullptr);
    REQUIRE(first_mismatch(m, 0, size, 7) == SIZE_MAX);
    free(m);
    CHECK(spillway_release_page_cache_by_path(path.c_str()) == 0);
    CHECK(eventually([&] { return spillway_has_live_mapping(path.c_str()) == 0; }));
    CHECK(spillway_release_page_cache_by_path(path.c_str()) == 0);
    CHECK(file_cached_bytes(path) < (long)(size / 20));
    unlink(path.c_str());
}

TEST_CASE("release_page_cache_by_path refuses a missing file and NULL") {
    CHECK(spillway_release_page_cache_by_path((spill_dir() + "/no-such-file").c_str()) == -ENOENT);
    CHECK(spillway_release_page_cache_by_path(nullptr) == -EINVAL);
}
