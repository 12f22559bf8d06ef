// test_backing.cpp — each backing maps readable, writable, zeroed bytes;
// disk bytes are reserved before they are mapped; pool ranges are punched
// back to holes; growth extends in place; foreign files are never touched.
#include "shim_fixture.h"

#include "backing/backing.h"
#include "registry/region.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>

using namespace spillway;

static void place_region(Region &r, size_t len) {
    std::lock_guard<std::mutex> guard(large_lock());
    r.start = arena::take(len, arena::kGranule);
    r.map_len = len;
    r.va_len = arena::granules(len) * arena::kGranule;
}

// Runs one backing over r's range and stores its placement, as large.cpp does.
static int back_into(Region &r, int (*backing)(uintptr_t, size_t, Placement *)) {
    Placement p;
    int err = backing(r.start, r.map_len, &p);
    if (err == 0) set_placement(&r, p);
    return err;
}

static int grow(Region &r, size_t new_len) {
    return grow_backing(placement_of(&r), r.start, r.map_len, new_len, r.advice.load(), r.is_private);
}

static void retire(Region &r) {
    arena::unmap_to_reserved(r.start, r.va_len);
    CHECK(release_backing(placement_of(&r), r.map_len));
    std::lock_guard<std::mutex> guard(large_lock());
    arena::give_back(r.start, r.va_len);
}

static bool all_zero(const Region &r) {
    const unsigned char *p = (const unsigned char *)r.start;
    for (size_t i = 0; i < r.map_len; i += 4096)
        if (p[i]) return false;
    return true;
}

TEST_CASE("disk pool regions are reserved, zeroed, and punched on release") {
    test::bring_up();
    REQUIRE(disk_usable());
    Region r;
    place_region(r, 4 << 20);
    REQUIRE(back_into(r, back_disk) == 0);
    CHECK(r.backing == Backing::disk);
    REQUIRE(r.file);
    CHECK(r.file->pool);
    CHECK(r.file_off == arena::offset_of(r.start));
    struct stat st;
    REQUIRE(fstat(r.file->fd, &st) == 0);
    CHECK((uint64_t)st.st_size >= r.file_off + r.map_len);
    CHECK(all_zero(r));
    memset((void *)r.start, 0x5A, r.map_len);
    int fd = r.file->fd;
    off_t off = (off_t)r.file_off;
    retire(r);
    // The range is a hole again: it reads zero and holds no blocks.
    unsigned char probe[4096];
    REQUIRE(pread(fd, probe, sizeof probe, off) == (ssize_t)sizeof probe);
    CHECK(probe[0] == 0);
    CHECK(probe[4095] == 0);
    CHECK(lseek(fd, off, SEEK_DATA) != off);
}

TEST_CASE("large disk regions get a dedicated reserved file") {
    test::bring_up();
    Region r;
    place_region(r, size_t(test::settings().dedicated_min));
    REQUIRE(back_into(r, back_disk) == 0);
    REQUIRE(r.file);
    CHECK_FALSE(r.file->pool);
    struct stat st;
    REQUIRE(fstat(r.file->fd, &st) == 0);
    CHECK((uint64_t)st.st_blocks * 512 >= r.map_len); // reserved, not sparse
    CHECK(st.st_nlink == 0);
    retire(r);
}

TEST_CASE("memory regions are memfd, anon regions are anonymous") {
    test::bring_up();
    Region m;
    place_region(m, 2 << 20);
    REQUIRE(back_into(m, back_memory) == 0);
    CHECK(m.backing == Backing::memory);
    CHECK(all_zero(m));
    memset((void *)m.start, 1, m.map_len);
    retire(m);
    Region a;
    place_region(a, 2 << 20);
    REQUIRE(back_into(a, back_anon) == 0);
    CHECK(a.backing == Backing::anon);
    CHECK(a.file == nullptr);
    memset((void *)a.start, 1, a.map_len);
    retire(a);
}

TEST_CASE("growth extends the reservation and the mapping in place") {
    test::bring_up();
    for (auto back : {back_disk, back_memory, back_anon}) {
        Region r;
    place_region(r, 2 << 20);
        r.va_len = 2 * arena::kGranule;
        { // make sure the next granule belongs to r
            std::lock_guard<std::mutex> guard(large_lock());
            REQUIRE(arena::extend(r.start, arena::kGranule, 2 * arena::kGranule));
        }
        REQUIRE(back_into(r, back) == 0);
        memset((void *)r.start, 7, r.map_len);
        REQUIRE(grow(r, 4 << 20) == 0);
        r.map_len = 4 << 20;
        unsigned char *p = (unsigned char *)r.start;
        CHECK(p[(2 << 20) - 1] == 7);
        CHECK(p[(4 << 20) - 1] == 0);
        p[(4 << 20) - 1] = 9;
        retire(r);
    }
}

TEST_CASE("a foreign file is never grown") {
    test::bring_up();
    Region r;
    place_region(r, 2 << 20);
    REQUIRE(back_into(r, back_disk) == 0);
    r.file->foreign = true;
    CHECK(grow(r, 4 << 20) == EPERM);
    r.file->foreign = false;
    retire(r);
}

TEST_CASE("fallbacks are named from errno") {
    CHECK(fallback_from_errno(ENOSPC) == Fallback::no_space);
    CHECK(fallback_from_errno(EDQUOT) == Fallback::quota);
    CHECK(fallback_from_errno(EOPNOTSUPP) == Fallback::unsupported);
    CHECK(fallback_from_errno(EIO) == Fallback::io_error);
    CHECK(std::string(fallback_name(Fallback::no_space)) == "no_space");
}

// A cleanup job removes the spill directory under a running job. ext4
// refuses new files in the removed directory, btrfs and XFS make them there
// (where nobody can see them): on none may the job go on spilling into it,
// and on all a directory made again at the path is used again.
TEST_CASE("a removed spill directory is not spilled into; one made again at its path is used") {
    test::bring_up();
    REQUIRE(disk_usable());
    const std::string path = spill_dir_path();
    REQUIRE(spill_dir_fd() >= 0); // held, as after a first spill
    REQUIRE(std::system(("rm -rf '" + path + "'").c_str()) == 0);
    SpillFile *f = nullptr;
    CHECK(new_dedicated_disk_file(1 << 20, &f) != 0);
    if (f) close_spill_file(f);
    CHECK(spill_dir_fd() < 0);

    REQUIRE(mkdir(path.c_str(), 0700) == 0);
    f = nullptr;
    REQUIRE(new_dedicated_disk_file(1 << 20, &f) == 0);
    close_spill_file(f);
    struct stat held, made;
    REQUIRE(fstat(spill_dir_fd(), &held) == 0);
    REQUIRE(stat(path.c_str(), &made) == 0);
    CHECK(held.st_dev == made.st_dev);
    CHECK(held.st_ino == made.st_ino);
}
