// test_export_map.cpp — proves, inside one process, that spillway_export
// gives a region's file a private (0600, ours), unguessable name in the spill
// directory without moving the region, whatever its backing was (a
// dedicated file, a slice of the pool file, a memfd, anonymous memory: the
// bytes move to a file of their own first); that a view exports its region;
// that it refuses NULL/empty buffers and foreign pointers (-EINVAL), a
// buffer too small for the path (-ERANGE), a fork child's private copy and a
// region this process only mapped (-EPERM). And that spillway_map maps an
// exported file (or any file of the right size) without a copy, and refuses
// a missing file (ENOENT), a wrong size (EINVAL), size 0 and NULL (EINVAL),
// a directory and a symlink, never creating or extending anything. Two
// processes are test_export_cross_process.cpp. Runs with SPILLWAY_POLICY=disk.
#include "spillway.h"
#include "support.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace control_test;

namespace {

std::string export_path(const void *p) {
    char path[4096];
    int rc = spillway_export(p, path, sizeof path);
    INFO("spillway_export returned " << rc);
    REQUIRE(rc == 0);
    return path;
}

// Checks the name is spillway-export-<pid>-<at least 32 hex digits>.
void check_name(const std::string &path) {
    std::string dir = spill_dir() + "/";
    REQUIRE(path.compare(0, dir.size(), dir) == 0);
    std::string name = path.substr(dir.size());
    std::string prefix = "spillway-export-" + std::to_string(getpid()) + "-";
    REQUIRE(name.compare(0, prefix.size(), prefix) == 0);
    std::string random = name.substr(prefix.size());
    CHECK(random.size() >= 32);
    CHECK(random.find_first_not_of("0123456789abcdef") == std::string::npos);
}

void check_private_file(const std::string &path, size_t min_size) {
    struct stat st;
    REQUIRE(lstat(path.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_uid == geteuid());
    CHECK((size_t)st.st_size >= min_size);
}

size_t file_size(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? (size_t)st.st_size : SIZE_MAX;
}

} // namespace

TEST_CASE("export names a disk region's file, privately, without moving the region") {
    empty_spill_dir();
    size_t size = 300 * MiB; // a dedicated file
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    fill(p, 0, size, 1);
    std::string before = maps_line_of(p);
    std::string path = export_path(p);
    check_name(path);
    check_private_file(path, size);
    CHECK(maps_line_of(p) == before); // same mapping, only a new name for its file
    CHECK(export_path(p) == path);                 // a second export: the same name
    CHECK(export_path(p + size / 2 + 3) == path);  // a view: its region's name
    free(p);
    unlink(path.c_str());
}

TEST_CASE("exported names differ between regions and cannot be guessed from each other") {
    empty_spill_dir();
    char *a = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_DISK);
    char *b = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_DISK);
    std::string pa = export_path(a), pb = export_path(b);
    CHECK(pa != pb);
    // No shared run of 8 hex digits in the random parts.
    std::string ra = pa.substr(pa.rfind('-') + 1), rb = pb.substr(pb.rfind('-') + 1);
    bool shared = false;
    for (size_t i = 0; i + 8 <= ra.size(); i++) shared |= rb.find(ra.substr(i, 8)) != std::string::npos;
    CHECK_FALSE(shared);
    free(a);
    free(b);
    unlink(pa.c_str());
    unlink(pb.c_str());
}

TEST_CASE("export moves a pool, memfd or anonymous region to a file of its own, in place") {
    empty_spill_dir();
    size_t size = 8 * MiB;
    void *anon = nullptr;
    REQUIRE(posix_memalign(&anon, 4 * MiB, 512 * KiB) == 0); // an anonymous region
    struct Case {
        const char *what;
        char *p;
        size_t size;
        int backing;
    } cases[] = {
        {"pool slice", (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK), size, SPILLWAY_DISK},
        {"memfd", (char *)spillway_alloc(size, SPILLWAY_PREFER_MEMORY), size, SPILLWAY_MEMORY},
        {"anonymous", (char *)anon, 512 * KiB, SPILLWAY_ANON},
    };
    for (Case &c : cases) {
        INFO(c.what);
        REQUIRE(spillway_backing(c.p) == c.backing);
        fill(c.p, 0, c.size, 2);
        std::string path = export_path(c.p);
        CHECK(spillway_backing(c.p) == SPILLWAY_DISK);
        CHECK(first_mismatch(c.p, 0, c.size, 2) == SIZE_MAX);
        check_private_file(path, c.size);
        CHECK(file_size(path) < c.size + page_size()); // its own file, not the pool
        // The named file holds the bytes: map it and compare.
        size_t fsize = file_size(path);
        char *m = (char *)spillway_map(path.c_str(), fsize);
        REQUIRE(m != nullptr);
        CHECK(first_mismatch(m, 0, c.size, 2) == SIZE_MAX);
        free(m);
        free(c.p);
        unlink(path.c_str());
    }
}

TEST_CASE("export refuses bad buffers and pointers the shim does not own") {
    char *p = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_DISK);
    char path[4096];
    char *small = (char *)malloc(100);
    CHECK(spillway_export(p, nullptr, sizeof path) == -EINVAL);
    CHECK(spillway_export(p, path, 0) == -EINVAL);
    CHECK(spillway_export(nullptr, path, sizeof path) == -EINVAL);
    CHECK(spillway_export(small, path, sizeof path) == -EINVAL);
    CHECK(spillway_export(p + 4 * MiB, path, sizeof path) == -EINVAL); // past its end
    char tiny[8];
    CHECK(spillway_export(p, tiny, sizeof tiny) == -ERANGE);
    CHECK(spillway_export(p, path, sizeof path) == 0); // a big enough buffer then works
    free(p);
    free(small);
    unlink(path);
}

