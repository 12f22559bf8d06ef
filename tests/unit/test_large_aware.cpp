// test_large_aware.cpp — the large path's answers to aware code: export
// gives a region a named file of its own holding its bytes, names it once,
// and keeps tiering moves off the region while the name is being made.
#include "shim_fixture.h"

#include "backing/backing.h"
#include "large/large.h"
#include "backing/reaper.h"
#include "registry/region.h"
#include "tiering/rehome.h"
#include "spillway.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace spillway;

namespace {
struct Namer {
    std::string dir;
    Region *region = nullptr;
    int calls = 0;
    int move_while_naming = 1; // what a tiering move got while the name was made
};

// Links the file as name_file does, into a directory of the test's own, and
// meanwhile tries what the tiering mover would do to the region.
int link_in_test_dir(int fd, size_t size, void *ctx, char *path, size_t cap) {
    auto *n = static_cast<Namer *>(ctx);
    n->calls++;
    if (n->region) {
        SpillFile *dest = nullptr;
        REQUIRE(new_dedicated_memfd(n->region->map_len, &dest) == 0);
        MoveResult res;
        n->move_while_naming = rehome_region_checked(n->region, n->region->start, dest, false, &res);
        if (n->move_while_naming != 0) close_spill_file(dest);
    }
    std::string name = n->dir + "/export-" + std::to_string(n->calls);
    if (ftruncate(fd, (off_t)size) != 0) return -errno;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) != 0) return -errno;
    snprintf(path, cap, "%s", name.c_str());
    return 0;
}

std::string read_file(const std::string &path, size_t n) {
    std::string out(n, '\0');
    int fd = open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(pread(fd, out.data(), n, 0) == (ssize_t)n);
    close(fd);
    return out;
}
} // namespace

TEST_CASE("export names a region's own file once, with the region's bytes") {
    test::bring_up();
    std::string tmpl = test::tmp_template("spillway-test-export");
    REQUIRE(mkdtemp(tmpl.data()));
    Namer namer{tmpl.c_str()};
    const size_t n = 6 << 20;
    bool use_small = false;
    auto *p = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_MEMORY, &use_small);
    REQUIRE(p);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 13);
    RegionView v;
    REQUIRE(large_export(p + 100, link_in_test_dir, &namer, &v) == 0); // any interior pointer
    CHECK(v.backing == Backing::disk);
    CHECK(v.own_file);
    CHECK(std::string(v.exported) == namer.dir + "/export-1");
    CHECK(read_file(v.exported, n) == std::string((char *)p, n));
    // A second export returns the same name without making another.
    RegionView again;
    REQUIRE(large_export(p, link_in_test_dir, &namer, &again) == 0);
    CHECK(namer.calls == 1);
    CHECK(std::string(again.exported) == v.exported);
    large_free(p);
    reaper_drain();
    unlink(v.exported);
    rmdir(tmpl.c_str());
}

TEST_CASE("no tiering move can swap a region's file while export names it") {
    test::bring_up();
    std::string tmpl = test::tmp_template("spillway-test-export");
    REQUIRE(mkdtemp(tmpl.data()));
    Namer namer{tmpl.c_str()};
    const size_t n = 4 << 20;
    bool use_small = false;
    auto *p = (unsigned char *)large_alloc(n, 0, SPILLWAY_PREFER_DISK, &use_small);
    REQUIRE(p);
    memset(p, 'x', n);
    namer.region = arena::region_at(p);
    RegionView v;
    REQUIRE(large_export(p, link_in_test_dir, &namer, &v) == 0);
    // Without the pin the move (a promotion to a memfd) succeeded here, closed
    // the descriptor being linked and left the name on a file the region no
    // longer used.
    CHECK(namer.move_while_naming == -EBUSY);
    CHECK(namer.region->backing == Backing::disk);
    REQUIRE(namer.region->file);
    CHECK(std::string(namer.region->file->exported) == v.exported);
    CHECK(read_file(v.exported, n) == std::string(n, 'x'));
    large_free(p);
    reaper_drain();
    unlink(v.exported);
    rmdir(tmpl.c_str());
}