TEST_CASE("export refuses a fork child's private copy and a region this process only mapped") {
    empty_spill_dir();
    char *p = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_DISK);
    fill(p, 0, 4 * MiB, 3);
    int status = in_fork_child([&] {
        char path[4096];
        return spillway_export(p, path, sizeof path) == -EPERM ? 0 : 1;
    });
    CHECK(status == 0);
    CHECK(list_dir(spill_dir()).empty()); // the child named nothing

    std::string path = export_path(p);
    char *m = (char *)spillway_map(path.c_str(), 4 * MiB);
    REQUIRE(m != nullptr);
    char again[4096];
    CHECK(spillway_export(m, again, sizeof again) == -EPERM);
    free(m);
    free(p);
    unlink(path.c_str());
}

TEST_CASE("map shares the exported bytes without a copy: writes visible both ways") {
    empty_spill_dir();
    size_t size = 64 * MiB;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    fill(p, 0, size, 4);
    std::string path = export_path(p);
    char *m = (char *)spillway_map(path.c_str(), size);
    REQUIRE(m != nullptr);
    CHECK(m != p);
    CHECK(spillway_backing(m) == SPILLWAY_DISK);
    CHECK(spillway_is_disk_backed(m + size - 1) == 1);
    CHECK(first_mismatch(m, 0, size, 4) == SIZE_MAX);
    fill(m, 0, MiB, 5);
    CHECK(first_mismatch(p, 0, MiB, 5) == SIZE_MAX);
    fill(p, 2 * MiB, MiB, 6);
    CHECK(first_mismatch(m, 2 * MiB, MiB, 6) == SIZE_MAX);
    // Released through the mapping, the shared page cache goes for both.
    CHECK(spillway_release_page_cache(m) == 0);
    CHECK(spillway_release_page_cache(p) == 0);
    CHECK(spillway_residency(m, size) < (long)(size / 20));
    CHECK(first_mismatch(p, 0, MiB, 5) == SIZE_MAX);
    free(m);
    free(p);
    unlink(path.c_str());
}

TEST_CASE("map accepts the exact byte size of an exported region that is not whole pages") {
    // Regression test for control-shim-bugs.md#2 (fixed in c534073): the
    // exported file was as long as the region's mapping (whole pages), so
    // the size the exporter allocated, which is what the importer knows
    // (dtype x shape), was refused.
    empty_spill_dir();
    size_t size = 3 * MiB + 1000;
    char *p = (char *)spillway_alloc(size, SPILLWAY_PREFER_DISK);
    fill(p, 0, size - size % 8, 7);
    std::string path = export_path(p);
    errno = 0;
    char *m = (char *)spillway_map(path.c_str(), size);
    INFO("errno " << errno << ", file size " << file_size(path));
    REQUIRE(m != nullptr);
    CHECK(first_mismatch(m, 0, size - size % 8, 7) == SIZE_MAX);
    free(m);
    free(p);
    unlink(path.c_str());
}

TEST_CASE("map refuses a missing file and never creates it") {
    empty_spill_dir();
    std::string missing = spill_dir() + "/spillway-export-missing";
    errno = 0;
    CHECK(spillway_map(missing.c_str(), 4096) == nullptr);
    CHECK(errno == ENOENT);
    CHECK_FALSE(file_exists(missing));
}

TEST_CASE("map refuses a wrong size with EINVAL and never extends the file") {
    empty_spill_dir();
    char *p = (char *)spillway_alloc(4 * MiB, SPILLWAY_PREFER_DISK);
    std::string path = export_path(p);
    for (size_t wrong : {4 * MiB + 4096, 4 * MiB - 4096, 8 * MiB, size_t(1)}) {
        INFO("expected size " << wrong);
        errno = 0;
        CHECK(spillway_map(path.c_str(), wrong) == nullptr);
        CHECK(errno == EINVAL);
        CHECK(file_size(path) == 4 * MiB);
    }
    errno = 0;
    CHECK(spillway_map(path.c_str(), 0) == nullptr);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(spillway_map(nullptr, 4096) == nullptr);
    CHECK(errno == EINVAL);
    free(p);
    unlink(path.c_str());
}

TEST_CASE("map refuses a directory and a symlink") {
    empty_spill_dir();
    std::string dir = spill_dir() + "/a-directory";
    REQUIRE(mkdir(dir.c_str(), 0700) == 0);
    errno = 0;
    CHECK(spillway_map(dir.c_str(), 4096) == nullptr);
    CHECK(errno != 0);

    std::string target = spill_dir() + "/target";
    int fd = open(target.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 4096) == 0);
    close(fd);
    std::string link = spill_dir() + "/link";
    REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
    errno = 0;
    CHECK(spillway_map(link.c_str(), 4096) == nullptr);
    CHECK(errno == ELOOP);
    empty_spill_dir();
}

TEST_CASE("map maps any regular file of the right size, and free() unmaps it") {
    empty_spill_dir();
    size_t size = 4 * MiB;
    std::string path = spill_dir() + "/plain";
    std::string bytes(size, '\0');
    fill(bytes.data(), 0, size, 8);
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(write(fd, bytes.data(), size) == (ssize_t)size);
    close(fd);
    char *m = (char *)spillway_map(path.c_str(), size);
    REQUIRE(m != nullptr);
    CHECK(first_mismatch(m, 0, size, 8) == SIZE_MAX);
    CHECK(spillway_has_live_mapping(path.c_str()) == 1);
    free(m);
    CHECK(eventually([&] { return spillway_has_live_mapping(path.c_str()) == 0; }));
    CHECK(file_size(path) == size); // the file is the caller's: never truncated or removed
    unlink(path.c_str());
}
